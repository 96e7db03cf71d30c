//! The fleet report: what `health_check compare` prints, a contract like the document. Its JSON
//! Schema (`benchpress/fleet_report.schema.json`) is generated from these types by
//! `health_check schema --fleet`, and the HTML report reads it back through them.

use super::identity::MachineIdentity;
use super::rule::{RuleSpec, Severity};
use crate::wire::document::Check;
use crate::wire::figures::Direction;
use crate::wire::nullable::nullable;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The model machines are grouped by: what they were bought as (CPU model, sockets, cores per
/// socket, NUMA nodes), never how much of it works today: memory and CPUs online are figures
/// judged within the group, so a machine that lost a DIMM is compared with its siblings.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[schemars(deny_unknown_fields)]
pub struct Sku {
    /// CPU model name.
    #[schemars(required, transform = nullable)]
    pub cpu_model: Option<String>,
    /// Sockets (unknown for DCPerf's documents).
    #[schemars(required, transform = nullable)]
    pub sockets: Option<usize>,
    /// Physical cores per socket (unknown for DCPerf's documents).
    #[schemars(required, transform = nullable)]
    pub cores_per_socket: Option<usize>,
    /// NUMA nodes (unknown for DCPerf's documents).
    #[schemars(required, transform = nullable)]
    pub numa_nodes: Option<usize>,
}

impl Sku {
    /// One line for people: `AMD EPYC 9654, 2 sockets x 96 cores, 8 nodes`.
    pub fn label(&self) -> String {
        let n = |v: Option<usize>| v.map_or("?".to_string(), |v| v.to_string());
        format!(
            "{}, {} sockets x {} cores, {} nodes",
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            n(self.sockets),
            n(self.cores_per_socket),
            n(self.numa_nodes),
        )
    }

    /// The model a machine identity describes: the CPU model alone when the identity knows no
    /// topology (benchpress's envelope), which groups with nothing until the topology is known.
    /// Every path that needs a machine's model (compare's groups, a run's `--baseline`, a merged
    /// document's) takes it from here.
    pub fn of(id: &MachineIdentity) -> Sku {
        if id.sockets == 0 {
            return Sku {
                cpu_model: id.cpu_model.clone(),
                ..Sku::default()
            };
        }
        Sku {
            cpu_model: id.cpu_model.clone(),
            sockets: Some(id.sockets),
            cores_per_socket: Some(id.cores_per_socket),
            numa_nodes: Some(id.numa_nodes),
        }
    }

    /// Whether every part of the model is known.
    pub fn complete(&self) -> bool {
        self.cpu_model.is_some()
            && self.sockets.is_some()
            && self.cores_per_socket.is_some()
            && self.numa_nodes.is_some()
    }

    /// Whether `other` may be the same model with fewer facts known: the CPU model is known to
    /// both and equal, and every other part both know is equal.
    pub fn compatible(&self, other: &Sku) -> bool {
        let same = |a: &Option<usize>, b: &Option<usize>| a.is_none() || b.is_none() || a == b;
        self.cpu_model.is_some()
            && self.cpu_model == other.cpu_model
            && same(&self.sockets, &other.sockets)
            && same(&self.cores_per_socket, &other.cores_per_socket)
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
    /// The measurements that would settle the suspects: a second round runs them
    /// (`health_check -r server -c TO` on FROM) and `compare` judges all rounds together.
    #[serde(default)]
    pub resolve: Vec<Resolve>,
    /// Latency and bandwidth between machines of the inputs (pairs and mesh runs), for up to
    /// 256 of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<Matrix>,
    /// Documents counted by the machine that wrote them: copies counted once, several runs of one
    /// machine merged, identity clashes, second rounds that belong to no host of the fleet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identity: Vec<IdentityNote>,
}

/// What was done to give each machine one vote.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[schemars(deny_unknown_fields)]
pub struct IdentityNote {
    /// What it is.
    pub kind: IdentityKind,
    /// The files concerned.
    pub files: Vec<String>,
    /// One line a person can act on.
    pub message: String,
}

/// The kinds of [`IdentityNote`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IdentityKind {
    /// A copy of a run already read (same machine id, boot and start): counted once.
    Duplicate,
    /// Several runs of one machine: one machine, each figure their median.
    Runs,
    /// Two documents of different machine ids claim one host name or address: neither is
    /// trusted for the other's paths.
    Clash,
    /// A second round's document that belongs to no host of the fleet, or does not match its
    /// host's identity: ignored.
    Ignored,
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

/// A machine's verdict in the fleet, from best to worst; a machine takes the worst that applies.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum MachineStatus {
    /// Compared with its siblings and as good as they are; its own checks pass.
    Ok,
    /// Nothing to compare it with: the only machine of its model (or its model is unknown).
    Alone,
    /// Its figures were measured under interference (steal, other load, a CPU quota, heat):
    /// neither fine nor at fault; measure it again on a quiet machine.
    Inconclusive,
    /// A candidate for a poor measurement the data cannot pin on one machine or path (a client
    /// measured by one server only): fails nothing; the report's `resolve` says which
    /// measurement would settle it.
    Suspect,
    /// Findings of severity warn, or a section interrupted.
    Warn,
    /// A finding of severity fail, a failed check of its own or a failed baseline check.
    Fail,
    /// Its own run failed: a section failed (its reasons kept), or it holds no figure.
    Failed,
    /// Its file cannot be trusted: not a document this version reads, a section that does not
    /// parse, or an impossible figure.
    Unreadable,
}

impl MachineStatus {
    /// The status as written.
    pub fn as_str(self) -> &'static str {
        match self {
            MachineStatus::Ok => "ok",
            MachineStatus::Alone => "alone",
            MachineStatus::Inconclusive => "inconclusive",
            MachineStatus::Suspect => "suspect",
            MachineStatus::Warn => "warn",
            MachineStatus::Fail => "fail",
            MachineStatus::Failed => "failed",
            MachineStatus::Unreadable => "unreadable",
        }
    }

    /// Every status, best first.
    pub const ALL: [MachineStatus; 8] = [
        MachineStatus::Ok,
        MachineStatus::Alone,
        MachineStatus::Inconclusive,
        MachineStatus::Suspect,
        MachineStatus::Warn,
        MachineStatus::Fail,
        MachineStatus::Failed,
        MachineStatus::Unreadable,
    ];
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
    /// No document: a machine known only from others' measurements of it (a client in DCPerf's
    /// star layout), judged on that evidence.
    None,
    /// Not readable.
    Unknown,
}

