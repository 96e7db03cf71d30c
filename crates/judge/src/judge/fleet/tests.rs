//! Tests of `fleet.rs`.

use super::*;
use crate::judge::compare::tests::{fig, machine, sku};
use crate::judge::machine::ClientCheck;
use crate::wire::check::Status;
use crate::wire::figures::AGGREGATE;
use crate::wire::fleet::{Scope, Sku};

fn reader() -> ReaderConfig {
    ReaderConfig::builtin()
}

/// Servers of one model, each with the aggregate bandwidth of two clients: `(server,
/// clients, Gbit/s)`; clients `b*` are of a slower model B, the others of the servers' model.
fn fleet(servers: &[(&str, [&str; 2], f64)]) -> Vec<Machine> {
    let mut ms: Vec<Machine> = servers
        .iter()
        .map(|(s, clients, gbps)| {
            let mut m = machine(s, vec![fig(&AGGREGATE, &[], *gbps)]);
            m.aggregate_clients = clients.iter().map(|c| c.to_string()).collect();
            m
        })
        .collect();
    let mut clients: Vec<&str> = servers.iter().flat_map(|(_, c, _)| *c).collect();
    clients.sort();
    clients.dedup();
    for c in clients {
        let mut m = machine(c, Vec::new());
        if c.starts_with('b') {
            m.entry.sku = Some(Sku {
                cpu_model: Some("B".into()),
                ..sku()
            });
        }
        ms.push(m);
    }
    ms
}

fn status(report: &FleetReport, label: &str) -> MachineStatus {
    report
        .machines
        .iter()
        .find(|m| m.label == label)
        .unwrap()
        .status
}

/// A server whose two clients are of a slower model is not compared with servers of fast
/// clients; among servers whose clients are alike, a slow aggregate still fails.
#[test]
fn aggregates_are_compared_only_among_servers_whose_clients_are_alike() {
    let ms = fleet(&[
        ("s1", ["a1", "a2"], 18.0),
        ("s2", ["a3", "a4"], 18.2),
        ("s3", ["a5", "a6"], 17.9),
        ("s4", ["a7", "a8"], 18.1),
        ("s5", ["b1", "b2"], 10.0),
    ]);
    let (report, _) = judge(ms, &reader(), None);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(status(&report, "s5"), MachineStatus::Alone);
    let ms = fleet(&[
        ("s1", ["a1", "a2"], 18.0),
        ("s2", ["a3", "a4"], 18.2),
        ("s3", ["a5", "a6"], 17.9),
        ("s4", ["a7", "a8"], 9.0),
    ]);
    let (report, _) = judge(ms, &reader(), None);
    assert_eq!(status(&report, "s4"), MachineStatus::Fail, "{report:#?}");
    assert!(
        report.findings[0]
            .figure
            .starts_with("network.aggregate_bandwidth"),
        "{:#?}",
        report.findings
    );
}

fn floor_check(client: &str, gbps: f64) -> ClientCheck {
    ClientCheck::own(
        client,
        crate::wire::check::CheckId::new("network", "bandwidth").on(client),
        Status::Fail,
        Some(gbps),
        Some(12.0),
        format!("{gbps} Gbit/s is under 12"),
    )
}

/// `n` machines measuring each other at 20 Gbit/s, and each of them measuring `x` at `to_x`.
fn mesh_with(n: usize, x: &str, to_x: f64) -> Vec<Machine> {
    use crate::wire::figures::BANDWIDTH;
    let name = |i: usize| format!("h{i}");
    (0..n)
        .map(|i| {
            let mut figures: Vec<_> = (0..n)
                .filter(|&j| j != i)
                .map(|j| fig(&BANDWIDTH, &[&name(j)], 20.0))
                .collect();
            figures.push(fig(&BANDWIDTH, &[x], to_x));
            machine(&name(i), figures)
        })
        .collect()
}

/// A machine's own check failing on its path to a client the fleet finds slow is the
/// client's doing.
#[test]
fn a_path_check_to_a_client_found_slow_is_explained_by_it() {
    let mut ms = mesh_with(5, "x", 10.0);
    ms[0].client_checks.push(floor_check("x", 10.0));
    ms.push(machine("x", Vec::new()));
    let (report, _) = judge(ms, &reader(), None);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.machine == "x" && f.scope == Scope::Client),
        "{:#?}",
        report.findings
    );
    assert_eq!(status(&report, "h0"), MachineStatus::Ok, "{report:#?}");
}

