"""The drain cap on a real four-node Slurm cluster (munged, slurmctld and four `slurmd -N` on this
host; tests/python/slurm_harness.py), every node's HealthCheckProgram run at the same moment
(HealthCheckNodeState=ANY, no CYCLE), every 2 s.

When every node fails at once with `--max-drained-pct 25`, each reads the cap before any has
drained: before the cap was read again after the drain, three of four nodes were drained. Now
exactly one node is drained by health_check, the others log that the cap held them back, and it
stays so over the runs that follow (no flapping); healed, the node is resumed.

Needs what test_slurm.py needs; about 25 s."""

import pytest
import slurm_harness as sh
from conftest import require
from test_slurm import FAILING, PASSING, RUN_DEADLINE

NODES = [f"hcn{i}" for i in range(1, 5)]
CAP = ["--drain-after", "1", "--max-drained-pct", "25"]


@pytest.fixture(scope="module")
def cluster(binary):
    missing = sh.missing_prerequisite()
    require(missing is None, missing or "")
    c = sh.Cluster(binary, interval=2, nodes=NODES)
    try:
        c.start(PASSING)
        yield c
    finally:
        left = c.stop()
        assert not left, f"processes left running after the cluster stopped: {left}"


def drained_by_us(cluster):
    states = {n: cluster.node_state(n) for n in NODES}
    return sorted(n for n, s in states.items() if s.drained and s.reason.startswith("health_check:")), states


def test_every_node_failing_at_once_drains_one_and_holds_back_the_rest(cluster):
    cluster.set_options([*FAILING, *CAP])
    # Every node fails on its next run; the first of them past the settle time has decided.
    cluster.wait(lambda: drained_by_us(cluster)[0], RUN_DEADLINE * 2, "a node drained by health_check")
    before = len(cluster.runs())
    cluster.wait(lambda: len(cluster.runs()) >= before + 3 * len(NODES), RUN_DEADLINE * 4, "three more rounds")
    drained, states = drained_by_us(cluster)
    assert len(drained) == 1, f"{states}\n{cluster.diagnostics()}"
    log = (cluster.root / "runs.log.out").read_text()
    assert "held back by the cap" in log or "are drained by health_check already" in log, log[-3000:]
    # Healed: the drained node comes back, and nothing else was drained meanwhile.
    cluster.set_options(PASSING)
    cluster.wait(lambda: not drained_by_us(cluster)[0], RUN_DEADLINE * 2, "the drained node resumed")
    assert not any(cluster.node_state(n).drained for n in NODES), drained_by_us(cluster)[1]
