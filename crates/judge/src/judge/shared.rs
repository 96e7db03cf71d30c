//! Shortfalls a whole group shares. Comparing machines with their siblings cannot see a fleet
//! that is slow all together: nobody stands out. Each machine's own checks about its paths can
//! (bandwidth under its floor, goodput under its link's share), but taken one by one they would
//! fail every machine for a cause they share: a switch, the fabric's settings, the test's. When
//! most machines of a model fall short of the same check on most of their paths, one finding of
//! scope `group` names the model and the machines, carries the severity (so `--strict` still
//! fails the report), and no machine fails for it: its failures of that check become reasons.

use super::machine::{ClientCheck, Machine};
use super::pipeline::group_finding;
use super::view::View;
use crate::stats::median;
use crate::units::round_to;
use crate::wire::check::Status;
use crate::wire::figures::FAMILIES;
use crate::wire::fleet::{Finding, Sku};
use crate::wire::rule::Severity;
use std::collections::{BTreeMap, BTreeSet};

/// Fewest machines whose shared shortfall makes a group finding: two alike could be a pair of
/// faulty machines as well as a shared cause.
pub const MIN_MACHINES: usize = 3;
/// Share of a group's machines that measured paths that must fall short together.
pub const SHARE: f64 = 0.8;

/// The group findings, and on each machine that shares one, its client checks of that kind
/// taken out of `client_checks` and kept as reasons. `groups` are the model groups (compare's).
/// Each model is one group; a fleet of several models is one more (the checks are already each
/// machine's own yardstick, so a shared fabric shows across models too), named where no
/// model's finding already covers the machines that fall short.
pub fn findings(
    machines: &mut [Machine],
    groups: &[(Sku, Vec<usize>)],
    view: &View,
) -> Vec<Finding> {
    let mut sets: Vec<(String, Vec<usize>)> = groups
        .iter()
        .map(|(sku, members)| (format!("model '{}'", sku.label()), members.clone()))
        .collect();
    if groups.len() > 1 {
        let all = groups.iter().flat_map(|(_, m)| m.iter().copied()).collect();
        sets.push(("every model".to_string(), all));
    }
    // Decide on the checks as read, then take out what the findings cover.
    let mut out = Vec::new();
    let mut covered: BTreeSet<(usize, String)> = BTreeSet::new();
    for (name, members) in &sets {
        for (k, short, of) in shortfalls(machines, members) {
            if short.iter().all(|&i| covered.contains(&(i, k.clone()))) {
                continue;
            }
            covered.extend(short.iter().map(|&i| (i, k.clone())));
            out.push(finding(machines, name, &k, &short, of));
        }
    }
    excuse(machines, &out, view);
    out
}

/// Takes out of each member's client checks those the group findings explain: of a kind its
/// group falls short of, or on a path whose other end shares a group finding too (or measured
/// no path of its own that could say it is well): under a shared cause, a path between two
/// machines it slows says nothing about either. Their failures become one reason per machine.
fn excuse(machines: &mut [Machine], found: &[Finding], view: &View) {
    let mut kinds: BTreeMap<usize, BTreeSet<&str>> = BTreeMap::new();
    for f in found {
        for m in f.members.iter().flatten() {
            if let Some(i) = view.labelled(m) {
                kinds.entry(i).or_default().insert(f.figure.as_str());
            }
        }
    }
    let sharing = |client: &str| match view.named(client) {
        Some(j) => kinds.contains_key(&j) || clients_measured(&machines[j]) == 0,
        None => true,
    };
    let explained: Vec<(usize, Vec<bool>)> = kinds
        .iter()
        .map(|(&i, own)| {
            let each = machines[i]
                .client_checks
                .iter()
                .map(|c| own.contains(c.kind.as_str()) || sharing(&c.client))
                .collect();
            (i, each)
        })
        .collect();
    for (i, each) in explained {
        let m = &mut machines[i];
        let mut flags = each.into_iter();
        let (gone, kept): (Vec<ClientCheck>, Vec<ClientCheck>) =
            std::mem::take(&mut m.client_checks)
                .into_iter()
                .partition(|_| flags.next().unwrap_or(false));
        m.client_checks = kept;
        for c in &gone {
            m.skip_baseline_check(c, "the group finding");
        }
        let counted = gone.iter().filter(|c| c.counts()).count();
        if counted > 0 {
            m.entry.reasons.push(format!(
                "{counted} check(s) about its paths did not pass, explained by what it shares \
                 with the machines of the group finding: not this machine's fault"
            ));
        }
    }
}

