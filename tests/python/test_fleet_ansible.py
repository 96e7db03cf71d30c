"""ansible/fleet.yml on a real fleet: 4 hosts as network namespaces on a bridge, each with its own
sshd, 1 Gbit/s token-bucket links (tests/python/fleet_harness.py). Runs the playbook with
ansible-core in pairs and mesh modes and checks what an operator relies on: every document
gathered, the mesh matrix complete, the host behind a slower link flagged, an unreachable host and
a failed one reported with their reasons while the others complete, rounds in lockstep, no
responder left running (also after an interrupted run), and a dry run that touches nothing.

The schedule itself (ansible/roles/health_check/filter_plugins) is plain Python and is checked
first, without root.

Needs root, iproute2, openssh-server, openssh-client and ansible-core; without them the fleet
tests skip with one line (fail when HEALTH_CHECK_TEST_REQUIRE_ALL is set)."""

import datetime
import importlib.util
import json
import os
import signal
import subprocess
import time

import fleet_harness as fh
import pytest
import yaml

REQUIRE_ALL = os.environ.get("HEALTH_CHECK_TEST_REQUIRE_ALL", "") not in ("", "0")
# Seconds per run, not minutes: three sections, 3 pings, 2 s per bandwidth direction.
QUICK_ARGS = "--only system,network,sleep --sleep-time 1 --ping-count 3 --iperf-time 2"
QUICK = {"health_check_profile": "quick"}


