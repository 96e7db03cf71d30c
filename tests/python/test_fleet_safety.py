"""ansible/fleet.yml's safety, dry runs and check mode on a real fleet
(tests/python/fleet_harness.py): a dry run prints the schedule and touches nothing; a --limit
without localhost stops before touching a host; a work directory another user could change
fails that host, with the reason, while the others complete; the default work directory as root
is root's own; check mode goes through every task and changes nothing; a run interrupted in its
network phase stops its responders. Nothing here measures a link (the interrupted run's transfer
is cut within a second, and nothing asserts its rate).

A fleet of its own, so these tests run beside test_fleet_ansible.py's (scripts/test.sh): most of
a playbook's time is Ansible's round trips, and the two fleets share the CPUs' idle time; the
other fleet keeps every test whose verdict rests on a transfer's rate (two fleets' transfers at
once starved one to a seventh of its shaped rate).

Needs root, iproute2, openssh-server, openssh-client and ansible-core; without them it skips
with one line (fails when HEALTH_CHECK_TEST_REQUIRE_ALL is set)."""

import json
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import time

import fleet_harness as fh
import pytest
from conftest import require
from fleet_harness import QUICK, QUICK_ARGS, assert_no_responder_left, health_check_pids, last_run, output


@pytest.fixture(scope="module")
def fleet(binary, tmp_path_factory):
    require(not fh.missing_prerequisite(binary), fh.missing_prerequisite(binary))
    with fh.Fleet(4, tmp_path_factory.mktemp("fleet"), binary=binary) as f:
        f.shape_all("1gbit")
        f.warm()
        yield f


# First: these two assert that nothing was written yet.
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


def test_a_run_narrowed_without_localhost_stops_before_touching_a_host(fleet):
    """--limit narrows the controller's play too: without localhost the hosts would run and no
    fleet report would be written."""
    proc = fleet.playbook("--limit", "h1,h2", mode="pairs", args=QUICK_ARGS)
    assert proc.returncode != 0, output(proc)
    assert "--limit h1,h2 leaves out localhost" in proc.stdout, output(proc)
    assert "--limit 'h1,h2,localhost'" in proc.stdout, output(proc)
    assert not (fleet.work / "results").exists(), "no results"
    assert not any(fleet.remote_dir(h).exists() for h in fleet.hosts), "no host touched"


ROOT_DEFAULT = pathlib.Path("/var/lib/health_check")


@pytest.fixture(scope="module")
def unsafe_work_dirs_run(fleet):
    """pairs, local sections only: h2's work directory made beforehand by another user (nobody),
    h4's below a directory anyone can write to (not sticky): both hosts must fail with the reason
    and nothing copied into those directories; h1 uses the default work directory
    (/var/lib/health_check/h1, connecting as root), h3 its usual one."""
    nobody = pwd.getpwnam("nobody")
    h1, h2 = fleet.hosts[0], fleet.hosts[1]
    foreign = fleet.premade_dir(fleet.remote_dir(h2), nobody.pw_uid, nobody.pw_gid, 0o755)
    open_dir = fleet.premade_dir(fleet.work / "open", 0, 0, 0o777)
    made = [p for p in (ROOT_DEFAULT / h1.name, ROOT_DEFAULT) if not p.exists()]
    try:
        proc = fleet.playbook(
            mode="pairs",
            args="--only system",
            extra_vars=QUICK,
            host_vars={"h1": {"health_check_remote_dir": '""'}, "h4": {"health_check_remote_dir": f"{open_dir}/h4"}},
        )
        default_dir = [(p, p.stat()) for p in (ROOT_DEFAULT, ROOT_DEFAULT / h1.name) if p.exists()]
        in_foreign = sorted(p.name for p in foreign.iterdir() if p.name != ".ansible-tmp")
        in_open = sorted(p.name for p in open_dir.iterdir())
        return proc, last_run(fleet) if fleet.run_dirs() else (None, None), default_dir, in_foreign, in_open
    finally:
        # Now, not at the module's end: the later runs use these hosts' usual work directories.
        for p in made:
            shutil.rmtree(p, ignore_errors=True)
        shutil.rmtree(foreign, ignore_errors=True)
        shutil.rmtree(open_dir, ignore_errors=True)


def test_a_work_directory_someone_else_could_change_fails_that_host_and_the_others_complete(
    fleet, unsafe_work_dirs_run
):
    proc, (run, report), _, in_foreign, in_open = unsafe_work_dirs_run
    assert proc.returncode == 0, output(proc)
    documents = {name: json.loads((run / f"{name}.json").read_text()) for name in ("h1", "h2", "h3", "h4")}
    foreign = fleet.remote_dir(fleet.hosts[1])
    error = documents["h2"].get("fleet_host_error", "")
    assert f"the work directory {foreign} is owned by uid 65534 (nobody), not by uid 0" in error, documents["h2"]
    assert in_foreign == [], "nothing was copied into the directory another user owns"
    error = documents["h4"].get("fleet_host_error", "")
    assert f"{fleet.work / 'open'} (above the work directory) is writable by group or others and not sticky" in error
    assert in_open == [], "nothing was made below the directory anyone can write to"
    for name in ("h1", "h3"):
        assert documents[name]["health_check"]["sections"]["system"] == "ok", name
    reasons = {m["label"]: " ".join(m.get("reasons", [])) for m in report["machines"]}
    assert "owned by uid 65534 (nobody)" in reasons["h2"] and "not sticky" in reasons["h4"], reasons
    assert "no document from h2: " in proc.stdout and "no document from h4: " in proc.stdout
    assert_no_responder_left(fleet)


def test_the_default_work_directory_as_root_is_roots_own(unsafe_work_dirs_run):
    _, _, default_dir, _, _ = unsafe_work_dirs_run
    modes = {str(p): (st.st_uid, oct(st.st_mode & 0o7777)) for p, st in default_dir}
    assert modes == {str(ROOT_DEFAULT): (0, "0o755"), str(ROOT_DEFAULT / "h1"): (0, "0o700")}, modes


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


def test_an_interrupted_run_stops_its_responders(fleet):
    """fleet-run.sh: Ctrl-C during the network phase, then the responders are stopped (--tags stop;
    ansible-playbook itself skips always: sections when interrupted). Two hosts of the four
    (--limit, which the stop keeps): the interruption and the stop are the same for any number."""
    argv = fleet.playbook_argv(
        "--limit",
        "h1,h2,localhost",
        mode="pairs",
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
            if all(5201 in fleet.listening_ports(h) for h in fleet.hosts[:2]) and any(
                len(health_check_pids(fleet, h)) > 1 for h in fleet.hosts[:2]
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
