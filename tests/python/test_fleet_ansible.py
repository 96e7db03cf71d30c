"""ansible/fleet.yml on a real fleet: 4 hosts as network namespaces on a bridge, each with its own
sshd, 300 Mbit/s token-bucket links (tests/python/fleet_harness.py). Runs the playbook with
ansible-core in pairs and mesh modes and checks what an operator relies on: every document
gathered, the mesh matrix complete, the host behind a slower link flagged, an unreachable host and
a failed one reported with their reasons while the others complete, rounds in lockstep, no
responder left running, and a second round that settles a star's suspects. The playbook's tests
that measure no link (dry runs, work directories, check mode, an interrupted run) are in
test_fleet_safety.py, on a fleet of their own.

The schedule itself (ansible/roles/health_check/filter_plugins) is plain Python and is checked
first, without root.

Needs root, iproute2, openssh-server, openssh-client and ansible-core; without them the fleet
tests skip with one line (fail when HEALTH_CHECK_TEST_REQUIRE_ALL is set)."""

import datetime
import importlib.util
import json
import pathlib
import re
import socket
import subprocess

import fleet_harness as fh
import pytest
import yaml
from conftest import require
from fleet_harness import (
    QUICK,
    QUICK_ARGS,
    VM_LIMITS,
    assert_no_responder_left,
    last_run,
    output,
)


def load_role_module(relative):
    path = fh.REPO / "ansible/roles/health_check" / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sched = load_role_module("filter_plugins/health_check_fleet.py")


# ---------------------------------------------------------------- the schedule, in plain Python


def busy_hosts(rnd):
    return [h for leader, peers in rnd.items() for h in [leader, *peers]]


