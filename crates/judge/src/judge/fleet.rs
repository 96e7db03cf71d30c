//! Readers of many documents: `compare` (a fleet against itself), `baseline` (per-SKU
//! expectations learned from a fleet) and the fleet report they write. The binary measures one
//! machine; fan-out over a fleet is Ansible's (`ansible/`), and these readers gather the results.

use super::baseline::{self, Baseline, Learned};
use super::checks::Thresholds;
use super::machine::{self, ClientCheck, LabelFrom, Machine, Origin};
use super::rules::Rules;
use super::{blame, compare};
use crate::wire::document::{Section, Status};
use crate::wire::fleet::{Finding, FleetInfo, FleetReport, IdentityNote, MachineStatus, Scope};
use crate::wire::headline;
use crate::wire::read;
use crate::wire::rule::Severity;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a reader (`compare`, `baseline`, `report`) reads and how it judges.
#[derive(Debug, Clone)]
pub struct ReaderConfig {
    /// Documents and directories.
    pub paths: Vec<PathBuf>,
    /// The rules.
    pub rules: Rules,
    /// How machines are named.
    pub labels: LabelFrom,
    /// `compare --print-rules`: print the built-in rules and stop.
    pub print_rules: bool,
    /// The limits, the interference limits among them.
    pub thresholds: Thresholds,
}

impl PartialEq for ReaderConfig {
    fn eq(&self, other: &Self) -> bool {
        self.paths == other.paths
            && self.rules.source == other.rules.source
            && self.labels == other.labels
            && self.print_rules == other.print_rules
            && self.thresholds == other.thresholds
    }
}

impl Eq for ReaderConfig {}

impl ReaderConfig {
    /// The built-in rules and default limits, no paths: for judging machines already read (the
    /// fleet simulator, tests).
    pub fn builtin() -> ReaderConfig {
        ReaderConfig {
            paths: Vec::new(),
            rules: Rules::builtin(),
            labels: LabelFrom::Auto,
            print_rules: false,
            thresholds: Thresholds::default(),
        }
    }
}

/// A baseline loaded for `--baseline`: the file, its expectations and its rules.
#[derive(Debug, Clone)]
pub struct BaselineRef {
    /// The file as given.
    pub path: PathBuf,
    /// What it expects.
    pub baseline: Baseline,
    /// The rules it was learned with.
    pub rules: Rules,
}

/// Why the readers could not judge anything.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A path given on the command line cannot be read (a usage error).
    #[error("{0}")]
    Path(String),
    /// Nothing to judge: no document among the inputs.
    #[error("{0}")]
    Empty(String),
}

/// Reads the inputs into machines: every file, in every form; what cannot be read is a machine
/// `unreadable` with the reason. No input at all is an error.
fn read_machines(
    reader: &ReaderConfig,
    keep_documents: bool,
) -> Result<(Vec<Machine>, Vec<IdentityNote>), ReadError> {
    let inputs = read::expand(&reader.paths).map_err(ReadError::Path)?;
    let read = read::load_all_as(&inputs, |l| {
        machine::machine_from(l, keep_documents, &reader.thresholds)
    });
    if read.is_empty() {
        let what: Vec<String> = reader
            .paths
            .iter()
            .map(|p| format!("'{}'", p.display()))
            .collect();
        return Err(ReadError::Empty(format!(
            "no document in {}: give files or directories that hold health_check's documents \
             (*.json)",
            what.join(", ")
        )));
    }
    Ok(machine::settle(read, reader.labels))
}

/// Reads the inputs and compares them. `keep_documents` keeps our documents on the machines (the
/// HTML report draws them).
pub fn build(
    reader: &ReaderConfig,
    baseline: Option<&BaselineRef>,
    keep_documents: bool,
) -> Result<(FleetReport, Vec<Machine>), ReadError> {
    let (machines, identity) = read_machines(reader, keep_documents)?;
    let (mut report, machines) = judge(machines, reader, baseline);
    report.identity = identity;
    Ok((report, machines))
}

