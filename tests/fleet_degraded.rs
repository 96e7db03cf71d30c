//! `compare` over real runs of this machine, some degraded by real means (a CPU quota in a
//! cgroup, a client behind a slower shaped link): exactly those are flagged. In a test binary of
//! its own: cargo runs test binaries one after another, so no other test's work lands in the
//! healthy runs' figures (on 2 CPUs, a concurrent test shows as a slow, busy sleep section).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

#[path = "integration/fleet_util.rs"]
#[allow(dead_code)]
mod fleet_util;
#[path = "integration/netns.rs"]
#[allow(dead_code)]
mod netns;
#[path = "integration/util.rs"]
#[allow(dead_code)]
mod util;

use fleet_util::compare;
use health_check::judge::rules::Severity;
use health_check::wire::fleet::{FleetReport, Scope};
use netns::{ADDR_B, NetPair, Side};
use std::collections::BTreeSet;
use std::path::Path;
use util::{TestCgroup, bin_str, exclusive, json_of};

/// One server run from A to B's responder, written to `out`; `extra` picks sections.
fn server_run(pair: &NetPair, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "-r",
        "server",
        "-c",
        ADDR_B,
        "--profile",
        "quick",
        "--sleep-time",
        "1",
        "--ping-count",
        "3",
        "--memory-tests",
        "peak",
        "--memory-repeats",
        "2",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = pair
        .command(Side::A, &bin_str())
        .args(&args)
        .output()
        .unwrap();
    let _ = json_of(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn compare_flags_exactly_the_runs_degraded_by_real_means() {
    let test = "compare_flags_exactly_the_runs_degraded_by_real_means";
    let _cpus = exclusive();
    let Some(mut pair) = NetPair::new(test) else {
        return;
    };
    pair.shape(Side::A, "1gbit");
    pair.shape(Side::B, "1gbit");
    pair.spawn(
        Side::B,
        &bin_str(),
        &["-r", "client", "--idle-timeout", "120"],
    );
    pair.wait_listening(Side::B, 5201);
    // The first packets of a fresh link pay for neighbour discovery: not part of any run.
    let warm = pair
        .command(Side::A, "ping")
        .args(["-c", "3", "-i", "0.2", ADDR_B])
        .output()
        .unwrap();
    assert!(warm.status.success());
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        server_run(&pair, &dir.path().join(format!("normal-{i}.json")), &[]);
    }
    // A CPU quota of 20 % of one CPU: the local sections slow down.
    let Some(cgroup) = TestCgroup::cpu(test, 20) else {
        return;
    };
    let quota_run = dir.path().join("cpu-quota.json");
    let o = cgroup
        .command(&[
            "-r",
            "server",
            "-c",
            "",
            "--profile",
            "quick",
            "--sleep-time",
            "1",
            "--memory-tests",
            "peak",
            "--memory-repeats",
            "2",
            "-o",
            quota_run.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    drop(cgroup);
    // The client behind a 200 Mbit/s link instead of 1 Gbit/s.
    pair.shape(Side::A, "200mbit");
    pair.shape(Side::B, "200mbit");
    server_run(
        &pair,
        &dir.path().join("slow-link.json"),
        &["--only", "system,network"],
    );
    let (mut code, mut report, mut stderr) = compare(&[dir.path().to_str().unwrap()]);
    // A VM's CPUs are sometimes taken away for a while (steal time) and a healthy run is then
    // rightly measured slow. As an operator would, measure a flagged healthy run again (twice at
    // most): a degradation by real means is flagged every time, noise is not.
    for _ in 0..2 {
        let noisy = healthy_flagged(&report);
        if noisy.is_empty() {
            break;
        }
        eprintln!("measuring again: {noisy:?}\n{stderr}");
        pair.shape(Side::A, "1gbit");
        pair.shape(Side::B, "1gbit");
        for m in &noisy {
            server_run(&pair, &dir.path().join(format!("{m}.json")), &[]);
        }
        (code, report, stderr) = compare(&[dir.path().to_str().unwrap()]);
    }
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        report.groups.len(),
        1,
        "one machine, one model: {:#?}",
        report.groups
    );
    let flagged = healthy_flagged(&report);
    assert!(
        flagged.is_empty(),
        "healthy runs flagged: {flagged:?}\n{stderr}"
    );
    for m in ["cpu-quota", "slow-link"] {
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.machine == m && f.severity == Severity::Fail),
            "{m} fails:\n{stderr}"
        );
    }
    for f in &report.findings {
        let right = match f.machine.as_str() {
            "cpu-quota" => f.figure.starts_with("sleepbench.") || f.figure.starts_with("memory."),
            _ => f.figure.starts_with("network.") || f.figure.starts_with("ping."),
        };
        assert!(
            right,
            "{} is flagged in the wrong figure {}",
            f.machine, f.figure
        );
    }
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.machine == "slow-link" && f.figure.starts_with("network.bandwidth")),
        "{stderr}"
    );
    assert!(
        report.findings.iter().any(|f| f.machine == "cpu-quota"
            && (f.figure.starts_with("memory.peak") || f.figure == "sleepbench.calls_per_second")),
        "{stderr}"
    );
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.scope == Scope::Figure || f.scope == Scope::Server)
    );
    let quota = report
        .machines
        .iter()
        .find(|m| m.label == "cpu-quota")
        .unwrap();
    assert!(
        quota
            .missing_figures
            .iter()
            .any(|m| m.starts_with("network.")),
        "the network figures it lacks are listed: {:?}",
        quota.missing_figures
    );
}

/// The healthy runs (not `cpu-quota` or `slow-link`) with a finding.
fn healthy_flagged(report: &FleetReport) -> BTreeSet<String> {
    report
        .findings
        .iter()
        .filter(|f| !["cpu-quota", "slow-link"].contains(&f.machine.as_str()))
        .map(|f| f.machine.clone())
        .collect()
}
