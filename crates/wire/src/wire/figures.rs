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
use super::memory::MemoryPart;
use super::storage::{Latency, StoragePart};
use foldhash::fast::FixedState;
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
#[derive(Debug)]
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
    /// Where its figures sit in a document, for people and for the test that reads every figure
    /// back from the JSON: a JSON pointer where `{label}` is an object key that is that label's
    /// value, `[field={label}]` the element of an array whose `field` (or, for a number, whose
    /// position in a row) holds it, and `a|b` the first of two fields present.
    pub at: &'static str,
    /// How its figures are read: from the machine's identity, or from a document.
    pub reads: Reads,
    /// The checks of a run that judge this family against a limit (`sleepbench.total_cpu`):
    /// whether load can move such a check is this family's `load_moves`.
    pub run_checks: &'static [&'static str],
}

impl PartialEq for Family {
    /// A family is its name (the table holds each name once).
    fn eq(&self, other: &Family) -> bool {
        self.name == other.name
    }
}

/// Where a family's figures come from: the one reader of them.
#[derive(Clone, Copy)]
pub enum Reads {
    /// What the machine has, from its identity: one figure, no labels.
    Identity(fn(&MachineIdentity) -> Option<f64>),
    /// A part of one of our documents: adds the family's figures to the collector.
    Document(fn(&Document, &mut Figures)),
}

impl std::fmt::Debug for Reads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reads::Identity(_) => "Identity",
            Reads::Document(_) => "Document",
        })
    }
}

/// Memory figures measured by our own kernels (DCPerf's are mm-mem's).
const OURS: (&str, &str) = ("method", "health_check");

/// The basis of a loaded-latency sweep's figures: the method and the pages its buffer used.
fn sweep_basis<'m>(m: &'m MemoryPart, pattern: &str) -> [(&'static str, &'m str); 2] {
    let pages = m.page_size.delay_latency_bandwidth.get(pattern);
    [OURS, ("pages", pages.map_or("?", String::as_str))]
}

/// What storage figures were measured on (a file, a device), their basis as `("storage", ..)`.
fn target(s: &StoragePart) -> String {
    super::document::word(&s.kind)
}