/// Compares machines already read (the fleet simulator builds them): groups, compare, drift,
/// blame, the accounting and the baseline, and the report.
pub fn judge(
    mut machines: Vec<Machine>,
    reader: &ReaderConfig,
    baseline: Option<&BaselineRef>,
) -> (FleetReport, Vec<Machine>) {
    let inputs = machines.len();
    aggregates_by_client_models(&mut machines);
    let groups = compare::group(&mut machines);
    let mut cache = compare::RuleCache::new(&reader.rules);
    let (group_entries, mut findings) = compare::compare(&mut machines, &groups, &mut cache);
    findings.extend(super::drift::findings(&machines, &groups, &reader.rules));
    let mut blamed = blame::blame(&mut machines, &mut cache);
    findings.extend(std::mem::take(&mut blamed.findings));
    if let Some(b) = baseline {
        apply_baseline(&mut machines, b);
    }
    findings.extend(super::shared::findings(&mut machines, &groups));
    for f in &mut findings {
        f.headline = headline::of(f);
    }
    let mut findings = excuse_aggregates(&mut machines, findings, &blamed.explained);
    account(&mut machines, &findings, &blamed.explained);
    account_not_compared(&mut machines);
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(
                b.deviation_pct
                    .unwrap_or(0.0)
                    .abs()
                    .total_cmp(&a.deviation_pct.unwrap_or(0.0).abs()),
            )
            .then(a.machine.cmp(&b.machine))
    });
    let report = FleetReport {
        fleet_report: FleetInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            generated_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            inputs,
            rules_source: reader.rules.source.clone(),
            rules: reader.rules.specs(),
            baseline: baseline.map(|b| b.path.display().to_string()),
            labels: reader.labels.describe().to_string(),
        },
        matrix: compare::matrix(&machines),
        machines: machines.iter().map(|m| m.entry.clone()).collect(),
        groups: group_entries,
        findings,
        resolve: blamed.resolve,
        identity: Vec::new(),
    };
    (report, machines)
}

/// A server's aggregate bandwidth (all its clients at once) is compared only with servers whose
/// clients are alike: as many, of the same models. Its basis gains the clients' models (`unknown`
/// for a client without a document), so four clients of a slower model never make a server
/// look slow beside servers of four fast ones.
fn aggregates_by_client_models(machines: &mut [Machine]) {
    let index = compare::client_index(machines);
    let model = |name: &str| -> String {
        index
            .get(name)
            .and_then(|&c| machines[c].entry.sku.as_ref())
            .map_or("unknown".to_string(), |s| s.label())
    };
    let bases: Vec<Option<String>> = machines
        .iter()
        .map(|m| {
            if m.aggregate_clients.is_empty() {
                return None;
            }
            let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
            for c in &m.aggregate_clients {
                *counts.entry(model(c)).or_default() += 1;
            }
            let models: Vec<String> = counts
                .into_iter()
                .map(|(model, n)| format!("{n} x {model}"))
                .collect();
            Some(format!("client models: {}", models.join("; ")))
        })
        .collect();
    for (m, models) in machines.iter_mut().zip(bases) {
        let Some(models) = models else { continue };
        for f in m
            .figures
            .iter_mut()
            .filter(|f| std::ptr::eq(f.family, &crate::wire::figures::AGGREGATE))
        {
            f.basis = format!("{}, {models}", f.basis).into();
        }
    }
}