def load_schedule_module():
    path = fh.REPO / "ansible/roles/health_check/filter_plugins/health_check_fleet.py"
    spec = importlib.util.spec_from_file_location("health_check_fleet", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sched = load_schedule_module()


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
    assert split["args"] == ["--sleep-time", "1", "--ping-count", "3", "--iperf-time", "2"]
    assert sched.health_check_split_args("")["sections"] == ["system", "network", "sleep", "memory"]
    split = sched.health_check_split_args(["--skip=memory", "--storage", "/data"])
    assert split["sections"] == ["system", "network", "sleep", "storage"] and split["storage"]
    assert sched.health_check_split_args("-c a,b -o x")["reserved"] == ["-c", "-o"]
    assert sched.health_check_split_args("--only netwrk")["unknown_sections"] == ["netwrk"]


def test_addresses_are_taken_as_given_or_resolved_on_the_controller():
    assert sched.health_check_address("", "10.1.2.3", "h1") == "10.1.2.3"
    assert sched.health_check_address("192.0.2.7", "10.1.2.3", "h1") == "192.0.2.7"
    assert sched.health_check_address(None, None, "localhost") in ("127.0.0.1", "::1")


# ---------------------------------------------------------------- a real fleet


def need(reason):
    if reason:
        (pytest.fail if REQUIRE_ALL else pytest.skip)(reason)


@pytest.fixture(scope="module")
def fleet(binary, tmp_path_factory):
    need(fh.missing_prerequisite(binary))
    with fh.Fleet(4, tmp_path_factory.mktemp("fleet"), binary=binary) as f:
        f.shape_all("1gbit")
        f.warm()
        yield f


def output(proc):
    return f"status {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-3000:]}"


def last_run(fleet):
    runs = fleet.run_dirs()
    assert runs, "no results directory"
    run = runs[-1]
    return run, json.loads((run / "fleet.json").read_text())


def health_check_pids(fleet, h):
    pids = fh.run(["ip", "netns", "pids", h.ns], check=False).stdout.split()
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                comm, rest = stat.read().rsplit(")", 1)
            if comm.endswith("(health_check") and rest.split()[0] != "Z":
                found.append(int(pid))
        except (OSError, ValueError):
            pass
    return found


def assert_no_responder_left(fleet):
    for h in fleet.hosts:
        ports = [p for p in fleet.listening_ports(h) if p != 22]
        assert ports == [], f"{h} still listens on {ports}"
        assert health_check_pids(fleet, h) == [], f"health_check still runs on {h}"


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


def test_a_dry_run_prints_who_measures_whom_and_touches_nothing(fleet):
    proc = fleet.playbook(mode="mesh", args=QUICK_ARGS, extra_vars={"health_check_dry_run": True})
    assert proc.returncode == 0, output(proc)
    for r in (1, 2, 3):
        assert f"round {r}/3: 2 test(s) at once" in proc.stdout, output(proc)
    assert "h1 (10." in proc.stdout
    proc = fleet.playbook("--tags", "plan", "--limit", "h1,h2,h3", mode="pairs", args=QUICK_ARGS)
    assert proc.returncode == 0, output(proc)
    assert "round 1/1: 1 test(s) at once" in proc.stdout, output(proc)
    assert "h1 (10." in proc.stdout and "h4 (" not in proc.stdout, "--limit narrows the fleet"
    assert ") measures h2 (" in proc.stdout and "), h3 (" in proc.stdout, "the odd host joins the pair as a third"
    assert not (fleet.work / "results").exists(), "a dry run writes no results"
    assert not any(fleet.remote_dir(h).exists() for h in fleet.hosts), "a dry run touches no host"


@pytest.fixture(scope="module")
def pairs_run(fleet):
    """pairs with h4's sshd stopped (unreachable) and h3's work directory impossible to create (its
    run fails): h1 measures h2 and h3 (three live hosts: a pair and a third)."""
    h3, h4 = fleet.hosts[2], fleet.hosts[3]
    fleet.stop_sshd(h4)
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
    assert sorted(p.name for p in run.glob("*.json")) == ["fleet.json", "h1.json", "h2.json", "h3.json", "h4.json"]
    for name in ("h1", "h2"):
        doc = json.loads((run / f"{name}.json").read_text())
        assert doc["health_check"]["sections"]["system"] == "ok"
        assert doc["health_check"]["sections"]["sleep"] == "ok"
    leader = json.loads((run / "h1.json").read_text())
    assert leader["health_check"]["sections"]["network"] == "ok"
    measured = {b["hostname"]: b for b in leader["iperf3 bandwidth"]}
    assert measured[fleet.hosts[1].address]["bandwidth"] > 0.8, "h1 measured h2 over its 1 Gbit/s link"
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
    assert (run / "report.html").stat().st_size > 0
    assert_no_responder_left(fleet)


@pytest.fixture(scope="module")
def mesh_run(fleet, pairs_run):
    """mesh with h3 behind 200 Mbit/s instead of 1 Gbit/s, a responder left in h1 by an 'earlier
    interrupted run' (the playbook must stop it through its pid file), and a baseline learned from
    the pairs run's documents."""
    slow = fleet.hosts[2]
    baseline = fleet.work / "baseline.yml"
    pairs_dir = pairs_run[1]
    fh.run([fleet.binary, "baseline", str(pairs_dir / "h1.json"), str(pairs_dir / "h2.json"), "-o", str(baseline)])
    plant_leftover_responder(fleet, fleet.hosts[0])
    fleet.shape(slow, "200mbit")
    try:
        proc = fleet.playbook(
            mode="mesh", args=QUICK_ARGS, extra_vars={**QUICK, "health_check_baseline": str(baseline)}
        )
    finally:
        fleet.shape(slow, "1gbit")
    assert proc.returncode == 0, output(proc)
    run, report = last_run(fleet)
    return proc, run, report, slow


def test_mesh_gives_a_complete_matrix_in_lockstep_rounds_and_flags_the_slow_host(fleet, mesh_run):
    _, run, report, slow = mesh_run
    assert sorted(p.name for p in run.glob("*.json")) == ["fleet.json", "h1.json", "h2.json", "h3.json", "h4.json"]
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
                assert (bw < 0.21) if slow.name in (matrix["machines"][i], matrix["machines"][j]) else bw > 0.8, (
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
    assert all(m.get("baseline_checks") for m in report["machines"]), "every machine judged by the baseline"

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

    named = sorted({f["machine"] for f in report["findings"] if not noise(f)})
    assert named == [slow.name], json.dumps(report["findings"], indent=1)


def test_the_fleet_report_gives_the_reason_a_host_has_no_document(pairs_run):
    report = pairs_run[2]
    reasons = {m["label"]: " ".join(m.get("reasons", [])) for m in report["machines"]}
    assert "unreachable" in reasons["h4"] and "Connection refused" in reasons["h4"], reasons
    assert "work directory" in reasons["h3"], reasons


def test_an_interrupted_run_stops_its_responders(fleet):
    """fleet-run.sh: Ctrl-C during the network phase, then the responders are stopped (--tags stop;
    ansible-playbook itself skips always: sections when interrupted)."""
    argv = fleet.playbook_argv(
        mode="mesh",
        args="--only system,network --iperf-time 30",
        extra_vars=QUICK,
        playbook=fh.REPO / "ansible" / "fleet-run.sh",
    )
    proc = subprocess.Popen(
        argv,
        env=fleet.env(),
        cwd=fleet.work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if all(5201 in fleet.listening_ports(h) for h in fleet.hosts) and any(
                len(health_check_pids(fleet, h)) > 1 for h in fleet.hosts
            ):
                break  # every responder is up and a round's test is running
            time.sleep(0.3)
        else:
            pytest.fail(f"the network phase never started:\n{proc.communicate()[0][-4000:]}")
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0, out[-4000:]
    assert "stopping the responders" in out, out[-4000:]
    assert_no_responder_left(fleet)
