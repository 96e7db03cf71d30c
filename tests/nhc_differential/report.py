"""What people read: the summary of a recording, its disagreements, and a replay's mismatches.

A case agrees on its verdict when NHC's and ours are the same (pass, fail or aborted), and on its
messages when, failing, both give the same messages in the same order, byte for byte, apart from
the tail that says how NHC acts (test mode's "(auto-fixed)", ours "NHC would ...").
"""

import re
import statistics
from collections import Counter, defaultdict


def shown(text):
    """A latin-1 style string as Python bytes are shown: ASCII as is, other bytes as \\xNN."""
    return repr(text.encode("latin-1"))[2:-1]


def verdict_agrees(expect, ours):
    return ours is not None and expect["verdict"] == ours["verdict"]


# NHC's test mode says what it did to act ("(auto-fixed)", "termination in progress"), health_check
# what NHC would do ("; NHC would ... (health_check does not act on the node)"): messages compare
# without that tail, on both sides (docs/nhc.md, "What health_check does not do").
_NHC_ACTION = re.compile(
    r"( \(auto-fixed\)|; (killed process ID \d+ \(test mode\)|(re)?start in progress|"
    r"cycle in progress|termination in progress|\"[^\"]*\" in progress\.?))$"
)
_OUR_ACTION = re.compile(r";? ?NHC would .* \(health_check does not act on the node\)$")


def without_action(message):
    return _OUR_ACTION.sub("", _NHC_ACTION.sub("", message))


# health_check shows a byte that is no UTF-8 as the text `\xNN`; a message of NHC's holding the
# byte, or the same four characters, is the same message.
_ESCAPED_BYTE = re.compile(r"\\x([0-9a-f]{2})")


def same_message(nhc, ours):
    nhc, ours = without_action(nhc), without_action(ours)
    return nhc == ours or nhc == _ESCAPED_BYTE.sub(lambda m: chr(int(m.group(1), 16)), ours)


def messages_agree(expect, ours):
    if not verdict_agrees(expect, ours):
        return False
    if expect["verdict"] != "fail":
        return True
    a, b = expect["messages"], ours["messages"]
    return len(a) == len(b) and all(same_message(x, y) for x, y in zip(a, b))


# The host's own files in the cases: their access and modification times are the machine's.
_HOST_FILES = {"/", "/dev/null", "/dev/zero", "/etc/passwd"}


def machine_dependent(row):
    """Whether the case's verdict is this machine's state of the moment rather than the scene's:
    a load limit of `$((HW_CORES*1000000+1))` before any hardware check gathered HW_CORES is 1
    (the generator of seed 1 wrote such cases; it no longer does), and `check_file_test -N` on a
    host file (whether / was modified since it was last read differs between machines)."""
    seen_hw = False
    for line in row["text"].splitlines():
        if "check_hw_" in line:
            seen_hw = True
        if "check_ps_loadavg" in line and "HW_CORES*1000000+1" in line and not seen_hw:
            return True
        if "check_file_test" in line and "-N" in line:
            words = {w.strip("$'\"\\") for w in line.split()}
            if words & _HOST_FILES:
                return True
    return False


def _kind(row):
    """How health_check's outcome differs from NHC's, or None."""
    expect, ours = row["nhc"], row["ours"]
    if not verdict_agrees(expect, ours):
        return f"verdict {expect['verdict']} -> ours {ours['verdict']}"
    if not messages_agree(expect, ours):
        return "messages differ" + ("" if row["portable"] else " (not portable)")
    return None