/// A completion-latency summary's percentiles as figures of `family`.
fn percentiles(
    f: &mut Figures,
    family: &'static Family,
    l: Option<&Latency>,
    extra: &[(&str, &str)],
) {
    let Some(l) = l else { return };
    for (p, v) in [
        ("p50", l.p50),
        ("p99", l.p99),
        ("p999", l.p999),
        ("max", l.max),
    ] {
        f.add_with(family, &[p], Some(v), extra);
    }
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
    ($id:ident, $name:literal, [$($label:literal),*], $unit:literal, $dir:ident, $section:ident, $prom:literal, $scale:expr, $help:literal, $judged:expr, load_moves: $load:literal, at: $at:literal, reads: $reads:expr) => {
        family!($id, $name, [$($label),*], $unit, $dir, $section, $prom, $scale, $help, $judged, load_moves: $load, at: $at, reads: $reads, run_checks: []);
    };
    ($id:ident, $name:literal, [$($label:literal),*], $unit:literal, $dir:ident, $section:ident, $prom:literal, $scale:expr, $help:literal, $judged:expr, load_moves: $load:literal, at: $at:literal, reads: $reads:expr, run_checks: [$($check:literal),*]) => {
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
            at: $at,
            reads: $reads,
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
    at: "/ping/[hostname={client}]/median|latency",
    reads: Reads::Document(|d, f| for p in d.ping.iter().flatten() {
        f.add(&PING_LATENCY, &[&p.hostname], p.typical_rtt());
    }),
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
    at: "/ping/[hostname={client}]/loss_pct",
    reads: Reads::Document(|d, f| for p in d.ping.iter().flatten() {
        f.add(&PING_LOSS, &[&p.hostname], p.loss_pct);
    }),
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
    at: "/iperf3 bandwidth/[hostname={client}]/bandwidth",
    reads: Reads::Document(|d, f| {
        let mut streams_text = itoa::Buffer::new();
        for b in d.iperf3_bandwidth.iter().flatten() {
            let streams = [("streams", streams_text.format(b.streams))];
            f.add_with(&BANDWIDTH, &[&b.hostname], b.bandwidth, &streams);
        }
    }),
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
    at: "/iperf3 bandwidth/[hostname={client}]/reverse_gbps",
    reads: Reads::Document(|d, f| {
        let mut streams_text = itoa::Buffer::new();
        for b in d.iperf3_bandwidth.iter().flatten() {
            let streams = [("streams", streams_text.format(b.streams))];
            f.add_with(&REVERSE_BANDWIDTH, &[&b.hostname], b.reverse_gbps, &streams);
        }
    }),
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
    at: "/iperf3 bandwidth/[hostname={client}]/link_efficiency_pct",
    reads: Reads::Document(|d, f| for b in d.iperf3_bandwidth.iter().flatten() {
        f.add(&LINK_EFFICIENCY, &[&b.hostname], b.link_efficiency_pct);
    }),
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
    load_moves: true,
    at: "/iperf3 bandwidth/[hostname={client}]/retransmits",
    reads: Reads::Document(|d, f| {
        let mut streams_text = itoa::Buffer::new();
        for b in d.iperf3_bandwidth.iter().flatten() {
            let streams = [("streams", streams_text.format(b.streams))];
            f.add_with(&RETRANSMITS, &[&b.hostname], b.retransmits.map(|r| r as f64), &streams);
        }
    })
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
    load_moves: true,
    at: "/network_aggregate/bandwidth",
    reads: Reads::Document(|d, f| if let Some(a) = &d.network_aggregate {
        // All clients at once: only aggregates of as many clients compare.
        let mut clients_text = itoa::Buffer::new();
        let clients = [("clients", clients_text.format(a.clients.len()))];
        f.add_with(&AGGREGATE, &[], a.bandwidth, &clients);
    })
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
    load_moves: true,
    at: "/sleepbench/calls per second",
    reads: Reads::Document(|d, f| if let Some(s) = d.sleep() {
        f.add(&CALLS, &[], Some(s.calls_per_second));
    })
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
    at: "/sleepbench/calls_per_second_per_thread",
    reads: Reads::Document(|d, f| if let Some(s) = d.sleep() {
        f.add(&CALLS_PER_THREAD, &[], Some(s.calls_per_second_per_thread));
    }),
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
    at: "/sleepbench/total",
    reads: Reads::Document(|d, f| if let Some(s) = d.sleep() {
        f.add(&SLEEP_TOTAL, &[], s.total);
    }),
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
    at: "/sleepbench/irq%",
    reads: Reads::Document(|d, f| if let Some(s) = d.sleep() {
        f.add(&SLEEP_IRQ, &[], s.irq_pct);
    }),
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
    load_moves: true,
    at: "/sleepbench/sys%",
    reads: Reads::Document(|d, f| if let Some(s) = d.sleep() {
        f.add(&SLEEP_SYS, &[], s.sys_pct);
    })
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
    at: "/memory/idle_latency/{pattern}/{cpu_node}/{mem_node}",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        for (pattern, matrix) in &m.idle_latency.patterns {
            let pages = m.page_size.idle_latency.get(pattern).map_or("?", String::as_str);
            let chain = format!("{} MiB", m.region_mib);
            let extra = [OURS, ("chain", &chain), ("pages", pages)];
            for (cpu, row) in matrix {
                for (mem, &ns) in row {
                    f.add_with(&IDLE_LATENCY, &[pattern, cpu, mem], Some(ns), &extra);
                }
            }
        }
    }),
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
    load_moves: true,
    at: "/memory/delay_latency_bandwidth/{pattern}/[0={delay}]/2",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        for (pattern, rows) in &m.delay_latency_bandwidth {
            let extra = sweep_basis(m, pattern);
            let mut delay_text = itoa::Buffer::new();
            for &(delay, _, ns) in rows {
                let delay = delay_text.format(delay);
                f.add_with(&LOADED_LATENCY, &[pattern, delay], Some(ns), &extra);
            }
        }
    })
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
    load_moves: true,
    at: "/memory/delay_latency_bandwidth/{pattern}/[0={delay}]/1",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        for (pattern, rows) in &m.delay_latency_bandwidth {
            let extra = sweep_basis(m, pattern);
            let mut delay_text = itoa::Buffer::new();
            for &(delay, gib_s, _) in rows {
                let delay = delay_text.format(delay);
                f.add_with(&LOADED_BANDWIDTH, &[pattern, delay], Some(gib_s), &extra);
            }
        }
    })
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
    at: "/memory/peak_bandwidth_mb_s/{mix}",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        for (mix, &v) in &m.peak_bandwidth_mb_s {
            f.add_with(&PEAK_BANDWIDTH, &[mix], Some(v), &[OURS]);
        }
    }),
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
    load_moves: true,
    at: "/memory/peak_read_simd_mb_s",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        f.add_with(&PEAK_SIMD, &[], m.peak_read_simd_mb_s, &[OURS]);
    })
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
    load_moves: true,
    at: "/memory/memcpy_medium_mb_s",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        f.add_with(&MEMCPY_MEDIUM, &[], m.memcpy_medium_mb_s, &[OURS]);
    })
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
    load_moves: true,
    at: "/memory/memcpy_large_mb_s",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        f.add_with(&MEMCPY_LARGE, &[], m.memcpy_large_mb_s, &[OURS]);
    })
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
    at: "/memory/cache_latency_ns/[0={bytes}]/1",
    reads: Reads::Document(|d, f| if let Some(m) = d.memory() {
        let mut bytes_text = itoa::Buffer::new();
        for &(bytes, ns) in &m.cache_latency_ns {
            f.add_with(&CACHE_LATENCY, &[bytes_text.format(bytes)], Some(ns), &[OURS]);
        }
    }),
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
    at: "/storage/read_iops_4k",
    reads: Reads::Document(|d, f| if let Some(s) = d.storage() {
        f.add_with(&READ_IOPS, &[], s.read_iops_4k, &[("storage", &target(s))]);
    }),
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
    load_moves: true,
    at: "/storage/write_iops_4k",
    reads: Reads::Document(|d, f| if let Some(s) = d.storage() {
        f.add_with(&WRITE_IOPS, &[], s.write_iops_4k, &[("storage", &target(s))]);
    })
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
    at: "/storage/write_mb_s_1m",
    reads: Reads::Document(|d, f| if let Some(s) = d.storage() {
        f.add_with(&WRITE_MB_S, &[], s.write_mb_s_1m, &[("storage", &target(s))]);
    }),
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
    at: "/storage/read_clat_us/{percentile}",
    reads: Reads::Document(|d, f| if let Some(s) = d.storage() {
        percentiles(f, &READ_CLAT, s.read_clat_us.as_ref(), &[("storage", &target(s))]);
    }),
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
    at: "/storage/write_clat_us/{percentile}",
    reads: Reads::Document(|d, f| if let Some(s) = d.storage() {
        percentiles(f, &WRITE_CLAT, s.write_clat_us.as_ref(), &[("storage", &target(s))]);
    }),
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
    load_moves: false,
    at: "/health_check/machine/mem_total_kib",
    reads: Reads::Identity(|id| id.mem_total_kib.map(|k| crate::units::round_to(k as f64 / f64::from(1u32 << 20), 3)))
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
    load_moves: false,
    at: "/health_check/machine/logical_cpus",
    reads: Reads::Identity(|id| (id.logical_cpus > 0).then_some(id.logical_cpus as f64))
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

