//! Readers of many documents: `compare` (a fleet against itself), `baseline` (per-SKU
//! expectations learned from a fleet) and the fleet report they write. The binary measures one
//! machine; fan-out over a fleet is Ansible's (`ansible/`), and these readers gather the results.

use super::baseline::{self, Baseline};
use super::compare;
use super::machine::{self, LabelFrom, Machine};
use super::rules::Rules;
use crate::wire::fleet::{FleetInfo, FleetReport, MachineStatus};
use crate::wire::read;
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
}

impl PartialEq for ReaderConfig {
    fn eq(&self, other: &Self) -> bool {
        self.paths == other.paths
            && self.rules.source == other.rules.source
            && self.labels == other.labels
            && self.print_rules == other.print_rules
    }
}

impl Eq for ReaderConfig {}

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

/// Reads the inputs and compares them. `keep_documents` keeps our documents on the machines (the
/// HTML report draws them). `Err` only when an input path cannot be read at all.
pub fn build(
    reader: &ReaderConfig,
    baseline: Option<&BaselineRef>,
    keep_documents: bool,
) -> Result<(FleetReport, Vec<Machine>), String> {
    let files = read::expand(&reader.paths)?;
    let loaded = read::load_all(&files);
    let mut machines = machine::machines_from(loaded, reader.labels, keep_documents);
    let groups = compare::group(&mut machines);
    let (group_entries, findings) = compare::compare(&mut machines, &groups, &reader.rules);
    if let Some(b) = baseline {
        apply_baseline(&mut machines, b);
    }
    let report = FleetReport {
        fleet_report: FleetInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            generated_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            inputs: files.len(),
            rules_source: reader.rules.source.clone(),
            rules: reader.rules.specs(),
            baseline: baseline.map(|b| b.path.display().to_string()),
            labels: reader.labels.describe().to_string(),
        },
        matrix: compare::matrix(&machines),
        machines: machines.iter().map(|m| m.entry.clone()).collect(),
        groups: group_entries,
        findings,
    };
    Ok((report, machines))
}

/// Judges every readable machine by the baseline; a failed check fails the machine.
fn apply_baseline(machines: &mut [Machine], b: &BaselineRef) {
    let file = b.path.display().to_string();
    for m in machines.iter_mut().filter(|m| !m.figures.is_empty()) {
        let checks = baseline::judge(
            &m.figures,
            m.entry.sku.as_ref(),
            &b.baseline,
            &b.rules,
            &file,
        );
        let worst = checks
            .iter()
            .map(|c| match c.status {
                crate::wire::document::Status::Fail => MachineStatus::Fail,
                crate::wire::document::Status::Warn => MachineStatus::Warn,
                _ => MachineStatus::Ok,
            })
            .max()
            .unwrap_or(MachineStatus::Ok);
        if m.entry.status < MachineStatus::Failed {
            m.entry.status = m.entry.status.max(worst);
        }
        m.entry.baseline_checks = checks;
    }
}

/// Whether the report flags anything (`--strict` exits 3 then).
pub fn anything_flagged(report: &FleetReport) -> bool {
    !report.findings.is_empty()
        || report
            .machines
            .iter()
            .any(|m| m.status != MachineStatus::Ok)
}

/// `health_check baseline`: learns per-SKU expectations and writes them as YAML.
pub fn learn(reader: &ReaderConfig) -> Result<(Baseline, Vec<Machine>), String> {
    let files = read::expand(&reader.paths)?;
    let mut machines = machine::machines_from(read::load_all(&files), reader.labels, false);
    let groups = compare::group(&mut machines);
    Ok((Baseline::learn(&machines, &groups, &reader.rules), machines))
}