/// A machine whose own checks fail on most of its paths explains the one failing check of a
/// machine whose others pass; its own failures stand.
#[test]
fn a_machine_failing_on_most_of_its_paths_explains_a_path_check_to_it() {
    let mut ms = mesh_with(4, "h4", 20.0);
    let mut x = machine(
        "h4",
        (0..4)
            .map(|j| fig(&crate::wire::figures::BANDWIDTH, &[&format!("h{j}")], 20.0))
            .collect(),
    );
    x.client_checks = (0..4).map(|j| floor_check(&format!("h{j}"), 9.0)).collect();
    ms.push(x);
    ms[0].client_checks.push(floor_check("h4", 9.0));
    let (report, _) = judge(ms, &reader(), None);
    assert_eq!(status(&report, "h0"), MachineStatus::Ok, "{report:#?}");
    assert_eq!(status(&report, "h4"), MachineStatus::Fail, "{report:#?}");
    // Two machines failing on most of their paths each keep their failure.
    let mut ms = mesh_with(4, "h4", 20.0);
    ms.push(machine("h4", Vec::new()));
    for (i, m) in ms.iter_mut().enumerate().take(2) {
        m.client_checks = (0..4)
            .filter(|&j| j != i)
            .map(|j| floor_check(&format!("h{j}"), 9.0))
            .collect();
    }
    let (report, _) = judge(ms, &reader(), None);
    assert_eq!(status(&report, "h0"), MachineStatus::Fail, "{report:#?}");
    assert_eq!(status(&report, "h1"), MachineStatus::Fail, "{report:#?}");
}

/// A client whose every measurer fails its own check about it, while passing its other paths,
/// is the one at fault even where no comparison can say so (here its figures look like the
/// others'): it fails, and they do not. One measurer alone keeps its failure.
#[test]
fn a_client_every_measurer_fails_its_check_about_is_at_fault() {
    let mut ms = mesh_with(4, "x", 20.0);
    for m in ms.iter_mut() {
        m.client_checks.push(floor_check("x", 9.0));
    }
    ms.push(machine("x", Vec::new()));
    let (report, _) = judge(ms, &reader(), None);
    for h in ["h0", "h1", "h2", "h3"] {
        assert_eq!(status(&report, h), MachineStatus::Ok, "{report:#?}");
    }
    assert_eq!(status(&report, "x"), MachineStatus::Fail, "{report:#?}");
    let x = report.machines.iter().find(|m| m.label == "x").unwrap();
    assert!(
        x.reasons[0].contains("all 4 machines that measured it fail their checks"),
        "{:?}",
        x.reasons
    );
    let mut ms = mesh_with(4, "x", 20.0);
    ms[0].client_checks.push(floor_check("x", 9.0));
    ms.push(machine("x", Vec::new()));
    let (report, _) = judge(ms, &reader(), None);
    assert_eq!(status(&report, "h0"), MachineStatus::Fail, "{report:#?}");
    assert_eq!(status(&report, "x"), MachineStatus::Ok, "{report:#?}"); // A measurer failing most of its paths (a rack's server with two slow clients of three)
    // agrees without counting: the others still put their checks down to x.
    let mut ms = mesh_with(4, "x", 20.0);
    for m in ms.iter_mut() {
        m.client_checks.push(floor_check("x", 9.0));
    }
    for c in ["h1", "h2"] {
        ms[0].client_checks.push(floor_check(c, 9.0));
    }
    ms.push(machine("x", Vec::new()));
    let (report, _) = judge(ms, &reader(), None);
    assert_eq!(status(&report, "x"), MachineStatus::Fail, "{report:#?}");
    for h in ["h1", "h2", "h3"] {
        assert_eq!(status(&report, h), MachineStatus::Ok, "{report:#?}");
    }
}

/// A machine judged on fewer than half of its figures says so first, with the sections left out;
/// one with a few left out says it after its other reasons; one with none compared is alone.
#[test]
fn a_machine_judged_on_few_of_its_figures_says_so_first() {
    let with = |left: usize| {
        let mut m = machine("m", vec![]);
        m.entry.figures = 10;
        m.entry.reasons.push("an earlier reason".into());
        m.entry.not_compared = (0..left)
            .map(|i| {
                let section = if i % 2 == 0 { "memory" } else { "sleepbench" };
                format!("{section}.f{i}: measured with profile=quick where its group used profile=standard")
            })
            .collect();
        let mut ms = vec![m];
        crate::judge::account::not_compared(&mut ms);
        ms.remove(0)
    };
    let mostly = with(6);
    assert_eq!(mostly.entry.status, MachineStatus::Ok);
    assert!(
        mostly.entry.reasons[0].starts_with(
            "judged on 4 of 10 figures only (memory, sleepbench not compared): 6 of 10"
        ),
        "{:?}",
        mostly.entry.reasons
    );
    let few = with(2);
    assert_eq!(few.entry.reasons[0], "an earlier reason");
    assert!(few.entry.reasons[1].starts_with("2 of 10 figures not compared"));
    assert_eq!(with(10).entry.status, MachineStatus::Alone);
}
