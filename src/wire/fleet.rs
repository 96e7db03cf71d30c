//! The fleet report: what `health_check compare` prints, a contract like the document. Its JSON
//! Schema (`benchpress/fleet_report.schema.json`) is generated from these types by
//! `health_check schema --fleet`, and the HTML report reads it back through them.

use super::rule::{RuleSpec, Severity};
use crate::wire::document::{Check, nullable};
use crate::wire::figures::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The machine model machines are grouped by: what they are, not how they are set up.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[schemars(deny_unknown_fields)]
pub struct Sku {
    /// CPU model name.
    #[schemars(required, transform = nullable)]
    pub cpu_model: Option<String>,
    /// Online logical CPUs.
    #[schemars(required, transform = nullable)]
    pub logical_cpus: Option<usize>,
    /// Sockets (unknown for DCPerf's documents).
    #[schemars(required, transform = nullable)]
    pub sockets: Option<usize>,
    /// NUMA nodes (unknown for DCPerf's documents).
    #[schemars(required, transform = nullable)]
    pub numa_nodes: Option<usize>,
    /// Memory, rounded to whole GiB.
    #[schemars(required, transform = nullable)]
    pub mem_gib: Option<u64>,
}

impl Sku {
    /// One line for people: `AMD EPYC 9654, 384 CPUs, 2 sockets, 8 nodes, 1512 GiB`.
    pub fn label(&self) -> String {
        let n =
            |v: Option<usize>, what: &str| v.map_or(format!("? {what}"), |v| format!("{v} {what}"));
        format!(
            "{}, {}, {}, {}, {}",
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            n(self.logical_cpus, "CPUs"),
            n(self.sockets, "sockets"),
            n(self.numa_nodes, "nodes"),
            self.mem_gib
                .map_or("? GiB".to_string(), |g| format!("{g} GiB")),
        )
    }

    /// The model a system section describes.
    pub fn of_system(sys: &crate::wire::system::SystemPart) -> Sku {
        Sku {
            cpu_model: sys.cpu_model.clone(),
            logical_cpus: Some(sys.logical_cpus),
            sockets: Some(sys.sockets),
            numa_nodes: Some(sys.numa_nodes.len().max(1)),
            mem_gib: sys.mem_gib(),
        }
    }

    /// Whether `other` may be the same model with fewer facts known: every field both know is
    /// equal, and the model, CPU count and memory are known to both.
    pub fn compatible(&self, other: &Sku) -> bool {
        let same = |a: &Option<usize>, b: &Option<usize>| a.is_none() || b.is_none() || a == b;
        self.cpu_model.is_some()
            && self.cpu_model == other.cpu_model
            && self.logical_cpus.is_some()
            && self.logical_cpus == other.logical_cpus
            && self.mem_gib.is_some()
            && self.mem_gib == other.mem_gib
            && same(&self.sockets, &other.sockets)
            && same(&self.numa_nodes, &other.numa_nodes)
    }
}

/// The whole report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, title = "health_check fleet report")]
pub struct FleetReport {
    /// About this comparison.
    pub fleet_report: FleetInfo,
    /// Every input, in the order read: machines that failed or lack figures are listed too.
    pub machines: Vec<MachineEntry>,
    /// Machines of one SKU, compared with each other.
    pub groups: Vec<GroupEntry>,
    /// Figures worse than their reference, worst first.
    pub findings: Vec<Finding>,
    /// Latency and bandwidth between machines of the inputs (pairs and mesh runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<Matrix>,
}

/// About this comparison.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FleetInfo {
    /// health_check's version.
    pub version: String,
    /// When the report was made, seconds since the Unix epoch.
    pub generated_unix: u64,
    /// Files read (fleet reports among them are skipped).
    pub inputs: usize,
    /// Where the rules came from: `built-in` or a file.
    pub rules_source: String,
    /// The rules used.
    pub rules: Vec<RuleSpec>,
    /// The baseline file runs were also judged by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// How machines are named: by host name, or by file name where host names repeat.
    pub labels: String,
}

/// A machine's verdict in the fleet.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum MachineStatus {
    /// No finding, no failed section.
    Ok,
    /// Findings of severity warn, or a section that did not run to the end.
    Warn,
    /// A finding of severity fail, or a failed baseline check.
    Fail,
    /// The run failed: no section produced figures.
    Failed,
    /// The file is not a document this version reads.
    Unreadable,
}