/// One figure: what it is (its family, label values and how it was measured) and the number.
/// What it is reads through the figure (`figure.family`, `figure.labels`, `figure.basis`).
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Its family, label values and basis: one copy for the figures a thread read alike (a
    /// fleet's machines measure the same figures: 16 bytes a figure, not 48).
    pub spec: Arc<Spec>,
    /// The number, in the family's unit.
    pub value: f64,
}

/// What a figure is, apart from its number.
#[derive(Debug, PartialEq)]
pub struct Spec {
    /// Its family.
    pub family: &'static Family,
    /// Label values, in the family's label order.
    pub labels: Labels,
    /// What the figure depends on besides the machine, as `key=value` pairs joined by `, `
    /// (`profile=standard, pages=1 GiB`): only figures measured alike are compared.
    pub basis: Basis,
}

impl Eq for Spec {}

impl std::hash::Hash for Spec {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.family.name.hash(state);
        self.labels.hash(state);
        self.basis.hash(state);
    }
}

/// The specs a thread's figures share: by value, and in front of that by the addresses of a
/// spec's family, labels and basis, which are shared themselves ([`labels`], [`basis`]): a
/// figure read again finds its spec without hashing its strings. An address is a key only
/// while the spec found holds that very label set and basis (so they stay alive, and the
/// address is never another's later).
#[derive(Default)]
struct SharedSpecs {
    by_value: std::collections::HashSet<Arc<Spec>, FixedState>,
    by_address: HashMap<(usize, usize, usize), Arc<Spec>, FixedState>,
}

