//! Every figure of a document as a flat list of named numbers: the one table that says, for each
//! family of figures, its dotted name, its labels, its unit and which way is better. `compare`,
//! `baseline`, the Prometheus exporter and the HTML report all read figures through here, so a
//! figure added to the document is added here once and appears everywhere.
//!
//! A figure's dotted name is its family's name followed by its label values:
//! `memory.idle_latency.FullRandom.Node-0.Node-1`, `network.bandwidth.host2`,
//! `sleepbench.calls_per_second`.

use super::dcperf::UpstreamMetrics;
use super::document::{Document, Profile, Section};
use super::identity::MachineIdentity;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Bandwidth, calls per second, IOPS.
    Higher,
    /// Latency, CPU time, loss.
    Lower,
}

impl Direction {
    /// Whether `value` is worse than `reference` in this direction.
    pub fn is_worse(self, value: f64, reference: f64) -> bool {
        match self {
            Direction::Higher => value < reference,
            Direction::Lower => value > reference,
        }
    }
}

/// A family of figures: one entry of the table.
#[derive(Debug, PartialEq)]
pub struct Family {
    /// Dotted name before the labels (`memory.idle_latency`).
    pub name: &'static str,
    /// Label names, in the order their values follow the name (`pattern`, `cpu_node`, ...).
    pub labels: &'static [&'static str],
    /// Unit for people (`ns`, `Gbit/s`).
    pub unit: &'static str,
    /// Which way is better.
    pub direction: Direction,
    /// The section of the document that measures it (`system` for what the machine has).
    pub section: Section,
    /// The Prometheus metric name, without the `health_check_` prefix, in base units
    /// (`_seconds`, `_bytes`, `_bytes_per_second`, `_ratio`), as the exposition conventions ask.
    pub prometheus: &'static str,
    /// What one `unit` is in the Prometheus metric's base unit (ms -> seconds: 0.001).
    pub prometheus_scale: f64,
    /// One line for people (Prometheus HELP, the HTML page).
    pub help: &'static str,
    /// How `compare`, `baseline` and a machine's history judge it by default (the built-in
    /// rules are made from these), or why they do not.
    pub judged: Judging,
    /// Whether another process's load can move it: measured under interference, it is then
    /// left out of references and its verdicts are inconclusive.
    pub load_moves: bool,
    /// The checks of a run that judge this family against a limit (`sleepbench.total_cpu`):
    /// whether load can move such a check is this family's `load_moves`.
    pub run_checks: &'static [&'static str],
}

/// How a family is judged against a reference by default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judging {
    /// By a built-in rule.
    Rule {
        /// How much worse than the reference is tolerated, %.
        tolerance_pct: f64,
        /// A deviation fails (else it warns).
        fails: bool,
        /// A noise floor in the figure's unit: smaller differences are never flagged.
        min_difference: Option<f64>,
        /// Only these label values (a regular expression for what follows the family's name,
        /// `(p50|p99)`); empty: every figure of the family.
        only: &'static str,
    },
    /// Not judged against a reference, and why.
    Not(&'static str),
}

const fn rule(tolerance_pct: f64, fails: bool) -> Judging {
    Judging::Rule {
        tolerance_pct,
        fails,
        min_difference: None,
        only: "",
    }
}

const fn rule_above(tolerance_pct: f64, fails: bool, min_difference: f64) -> Judging {
    Judging::Rule {
        tolerance_pct,
        fails,
        min_difference: Some(min_difference),
        only: "",
    }
}

impl Family {
    /// The Prometheus metric's unit against the figure's, for HELP:
    /// `bytes per second; the document's figure is in Gbit/s`.
    pub fn unit_note(&self) -> String {
        let last_word = |name: &'static str| name.rsplit_once('_').map_or(name, |(_, w)| w);
        let base = match self.prometheus.rsplit_once("_per_") {
            Some((what, per)) => format!("{} per {per}", last_word(what)),
            None => last_word(self.prometheus).to_string(),
        };
        format!("{base}; the document's figure is in {}", self.unit)
    }

    /// Whether the figure is per client (its last label is the client).
    pub fn per_client(&self) -> bool {
        self.labels.last() == Some(&"client")
    }
}

