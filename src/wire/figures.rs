//! Every figure of a document as a flat list of named numbers: the one table that says, for each
//! family of figures, its dotted name, its labels, its unit and which way is better. `compare`,
//! `baseline`, the Prometheus exporter and the HTML report all read figures through here, so a
//! figure added to the document is added here once and appears everywhere.
//!
//! A figure's dotted name is its family's name followed by its label values:
//! `memory.idle_latency.FullRandom.Node-0.Node-1`, `network.bandwidth.host2`,
//! `sleepbench.calls_per_second`.

use super::dcperf::UpstreamMetrics;
use super::document::Document;
use serde::{Deserialize, Serialize};

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
#[derive(Debug, PartialEq, Eq)]
pub struct Family {
    /// Dotted name before the labels (`memory.idle_latency`).
    pub name: &'static str,
    /// Label names, in the order their values follow the name (`pattern`, `cpu_node`, ...).
    pub labels: &'static [&'static str],
    /// Unit for people (`ns`, `Gbit/s`).
    pub unit: &'static str,
    /// Which way is better.
    pub direction: Direction,
    /// The Prometheus metric name, without the `health_check_` prefix; its unit is its suffix.
    pub prometheus: &'static str,
    /// One line for people (Prometheus HELP, the HTML page).
    pub help: &'static str,
}

impl Family {
    /// Whether the figure is per client (its last label is the client).
    pub fn per_client(&self) -> bool {
        self.labels.last() == Some(&"client")
    }
}

macro_rules! family {
    ($id:ident, $name:literal, [$($label:literal),*], $unit:literal, $dir:ident, $prom:literal, $help:literal) => {
        /// One family of figures (see [`FAMILIES`]).
        pub static $id: Family = Family {
            name: $name,
            labels: &[$($label),*],
            unit: $unit,
            direction: Direction::$dir,
            prometheus: $prom,
            help: $help,
        };
    };
}

family!(
    PING_LATENCY,
    "ping.latency",
    ["client"],
    "ms",
    Lower,
    "ping_latency_ms",
    "average ping RTT to the client"
);
family!(
    PING_LOSS,
    "ping.loss_pct",
    ["client"],
    "%",
    Lower,
    "ping_loss_percent",
    "ping requests lost"
);
family!(
    BANDWIDTH,
    "network.bandwidth",
    ["client"],
    "Gbit/s",
    Higher,
    "network_bandwidth_gbps",
    "TCP receiver goodput from this machine to the client"
);
family!(
    REVERSE_BANDWIDTH,
    "network.reverse_bandwidth",
    ["client"],
    "Gbit/s",
    Higher,
    "network_reverse_bandwidth_gbps",
    "TCP receiver goodput from the client to this machine"
);
family!(
    LINK_EFFICIENCY,
    "network.link_efficiency_pct",
    ["client"],
    "%",
    Higher,
    "network_link_efficiency_percent",
    "goodput as a share of what the link can carry as TCP payload"
);
family!(
    RETRANSMITS,
    "network.retransmits",
    ["client"],
    "segments",
    Lower,
    "network_retransmits",
    "TCP retransmits of the sender"
);
family!(
    AGGREGATE,
    "network.aggregate_bandwidth",
    [],
    "Gbit/s",
    Higher,
    "network_aggregate_bandwidth_gbps",
    "TCP goodput to all clients at once"
);
family!(
    CALLS,
    "sleepbench.calls_per_second",
    [],
    "calls/s",
    Higher,
    "sleepbench_calls_per_second",
    "nanosleep calls per second, all threads"
);
family!(
    CALLS_PER_THREAD,
    "sleepbench.calls_per_second_per_thread",
    [],
    "calls/s",
    Higher,
    "sleepbench_calls_per_second_per_thread",
    "nanosleep calls per second per thread"
);
family!(
    SLEEP_TOTAL,
    "sleepbench.total_cpu_pct",
    [],
    "%",
    Lower,
    "sleepbench_total_cpu_percent",
    "busy CPU during the nanosleep benchmark"
);
family!(
    SLEEP_IRQ,
    "sleepbench.irq_pct",
    [],
    "%",
    Lower,
    "sleepbench_irq_percent",
    "hardware-interrupt time during the nanosleep benchmark"
);
family!(
    SLEEP_SYS,
    "sleepbench.sys_pct",
    [],
    "%",
    Lower,
    "sleepbench_sys_percent",
    "kernel time during the nanosleep benchmark"
);
family!(
    IDLE_LATENCY,
    "memory.idle_latency",
    ["pattern", "cpu_node", "mem_node"],
    "ns",
    Lower,
    "memory_idle_latency_ns",
    "idle memory latency from a CPU node to a memory node"
);
family!(
    LOADED_LATENCY,
    "memory.loaded_latency",
    ["pattern", "delay"],
    "ns",
    Lower,
    "memory_loaded_latency_ns",
    "memory latency under the sweep's load"
);
family!(
    LOADED_BANDWIDTH,
    "memory.loaded_bandwidth",
    ["pattern", "delay"],
    "GiB/s",
    Higher,
    "memory_loaded_bandwidth_gibps",
    "bandwidth of the sweep's load"
);
family!(
    PEAK_BANDWIDTH,
    "memory.peak_bandwidth",
    ["mix"],
    "MiB/s",
    Higher,
    "memory_peak_bandwidth_mibps",
    "peak memory bandwidth per read/write mix"
);
family!(
    PEAK_SIMD,
    "memory.peak_read_simd",
    [],
    "MiB/s",
    Higher,
    "memory_peak_read_simd_mibps",
    "read bandwidth with wide vector loads"
);
family!(
    MEMCPY_MEDIUM,
    "memory.memcpy_medium",
    [],
    "MiB/s",
    Higher,
    "memory_memcpy_medium_mibps",
    "memcpy of 16 KiB pieces"
);
family!(
    MEMCPY_LARGE,
    "memory.memcpy_large",
    [],
    "MiB/s",
    Higher,
    "memory_memcpy_large_mibps",
    "memcpy of 128 MiB pieces"
);
family!(
    CACHE_LATENCY,
    "memory.cache_latency",
    ["bytes"],
    "ns",
    Lower,
    "memory_cache_latency_ns",
    "latency of a working set of this size"
);
family!(
    READ_IOPS,
    "storage.read_iops_4k",
    [],
    "IOPS",
    Higher,
    "storage_read_iops_4k",
    "4 KiB random reads per second"
);
family!(
    WRITE_IOPS,
    "storage.write_iops_4k",
    [],
    "IOPS",
    Higher,
    "storage_write_iops_4k",
    "4 KiB random writes per second"
);
family!(
    WRITE_MB_S,
    "storage.write_mb_s_1m",
    [],
    "MB/s",
    Higher,
    "storage_write_mbps_1m",
    "1 MiB sequential writes, 10^6 bytes/s"
);
family!(
    READ_CLAT,
    "storage.read_clat_us",
    ["percentile"],
    "us",
    Lower,
    "storage_read_clat_us",
    "4 KiB random read completion latency"
);
family!(
    WRITE_CLAT,
    "storage.write_clat_us",
    ["percentile"],
    "us",
    Lower,
    "storage_write_clat_us",
    "4 KiB random write completion latency"
);