thread_local! {
    static SPECS: std::cell::RefCell<SharedSpecs> = std::cell::RefCell::default();
}

impl Spec {
    /// The shared copy of this spec (see [`Figure::spec`]).
    pub fn shared(family: &'static Family, labels: Labels, basis: Basis) -> Arc<Spec> {
        let address = (
            std::ptr::from_ref(family) as usize,
            Arc::as_ptr(&labels).cast::<u8>() as usize,
            Arc::as_ptr(&basis).cast::<u8>() as usize,
        );
        SPECS.with(|specs| {
            let mut specs = specs.borrow_mut();
            if let Some(found) = specs.by_address.get(&address) {
                return found.clone();
            }
            let spec = Spec {
                family,
                labels,
                basis,
            };
            let found = match specs.by_value.get(&spec) {
                Some(found) => found.clone(),
                None => {
                    let made = Arc::new(spec);
                    specs.by_value.insert(made.clone());
                    made
                }
            };
            let (l, b) = (
                Arc::as_ptr(&found.labels).cast::<u8>() as usize,
                Arc::as_ptr(&found.basis).cast::<u8>() as usize,
            );
            if (l, b) == (address.1, address.2) {
                specs.by_address.insert(address, found.clone());
            }
            found
        })
    }

    /// The shared spec of `family` with `labels`, measured under the basis spelled `basis`: a
    /// spec this thread has made before is found through the shared label set and basis
    /// themselves, without taking a count on either (each count an atomic; a document adds
    /// hundreds of figures), and only a new one goes the long way ([`Spec::shared`]).
    pub fn shared_by_text(family: &'static Family, labels: &[&str], basis: &str) -> Arc<Spec> {
        let found = LABELS.with(|shared_labels| {
            let mut shared_labels = shared_labels.borrow_mut();
            let SharedLabels { by_text, text } = &mut *shared_labels;
            if !join_labels(text, labels) {
                return None;
            }
            let labels = by_text.get(text.as_str())?;
            BASES.with(|bases| {
                let bases = bases.borrow();
                let basis = bases.get(basis)?;
                let address = (
                    std::ptr::from_ref(family) as usize,
                    Arc::as_ptr(labels).cast::<u8>() as usize,
                    Arc::as_ptr(basis).cast::<u8>() as usize,
                );
                SPECS.with(|specs| specs.borrow().by_address.get(&address).cloned())
            })
        });
        found.unwrap_or_else(|| Spec::shared(family, self::labels(labels), self::basis(basis)))
    }
}

impl std::ops::Deref for Figure {
    type Target = Spec;

    fn deref(&self) -> &Spec {
        &self.spec
    }
}

/// What a figure depends on besides the machine; shared by the figures of one document.
pub type Basis = Arc<str>;

/// A figure's label values, shared (see [`labels`]).
pub type Labels = Arc<[String]>;

/// The label values a thread has made into figures' labels, each set once, by its values joined
/// with NUL, and the buffer a lookup joins them in: a label set seen before costs no
/// allocation. A value holding a NUL itself (a JSON string can) is never shared: joined, two
/// different sets could read alike.
#[derive(Default)]
struct SharedLabels {
    by_text: HashMap<Box<str>, Labels, FixedState>,
    text: String,
}

thread_local! {
    static LABELS: std::cell::RefCell<SharedLabels> = std::cell::RefCell::default();
}