macro_rules! family {
    ($id:ident, $name:literal, [$($label:literal),*], $unit:literal, $dir:ident, $section:ident, $prom:literal, $scale:expr, $help:literal, $judged:expr, load_moves: $load:literal) => {
        family!($id, $name, [$($label),*], $unit, $dir, $section, $prom, $scale, $help, $judged, load_moves: $load, run_checks: []);
    };
    ($id:ident, $name:literal, [$($label:literal),*], $unit:literal, $dir:ident, $section:ident, $prom:literal, $scale:expr, $help:literal, $judged:expr, load_moves: $load:literal, run_checks: [$($check:literal),*]) => {
        /// One family of figures (see [`FAMILIES`]).
        pub static $id: Family = Family {
            name: $name,
            labels: &[$($label),*],
            unit: $unit,
            direction: Direction::$dir,
            section: Section::$section,
            prometheus: $prom,
            prometheus_scale: $scale,
            help: $help,
            judged: $judged,
            load_moves: $load,
            run_checks: &[$($check),*],
        };
    };
}

/// Bytes per second in one Gbit/s, MiB/s and GiB/s; seconds in one ms, us and ns.
const GBIT_S: f64 = 1e9 / 8.0;
const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;

family!(
    PING_LATENCY,
    "ping.latency",
    ["client"],
    "ms",
    Lower,
    Network,
    "ping_rtt_seconds",
    1e-3,
    "median ping RTT to the client (older documents: the average)",
    rule_above(50.0, false, 0.05),
    load_moves: true,
    run_checks: ["network.ping_rtt"]
);
family!(
    PING_LOSS,
    "ping.loss_pct",
    ["client"],
    "%",
    Lower,
    Network,
    "ping_loss_ratio",
    0.01,
    "ping requests lost",
    Judging::Not("loss is judged on every run against its limit (network.ping_loss_pct): a few lost packets are no level to compare"),
    load_moves: false,
    run_checks: ["network.ping_loss"]
);
family!(
    BANDWIDTH,
    "network.bandwidth",
    ["client"],
    "Gbit/s",
    Higher,
    Network,
    "network_bandwidth_bytes_per_second",
    GBIT_S,
    "TCP receiver goodput from this machine to the client",
    rule(20.0, true),
    load_moves: true,
    run_checks: ["network.bandwidth"]
);
family!(
    REVERSE_BANDWIDTH,
    "network.reverse_bandwidth",
    ["client"],
    "Gbit/s",
    Higher,
    Network,
    "network_reverse_bandwidth_bytes_per_second",
    GBIT_S,
    "TCP receiver goodput from the client to this machine",
    rule(20.0, true),
    load_moves: true,
    run_checks: ["network.reverse_symmetry"]
);
family!(
    LINK_EFFICIENCY,
    "network.link_efficiency_pct",
    ["client"],
    "%",
    Higher,
    Network,
    "network_link_efficiency_ratio",
    0.01,
    "goodput as a share of what the link can carry as TCP payload",
    rule_above(15.0, false, 5.0),
    load_moves: true,
    run_checks: ["network.link_efficiency"]
);
family!(
    RETRANSMITS,
    "network.retransmits",
    ["client"],
    "segments",
    Lower,
    Network,
    "network_retransmitted_segments",
    1.0,
    "TCP retransmits of the sender",
    Judging::Not("retransmits follow the path's other traffic and the test's length, not the machine: shown, not judged"),
    load_moves: true
);
family!(
    AGGREGATE,
    "network.aggregate_bandwidth",
    [],
    "Gbit/s",
    Higher,
    Network,
    "network_aggregate_bandwidth_bytes_per_second",
    GBIT_S,
    "TCP goodput to all clients at once",
    rule(20.0, true),
    load_moves: true
);
family!(
    CALLS,
    "sleepbench.calls_per_second",
    [],
    "calls/s",
    Higher,
    Sleep,
    "sleepbench_calls_per_second",
    1.0,
    "nanosleep calls per second, all threads",
    rule(15.0, true),
    load_moves: true
);
family!(
    CALLS_PER_THREAD,
    "sleepbench.calls_per_second_per_thread",
    [],
    "calls/s",
    Higher,
    Sleep,
    "sleepbench_thread_calls_per_second",
    1.0,
    "nanosleep calls per second per thread",
    rule(15.0, true),
    load_moves: true,
    run_checks: ["sleepbench.calls_per_thread"]
);
family!(
    SLEEP_TOTAL,
    "sleepbench.total_cpu_pct",
    [],
    "%",
    Lower,
    Sleep,
    "sleepbench_busy_cpu_ratio",
    0.01,
    "busy CPU during the nanosleep benchmark",
    rule_above(30.0, false, 5.0),
    load_moves: true,
    run_checks: ["sleepbench.total_cpu"]
);
family!(
    SLEEP_IRQ,
    "sleepbench.irq_pct",
    [],
    "%",
    Lower,
    Sleep,
    "sleepbench_irq_cpu_ratio",
    0.01,
    "hardware-interrupt time during the nanosleep benchmark",
    rule_above(30.0, false, 5.0),
    load_moves: true,
    run_checks: ["sleepbench.irq"]
);
family!(
    SLEEP_SYS,
    "sleepbench.sys_pct",
    [],
    "%",
    Lower,
    Sleep,
    "sleepbench_sys_cpu_ratio",
    0.01,
    "kernel time during the nanosleep benchmark",
    rule_above(30.0, false, 5.0),
    load_moves: true
);
family!(
    IDLE_LATENCY,
    "memory.idle_latency",
    ["pattern", "cpu_node", "mem_node"],
    "ns",
    Lower,
    Memory,
    "memory_idle_latency_seconds",
    1e-9,
    "idle memory latency from a CPU node to a memory node",
    rule(10.0, true),
    load_moves: true,
    run_checks: ["memory.numa_ratio"]
);
family!(
    LOADED_LATENCY,
    "memory.loaded_latency",
    ["pattern", "delay"],
    "ns",
    Lower,
    Memory,
    "memory_loaded_latency_seconds",
    1e-9,
    "memory latency under the sweep's load",
    rule(20.0, false),
    load_moves: true
);
family!(
    LOADED_BANDWIDTH,
    "memory.loaded_bandwidth",
    ["pattern", "delay"],
    "GiB/s",
    Higher,
    Memory,
    "memory_loaded_bandwidth_bytes_per_second",
    GIB,
    "bandwidth of the sweep's load",
    rule(20.0, false),
    load_moves: true
);
family!(
    PEAK_BANDWIDTH,
    "memory.peak_bandwidth",
    ["mix"],
    "MiB/s",
    Higher,
    Memory,
    "memory_peak_bandwidth_bytes_per_second",
    MIB,
    "peak memory bandwidth per read/write mix",
    rule(10.0, true),
    load_moves: true,
    run_checks: ["memory.peak_vs_theoretical", "memory.repeat_spread"]
);
family!(
    PEAK_SIMD,
    "memory.peak_read_simd",
    [],
    "MiB/s",
    Higher,
    Memory,
    "memory_peak_read_simd_bytes_per_second",
    MIB,
    "read bandwidth with wide vector loads",
    rule(10.0, true),
    load_moves: true
);
family!(
    MEMCPY_MEDIUM,
    "memory.memcpy_medium",
    [],
    "MiB/s",
    Higher,
    Memory,
    "memory_memcpy_medium_bytes_per_second",
    MIB,
    "memcpy of 16 KiB pieces",
    rule(10.0, true),
    load_moves: true
);
family!(
    MEMCPY_LARGE,
    "memory.memcpy_large",
    [],
    "MiB/s",
    Higher,
    Memory,
    "memory_memcpy_large_bytes_per_second",
    MIB,
    "memcpy of 128 MiB pieces",
    rule(10.0, true),
    load_moves: true
);
family!(
    CACHE_LATENCY,
    "memory.cache_latency",
    ["bytes"],
    "ns",
    Lower,
    Memory,
    "memory_cache_latency_seconds",
    1e-9,
    "latency of a working set of this size",
    rule(25.0, false),
    load_moves: true,
    run_checks: ["memory.cache_step"]
);
family!(
    READ_IOPS,
    "storage.read_iops_4k",
    [],
    "IOPS",
    Higher,
    Storage,
    "storage_read_4k_operations_per_second",
    1.0,
    "4 KiB random reads per second",
    rule(15.0, true),
    load_moves: true,
    run_checks: ["storage.read_iops"]
);
family!(
    WRITE_IOPS,
    "storage.write_iops_4k",
    [],
    "IOPS",
    Higher,
    Storage,
    "storage_write_4k_operations_per_second",
    1.0,
    "4 KiB random writes per second",
    rule(15.0, true),
    load_moves: true
);
family!(
    WRITE_MB_S,
    "storage.write_mb_s_1m",
    [],
    "MB/s",
    Higher,
    Storage,
    "storage_write_1m_bytes_per_second",
    1e6,
    "1 MiB sequential writes, 10^6 bytes/s",
    rule(15.0, true),
    load_moves: true,
    run_checks: ["storage.write_mb_s"]
);
family!(
    READ_CLAT,
    "storage.read_clat_us",
    ["percentile"],
    "us",
    Lower,
    Storage,
    "storage_read_4k_latency_seconds",
    1e-6,
    "4 KiB random read completion latency",
    Judging::Rule { tolerance_pct: 50.0, fails: false, min_difference: None, only: "(p50|p99)" },
    load_moves: true,
    run_checks: ["storage.read_tail_latency"]
);
family!(
    WRITE_CLAT,
    "storage.write_clat_us",
    ["percentile"],
    "us",
    Lower,
    Storage,
    "storage_write_4k_latency_seconds",
    1e-6,
    "4 KiB random write completion latency",
    Judging::Rule { tolerance_pct: 50.0, fails: false, min_difference: None, only: "(p50|p99)" },
    load_moves: true,
    run_checks: ["storage.write_tail_latency"]
);

