"""The drain cap on a real eight-node Slurm cluster (munged, slurmctld and eight `slurmd -N` on
this host; tests/python/slurm_harness.py), every node failing at once, sampled every 100 ms.

With `--max-drained-pct 12.5` one node of eight may be drained by health_check. Before, each node
read the cap before any had drained, drained, and lifted its drain again when it ranked past the
cap: for seconds, every failing node was out of service. Now each takes its turn before it drains
(a mark in its Comment, a ticket, one re-read: `run::slurm::cap`), so at no 100 ms sample is more
than one node drained by health_check: first with the eight runs started by hand in the same
instant, then over the rounds slurmd's HealthCheckProgram runs on its own; healed, the node is
resumed and no mark of intent is left.

Needs what test_slurm.py needs; about 30 s."""

import subprocess
import threading
import time

import pytest
import slurm_harness as sh
from conftest import require
from test_slurm import FAILING, PASSING, RUN_DEADLINE

NODES = [f"hcn{i}" for i in range(1, 9)]
CAP = ["--drain-after", "1", "--max-drained-pct", "12.5"]
SEPARATOR = "\x1f"


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


def partition(cluster):
    """Every node's (state, comment, reason), in one sinfo call."""
    r = subprocess.run(
        [
            sh.tool("sinfo"),
            "-h",
            "-N",
            "-O",
            f"NodeList:0{SEPARATOR},StateLong:0{SEPARATOR},Comment:0{SEPARATOR},Reason:0",
        ],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    nodes = {}
    for line in r.stdout.splitlines():
        name, state, comment, reason = line.split(SEPARATOR, 3)
        nodes[name.strip()] = (state.strip(), comment.strip(), reason.strip())
    return nodes


def ours(nodes):
    return sorted(
        n for n, (state, _, reason) in nodes.items() if "drain" in state and reason.startswith("health_check:")
    )


class Sampler:
    """The partition read every 100 ms on a thread: the most nodes health_check held drained at
    any sample, and that sample."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.most = 0
        self.worst = {}
        self.samples = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            nodes = partition(self.cluster)
            self.samples += 1
            if len(ours(nodes)) > self.most:
                self.most, self.worst = len(ours(nodes)), nodes
            time.sleep(0.1)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=15)


def storm_by_hand(cluster):
    """Every node's `health_check slurm` started in the same instant, failing; their lines."""
    options = [*FAILING, *CAP, "--slurm-timeout", "15"]
    procs = [
        subprocess.Popen(
            [
                cluster.binary,
                "slurm",
                "--node",
                n,
                "--state",
                str(cluster.root / f"state-{n}.json"),
                *options,
            ],
            env={**cluster.env, "SLURMD_NODENAME": n},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for n in NODES
    ]
    return [p.communicate(timeout=RUN_DEADLINE * 3)[0] for p in procs]


def test_every_node_failing_at_once_never_drains_past_the_cap_at_any_sample(cluster):
    # slurmd's own runs fail from now on too: left passing, one of them could resume the node
    # the storm drains (its own state has passing runs) while the storm still runs on a busy host.
    cluster.set_options([*FAILING, *CAP])
    with Sampler(cluster) as sampler:
        # Eight runs in the same instant, beside slurmd's own.
        lines = storm_by_hand(cluster)
        # A node whose slurmd was running its own check in that instant (every 2 s, longer on a
        # busy host) holds the node's lock: the storm's run there takes no action, and the run
        # in flight decides a moment later, under the same cap.
        busy = [line for line in lines if "takes no action" in line]
        if busy:
            cluster.wait(lambda: ours(partition(cluster)), RUN_DEADLINE * 2, "slurmd's own runs to settle the cap")
        drained = ours(partition(cluster))
        assert len(drained) == 1, f"{lines}\n{partition(cluster)}"
        # Every other node says it did not drain: held back by the cap, still choosing when its
        # deadline came, or (on a controller slowed by a busy host) unable to read the cap in time.
        held = [line for line in lines if "not draining" in line]
        drained_by_the_storm = len(NODES) - len(held) - len(busy)
        assert drained_by_the_storm == 1 or (busy and drained_by_the_storm == 0), "\n".join(lines)
        # Then slurmd's own runs, every 2 s on every node, for a few rounds.
        before = len(cluster.runs())
        cluster.wait(lambda: len(cluster.runs()) >= before + 3 * len(NODES), RUN_DEADLINE * 4, "three more rounds")
        assert ours(partition(cluster)) == drained, partition(cluster)
    assert sampler.samples > 20, sampler.samples
    assert sampler.most == 1, f"{sampler.most} drained by health_check at one sample: {sampler.worst}"
    # Healed: the drained node comes back, and no mark of intent is left on any node.
    cluster.set_options(PASSING)
    cluster.wait(lambda: not ours(partition(cluster)), RUN_DEADLINE * 2, "the drained node resumed")
    nodes = partition(cluster)
    assert not any("drain" in s for s, _, _ in nodes.values()), nodes
    cluster.wait(
        lambda: not any("health_check-cap:" in c for _, c, _ in partition(cluster).values()),
        RUN_DEADLINE * 2,
        "every mark of intent cleared",
    )
