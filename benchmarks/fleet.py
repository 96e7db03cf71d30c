#!/usr/bin/env python3
"""compare and baseline over a fleet of documents: N copies of a real document
(tests/fixtures/document.json, about 250 figures) with every figure perturbed by up to +-5 %, each
machine its own host name. Times `health_check compare` and `health_check baseline` (medians of
--rounds, interleaved) and their peak memory, beside an anchor measured in the same run: Python's
json.load of the same files (the cost of only reading them). Prints, per N, the seconds, the ratio
to the anchor, and the peak RSS per document, so growth with N can be read off (linear: RSS per
document flat; quadratic: it grows with N).

Also times `health_check report DIR --html` (the fleet's page) and prints the page's size and how
long headless Chromium takes to open it (with the test venv's Python, which has playwright).

Every machine also carries a configuration fingerprint (about twenty facts); one machine in 40
has another kernel command line and one in 60 another BIOS version, so compare's drift finder
runs over every fact of every group.

Goals: 10,000 documents in under 5 s each here, memory growing with the figures (issue 9), with
blame over every machine's per-client paths on (issue 17) and drift on (issue 20); the HTML page
for 1,000 machines in under 3 s and under 5 MB (issue 11); at 10,000 machines at most 3 MB and
open in under 2 s (issue 41).

Usage: benchmarks/fleet.py [--sizes 1000,10000] [--rounds 3] [--before OTHER_BINARY]
                           [--documents full|network] [--only compare] [--keep DIR]
(--before times another build's compare too, interleaved: a change's gain within one run;
--documents network writes a fleet run's documents, system and network sections only, about 5
KiB each, for the million-document run; --only compare times compare alone beside json.load;
--keep DIR writes the fleet there and keeps it, or reuses the one a run kept there)
Needs a release build (cargo build --release --locked)."""

import argparse
import json
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
BINARY = REPO / "target/release/health_check"


def perturb(value, rng):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return value * (1 + rng.uniform(-0.05, 0.05)) if isinstance(value, float) else value


def walk(node, rng):
    if isinstance(node, dict):
        return {k: walk(v, rng) for k, v in node.items()}
    if isinstance(node, list):
        return [walk(v, rng) for v in node]
    return perturb(node, rng)


PEERS = 4

FINGERPRINT = {
    "bios.vendor": "Dell Inc.",
    "bios.version": "2.19.1",
    "bios.date": "03/12/2025",
    "board.vendor": "Dell Inc.",
    "board.name": "0X1X2X",
    "system.product": "PowerEdge R6625",
    "cpu.microcode": "0xa101148",
    "kernel.release": "6.6.30-fb",
    "kernel.cmdline": "ro quiet iommu=pt transparent_hugepage=always numa_balancing=disable",
    "cpu.governor": "performance",
    "cpu.smt": "on",
    "cpu.idle_driver": "acpi_idle",
    "cpu.idle_states": "POLL,C1,C2",
    "memory.thp": "always",
    "memory.thp_defrag": "madvise",
    "kernel.numa_balancing": "off",
    "memory.dimms": "24x Samsung M321R8GA0BB0-CQKEG 64 GB @ 4800 MT/s",
    "nic.eth0.driver": "mlx5_core",
    "nic.eth0.firmware": "28.39.1002",
}


# A fleet run's document (ansible/fleet.yml's rounds, --only system,network): what it has of the
# fixture's sections and checks.
NETWORK_SECTIONS = ("health_check", "system", "ping", "iperf3 bandwidth", "iperf3_bandwidth", "network_aggregate")


def network_only(doc):
    out = {k: v for k, v in doc.items() if k in NETWORK_SECTIONS}
    out["checks"] = [c for c in doc["checks"] if c["name"].startswith(("network.", "system."))]
    hc = out["health_check"]
    hc["sections"] = {k: v for k, v in hc["sections"].items() if k in ("system", "network")}
    return out


