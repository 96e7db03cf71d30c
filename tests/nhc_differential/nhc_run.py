"""Run NHC 1.4.3 on each case (one NHC process per case) and classify what it decided.

NHC runs as `bash nhc -D DIR -c CASE.conf -a -l - -t 30 INCDIR=... MARK_OFFLINE=0 NHC_RM=none
OFFLINE_NODE=: ONLINE_NODE=:` in its own session, with SHELL=':' (NHC's test mode: no mkdir of a
missing mount point, no kill, no restart) except for cases that need a real shell
(check_cmd_output runs its command through $SHELL; such cases hold no acting checks). When NHC's
main process has exited, whatever is left of its session (the watchdog and its `sleep`) is killed.

With -a, NHC logs each failure as `ERROR:  nhc:  Health check failed:  <message>`, and after the
last check `ERROR:  nhc:  <N> health checks failed.` and exits N; a clean run exits 0 silently.
A check that returns non-zero without calling die (a syntax error in the line, an unknown
command, an arithmetic error inside the check) is ignored under -a, with bash's complaint on
stderr. Bash itself stops the run only on a fatal expansion such as ${X:?}: exit 1, no summary.
"""

import os
import queue
import re
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import scene

FAILED = b"ERROR:  nhc:  Health check failed:  "
SUMMARY = re.compile(rb"^ERROR:  nhc:  (\d+) health checks failed\.$")
WATCHDOG = b"NHC watchdog timer "
TIMEOUT = 30
HARD_LIMIT = 90  # seconds before the harness gives up on one NHC run


def latin1(data):
    """Raw bytes as a JSON-safe string: each byte one code point U+0000-U+00FF."""
    return data.decode("latin-1")


def classify(rc, stdout, stderr):
    """NHC's outcome: pass, fail with its messages in order, or aborted."""
    messages, log, summary = [], [], None
    for line in stdout.split(b"\n"):
        if line.startswith(FAILED):
            messages.append(latin1(line[len(FAILED) :]))
        elif SUMMARY.match(line):
            summary = int(SUMMARY.match(line).group(1))
        elif line and not line.startswith(WATCHDOG):
            log.append(latin1(line))
    timed_out = rc == 142 and any(m.startswith("Script timed out") for m in messages)
    if summary is not None or timed_out or (rc == 0 and messages):
        outcome = {"verdict": "fail", "messages": messages}
    elif rc == 0:
        outcome = {"verdict": "pass"}
    else:
        outcome = {"verdict": "aborted", "rc": rc, "stderr": latin1(stderr[-2000:])}
        if messages:
            outcome["messages"] = messages
    return outcome, log


def command(nhc_dir, workdir, conf):
    return [
        "bash",
        str(nhc_dir / "nhc"),
        "-D",
        workdir,
        "-c",
        conf,
        "-a",
        "-l",
        "-",
        "-t",
        str(TIMEOUT),
        f"INCDIR={nhc_dir / 'scripts'}",
        *command_settings(),
    ]


# The settings NHC gets on its command line (NAME=VALUE); health_check nhc takes them alike.
COMMAND_SETTINGS = {"MARK_OFFLINE": "0", "NHC_RM": "none", "OFFLINE_NODE": ":", "ONLINE_NODE": ":"}


def command_settings():
    return [f"{k}={v}" for k, v in COMMAND_SETTINGS.items()]


def environment(shell):
    return {"PATH": "/sbin:/usr/sbin:/bin:/usr/bin", "HOME": "/root", "SHELL": shell}


def run_text(nhc_dir, workdir, text, shell):
    """Run NHC once on `text` (bytes) in `workdir`; returns (rc, stdout, stderr, seconds)."""
    conf = os.path.join(workdir, "case.conf")
    with open(conf, "wb") as f:
        f.write(text)
    out_path, err_path = os.path.join(workdir, "out"), os.path.join(workdir, "err")
    started = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            command(nhc_dir, workdir, conf),
            cwd=workdir,
            env=environment(shell),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            rc = proc.wait(HARD_LIMIT)
        except subprocess.TimeoutExpired:
            rc = -9
        kill_session(proc.pid)
        proc.wait()
    seconds = time.monotonic() - started
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        return rc, out.read(), err.read(), seconds


def kill_session(sid):
    """SIGKILL every process of session `sid` (NHC's watchdog and anything it started)."""
    for _ in range(20):
        members = [pid for pid in _pids() if _session(pid) == sid]
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _session(pid):
    """The session of a live process (None for a zombie, already dead, or one gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return None if fields[0] == b"Z" else int(fields[3])
    except (OSError, ValueError, IndexError):
        return None


def run_case(nhc_dir, workdir, case):
    """NHC's record for one case. A case whose last line would block NHC until its watchdog fires
    (check_file_contents on a FIFO or /dev/zero) is run without that line, and the timeout NHC
    would then report is added: `Script timed out while executing "<check>".`, exit 142."""
    lines = case.text.splitlines(keepends=True)
    text = b"".join(lines[: case.hang_line - 1]) if case.hang_line else case.text
    rc, out, err, seconds = run_text(nhc_dir, workdir, text, "/bin/bash" if case.shell else ":")
    outcome, log = classify(rc, out, err)
    record = {"nhc": outcome, "nhc_seconds": round(seconds, 3)}
    if case.hang_line and outcome["verdict"] != "aborted":
        check = lines[case.hang_line - 1].split(b"||", 1)[1].strip(b" \t\r\n")
        message = latin1(b'Script timed out while executing "' + check + b'".')
        record["nhc"] = {"verdict": "fail", "messages": [*outcome.get("messages", []), message]}
        record["nhc_synthesized"] = "watchdog timeout after the line before it, added without running it"
    if err:
        record["nhc_stderr"] = latin1(err[-2000:])
    if log:
        record["nhc_log"] = log[:20]
    return record


def run_all(nhc_dir, cases, jobs, progress=None):
    """NHC's record for every case, `jobs` NHC processes at a time; returns {case id: record}."""
    if not (nhc_dir / "nhc").is_file() or not (nhc_dir / "scripts" / "common.nhc").is_file():
        raise SystemExit(f"{nhc_dir} does not look like NHC's source tree (nhc, scripts/common.nhc)")
    slots = queue.Queue()
    for n in range(jobs):
        workdir = os.path.join(os.fsdecode(scene.WORK), f"nhc{n}")
        os.makedirs(workdir, exist_ok=True)
        slots.put(workdir)
    results = {}
    lock = threading.Lock()

    def one(case):
        workdir = slots.get()
        try:
            record = run_case(nhc_dir, workdir, case)
        finally:
            slots.put(workdir)
        with lock:
            results[case.id] = record
            if progress:
                progress(len(results), len(cases))

    with ThreadPoolExecutor(jobs) as pool:
        try:
            list(pool.map(one, cases))
        except BaseException:
            pool.shutdown(cancel_futures=True)  # an interrupt: the running finish, the rest never start
            raise
    return results
