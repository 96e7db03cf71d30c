#!/usr/bin/env python3
"""Wall time of a fleet run's network phase as the fleet grows: ansible/fleet.yml on N hosts of a
fleet on this machine (network namespaces on a bridge, each with its own sshd:
tests/python/fleet_harness.py), every host's link shaped to 200 Mbit/s in both directions so the
links, not the 2 CPUs, set the pace. Runs `--only network` in each mode:

  pairs  one round, all pairs at once:         T               (the same for 4 hosts or 400)
  mesh   N-1 rounds (N for odd N), one at a time: (N-1) x T      (an N x N matrix)
  star   one server, N-1 clients one by one:     (N-1) x T + the all-clients test

where T is one test (ping, then bandwidth forward and reverse). The network phase is timed by the
playbook itself (timeline.yml: controller timestamps before the first round and after the last),
so it includes Ansible's cost of starting each round's task on every host.

Goal (issue 10): pairs with 8 hosts within 1.3x of pairs with 2.

Usage: benchmarks/fleet_scale.py [--sizes 2,4,8] [--modes pairs,mesh,star] [--iperf-time 5] [--repeat 1]
Needs root, iproute2, openssh-server, openssh-client, ansible-core (run it with target/test-venv/bin/python)
and a release build (cargo build --release --locked)."""

import argparse
import datetime
import pathlib
import statistics
import sys
import tempfile

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
import fleet_harness as fh


def formula(mode, n):
    """(rounds or sequential tests, the formula as text)."""
    if mode == "pairs":
        return 1, "1 round"
    if mode == "star" and n == 2:
        return 1, "1 test (one client: no all-at-once test)"
    if mode == "mesh":
        rounds = n - 1 if n % 2 == 0 else n
        return rounds, f"{rounds} round(s) (N-1)" if n % 2 == 0 else f"{rounds} rounds (N, odd)"
    return n - 1, f"{n - 1} tests in a row (N-1 clients) + all at once"


def one_run(fleet, mode, hosts, args):
    groups = None
    if mode == "star":
        groups = {"health_check_server": hosts[:1], "health_check_clients": hosts[1:]}
    proc = fleet.playbook(
        mode=mode, args=args, hosts=hosts, groups=groups, extra_vars={"health_check_profile": "quick"}
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} with {len(hosts)} hosts failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    run = fleet.run_dirs()[-1]
    timeline = yaml.safe_load((run / "timeline.yml").read_text())
    when = datetime.datetime.fromisoformat
    tests = [(when(t["end"]) - when(t["start"])).total_seconds() for t in timeline["tests"]]
    return timeline["network_phase"]["seconds"], tests


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2,4,8")
    ap.add_argument("--modes", default="pairs,mesh,star")
    ap.add_argument("--iperf-time", type=int, default=5, help="seconds per bandwidth direction")
    ap.add_argument("--rate", default="200mbit", help="tc tbf rate of every host's link")
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode and size (the median is shown)")
    opts = ap.parse_args()
    sizes = [int(s) for s in opts.sizes.split(",")]
    modes = opts.modes.split(",")
    missing = fh.missing_prerequisite(str(fh.REPO / "target/release/health_check"))
    if missing:
        raise SystemExit(missing)
    args = f"--only network --ping-count 5 --iperf-time {opts.iperf_time}"
    print(
        f"network phase of ansible/fleet.yml, {opts.rate} links, '{args}', profile quick, "
        f"median of {opts.repeat} run(s)"
    )
    print(
        f"{'mode':<6} {'hosts':>5} {'schedule':<42} {'phase s':>8} {'test s':>7} {'phase/test':>10} "
        f"{'x N=' + str(sizes[0]):>7}"
    )
    with (
        tempfile.TemporaryDirectory(prefix="hcf-bench-") as tmp,
        fh.Fleet(max(sizes), pathlib.Path(tmp) / "f") as fleet,
    ):
        fleet.shape_all(opts.rate)
        fleet.warm()
        for mode in modes:
            first = None
            for n in sizes:
                phases, tests = [], []
                for _ in range(opts.repeat):
                    phase, t = one_run(fleet, mode, fleet.hosts[:n], args)
                    phases.append(phase)
                    tests.extend(t)
                phase = statistics.median(phases)
                test = statistics.median(tests) if mode != "star" else statistics.median(tests) / (n - 1)
                first = first or phase
                _, text = formula(mode, n)
                print(
                    f"{mode:<6} {n:>5} {text:<42} {phase:>8.1f} {test:>7.1f} {phase / test:>10.1f} "
                    f"{phase / first:>7.2f}",
                    flush=True,
                )
    print(
        "test s: one test's wall time (star: the server's run divided by its clients); phase/test: how many "
        "tests' time the phase took"
    )


if __name__ == "__main__":
    main()
