"""The fleet's page at 10,000 machines (issue 41.4): what needs a person first (the failed
machines, the findings), the healthy machines counted and listed compactly, every strip drawn
as a density; at most 3 MB, and it opens in headless Chromium. The load time is printed, not
asserted (speed is the benchmarks' business: benchmarks/fleet.py records it)."""

import json
import random
import subprocess
import time

from test_html_report import QUIET_ENOUGH, assert_self_contained, browser, open_page, report  # noqa: F401

MACHINES = 10_000
SLOW = 5


def healthy_fleet(binary, tmp_path):
    """A real run's document (system and sleep), as 10,000 machines of one model: each with its
    own name and id and its figures moved by up to 2 %, the first SLOW at half the calls."""
    base = tmp_path / "base.json"
    subprocess.run(
        [binary, "-r", "server", "-c", "", "--only", "system,sleep", "--sleep-time", "0.2", "-o", str(base)],
        capture_output=True,
        check=False,
    )
    doc = json.loads(base.read_text())
    # The machines are healthy: this VM's own verdicts (its unsynchronised clock, DCPerf's
    # per-thread floor) are not what the page is about.
    doc["checks"] = [c for c in doc["checks"] if c["status"] in ("pass", "skip")]
    runs = tmp_path / "runs"
    runs.mkdir()
    rng = random.Random(1)
    calls = doc["sleepbench"]["calls per second"]
    per_thread = doc["sleepbench"]["calls_per_second_per_thread"]
    for i in range(MACHINES):
        name = f"node{i:05d}"
        doc["health_check"]["machine"]["hostname"] = name
        doc["health_check"]["machine"]["machine_id"] = f"{i:032x}"
        doc["system"]["hostname"] = name
        factor = (0.5 if i < SLOW else 1.0) * rng.uniform(0.98, 1.02)
        doc["sleepbench"]["calls per second"] = round(calls * factor, 1)
        doc["sleepbench"]["calls_per_second_per_thread"] = round(per_thread * factor, 1)
        (runs / f"{name}.json").write_text(json.dumps(doc))
    return runs


def test_a_fleet_page_of_10000_machines_is_small_and_opens(binary, browser, tmp_path):  # noqa: F811 (the fixture)
    runs = healthy_fleet(binary, tmp_path)
    html = report(binary, tmp_path, runs, name="fleet.html", extra=QUIET_ENOUGH)
    size = html.stat().st_size
    print(f"fleet page of {MACHINES} machines: {size / 1e6:.2f} MB")
    assert size <= 3_000_000, f"{size} bytes"
    started = time.monotonic()
    page, requests, errors = open_page(browser, html, "fleet-10000.png")
    print(f"opened in {time.monotonic() - started:.2f} s (with a full-page screenshot)")
    assert_self_contained(html, requests, errors)
    # What needs a person first: the slow machines, by name, in the findings and the table.
    findings = page.locator("table.checks").first.inner_text()
    for i in range(SLOW):
        assert f"node{i:05d}" in findings, findings[:2000]
    machines = page.locator("h2#machines + table").inner_text()
    assert "node00000" in machines and "node09999" not in machines
    # The healthy ones counted, and listed by name on demand.
    ok = page.locator("p.ok-machines").inner_text()
    assert f"{MACHINES - SLOW} machine(s)" in ok, ok
    assert page.locator("p.ok-machines + details span").count() == MACHINES - SLOW
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