family!(
    MEM_TOTAL,
    "machine.mem_total_gib",
    [],
    "GiB",
    Higher,
    System,
    "machine_memory_bytes",
    GIB,
    "memory the kernel manages (MemTotal): less than its siblings means a lost DIMM or memory taken",
    rule_above(1.0, true, 0.25),
    load_moves: false
);
family!(
    LOGICAL_CPUS,
    "machine.logical_cpus",
    [],
    "CPUs",
    Higher,
    System,
    "machine_logical_cpus",
    1.0,
    "logical CPUs online: fewer than its siblings means CPUs offline or disabled",
    rule_above(0.0, true, 0.5),
    load_moves: false
);

/// Every family, in document order.
pub static FAMILIES: &[&Family] = &[
    &MEM_TOTAL,
    &LOGICAL_CPUS,
    &PING_LATENCY,
    &PING_LOSS,
    &BANDWIDTH,
    &REVERSE_BANDWIDTH,
    &LINK_EFFICIENCY,
    &RETRANSMITS,
    &AGGREGATE,
    &CALLS,
    &CALLS_PER_THREAD,
    &SLEEP_TOTAL,
    &SLEEP_IRQ,
    &SLEEP_SYS,
    &IDLE_LATENCY,
    &LOADED_LATENCY,
    &LOADED_BANDWIDTH,
    &PEAK_BANDWIDTH,
    &PEAK_SIMD,
    &MEMCPY_MEDIUM,
    &MEMCPY_LARGE,
    &CACHE_LATENCY,
    &READ_IOPS,
    &WRITE_IOPS,
    &WRITE_MB_S,
    &READ_CLAT,
    &WRITE_CLAT,
];

