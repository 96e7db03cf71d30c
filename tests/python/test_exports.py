"""JUnit XML and Prometheus text, read back by the parsers the systems that consume them use:
Python's XML parser for JUnit (as CI plugins do) and prometheus_client's text parser (the format
node_exporter's textfile collector reads)."""

import json
import subprocess
import xml.etree.ElementTree as ET

import pytest
from conftest import REPO, require

FIXTURE = REPO / "tests" / "fixtures" / "document.json"


def run(binary, *args, check=True):
    r = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def prometheus_families(text):
    try:
        from prometheus_client import parser
    except ImportError:
        require(False, "needs prometheus_client (pip install prometheus-client)")
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def promtool_lint(text, tmp_path):
    """`promtool check metrics` reads the exposition from stdin and prints each problem."""
    promtool = require("promtool", "needs promtool (apt-get install prometheus)")
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    return (r.returncode, (r.stdout + r.stderr).strip())


def test_prometheus_text_of_a_document_parses_with_every_figure(binary, tmp_path):
    out = tmp_path / "health_check.prom"
    r = run(binary, "report", str(FIXTURE), "--format", "prometheus", "-o", str(out))
    assert out.read_text() == r.stdout, "--output holds what stdout shows"
    families = prometheus_families(r.stdout)
    idle = families["health_check_memory_idle_latency_seconds"]
    assert idle.type == "gauge"
    labels = {tuple(sorted(s.labels.items())) for s in idle.samples}
    assert (("cpu_node", "0"), ("mem_node", "0"), ("pattern", "FullRandom")) in labels
    # Base units: 1 ns is 1e-9 s.
    ns = json.loads(FIXTURE.read_text())["memory"]["idle_latency"]["FullRandom"]["Node-0"]["Node-0"]
    sample = next(s for s in idle.samples if s.labels["pattern"] == "FullRandom")
    assert sample.value == pytest.approx(ns * 1e-9)
    sweep = families["health_check_memory_loaded_latency_seconds"].samples
    assert len([s for s in sweep if s.labels["pattern"] == "FullRandom"]) == 24
    doc = json.loads(FIXTURE.read_text())
    calls = families["health_check_sleepbench_calls_per_second"].samples[0].value
    assert calls == doc["sleepbench"]["calls per second"]
    statuses = {s.labels["check"]: s.labels["status"] for s in families["health_check_check_status"].samples}
    assert statuses["sleepbench.calls_per_thread"] == "fail"
    assert families["health_check_run_timestamp_seconds"].samples[0].value == doc["health_check"]["started_unix"]
    assert "health_check_run_duration_seconds" in families
    assert {s.labels["section"] for s in families["health_check_section_ok"].samples} >= {"memory", "sleep"}
    bw = families["health_check_network_bandwidth_bytes_per_second"].samples[0]
    assert bw.labels == {"client": "localhost"}
    assert bw.value == pytest.approx(doc["iperf3 bandwidth"][0]["bandwidth"] * 1e9 / 8)


def test_prometheus_names_follow_the_conventions(binary, tmp_path):
    """Base units in every name (no _ns, _ms, _mb_s), as promtool's linter asks."""
    text = run(binary, "report", str(FIXTURE), "--format", "prometheus").stdout
    code, problems = promtool_lint(text, tmp_path)
    assert (code, problems) == (0, ""), problems
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for i in range(2):
        doc = json.loads(FIXTURE.read_text())
        doc["system"]["hostname"] = f"m{i}"
        (fleet / f"m{i}.json").write_text(json.dumps(doc))
    text = run(binary, "compare", str(fleet), "--format", "prometheus").stdout
    code, problems = promtool_lint(text, tmp_path)
    assert (code, problems) == (0, ""), problems


def test_a_run_prints_prometheus_and_junit_itself(binary, tmp_path):
    r = run(binary, "sleep", "--sleep-time", "0.2", "--format", "prometheus")
    families = prometheus_families(r.stdout)
    assert families["health_check_sleepbench_calls_per_second"].samples[0].value > 0
    r = run(binary, "sleep", "--sleep-time", "0.2", "--format", "junit")
    root = ET.fromstring(r.stdout)
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    names = [c.get("name") for c in cases]
    assert "sleepbench.calls_per_thread" in names and "section.sleep" in names
    assert int(root.get("tests")) == len(cases)


def test_junit_maps_fail_skip_and_warn(binary):
    r = run(binary, "report", str(FIXTURE), "--format", "junit")
    root = ET.fromstring(r.stdout)
    by_name = {c.get("name"): c for c in root.iter("testcase")}
    failed = by_name["sleepbench.calls_per_thread"]
    assert failed.find("failure") is not None and "15000" in failed.find("failure").get("message")
    assert by_name["system.governor"].find("skipped") is not None
    warned = by_name["memory.cache_step:L3"]
    assert warned.find("failure") is None and warned.find("system-out").text.startswith("WARN")
    suite = root.find("testsuite")
    assert int(suite.get("failures")) == sum(1 for c in suite.iter("testcase") if c.find("failure") is not None)


def test_compare_speaks_junit_and_prometheus(binary, tmp_path):
    d = tmp_path / "fleet"
    d.mkdir()
    doc = json.loads(FIXTURE.read_text())
    # Healthy machines: the fixture's own failing checks (this small VM's) are not under test.
    for c in doc["checks"]:
        if c["status"] == "fail":
            c["status"] = "pass"
    for i in range(3):
        doc["system"]["hostname"] = f"m{i}"
        (d / f"m{i}.json").write_text(json.dumps(doc))
    doc["system"]["hostname"] = "slow"
    doc["memory"]["peak_bandwidth_mb_s"]["all reads"] /= 3
    (d / "slow.json").write_text(json.dumps(doc))
    junit = ET.fromstring(run(binary, "compare", str(d), "--format", "junit").stdout)
    slow = next(s for s in junit.findall("testsuite") if s.get("name") == "slow")
    assert int(slow.get("failures")) >= 1
    prom = prometheus_families(run(binary, "compare", str(d), "--format", "prometheus").stdout)
    statuses = {s.labels["machine"]: s.labels["status"] for s in prom["health_check_fleet_machine_status"].samples}
    assert statuses == {"m0": "ok", "m1": "ok", "m2": "ok", "slow": "fail"}
    # What counting one vote per machine did, every kind always there (0: none).
    notes = {s.labels["kind"]: s.value for s in prom["health_check_fleet_identity_notes"].samples}
    assert notes == {"clash": 0, "duplicate": 0, "runs": 0, "ignored": 0}
