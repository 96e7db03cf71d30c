"""ansible/install.yml (the role health_check_node) on a real host: a network namespace with its own
sshd (tests/python/fleet_harness.py), the files installed below a scratch root (the hosts share
this machine's file system: a test must not write its /usr). It installs the binary, the systemd
units, Slurm's wrapper and defaults and the Prometheus rules, each with its mode; a second run and
a check-mode run change nothing; a defaults file the site edited is left as it is.

Needs what test_fleet_ansible.py needs; about 20 s."""

import hashlib
import json
import pathlib
import re
import subprocess

import fleet_harness as fh
import pytest
from conftest import REPO, require

INSTALL = REPO / "ansible" / "install.yml"


@pytest.fixture(scope="module")
def host(binary, tmp_path_factory):
    missing = fh.missing_prerequisite(binary)
    require(not missing, missing or "")
    with fh.Fleet(1, tmp_path_factory.mktemp("install"), binary=binary) as f:
        yield f


def install(fleet, *extra):
    root = fleet.work / "root"
    ev = {
        "health_check_node_binary": fleet.binary,
        "health_check_node_root": f"{root}/{{{{ inventory_hostname }}}}",
        "health_check_node_slurm": True,
        "health_check_node_prometheus_rules_dir": "/etc/prometheus/rules",
    }
    argv = [fh.ansible_playbook(), str(INSTALL), "-i", str(fleet.inventory()), "-e", json.dumps(ev), *extra]
    r = subprocess.run(argv, capture_output=True, text=True, env=fleet.env(), timeout=300, cwd=fleet.work, check=False)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-2000:]}"
    recap = re.search(r"changed=(\d+)", r.stdout.split("PLAY RECAP", 1)[-1])
    return int(recap.group(1)), root / fleet.hosts[0].name


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_node_side_installs_once_and_a_second_run_changes_nothing(host):
    changed, root = install(host)
    assert changed > 0
    want = {
        "usr/local/bin/health_check": 0o755,
        "usr/local/sbin/health_check-slurm": 0o755,
        "etc/default/health_check": 0o644,
        "etc/systemd/system/health_check.service": 0o644,
        "etc/systemd/system/health_check.timer": 0o644,
        "etc/prometheus/rules/health_check.rules.yml": 0o644,
        "var/lib/health_check": 0o700,
    }
    for rel, mode in want.items():
        path = root / rel
        assert path.exists(), rel
        assert path.stat().st_mode & 0o777 == mode, f"{rel}: {oct(path.stat().st_mode)}"
    assert digest(root / "usr/local/bin/health_check") == digest(pathlib.Path(host.binary))
    assert (root / "etc/systemd/system/health_check.service").read_text() == (
        REPO / "deploy/systemd/health_check.service"
    ).read_text()
    # Idempotent, and the defaults file is the site's once there; check mode says so too.
    defaults = root / "etc/default/health_check"
    defaults.write_text("HEALTH_CHECK_SLURM_OPTS=--drain-after 3\n")
    assert install(host)[0] == 0
    assert defaults.read_text() == "HEALTH_CHECK_SLURM_OPTS=--drain-after 3\n"
    assert install(host, "--check")[0] == 0
