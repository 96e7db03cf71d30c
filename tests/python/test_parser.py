"""HealthCheckParser on its own: finds the document, never raises, explains a missing one."""

import json

import pytest
from benchpress_emulation import load_parser
from conftest import REPO, make_dcperf_root


@pytest.fixture(scope="module")
def parser(tmp_path_factory):
    root = make_dcperf_root(tmp_path_factory.mktemp("parser"))
    parsers = root / "benchpress/plugins/parsers/health_check.py"
    parsers.write_text((REPO / "benchpress/plugins/parsers/health_check.py").read_text())
    return load_parser(root)


DOC = {"sleepbench": {"calls per second": 1.0}, "checks": [], "health_check": {"role": "server"}}
SKELETON_KEYS = {"ping", "iperf3_bandwidth", "iperf3 bandwidth", "sleepbench", "memory", "checks", "error"}


def test_one_line_document_is_returned_unchanged(parser):
    assert parser.parse(["", json.dumps(DOC)], ["progress"], 0) == DOC


def test_indented_document_is_found(parser):
    lines = json.dumps(DOC, indent=2).splitlines()
    assert parser.parse(["noise"] + lines, [], 0) == DOC


def test_envelope_gives_its_metrics(parser):
    env = {"benchmark_name": "health_check", "metrics": DOC}
    assert parser.parse([json.dumps(env)], [], 0) == DOC


def test_escaped_line_separators_survive_splitlines(parser):
    doc = dict(DOC, checks=[{"message": "host\u2028name"}])
    text = json.dumps(doc)  # ensure_ascii: \u2028 stays escaped, one line
    assert len(text.splitlines()) == 1
    assert parser.parse(text.splitlines(), [], 0) == doc


@pytest.mark.parametrize(
    "stdout",
    [[], [""], ["garbage"], ["{not json}"], ["[1, 2]"], ['{"other": 1}'], ["{", "  truncated"]],
)
def test_no_document_gives_dcperfs_skeleton_with_the_reason(parser, stdout):
    result = parser.parse(stdout, ["health_check: error: something broke"], 1)
    assert set(result) == SKELETON_KEYS
    assert result["memory"] == {
        "peak_bandwidth_mb_s": {},
        "idle_latency": {},
        "delay_bandwidth_latency": {},
        "delay_latency_bandwidth": {},
    }
    assert result["iperf3_bandwidth"] == result["iperf3 bandwidth"] == result["checks"] == []
    assert "no health_check JSON document" in result["error"]
    assert "something broke" in result["error"]


def test_never_raises_on_odd_arguments(parser):
    for stdout, stderr in [(None, None), ([], None), (["\x00\x1c"], ["\u2029"])]:
        assert isinstance(parser.parse(stdout, stderr, 0), dict)