/// One figure: a family, its label values, the number, and how it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Its family.
    pub family: &'static Family,
    /// Label values, in the family's label order.
    pub labels: Vec<String>,
    /// The number, in the family's unit.
    pub value: f64,
    /// What the figure depends on besides the machine, as `key=value` pairs joined by `, `
    /// (`profile=standard, pages=1 GiB`): only figures measured alike are compared.
    pub basis: Basis,
}

/// What a figure depends on besides the machine; shared by the figures of one document.
pub type Basis = Arc<str>;

/// A figure's key in its parts: the family's name and the labels but the client.
pub type KeyParts<'a> = (&'static str, &'a [String]);

impl Figure {
    /// A figure; `None` for a value no figure can have (not finite, or negative).
    pub fn new(
        family: &'static Family,
        labels: Vec<String>,
        value: f64,
        basis: Basis,
    ) -> Option<Figure> {
        debug_assert_eq!(labels.len(), family.labels.len(), "{}", family.name);
        possible(value).then_some(Figure {
            family,
            labels,
            value,
            basis,
        })
    }

    /// The dotted name: family name, then the label values.
    pub fn name(&self) -> String {
        dotted(self.family.name, &self.labels)
    }

    /// The client, for per-client figures.
    pub fn client(&self) -> Option<&str> {
        self.family
            .per_client()
            .then(|| self.labels.last().map(String::as_str))
            .flatten()
    }

