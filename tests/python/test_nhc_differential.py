"""health_check beside NHC 1.4.3 itself: the 10,000 recorded cases of tests/nhc_differential/
replayed (NHC's outcome for each was recorded by running NHC's own bash; only health_check runs
here). A case health_check decides otherwise fails the test, unless the facts mark it as one of
the documented differences (docs/nhc.md). Needs root (the scene mounts file systems with odd
names, sets the host name, starts processes as two users) and unshare and setpriv; about 10 s."""

import os
import subprocess
import sys

from conftest import REPO, require


def test_recorded_nhc_cases_replay_without_a_mismatch(binary):
    require(os.geteuid() == 0, "needs root: the scene mounts, sets the host name and runs processes as other users")
    require("unshare", "needs unshare (util-linux)")
    require("setpriv", "needs setpriv (util-linux)")
    script = REPO / "tests" / "nhc_differential" / "differential.py"
    done = subprocess.run(
        [sys.executable, str(script), "replay", "--binary", binary],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, tail
    assert "10000 cases, 0 mismatches" in done.stdout, tail