/// One machine (one input document, or a client others measured).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MachineEntry {
    /// Its name in this report: the host name, or the file name where host names repeat.
    pub label: String,
    /// The file it was read from (empty for a machine with no document).
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
    /// Why it has its status: failed or interrupted sections, an unreadable file, its own failed
    /// checks, being alone, interference, others' evidence about it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Figures it has.
    pub figures: usize,
    /// Figures its group's other machines have and it lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_figures: Vec<String>,
    /// Figures not compared because it measured them differently from its group, and how.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_compared: Vec<String>,
    /// Its own checks that failed, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks_failed: Vec<String>,
    /// Checks against the baseline (with `--baseline`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_checks: Vec<Check>,
    /// When the run started, seconds since the Unix epoch.
    #[schemars(required, transform = nullable)]
    pub started_unix: Option<u64>,
    /// The machine's id (an application-specific hash of /etc/machine-id), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    /// The boot the document was written in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
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
    /// Machines behind them.
    pub machines: usize,
    /// What these figures were measured with (`profile=standard, ...`).
    pub basis: String,
    /// Median.
    pub median: f64,
    /// Median absolute deviation from the median.
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// What a finding blames.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The machine itself: a figure of its own, or every path through it (as the one that
    /// measured and as the one measured).
    Machine,
    /// The machine as the one that measured: all of its clients were poor from it.
    Server,
    /// The machine as the one measured: every machine that measured it found it poor.
    Client,
    /// The path between two machines (`link`): poor while both ends are fine elsewhere, or the
    /// only measurement of both, which cannot tell its ends apart. Neither end fails for it.
    Link,
    /// A whole model group: (nearly) every machine of it falls short of the same yardstick on
    /// its paths, so a cause they share (a switch, the fabric, the test's settings) is likelier
    /// than as many faults. `machine` names the model, `members` the machines; none fails for it.
    Group,
}

