use super::*;
use crate::judge::compare::tests::{fig, machine};
use crate::judge::fleet::{ReaderConfig, anything_failed, judge};
use crate::wire::check::CheckId;
use crate::wire::figures::BANDWIDTH;
use crate::wire::fleet::{FleetReport, MachineStatus, Scope};

/// A full mesh of `n` machines of one model at `gbps` on every path; the machines in `short`
/// fail their own bandwidth check (floor 10 Gbit/s) on every path, as their documents would.
fn mesh(n: usize, gbps: f64, short: &[usize], status: Status) -> Vec<Machine> {
    let name = |i: usize| format!("h{i}");
    (0..n)
        .map(|i| {
            let others: Vec<String> = (0..n).filter(|&j| j != i).map(name).collect();
            let figures = others.iter().map(|c| fig(&BANDWIDTH, &[c], gbps)).collect();
            let mut m = machine(&name(i), figures);
            if short.contains(&i) {
                m.client_checks = others
                    .iter()
                    .map(|c| {
                        ClientCheck::own(
                            c,
                            CheckId::new("network", "bandwidth").on(c.as_str()),
                            status,
                            Some(gbps),
                            Some(10.0),
                            format!("'{c}': {gbps} Gbit/s is under 10 Gbit/s"),
                        )
                    })
                    .collect();
            }
            m
        })
        .collect()
}

fn status(r: &FleetReport, label: &str) -> MachineStatus {
    r.machines.iter().find(|m| m.label == label).unwrap().status
}

/// A whole fleet equally slow, under its own checks' floor: one group finding that fails the
/// report, and no machine failed for it.
#[test]
fn a_whole_fleet_under_its_floor_is_one_group_finding_and_no_machine_fails() {
    let all: Vec<usize> = (0..6).collect();
    let (r, _) = judge(
        mesh(6, 4.0, &all, Status::Fail),
        &ReaderConfig::builtin(),
        None,
    );
    let groups: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.scope == Scope::Group)
        .collect();
    assert_eq!(groups.len(), 1, "{:#?}", r.findings);
    let g = groups[0];
    assert_eq!(g.severity, Severity::Fail);
    assert_eq!(g.figure, "network.bandwidth");
    assert_eq!(g.unit, "Gbit/s");
    assert_eq!((g.value, g.median), (Some(4.0), Some(10.0)));
    assert_eq!(g.members.as_ref().map(Vec::len), Some(6));
    assert!(
        g.message.starts_with("6 of the 6 machines of model")
            && g.message
                .contains("30 path(s) in all (median 4 Gbit/s against the limit 10 Gbit/s)"),
        "{}",
        g.message
    );
    assert_eq!(r.findings.len(), 1, "nothing else: nobody stands out");
    for m in &r.machines {
        assert_eq!(m.status, MachineStatus::Ok, "{m:#?}");
        assert!(
            m.reasons
                .iter()
                .any(|x| x.contains("not this machine's fault")),
            "{m:#?}"
        );
    }
    assert!(anything_failed(&r), "--strict still fails the report");
    assert_eq!(g.who(), format!("6 machines of {}", g.machine));
}

/// Warnings shared by the group (goodput under the link's share) make a group finding of
/// severity warn: the report does not fail.
#[test]
fn a_shared_warning_is_a_group_warning() {
    let all: Vec<usize> = (0..5).collect();
    let (r, _) = judge(
        mesh(5, 4.0, &all, Status::Warn),
        &ReaderConfig::builtin(),
        None,
    );
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert_eq!(r.findings[0].severity, Severity::Warn);
    assert!(!anything_failed(&r));
    assert!(r.machines.iter().all(|m| m.status == MachineStatus::Ok));
}

