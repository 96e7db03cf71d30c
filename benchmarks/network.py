#!/usr/bin/env python3
"""Network section vs the stock tools, on loopback, interleaved, in one run:

  1. our client vs `iperf3 -c`, both against the same `iperf3 -s`      (goal: ratio of medians >= 1.0)
  2. `iperf3 -c` against our responder vs against `iperf3 -s`         (goal: ratio of medians >= 1.0)
  3. our ping RTT vs `ping`'s, same count and interval                (goal: within 20 us)

Usage: benchmarks/network.py [--rounds 5] [--seconds 5] [--iperf3 PATH]
Needs iperf3 and ping (Debian: iperf3, iputils-ping) and a release build. --iperf3 names another
iperf3 build as the reference (e.g. 3.21 built from esnet/iperf: docs/performance.md). Prints the
CPU model and the reference's version with the ratios: a ratio is only meaningful with both."""

import argparse
import json
import os
import pathlib
import re
import socket
import statistics
import subprocess
import time

from host import cpu_model

REPO = pathlib.Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            time.sleep(0.3)
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def ours_client(binary, port, seconds, streams):
    for _ in range(20):
        out = subprocess.run(
            [
                binary,
                "iperf",
                "127.0.0.1",
                "--port",
                str(port),
                "--iperf-time",
                str(seconds),
                "--iperf-streams",
                str(streams),
                "--no-reverse",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        entry = json.loads(out.stdout)["iperf3 bandwidth"][0]
        if entry.get("bandwidth") is not None:
            return entry["bandwidth"]
        # As for iperf3 -c below: a server still closing the previous test refuses the next.
        print(f"  (our client: {entry.get('error')}; trying again)")
        time.sleep(0.3)
    raise SystemExit(f"our client kept failing: {entry.get('error')}")


def stock_client(iperf3, port, seconds, streams):
    for _ in range(20):
        out = subprocess.run(
            [iperf3, "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-P", str(streams), "-J"],
            capture_output=True,
            text=True,
            check=False,
        )
        doc = json.loads(out.stdout)
        if "error" not in doc:
            return doc["end"]["sum_received"]["bits_per_second"] / 1e9
        time.sleep(0.3)  # the server was still resetting after the previous test
    raise SystemExit(f"iperf3 -c kept failing: {doc['error']}")


def ours_ping(binary, count, interval):
    out = subprocess.run(
        [binary, "ping", "127.0.0.1", "--ping-count", str(count), "--ping-interval", str(interval)],
        capture_output=True,
        text=True,
        check=False,
    )
    entry = json.loads(out.stdout)["ping"][0]
    if entry.get("latency") is None:
        raise SystemExit(f"our ping failed: {entry}")
    return entry["latency"]


def stock_ping(count, interval):
    out = subprocess.run(
        ["ping", "-c", str(count), "-i", str(interval), "127.0.0.1"], check=True, capture_output=True, text=True
    )
    return float(re.search(r"= [\d.]+/([\d.]+)/", out.stdout).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--ping-count", type=int, default=20)
    ap.add_argument("--binary", default=str(REPO / "target/release/health_check"))
    ap.add_argument("--iperf3", default="iperf3", help="the reference iperf3 (client and server)")
    args = ap.parse_args()
    version = subprocess.run([args.iperf3, "--version"], capture_output=True, text=True, check=False).stdout.split(
        "\n"
    )[0]
    stock_port, our_port = free_port(), free_port()
    servers = [
        subprocess.Popen(
            [args.iperf3, "-s", "-p", str(stock_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ),
        subprocess.Popen(
            [args.binary, "serve", "--port", str(our_port), "--idle-timeout", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    try:
        wait_port(stock_port)
        wait_port(our_port)
        res = {k: [] for k in ["ours->iperf3-s", "iperf3-c->iperf3-s", "iperf3-c->ours", "ping ours", "ping stock"]}
        for i in range(args.rounds):
            jobs = [
                ("ours->iperf3-s", lambda: ours_client(args.binary, stock_port, args.seconds, args.streams)),
                ("iperf3-c->iperf3-s", lambda: stock_client(args.iperf3, stock_port, args.seconds, args.streams)),
                ("iperf3-c->ours", lambda: stock_client(args.iperf3, our_port, args.seconds, args.streams)),
                ("ping ours", lambda: ours_ping(args.binary, args.ping_count, 0.2)),
                ("ping stock", lambda: stock_ping(args.ping_count, 0.2)),
            ]
            if i % 2:
                jobs.reverse()  # alternate the order so drift hits every variant alike
            for name, job in jobs:
                res[name].append(job())
                time.sleep(0.5)
    finally:
        for s in servers:
            s.terminate()
            s.wait()
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; reference: {version}")
    print(f"loopback, {args.rounds} rounds, {args.seconds} s x {args.streams} streams per iperf test")
    for k, v in res.items():
        unit = "ms" if k.startswith("ping") else "Gbit/s"
        print(f"  {k:20s} median {med[k]:8.3f} {unit}   runs {' '.join(f'{x:.3f}' for x in v)}")
    print(
        f"our client / iperf3 -c (same iperf3 -s):      {med['ours->iperf3-s'] / med['iperf3-c->iperf3-s']:.3f}  goal >= 1.0"
    )
    print(
        f"iperf3 -c: our responder / iperf3 -s:          {med['iperf3-c->ours'] / med['iperf3-c->iperf3-s']:.3f}  goal >= 1.0"
    )
    print(
        f"ping RTT: ours - ping's:                       {1000 * (med['ping ours'] - med['ping stock']):+.1f} us  goal within 20 us"
    )


if __name__ == "__main__":
    main()