/// The check kinds most of `members` fall short of: (kind, the machines short, how many
/// machines measured paths).
fn shortfalls(machines: &[Machine], members: &[usize]) -> Vec<(String, Vec<usize>, usize)> {
    // Machines that measured paths, and how many distinct clients each measured: on all CPUs
    // (every figure of every machine is looked at).
    let measured: Vec<(usize, usize)> = super::parallel::over_pieces(members.len(), |range| {
        members[range]
            .iter()
            .map(|&i| (i, clients_measured(&machines[i])))
            .filter(|&(_, n)| n > 0)
            .collect()
    });
    if measured.len() < MIN_MACHINES {
        return Vec::new();
    }
    let kinds: BTreeSet<String> = measured
        .iter()
        .flat_map(|&(i, _)| machines[i].client_checks.iter().map(|c| c.kind.clone()))
        .collect();
    let needed = ((SHARE * measured.len() as f64).ceil() as usize).max(MIN_MACHINES);
    let mut out = Vec::new();
    for k in kinds {
        // Short: more than half of its clients fall short of this check.
        let short: Vec<usize> = measured
            .iter()
            .filter(|&&(i, clients)| {
                let of_kind: BTreeSet<&str> = machines[i]
                    .client_checks
                    .iter()
                    .filter(|c| c.kind == k)
                    .map(|c| c.client.as_str())
                    .collect();
                2 * of_kind.len() > clients
            })
            .map(|&(i, _)| i)
            .collect();
        if short.len() >= needed {
            out.push((k, short, measured.len()));
        }
    }
    out
}

/// Whether the machine's own checks fail on more than half of the clients it measured.
pub fn fails_on_most_paths(m: &Machine) -> bool {
    let failing: BTreeSet<&str> = m
        .client_checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.client.as_str())
        .collect();
    !failing.is_empty() && 2 * failing.len() > clients_measured(m)
}

/// Distinct clients of the machine's per-client network figures.
fn clients_measured(m: &Machine) -> usize {
    m.figures
        .iter()
        .filter(|f| {
            f.family.per_client() && f.family.section == crate::wire::document::Section::Network
        })
        .filter_map(|f| f.labels.last())
        .collect::<BTreeSet<_>>()
        .len()
}

/// The finding: the group, the machines, the median of their checked values against the
/// median limit, the worst severity among the checks.
fn finding(machines: &[Machine], group: &str, k: &str, short: &[usize], of: usize) -> Finding {
    let checks: Vec<&ClientCheck> = short
        .iter()
        .flat_map(|&i| machines[i].client_checks.iter().filter(|c| c.kind == k))
        .collect();
    let values: Vec<f64> = checks.iter().filter_map(|c| c.value).collect();
    let limits: Vec<f64> = checks.iter().filter_map(|c| c.limit).collect();
    let (value, limit) = (median(&values), median(&limits));
    let severity = if checks.iter().any(|c| c.status == Status::Fail) {
        Severity::Fail
    } else {
        Severity::Warn
    };
    let unit = unit_of(k);
    let mut names: Vec<String> = short
        .iter()
        .map(|&i| machines[i].entry.label.clone())
        .collect();
    names.sort();
    let path_count = checks.len();
    let numbers = match (value, limit) {
        (Some(v), Some(l)) => format!(
            " (median {} {unit} against the limit {} {unit})",
            round_to(v, 3),
            round_to(l, 3)
        ),
        _ => String::new(),
    };
    let message = format!(
        "{} of the {of} machines of {group} that measured paths fall short of {k} on most of \
         them, {path_count} path(s) in all{numbers}: a cause they share is likelier than as many \
         faults, so none is failed for it; look at what they share (the switch or fabric between \
         them, its settings, the test's), or measure one of them against a machine elsewhere",
        short.len()
    );
    group_finding(group, k, names, (value, limit), unit, severity, message)
}

/// The unit of a check's figure (`network.bandwidth` is in Gbit/s), where a family says.
fn unit_of(kind: &str) -> &'static str {
    FAMILIES
        .iter()
        .find(|f| {
            let kind = kind.strip_prefix("baseline.").unwrap_or(kind);
            f.name == kind || f.name.strip_suffix("_pct") == Some(kind)
        })
        .map_or("", |f| f.unit)
}

#[cfg(test)]
mod tests;