/// Too few machines short, or too few machines at all, is no shared cause: each machine's own
/// failures stand.
#[test]
fn a_few_short_machines_or_a_small_group_fail_as_before() {
    // 4 of 6 short: under 80 %.
    let (r, _) = judge(
        mesh(6, 4.0, &[0, 1, 2, 3], Status::Fail),
        &ReaderConfig::builtin(),
        None,
    );
    assert!(
        r.findings.iter().all(|f| f.scope != Scope::Group),
        "{:#?}",
        r.findings
    );
    for (label, expected) in [("h0", MachineStatus::Fail), ("h5", MachineStatus::Ok)] {
        assert_eq!(status(&r, label), expected);
    }
    // Two machines, both short: a pair of faulty machines as much as a shared cause.
    let (r, _) = judge(
        mesh(2, 4.0, &[0, 1], Status::Fail),
        &ReaderConfig::builtin(),
        None,
    );
    assert!(r.findings.iter().all(|f| f.scope != Scope::Group));
    assert_eq!(status(&r, "h0"), MachineStatus::Fail);
    // Short on only half of its paths is not short: a machine with 4 clients, 2 failing.
    let mut ms = mesh(5, 4.0, &[0, 1, 2, 3, 4], Status::Fail);
    ms[0].client_checks.truncate(2);
    let (r, _) = judge(ms, &ReaderConfig::builtin(), None);
    let g = r.findings.iter().find(|f| f.scope == Scope::Group).unwrap();
    assert_eq!(
        g.members.as_ref().map(Vec::len),
        Some(4),
        "h0 is not among them"
    );
    assert!(
        g.message.starts_with("4 of the 5 machines"),
        "{}",
        g.message
    );
    assert_eq!(
        status(&r, "h0"),
        MachineStatus::Fail,
        "its own failures stand"
    );
}

/// A baseline learned from the fleet at 20 Gbit/s, and the fleet judged by it.
fn by_baseline(ms: Vec<Machine>) -> FleetReport {
    use crate::judge::baseline;
    use crate::judge::baseline::BaselineRef;
    use crate::judge::rules::Rules;
    let mut fast = mesh(6, 20.0, &[], Status::Pass);
    let groups = crate::judge::compare::group(&mut fast);
    let b = BaselineRef {
        path: "baseline.yaml".into(),
        baseline: baseline::learn(&fast, &groups, &Rules::builtin()),
        rules: Rules::builtin(),
    };
    judge(ms, &ReaderConfig::builtin(), Some(&b)).0
}

/// A fleet half as fast as its baseline on every path: one group finding of the baseline's
/// checks; no machine fails, and their baseline checks about paths are skipped as explained.
/// One machine slow on every path of its own is still failed (blame finds it), and a server
/// is not failed by the baseline for the path to it.
#[test]
fn a_fleet_all_below_its_baseline_is_one_group_finding_and_one_slow_machine_still_fails() {
    let r = by_baseline(mesh(6, 10.0, &[], Status::Pass));
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    let g = &r.findings[0];
    assert_eq!(
        (g.scope, g.figure.as_str()),
        (Scope::Group, "baseline.network.bandwidth")
    );
    assert_eq!(
        (g.unit.as_str(), g.value, g.median),
        ("Gbit/s", Some(10.0), Some(16.0))
    );
    for m in &r.machines {
        assert_eq!(m.status, MachineStatus::Ok, "{m:#?}");
        assert!(
            m.baseline_checks
                .iter()
                .all(|c| c.status == Status::Skip && c.message.contains("the group finding")),
            "{m:#?}"
        );
    }
    let mut ms = mesh(6, 20.0, &[], Status::Pass);
    for m in &mut ms {
        for f in &mut m.figures {
            if m.entry.label == "h5" || f.labels.last().is_some_and(|c| c == "h5") {
                f.value = 10.0;
            }
        }
    }
    let r = by_baseline(ms);
    assert!(
        r.findings.iter().all(|f| f.scope != Scope::Group),
        "{:#?}",
        r.findings
    );
    assert_eq!(status(&r, "h5"), MachineStatus::Fail, "{:#?}", r.findings);
    for h in ["h0", "h1", "h2", "h3", "h4"] {
        assert_eq!(status(&r, h), MachineStatus::Ok, "{h}: {r:#?}");
    }
}
