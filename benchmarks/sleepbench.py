#!/usr/bin/env python3
"""Sleep section vs a minimal C nanosleep loop (benchmarks/ref/sleep_ref.c): same threads, same
seconds, interleaved runs; prints both medians and their ratio (goal: >= 0.97).

Usage: benchmarks/sleepbench.py [--rounds 5] [--seconds 5] [--threads N]
Needs gcc and a release build (cargo build --release --locked)."""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]


def build_reference(workdir):
    exe = pathlib.Path(workdir) / "sleep_ref"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), str(REPO / "benchmarks/ref/sleep_ref.c")], check=True)
    return exe


def ours(binary, threads, seconds):
    out = subprocess.run(
        [binary, "sleep", "--sleep-threads", str(threads), "--sleep-time", str(seconds)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)["sleepbench"]["calls per second"]


def reference(exe, threads, seconds):
    out = subprocess.run([str(exe), str(threads), str(seconds)], check=True, capture_output=True, text=True)
    return float(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=(os.cpu_count() or 1) * 5 // 2)
    ap.add_argument("--binary", default=str(REPO / "target/release/health_check"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_reference(tmp)
        a, b = [], []
        for i in range(args.rounds):
            # Alternate which goes first, so drift in the machine hits both equally.
            order = [("ours", a), ("ref", b)] if i % 2 == 0 else [("ref", b), ("ours", a)]
            for name, sink in order:
                if name == "ours":
                    sink.append(ours(args.binary, args.threads, args.seconds))
                else:
                    sink.append(reference(exe, args.threads, args.seconds))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"threads={args.threads} seconds={args.seconds:g} rounds={args.rounds}")
    print(f"health_check sleep  calls/s: median {ma:.0f}  runs {' '.join(f'{x:.0f}' for x in a)}")
    print(f"C reference         calls/s: median {mb:.0f}  runs {' '.join(f'{x:.0f}' for x in b)}")
    print(f"ratio (ours / C) = {ma / mb:.3f}   goal >= 0.97")


if __name__ == "__main__":
    main()
