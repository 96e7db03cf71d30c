"""The playbook's second round on a real fleet (tests/python/fleet_harness.py): DCPerf's star with
one server, where the first round cannot tell a slow client from a slow path, and the second
round, measured from a host under no suspicion, settles both. Then, on the hosts that run left,
check mode: it goes through every task and changes nothing.

A fleet of its own, so these tests run beside test_fleet_ansible.py's (scripts/test.sh): most of
a playbook's time is Ansible's round trips, and the two fleets share the CPUs' idle time.

Needs root, iproute2, openssh-server, openssh-client and ansible-core; without them it skips
with one line (fails when HEALTH_CHECK_TEST_REQUIRE_ALL is set)."""

import json

import fleet_harness as fh
import pytest
from conftest import require
from fleet_harness import QUICK, QUICK_ARGS, VM_LIMITS, assert_no_responder_left, last_run, output


@pytest.fixture(scope="module")
def fleet(binary, tmp_path_factory):
    require(not fh.missing_prerequisite(binary), fh.missing_prerequisite(binary))
    with fh.Fleet(4, tmp_path_factory.mktemp("fleet"), binary=binary) as f:
        f.shape_all("1gbit")
        f.warm()
        yield f


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
    """Every document's bandwidth measurements, one line each: a failure shows what was measured
    (on this 2-CPU VM a starved transfer is the usual cause, not the judge)."""
    lines = []
    for doc in sorted(run.glob("h*.json")):
        data = json.loads(doc.read_text())
        pairs = [f"{m.get('hostname')} {m.get('bandwidth', m.get('error'))}" for m in data.get("iperf3 bandwidth", [])]
        lines.append(f"{doc.name}: {', '.join(pairs) or '-'}")
    return "\n".join(lines)


def test_a_second_round_settles_a_one_server_star_slow_client_and_slow_path(fleet):
    """DCPerf's star with one server (h1) and three clients, one playbook for both cases: h4 slow
    (its own link shaped) and the path h1 -> h3 slow (only h1's traffic to h3 shaped). Neither can
    be told apart after the first round, where one server measured them. The playbook's second
    round measures h3 and h4 from the one host under no suspicion (h2), and the report of both
    rounds blames h4 as the client (slow from there too) and the path h1 <-> h3 (fine from
    there); nobody else is failed, and nothing is left suspect.

    The links run at 300 Mbit/s, not the fixture's 1 Gbit/s: the four hosts share this VM's two
    CPUs, and with CI's compilers beside them a 1 Gbit/s transfer was once starved to a fifth of
    its rate (the one measurement from the helper that settles h3 came out poor)."""
    h1, h3, h4 = fleet.hosts[0], fleet.hosts[2], fleet.hosts[3]
    fleet.shape_all("300mbit")
    fleet.shape(h4, "50mbit")
    shape_path(fleet, h1, h3, "50mbit", rest="300mbit")
    try:
        run, report, machines = star_with_one_server(fleet)
    finally:
        fleet.exec(h1, ["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        fleet.shape_all("1gbit")
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
    assert "network.bandwidth" in machines["h4"]["reasons"][0], machines["h4"]["reasons"]
    assert ("h4", "client") in {(f["machine"], f["scope"]) for f in findings}, findings
    # The slow path, and only that about h3.
    links = [f for f in findings if f.get("link") and set(f["link"]) == {"h1", "h3"}]
    assert links, (report["findings"], seen)
    assert "poor only between h1 and" in links[0]["message"], links[0]["message"]
    assert not [f for f in findings if f["scope"] != "link" and f["machine"] != "h4"], (findings, seen)

    def not_blamed(m):
        if m["status"] == "suspect":
            return m["label"] in latency_suspects
        return m["status"] not in ("fail", "warn")

    for m in report["machines"]:
        if m["label"] not in ("h4", h4.address):
            assert not_blamed(m), (m, seen)


def work_dir_contents(fleet):
    """Every host's work directory, as {host: [(path, size, mtime)]} (Ansible's own temporary
    directory left out)."""
    return {
        h.name: sorted(
            (str(p), p.stat().st_size, p.stat().st_mtime_ns)
            for p in fleet.remote_dir(h).rglob("*")
            if ".ansible-tmp" not in p.parts
        )
        for h in fleet.hosts
    }


def test_check_mode_says_what_it_would_do_and_changes_nothing(fleet):
    """Two hosts: check mode goes through every task of a run (each a round trip to every host);
    the host count changes nothing it shows."""
    before = work_dir_contents(fleet)
    runs = fleet.run_dirs()
    proc = fleet.playbook("--check", "--limit", "h1,h2,localhost", mode="pairs", args=QUICK_ARGS, extra_vars=QUICK)
    assert proc.returncode == 0, output(proc)
    assert "would run: " in proc.stdout and " -r client --daemon " in proc.stdout, output(proc)
    assert "check mode: nothing was measured" in proc.stdout, output(proc)
    assert work_dir_contents(fleet) == before, "check mode copies nothing and makes no documents"
    assert fleet.run_dirs() == runs, "check mode writes no results"
    assert_no_responder_left(fleet)