/// Every family, in document order.
pub static FAMILIES: &[&Family] = &[
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

/// One figure: a family, its label values and the number.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Its family.
    pub family: &'static Family,
    /// Label values, in the family's label order.
    pub labels: Vec<String>,
    /// The number, in the family's unit.
    pub value: f64,
}

impl Figure {
    fn new(family: &'static Family, labels: Vec<String>, value: f64) -> Option<Figure> {
        debug_assert_eq!(labels.len(), family.labels.len(), "{}", family.name);
        value.is_finite().then_some(Figure {
            family,
            labels,
            value,
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
        if self.family.per_client() {
            dotted(self.family.name, &self.labels[..self.labels.len() - 1])
        } else {
            self.name()
        }
    }
}

fn dotted(name: &str, labels: &[String]) -> String {
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

/// Collects figures, skipping missing and non-finite values.
#[derive(Default)]
struct Figures(Vec<Figure>);

impl Figures {
    fn add(&mut self, family: &'static Family, labels: &[&str], value: Option<f64>) {
        if let Some(f) = value
            .and_then(|v| Figure::new(family, labels.iter().map(|s| s.to_string()).collect(), v))
        {
            self.0.push(f);
        }
    }
}

/// Every figure of one of our documents.
pub fn of_document(doc: &Document) -> Vec<Figure> {
    let mut f = Figures::default();
    for p in doc.ping.iter().flatten() {
        f.add(&PING_LATENCY, &[&p.hostname], p.latency);
        f.add(&PING_LOSS, &[&p.hostname], p.loss_pct);
    }
    for b in doc.iperf3_bandwidth.iter().flatten() {
        let c = [b.hostname.as_str()];
        f.add(&BANDWIDTH, &c, b.bandwidth);
        f.add(&REVERSE_BANDWIDTH, &c, b.reverse_gbps);
        f.add(&LINK_EFFICIENCY, &c, b.link_efficiency_pct);
        f.add(&RETRANSMITS, &c, b.retransmits.map(|r| r as f64));
    }
    if let Some(a) = &doc.network_aggregate {
        f.add(&AGGREGATE, &[], a.bandwidth);
    }
    if let Some(s) = doc.sleep() {
        f.add(&CALLS, &[], Some(s.calls_per_second));
        f.add(&CALLS_PER_THREAD, &[], Some(s.calls_per_second_per_thread));
        f.add(&SLEEP_TOTAL, &[], s.total);
        f.add(&SLEEP_IRQ, &[], s.irq_pct);
        f.add(&SLEEP_SYS, &[], s.sys_pct);
    }
    if let Some(m) = doc.memory() {
        for (pattern, matrix) in &m.idle_latency.patterns {
            for (cpu, row) in matrix {
                for (mem, &ns) in row {
                    f.add(&IDLE_LATENCY, &[pattern, cpu, mem], Some(ns));
                }
            }
        }
        for (pattern, rows) in &m.delay_latency_bandwidth {
            for &(delay, gib_s, ns) in rows {
                let d = delay.to_string();
                f.add(&LOADED_LATENCY, &[pattern, &d], Some(ns));
                f.add(&LOADED_BANDWIDTH, &[pattern, &d], Some(gib_s));
            }
        }
        for (mix, &v) in &m.peak_bandwidth_mb_s {
            f.add(&PEAK_BANDWIDTH, &[mix], Some(v));
        }
        f.add(&PEAK_SIMD, &[], m.peak_read_simd_mb_s);
        f.add(&MEMCPY_MEDIUM, &[], m.memcpy_medium_mb_s);
        f.add(&MEMCPY_LARGE, &[], m.memcpy_large_mb_s);
        for &(bytes, ns) in &m.cache_latency_ns {
            f.add(&CACHE_LATENCY, &[&bytes.to_string()], Some(ns));
        }
    }
    if let Some(s) = doc.storage() {
        f.add(&READ_IOPS, &[], s.read_iops_4k);
        f.add(&WRITE_IOPS, &[], s.write_iops_4k);
        f.add(&WRITE_MB_S, &[], s.write_mb_s_1m);
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
                    f.add(family, &[p], Some(v));
                }
            }
        }
    }
    f.0
}

