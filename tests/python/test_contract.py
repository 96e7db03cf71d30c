"""The contract harness: our YAML read the way benchpress reads it, the resulting argv run through
the installed run.sh from a DCPerf-like root, the output fed to HealthCheckParser, and the result
checked against the JSON Schema and benchpress's envelope rules."""

import json
import os
import pathlib
import signal
import socket
import subprocess
import time

import jsonschema
import pytest
from benchpress_emulation import MissingInput, envelope, load_job, load_parser, role_argv
from conftest import REPO, install_env, make_dcperf_root

SCHEMA = json.loads((REPO / "benchpress/health_check.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

# Short runs: DCPerf's YAML fixes argv, so the tests choose the profile through the environment.
FAST = "--profile quick --sleep-time 0.2 --skip memory"

# (-i value, argv after run.sh, hosts health_check must record) - docs/benchpress.md.
ARGV_TABLE = [
    ({"clients": "127.0.0.1"}, ["-r", "server", "-c", "127.0.0.1"], ["127.0.0.1"]),
    ({"clients": "a,b"}, ["-r", "server", "-c", "a,b"], ["a", "b"]),
    ({"clients": ""}, ["-r", "server", "-c"], []),
    ({"clients": "  "}, ["-r", "server", "-c"], []),
    ({"clients": "a, b"}, ["-r", "server", "-c", "a,", "b"], ["a", "b"]),
    ({"clients": "a b"}, ["-r", "server", "-c", "a", "b"], ["a", "b"]),
    ({"clients": "tab\there"}, ["-r", "server", "-c", "tab", "here"], ["tab", "here"]),
    ({"clients": 5}, ["-r", "server", "-c", "5"], ["5"]),
    ({"clients": ["a", "b"]}, ["-r", "server", "-c", "['a',", "'b']"], ["['a'", "'b']"]),
    ({"clients": "{x}"}, ["-r", "server", "-c", "{x}"], ["{x}"]),
    ({"clients": "x;rm -rf /"}, ["-r", "server", "-c", "x;rm", "-rf", "/"], ["x;rm", "-rf", "/"]),
    ({"clients": "$HOME"}, ["-r", "server", "-c", "$HOME"], ["$HOME"]),
]


@pytest.fixture(scope="module")
def job(dcperf_root):
    return load_job(dcperf_root / "benchpress/config/jobs.yml")


def run_job(root, argv, extra_opts=FAST, timeout=120):
    env = dict(os.environ, HEALTH_CHECK_OPTS=extra_opts)
    path = root / "benchmarks/health_check/run.sh"  # benchmarks.yml `path`, relative to the root
    proc = subprocess.run([str(path), *argv], cwd=root, env=env, capture_output=True, timeout=timeout, check=False)
    # benchpress decodes strictly as UTF-8 and splits with str.splitlines().
    stdout = proc.stdout.decode("utf-8").splitlines()
    stderr = proc.stderr.decode("utf-8").splitlines()
    return proc.returncode, stdout, stderr


def assert_envelope_rules(env):
    text = json.dumps(env, allow_nan=False, sort_keys=True)  # NaN would make invalid JSON
    assert json.loads(text) == env
    assert isinstance(env["timestamp"], int) and isinstance(env["run_id"], str)
    assert all(isinstance(v, str) for v in env["machines"][0].values())


@pytest.mark.parametrize("role_input,expected_argv,hosts", ARGV_TABLE)
def test_server_role_through_benchpress(dcperf_root, job, role_input, expected_argv, hosts):
    benchmark_args, argv = role_argv(job, "server", role_input)
    assert argv == expected_argv
    code, stdout, stderr = run_job(dcperf_root, argv, FAST + " --skip network")  # the hosts are not real
    assert code == 0, "\n".join(stderr)
    assert len(stdout) == 1, "stdout holds one JSON line and nothing else"
    metrics = load_parser(dcperf_root).parse(stdout, stderr, code)
    errors = sorted(VALIDATOR.iter_errors(metrics), key=str)
    assert not errors, [e.message for e in errors]
    assert metrics["health_check"]["clients"] == hosts
    assert metrics["health_check"]["role"] == "server"
    assert metrics["sleepbench"]["threads"] >= 1
    env = envelope(job, benchmark_args, metrics)
    assert_envelope_rules(env)
    assert env["benchmark_args"] == ["-r server", "-c " + str(role_input["clients"])]


def test_empty_client_list_skips_the_network_with_a_reason(dcperf_root, job):
    _, argv = role_argv(job, "server", {"clients": ""})
    code, stdout, stderr = run_job(dcperf_root, argv)
    assert code == 0, "\n".join(stderr)
    metrics = load_parser(dcperf_root).parse(stdout, stderr, code)
    assert not list(VALIDATOR.iter_errors(metrics))
    assert metrics["health_check"]["sections"]["network"].startswith("skipped: no clients")
    names = [c["name"] for c in metrics["checks"]]
    assert "sleepbench.total_cpu" in names and "sleepbench.calls_per_thread" in names


def test_server_role_needs_the_clients_variable(job):
    with pytest.raises(MissingInput):
        role_argv(job, "server", {})


def test_client_role_argv(job):
    assert role_argv(job, "client", {"clients": "ignored"}) == (["-r client"], ["-r", "client"])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_client_role_ends_by_itself_and_parses(dcperf_root, job):
    _, argv = role_argv(job, "client", {})
    started = time.monotonic()
    code, stdout, stderr = run_job(dcperf_root, argv, f"--idle-timeout 1 --port {free_port()}", timeout=30)
    assert time.monotonic() - started < 10
    assert code == 0, "\n".join(stderr)
    result = load_parser(dcperf_root).parse(stdout, stderr, code)
    assert not list(VALIDATOR.iter_errors(result))
    assert result["health_check"]["role"] == "client"
    assert result["responder"]["ended_by"].startswith("idle timeout")
    json.dumps(result, allow_nan=False)


def test_client_role_daemon_never_holds_benchpress_stdout(dcperf_root, job, tmp_path):
    """benchpress waits until every process holding the pipes exits; --daemon must not hold them."""
    _, argv = role_argv(job, "client", {})
    pid_file = tmp_path / "responder.pid"
    started = time.monotonic()
    code, stdout, stderr = run_job(
        dcperf_root, argv, f"--daemon --idle-timeout 30 --port {free_port()} --pid-file {pid_file}", timeout=20
    )
    assert time.monotonic() - started < 5
    assert code == 0, "\n".join(stderr)
    result = load_parser(dcperf_root).parse(stdout, stderr, code)
    assert not list(VALIDATOR.iter_errors(result))
    pid = result["responder"]["daemon_pid"]
    assert int(pid_file.read_text()) == pid
    os.kill(pid, signal.SIGTERM)


def test_server_role_with_a_lone_loopback_client(dcperf_root, job):
    """The README's main job on one machine: an in-process responder answers for localhost."""
    benchmark_args, argv = role_argv(job, "server", {"clients": "localhost"})
    code, stdout, stderr = run_job(dcperf_root, argv, f"--profile quick --skip sleep,memory --port {free_port()}")
    assert code == 0, "\n".join(stderr)
    metrics = load_parser(dcperf_root).parse(stdout, stderr, code)
    assert not list(VALIDATOR.iter_errors(metrics))
    assert [p["hostname"] for p in metrics["ping"]] == ["localhost"]
    bw = metrics["iperf3 bandwidth"][0]
    assert bw["hostname"] == "localhost" and bw["bandwidth"] > 0
    assert bw["peer"].endswith("(embedded)")
    assert_envelope_rules(envelope(job, benchmark_args, metrics))


def test_overlay_keeps_dcperfs_originals_once_and_is_idempotent(tmp_path):
    root = make_dcperf_root(tmp_path)
    script = REPO / "scripts/install-into-benchpress.sh"
    for _ in range(2):
        subprocess.run([str(script), str(root)], check=True, capture_output=True)
    pkg = root / "packages/health_check"
    for name in ["install_health_check.sh", "cleanup_health_check.sh", "run.sh"]:
        assert "DCPerf's original" in (pkg / (name + ".dcperf-orig")).read_text()
        assert (pkg / name).read_text() == (REPO / "scripts" / name).read_text()
        assert os.access(pkg / name, os.X_OK)
    # cleanup_health_check.sh's helper goes beside it (ours: never kept as an "original").
    assert (pkg / "stop-responder.sh").read_text() == (REPO / "scripts/stop-responder.sh").read_text()
    assert os.access(pkg / "stop-responder.sh", os.X_OK)
    assert not (pkg / "stop-responder.sh.dcperf-orig").exists()
    parser = root / "benchpress/plugins/parsers/health_check.py"
    assert parser.read_text() == (REPO / "benchpress/plugins/parsers/health_check.py").read_text()
    assert "DCPerf's original" in pathlib.Path(str(parser) + ".dcperf-orig").read_text()
    assert (pkg / "health_check.src").read_text().strip() == str(REPO)
    # DCPerf's YAML is left as it was.
    assert (root / "benchpress/config/jobs.yml").read_text() == (REPO / "jobs/health_check.yml").read_text()


def test_overlay_refuses_a_folder_that_is_not_dcperf(tmp_path):
    proc = subprocess.run(
        [str(REPO / "scripts/install-into-benchpress.sh"), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode != 0
    assert "is not a DCPerf checkout" in proc.stderr
    assert not any(tmp_path.iterdir()), "nothing is written into a refused folder"


def install(root, env):
    """The install script as benchpress runs it: from the DCPerf root, with `env`."""
    return subprocess.run(
        ["bash", "./packages/health_check/install_health_check.sh"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_install_without_cargo_says_what_to_do(tmp_path):
    root = make_dcperf_root(tmp_path)
    subprocess.run([str(REPO / "scripts/install-into-benchpress.sh"), str(root)], check=True, capture_output=True)
    env = dict(os.environ, OUT=str(root / "benchmarks/health_check"), PATH="/usr/bin:/bin")
    env.pop("HEALTH_CHECK_BINARY", None)
    proc = install(root, env)
    assert proc.returncode != 0
    assert "cargo not found" in proc.stderr
    assert "HEALTH_CHECK_BINARY" in proc.stderr, "the way to install without cargo is named"


FAKE_CARGO = """#!/bin/sh
# Records how it was called and leaves a 'release build' where cargo would.
printf '%s\n' "$@" > "$CARGO_CALLS"
mkdir -p "$CARGO_TARGET_DIR/release"
printf '#!/bin/sh\necho health_check 9.9.9-built\n' > "$CARGO_TARGET_DIR/release/health_check"
chmod +x "$CARGO_TARGET_DIR/release/health_check"
"""


def test_install_builds_the_checkout_with_cargo(tmp_path):
    """Without HEALTH_CHECK_BINARY the install builds the recorded checkout in release mode, locked,
    and installs what cargo built (a cargo of the test's own: the real build is the suite's)."""
    root = tmp_path / "dcperf"
    root.mkdir()
    make_dcperf_root(root)
    subprocess.run([str(REPO / "scripts/install-into-benchpress.sh"), str(root)], check=True, capture_output=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cargo").write_text(FAKE_CARGO)
    (bin_dir / "cargo").chmod(0o755)
    calls = tmp_path / "calls"
    env = dict(
        os.environ,
        OUT=str(root / "benchmarks/health_check"),
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        CARGO_CALLS=str(calls),
        CARGO_TARGET_DIR=str(tmp_path / "target"),
    )
    env.pop("HEALTH_CHECK_BINARY", None)
    proc = install(root, env)
    assert proc.returncode == 0, proc.stderr
    assert calls.read_text().split() == ["build", "--release", "--locked", "--manifest-path", f"{REPO}/Cargo.toml"]
    installed = root / "benchmarks/health_check/health_check"
    version = subprocess.run([installed, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout == "health_check 9.9.9-built\n"


def test_install_refuses_a_binary_that_does_not_run(tmp_path):
    root = make_dcperf_root(tmp_path)
    subprocess.run([str(REPO / "scripts/install-into-benchpress.sh"), str(root)], check=True, capture_output=True)
    for binary in [tmp_path / "missing", pathlib.Path("/bin/false")]:
        proc = install(root, install_env(root, binary))
        assert proc.returncode != 0
        assert f"HEALTH_CHECK_BINARY='{binary}'" in proc.stderr, proc.stderr
        assert not (root / "benchmarks/health_check/health_check").exists(), "nothing is installed"


def test_install_is_idempotent_and_cleanup_removes_only_its_own(dcperf_root, binary):
    out = dcperf_root / "benchmarks/health_check"
    env = install_env(dcperf_root, binary)
    subprocess.run(
        ["bash", "./packages/health_check/install_health_check.sh"],
        cwd=dcperf_root,
        env=env,
        check=True,
        capture_output=True,
    )
    assert os.access(out / "run.sh", os.X_OK) and os.access(out / "health_check", os.X_OK)
    version = subprocess.run([str(out / "run.sh"), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("health_check ")
    # benchpress runs cleanup from the root without OUT.
    clean_env = {k: v for k, v in os.environ.items() if k != "OUT"}
    cleanup = ["bash", "./packages/health_check/cleanup_health_check.sh"]
    subprocess.run(cleanup, cwd=dcperf_root, env=clean_env, check=True, capture_output=True)
    assert not out.exists()
    subprocess.run(cleanup, cwd=dcperf_root, env=clean_env, check=True, capture_output=True)
    # A folder our installer did not create is left alone.
    out.mkdir(parents=True)
    (out / "mm-mem").mkdir()
    subprocess.run(cleanup, cwd=dcperf_root, env=clean_env, check=True, capture_output=True)
    assert (out / "mm-mem").exists()
    # Reinstall for any later test in the session.
    (out / "mm-mem").rmdir()
    subprocess.run(
        ["bash", "./packages/health_check/install_health_check.sh"],
        cwd=dcperf_root,
        env=env,
        check=True,
        capture_output=True,
    )


def runtime_env(tmp_path, **extra):
    """The environment of a responder and its cleanup: a runtime directory of the test's own
    (HEALTH_CHECK_RUNTIME_DIR, where --daemon puts its default pid file) and TMPDIR, where older
    binaries put it (cleanup looks in both)."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return dict(os.environ, HEALTH_CHECK_RUNTIME_DIR=str(runtime), TMPDIR=str(tmp_path), **extra)


def pid_files(tmp_path):
    return sorted(tmp_path.glob("run/responder-*.pid")) + sorted(tmp_path.glob("health_check-responder-*.pid"))


def test_cleanup_stops_a_daemonized_responder(dcperf_root, job, tmp_path):
    """`clean health_check` must not leave the client role running behind benchpress's back."""
    out = dcperf_root / "benchmarks/health_check"
    env = runtime_env(tmp_path, OUT=str(out))
    subprocess.run(
        ["bash", "./packages/health_check/install_health_check.sh"],
        cwd=dcperf_root,
        env=env,
        check=True,
        capture_output=True,
    )
    _, argv = role_argv(job, "client", {})
    proc = subprocess.run(
        [str(out / "run.sh"), *argv, "--daemon", "--idle-timeout", "60", "--port", str(free_port())],
        cwd=dcperf_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    pid = json.loads(proc.stdout)["responder"]["daemon_pid"]
    os.kill(pid, 0)  # running
    assert len(pid_files(tmp_path)) == 1, "the default pid file is in the runtime directory (or TMPDIR)"
    clean_env = {k: v for k, v in env.items() if k != "OUT"}
    cleaned = subprocess.run(
        ["bash", "./packages/health_check/cleanup_health_check.sh"],
        cwd=dcperf_root,
        env=clean_env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert f"cleanup_health_check: stopped the responder (pid {pid})" in cleaned.stderr, cleaned.stderr
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("cleanup left the responder running")
    assert not out.exists()
    assert pid_files(tmp_path) == [], "the responder removed its pid file"
    # Reinstall for any later test in the session.
    subprocess.run(
        ["bash", "./packages/health_check/install_health_check.sh"],
        cwd=dcperf_root,
        env=env,
        check=True,
        capture_output=True,
    )


def test_cleanup_kills_a_responder_that_ignores_sigterm_and_says_so(dcperf_root, tmp_path):
    """A responder deaf to SIGTERM gets SIGKILL after 5 s, and the message says which it took."""
    out = dcperf_root / "benchmarks/health_check"
    env = runtime_env(tmp_path, OUT=str(out))
    install = ["bash", "./packages/health_check/install_health_check.sh"]
    subprocess.run(install, cwd=dcperf_root, env=env, check=True, capture_output=True)
    # Stand-in for a stuck responder: `sleep` installed under our binary's name, started with
    # SIGTERM ignored (an ignored signal survives exec).
    real = out / "health_check.real"
    os.replace(out / "health_check", real)
    subprocess.run(["cp", "/bin/sleep", str(out / "health_check")], check=True)
    deaf = subprocess.Popen(
        ["bash", "-c", f"trap '' TERM; exec {out / 'health_check'} 300"],
        start_new_session=True,
    )
    try:
        time.sleep(0.2)
        (tmp_path / "run" / f"responder-{free_port()}.pid").write_text(f"{deaf.pid}\n")
        clean_env = {k: v for k, v in env.items() if k != "OUT"}
        started = time.monotonic()
        proc = subprocess.run(
            ["bash", "./packages/health_check/cleanup_health_check.sh"],
            cwd=dcperf_root,
            env=clean_env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert deaf.wait(timeout=5) == -signal.SIGKILL
        assert time.monotonic() - started >= 5
        assert "ignored SIGTERM for 5 s; killed it with SIGKILL" in proc.stderr, proc.stderr
        assert "stopped the responder" not in proc.stderr
        assert pid_files(tmp_path) == [], "the pid file of the killed responder is removed"
        assert not out.exists()
    finally:
        if deaf.poll() is None:
            deaf.kill()
        subprocess.run(install, cwd=dcperf_root, env=env, check=True, capture_output=True)


def test_cleanup_also_looks_where_older_binaries_put_the_pid_file(dcperf_root, tmp_path):
    """For one release the old default place ($TMPDIR/health_check-responder-PORT.pid) is still
    searched; a pid file of a process that is not our installed binary is left alone, and so is
    the process."""
    out = dcperf_root / "benchmarks/health_check"
    env = runtime_env(tmp_path, OUT=str(out))
    install = ["bash", "./packages/health_check/install_health_check.sh"]
    subprocess.run(install, cwd=dcperf_root, env=env, check=True, capture_output=True)
    real = out / "health_check.real"
    os.replace(out / "health_check", real)
    subprocess.run(["cp", "/bin/sleep", str(out / "health_check")], check=True)
    ours = subprocess.Popen([str(out / "health_check"), "300"], start_new_session=True)
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        time.sleep(0.2)
        old_place = tmp_path / f"health_check-responder-{free_port()}.pid"
        old_place.write_text(f"{ours.pid}\n")
        foreign = tmp_path / "run" / f"responder-{free_port()}.pid"
        foreign.write_text(f"{other.pid}\n")
        clean_env = {k: v for k, v in env.items() if k != "OUT"}
        proc = subprocess.run(
            ["bash", "./packages/health_check/cleanup_health_check.sh"],
            cwd=dcperf_root,
            env=clean_env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert ours.wait(timeout=5) == -signal.SIGTERM
        assert f"cleanup_health_check: stopped the responder (pid {ours.pid})" in proc.stderr, proc.stderr
        assert not old_place.exists()
        assert other.poll() is None and foreign.exists(), "not our binary: neither signalled nor removed"
        assert str(other.pid) not in proc.stderr, proc.stderr
        assert not out.exists()
    finally:
        for p in (ours, other):
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(install, cwd=dcperf_root, env=env, check=True, capture_output=True)


STOP = REPO / "scripts/stop-responder.sh"


def stop_responder(*args):
    proc = subprocess.run(["sh", str(STOP), *map(str, args)], capture_output=True, text=True, timeout=30, check=False)
    assert len(proc.stdout.splitlines()) + len(proc.stderr.splitlines()) == 1, proc
    return proc


def start_responder(binary, pid_file):
    """A real responder (comm health_check) detached with --daemon; its pid."""
    argv = [binary, *f"-r client --daemon --port {free_port()} --idle-timeout 60".split(), "--pid-file", str(pid_file)]
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    ).stdout
    return json.loads(out)["responder"]["daemon_pid"]


def gone(pid, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_stop_responder_stops_only_the_responder_started_with_that_pid_file(binary, tmp_path):
    pid_file = tmp_path / "responder.pid"
    pid = start_responder(binary, pid_file)
    try:
        # Another pid file naming the same process: the process was not started with it.
        other = tmp_path / "other.pid"
        other.write_text(f"{pid}\n")
        proc = stop_responder(other)
        assert proc.returncode == 0 and "left alone" in proc.stdout, proc
        assert not gone(pid, timeout=0.2) and other.exists()
        # The exe given is not its executable.
        proc = stop_responder(pid_file, "/usr/bin/true")
        assert proc.returncode == 0 and "left alone" in proc.stdout, proc
        assert not gone(pid, timeout=0.2) and pid_file.exists()
        proc = stop_responder(pid_file)
        assert proc.returncode == 0, proc
        assert proc.stdout == f"stop-responder: stopped the responder (pid {pid})\n"
        assert gone(pid) and not pid_file.exists()
    finally:
        if not gone(pid, timeout=0):
            os.kill(pid, signal.SIGKILL)


def test_stop_responder_by_executable_and_what_it_leaves_alone(binary, tmp_path):
    pid_file = tmp_path / "responder.pid"
    pid = start_responder(binary, pid_file)
    try:
        proc = stop_responder(pid_file, os.path.realpath(binary))
        assert proc.returncode == 0 and proc.stdout == f"stop-responder: stopped the responder (pid {pid})\n", proc
        assert gone(pid) and not pid_file.exists()
    finally:
        if not gone(pid, timeout=0):
            os.kill(pid, signal.SIGKILL)
    # Nothing to stop: no file, no pid in it (left in place), a process that has ended (stale file
    # removed), a live process of another program (left alone, and so is its file).
    proc = stop_responder(tmp_path / "absent.pid")
    assert proc.returncode == 0 and "nothing to stop" in proc.stdout
    for text in ["", "0\n", "-1\n", "12ab\n"]:
        pid_file.write_text(text)
        proc = stop_responder(pid_file)
        assert proc.returncode == 0 and "holds no pid" in proc.stdout and pid_file.exists(), proc
    ended = subprocess.Popen(["true"])
    ended.wait()
    pid_file.write_text(f"{ended.pid}\n")
    proc = stop_responder(pid_file)
    assert proc.returncode == 0 and "not running: removed the stale pid file" in proc.stdout, proc
    assert not pid_file.exists()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        pid_file.write_text(f"{sleeper.pid}\n")
        proc = stop_responder(pid_file)
        assert proc.returncode == 0 and "left alone" in proc.stdout, proc
        assert sleeper.poll() is None and pid_file.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    link = tmp_path / "link.pid"
    link.symlink_to(pid_file)
    proc = stop_responder(link)
    assert proc.returncode == 0 and "not a regular file" in proc.stdout and pid_file.exists(), proc
    proc = subprocess.run(["sh", str(STOP)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "usage" in proc.stderr


def json_type(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return {dict: "object", list: "array", str: "string", type(None): "null"}[type(v)]


def key_paths(v, path=()):
    """Every leaf of a JSON value as (path, type); arrays by their first element."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield from key_paths(x, path + (k,))
    elif isinstance(v, list) and v:
        yield from key_paths(v[0], path + (0,))
    else:
        yield path, json_type(v)


def lookup(v, path):
    for step in path:
        if isinstance(step, int):
            if not isinstance(v, list) or not v:
                return KeyError
            v = v[0]
        elif isinstance(v, dict) and step in v:
            v = v[step]
        else:
            return KeyError
    return v


# Upstream paths ours cannot hold, with the reason: none. (The fixture is an x86_64 run; the
# aarch64 names are checked in src/report/memory.rs, `dcperf_names_on_x86_and_aarch64`.)
NOT_APPLICABLE: dict[tuple, str] = {}


def test_every_upstream_metric_path_is_in_our_metrics(dcperf_root, job):
    """Dashboards built on real DCPerf runs read ours: every key path of a real upstream run's
    metrics (tests/fixtures/upstream-health-check-metrics.json, same machine) is in our
    benchpress metrics with the same JSON type."""
    upstream = json.loads((REPO / "tests/fixtures/upstream-health-check-metrics.json").read_text())["metrics"]
    _, argv = role_argv(job, "server", {"clients": "127.0.0.1"})
    # The key paths, not the figures: the chains stay at the 32 MiB asked for (grown to 4x this
    # VM's 480 MiB cache, a host that backs fresh memory slowly took over 180 s).
    opts = (
        "--profile quick --sleep-time 0.5 --memory-tests idle,peak,memcpy,loaded --memory-size 32 "
        f"--threshold memory.working_set_factor=0 --port {free_port()}"
    )
    code, stdout, stderr = run_job(dcperf_root, argv, opts, timeout=180)
    assert code == 0, "\n".join(stderr)
    ours = load_parser(dcperf_root).parse(stdout, stderr, code)
    missing = []
    for path, kind in key_paths(upstream):
        if path in NOT_APPLICABLE:
            continue
        found = lookup(ours, path)
        if found is KeyError:
            missing.append(f"{path}: absent")
        elif json_type(found) != kind:
            missing.append(f"{path}: {json_type(found)}, upstream {kind}")
    assert not missing, missing
    # The names DCPerf's parser writes carry the same values as ours.
    assert ours["iperf3_bandwidth"][0]["bandwidth"] == ours["iperf3 bandwidth"][0]["bandwidth"]
    mem = ours["memory"]
    assert mem["delay_bandwidth_latency"] == mem["delay_latency_bandwidth"]
