#!/usr/bin/env python3
"""`health_check slurm` at the size of a large cluster (issues 29, 39): a partition of --nodes nodes
kept by the stand-in controller of tests/slurm_standin (a scontrol that serves updates one at a
time, as slurmctld does; a sinfo that prints the partition), and --failing of its nodes failing in
the same moment (their system section made to fail: the controller's side is what is measured).
The partition is sampled every 100 ms while they run. Prints the most nodes drained by
health_check at any sample and at the end against the cap, how the others ended, and the wall
time.

Usage: benchmarks/slurm_scale.py [--nodes 10000] [--failing 1000] [--cap-pct 1]
Needs the tests' release build (cargo build --release --locked --example health_check_with_faults), flock
and awk."""

import argparse
import collections
import pathlib
import shutil
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
# The tests' build, whose runs fail on purpose (HEALTH_CHECK_INJECT_PANIC): the shipped binary
# ignores the variable. `cargo build --release --example health_check_with_faults` builds it.
BINARY = REPO / "target/release/examples/health_check_with_faults"
STANDIN = REPO / "tests/slurm_standin"


SEPARATOR = "\x1f"


def outcome(line):
    for words, name in (
        ("more are ahead of this one", "held back by the tickets ahead"),
        ("are drained by health_check already and 0 more", "held back by the drains there"),
        ("still choosing", "others still choosing: no drain this run"),
        ("fail closed", "the cap could not be read: no drain"),
        ("drain after", "drained"),
    ):
        if words in line:
            return name
    return line.strip() or "(no line)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--failing", type=int, default=1_000)
    ap.add_argument("--cap-pct", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        for tool in ("scontrol", "sinfo"):
            shutil.copy(STANDIN / tool, d / tool)
        (d / "state").write_text(
            "".join(f"n{i:05}{SEPARATOR}idle{SEPARATOR}(null){SEPARATOR}none\n" for i in range(1, args.nodes + 1))
        )
        states = d / "states"
        states.mkdir(mode=0o700)
        started = time.monotonic()
        procs = [
            subprocess.Popen(
                [
                    str(BINARY),
                    "slurm",
                    "--node",
                    f"n{i:05}",
                    "--scontrol",
                    str(d / "scontrol"),
                    "--sinfo",
                    str(d / "sinfo"),
                    "--state",
                    str(states / f"n{i:05}.json"),
                    "--drain-after",
                    "1",
                    "--max-drained-pct",
                    str(args.cap_pct),
                    "--slurm-timeout",
                    "120",
                    "--deadline",
                    "600",
                    "--only",
                    "system",
                ],
                env={"HEALTH_CHECK_INJECT_PANIC": "system", "PATH": "/usr/bin:/bin"},
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for i in range(1, args.failing + 1)
        ]
        most = sample_while(d / "state", procs)
        outcomes = collections.Counter(outcome(p.communicate()[0]) for p in procs)
        took = time.monotonic() - started
        drained = drained_in((d / "state").read_text())
    cap = max(1, int(args.cap_pct / 100 * args.nodes))
    print(f"{args.failing} of {args.nodes} nodes failing at once, cap {args.cap_pct}% ({cap} nodes)")
    print(f"most drained at any 100 ms sample: {most} ({'within' if most <= cap else 'PAST'} the cap)")
    print(f"drained at the end: {drained} ({'within' if drained <= cap else 'PAST'} the cap)")
    for name, n in outcomes.most_common():
        print(f"  {n:5d} {name}")
    print(f"wall time {took:.1f} s")
    return 0 if 1 <= drained <= cap and most <= cap else 1


def drained_in(state):
    return sum(1 for line in state.splitlines() if f"{SEPARATOR}idle+drain{SEPARATOR}" in line)


def sample_while(state, procs):
    """The most nodes drained at any 100 ms sample while the runs go on."""
    most = 0
    while any(p.poll() is None for p in procs):
        try:
            most = max(most, drained_in(state.read_text()))
        except OSError:
            pass
        time.sleep(0.1)
    return most


if __name__ == "__main__":
    raise SystemExit(main())