/// Every figure of an upstream DCPerf document (what its parser writes), under our names.
pub fn of_upstream(m: &UpstreamMetrics) -> Vec<Figure> {
    let mut f = Figures::default();
    for p in &m.ping {
        f.add(&PING_LATENCY, &[p.hostname.trim()], p.latency.0);
    }
    for b in &m.iperf3_bandwidth {
        f.add(&BANDWIDTH, &[b.hostname.trim()], b.bandwidth.0);
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
    let mem = &m.memory;
    for (pattern, entry) in &mem.idle_latency {
        match entry {
            super::dcperf::IdleEntry::Matrix(matrix) => {
                for (cpu, row) in matrix {
                    for (mem_node, ns) in row {
                        f.add(&IDLE_LATENCY, &[pattern, cpu, mem_node], ns.0);
                    }
                }
            }
            // aarch64: one figure for the first node's local latency of a random chase.
            super::dcperf::IdleEntry::Average(ns) => {
                f.add(&IDLE_LATENCY, &["FullRandom", "Node-0", "Node-0"], ns.0)
            }
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
            f.add(&LOADED_LATENCY, &[pattern, &d], row.2.0);
            f.add(&LOADED_BANDWIDTH, &[pattern, &d], row.1.0);
        }
    }
    for (mix, v) in &mem.peak_bandwidth_mb_s {
        f.add(&PEAK_BANDWIDTH, &[mix], v.0);
    }
    f.add(&MEMCPY_MEDIUM, &[], mem.memcpy_medium_mb_s.0);
    f.add(&MEMCPY_LARGE, &[], mem.memcpy_large_mb_s.0);
    f.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_units_are_set() {
        let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FAMILIES.len());
        let mut prom: Vec<&str> = FAMILIES.iter().map(|f| f.prometheus).collect();
        prom.sort();
        prom.dedup();
        assert_eq!(prom.len(), FAMILIES.len());
        for f in FAMILIES {
            assert!(!f.unit.is_empty() && !f.help.is_empty(), "{}", f.name);
            assert!(
                f.prometheus
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                f.prometheus
            );
        }
    }

    #[test]
    fn keys_drop_the_client_and_find_their_family() {
        let f = Figure::new(&BANDWIDTH, vec!["host.example.com".into()], 9.4).unwrap();
        assert_eq!(f.name(), "network.bandwidth.host.example.com");
        assert_eq!(f.key(), "network.bandwidth");
        assert_eq!(f.client(), Some("host.example.com"));
        let m = Figure::new(
            &IDLE_LATENCY,
            vec!["FullRandom".into(), "Node-0".into(), "Node-1".into()],
            120.0,
        )
        .unwrap();
        assert_eq!(m.key(), "memory.idle_latency.FullRandom.Node-0.Node-1");
        assert_eq!(m.client(), None);
        assert_eq!(family_of_key(&m.key()), Some(&IDLE_LATENCY));
        assert_eq!(family_of_key("network.bandwidth"), Some(&BANDWIDTH));
        assert_eq!(
            family_of_key("network.reverse_bandwidth"),
            Some(&REVERSE_BANDWIDTH)
        );
        assert_eq!(family_of_key("nothing.here"), None);
        assert!(Figure::new(&CALLS, vec![], f64::NAN).is_none());
    }
}