@pytest.mark.parametrize("n", range(10))
def test_pairs_is_one_round_that_puts_every_host_in_exactly_one_test(n):
    hosts = [f"h{i}" for i in range(n)]
    rounds = sched.pairs_rounds(hosts)
    if n < 2:
        assert rounds == []
        return
    assert len(rounds) == 1
    busy = busy_hosts(rounds[0])
    assert sorted(busy) == sorted(hosts), "a perfect matching: every host once"
    sizes = sorted(len(peers) for peers in rounds[0].values())
    assert sizes == [1] * (n // 2 - 1) + [1 + n % 2], "the odd host joins one pair as a third"


@pytest.mark.parametrize("n", range(14))
def test_mesh_measures_every_pair_once_and_no_host_twice_in_a_round(n):
    hosts = [f"h{i}" for i in range(n)]
    rounds = sched.mesh_rounds(hosts)
    assert len(rounds) == (0 if n < 2 else n - 1 if n % 2 == 0 else n)
    seen = []
    led = {h: 0 for h in hosts}
    for rnd in rounds:
        busy = busy_hosts(rnd)
        assert len(busy) == len(set(busy)), f"a host in two tests at once: {rnd}"
        for leader, peers in rnd.items():
            assert len(peers) == 1
            seen.append(frozenset([leader, peers[0]]))
            led[leader] += 1
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2
    if n >= 2:
        assert max(led.values()) - min(led.values()) <= 1, f"leaders balanced: {led}"


def test_the_users_arguments_are_split_into_sections_and_the_rest():
    split = sched.health_check_split_args(QUICK_ARGS)
    assert split["sections"] == ["system", "network", "sleep"]
    assert split["args"][:6] == ["--sleep-time", "1", "--ping-count", "3", "--iperf-time", "1"]
    assert split["args"][6:] == VM_LIMITS.split()
    assert sched.health_check_split_args("")["sections"] == ["system", "network", "sleep", "memory"]
    split = sched.health_check_split_args(["--skip=memory", "--storage", "/data"])
    assert split["sections"] == ["system", "network", "sleep", "storage"] and split["storage"]
    assert sched.health_check_split_args("-c a,b -o x")["reserved"] == ["-c", "-o"]
    assert sched.health_check_split_args("--only netwrk")["unknown_sections"] == ["netwrk"]


def help_options(text, option):
    """The possible values listed under `option` in `health_check --help`."""
    # An option's block: its line (indented 2 to 6 spaces) up to the next option's line.
    blocks = re.split(r"\n(?= {2,6}-)", text)
    block = [b for b in blocks if b.lstrip().startswith(option)]
    assert block, f"{option} is not in --help"
    return re.findall(r"^ +- (\w+):", block[0], re.MULTILINE)


def test_the_roles_copies_of_the_binarys_options_and_sections_match_its_help(binary):
    """health_check_fleet.py keeps copies of the section names and of the options the playbook
    sets (it refuses them in health_check_args): they must be what the binary says."""
    text = subprocess.run([binary, "--help"], capture_output=True, text=True, check=True).stdout
    assert help_options(text, "--only <LIST>") == sched.ALL_SECTIONS
    assert help_options(text, "--skip <LIST>") == sched.ALL_SECTIONS
    assert sched.DEFAULT_SECTIONS == [s for s in sched.ALL_SECTIONS if s != "storage"], "storage is opt-in"
    options = re.findall(r"^ +(?:(-\w), )?(--[\w-]+)", text, re.MULTILINE)
    known = {name for pair in options for name in pair if name}
    assert sched.RESERVED <= known, f"not options of the binary: {sorted(sched.RESERVED - known)}"
    for short, long in options:
        if short and (short in sched.RESERVED) != (long in sched.RESERVED):
            pytest.fail(f"{short} and {long} are one option: reserve both or neither")
    for flag in ["--role", "--clients", "--output", "--port", "--daemon", "--pid-file", "--format", "--envelope"]:
        assert flag in sched.RESERVED, f"the playbook sets {flag}"
    assert sched.health_check_split_args("-oX --port=1")["reserved"] == ["-o", "--port"]


ROLE = fh.REPO / "ansible/roles/health_check"


def test_the_argument_specs_describe_every_variable_with_its_default():
    specs = yaml.safe_load((ROLE / "meta/argument_specs.yml").read_text())["argument_specs"]
    options = specs["main"]["options"]
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    assert set(defaults) <= set(options), f"not in argument_specs.yml: {sorted(set(defaults) - set(options))}"
    for name, spec in options.items():
        assert name.startswith("health_check_") and spec.get("description") and spec.get("type"), name
        if name in defaults:
            assert spec.get("default") == defaults[name], f"{name}: the spec's default is not defaults/main.yml's"
        else:
            assert spec.get("required") is False and "default" not in spec, (
                f"{name} has no default in defaults/main.yml"
            )
    assert options["health_check_mode"]["choices"] == ["star", "pairs", "mesh"]
    # Every variable the role's files name is its own (health_check_ prefix) or Ansible's.
    for path in ROLE.rglob("*.yml"):
        names = set(re.findall(r"\b(hc_\w+)", path.read_text()))
        assert not names, f"{path}: {sorted(names)}"


def stat_result(path, exists=True, uid=0, mode="0755", isdir=True, islnk=False, pw_name=None):
    """An entry of the health_check_lstat module's result."""
    st = {"path": path, "exists": exists}
    if exists:
        st.update({"uid": uid, "mode": mode, "isdir": isdir, "islnk": islnk, "pw_name": pw_name})
    return st


def test_the_work_directory_must_be_changeable_by_nobody_but_the_connecting_user():
    chain = sched.health_check_path_chain
    assert chain("/var/lib/health_check/h1") == [
        "/",
        "/var",
        "/var/lib",
        "/var/lib/health_check",
        "/var/lib/health_check/h1",
    ]
    for bad in ["", "relative/dir", "/", "/a/../b", "/a/", "//a"]:
        assert chain(bad) == [] and "absolute" in sched.health_check_unsafe_dirs([], bad, 0)[0]

    def check(path, uid, *overrides, created=False):
        stats = {d: stat_result(d) for d in chain(path)}
        for o in overrides:
            stats[o["path"]] = o
        return sched.health_check_unsafe_dirs(list(stats.values()), path, uid, created=created)

    work = "/tmp/x/h1"
    assert check(work, 0) == []
    assert check(work, 0, stat_result("/tmp", mode="1777")) == [], "a sticky /tmp is fine"
    assert check(work, 1000, stat_result("/tmp/x", uid=1000), stat_result(work, uid=1000, mode="0700")) == []
    assert check(work, 0, stat_result(work, exists=False), stat_result("/tmp/x", exists=False)) == []
    reasons = check(work, 0, stat_result(work, uid=65534, pw_name="nobody"))
    assert (
        reasons[0]
        == f"the work directory {work} is owned by uid 65534 (nobody), not by uid 0 that the play connects as"
    )
    assert "swap" in reasons[-1]
    assert "writable by group or others (mode 0775)" in check(work, 0, stat_result(work, mode="0775"))[0]
    assert "not by uid 1000" in check(work, 1000)[0], "a root-owned work directory is not the user's"
    assert (
        "writable by group or others and not sticky (mode 0777)" in check(work, 0, stat_result("/tmp", mode="0777"))[0]
    )
    assert "neither root nor uid 0" in check(work, 0, stat_result("/tmp/x", uid=1000))[0]
    assert "symbolic link" in check(work, 0, stat_result("/tmp/x", islnk=True))[0]
    assert "symbolic link" in check(work, 0, stat_result(work, islnk=True))[0]
    assert "not a directory" in check(work, 0, stat_result(work, isdir=False))[0]
    assert "missing right after" in check(work, 0, stat_result(work, exists=False), created=True)[0]
    assert sched.health_check_missing_dirs([stat_result("/a"), stat_result("/a/b", exists=False)]) == ["/a/b"]
    # What the role's health_check_lstat module reports for real paths (it imports ansible).
    require(importlib.util.find_spec("ansible"), "needs ansible-core (pip install ansible-core)")
    lstat = load_role_module("library/health_check_lstat.py")
    here = pathlib.Path(__file__).resolve()
    assert [lstat.lstat_entry(str(p)) for p in (here, here.parent / "absent")][1] == {
        "path": str(here.parent / "absent"),
        "exists": False,
    }
    tmp = lstat.lstat_entry("/tmp")
    assert tmp["isdir"] and not tmp["islnk"] and tmp["mode"] == "1777" and tmp["pw_name"] == "root"


def test_addresses_are_taken_as_given_or_resolved_on_the_controller():
    assert sched.health_check_address("", "10.1.2.3", "h1") == "10.1.2.3"
    assert sched.health_check_address("192.0.2.7", "10.1.2.3", "h1") == "192.0.2.7"
    assert sched.health_check_address(None, None, "localhost") in ("127.0.0.1", "::1")


# ---------------------------------------------------------------- a real fleet


# Every host's link, both ways (the tests that slow one say so).
LINK = "300mbit"


def need(reason):
    require(not reason, reason)


@pytest.fixture(scope="module")
def fleet(binary, tmp_path_factory):
    need(fh.missing_prerequisite(binary))
    # 300 Mbit/s, not 1 Gbit/s: the four hosts share this VM's two CPUs with the suite's other
    # groups, and 1-second transfers at 1 Gbit/s came out at 0.44-0.49 of it there (packets are
    # the kernel's work, not at the tests' priority), a path found poor that was not.
    with fh.Fleet(4, tmp_path_factory.mktemp("fleet"), binary=binary) as f:
        f.shape_all(LINK)
        f.warm()
        yield f


def plant_leftover_responder(fleet, h):
    """A responder as an interrupted run would leave it: running, with its pid file in place."""
    work = fleet.remote_dir(h)
    work.mkdir(parents=True, exist_ok=True)
    fleet.exec(
        h,
        [
            fleet.binary,
            "-r",
            "client",
            "--daemon",
            "--port",
            "5201",
            "--pid-file",
            str(work / "responder.pid"),
            "--idle-timeout",
            "600",
        ],
    )
    assert 5201 in fleet.listening_ports(h)


@pytest.fixture(scope="module")
def pairs_run(fleet):
    """pairs with h4's sshd stopped (unreachable) and h3's work directory impossible to create (its
    run fails): h1 measures h2 and h3 (three live hosts: a pair and a third)."""
    h3, h4 = fleet.hosts[2], fleet.hosts[3]
    fleet.stop_sshd(h4)
    with pytest.raises(ConnectionRefusedError):  # the test's premise: h4 is down
        socket.create_connection((h4.address, 22), timeout=5).close()
    try:
        proc = fleet.playbook(
            mode="pairs",
            args=QUICK_ARGS,
            extra_vars=QUICK,
            host_vars={"h3": {"health_check_remote_dir": "/proc/health_check-cannot-exist"}},
        )
    finally:
        fleet.start_sshd(h4)
        fleet.wait_sshd(h4)
    assert proc.returncode == 0, output(proc)
    run, report = last_run(fleet)
    return proc, run, report, h3, h4


def test_pairs_gathers_every_live_host_and_records_why_the_others_have_none(fleet, pairs_run):
    proc, run, report, h3, _ = pairs_run
    assert "h1 (" in (run / "plan.txt").read_text()
    assert "h2 (" in (run / "plan.txt").read_text() and "h4" not in (run / "plan.txt").read_text(), (
        "the unreachable host is left out of the schedule"
    )
    first = sorted(p.name for p in run.glob("*.json") if not p.name.endswith(".resolve.json"))
    assert first == ["fleet.json", "h1.json", "h2.json", "h3.json", "h4.json"]
    for name in ("h1", "h2"):
        doc = json.loads((run / f"{name}.json").read_text())
        assert doc["health_check"]["sections"]["system"] == "ok"
        assert doc["health_check"]["sections"]["sleep"] == "ok"
    leader = json.loads((run / "h1.json").read_text())
    assert leader["health_check"]["sections"]["network"] == "ok"
    measured = {b["hostname"]: b for b in leader["iperf3 bandwidth"]}
    # A real transfer, never above the link; not necessarily at its rate (a 1-second transfer the
    # suite's other groups starve: see the mesh test). The links' accuracy is the integration tests'.
    bandwidth = measured[fleet.hosts[1].address]["bandwidth"]
    assert 0.1 < bandwidth <= 1.05 * 0.3, f"h1 measured h2 over its 300 Mbit/s link: {bandwidth} Gbit/s"
    assert "error" in measured[h3.address], "h3 never started its responder"
    unreachable = json.loads((run / "h4.json").read_text())["fleet_host_error"]
    assert unreachable.startswith("unreachable:") and "Connection refused" in unreachable, unreachable
    failed = json.loads((run / "h3.json").read_text())["fleet_host_error"]
    assert "work directory" in failed and "/proc/health_check-cannot-exist" in failed, failed
    machines = {m["label"]: m for m in report["machines"]}
    assert set(machines) == {"h1", "h2", "h3", "h4"}
    assert machines["h1"]["status"] not in ("failed", "unreadable") and machines["h2"]["status"] not in (
        "failed",
        "unreadable",
    )
    assert machines["h3"]["status"] == "failed" and machines["h4"]["status"] == "failed", (
        "a host without a document is never counted as healthy"
    )
    assert "no document from h4: unreachable" in proc.stdout, "the summary names the missing hosts"
    page = (run / "report.html").read_text()
    for host in ("h1", "h2", "h3", "h4"):
        assert f">{host}<" in page, f"{host} is on the fleet's page"
    assert "FAILED" in page.upper() and "<svg" in page
    assert_no_responder_left(fleet)


@pytest.fixture(scope="module")
def mesh_run(fleet, pairs_run):
    """mesh with h3 behind 50 Mbit/s instead of 300, a responder left in h1 by an 'earlier
    interrupted run' (the playbook must stop it through its pid file), and a baseline learned from
    the pairs run's documents."""
    slow = fleet.hosts[2]
    baseline = fleet.work / "baseline.yml"
    pairs_dir = pairs_run[1]
    # Learned as the controller judges: h1 and h2 ran their sections at once on the same CPUs, and
    # with the default limits that interference leaves their sleep figures out of the baseline.
    fh.run(
        [fleet.binary, "baseline", str(pairs_dir / "h1.json"), str(pairs_dir / "h2.json"), "-o", str(baseline)],
        env=fleet.env(),
    )
    plant_leftover_responder(fleet, fleet.hosts[0])
    fleet.shape(slow, "50mbit")
    try:
        proc = fleet.playbook(
            mode="mesh", args=QUICK_ARGS, extra_vars={**QUICK, "health_check_baseline": str(baseline)}
        )
    finally:
        fleet.shape(slow, LINK)
    assert proc.returncode == 0, output(proc)
    run, report = last_run(fleet)
    return proc, run, report, slow


def test_mesh_gives_a_complete_matrix_in_lockstep_rounds_and_flags_the_slow_host(fleet, mesh_run):
    _, run, report, slow = mesh_run
    first = sorted(p.name for p in run.glob("*.json") if not p.name.endswith(".resolve.json"))
    assert first == ["fleet.json", "h1.json", "h2.json", "h3.json", "h4.json"]
    matrix = report["matrix"]
    assert matrix["machines"] == ["h1", "h2", "h3", "h4"], "machines named by inventory names"
    n = len(matrix["machines"])
    for name in ("bandwidth_gbps", "latency_ms"):
        for i in range(n):
            for j in range(n):
                cell = matrix[name][i][j]
                assert (cell is None) if i == j else (cell is not None and cell > 0), f"{name}[{i}][{j}] = {cell}"
    for i in range(n):
        for j in range(n):
            if i != j:
                bw = matrix["bandwidth_gbps"][i][j]
                # Other paths: above the slow host's 50 Mbit/s (a transfer the suite's other groups
                # starve, below, is still well above it).
                assert (bw < 0.055) if slow.name in (matrix["machines"][i], matrix["machines"][j]) else bw > 0.1, (
                    f"bandwidth {matrix['machines'][i]} -> {matrix['machines'][j]}: {bw}"
                )

    # The slow host is flagged on bandwidth, as the side at fault.
    machines = {m["label"]: m for m in report["machines"]}
    assert machines[slow.name]["status"] == "fail", machines[slow.name]
    assert any(f["machine"] == slow.name and f["figure"].startswith("network.bandwidth") for f in report["findings"]), (
        json.dumps(report["findings"], indent=1)
    )

    # The baseline was copied beside the documents and judged every machine.
    assert (run / "baseline.yml").exists()
    assert report["fleet_report"]["baseline"] == str(run / "baseline.yml")
    for m in report["machines"]:
        judged = {c["name"]: c["status"] for c in m.get("baseline_checks", [])}
        assert judged.get("baseline.sleepbench.calls_per_second") in ("pass", "warn", "fail", "inconclusive"), (
            m["label"],
            judged,
        )

    # Rounds in lockstep: every test of a round ends before any test of the next one starts, and
    # the tests of a round overlap (they run at once).
    timeline = yaml.safe_load((run / "timeline.yml").read_text())
    assert timeline["rounds"] == 3 and len(timeline["tests"]) == 6
    when = datetime.datetime.fromisoformat
    for r in (1, 2, 3):
        tests = [t for t in timeline["tests"] if t["round"] == r]
        assert len(tests) == 2
        assert max(when(t["start"]) for t in tests) < min(when(t["end"]) for t in tests), f"round {r} not at once"
        if r < 3:
            nxt = [t for t in timeline["tests"] if t["round"] == r + 1]
            assert max(when(t["end"]) for t in tests) <= min(when(t["start"]) for t in nxt), (
                f"round {r + 1} started before round {r} ended: {timeline['tests']}"
            )
    assert timeline["network_phase"]["seconds"] > 0

    # The responder planted in h1 was stopped by its pid file; nothing is left anywhere.
    assert_no_responder_left(fleet)


def test_mesh_findings_name_only_the_slow_host(mesh_run):
    _, _, report, slow = mesh_run

    # Four namespaces share 2 CPUs: a sleepbench figure, or one of 3 pings delayed by a busy CPU
    # (0.24 ms against 0.07), can rightly warn about a healthy host. Every failure, and every other
    # finding, names only the slow host.
    def noise(f):
        return f["figure"].startswith("sleepbench.") or (
            f["figure"].startswith("ping.latency.") and f["severity"] == "warn"
        )

    # And one 1-second transfer between two healthy hosts can be starved by the suite's other
    # groups (0.17 of 0.3 Gbit/s seen): the judge then rightly names that path, poor once and fine
    # everywhere else, and neither host. One such path at most; no machine besides the slow one.
    def starved_path(f):
        return f["scope"] == "link" and slow.name not in f["link"] and "bandwidth" in f["figure"]

    paths = {tuple(sorted(f["link"])) for f in report["findings"] if starved_path(f)}
    assert len(paths) <= 1, json.dumps(report["findings"], indent=1)
    named = sorted({f["machine"] for f in report["findings"] if not noise(f) and not starved_path(f)})
    assert named == [slow.name], json.dumps(report["findings"], indent=1)


def test_the_fleet_report_gives_the_reason_a_host_has_no_document(pairs_run):
    report = pairs_run[2]
    reasons = {m["label"]: " ".join(m.get("reasons", [])) for m in report["machines"]}
    assert "unreachable" in reasons["h4"] and "Connection refused" in reasons["h4"], reasons
    assert "work directory" in reasons["h3"], reasons


def shape_path(fleet, src, dst, rate, rest):
    """Only `src`'s traffic to `dst` through `rate` (an htb class chosen by a u32 filter on the
    destination; the rest through a class of `rest`). This kernel has no prio qdisc."""
    tc = ["tc", "qdisc", "del", "dev", "eth0", "root"]
    fleet.exec(src, tc, check=False)
    for argv in (
        ["qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "10"],
        ["class", "add", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb", "rate", rest],
        ["class", "add", "dev", "eth0", "parent", "1:", "classid", "1:30", "htb", "rate", rate],
        [
            "filter",
            "add",
            "dev",
            "eth0",
            "parent",
            "1:",
            "protocol",
            "ip",
            "prio",
            "1",
            "u32",
            "match",
            "ip",
            "dst",
            f"{dst.address}/32",
            "flowid",
            "1:30",
        ],
    ):
        fleet.exec(src, ["tc", *argv])


def star_with_one_server(fleet):
    """DCPerf's star with one server, h1, and three clients (no documents of their own)."""
    h1, h2, h3, h4 = fleet.hosts
    proc = fleet.playbook(
        mode="star",
        groups={"health_check_server": [h1], "health_check_clients": [h2, h3, h4]},
        args="--only system,network --ping-count 3 --iperf-time 2 " + VM_LIMITS,
        extra_vars=QUICK,
    )
    assert proc.returncode == 0, output(proc)
    assert "Leaders measure what settles the suspects" in proc.stdout, output(proc)
    run, report = last_run(fleet)
    assert_no_responder_left(fleet)
    return run, report, {m["label"]: m for m in report["machines"]}


def measured(run):
    """Every document's bandwidth measurements (both directions), one line each: a failure shows what was measured
    (on this 2-CPU VM a starved transfer is the usual cause, not the judge)."""
    lines = []
    for doc in sorted(run.glob("h*.json")):
        data = json.loads(doc.read_text())
        pairs = [
            f"{m.get('hostname')} {m.get('bandwidth', m.get('error'))} (reverse {m.get('reverse_gbps')})"
            for m in data.get("iperf3 bandwidth", [])
        ]
        lines.append(f"{doc.name}: {', '.join(pairs) or '-'}")
    return "\n".join(lines)


# The two-round star last: its verdicts rest on its shaped transfers, which the heaviest part of the
# suite (every group at once, just before) once starved to two-thirds of their rate.
def test_a_second_round_settles_a_one_server_star_slow_client_and_slow_path(fleet):
    """DCPerf's star with one server (h1) and three clients, one playbook for both cases: h4 slow
    (its own link shaped) and the path h1 -> h3 slow (only h1's traffic to h3 shaped). Neither can
    be told apart after the first round, where one server measured them. The playbook's second
    round measures h3 and h4 from the one host under no suspicion (h2), and the report of both
    rounds blames h4 (slow from there too: as the client, or as a machine when it led a test of
    its own) and the path h1 <-> h3 (fine from there); nobody else is failed, and nothing is
    left suspect.

    The links run at the fixture's 300 Mbit/s: with 1 Gbit/s and CI's compilers beside them, a
    transfer was once starved to a fifth of its rate (the one measurement from the helper that
    settles h3 came out poor)."""
    h1, h3, h4 = fleet.hosts[0], fleet.hosts[2], fleet.hosts[3]
    fleet.shape(h4, "50mbit")
    shape_path(fleet, h1, h3, "50mbit", rest=LINK)
    try:
        run, report, machines = star_with_one_server(fleet)
    finally:
        fleet.exec(h1, ["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        fleet.shape_all(LINK)
    seen = measured(run)
    resolves = sorted(p.name for p in run.glob("*.resolve.json"))
    assert {"h3.resolve.json", "h4.resolve.json"} <= set(resolves), list(run.iterdir())
    findings = [f for f in report["findings"] if f["figure"].startswith("network.bandwidth")]
    assert not any("suspect" in f for f in findings), (
        seen + "\n" + "\n".join(f"{f['headline']}: {f['message']}" for f in report["findings"])
    )
    # The fleet's namespaces share this VM's two CPUs: an RTT of 3 pings, tens of microseconds,
    # taken while another host's run writes its identity, now and then comes out 50 % and 50 us
    # above the rest. Measured once, that path is rightly left suspect; bandwidth is what this
    # test is about.
    latency_suspects = {
        name for f in report["findings"] if f["figure"].startswith("ping.latency") for name in f.get("suspect") or []
    }
    # The slow client.
    assert machines["h4"]["status"] == "fail", (machines["h4"], seen)
    assert "network.bandwidth" in machines["h4"]["reasons"][0], (machines["h4"]["reasons"], findings, seen)
    # Its link is shaped both ways: as the client, or (where the second round had it lead a test
    # to learn its model) as a machine slow in both roles.
    assert {("h4", "client"), ("h4", "machine")} & {(f["machine"], f["scope"]) for f in findings}, (findings, seen)
    # The slow path, and only that about h3.
    links = [f for f in findings if f.get("link") and set(f["link"]) == {"h1", "h3"}]
    assert links, (report["findings"], seen)
    assert "poor only between h1 and" in links[0]["message"], links[0]["message"]
    assert not [f for f in findings if f["scope"] != "link" and f["machine"] != "h4"], (findings, seen)

    # The same noise warns too: all three pings of a healthy client at 0.1 ms against 0.025 seen.
    def latency_only(label):
        about = [f for f in report["findings"] if f["machine"] == label or label in (f.get("suspect") or [])]
        return about and all(f["figure"].startswith("ping.latency") and f["severity"] != "fail" for f in about)

    def not_blamed(m):
        if m["status"] == "suspect":
            return m["label"] in latency_suspects
        if m["status"] == "warn":
            return latency_only(m["label"])
        return m["status"] != "fail"

    every_finding = "\n".join(f"{f['headline']}: {f['message']}" for f in report["findings"])
    for m in report["machines"]:
        if m["label"] not in ("h4", h4.address):
            assert not_blamed(m), f"{m['label']} {m['status']}: {m.get('reasons')}\n{seen}\n{every_finding}"
