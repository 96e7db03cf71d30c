"""The documented differences: why health_check may decide a case otherwise than NHC 1.4.3 did.

Each rule names one deliberate difference (docs/nhc.md, "Where health_check differs from NHC")
and recognises its cases from the evidence the facts hold: health_check's refusal, bash's
complaint on NHC's stderr, the odd bytes the case names. `classify` gives the first rule that
explains a case's disagreement, or None: a disagreement no rule explains is a fault to fix.
"""

import re

import report

# The rules, in the order they are tried: name -> what it means, for people.
RULES = {
    "shell": (
        "health_check refuses a line that is shell beyond one check (command substitution, a pipe, "
        "`&&` or `;`, a subshell, an unclosed quote, an expansion it does not read, a line that "
        "is no check): a configuration error naming the line, where NHC's bash runs it"
    ),
    "abandoned": (
        "bash abandoned the line on an arithmetic error (`1.5g`, `08`, `$((1/0))`): NHC with -a "
        "ignores such a line, NHC without -a fails it as 'Check ... returned 1', and so does "
        "health_check"
    ),
    "hang": (
        "NHC blocks reading a FIFO or /dev/zero until its watchdog ends the run; health_check "
        "reads a FIFO without blocking and judges what it read, and never opens a device as root "
        "(opening some acts: a watchdog's arms it): that check is skipped, saying so"
    ),
    "silent_rm": (
        "the resource manager did not answer: health_check skips the check (a node is never "
        "judged on a controller's silence); NHC counts every user's process unauthorized"
    ),
    "timeout": (
        "a command past its -t: health_check kills its process group and says TIMEOUT; NHC's "
        "watchdog sends SIGALRM first, so a command that dies of it reads '142 returned by'"
    ),
    "bytes": (
        "the case names a process, user or mount point whose bytes NHC sees only as `ps` and "
        "`df` print them (`?`) or as its `read` mangles them (`sp040ace`, a name split at its "
        "blank): health_check reads the real bytes, and takes NHC's spelling too"
    ),
}

_RETURNED = re.compile(r"^Check .* returned 1 \(")

# What the scene's odd objects look like in a case's text (latin-1 style), however quoted.
_ODD = re.compile(r"[\x80-\xff]|m/sp|m/t[\t?\\]|m/t\\\\t|back\\|hcd\?|hcd sleep|hcd\\ sleep|\?user|\?sleep|\\x[ef][9f]")
_ENUMERATING = {"check_ps_unauth_users", "check_ps_userproc_lineage"}


def _without_abandoned(ours):
    messages = [m for m in ours.get("messages", []) if not _RETURNED.match(m)]
    if ours["verdict"] != "fail" or len(messages) == len(ours["messages"]):
        return None
    return {"verdict": "fail", "messages": messages} if messages else {"verdict": "pass"}


def _agrees(row, ours):
    if report.machine_dependent(row):
        return True
    return report.verdict_agrees(row["nhc"], ours) and (not row["portable"] or report.messages_agree(row["nhc"], ours))


def classify(row, ours):
    """The rule that explains why `ours` differs from NHC's outcome in `row`, or None."""
    if ours is None:
        return None
    if ours.get("outcome") == "config_error":
        return "shell"
    stripped = _without_abandoned(ours)
    explained = stripped is not None and (_agrees(row, stripped) or classify(row, stripped) not in (None, "abandoned"))
    if explained and "nhc_stderr" in row:
        return "abandoned"
    if "nhc_synthesized" in row:
        return "hang"
    if "squeue:" in row.get("nhc_stderr", "") and "setting.NHC_RM" in row["cats"]:
        return "silent_rm"
    said = " ".join(row["nhc"].get("messages", []))
    if "142 returned by" in said and any("TIMEOUT after" in m for m in ours.get("messages", [])):
        return "timeout"
    if _ODD.search(row["text"]) or _ENUMERATING & set(row["checks"]):
        return "bytes"
    return None


def mark(rows):
    """Sets each row's `expect`: NHC's outcome where health_check agrees or no rule explains the
    difference (replay then fails on it), health_check's own with the rule as `why` where one
    does. Returns the count of rows by rule (None: unexplained)."""
    counts = {}
    for row in rows:
        ours = row["ours"]
        row.pop("why", None)
        row["expect"] = row["nhc"]
        if ours is None or _agrees(row, ours):
            continue
        rule = classify(row, ours)
        counts[rule] = counts.get(rule, 0) + 1
        if rule is not None:
            row["expect"] = ours
            row["why"] = rule
    return counts
