"""`health_check slurm` as Slurm's HealthCheckProgram on a real one-node cluster (munged,
slurmctld, slurmd; tests/python/slurm_harness.py), through deploy/slurm/health_check-slurm, every
2 s (Slurm's HealthCheckInterval; 5 s took 42 s instead of 17). Each run is the nanosleep benchmark alone for 0.3 s, made to fail or pass by its threshold.
Polling `scontrol show node` with deadlines, it shows what an administrator relies on:

- consecutive failing runs drain the node, with a reason starting "health_check:", and not before
  --drain-after of them;
- passing runs resume it;
- an administrator's drain survives passing runs, and one made while a run measures is neither
  overwritten nor lifted by it;
- a node running a job that loads its CPUs is not drained: the run says inconclusive, naming the
  load;
- an uncorrected memory error (a fake EDAC tree laid over /sys in the check's own mount
  namespace) drains the node after --drain-after runs and keeps it drained while the count stands;
- with the controller frozen (SIGSTOP), a run still ends within its --slurm-timeout plus a margin;
- everything started is stopped and removed, also when a test fails.

Needs root and Debian's slurmctld, slurmd, slurm-client and munge; without them the tests skip with
one line (fail when HEALTH_CHECK_TEST_REQUIRE_ALL is set). About 45 s."""

import json
import pathlib
import shutil
import subprocess
import time

import pytest
import slurm_harness as sh
from conftest import require

INTERVAL = 2
DRAIN_AFTER = 2
SLURM_TIMEOUT = 5


def options(passing, drain_after=DRAIN_AFTER, slurm_timeout=SLURM_TIMEOUT, sleep_time=0.3):
    """A run of the nanosleep benchmark alone for 0.3 s that fails (its per-thread rate asked to
    be impossible) or passes (asked to be trivial); the busy-CPU and IRQ limits are lifted either
    way (a small VM is 100 % busy while the benchmark runs), so the rate is the one failing check. A single node is 100 % of its partition: the
    default --max-drained-pct would forbid its drain."""
    argv = ["--drain-after", str(drain_after), "--resume-after", "1", "--max-drained-pct", "100"]
    argv += ["--slurm-timeout", str(slurm_timeout), "--only", "sleep", "--sleep-time", str(sleep_time)]
    # The history (which the wrapper always records) keeps one run: its judgment of the machine's
    # past starts from the fourth run, so it never starts here. With other load lifted below, a
    # rate slowed by that load would fail against the earlier runs' (CI builds beside pytest).
    argv += ["--history-keep", "1"]
    rate = "sleepbench.calls_per_thread=1" if passing else "sleepbench.calls_per_thread=1e12"
    # Other tests' load (and the hypervisor's steal) must not make the verdict inconclusive.
    quiet = ["interference.other_cpu_pct=100", "interference.steal_pct=100"]
    for limit in [rate, "sleepbench.total_cpu_pct=1000", "sleepbench.irq_pct=1000", *quiet]:
        argv += ["--threshold", limit]
    return argv


FAILING = options(passing=False)
PASSING = options(passing=True)
# Deadlines: a run starts every INTERVAL s (the first one up to INTERVAL s after a change).
RUN_DEADLINE = INTERVAL * 2 + 5


@pytest.fixture(scope="module")
def cluster(binary):
    missing = sh.missing_prerequisite()
    require(missing is None, missing or "")
    c = sh.Cluster(binary, interval=INTERVAL)
    try:
        c.start(PASSING)
        print(
            f"\nSlurm cluster up: slurmctld answering after {c.timings['slurmctld']:.1f} s, node IDLE after "
            f"{c.timings['idle']:.1f} s"
        )
        yield c
    finally:
        left = c.stop()
        assert not left, f"processes left running after the cluster stopped: {left}"


@pytest.fixture
def node(cluster):
    """The node, passing and in service, at the start of each test (whatever the last one did)."""
    cluster.continue_controller()
    cluster.set_options(PASSING)
    cluster.resume()
    cluster.wait_node(lambda n: not n.drained, RUN_DEADLINE, "in service")
    return cluster


def test_cluster_reports_the_node_idle_and_runs_the_health_check(node):
    state = node.node_state()
    assert state.state.startswith("IDLE"), state
    codes = node.wait_runs(1, RUN_DEADLINE)
    assert codes == [0], node.diagnostics()