/// The shared copy of `values`: the first of this thread's figures with these labels made it.
/// Kept for the process's life, as many as the distinct label values read (a fleet's figures
/// and client names), once per reading thread.
pub fn labels<S: AsRef<str>>(values: &[S]) -> Labels {
    let made = || -> Labels { values.iter().map(|v| v.as_ref().to_string()).collect() };
    LABELS.with(|shared| {
        let mut shared = shared.borrow_mut();
        let SharedLabels { by_text, text } = &mut *shared;
        if !join_labels(text, values) {
            return made();
        }
        if let Some(found) = by_text.get(text.as_str()) {
            return found.clone();
        }
        let made = made();
        by_text.insert(text.as_str().into(), made.clone());
        made
    })
}

/// `values` joined as [`SharedLabels`] keys them, in `text`; false when a value holds a NUL
/// (such a set is never shared).
fn join_labels<S: AsRef<str>>(text: &mut String, values: &[S]) -> bool {
    text.clear();
    for v in values {
        if v.as_ref().contains('\0') {
            return false;
        }
        text.push_str(v.as_ref());
        text.push('\0');
    }
    true
}

thread_local! {
    /// The bases this thread's figures share, by their text.
    static BASES: std::cell::RefCell<HashMap<Box<str>, Basis, FixedState>> =
        std::cell::RefCell::default();
}