def make_fleet(directory, n, documents="full"):
    """Each machine also measures the next PEERS machines by host name (a mesh's rounds), so
    compare's blame runs over n x PEERS paths; one machine in 50 is slow on every path."""
    base = json.loads((REPO / "tests/fixtures/document.json").read_text())
    if documents == "network":
        base = network_only(base)
    rng = random.Random(n)
    slow = {i for i in range(0, n, 50)}
    for i in range(n):
        doc = walk(base, rng)
        doc["system"]["hostname"] = f"host-{i:05d}"
        facts = dict(FINGERPRINT)
        if i % 40 == 7:
            facts["kernel.cmdline"] += " mitigations=off"
        if i % 60 == 11:
            facts["bios.version"] = "2.17.0"
        doc["system"]["fingerprint"] = facts
        bw = doc["iperf3 bandwidth"][0]
        ping = doc["ping"][0]
        entries, pings = [], []
        for k in range(1, PEERS + 1):
            j = (i + k) % n
            factor = 0.2 if i in slow or j in slow else 1.0
            entries.append(
                {**bw, "hostname": f"host-{j:05d}", "bandwidth": bw["bandwidth"] * factor * rng.uniform(0.97, 1.03)}
            )
            pings.append({**ping, "hostname": f"host-{j:05d}"})
        doc["iperf3 bandwidth"] = entries
        doc["ping"] = pings
        # Figures only: the structure (integers, counts, names) stays the document's.
        (directory / f"host-{i:05d}.json").write_text(json.dumps(doc))


def timed(cmd):
    """Wall seconds and the child's peak RSS in MiB (from wait4)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    if status != 0:
        raise SystemExit(f"{cmd} failed with status {status}")
    return seconds, usage.ru_maxrss / 1024


def anchor(directory):
    start = time.monotonic()
    for p in sorted(directory.glob("*.json")):
        json.loads(p.read_text())
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", help="another build of health_check whose compare is timed beside")
    ap.add_argument("--documents", choices=("full", "network"), default="full")
    ap.add_argument("--only", choices=("compare",), help="time compare alone (beside json.load)")
    ap.add_argument("--keep", type=pathlib.Path, help="write the fleet into (or reuse it from) this directory")
    args = ap.parse_args()
    if not BINARY.exists():
        raise SystemExit("build first: cargo build --release --locked")
    print(f"{'docs':>6} {'what':<9} {'median s':>9} {'x json.load':>12} {'peak MiB':>9} {'KiB/doc':>8}")
    for n in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            d = args.keep / f"fleet-{args.documents}-{n}" if args.keep else pathlib.Path(tmp) / "fleet"
            if not (d / "complete").exists():
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir(parents=True)
                make_fleet(d, n, args.documents)
                (d / "complete").write_text("")
            out = pathlib.Path(tmp) / "baseline.yaml"
            html = pathlib.Path(tmp) / "fleet.html"
            rows = {"compare": [], "baseline": [], "report": [], "json.load": [], "before": []}
            rss = {"compare": 0.0, "baseline": 0.0, "report": 0.0, "before": 0.0}
            for _ in range(args.rounds):
                if args.before:
                    s, m = timed([args.before, "compare", str(d)])
                    rows["before"].append(s)
                    rss["before"] = max(rss["before"], m)
                s, m = timed([str(BINARY), "compare", str(d)])
                rows["compare"].append(s)
                rss["compare"] = max(rss["compare"], m)
                if not args.only:
                    s, m = timed([str(BINARY), "baseline", str(d), "-o", str(out)])
                    rows["baseline"].append(s)
                    rss["baseline"] = max(rss["baseline"], m)
                    s, m = timed([str(BINARY), "report", str(d), "--html", str(html)])
                    rows["report"].append(s)
                    rss["report"] = max(rss["report"], m)
                rows["json.load"].append(anchor(d))
            ref = statistics.median(rows["json.load"])
            timed_here = ["compare"] + ([] if args.only else ["baseline", "report"])
            for what in timed_here + (["before"] if args.before else []):
                med = statistics.median(rows[what])
                print(f"{n:>6} {what:<9} {med:>9.2f} {med / ref:>12.2f} {rss[what]:>9.0f} {rss[what] * 1024 / n:>8.1f}")
            print(f"{n:>6} {'json.load':<9} {ref:>9.2f} {1.0:>12.2f}")
            if args.only:
                continue
            opened = page_load_seconds(html)
            shown = "no browser here" if opened is None else f"opens in {opened:.2f} s (median of 3, headless Chromium)"
            print(f"{n:>6} HTML page: {html.stat().st_size / 1e6:.2f} MB, {shown}")


def page_load_seconds(html, tries=3):
    """Seconds headless Chromium takes to load the page (to its load event), the median of
    `tries`; None without playwright or Chromium (the test venv has them: run with its Python)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not chromium:
        return None
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(tries):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            started = time.monotonic()
            page.goto(pathlib.Path(html).as_uri())
            page.wait_for_load_state("load")
            times.append(time.monotonic() - started)
            page.close()
        browser.close()
    return statistics.median(times)


if __name__ == "__main__":
    main()