def summary(rows, nhc_seconds, binary, jobs):
    times = sorted(r["nhc_seconds"] for r in rows)
    verdicts = Counter(r["nhc"]["verdict"] for r in rows)
    noisy = sum(1 for r in rows if "nhc_stderr" in r)
    added = sum(1 for r in rows if "nhc_synthesized" in r)
    out = [
        f"NHC differential: {len(rows)} cases, seed {rows[0]['seed'] if rows else '-'}",
        (
            f"NHC: {nhc_seconds or sum(times):.0f} s {'wall' if nhc_seconds else 'in all'} with {jobs} at once; "
            f"per case mean {statistics.mean(times):.3f} s, "
            f"median {statistics.median(times):.3f} s, p95 {times[int(len(times) * 0.95)]:.3f} s, "
            f"max {times[-1]:.3f} s"
        ),
        "NHC verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())),
        f"NHC wrote to stderr (bash complained) in {noisy} cases; {added} watchdog timeouts added without running",
        f"portable messages: {sum(1 for r in rows if r['portable'])} cases",
    ]
    if binary is None or all(r["ours"] is None for r in rows):
        out += [
            "health_check: not available (no `nhc --cases` yet); only NHC's outcomes recorded",
            "",
            "NHC's verdicts by check (cases, pass, fail, aborted):",
            *_nhc_table(rows, lambda r: r["checks"] or ["(none)"]),
            "",
            "NHC's verdicts by category (cases, pass, fail, aborted):",
            *_nhc_table(rows, lambda r: r["cats"]),
        ]
        return "\n".join(out) + "\n"
    out.append(f"health_check: {binary}")
    kinds = Counter(_kind(r) for r in rows)
    agree_v = sum(1 for r in rows if verdict_agrees(r["nhc"], r["ours"]))
    agree_m = sum(1 for r in rows if messages_agree(r["nhc"], r["ours"]))
    out += [
        (
            f"verdicts agree {agree_v}, disagree {len(rows) - agree_v}; "
            f"messages agree {agree_m}, disagree {len(rows) - agree_m}"
        ),
        *_explained(rows),
        "",
        "Disagreements by kind:",
        *[f"  {n:6d}  {k}" for k, n in kinds.most_common() if k],
        "",
        "By check (cases, verdicts disagree, messages disagree):",
        *_table(rows, lambda r: r["checks"] or ["(none)"]),
        "",
        "By category (cases, verdicts disagree, messages disagree):",
        *_table(rows, lambda r: r["cats"]),
    ]
    return "\n".join(out) + "\n"


def _explained(rows):
    """How many disagreements each documented difference explains, and how many none does."""
    import differences  # it imports this module: imported here, when both are loaded

    found = Counter(
        r.get("why")
        for r in rows
        if r["ours"] is not None
        and _kind(r) not in (None, "messages differ (not portable)")
        and not machine_dependent(r)
    )
    out = ["", "Disagreements by documented difference (docs/nhc.md; none: a fault to fix):"]
    for rule in differences.RULES:
        out.append(f"  {found.get(rule, 0):6d}  {rule}")
    out.append(f"  {found.get(None, 0):6d}  none")
    return out


def _table(rows, keys_of):
    counts = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        for key in keys_of(row):
            c = counts[key]
            c[0] += 1
            c[1] += not verdict_agrees(row["nhc"], row["ours"])
            c[2] += not messages_agree(row["nhc"], row["ours"])
    return [f"  {k:40s} {c[0]:6d} {c[1]:6d} {c[2]:6d}" for k, c in sorted(counts.items())]


def _nhc_table(rows, keys_of):
    counts = defaultdict(Counter)
    for row in rows:
        for key in keys_of(row):
            counts[key][row["nhc"]["verdict"]] += 1
    return [
        f"  {k:40s} {sum(c.values()):6d} {c['pass']:6d} {c['fail']:6d} {c['aborted']:6d}"
        for k, c in sorted(counts.items())
    ]


def _outcome(outcome):
    if outcome is None:
        return "(none)"
    parts = [outcome["verdict"]]
    if "rc" in outcome:
        parts.append(f"rc {outcome['rc']}")
    if "outcome" in outcome:
        parts.append(f"{outcome['outcome']} at line {outcome.get('line')}: {shown(outcome.get('error', ''))}")
    messages = "".join(f"\n      message: {shown(m)}" for m in outcome.get("messages", []))
    return " ".join(parts) + messages


def disagreements(rows, limit):
    # The unexplained first: they are faults to fix.
    found = sorted((r for r in rows if r["ours"] is not None and _kind(r)), key=lambda r: "why" in r)
    out = [f"{len(found)} disagreements; the first {min(limit, len(found))}:", ""]
    for row in found[:limit]:
        why = f"  (documented: {row['why']})" if "why" in row else "  (NOT EXPLAINED)"
        out.append(f"{row['id']}  {_kind(row)}{why}  [{', '.join(row['checks'])}]  {' '.join(row['cats'])}")
        out += [f"    | {shown(line)}" for line in row["text"].splitlines()]
        out.append(f"    NHC:  {_outcome(row['nhc'])}")
        out.append(f"    ours: {_outcome(row['ours'])}")
        if "nhc_stderr" in row:
            out.append(f"    NHC stderr: {shown(row['nhc_stderr'][:300])}")
        out.append("")
    return "\n".join(out) + "\n"


def replay_mismatches(rows, mine, key="expect"):
    """Lines describing each case where `mine` differs from the row's `key` outcome (verdicts
    always, messages where the case's messages are portable)."""
    out = []
    for row in rows:
        expect, ours = row[key], mine.get(row["id"])
        if machine_dependent(row) and ours is not None:
            continue
        if verdict_agrees(expect, ours) and (not row["portable"] or messages_agree(expect, ours)):
            continue
        text = " / ".join(shown(line) for line in row["text"].splitlines())
        out.append(f"{row['id']}: expected {_outcome(expect)}\n    got {_outcome(ours)}\n    case: {text}")
    return out
