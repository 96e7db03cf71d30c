"""The files under deploy/ that make health_check a drop-in for Slurm, Kubernetes'
node-problem-detector (NPD), and systemd with node_exporter and Prometheus, checked by the tools
that consume them where those run here: systemd-analyze verify (no running systemd needed),
promtool check/test rules, kubernetes-validate, shellcheck; the NPD plugin line contract against
the real binary. Kubernetes itself and Docker are not available on the test machine: the DaemonSet
is validated against the API schemas and the Dockerfile is checked for what the image needs.

A missing tool skips its test with one line (fails when HEALTH_CHECK_TEST_REQUIRE_ALL is set)."""

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import time

import pytest
import yaml
from conftest import REPO, require

DEPLOY = REPO / "deploy"
SERVICE = DEPLOY / "systemd" / "health_check.service"
TIMER = DEPLOY / "systemd" / "health_check.timer"
RULES = DEPLOY / "prometheus" / "health_check.rules.yml"
RULES_TEST = DEPLOY / "prometheus" / "health_check.rules.test.yml"
DAEMONSET = DEPLOY / "kubernetes" / "daemonset.yaml"
NPD_CONFIG = DEPLOY / "kubernetes" / "health-check-monitor.json"
NPD_NODE_CHECKS = DEPLOY / "kubernetes" / "health-check-node-checks-monitor.json"
DOCKERFILE = DEPLOY / "kubernetes" / "Dockerfile"
WRAPPER = DEPLOY / "slurm" / "health_check-slurm"
DEFAULTS = DEPLOY / "slurm" / "health_check.default"

INSTALLED_BIN = "/usr/local/bin/health_check"
# The nanosleep benchmark alone, for a fraction of a second: its per-thread rate asked to be
# impossible fails the run; asked to be trivial (with the busy-CPU and IRQ limits lifted: a small VM
# shows 100 % busy CPU while the benchmark runs) passes it.
SLEEP_FAILS = [
    "--sleep-time",
    "0.3",
    "--threshold",
    "sleepbench.calls_per_thread=1e12",
    "--threshold",
    "sleepbench.total_cpu_pct=1000",
    "--threshold",
    "sleepbench.irq_pct=1000",
    # Other tests' load (and the hypervisor's steal) beside it must not make it inconclusive.
    "--threshold",
    "interference.other_cpu_pct=100",
    "--threshold",
    "interference.steal_pct=100",
]
SLEEP_PASSES = [
    "--sleep-time",
    "0.3",
    "--threshold",
    "sleepbench.calls_per_thread=1",
    "--threshold",
    "sleepbench.total_cpu_pct=1000",
    "--threshold",
    "sleepbench.irq_pct=1000",
    # Other tests' load (and the hypervisor's steal) beside it must not make it inconclusive.
    "--threshold",
    "interference.other_cpu_pct=100",
    "--threshold",
    "interference.steal_pct=100",
]
# NPD's plugin environment: its container's, nothing of ours.
PLUGIN_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def unit_entries(path):
    """A systemd unit file as (section, key, value) triples, continuation lines joined."""
    entries, section, pending = [], None, ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line.startswith(("#", ";")):
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        entries.append((section, key.strip(), value.strip()))
    return entries


def unit_value(path, section, key):
    values = [v for s, k, v in unit_entries(path) if s == section and k == key]
    assert values, f"{path.name}: no {key}= in [{section}]"
    return values[-1]


def systemd_seconds(text):
    """A systemd time span ("4min", "1min 30s", "120") in seconds."""
    units = {"": 1, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "hr": 3600, "ms": 0.001}
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text):
        total += float(number) * units[unit]
    return total


