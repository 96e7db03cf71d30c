#!/usr/bin/env python3
"""Memory section vs references, interleaved, in one run; prints ratios of medians:

  1. idle latency, FullRandom 512 MiB on CPU 0, vs benchmarks/ref/chase_ref.c on the same chain
     (goal: within 5 %)
  2. vector read bandwidth (peak_read_simd_mb_s) vs benchmarks/ref/read_ref.c built for every
     vector width the CPU has (AVX2, and AVX-512 where present; on aarch64 NEON, and SVE where
     present), the faster of them in each round
     (goal: >= 1.0); the kernel ours chose and its trial rates are printed
  3. single-thread 128 MiB memcpy (taskset -c 0) vs Debian's `mbw -t0`            (context)
  4. all-reads peak bandwidth vs `sysbench memory --memory-oper=read --memory-block-size=1G`
     on all CPUs                                                                 (context)

The references walk the sizes ours does (our plan sizes the chain and the per-thread regions
to the last-level cache: on a VM that reports a 480 MiB L3, 1,920 MiB and 960 MiB, where the
references' fixed 512 MiB and 128 MiB sat in that cache).

Usage: benchmarks/memory.py [--rounds 5]
Needs gcc, mbw and sysbench (Debian: apt-get install mbw sysbench) and a release build."""

import argparse
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import tempfile

from host import cpu_model

REPO = pathlib.Path(__file__).resolve().parents[1]


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def ours(binary, tests, prefix=()):
    out = run([*prefix, binary, "memory", "--memory-tests", tests, "--memory-repeats", "3"])
    return json.loads(out)["memory"]


def build_refs(tmp):
    """The chase reference and the read reference for each vector width this CPU runs."""
    chase = pathlib.Path(tmp) / "chase_ref"
    run(["gcc", "-O2", "-o", str(chase), str(REPO / "benchmarks/ref/chase_ref.c")])
    flags = pathlib.Path("/proc/cpuinfo").read_text().split()
    if platform.machine() == "aarch64":
        # NEON always; SVE where the CPU has it (`Features: ... sve`).
        widths = ["-march=armv8-a"] + (["-march=armv8-a+sve"] if "sve" in flags else [])
    else:
        widths = ["-mavx2"] + (["-mavx512f"] if "avx512f" in flags else [])
    reads = []
    for width in widths:
        read = pathlib.Path(tmp) / f"read_ref{width.replace('=', '-')}"
        run(["gcc", "-O2", width, "-pthread", "-o", str(read), str(REPO / "benchmarks/ref/read_ref.c")])
        reads.append(read)
    return chase, reads


def mbw():
    out = run(["mbw", "-q", "-n", "3", "-t", "0", "128"])
    return float(re.search(r"AVG\s+Method: MEMCPY.*Copy:\s+([\d.]+) MiB/s", out).group(1))


def sysbench_read():
    out = run(
        [
            "sysbench",
            "memory",
            "--memory-block-size=1G",
            "--memory-total-size=1000G",
            "--memory-oper=read",
            f"--threads={os.cpu_count()}",
            "--time=3",
            "run",
        ]
    )
    return float(re.search(r"\(([\d.]+) MiB/sec\)", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--binary", default=str(REPO / "target/release/health_check"))
    args = ap.parse_args()
    for tool in ["gcc", "mbw", "sysbench"]:
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is missing: apt-get install {tool if tool != 'gcc' else 'build-essential'}")
    res = {
        k: [] for k in ["idle ours", "idle C", "read ours", "read C", "memcpy ours", "mbw", "reads ours", "sysbench"]
    }
    chosen = []

    def read_ours():
        memory = ours(args.binary, "peak")
        chosen.append((memory["simd_kernel"], memory.get("simd_kernel_trial_mb_s", {})))
        return memory["peak_read_simd_mb_s"]

    sizes = ours(args.binary, "idle,peak")
    chain_mib, thread_mib = str(sizes["region_mib"]), str(sizes["thread_region_mib"])
    with tempfile.TemporaryDirectory() as tmp:
        chase, reads = build_refs(tmp)
        for i in range(args.rounds):
            jobs = [
                ("idle ours", lambda: ours(args.binary, "idle")["idle_latency"]["FullRandom"]["Node-0"]["Node-0"]),
                ("idle C", lambda: float(run([str(chase), chain_mib]))),
                ("read ours", read_ours),
                ("read C", lambda: max(float(run([str(r), thread_mib])) for r in reads)),
                ("memcpy ours", lambda: ours(args.binary, "memcpy", ("taskset", "-c", "0"))["memcpy_large_mb_s"]),
                ("mbw", mbw),
                ("reads ours", lambda: ours(args.binary, "peak")["peak_bandwidth_mb_s"]["all reads"]),
                ("sysbench", sysbench_read),
            ]
            if i % 2:
                jobs.reverse()  # alternate the order so drift hits both sides alike
            for name, job in jobs:
                res[name].append(job())
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; {args.rounds} rounds, interleaved")
    print(f"  chain {chain_mib} MiB, {thread_mib} MiB per thread (ours and the references)")
    for kernel, trial in chosen:
        print(f"  ours chose {kernel}; trial MiB/s: {trial}")
    for k, v in res.items():
        print(f"  {k:12s} median {med[k]:10.1f}   runs {' '.join(f'{x:.1f}' for x in v)}")
    print(f"idle latency ours / C chase (same chain):     {med['idle ours'] / med['idle C']:.3f}  goal 0.95..1.05")
    print(f"vector reads ours / faster C read kernel:     {med['read ours'] / med['read C']:.3f}  goal >= 1.0")
    print(f"1-thread 128 MiB memcpy ours / mbw:           {med['memcpy ours'] / med['mbw']:.3f}")
    print(f"all-reads peak ours / sysbench memory read:   {med['reads ours'] / med['sysbench']:.3f}")


if __name__ == "__main__":
    main()