/// The shared copy of the basis `text`: the first of this thread's figures measured so made it.
/// Kept for the process's life, as many as the distinct bases read, once per reading thread.
pub fn basis(text: &str) -> Basis {
    BASES.with(|bases| {
        let mut bases = bases.borrow_mut();
        if let Some(found) = bases.get(text) {
            return found.clone();
        }
        let made: Basis = Arc::from(text);
        bases.insert(text.into(), made.clone());
        made
    })
}

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
        possible(value).then(|| Figure {
            spec: Spec::shared(family, self::labels(&labels), basis),
            value,
        })
    }

    /// The same figure with another basis.
    pub fn with_basis(&self, basis: Basis) -> Figure {
        Figure {
            spec: Spec::shared(self.family, self.labels.clone(), basis),
            value: self.value,
        }
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

    /// Whether [`Figure::key`] is `key`, told without spelling it.
    pub fn key_is(&self, key: &str) -> bool {
        let (name, labels) = self.key_parts();
        let Some(mut rest) = key.strip_prefix(name) else {
            return false;
        };
        for l in labels {
            match rest
                .strip_prefix('.')
                .and_then(|r| r.strip_prefix(l.as_str()))
            {
                Some(r) => rest = r,
                None => return false,
            }
        }
        rest.is_empty()
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
/// impossible ones: what a family's reader adds its figures to.
pub struct Figures {
    out: Extracted,
    common: String,
    /// Where a basis is spelled to be looked up: a basis seen before costs no allocation.
    text: String,
    /// What is read: its figures' places in [`RECENT`].
    kind: Read,
    /// The place of the next figure added (a figure without a value keeps its place).
    at: usize,
}

/// What a [`Figures`] reads: the figures of one kind come in the same order, document after
/// document.
#[derive(Debug, Clone, Copy)]
enum Read {
    Identity,
    Ours,
    Upstream,
}

thread_local! {
    /// Per [`Read`], the spec of each figure of the last such document this thread read, by its
    /// place: a fleet's documents are alike, so a figure is mostly the spec at its place, told
    /// by comparing its family, labels and basis, where finding it among all the thread's specs
    /// hashes its strings three times (most of turning a fleet's documents into figures).
    static RECENT: std::cell::RefCell<[Vec<Arc<Spec>>; 3]> = std::cell::RefCell::default();
}

impl Spec {
    /// Whether this is the spec of `family` with `labels` under the basis spelled `basis`.
    fn is(&self, family: &'static Family, labels: &[&str], basis: &str) -> bool {
        std::ptr::eq(self.family, family)
            && *self.basis == *basis
            && self.labels.len() == labels.len()
            && self.labels.iter().zip(labels).all(|(a, b)| a == b)
    }
}

impl Figures {
    fn new(common: String, kind: Read) -> Figures {
        Figures {
            out: Extracted::default(),
            common,
            text: String::new(),
            kind,
            at: 0,
        }
    }

    /// The shared spec of `family` with `labels` under the basis spelled `basis`, for the figure
    /// at place `at`: the one there in the last document of this kind when it is that spec.
    fn spec_at(
        kind: Read,
        at: usize,
        family: &'static Family,
        labels: &[&str],
        basis: &str,
    ) -> Arc<Spec> {
        RECENT.with(|recent| {
            let mut recent = recent.borrow_mut();
            let places = &mut recent[kind as usize];
            if let Some(spec) = places.get(at).filter(|s| s.is(family, labels, basis)) {
                return Arc::clone(spec);
            }
            let spec = Spec::shared_by_text(family, labels, basis);
            // Places are filled in order, so `at` is at most one past the last.
            if at < places.len() {
                places[at] = Arc::clone(&spec);
            } else {
                places.push(Arc::clone(&spec));
            }
            spec
        })
    }

    /// The basis of the common part plus `extra` (`key=value` pairs), spelled out.
    fn basis_text(&mut self, extra: &[(&str, &str)]) -> &str {
        let text = &mut self.text;
        text.clear();
        text.push_str(&self.common);
        for (k, v) in extra {
            for part in [", ", k, "=", v] {
                text.push_str(part);
            }
        }
        text
    }

    /// Adds `family`'s figure with `labels` and `value` (none when `None`), measured with
    /// `extra` beside the common basis.
    pub fn add_with(
        &mut self,
        family: &'static Family,
        labels: &[&str],
        value: Option<f64>,
        extra: &[(&str, &str)],
    ) {
        let at = self.at;
        self.at += 1;
        let Some(v) = value else { return };
        if !possible(v) {
            let owned: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
            self.out
                .rejected
                .push(format!("{}: {v}", dotted(family.name, &owned)));
            return;
        }
        debug_assert_eq!(labels.len(), family.labels.len(), "{}", family.name);
        let kind = self.kind;
        let spec = Self::spec_at(kind, at, family, labels, self.basis_text(extra));
        self.out.figures.push(Figure { spec, value: v });
    }

    /// [`Figures::add_with`], measured with nothing beside the common basis.
    pub fn add(&mut self, family: &'static Family, labels: &[&str], value: Option<f64>) {
        self.add_with(family, labels, value, &[]);
    }
}

/// What the machine has (memory, CPUs online) as figures judged among its siblings; they depend
/// on nothing but the machine, so every run of it compares.
pub fn of_identity(id: &MachineIdentity) -> Extracted {
    let mut f = Figures::new("inventory".into(), Read::Identity);
    for family in FAMILIES {
        if let Reads::Identity(read) = family.reads {
            f.add(family, &[], read(id));
        }
    }
    f.out
}

/// Every figure of one of our documents.
pub fn of_document(doc: &Document) -> Extracted {
    of_document_as(doc, doc.health_check.machine.as_ref())
}

/// Every figure of one of our documents, with `identity` for the machine figures (older
/// documents have none of their own: readers take it from the system section): each family's
/// reader, in the table's order.
pub fn of_document_as(doc: &Document, identity: Option<&MachineIdentity>) -> Extracted {
    let mut f = Figures::new(
        format!("profile={}", doc.health_check.profile.name()),
        Read::Ours,
    );
    if let Some(id) = identity {
        f.out = of_identity(id);
    }
    for family in FAMILIES {
        if let Reads::Document(read) = family.reads {
            read(doc, &mut f);
        }
    }
    f.out
}

/// Every figure of an upstream DCPerf document (what its parser writes), under our names. Its
/// runs use DCPerf's parameters (our `standard` profile); its memory figures are mm-mem's.
pub fn of_upstream(m: &UpstreamMetrics) -> Extracted {
    let mut f = Figures::new(
        format!("profile={}", Profile::Standard.name()),
        Read::Upstream,
    );
    for p in &m.ping {
        f.add(&PING_LATENCY, &[p.hostname.trim()], p.latency.0);
    }
    let streams = [("streams", "4")];
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
    let mm_mem = [("method", "mm-mem")];
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
        let mut delay_text = itoa::Buffer::new();
        for row in rows {
            let Some(d) = row.delay().map(|d| delay_text.format(d)) else {
                continue;
            };
            f.add_with(&LOADED_LATENCY, &[pattern, d], row.2.0, &mm_mem);
            f.add_with(&LOADED_BANDWIDTH, &[pattern, d], row.1.0, &mm_mem);
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
