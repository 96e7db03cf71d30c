//! Readers of many documents: `compare` (a fleet against itself), `baseline` (per-SKU
//! expectations learned from a fleet) and the fleet report they write. The binary measures one
//! machine; fan-out over a fleet is Ansible's (`ansible/`), and these readers gather the results.

use super::baseline::{self, BaselineRef, Learned};
use super::checks::Thresholds;
use super::machine::{LabelFrom, Machine, documents};
use super::rules::Rules;
use super::view::View;
use super::{account, blame, compare};
use crate::wire::fleet::{
    DocumentKind, FleetInfo, FleetReport, IdentityKind, IdentityNote, MachineEntry, MachineStatus,
};
use crate::wire::headline;
use crate::wire::read::{self, Content};
use crate::wire::rule::Severity;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
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
/// Also how many files were read (before copies and runs of one machine were merged).
fn read_machines(
    reader: &ReaderConfig,
    keep_documents: bool,
) -> Result<(Vec<Machine>, Vec<IdentityNote>, usize), ReadError> {
    let inputs = read::expand(&reader.paths).map_err(ReadError::Path)?;
    // Only a lone machine's document is drawn (its own page; a fleet's page draws none, and
    // keeping every one took 43 KiB a machine): the first read is kept, and a lone machine
    // whose document was not that one is read again below.
    let first = AtomicBool::new(true);
    let read = read::load_all_as(&inputs, |l| {
        let keep = keep_documents && first.swap(false, Ordering::Relaxed);
        documents::machine_from(l, keep, &reader.thresholds)
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
    let files = read.len();
    let (mut machines, mut notes) = documents::settle(read, reader.labels);
    // What needs a person first: the lists are cut on screen, and a copied directory's many
    // copies must not hide a clash.
    notes.sort_by_key(|n| match n.kind {
        IdentityKind::Clash => 0,
        IdentityKind::Ignored => 1,
        IdentityKind::Runs => 2,
        IdentityKind::Duplicate => 3,
    });
    if keep_documents
        && let [lone] = machines.as_mut_slice()
        && lone.document.is_none()
        && lone.entry.kind == DocumentKind::HealthCheck
    {
        // Its file among the inputs, as a path (a name that is not UTF-8 is written lossily in
        // the source).
        lone.document = inputs
            .iter()
            .filter(|i| i.path().display().to_string() == lone.entry.source)
            .find_map(|i| match read::load(i.path())?.content {
                Ok(Content::Ours(doc)) => Some(doc),
                _ => None,
            });
    }
    Ok((machines, notes, files))
}

/// Reads the inputs and compares them. `keep_documents` keeps a lone machine's document (`report`
/// draws its own page, or prints its JUnit or Prometheus text).
pub fn build(
    reader: &ReaderConfig,
    baseline: Option<&BaselineRef>,
    keep_documents: bool,
) -> Result<(FleetReport, Vec<Machine>), ReadError> {
    let (machines, identity, files) = read_machines(reader, keep_documents)?;
    let (mut report, machines) = judge(machines, reader, baseline);
    report.identity = identity;
    report.fleet_report.inputs = files;
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
    let view = View::of(&mut machines);
    // The baseline judges each machine's figures as its own run would (a run knows nothing of
    // its clients' models): before the fleet's comparison adds them to the aggregates' basis.
    if let Some(b) = baseline {
        baseline::apply(&mut machines, b);
    }
    compare::aggregates_by_client_models(&mut machines, &view);
    let groups = compare::group(&mut machines);
    let mut cache = compare::RuleCache::new(&reader.rules);
    let (group_entries, mut findings) = compare::compare(&mut machines, &groups, &mut cache);
    findings.extend(super::drift::findings(&machines, &groups, &reader.rules));
    let mut blamed = blame::blame(&mut machines, &view, &mut cache);
    findings.extend(std::mem::take(&mut blamed.findings));
    findings.extend(super::shared::findings(&mut machines, &groups, &view));
    for f in &mut findings {
        f.headline = headline::of(f);
    }
    let mut findings =
        account::excuse_aggregates(&mut machines, findings, &blamed.explained, &view);
    account::account(&mut machines, &findings, &blamed.explained, &view);
    account::not_compared(&mut machines);
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
        matrix: compare::matrix(&machines, &view),
        machines: entries(&machines),
        groups: group_entries,
        findings,
        resolve: blamed.resolve,
        identity: Vec::new(),
    };
    (report, machines)
}

/// The machines' entries of the report, copied on all CPUs (a fleet of 100,000 spent a seventh
/// of a second here on one CPU).
fn entries(machines: &[Machine]) -> Vec<MachineEntry> {
    super::parallel::over_pieces(machines.len(), |range| {
        machines[range].iter().map(|m| m.entry.clone()).collect()
    })
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

/// A baseline learned, the machines it was learned from (one vote each) and what was done to
/// count them so ([`IdentityNote`]s: copies, runs, clashes).
pub type LearnedFrom = (Learned, Vec<Machine>, Vec<IdentityNote>);

/// `health_check baseline`: learns per-model expectations and writes them as YAML.
pub fn learn(reader: &ReaderConfig) -> Result<LearnedFrom, ReadError> {
    let (mut machines, identity, _) = read_machines(reader, false)?;
    let groups = compare::group(&mut machines);
    let learned = baseline::learn_saying_what_not(&machines, &groups, &reader.rules);
    Ok((learned, machines, identity))
}

#[cfg(test)]
mod tests;