    /// The dotted name without the client: what figures of different clients share, so they
    /// compare with each other (`network.bandwidth`).
    pub fn key(&self) -> String {
        let (name, labels) = self.key_parts();
        dotted(name, labels)
    }

    /// [`Figure::key`] in its parts, borrowed (the family's name, the labels but the client):
    /// a reader grouping a fleet's figures keys them without building a string each.
    pub fn key_parts(&self) -> KeyParts<'_> {
        let labels = if self.family.per_client() {
            &self.labels[..self.labels.len().saturating_sub(1)]
        } else {
            &self.labels[..]
        };
        (self.family.name, labels)
    }
}

/// Whether a figure can have this value: finite and not negative.
fn possible(value: f64) -> bool {
    value.is_finite() && value >= 0.0
}

/// A family's name and label values joined with dots (`memory.peak_bandwidth.all reads`).
pub fn dotted(name: &str, labels: &[String]) -> String {
    let mut out =
        String::with_capacity(name.len() + labels.iter().map(|l| l.len() + 1).sum::<usize>());
    out.push_str(name);
    for l in labels {
        out.push('.');
        out.push_str(l);
    }
    out
}

/// The family whose figures a dotted key (a name without its client) belongs to.
pub fn family_of_key(key: &str) -> Option<&'static Family> {
    FAMILIES
        .iter()
        .filter(|f| key == f.name || key.starts_with(&format!("{}.", f.name)))
        .max_by_key(|f| f.name.len())
        .copied()
}

/// A document's figures, and the values no figure can have (not finite, or negative), which a
/// reader must not take: a document holding one is not to be trusted.
#[derive(Debug, Default)]
pub struct Extracted {
    /// The figures.
    pub figures: Vec<Figure>,
    /// `name: value` of each value refused.
    pub rejected: Vec<String>,
}

/// Collects figures under one basis per section, skipping missing values and refusing
/// impossible ones.
struct Figures {
    out: Extracted,
    bases: HashMap<String, Basis>,
    common: String,
}

impl Figures {
    fn new(common: String) -> Figures {
        Figures {
            out: Extracted::default(),
            bases: HashMap::new(),
            common,
        }
    }

    /// The basis of the common part plus `extra` (`key=value` pairs), shared.
    fn basis(&mut self, extra: &[(&str, String)]) -> Basis {
        if extra.is_empty() {
            if let Some(b) = self.bases.get(&self.common) {
                return b.clone();
            }
        }
        let mut text = self.common.clone();
        for (k, v) in extra {
            text.push_str(&format!(", {k}={v}"));
        }
        self.bases
            .entry(text)
            .or_insert_with_key(|t| Arc::from(t.as_str()))
            .clone()
    }

    fn add_with(
        &mut self,
        family: &'static Family,
        labels: &[&str],
        value: Option<f64>,
        extra: &[(&str, String)],
    ) {
        let Some(v) = value else { return };
        let owned: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
        if !possible(v) {
            self.out
                .rejected
                .push(format!("{}: {v}", dotted(family.name, &owned)));
            return;
        }
        let basis = self.basis(extra);
        self.out
            .figures
            .extend(Figure::new(family, owned, v, basis));
    }

    fn add(&mut self, family: &'static Family, labels: &[&str], value: Option<f64>) {
        self.add_with(family, labels, value, &[]);
    }
}

/// What the machine has (memory, CPUs online) as figures judged among its siblings; they depend
/// on nothing but the machine, so every run of it compares.
pub fn of_identity(id: &MachineIdentity) -> Extracted {
    let mut f = Figures::new("inventory".into());
    let gib = id.mem_total_kib.map(|k| k as f64 / f64::from(1u32 << 20));
    f.add(&MEM_TOTAL, &[], gib.map(|g| crate::units::round_to(g, 3)));
    f.add(
        &LOGICAL_CPUS,
        &[],
        (id.logical_cpus > 0).then_some(id.logical_cpus as f64),
    );
    f.out
}

