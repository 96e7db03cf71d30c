//! The accounting: every machine's status from the findings that blame it, its own checks
//! about its paths (unless a finding explains the path) and what could not be compared. The
//! last step of the fleet's walk (`fleet::judge`); statuses only rise.

use super::machine::{ClientCheck, Machine, Origin};
use super::view::View;
use crate::wire::document::{Section, Status};
use crate::wire::fleet::{Finding, MachineStatus, Scope};
use crate::wire::rule::Severity;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A server's aggregate (all clients at once) is slow when a client or a path is: an aggregate
/// finding on a server some of whose client paths a finding explains is not the server's fault.
/// It is kept as a reason on the server, and fails nothing.
pub fn excuse_aggregates(
    machines: &mut [Machine],
    findings: Vec<Finding>,
    explained: &BTreeSet<(usize, usize, String)>,
    view: &View,
) -> Vec<Finding> {
    let mut kept = Vec::with_capacity(findings.len());
    for f in findings {
        let server = view.labelled(&f.machine);
        let aggregate = f.figure.starts_with(crate::wire::figures::AGGREGATE.name);
        let clients: Vec<&str> = match server {
            // The set is ordered by server: this server's paths are one range of it.
            Some(s) if aggregate && f.scope == Scope::Machine => explained
                .range((s, 0, String::new())..(s + 1, 0, String::new()))
                .map(|(_, c, _)| machines[*c].entry.label.as_str())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            _ => Vec::new(),
        };
        if clients.is_empty() {
            kept.push(f);
            continue;
        }
        let why = format!(
            "{} explained by its clients or the paths to them ({}), not its own fault: {}",
            f.figure,
            clients.join(", "),
            f.headline
        );
        if let Some(s) = server {
            machines[s].entry.reasons.push(why);
        }
    }
    kept
}

/// Every machine's status from the findings that blame it and its own failed checks about one
/// client, which count unless a finding explains the path (the client, or the link, is to
/// blame). A machine's own failures always stand: statuses only rise.
pub fn account(
    machines: &mut [Machine],
    findings: &[Finding],
    explained: &BTreeSet<(usize, usize, String)>,
    view: &View,
) {
    // Suspect findings raised their candidates to `suspect` already (blame).
    for f in findings
        .iter()
        .filter(|f| !matches!(f.scope, Scope::Link | Scope::Group) && f.suspect.is_none())
    {
        let Some(i) = view.labelled(&f.machine) else {
            continue;
        };
        let status = match (&f.inconclusive, f.severity) {
            (Some(_), _) => MachineStatus::Inconclusive,
            (None, Severity::Fail) => MachineStatus::Fail,
            (None, Severity::Warn) => MachineStatus::Warn,
        };
        // An inconclusive headline says so itself.
        let reason = match status {
            MachineStatus::Inconclusive => f.headline.clone(),
            _ => format!("{}: {}", f.severity.as_str(), f.headline),
        };
        machines[i].raise(status, reason);
    }
    let paths: BTreeSet<(usize, usize)> = explained.iter().map(|(a, b, _)| (*a, *b)).collect();
    // A client whose own checks fail on most of its paths explains a failing path to it from a
    // machine whose own checks do not: the path's other end explains it away.
    let failing_most: BTreeSet<usize> = machines
        .iter()
        .enumerate()
        .filter(|(_, m)| super::shared::fails_on_most_paths(m))
        .map(|(i, _)| i)
        .collect();
    let failed_by_all = failed_by_every_measurer(machines, view, &failing_most);
    for (i, machine) in machines.iter_mut().enumerate() {
        let checks = std::mem::take(&mut machine.client_checks);
        for c in checks.into_iter().filter(ClientCheck::counts) {
            let client = view.named(&c.client);
            let why = match client {
                Some(j) if paths.contains(&(i, j)) => Some("a finding about it or the path to it"),
                Some(j) if failing_most.contains(&j) && !failing_most.contains(&i) => {
                    Some("its own checks, which fail on most of its paths")
                }
                Some(j) if failed_by_all.contains_key(&j) => {
                    Some("every machine that measured it fails its check about it")
                }
                _ => None,
            };
            match why {
                Some(why) => machine.explained(&c, &format!("'{}': {why}", c.client)),
                None => {
                    let (status, word) = match c.status {
                        Status::Fail => (MachineStatus::Fail, "failed"),
                        _ => (MachineStatus::Warn, "warned"),
                    };
                    machine.raise(
                        status,
                        format!("{} {} {word}: {}", c.origin.word(), c.check, c.message),
                    );
                }
            }
        }
    }
}

