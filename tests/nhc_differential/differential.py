#!/usr/bin/env python3
"""Differential runs of health_check's NHC reading against NHC 1.4.3 itself.

    differential.py record --nhc /tmp/nhc [--count 10000] [--seed 1]
    differential.py refresh              (health_check again on the recorded cases; NHC's kept)
    differential.py replay
    differential.py check-nhc --nhc /tmp/nhc [--every 10]   (NHC again on every 10th case: stable?)
    differential.py scene -- CMD...     (the scene built, CMD run inside it, for a look around)

Each command re-executes itself as root inside private mount and UTS namespaces
(`unshare --mount --uts --propagation private`), builds the scene there and undoes it on the
way out. README.md says what is compared and how.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import differences
import facts
import generator
import nhc_run
import ours
import report
import scene

REPO = HERE.parents[1]
FACTS = HERE / "facts.jsonl.gz"
SUMMARY = HERE / "summary.txt"
DISAGREEMENTS = HERE / "disagreements.txt"
INSIDE = "HC_NHC_DIFF_INSIDE"


def _reexec_in_namespace():
    if os.environ.get(INSIDE) == "1":
        return
    if os.geteuid() != 0:
        raise SystemExit("differential.py needs root (it mounts and sets the host name)")
    env = dict(os.environ, **{INSIDE: "1"})
    argv = ["unshare", "--mount", "--uts", "--propagation", "private", sys.executable, *sys.argv]
    raise SystemExit(subprocess.run(argv, env=env, check=False).returncode)


def _binary(path):
    binary = pathlib.Path(path) if path else REPO / "target" / "release" / "health_check"
    return binary if ours.available(binary) else None


def cmd_record(args):
    cases = generator.generate(args.count, args.seed)
    with scene.Scene():
        started = time.monotonic()
        nhc = nhc_run.run_all(pathlib.Path(args.nhc), cases, args.jobs, progress=_progress)
        nhc_seconds = time.monotonic() - started
        binary = _binary(args.binary)  # looked for now: it may have been built while NHC ran
        mine = _ours_or_none(binary, cases)
        binary = binary if mine is not None else None
    rows = facts.build(cases, nhc, mine, args.seed)
    differences.mark(rows)
    facts.write(FACTS, rows)
    _write_reports(rows, nhc_seconds, binary, args.jobs)
    if binary is None:
        print("health_check has no `nhc --cases` yet: NHC's verdicts recorded, ours not", file=sys.stderr)
    return 0


def _ours_or_none(binary, cases):
    """health_check's outcomes, or None (said why) so that NHC's recorded work is never lost."""
    if binary is None:
        return None
    try:
        return ours.run_cases(binary, cases)
    except (SystemExit, OSError, subprocess.SubprocessError) as e:
        print(f"health_check failed, recording NHC's outcomes only: {e}", file=sys.stderr)
        return None


def cmd_refresh(args):
    """Run health_check again on the recorded cases; NHC's outcomes are kept, and each case's
    `expect` is set again: NHC's, or ours where a documented difference explains it."""
    rows = facts.read(FACTS)
    binary = _binary(args.binary)
    if binary is None:
        raise SystemExit("refresh: target/release/health_check has no `nhc --cases` (build it first)")
    with scene.Scene():
        mine = ours.run_cases(binary, [facts.case_of(row) for row in rows])
    for row in rows:
        row["ours"] = mine.get(row["id"])
    differences.mark(rows)
    facts.write(FACTS, rows)
    _write_reports(rows, None, binary, args.jobs)
    return 0


def cmd_check_nhc(args):
    """Run every Nth recorded case through NHC again: NHC must decide as recorded (its messages
    too, where portable), or the scene or the generator let something vary."""
    rows = facts.read(FACTS)[:: args.every]
    with scene.Scene():
        again = nhc_run.run_all(pathlib.Path(args.nhc), [facts.case_of(r) for r in rows], args.jobs)
    unstable = report.replay_mismatches(rows, {k: v["nhc"] for k, v in again.items()}, key="nhc")
    for line in unstable:
        print(line)
    print(f"check-nhc: {len(rows)} cases run again, {len(unstable)} decided otherwise")
    return 1 if unstable else 0


def _write_reports(rows, nhc_seconds, binary, jobs):
    text = report.summary(rows, nhc_seconds, binary, jobs)
    SUMMARY.write_text(text)
    DISAGREEMENTS.write_text(report.disagreements(rows, limit=200))
    print(text)


def cmd_replay(args):
    rows = facts.read(FACTS)
    binary = _binary(args.binary)
    if binary is None:
        raise SystemExit("replay: target/release/health_check has no `nhc --cases` (build it first)")
    cases = [facts.case_of(row) for row in rows]
    with scene.Scene():
        started = time.monotonic()
        mine = ours.run_cases(binary, cases)
        seconds = time.monotonic() - started
        # A command cut at its timeout on a host busy with other work (CI runs this beside other
        # tests) is run once more, alone: a real hang times out again.
        timed_out = {case_id for case_id, outcome in mine.items() if "TIMEOUT after" in str(outcome)}
        if timed_out:
            again = ours.run_cases(binary, [c for c in cases if c.id in timed_out])
            mine.update(again)
            print(f"replay: {len(timed_out)} case(s) cut at their timeout, run again alone")
    mismatches = report.replay_mismatches(rows, mine)
    for line in mismatches[:50]:
        print(line)
    print(f"replay: {len(rows)} cases, {len(mismatches)} mismatches, health_check took {seconds:.1f} s")
    return 1 if mismatches else 0


def cmd_scene(args):
    with scene.Scene():
        return subprocess.run(args.command or ["bash"], check=False).returncode


def _progress(done, total):
    if done % 500 == 0 or done == total:
        print(f"  NHC: {done}/{total} cases", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command_name", required=True)
    rec = sub.add_parser("record", help="run the cases through NHC and health_check, write the facts")
    rec.add_argument("--nhc", required=True, help="NHC 1.4.3's source tree (the driver `nhc` and scripts/)")
    rec.add_argument("--count", type=int, default=10000)
    rec.add_argument("--seed", type=int, default=1)
    rec.add_argument("--jobs", type=int, default=2, help="NHC processes at once")
    rec.add_argument("--binary", help="health_check (default target/release/health_check)")
    ref = sub.add_parser("refresh", help="run health_check again on the recorded cases (NHC's kept)")
    ref.add_argument("--binary", help="health_check (default target/release/health_check)")
    ref.add_argument("--jobs", type=int, default=2, help=argparse.SUPPRESS)
    rep = sub.add_parser("replay", help="run only health_check against the recorded expectations")
    rep.add_argument("--binary", help="health_check (default target/release/health_check)")
    chk = sub.add_parser("check-nhc", help="run every Nth recorded case through NHC again")
    chk.add_argument("--nhc", required=True)
    chk.add_argument("--every", type=int, default=10)
    chk.add_argument("--jobs", type=int, default=2)
    sce = sub.add_parser("scene", help="build the scene and run a command inside it")
    sce.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.command_name == "scene" and args.command[:1] == ["--"]:
        args.command = args.command[1:]
    _reexec_in_namespace()
    handlers = {
        "record": cmd_record,
        "refresh": cmd_refresh,
        "replay": cmd_replay,
        "check-nhc": cmd_check_nhc,
        "scene": cmd_scene,
    }
    handler = handlers[args.command_name]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