/// Every figure of one of our documents.
pub fn of_document(doc: &Document) -> Extracted {
    of_document_as(doc, doc.health_check.machine.as_ref())
}

/// Every figure of one of our documents, with `identity` for the machine figures (older
/// documents have none of their own: readers take it from the system section).
pub fn of_document_as(doc: &Document, identity: Option<&MachineIdentity>) -> Extracted {
    let mut f = Figures::new(format!("profile={}", doc.health_check.profile.name()));
    if let Some(id) = identity {
        f.out = of_identity(id);
    }
    for p in doc.ping.iter().flatten() {
        f.add(&PING_LATENCY, &[&p.hostname], p.typical_rtt());
        f.add(&PING_LOSS, &[&p.hostname], p.loss_pct);
    }
    for b in doc.iperf3_bandwidth.iter().flatten() {
        let c = [b.hostname.as_str()];
        let streams = [("streams", b.streams.to_string())];
        f.add_with(&BANDWIDTH, &c, b.bandwidth, &streams);
        f.add_with(&REVERSE_BANDWIDTH, &c, b.reverse_gbps, &streams);
        f.add(&LINK_EFFICIENCY, &c, b.link_efficiency_pct);
        f.add_with(&RETRANSMITS, &c, b.retransmits.map(|r| r as f64), &streams);
    }
    if let Some(a) = &doc.network_aggregate {
        // All clients at once: only aggregates of as many clients compare.
        let clients = [("clients", a.clients.len().to_string())];
        f.add_with(&AGGREGATE, &[], a.bandwidth, &clients);
    }
    if let Some(s) = doc.sleep() {
        f.add(&CALLS, &[], Some(s.calls_per_second));
        f.add(&CALLS_PER_THREAD, &[], Some(s.calls_per_second_per_thread));
        f.add(&SLEEP_TOTAL, &[], s.total);
        f.add(&SLEEP_IRQ, &[], s.irq_pct);
        f.add(&SLEEP_SYS, &[], s.sys_pct);
    }
    if let Some(m) = doc.memory() {
        let ours = ("method", "health_check".to_string());
        let chain = ("chain", format!("{} MiB", m.region_mib));
        for (pattern, matrix) in &m.idle_latency.patterns {
            let pages = m.page_size.idle_latency.get(pattern).cloned();
            let extra = [
                ours.clone(),
                chain.clone(),
                ("pages", pages.unwrap_or_else(|| "?".into())),
            ];
            for (cpu, row) in matrix {
                for (mem, &ns) in row {
                    f.add_with(&IDLE_LATENCY, &[pattern, cpu, mem], Some(ns), &extra);
                }
            }
        }
        for (pattern, rows) in &m.delay_latency_bandwidth {
            let pages = m.page_size.delay_latency_bandwidth.get(pattern).cloned();
            let extra = [ours.clone(), ("pages", pages.unwrap_or_else(|| "?".into()))];
            for &(delay, gib_s, ns) in rows {
                let d = delay.to_string();
                f.add_with(&LOADED_LATENCY, &[pattern, &d], Some(ns), &extra);
                f.add_with(&LOADED_BANDWIDTH, &[pattern, &d], Some(gib_s), &extra);
            }
        }
        let ours = [ours];
        for (mix, &v) in &m.peak_bandwidth_mb_s {
            f.add_with(&PEAK_BANDWIDTH, &[mix], Some(v), &ours);
        }
        f.add_with(&PEAK_SIMD, &[], m.peak_read_simd_mb_s, &ours);
        f.add_with(&MEMCPY_MEDIUM, &[], m.memcpy_medium_mb_s, &ours);
        f.add_with(&MEMCPY_LARGE, &[], m.memcpy_large_mb_s, &ours);
        for &(bytes, ns) in &m.cache_latency_ns {
            f.add_with(&CACHE_LATENCY, &[&bytes.to_string()], Some(ns), &ours);
        }
    }
    if let Some(s) = doc.storage() {
        let target = [("storage", super::document::word(&s.kind))];
        f.add_with(&READ_IOPS, &[], s.read_iops_4k, &target);
        f.add_with(&WRITE_IOPS, &[], s.write_iops_4k, &target);
        f.add_with(&WRITE_MB_S, &[], s.write_mb_s_1m, &target);
        for (family, lat) in [
            (&READ_CLAT, &s.read_clat_us),
            (&WRITE_CLAT, &s.write_clat_us),
        ] {
            if let Some(l) = lat {
                for (p, v) in [
                    ("p50", l.p50),
                    ("p99", l.p99),
                    ("p999", l.p999),
                    ("max", l.max),
                ] {
                    f.add_with(family, &[p], Some(v), &target);
                }
            }
        }
    }
    f.out
}