impl MachineStatus {
    /// The status as written.
    pub fn as_str(self) -> &'static str {
        match self {
            MachineStatus::Ok => "ok",
            MachineStatus::Warn => "warn",
            MachineStatus::Fail => "fail",
            MachineStatus::Failed => "failed",
            MachineStatus::Unreadable => "unreadable",
        }
    }
}

/// Where a document came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DocumentKind {
    /// One of ours.
    #[serde(rename = "health_check")]
    HealthCheck,
    /// DCPerf's own health_check.
    Dcperf,
    /// Not readable.
    Unknown,
}

/// One machine (one input document).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MachineEntry {
    /// Its name in this report: the host name, or the file name where host names repeat.
    pub label: String,
    /// The file it was read from.
    pub source: String,
    /// The host name the document gives.
    #[schemars(required, transform = nullable)]
    pub hostname: Option<String>,
    /// Whose document it is.
    pub kind: DocumentKind,
    /// Its model.
    #[schemars(required, transform = nullable)]
    pub sku: Option<Sku>,
    /// The index of its group in `groups`.
    #[schemars(required, transform = nullable)]
    pub group: Option<usize>,
    /// The verdict.
    pub status: MachineStatus,
    /// Why it is not `ok` beyond its findings: failed or interrupted sections, unreadable file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Figures it has.
    pub figures: usize,
    /// Figures its group's other machines have and it lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_figures: Vec<String>,
    /// Its own checks that failed, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks_failed: Vec<String>,
    /// Checks against the baseline (with `--baseline`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_checks: Vec<Check>,
    /// When the run started, seconds since the Unix epoch.
    #[schemars(required, transform = nullable)]
    pub started_unix: Option<u64>,
}

/// Machines of one SKU and the reference figures they were compared with.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GroupEntry {
    /// The model.
    pub sku: Sku,
    /// The model, for people.
    pub label: String,
    /// Its machines, by label.
    pub machines: Vec<String>,
    /// Per figure (per-client figures pooled over clients): the reference statistics.
    pub figures: Vec<FigureStats>,
}

/// Reference statistics of one figure in one group.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FigureStats {
    /// Dotted name (without the client for per-client figures).
    pub figure: String,
    /// Unit.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// Values (machines, or machine-client pairs).
    pub count: usize,
    /// Median.
    pub median: f64,
    /// Median absolute deviation from the median.
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One figure of one machine (with one client, for per-client figures).
    Figure,
    /// Every client of this machine was slow: the machine's side is the likely cause.
    Server,
    /// Every machine that measured this one found it slow: its side is the likely cause.
    Client,
}

/// A figure worse than its reference.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Finding {
    /// The machine it names (by label).
    pub machine: String,
    /// The figure's dotted name (`network.bandwidth.*` when it is about all clients).
    pub figure: String,
    /// The client, for a per-client figure about one client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// What it is about.
    pub scope: Scope,
    /// The figure (the median of the machine's values for a server or client finding).
    pub value: f64,
    /// The reference: the group's median.
    pub median: f64,
    /// Unit.
    pub unit: String,
    /// How far from the median, % of the median (negative: below).
    #[schemars(required, transform = nullable)]
    pub deviation_pct: Option<f64>,
    /// 0.6745 x (value - median) / MAD; null where MAD is 0.
    #[schemars(required, transform = nullable)]
    pub robust_z: Option<f64>,
    /// `warn` or `fail`.
    pub severity: Severity,
    /// One line a person can act on.
    pub message: String,
}

/// Figures between machines: row = the machine that measured, column = the one measured.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Matrix {
    /// Machines, by label, in row and column order.
    pub machines: Vec<String>,
    /// Receiver goodput from row to column, Gbit/s.
    pub bandwidth_gbps: Vec<Vec<Option<f64>>>,
    /// Ping RTT between row and column, ms.
    pub latency_ms: Vec<Vec<Option<f64>>>,
}

/// The JSON Schema of [`FleetReport`], as `benchpress/fleet_report.schema.json` holds it.
pub fn fleet_schema() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(FleetReport))
        .expect("a generated schema is JSON");
    schema["$id"] =
        "https://github.com/health-check/health_check/benchpress/fleet_report.schema.json".into();
    schema["description"] = "What 'health_check compare' prints on stdout (docs/fleet.md). \
        Generated from the wire types by 'health_check schema --fleet'; do not edit by hand."
        .into();
    schema
}
