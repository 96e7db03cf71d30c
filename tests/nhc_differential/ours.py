"""Run health_check on every case at once and map its answer to NHC's three verdicts.

`health_check nhc CONF --cases` reads CONF as cases separated by lines `#@case <id>`, evaluates
each as its own nhc.conf against the machine read once, and prints one JSON document:
{"host", "cases": [{"id", "lines": [{"line", "text", "outcome": ran|config_error|stopped,
"error", "checks": [{"name", "status", "message"}]}]}]}.

A case is `aborted` when a line is config_error or stopped, `fail` when a check is warn or fail
(NHC runs with MARK_OFFLINE=0, where health_check warns), with those messages in order, and
`pass` otherwise. Messages are compared as bytes: health_check's UTF-8 text is encoded back and
shown byte by byte (latin-1), as NHC's raw bytes are.
"""

import json
import os
import subprocess

import nhc_run
import scene

CASES_FILE = scene.WORK + b"/ours/cases.conf"


def available(binary):
    """Whether `binary` has `nhc --cases` (a hidden option: tried on an empty file)."""
    try:
        done = subprocess.run([binary, "nhc", "--cases", "/dev/null"], capture_output=True, timeout=30, check=False)
    except OSError:
        return False
    return b"unexpected argument" not in done.stderr


def cases_file(cases):
    """The one CONF holding every case, each after its `#@case <id>` line."""
    parts = [b"# NHC differential cases: one nhc.conf after each #@case line\n"]
    for case in cases:
        text = case.text if case.text.endswith(b"\n") else case.text + b"\n"
        parts += [b"#@case " + case.id.encode() + b"\n", text]
    return b"".join(parts)


def run_cases(binary, cases):
    """health_check's outcome for every case: {case id: outcome}."""
    os.makedirs(os.path.dirname(CASES_FILE), exist_ok=True)
    with open(CASES_FILE, "wb") as f:
        f.write(cases_file(cases))
    done = subprocess.run(
        # NHC's settings from its command line, given to health_check the same way.
        [binary, "nhc", os.fsdecode(CASES_FILE), "--cases", *nhc_run.command_settings()],
        env=nhc_run.environment("/bin/bash"),
        # In a directory of its own, as NHC runs in its case's: a relative path names nothing.
        cwd=os.path.dirname(CASES_FILE),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=600,
        check=False,
    )
    try:
        document = json.loads(done.stdout)
    except ValueError as e:
        tail = done.stderr.decode("utf-8", "replace")[-2000:]
        raise SystemExit(f"health_check nhc --cases gave no JSON (exit {done.returncode}): {e}\n{tail}") from e
    found = {case["id"]: outcome(case) for case in document.get("cases", [])}
    missing = {c.id for c in cases} - set(found)
    for case_id in missing:
        found[case_id] = {"verdict": "missing", "error": "health_check gave no result for this case"}
    return found


def _text(value):
    return (value or "").encode("utf-8", "surrogateescape").decode("latin-1")


def outcome(case):
    """One case of health_check's document as a verdict (and its detail, for people)."""
    messages = []
    for line in case.get("lines", []):
        if line.get("outcome") in ("config_error", "stopped"):
            return {
                "verdict": "aborted",
                "line": line.get("line"),
                "outcome": line["outcome"],
                "error": _text(line.get("error")),
            }
        for check in line.get("checks", []):
            if check.get("status") in ("warn", "fail"):
                messages.append(_text(check.get("message")))
    return {"verdict": "fail", "messages": messages} if messages else {"verdict": "pass"}