/// A figure worse than its reference, or a fact of a machine's configuration that differs from
/// its siblings' (`fact`; then `value` and `median` are null).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Finding {
    /// The machine it blames (by label); for a link, its first end; for a group, the model.
    pub machine: String,
    /// The figure's dotted name (`network.bandwidth.*` when it is about all clients).
    pub figure: String,
    /// The client, for a per-client figure about one client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// What it blames.
    pub scope: Scope,
    /// The two ends of the path, for a link finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<Vec<String>>,
    /// The machines that share the shortfall, for a group finding (by label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<String>>,
    /// The figure (the median of the machine's values for a server, client or machine finding
    /// over measurements); null for a fact.
    #[schemars(required, transform = nullable)]
    pub value: Option<f64>,
    /// The reference: the group's median; null for a fact.
    #[schemars(required, transform = nullable)]
    pub median: Option<f64>,
    /// For configuration drift: the fact, this machine's value and its siblings'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact: Option<FactDrift>,
    /// Unit.
    pub unit: String,
    /// How far from the median, % of the median (negative: below); null for a zero median.
    #[schemars(required, transform = nullable)]
    pub deviation_pct: Option<f64>,
    /// 0.6745 x (value - median) / MAD; null where MAD is 0.
    #[schemars(required, transform = nullable)]
    pub robust_z: Option<f64>,
    /// `warn` or `fail`.
    pub severity: Severity,
    /// Set when the figure was measured under interference: what interfered. Such a finding
    /// neither fails nor warns its machine; it makes it `inconclusive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
    /// Set when the data cannot tell who is to blame for a poor path: the machines that may be
    /// at fault besides the path between `link`'s ends. Such a finding fails nothing; it makes
    /// each of them `suspect`, and the report's `resolve` says what would settle it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect: Option<Vec<String>>,
    /// Who, what and how much, in at most 100 characters (`wire::headline`); `message` holds
    /// the evidence. Empty in reports older than 2026-12-05.
    #[serde(default)]
    pub headline: String,
    /// The evidence: what was measured, against what, and where to look.
    pub message: String,
}

impl Finding {
    /// Its headline, or for a report older than headlines its message.
    pub fn title(&self) -> &str {
        if self.headline.is_empty() {
            &self.message
        } else {
            &self.headline
        }
    }

    /// Whom it is about, for people: a machine, a link's two ends (`a<->b`), or a model and
    /// how many of its machines share it, the count first so a narrow column keeps it
    /// (`12 machines of model 'A'`).
    pub fn who(&self) -> String {
        match (&self.link, &self.members) {
            (Some(ends), _) => ends.join("<->"),
            (None, Some(members)) => format!("{} machines of {}", members.len(), self.machine),
            (None, None) => self.machine.clone(),
        }
    }
}

/// One measurement that would tell a suspect's candidates apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Resolve {
    /// The machine to lead the test (the server), by label.
    pub from: String,
    /// The machine to measure (the client), by label.
    pub to: String,
    /// What it settles.
    pub why: String,
}

/// A fact of a machine's configuration that differs from most of its siblings'.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FactDrift {
    /// The fact (`kernel.cmdline`, `cpu.microcode`, `nic.eth0.firmware`).
    pub name: String,
    /// This machine's value.
    pub value: String,
    /// The value most machines of its model have.
    pub majority: String,
    /// How many machines of its model have the majority's value.
    pub agree: usize,
    /// How many machines of its model report the fact.
    pub of: usize,
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