/// Every figure of an upstream DCPerf document (what its parser writes), under our names. Its
/// runs use DCPerf's parameters (our `standard` profile); its memory figures are mm-mem's.
pub fn of_upstream(m: &UpstreamMetrics) -> Extracted {
    let mut f = Figures::new(format!("profile={}", Profile::Standard.name()));
    for p in &m.ping {
        f.add(&PING_LATENCY, &[p.hostname.trim()], p.latency.0);
    }
    let streams = [("streams", "4".to_string())];
    for b in &m.iperf3_bandwidth {
        f.add_with(&BANDWIDTH, &[b.hostname.trim()], b.bandwidth.0, &streams);
    }
    let s = &m.sleepbench;
    f.add(&CALLS, &[], s.calls_per_second.0);
    f.add(
        &SLEEP_TOTAL,
        &[],
        s.total.0.or(s.idle_pct.0.map(|i| 100.0 - i)),
    );
    f.add(&SLEEP_IRQ, &[], s.irq_pct.0);
    f.add(&SLEEP_SYS, &[], s.sys_pct.0);
    let mm_mem = [("method", "mm-mem".to_string())];
    let mem = &m.memory;
    for (pattern, entry) in &mem.idle_latency {
        match entry {
            super::dcperf::IdleEntry::Matrix(matrix) => {
                for (cpu, row) in matrix {
                    for (mem_node, ns) in row {
                        f.add_with(&IDLE_LATENCY, &[pattern, cpu, mem_node], ns.0, &mm_mem);
                    }
                }
            }
            // aarch64: one figure for the first node's local latency of a random chase.
            super::dcperf::IdleEntry::Average(ns) => f.add_with(
                &IDLE_LATENCY,
                &["FullRandom", "Node-0", "Node-0"],
                ns.0,
                &mm_mem,
            ),
        }
    }
    for (pattern, rows) in &mem.delay_bandwidth_latency {
        // aarch64's `loaded_latency` rows are in MB/s with another delay scale: not comparable
        // with the mm-mem sweep, so only the x86 patterns become figures.
        if pattern == "loaded_latency" {
            continue;
        }
        for row in rows {
            let Some(d) = row.delay().map(|d| d.to_string()) else {
                continue;
            };
            f.add_with(&LOADED_LATENCY, &[pattern, &d], row.2.0, &mm_mem);
            f.add_with(&LOADED_BANDWIDTH, &[pattern, &d], row.1.0, &mm_mem);
        }
    }
    for (mix, v) in &mem.peak_bandwidth_mb_s {
        f.add_with(&PEAK_BANDWIDTH, &[mix], v.0, &mm_mem);
    }
    f.add_with(&MEMCPY_MEDIUM, &[], mem.memcpy_medium_mb_s.0, &mm_mem);
    f.add_with(&MEMCPY_LARGE, &[], mem.memcpy_large_mb_s.0, &mm_mem);
    f.out
}

/// How two bases differ, for people: `pages=4 KiB where its group used pages=1 GiB`.
pub fn basis_difference(mine: &str, theirs: &str) -> String {
    let parts = |b: &str| -> Vec<String> { b.split(", ").map(str::to_string).collect() };
    let (m, t) = (parts(mine), parts(theirs));
    let only_mine: Vec<&String> = m.iter().filter(|p| !t.contains(p)).collect();
    let only_theirs: Vec<&String> = t.iter().filter(|p| !m.contains(p)).collect();
    let list = |v: &[&String]| {
        if v.is_empty() {
            "nothing".to_string()
        } else {
            v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        }
    };
    format!(
        "measured with {} where its group used {}",
        list(&only_mine),
        list(&only_theirs)
    )
}

#[cfg(test)]
mod tests;