def test_failing_runs_drain_the_node_after_drain_after_runs(node):
    node.set_options(FAILING)
    before = len(node.runs())
    # The first failing run ends with the node still in service.
    node.wait(lambda: 1 in node.runs()[before:], RUN_DEADLINE, "a failing run")
    assert not node.node_state().drained, "drained after one failing run; --drain-after is 2"
    state = node.wait_node(lambda n: n.drained, RUN_DEADLINE, "drained")
    assert state.reason.startswith("health_check:"), state
    assert "sleepbench.calls_per_thread" in state.reason, state
    node.wait(lambda: node.runs()[before:].count(1) >= DRAIN_AFTER, RUN_DEADLINE, "the draining run to end")
    # Slurm's `sinfo -R` shows 20 characters: they say who drained it.
    assert state.reason[:20].startswith("health_check: ")


def test_passing_runs_resume_a_node_health_check_drained(node):
    node.set_options(FAILING)
    node.wait_node(lambda n: n.drained, RUN_DEADLINE * 2, "drained")
    node.set_options(PASSING)
    state = node.wait_node(lambda n: not n.drained, RUN_DEADLINE, "resumed")
    assert not state.reason.startswith("health_check:"), state


def test_an_administrators_drain_survives_passing_runs(node):
    node.drain("admin: maintenance")
    codes = node.wait_runs(2, RUN_DEADLINE * 2)
    assert set(codes) == {0}, node.diagnostics()
    state = node.node_state()
    assert state.drained and state.reason == "admin: maintenance", state


def test_a_run_ends_in_time_with_the_controller_frozen(node, tmp_path):
    """slurmctld stopped with SIGSTOP accepts connections and never answers: each scontrol call
    would wait for MessageTimeout (10 s) and retry. `health_check slurm` bounds every call by
    --slurm-timeout and still ends, exit 1 for a failing run."""
    timeout = 2
    argv = [
        node.binary,
        "slurm",
        "--node",
        node.node,
        "--state",
        str(tmp_path / "state.json"),
        "--history",
        str(tmp_path / "history.sqlite"),
        *options(passing=False, drain_after=1, slurm_timeout=timeout),
    ]
    node.pause_controller()
    try:
        start = time.monotonic()
        r = subprocess.run(argv, env=node.env, capture_output=True, text=True, timeout=60, check=False)
        elapsed = time.monotonic() - start
    finally:
        node.continue_controller()
    # The run itself takes under a second; each Slurm call at most `timeout`, and a run that
    # cannot reach the controller gives up after its first call that times out.
    margin = 6
    assert elapsed < timeout + margin, f"{elapsed:.1f} s\n{r.stderr}"
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip(), "says what it could not do"
    node.wait(lambda: node.scontrol("ping", check=False).returncode == 0, 20, "slurmctld to answer again")


def test_an_administrators_drain_made_while_a_run_measures_survives_it(node):
    """The state is read when the run starts and acted on at its end: a drain an administrator
    makes in between is read again before `scontrol update`, and left as it is."""
    node.set_options(options(passing=False, drain_after=1, sleep_time=3))
    started = node.runs_started()
    node.wait(lambda: node.runs_started() > started, RUN_DEADLINE, "a run to start")
    # After the run read the node (a few ms in), before it ends (3 s of measuring).
    time.sleep(1)
    reason = "admin: replacing DIMM B2, do not resume"
    node.drain(reason)
    ended = len(node.runs())
    node.wait(lambda: len(node.runs()) > ended, RUN_DEADLINE * 2, "the run to end")
    state = node.node_state()
    assert state.drained and state.reason == reason, f"{state}\n{node.diagnostics()}"
    log = (node.root / "runs.log.out").read_text()
    assert "changed while the check ran" in log or "held by someone else" in log, log[-2000:]
    # Passing runs leave it drained too.
    node.set_options(PASSING)
    node.wait_runs(2, RUN_DEADLINE * 3)
    state = node.node_state()
    assert state.drained and state.reason == reason, state


def busy_options(output):
    """The busy-CPU verdict made to fail whatever the load (this small VM is busy with the
    benchmark alone; a large node idles at a few %), one failing run to drain, and the
    interference limits as shipped: only they stand between a loaded node and its drain."""
    argv = ["--drain-after", "1", "--resume-after", "1", "--max-drained-pct", "100"]
    argv += ["--slurm-timeout", str(SLURM_TIMEOUT), "--only", "sleep", "--sleep-time", "1"]
    for limit in ["sleepbench.total_cpu_pct=1", "sleepbench.calls_per_thread=1", "sleepbench.irq_pct=1000"]:
        argv += ["--threshold", limit]
    return [*argv, "--history-keep", "1", "--output", str(output)]


