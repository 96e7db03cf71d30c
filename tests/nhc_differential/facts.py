"""facts.jsonl.gz: one JSON object per case, what NHC decided and what is expected of us.

Bytes (the case's text, messages, stderr) are stored latin-1 style: every byte is the code point
of the same value (U+0000-U+00FF), so `text.encode("latin-1")` gives the exact bytes back and a
plain ASCII line reads as itself. Fields:

    id, text, checks, cats, portable (the messages hold on any machine), shell, hang_line,
    nhc (NHC's outcome at record time), nhc_seconds, nhc_stderr, nhc_log, nhc_synthesized,
    ours (health_check's outcome at record time, or null), expect (starts equal to nhc; the
    documented differences are marked there, with a "why").
"""

import gzip
import io
import json

from generator import Case


def build(cases, nhc, ours, seed):
    rows = []
    for case in cases:
        row = {
            "id": case.id,
            "seed": seed,
            "text": case.text.decode("latin-1"),
            "checks": case.checks,
            "cats": case.cats,
            "portable": case.portable,
            "shell": case.shell,
            "hang_line": case.hang_line,
        }
        row.update(nhc[case.id])
        row["ours"] = ours.get(case.id) if ours is not None else None
        row["expect"] = row["nhc"]
        rows.append(row)
    return rows


def write(path, rows):
    """Written with a zero gzip time stamp, so the same facts give the same file."""
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as packed,
        io.TextIOWrapper(packed, encoding="ascii") as f,
    ):
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")


def read(path):
    with gzip.open(path, "rt", encoding="ascii") as f:
        return [json.loads(line) for line in f if line.strip()]


def case_of(row):
    """The generator's Case for a recorded row (what health_check needs to run it again)."""
    return Case(
        id=row["id"],
        text=row["text"].encode("latin-1"),
        checks=row["checks"],
        cats=row["cats"],
        portable=row["portable"],
        shell=row["shell"],
        hang_line=row["hang_line"],
    )