def go_seconds(text):
    """A Go duration ("300s", "1m30s") in seconds; NPD parses its config's durations as Go does."""
    assert re.fullmatch(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+", text), f"not a Go duration: {text!r}"
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


def exec_start(path=SERVICE):
    return shlex.split(unit_value(path, "Service", "ExecStart"))


def option(argv, name):
    assert name in argv, f"{name} missing from {argv}"
    return argv[argv.index(name) + 1]


def installable_units(tmp_path):
    """Copies of the units whose ExecStart names an executable that exists: systemd-analyze
    verify refuses a unit whose command is missing, and the binary is not installed here."""
    stub = tmp_path / "bin" / "health_check"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    units = tmp_path / "units"
    units.mkdir()
    (units / SERVICE.name).write_text(SERVICE.read_text().replace(INSTALLED_BIN, str(stub)))
    shutil.copy(TIMER, units / TIMER.name)
    return units / SERVICE.name, units / TIMER.name


# ---------------------------------------------------------------- systemd


def test_systemd_units_pass_systemd_analyze_verify(tmp_path):
    analyze = require("systemd-analyze", "needs systemd-analyze (apt-get install systemd)")
    service, timer = installable_units(tmp_path)
    r = subprocess.run(
        [analyze, "verify", "--man=no", str(service), str(timer)],
        capture_output=True,
        text=True,
        env=dict(os.environ, SYSTEMD_COLORS="0"),
        check=False,
    )
    # verify exits 0 even for unknown keys and unparsable values: it only prints them.
    assert r.returncode == 0, r.stderr
    assert (r.stdout + r.stderr).strip() == "", r.stdout + r.stderr


def test_systemd_service_stays_hardened(tmp_path):
    analyze = require("systemd-analyze", "needs systemd-analyze (apt-get install systemd)")
    service, _ = installable_units(tmp_path)
    r = subprocess.run(
        [analyze, "security", "--offline=yes", "--threshold=35", str(service)],
        capture_output=True,
        text=True,
        env=dict(os.environ, SYSTEMD_COLORS="0"),
        check=False,
    )
    exposure = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", r.stdout + r.stderr)
    assert r.returncode == 0 and exposure, r.stdout[-2000:] + r.stderr
    assert float(exposure.group(1)) <= 3.5


def test_systemd_service_runs_the_check_level_into_the_textfile_collector():
    argv = exec_start()
    assert argv[0] == INSTALLED_BIN
    assert option(argv, "--profile") == "check"
    assert option(argv, "--format") == "prometheus"
    output = option(argv, "--output")
    assert output.endswith(".prom") and output.startswith("/var/lib/")
    # The history's directory is the unit's own (StateDirectory=); the textfile directory is
    # shared with other producers: only made writable under ProtectSystem=strict, never taken
    # over (StateDirectory= chowns its tree at every start).
    state = unit_value(SERVICE, "Service", "StateDirectory").split()
    assert state == ["health_check"], state
    writable = unit_value(SERVICE, "Service", "ReadWritePaths").split()
    assert output.rpartition("/")[0] in writable, writable
    history = option(argv, "--history")
    assert history.startswith("/var/lib/") and history[len("/var/lib/") :].rpartition("/")[0] in state
    # The run stops itself before systemd's timeout, and memory is bounded.
    assert float(option(argv, "--deadline")) < systemd_seconds(unit_value(SERVICE, "Service", "TimeoutStartSec"))
    assert unit_value(SERVICE, "Service", "MemoryMax")
    assert unit_value(SERVICE, "Service", "Type") == "oneshot"
    assert unit_value(SERVICE, "Service", "ProtectSystem") == "strict"
    # Link speeds are read from /sys/class/net: the host's network namespace, not a private one.
    keys = {k for _, k, _ in unit_entries(SERVICE)}
    assert "PrivateNetwork" not in keys and "ProcSubset" not in keys
    assert "CAP_NET_RAW" in unit_value(SERVICE, "Service", "CapabilityBoundingSet").split()
    assert 30 <= systemd_seconds(unit_value(SERVICE, "Service", "TimeoutStartSec")) <= 300


def test_systemd_timer_runs_every_5_minutes_spread_out():
    assert unit_value(TIMER, "Timer", "OnCalendar") == "*:0/5"
    delay = systemd_seconds(unit_value(TIMER, "Timer", "RandomizedDelaySec"))
    assert 0 < delay < 300
    assert unit_value(TIMER, "Install", "WantedBy") == "timers.target"


# ---------------------------------------------------------------- Prometheus


def rules():
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def test_prometheus_rules_pass_promtool_check_and_their_unit_tests():
    promtool = require("promtool", "needs promtool (apt-get install prometheus)")
    r = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
    r = subprocess.run(
        [promtool, "test", "rules", RULES_TEST.name], cwd=RULES.parent, capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_prometheus_rules_cover_failing_stale_and_inconclusive():
    by_name = {r["alert"]: r for r in rules()}
    assert {"HealthCheckFailing", "HealthCheckNodeCheckFailing", "HealthCheckStale", "HealthCheckInconclusive"} <= set(
        by_name
    )
    # Every failing check alerts: measured ones after two runs, NHC's node checks at once.
    assert by_name["HealthCheckFailing"]["expr"] == 'health_check_check_status{check!~"node\\\\..+"} == 2'
    assert by_name["HealthCheckNodeCheckFailing"]["expr"] == 'health_check_check_status{check=~"node\\\\..+"} == 2'
    assert "for" not in by_name["HealthCheckNodeCheckFailing"]
    assert "health_check_check_status == 4" in by_name["HealthCheckInconclusive"]["expr"]
    stale = by_name["HealthCheckStale"]["expr"]
    assert "health_check_run_timestamp_seconds" in stale
    # "Older than about 3 intervals": the timer's interval, not a number of its own.
    terms = re.fullmatch(r"\s*(\d+) \* (\d+) \+ (\d+)\s*", stale.split(">", 1)[1])
    assert terms, stale
    runs, interval, margin = map(int, terms.groups())
    assert runs == 3 and interval == 300 and 0 < margin < interval
    for r in rules():
        assert r["labels"]["severity"] in ("info", "warning", "critical")
        assert r["annotations"]["summary"]


def test_prometheus_alert_fires_on_the_real_binarys_textfile(binary, tmp_path):
    """The rules read what the binary writes: the metric names and labels of a failing run (the
    nanosleep rate check) raise HealthCheckFailing for that check only, through promtool's rule
    evaluation."""
    promtool = require("promtool", "needs promtool (apt-get install prometheus)")
    prom = tmp_path / "health_check.prom"
    argv = [binary, "-r", "server", "--only", "sleep", *SLEEP_FAILS, "--format", "prometheus", "-o", str(prom)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    series = []
    for line in prom.read_text().splitlines():
        m = re.fullmatch(r"(health_check_(?:check_status|run_timestamp_seconds))(\{.*\})? (\S+)", line)
        if m:
            labels = (m.group(2) or "{}")[1:-1]
            labels = 'instance="node1"' + ("," + labels if labels else "")
            series.append({"series": f"{m.group(1)}{{{labels}}}", "values": f"{m.group(3)}x20"})
    failing = [s for s in series if 'status="fail"' in s["series"]]
    assert any('check="sleepbench.calls_per_thread"' in s["series"] for s in failing), prom.read_text()
    assert any(s["series"].startswith("health_check_run_timestamp_seconds") for s in series)
    firing = 'ALERTS{alertname="HealthCheckFailing",alertstate="firing",severity="warning",'
    expected = [{"labels": firing + s["series"][len("health_check_check_status{") :], "value": 1} for s in failing]
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'ALERTS{alertname="HealthCheckFailing",alertstate="firing"}',
                        "eval_time": "10m",
                        "exp_samples": expected,
                    }
                ],
            }
        ],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    r = subprocess.run(
        [promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------- Kubernetes and NPD


def npd_config():
    return json.loads(NPD_CONFIG.read_text())


def daemonset():
    docs = [d for d in yaml.safe_load_all(DAEMONSET.read_text()) if d]
    return docs, next(d for d in docs if d["kind"] == "DaemonSet")


def test_daemonset_validates_against_the_kubernetes_api_schemas():
    require(
        importlib.util.find_spec("kubernetes_validate"),
        "needs kubernetes-validate (pip install kubernetes-validate)",
    )
    import kubernetes_validate

    docs, _ = daemonset()
    assert {d["kind"] for d in docs} == {"ServiceAccount", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}
    for version in (kubernetes_validate.latest_version(), "1.27.0"):
        for doc in docs:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                pytest.fail(f"{doc['kind']} against Kubernetes {version}: {e.message} at {list(e.path)}")


def test_daemonset_runs_npd_with_our_monitor_on_the_hosts_views():
    docs, ds = daemonset()
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    # The host's PID namespace is not needed (/proc/stat is host-wide) and would let the pod's
    # root signal the node's processes; system calls are the runtime's default profile.
    assert "hostPID" not in pod and "hostIPC" not in pod
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    command = container["command"]
    assert command[0] == "/node-problem-detector"
    # Beside an NPD the node already runs on the host network: no port of its own to collide on.
    assert "--port=0" in command and "--prometheus-port=0" in command
    # The monitor config from a ConfigMap (the same text as the file), the history on the host.
    configmap = next(d for d in docs if d["kind"] == "ConfigMap")
    assert json.loads(configmap["data"][NPD_CONFIG.name]) == npd_config()
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert volumes[mounts["/config"]["name"]]["configMap"]["name"] == configmap["metadata"]["name"]
    history = volumes[mounts["/var/lib/health_check"]["name"]]["hostPath"]
    assert history == {"path": "/var/lib/health_check", "type": "DirectoryOrCreate"}
    for rule in npd_config()["rules"]:
        assert option(rule["args"], "--history").startswith("/var/lib/health_check/")
    monitor = next(a for a in command if a.startswith("--config.custom-plugin-monitor="))
    assert monitor.split("=", 1)[1] == f"/config/{NPD_CONFIG.name}"
    assert {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in container["env"]
    # A CPU quota would throttle the nanosleep benchmark into failing.
    assert "cpu" not in container["resources"].get("limits", {})
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security.get("privileged") is not True
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding")
    assert pod["serviceAccountName"] == sa["metadata"]["name"] == binding["subjects"][0]["name"]
    assert binding["roleRef"]["name"] == "system:node-problem-detector"


def test_interference_is_measured_from_a_pid_namespace_of_its_own(binary):
    """The pod runs without hostPID: the check, in a PID namespace of its own (as in the pod),
    still sees a CPU burner outside it in /proc/stat, and the nanosleep benchmark's figures are
    inconclusive, naming the load."""
    require(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare (util-linux)")
    burner = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.3)
        r = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", binary, "sleep", "--sleep-time", "1"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        burner.kill()
        burner.wait()
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    other = doc["health_check"]["interference"]["sleep"]["other_cpu_pct"]
    # One CPU of the machine's busy outside the namespace: a share of all CPU time well above 10 %.
    assert other is not None and other > 100 / (2 * os.cpu_count()), doc["health_check"]["interference"]
    busy = next(c for c in doc["checks"] if c["name"] == "sleepbench.total_cpu")
    assert busy["status"] in ("pass", "inconclusive"), busy
    assert busy["status"] == "pass" or "other processes used" in busy["message"], busy


@pytest.mark.parametrize("path", [NPD_CONFIG, NPD_NODE_CHECKS], ids=lambda p: p.name)
def test_npd_config_has_what_npd_validates_and_fits_the_check_level(path):
    """What NPD's custompluginmonitor refuses at start-up (unknown plugin, a rule timeout above the
    global one, a permanent rule without a default condition) and what the check level needs."""
    config = json.loads(path.read_text())
    assert config["plugin"] == "custom"
    assert config["source"]
    plugin = config["pluginConfig"]
    interval, timeout = go_seconds(plugin["invoke_interval"]), go_seconds(plugin["timeout"])
    assert plugin["max_output_length"] == 80
    # One measurement at a time: two sections measuring at once disturb each other.
    assert plugin["concurrency"] == 1
    conditions = {c["type"]: c for c in config["conditions"]}
    for c in config["conditions"]:
        assert re.fullmatch(r"[A-Z][A-Za-z]+", c["type"]) and re.fullmatch(r"[A-Z][A-Za-z]+", c["reason"])
        assert c["message"]
    total = 0.0
    for rule in config["rules"]:
        assert rule["type"] == "permanent"
        assert rule["condition"] in conditions
        assert (
            re.fullmatch(r"[A-Z][A-Za-z]+", rule["reason"])
            and rule["reason"] != conditions[rule["condition"]]["reason"]
        )
        assert rule["path"] == INSTALLED_BIN
        assert option(rule["args"], "--format") == "npd"
        assert option(rule["args"], "--profile") == "check"
        rule_timeout = go_seconds(rule.get("timeout", plugin["timeout"]))
        # A 10 s check level needs margin on a large machine; NPD kills the plugin at the timeout,
        # so the run stops itself before it (--deadline) and says which section overran.
        assert 20 <= rule_timeout <= timeout
        assert float(option(rule["args"], "--deadline")) < rule_timeout
        total += rule_timeout
    # The rules run one after another (concurrency 1): a whole batch fits in one interval.
    assert total < interval
    assert len({rule["condition"] for rule in config["rules"]}) == len(config["rules"]) == len(conditions)


def test_dockerfile_builds_the_binary_into_the_npd_image():
    text = DOCKERFILE.read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    args = dict(re.fullmatch(r"ARG (\w+)=(\S+)", line).groups() for line in lines if line.startswith("ARG "))
    froms = [line.split()[1:] for line in lines if line.startswith("FROM ")]
    assert len(froms) == 2, "multi-stage: a Rust builder, then NPD's image"
    builder, final = froms
    assert args[builder[0].strip("${}")].startswith("rust:1")
    assert builder[1:] == ["AS", "build"]
    assert args[final[0].strip("${}")].startswith("registry.k8s.io/node-problem-detector/node-problem-detector:v")
    assert "cargo build --release --locked" in text
    assert f"COPY --from=build /out/health_check {INSTALLED_BIN}" in lines
    config_copy = f"COPY deploy/kubernetes/{NPD_CONFIG.name} /config/{NPD_CONFIG.name}"
    assert config_copy in lines
    # What the build copies from the context is in the context.
    ignored = [p.strip() for p in (REPO / ".dockerignore").read_text().splitlines() if p.strip() and p[0] != "#"]
    assert "target" in ignored and ".git" in ignored
    for needed in ["Cargo.toml", "Cargo.lock", "src", f"deploy/kubernetes/{NPD_CONFIG.name}"]:
        assert (REPO / needed).exists() and needed.split("/")[0] not in ignored
    entrypoint = json.loads(next(line for line in lines if line.startswith("ENTRYPOINT ")).split(" ", 1)[1])
    _, ds = daemonset()
    assert entrypoint == ds["spec"]["template"]["spec"]["containers"][0]["command"]


def rule_args(rule, tmp_path):
    """A rule's args as NPD passes them, its history in `tmp_path`: a test never writes the
    machine's own /var/lib/health_check (and its runs never judge each other)."""
    args = list(rule["args"])
    if "--history" in args:
        args[args.index("--history") + 1] = str(tmp_path / "history.sqlite")
    return args


@pytest.mark.parametrize("rule", npd_config()["rules"], ids=lambda r: r["condition"])
def test_npd_plugin_prints_one_short_line_with_a_status_npd_understands(binary, rule, tmp_path):
    """Each rule exactly as NPD runs it: its args, NPD's environment, its timeout. NPD trims
    stdout and cuts it to max_output_length; exit 0 is OK, 1 NonOK, anything else Unknown."""
    r = subprocess.run(
        [binary, *rule_args(rule, tmp_path)],
        capture_output=True,
        text=True,
        env=PLUGIN_ENV,
        timeout=go_seconds(rule["timeout"]),
        check=False,
    )
    assert r.returncode in (0, 1, 2), r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1, r.stdout
    assert 0 < len(lines[0]) <= npd_config()["pluginConfig"]["max_output_length"], lines[0]
    if r.returncode == 0:
        assert lines[0].startswith("health_check: ok"), lines[0]


def test_npd_node_checks_rule_reads_an_nhc_conf_and_names_the_failing_check(binary, tmp_path):
    """The node checks' rule as NPD runs it, its nhc.conf swapped for one made here: a check that
    fails exits 1 and names it; all passing exits 0; no file exits 2 (Unknown)."""
    (rule,) = json.loads(NPD_NODE_CHECKS.read_text())["rules"]
    args = rule_args(rule, tmp_path)
    conf = tmp_path / "nhc.conf"
    args[args.index("--nhc-conf") + 1] = str(conf)
    timeout = go_seconds(rule["timeout"])

    def run():
        return subprocess.run(
            [binary, *args], capture_output=True, text=True, env=PLUGIN_ENV, timeout=timeout, check=False
        )

    conf.write_text("* || check_fs_mount_rw -f /\n* || check_ps_daemon no_such_daemon_zz\n")
    fail = run()
    assert fail.returncode == 1, fail.stdout + fail.stderr[-2000:]
    assert fail.stdout == "health_check: fail: node.check_ps_daemon:no_such_daemon_zz\n", fail.stdout
    conf.write_text("* || check_fs_mount_rw -f /\n")
    ok = run()
    assert ok.returncode == 0 and ok.stdout == "health_check: ok\n", ok.stdout + ok.stderr[-2000:]
    conf.unlink()
    missing = run()
    assert missing.returncode == 2 and "--nhc-conf" in missing.stderr, missing.stderr


def test_npd_plugin_names_the_failing_check_and_exits_1(binary, tmp_path):
    rule = next(r for r in npd_config()["rules"] if option(r["args"], "--only") == "sleep")
    fail = subprocess.run(
        [binary, *rule_args(rule, tmp_path), *SLEEP_FAILS],
        capture_output=True,
        text=True,
        env=PLUGIN_ENV,
        timeout=60,
        check=False,
    )
    assert fail.returncode == 1, fail.stdout + fail.stderr[-2000:]
    assert fail.stdout.endswith("\n") and fail.stdout.count("\n") == 1, fail.stdout
    assert len(fail.stdout.strip()) <= 80 and "sleepbench.calls_per_thread" in fail.stdout, fail.stdout
    # Its own history: the failing run is not the past this one is judged against.
    ok = subprocess.run(
        [binary, *rule_args(rule, tmp_path / "ok"), *SLEEP_PASSES],
        capture_output=True,
        text=True,
        env=PLUGIN_ENV,
        timeout=60,
        check=False,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr[-2000:]
    assert ok.stdout.startswith("health_check: ok") and ok.stdout.count("\n") == 1, ok.stdout


# ---------------------------------------------------------------- Slurm wrapper


def test_slurm_wrapper_and_defaults_pass_shellcheck():
    shellcheck = require("shellcheck", "needs shellcheck (apt-get install shellcheck)")
    r = subprocess.run([shellcheck, str(WRAPPER), str(DEFAULTS)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert WRAPPER.read_text().startswith("#!/bin/sh\n")
    assert os.access(WRAPPER, os.X_OK)


@pytest.fixture
def recorder(tmp_path):
    """A stand-in binary that writes its argv and environment to a file and exits 7."""
    record = tmp_path / "record"
    stub = tmp_path / "health_check"
    stub.write_text(
        "#!/bin/sh\n"
        f"{{ for a in \"$@\"; do printf 'arg:%s\\n' \"$a\"; done; env | sed 's/^/env:/'; }} > '{record}'\n"
        "exit 7\n"
    )
    stub.chmod(0o755)

    def run(defaults_text, **env):
        defaults = tmp_path / "defaults"
        defaults.write_text(f"HEALTH_CHECK_BIN={stub}\n" + defaults_text)
        record.unlink(missing_ok=True)
        # slurmd's environment for a HealthCheckProgram: SLURMD_NODENAME and nothing else.
        base = {"SLURMD_NODENAME": "node7", "HEALTH_CHECK_DEFAULTS": str(defaults)}
        r = subprocess.run(
            ["/bin/sh", str(WRAPPER)], env={**base, **env}, capture_output=True, text=True, cwd=tmp_path, check=False
        )
        lines = record.read_text().splitlines() if record.exists() else []
        argv = [line[4:] for line in lines if line.startswith("arg:")]
        environ = dict(line[4:].split("=", 1) for line in lines if line.startswith("env:") and "=" in line)
        return r, argv, environ

    return run


def test_slurm_wrapper_execs_health_check_slurm_with_the_defaults_files_options(recorder, tmp_path):
    r, argv, env = recorder('HEALTH_CHECK_SLURM_OPTS="--drain-after 3  --only sleep,memory --threshold x=*"\n')
    assert r.returncode == 7, r.stderr  # exec: the binary's own exit code is the wrapper's
    history = "/var/lib/health_check/history.sqlite"
    assert argv == ["slurm", "--history", history, "--drain-after", "3", "--only", "sleep,memory", "--threshold", "x=*"]
    # scontrol and sinfo must be found although slurmd passes no PATH.
    assert "/usr/bin" in env["PATH"].split(":") and env["SLURMD_NODENAME"] == "node7"
    # Nothing from the defaults file leaks into the binary's environment unless exported.
    assert "HEALTH_CHECK_SLURM_OPTS" not in env and "HEALTH_CHECK_BIN" not in env

    r, argv, env = recorder(f"HEALTH_CHECK_HISTORY={tmp_path}/h.sqlite\nexport SLURM_CONF=/etc/slurm/other.conf\n")
    assert argv == ["slurm", "--history", f"{tmp_path}/h.sqlite"]
    assert env["SLURM_CONF"] == "/etc/slurm/other.conf"


def test_slurm_wrapper_uses_the_prolog_options_in_a_prolog(recorder):
    text = 'HEALTH_CHECK_SLURM_OPTS="--drain-after 2"\nHEALTH_CHECK_PROLOG_OPTS="--only system --drain-after 1"\n'
    _, argv, _ = recorder(text, SLURM_SCRIPT_CONTEXT="prolog_slurmd")
    assert argv[3:] == ["--only", "system", "--drain-after", "1"]
    _, argv, _ = recorder(text)
    assert argv[3:] == ["--drain-after", "2"]
    _, argv, _ = recorder('HEALTH_CHECK_SLURM_OPTS="--drain-after 2"\n', SLURM_SCRIPT_CONTEXT="prolog_slurmd")
    assert argv[3:] == ["--drain-after", "2"]


def test_slurm_wrapper_keeps_no_history_when_its_setting_is_empty(recorder):
    """`HEALTH_CHECK_HISTORY=` turns the history off; `--history ''` would be a usage error (exit
    2, a Prolog error drain)."""
    r, argv, _ = recorder('HEALTH_CHECK_HISTORY=\nHEALTH_CHECK_SLURM_OPTS="--drain-after 3"\n')
    assert argv == ["slurm", "--drain-after", "3"], r.stderr


@pytest.mark.parametrize("code", [0, 1, 2, 101, 143])
def test_slurm_wrapper_as_a_prolog_passes_on_only_a_decision_to_drain(tmp_path, code):
    """As a Prolog, slurmd drains the node on any non-zero exit: only health_check's exit 1 (it
    holds the node drained) reaches slurmd; a usage error, a panic or a signal is said on stderr
    and exits 0."""
    stub = tmp_path / "health_check"
    stub.write_text(f"#!/bin/sh\nexit {code}\n")
    stub.chmod(0o755)
    defaults = tmp_path / "defaults"
    defaults.write_text(f"HEALTH_CHECK_BIN={stub}\n")
    env = {"HEALTH_CHECK_DEFAULTS": str(defaults), "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
    r = subprocess.run(["/bin/sh", str(WRAPPER)], env=env, capture_output=True, text=True, check=False)
    assert r.returncode == (code if code in (0, 1) else 0), r.stderr
    assert (f"exited {code}" in r.stderr) == (code not in (0, 1)), r.stderr
    # Outside a Prolog the binary's own code stands.
    env.pop("SLURM_SCRIPT_CONTEXT")
    r = subprocess.run(["/bin/sh", str(WRAPPER)], env=env, capture_output=True, text=True, check=False)
    assert r.returncode == code
    # A configuration the wrapper cannot use: exit 2 outside a Prolog, 0 in one.
    defaults.write_text(f"HEALTH_CHECK_BIN={tmp_path / 'missing'}\n")
    r = subprocess.run(["/bin/sh", str(WRAPPER)], env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "no executable" in r.stderr
    env["SLURM_SCRIPT_CONTEXT"] = "prolog_slurmd"
    r = subprocess.run(["/bin/sh", str(WRAPPER)], env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "no executable" in r.stderr


def test_slurm_wrapper_survives_a_defaults_file_with_a_syntax_error(tmp_path):
    """A syntax error in a file read with `.` ends dash (Debian's /bin/sh) at once: tried in a
    subshell first, it is a configuration error like any other, exit 0 as a Prolog."""
    defaults = tmp_path / "defaults"
    defaults.write_text("HEALTH_CHECK_BIN=/bin/true\nif then\n")
    for context, code in ((None, 2), ("prolog_slurmd", 0)):
        env = {"HEALTH_CHECK_DEFAULTS": str(defaults)}
        if context:
            env["SLURM_SCRIPT_CONTEXT"] = context
        r = subprocess.run(["/bin/sh", str(WRAPPER)], env=env, capture_output=True, text=True, check=False)
        assert r.returncode == code and "syntax error" in r.stderr, (context, r.returncode, r.stderr)


def test_slurm_wrapper_says_what_is_wrong_with_its_configuration(tmp_path):
    missing = tmp_path / "nope"
    defaults = tmp_path / "defaults"
    defaults.write_text(f"HEALTH_CHECK_BIN={missing}\n")
    r = subprocess.run(
        ["/bin/sh", str(WRAPPER)],
        env={"HEALTH_CHECK_DEFAULTS": str(defaults)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and str(missing) in r.stderr and str(defaults) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    if os.geteuid() != 0:  # root reads anything
        defaults.chmod(0)
        r = subprocess.run(
            ["/bin/sh", str(WRAPPER)],
            env={"HEALTH_CHECK_DEFAULTS": str(defaults)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert r.returncode == 2 and "cannot read" in r.stderr


def test_slurm_defaults_example_is_all_comments_and_every_setting_parses(tmp_path):
    """The example changes nothing until someone uncomments a line (every default lives in the
    wrapper or the binary); each of its settings, uncommented, is valid sh."""
    text = DEFAULTS.read_text()
    for line in text.splitlines():
        assert not line.strip() or line.lstrip().startswith("#"), line
    settings = [line[1:] for line in text.splitlines() if re.match(r"#(export )?[A-Z_]+=", line)]
    assert {s.split("=")[0].removeprefix("export ") for s in settings} >= {
        "HEALTH_CHECK_BIN",
        "HEALTH_CHECK_HISTORY",
        "HEALTH_CHECK_SLURM_OPTS",
        "HEALTH_CHECK_PROLOG_OPTS",
    }
    uncommented = tmp_path / "defaults"
    uncommented.write_text("\n".join(settings) + "\n")
    r = subprocess.run(["/bin/sh", "-n", str(uncommented)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr


ROLES = REPO / "ansible" / "roles"


def test_the_ansible_roles_hold_real_files_and_every_command_has_a_timeout():
    """A role is copied and packaged on its own: a symlink out of it would dangle. A remote command
    without a timeout lets one hung host stall a lockstep round of every host."""
    links = [str(p.relative_to(REPO)) for p in ROLES.rglob("*") if p.is_symlink()]
    assert not links, links
    untimed = []
    for path in ROLES.rglob("tasks/*.yml"):

        def walk(tasks, path=path):
            for task in tasks or []:
                for key in ("block", "rescue", "always"):
                    walk(task.get(key), path)
                commands = ("ansible.builtin.command", "ansible.builtin.shell", "command", "shell")
                if any(m in task for m in commands) and "timeout" not in task:
                    untimed.append(f"{path.relative_to(REPO)}: {task.get('name')}")

        walk(yaml.safe_load(path.read_text()))
    assert not untimed, untimed
