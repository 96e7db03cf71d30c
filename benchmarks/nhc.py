#!/usr/bin/env python3
"""health_check's NHC checks beside LBNL NHC itself, on the same nhc.conf (issue 30): per round, NHC
(`nhc -c CONF -a`, bash, a subshell per check) and `health_check --nhc-conf CONF` with no measured
section, interleaved; prints each one's median wall time, the ratio, and whether both failed the
same checks with the same messages (the conformance, automated where NHC is at hand).

Usage: benchmarks/nhc.py --nhc DIR [--rounds 10]
DIR is an NHC 1.4.3 checkout (`git clone https://github.com/mej/nhc; git -C nhc checkout 1.4.3`):
this script neither fetches nor ships NHC. Needs bash and a release build
(cargo build --release --locked). Runs as any user; as root NHC sees every process."""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
BINARY = REPO / "target/release/health_check"

# Lines that mean the same on any Linux machine, two of them failing; NHC_RM=none so neither tool
# asks a resource manager.
CONF = """\
* || export NHC_RM=none
* || export MARK_OFFLINE=0
* || check_fs_mount_rw -f /
* || check_fs_free / 1%
* || check_fs_ifree / 1k
* || check_hw_physmem 1k 64tb
* || check_hw_mem_free 1mb
* || check_hw_eth lo
* || check_file_test -r -s /etc/passwd /etc/group
* || check_file_stat -m 0666 -u 0 -g 0 /dev/null
* || check_file_contents /etc/passwd "/^root:/"
* || check_ps_blacklist no_such_process_zz
* || check_ps_loadavg 100000
* || check_cmd_status -t 5 true
* || check_hw_cpuinfo 64 4096 8192
* || check_ps_daemon no_such_daemon_zz
"""


def timed(argv, **kw):
    started = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    return time.monotonic() - started, r


def nhc_failures(out):
    marker = "Health check failed:  "
    return sorted(line.split(marker, 1)[1] for line in out.splitlines() if marker in line)


def our_failures(doc_path):
    doc = json.loads(pathlib.Path(doc_path).read_text())
    return sorted(
        c["message"] for c in doc["checks"] if c["name"].startswith("node.") and c["status"] in ("warn", "fail")
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nhc", required=True, type=pathlib.Path, help="an NHC 1.4.3 checkout")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    nhc = args.nhc.resolve()
    if not (nhc / "nhc").is_file() or not (nhc / "scripts").is_dir():
        sys.exit(f"{nhc}: not an NHC checkout (no nhc script and scripts/ directory)")
    with tempfile.TemporaryDirectory() as tmp:
        conf = pathlib.Path(tmp) / "nhc.conf"
        conf.write_text(CONF)
        doc = pathlib.Path(tmp) / "doc.json"
        theirs_argv = [
            "bash",
            str(nhc / "nhc"),
            "-D",
            str(nhc),
            "-c",
            str(conf),
            "-a",
            "-l",
            "-",
            "-t",
            "30",
            f"INCDIR={nhc}/scripts",
            "MARK_OFFLINE=0",
            "NHC_RM=none",
        ]
        ours_argv = [
            str(BINARY),
            "-r",
            "server",
            "--skip",
            "system,network,sleep,memory",
            "--nhc-conf",
            str(conf),
            "-o",
            str(doc),
        ]
        theirs_t, ours_t = [], []
        agree = True
        for _ in range(args.rounds):
            t, r = timed(theirs_argv)
            theirs_t.append(t)
            theirs = nhc_failures(r.stdout + r.stderr)
            t, r = timed(ours_argv)
            ours_t.append(t)
            if r.returncode not in (0, 3):
                sys.exit(f"health_check failed ({r.returncode}): {r.stderr[-2000:]}")
            ours = our_failures(doc)
            if theirs != ours:
                agree = False
                print(f"verdicts differ:\n  NHC:          {theirs}\n  health_check: {ours}")
        a, b = statistics.median(theirs_t), statistics.median(ours_t)
        print(f"checks: {CONF.count('check_')} lines, failing as NHC: {len(theirs)}")
        print(f"NHC 1.4.3       median {a * 1000:8.1f} ms over {args.rounds} rounds")
        print(f"health_check    median {b * 1000:8.1f} ms")
        print(f"ratio NHC / health_check: {a / b:.1f}x; same failures, same messages: {'yes' if agree else 'NO'}")
        sys.exit(0 if agree else 1)


if __name__ == "__main__":
    main()
