# health_check (native) overlay: benchpress parser for the Rust health_check binary.
#
# The binary prints exactly one JSON document on stdout (the metrics object; see
# benchpress/health_check.schema.json in the health_check project), and all text for people on
# stderr. This parser finds that document and returns it unchanged. Standard library only and
# free of side effects at import time: benchpress imports every parser on every command.

import json

from benchpress.lib.parser import Parser


def dcperf_skeleton(reason):
    """DCPerf's empty result (what its own parser returns for output it cannot read) with our
    document's names for the same lists beside its own ("iperf3 bandwidth",
    delay_latency_bandwidth), an empty verdict list, and the reason no document was found."""
    return {
        "ping": [],
        "iperf3_bandwidth": [],
        "iperf3 bandwidth": [],
        "sleepbench": {},
        "memory": {
            "peak_bandwidth_mb_s": {},
            "idle_latency": {},
            "delay_bandwidth_latency": {},
            "delay_latency_bandwidth": {},
        },
        "checks": [],
        "error": reason,
    }


def _as_document(text):
    """The health_check document in `text`, or None. An envelope (--envelope) yields its metrics."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("health_check"), dict):
        return value
    metrics = value.get("metrics")
    if isinstance(metrics, dict) and isinstance(metrics.get("health_check"), dict):
        return metrics
    return None


def find_document(lines):
    """Searches stdout lines for the document: a one-line JSON object (the normal case, last one
    wins), else an indented document starting at a line that is just '{'."""
    for line in reversed(lines):
        stripped = line.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            doc = _as_document(stripped)
            if doc is not None:
                return doc
    for start, line in enumerate(lines):
        if line.rstrip() == "{":
            doc = _as_document("\n".join(lines[start:]))
            if doc is not None:
                return doc
    return None


def _last_words(lines):
    for line in reversed(lines or []):
        if line.strip():
            return line.strip()[:300]
    return None


class HealthCheckParser(Parser):
    """Returns health_check's JSON document as benchpress metrics. Never raises: output without
    a document (a crash, the wrong binary) gives DCPerf's empty skeleton with the reason."""

    def parse(self, stdout, stderr, returncode):
        try:
            doc = find_document(list(stdout or []))
        except Exception as e:  # noqa: BLE001 - a parser must not take benchpress down
            doc = None
            reason = f"could not read health_check output: {e!r}"
        else:
            reason = None
        if doc is not None:
            return doc
        if reason is None:
            lines = len(stdout or [])
            reason = f"no health_check JSON document on stdout ({lines} lines, exit status {returncode})"
            hint = _last_words(stderr)
            if hint:
                reason += "; last stderr line: " + hint
        return dcperf_skeleton(reason)