def test_a_node_running_a_busy_job_is_not_drained_and_says_inconclusive(node):
    doc = node.root / "busy.json"
    job = node.submit("while :; do :; done")
    try:
        node.wait_node(lambda n: n.flags & {"ALLOCATED", "MIXED"}, 30, "running the job")
        node.set_options(busy_options(doc))
        ended, started = len(node.runs()), node.runs_started()
        # A run that started with these options (after the job did) and ended: slurmd's own runs
        # that started before them may end after this line on a loaded machine, without the
        # document (a clean clone's CI met two such runs).
        node.wait(
            lambda: doc.exists() and len(node.runs()) >= started + 1,
            RUN_DEADLINE * 3,
            "a run with the busy options beside the job",
        )
        codes = node.runs()[ended:]
        state = node.node_state()
        assert not state.drained, f"{state}\n{node.diagnostics()}"
        assert set(codes) == {0}, node.diagnostics()
        checks = {c["name"]: c for c in json.loads(doc.read_text())["checks"]}
        busy = checks["sleepbench.total_cpu"]
        assert busy["status"] == "inconclusive", busy
        assert "other processes used" in busy["message"], busy
    finally:
        node.cancel(job)


def test_an_uncorrected_memory_error_drains_the_node_and_keeps_it_drained(node):
    mc = node.fake_sys / "edac" / "mc" / "mc0"
    mc.mkdir(parents=True)
    for name, value in (("ce_count", 0), ("ue_count", 1)):
        (mc / name).write_text(f"{value}\n")
    argv = ["--drain-after", "2", "--resume-after", "1", "--max-drained-pct", "100"]
    node.set_options([*argv, "--slurm-timeout", str(SLURM_TIMEOUT), "--only", "system"])
    try:
        before = len(node.runs())
        node.wait(lambda: 1 in node.runs()[before:], RUN_DEADLINE, "a failing run")
        state = node.wait_node(lambda n: n.drained, RUN_DEADLINE * 2, "drained")
        assert state.reason == "health_check: errors.edac:mc0: check failed", state
        # The history counts nothing new since the last run; the condition holds all the same.
        ended = len(node.runs())
        node.wait(lambda: len(node.runs()) >= ended + 3, RUN_DEADLINE * 3, "three more runs")
        assert set(node.runs()[ended:]) == {1}, node.diagnostics()
        state = node.node_state()
        assert state.drained and state.reason.startswith("health_check: errors.edac:mc0"), state
    finally:
        shutil.rmtree(node.fake_sys)


def test_a_read_only_file_system_in_an_nhc_conf_drains_the_node(node, tmp_path):
    """Coming from NHC: the site's nhc.conf says a scratch file system must be mounted
    read-write; bound read-only, the node drains on the first failing run (`--drain-at-once node.*`,
    as NHC drains, while every other check waits for 100 failing runs) with a health_check: reason
    naming NHC's check, and resumes once it is writable. The file is where NHC keeps it,
    /etc/nhc/nhc.conf, which `health_check slurm` reads by itself."""
    conf = pathlib.Path("/etc/nhc/nhc.conf")
    if conf.exists():
        pytest.skip("this machine has an /etc/nhc/nhc.conf of its own; the test will not replace it")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    made_dir = not conf.parent.exists()
    conf.parent.mkdir(exist_ok=True)
    conf.write_text(f"* || check_fs_mount_rw -f {scratch}\n")
    subprocess.run(["mount", "--bind", str(scratch), str(scratch)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(scratch)], check=True)
        argv = ["--drain-after", "100", "--drain-at-once", "node.*", "--resume-after", "1", "--max-drained-pct", "100"]
        node.set_options([*argv, "--slurm-timeout", str(SLURM_TIMEOUT), "--only", "system"])
        state = node.wait_node(lambda n: n.drained, RUN_DEADLINE * 2, "drained")
        assert state.reason.startswith(f"health_check: node.check_fs_mount_rw:{scratch}"), state
        subprocess.run(["mount", "-o", "remount,bind,rw", str(scratch)], check=True)
        state = node.wait_node(lambda n: not n.drained, RUN_DEADLINE * 2, "resumed")
    finally:
        subprocess.run(["umount", str(scratch)], check=False)
        conf.unlink(missing_ok=True)
        if made_dir:
            conf.parent.rmdir()
