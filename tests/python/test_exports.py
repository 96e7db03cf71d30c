"""JUnit XML and Prometheus text, read back by the parsers the systems that consume them use:
Python's XML parser for JUnit (as CI plugins do) and prometheus_client's text parser (the format
node_exporter's textfile collector reads)."""

import json
import subprocess
import xml.etree.ElementTree as ET

import pytest
from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "document.json"


def run(binary, *args, check=True):
    r = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def prometheus_families(text):
    parser = pytest.importorskip("prometheus_client.parser")
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def test_prometheus_text_of_a_document_parses_with_every_figure(binary, tmp_path):
    out = tmp_path / "health_check.prom"
    r = run(binary, "report", str(FIXTURE), "--format", "prometheus", "-o", str(out))
    assert out.read_text() == r.stdout, "--output holds what stdout shows"
    families = prometheus_families(r.stdout)
    idle = families["health_check_memory_idle_latency_ns"]
    assert idle.type == "gauge"
    labels = {tuple(sorted(s.labels.items())) for s in idle.samples}
    assert (("cpu_node", "0"), ("mem_node", "0"), ("pattern", "FullRandom")) in labels
    sweep = families["health_check_memory_loaded_latency_ns"].samples
    assert len([s for s in sweep if s.labels["pattern"] == "FullRandom"]) == 24
    doc = json.loads(FIXTURE.read_text())
    calls = families["health_check_sleepbench_calls_per_second"].samples[0].value
    assert calls == doc["sleepbench"]["calls per second"]
    statuses = {s.labels["check"]: s.labels["status"] for s in families["health_check_check_status"].samples}
    assert statuses["sleepbench.calls_per_thread"] == "fail"
    assert families["health_check_run_timestamp_seconds"].samples[0].value == doc["health_check"]["started_unix"]
    assert "health_check_run_duration_seconds" in families
    assert {s.labels["section"] for s in families["health_check_section_ok"].samples} >= {"memory", "sleep"}
    bw = families["health_check_network_bandwidth_gbps"].samples[0]
    assert bw.labels == {"client": "localhost"}


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