/// A server's aggregate (all clients at once) is slow when a client or a path is: an aggregate
/// finding on a server some of whose client paths a finding explains is not the server's fault.
/// It is kept as a reason on the server, and fails nothing.
fn excuse_aggregates(
    machines: &mut [Machine],
    findings: Vec<Finding>,
    explained: &BTreeSet<(usize, usize, String)>,
) -> Vec<Finding> {
    let by_label: HashMap<String, usize> = machines
        .iter()
        .enumerate()
        .map(|(i, m)| (m.entry.label.clone(), i))
        .collect();
    let mut kept = Vec::with_capacity(findings.len());
    for f in findings {
        let server = by_label.get(&f.machine).copied();
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
fn account(
    machines: &mut [Machine],
    findings: &[Finding],
    explained: &BTreeSet<(usize, usize, String)>,
) {
    let by_label: HashMap<String, usize> = machines
        .iter()
        .enumerate()
        .map(|(i, m)| (m.entry.label.clone(), i))
        .collect();
    // Suspect findings raised their candidates to `suspect` already (blame).
    for f in findings
        .iter()
        .filter(|f| !matches!(f.scope, Scope::Link | Scope::Group) && f.suspect.is_none())
    {
        let Some(&i) = by_label.get(&f.machine) else {
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
    let clients = compare::client_index(machines);
    let paths: BTreeSet<(usize, usize)> = explained.iter().map(|(a, b, _)| (*a, *b)).collect();
    // A client whose own checks fail on most of its paths explains a failing path to it from a
    // machine whose own checks do not: the path's other end explains it away.
    let failing_most: BTreeSet<usize> = machines
        .iter()
        .enumerate()
        .filter(|(_, m)| super::shared::fails_on_most_paths(m))
        .map(|(i, _)| i)
        .collect();
    let failed_by_all = failed_by_every_measurer(machines, &clients, &failing_most);
    for (i, machine) in machines.iter_mut().enumerate() {
        let checks = std::mem::take(&mut machine.client_checks);
        for c in checks.into_iter().filter(ClientCheck::counts) {
            let client = clients.get(&c.client).copied();
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

/// The clients whose every measurer (two at least, each passing most of its other paths) fails
/// its own check about them, with how many measured them: several machines fine elsewhere agree,
/// so the client is at fault, whatever a comparison could say (a model with two machines, one
/// slow, has no level to compare with). Each fails for it, and their checks are put down to it.
fn failed_by_every_measurer(
    machines: &mut [Machine],
    clients: &HashMap<String, usize>,
    failing_most: &BTreeSet<usize>,
) -> BTreeMap<usize, usize> {
    let mut measured_by: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    let mut failed_by: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    for (i, m) in machines.iter().enumerate() {
        for j in m
            .figures
            .iter()
            .filter(|f| f.family.per_client() && f.family.section == Section::Network)
            .filter_map(|f| clients.get(f.client()?).copied())
            .filter(|&j| j != i)
        {
            measured_by.entry(j).or_default().insert(i);
        }
        for j in m
            .client_checks
            .iter()
            .filter(|c| c.status == Status::Fail && c.origin == Origin::Run)
            .filter_map(|c| clients.get(&c.client).copied())
            .filter(|&j| j != i)
        {
            failed_by.entry(j).or_default().insert(i);
        }
    }
    let out: BTreeMap<usize, usize> = failed_by
        .into_iter()
        .filter(|(j, by)| {
            by.len() >= 2
                && measured_by.get(j) == Some(by)
                && by.iter().all(|i| !failing_most.contains(i))
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
fn account_not_compared(machines: &mut [Machine]) {
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

/// Judges every machine with figures by the baseline. A check about one path joins the
/// machine's path checks (a finding or a group may explain it; [`account`] decides); of the
/// others, a failed check fails the machine, a warned one warns it, an inconclusive one makes it
/// inconclusive.
fn apply_baseline(machines: &mut [Machine], b: &BaselineRef) {
    let file = b.path.display().to_string();
    for m in machines.iter_mut().filter(|m| !m.figures.is_empty()) {
        let mut checks = baseline::judge(
            &m.figures,
            m.entry.sku.as_ref(),
            &b.baseline,
            &b.rules,
            &file,
        );
        super::noise::mark_interfered(&mut checks, &m.interfered);
        let status_of = |c: &crate::wire::check::Check| match c.status {
            Status::Fail => MachineStatus::Fail,
            Status::Warn => MachineStatus::Warn,
            Status::Inconclusive => MachineStatus::Inconclusive,
            Status::Pass | Status::Skip => MachineStatus::Ok,
        };
        let paths: Vec<ClientCheck> = checks.iter().filter_map(ClientCheck::of_baseline).collect();
        let about_paths: BTreeSet<String> = paths.iter().map(|p| p.check.to_string()).collect();
        let own = |c: &&crate::wire::check::Check| !about_paths.contains(&c.name.to_string());
        let others = checks
            .iter()
            .filter(own)
            .filter(|c| status_of(c) > MachineStatus::Ok)
            .count();
        if let Some(worst) = checks.iter().filter(own).max_by_key(|c| status_of(c)) {
            let status = status_of(worst);
            if status > MachineStatus::Ok {
                m.raise(
                    status,
                    format!(
                        "baseline check {} {}: {} ({others} baseline check(s) not passed)",
                        worst.name,
                        worst.status.as_str(),
                        worst.message
                    ),
                );
            }
        }
        m.client_checks.extend(paths);
        m.entry.baseline_checks = checks;
    }
}

/// Whether the report holds a failure (`--strict` exits 3 then): a machine that fails, whose run
/// failed or cannot be read, or a finding of severity fail that is not inconclusive. Warnings,
/// machines alone and inconclusive ones are reported and do not fail the run.
pub fn anything_failed(report: &FleetReport) -> bool {
    report.machines.iter().any(|m| {
        matches!(
            m.status,
            MachineStatus::Fail | MachineStatus::Failed | MachineStatus::Unreadable
        )
    }) || report
        .findings
        .iter()
        .any(|f| f.severity == Severity::Fail && f.inconclusive.is_none() && f.suspect.is_none())
}

/// `health_check baseline`: learns per-model expectations and writes them as YAML.
pub fn learn(reader: &ReaderConfig) -> Result<(Learned, Vec<Machine>), ReadError> {
    let (mut machines, _) = read_machines(reader, false)?;
    let groups = compare::group(&mut machines);
    let learned = baseline::learn_saying_what_not(&machines, &groups, &reader.rules);
    Ok((learned, machines))
}

#[cfg(test)]
mod tests;