/// The clients whose every measurer fails its own check about them, two of them at least
/// passing most of their other paths, with how many measured them: several machines fine
/// elsewhere agree, so the client is at fault, whatever a comparison could say (a model with two
/// machines, one slow, has no level to compare with). A measurer failing most of its paths
/// agrees without counting (a rack server with two slow clients of three). Each fails for it,
/// and their checks are put down to it.
fn failed_by_every_measurer(
    machines: &mut [Machine],
    view: &View,
    failing_most: &BTreeSet<usize>,
) -> BTreeMap<usize, usize> {
    let mut failed_by: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    for (i, m) in machines.iter().enumerate() {
        for j in m
            .client_checks
            .iter()
            .filter(|c| c.status == Status::Fail && c.origin == Origin::Run)
            .filter_map(|c| view.named(&c.client))
            .filter(|&j| j != i)
        {
            failed_by.entry(j).or_default().insert(i);
        }
    }
    // Who measured them, for those only (a fleet's every path otherwise).
    let mut measured_by: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    if !failed_by.is_empty() {
        for (i, m) in machines.iter().enumerate() {
            for j in view
                .clients_of(i)
                .filter(|&(f, j)| {
                    let fam = m.figures[f].family;
                    failed_by.contains_key(&j)
                        && fam.per_client()
                        && fam.section == Section::Network
                })
                .map(|(_, j)| j)
            {
                measured_by.entry(j).or_default().insert(i);
            }
        }
    }
    let out: BTreeMap<usize, usize> = failed_by
        .into_iter()
        .filter(|(j, by)| {
            measured_by.get(j) == Some(by)
                && by.iter().filter(|i| !failing_most.contains(i)).count() >= 2
        })
        .map(|(j, by)| (j, by.len()))
        .collect();
    for (&j, &n) in &out {
        machines[j].raise(
            MachineStatus::Fail,
            format!("fail: all {n} machines that measured it fail their checks about it"),
        );
    }
    out
}

/// A machine with figures left out of the comparison says how many and why; one none of whose
/// figures could be compared is `alone` (it was compared with nothing). One judged on fewer than
/// half of its figures says so first, naming the sections left out: its status stands for what
/// was compared only, and a reader must see that before the status.
pub fn not_compared(machines: &mut [Machine]) {
    for m in machines.iter_mut() {
        let (left, total) = (m.entry.not_compared.len(), m.entry.figures);
        if left == 0 || total == 0 {
            continue;
        }
        let why = &m.entry.not_compared[0];
        let more = if left > 1 { "; ..." } else { "" };
        let line = format!("{left} of {total} figures not compared: {why}{more}");
        if left >= total {
            m.raise(MachineStatus::Alone, format!("none compared: {line}"));
        } else if left * 2 > total {
            let sections: std::collections::BTreeSet<&str> = m
                .entry
                .not_compared
                .iter()
                .filter_map(|n| n.split(['.', ':']).next())
                .collect();
            let sections: Vec<&str> = sections.into_iter().collect();
            m.entry.reasons.insert(
                0,
                format!(
                    "judged on {} of {total} figures only ({} not compared): {line}",
                    total - left,
                    sections.join(", ")
                ),
            );
        } else {
            m.entry.reasons.push(line);
        }
    }
}
