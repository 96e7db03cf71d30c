#!/usr/bin/env python3
"""Storage section vs Debian's fio on the same file, interleaved, in one run: 1 MiB sequential
writes (4 threads, each its own quarter), 4 KiB random reads and 4 KiB random writes (64 threads),
all --direct=1 --ioengine=sync with the same sizes, threads and time. Prints ratios of medians
(goal: ours / fio >= 1.0 for each). Prints the CPU model and fio's version with the ratios.

Usage: benchmarks/storage.py [--dir DIR] [--size-mib 1024] [--seconds 5] [--rounds 3]
Needs fio (Debian: apt-get install fio) and a release build. Writes one test file in DIR and
removes it."""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile

from host import cpu_model

REPO = pathlib.Path(__file__).resolve().parents[1]


def ours(binary, path, seconds, threads):
    out = subprocess.run(
        [
            binary,
            "storage",
            str(path),
            "--storage-allow-write",
            "--storage-time",
            str(seconds),
            "--storage-threads",
            str(threads),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    s = json.loads(out.stdout)["storage"]
    return {"write_mb_s": s["write_mb_s_1m"], "read_iops": s["read_iops_4k"], "write_iops": s["write_iops_4k"]}


def fio(path, size, seconds, threads):
    common = [
        "fio",
        f"--filename={path}",
        "--direct=1",
        "--ioengine=sync",
        "--time_based",
        f"--runtime={seconds}",
        "--group_reporting",
        "--output-format=json",
    ]
    quarter = size // 4
    jobs = {
        "write_mb_s": [
            "--name=seqwrite",
            "--rw=write",
            "--bs=1m",
            "--numjobs=4",
            f"--size={quarter}",
            f"--offset_increment={quarter}",
        ],
        "read_iops": ["--name=randread", "--rw=randread", "--bs=4k", f"--numjobs={threads}", f"--size={size}"],
        "write_iops": ["--name=randwrite", "--rw=randwrite", "--bs=4k", f"--numjobs={threads}", f"--size={size}"],
    }
    res = {}
    for key, args in jobs.items():
        out = subprocess.run(common + args, check=True, capture_output=True, text=True)
        job = json.loads(out.stdout)["jobs"][0]
        if key == "write_mb_s":
            res[key] = job["write"]["bw_bytes"] / 1e6
        else:
            res[key] = job["read" if key == "read_iops" else "write"]["iops"]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=str(REPO / "target"))
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", default=str(REPO / "target/release/health_check"))
    args = ap.parse_args()
    size = args.size_mib << 20
    fd, name = tempfile.mkstemp(prefix="hc-storage-bench-", dir=args.dir)
    os.close(fd)
    path = pathlib.Path(name)
    try:
        # Lay the file out with written data once; both tools then use it as it is.
        subprocess.run(
            [
                "fio",
                "--name=layout",
                f"--filename={path}",
                "--rw=write",
                "--bs=1m",
                "--direct=1",
                f"--size={size}",
                "--output=/dev/null",
            ],
            check=True,
        )
        res = {k: {"ours": [], "fio": []} for k in ["write_mb_s", "read_iops", "write_iops"]}
        for i in range(args.rounds):
            order = [("ours", ours), ("fio", fio)] if i % 2 == 0 else [("fio", fio), ("ours", ours)]
            for who, fn in order:
                r = (
                    fn(args.binary, path, args.seconds, args.threads)
                    if who == "ours"
                    else fn(path, size, args.seconds, args.threads)
                )
                for k, v in r.items():
                    res[k][who].append(v)
    finally:
        path.unlink(missing_ok=True)
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; reference: {fio_version}")
    print(f"{args.rounds} rounds, {args.size_mib} MiB file in {args.dir}, {args.seconds} s per test")
    for k, v in res.items():
        mo, mf = statistics.median(v["ours"]), statistics.median(v["fio"])
        print(
            f"  {k:11s} ours {mo:10.1f}  fio {mf:10.1f}  ratio {mo / mf:.3f}  goal >= 1.0"
            f"   (ours {' '.join(f'{x:.0f}' for x in v['ours'])}; fio {' '.join(f'{x:.0f}' for x in v['fio'])})"
        )


if __name__ == "__main__":
    main()
