"""Shared fixtures: the repo, the built binary, a DCPerf-like root with our overlay installed."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

# Set (to anything but "" or "0") by CI: a test whose prerequisite is missing fails instead of skipping.
REQUIRE_ALL = os.environ.get("HEALTH_CHECK_TEST_REQUIRE_ALL", "") not in ("", "0")


def require(tool_or_condition, reason):
    """What a test needs from the machine: a program name (looked up on PATH; its path is returned)
    or a condition (anything truthy). When it is missing the test is skipped with `reason` as its
    one line, or fails with it when HEALTH_CHECK_TEST_REQUIRE_ALL is set.

        promtool = require("promtool", "needs promtool (apt-get install prometheus)")
        require(os.geteuid() == 0, "needs root")
    """
    found = shutil.which(tool_or_condition) if isinstance(tool_or_condition, str) else tool_or_condition
    if found:
        return found
    if REQUIRE_ALL:
        pytest.fail(f"{reason} (HEALTH_CHECK_TEST_REQUIRE_ALL is set)", pytrace=False)
    pytest.skip(reason)


# The stand-in for benchpress.lib.parser.Parser (DCPerf's is an ABC with an abstract parse()).
PARSER_BASE = """
from abc import ABCMeta, abstractmethod


class Parser(object, metaclass=ABCMeta):
    @abstractmethod
    def parse(self, stdout, stderr, returncode):
        pass
"""


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def binary():
    """The release binary (scripts/test.sh builds it; HEALTH_CHECK_BIN overrides)."""
    path = os.environ.get("HEALTH_CHECK_BIN") or str(REPO / "target" / "release" / "health_check")
    if not os.access(path, os.X_OK):
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=REPO, check=True)
    return path


def make_dcperf_root(root):
    """A folder shaped like a DCPerf checkout, with DCPerf's health_check files stood in."""
    (root / "benchpress_cli.py").write_text("# stand-in: benchpress is emulated by the tests\n")
    for pkg in ["benchpress", "benchpress/lib", "benchpress/plugins"]:
        (root / pkg).mkdir(parents=True, exist_ok=True)
        (root / pkg / "__init__.py").write_text("")
    (root / "benchpress/lib/parser.py").write_text(PARSER_BASE)
    parsers = root / "benchpress/plugins/parsers"
    parsers.mkdir(parents=True)
    (parsers / "__init__.py").write_text("from .health_check import HealthCheckParser  # noqa\n")
    (parsers / "health_check.py").write_text("# DCPerf's original parser\n")
    config = root / "benchpress/config"
    config.mkdir(parents=True)
    shutil.copy(REPO / "jobs/benchmarks.yml", config / "benchmarks.yml")
    shutil.copy(REPO / "jobs/health_check.yml", config / "jobs.yml")
    pkg = root / "packages/health_check"
    pkg.mkdir(parents=True)
    for name in ["install_health_check.sh", "cleanup_health_check.sh", "run.sh"]:
        (pkg / name).write_text(f"#!/bin/bash\n# DCPerf's original {name}\n")
    return root


@pytest.fixture(scope="session", autouse=True)
def install_the_binary_under_test(binary):
    """Every install in the tests installs the build under test (HEALTH_CHECK_BINARY) instead of
    compiling one: a release build inside the suite takes minutes and, beside the tests that
    measure, shows in their figures. test_install_builds_the_checkout_with_cargo takes it out."""
    previous = os.environ.get("HEALTH_CHECK_BINARY")
    os.environ["HEALTH_CHECK_BINARY"] = str(binary)
    yield
    if previous is None:
        os.environ.pop("HEALTH_CHECK_BINARY", None)
    else:
        os.environ["HEALTH_CHECK_BINARY"] = previous


def install_env(root, binary):
    """What benchpress gives the install script, plus the binary under test to install."""
    return dict(os.environ, OUT=str(root / "benchmarks/health_check"), HEALTH_CHECK_BINARY=str(binary))


@pytest.fixture(scope="session")
def dcperf_root(tmp_path_factory, binary):
    """A DCPerf-like root with the overlay applied and health_check installed as benchpress would
    (`bash -x <install_script>` from the root, with OUT set): the binary under test, through
    HEALTH_CHECK_BINARY (the build from source is test_install_builds_the_checkout_with_cargo's)."""
    root = make_dcperf_root(tmp_path_factory.mktemp("dcperf"))
    subprocess.run([str(REPO / "scripts/install-into-benchpress.sh"), str(root)], check=True)
    env = install_env(root, binary)
    subprocess.run(
        ["bash", "-x", "./packages/health_check/install_health_check.sh"],
        cwd=root,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return root
