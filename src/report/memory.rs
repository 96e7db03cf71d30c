//! The memory section in the wire format: DCPerf's keys (`idle_latency`, `delay_latency_bandwidth`,
//! `peak_bandwidth_mb_s`, `memcpy_*_mb_s`) with mm-mem's units (ns, GiB/s in the sweep, MiB/s for
//! peak and memcpy), and ours beside them (`peak_read_simd_mb_s`, `cache_latency_ns`,
//! `page_size`, `repeats`). Each headline figure is the mean of its repeats.

use crate::memory::MemoryResults;
use crate::memory::latency::IdleFigure;
use crate::stats::min_avg_max;
use crate::system::topology::Cache;
use crate::units::round_to;
use serde::Serialize;
use std::collections::BTreeMap;

/// `{"Node-i": {"Node-j": value}}`.
pub type NodeMatrix<T> = BTreeMap<String, BTreeMap<String, T>>;

/// The memory section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryPart {
    /// Idle latency per pattern and (CPU node, memory node), ns.
    pub idle_latency: BTreeMap<String, NodeMatrix<f64>>,
    /// Loaded-latency sweep per pattern: rows [delay, GiB/s of all threads, ns].
    pub delay_latency_bandwidth: BTreeMap<String, Vec<(u32, f64, f64)>>,
    /// Peak bandwidth per read/write mix, MiB/s (mm-mem prints these as "MB/s").
    pub peak_bandwidth_mb_s: BTreeMap<String, f64>,
    /// Read bandwidth with wide vector loads, MiB/s.
    pub peak_read_simd_mb_s: Option<f64>,
    /// The vector kernel used (`avx512`, `avx2`, `neon`, ...).
    pub simd_kernel: Option<String>,
    /// 16 KiB memcpy, MiB/s (bytes copied counted once).
    pub memcpy_medium_mb_s: Option<f64>,
    /// 128 MiB memcpy, MiB/s.
    pub memcpy_large_mb_s: Option<f64>,
    /// Latency by working set: [bytes, ns].
    pub cache_latency_ns: Vec<(usize, f64)>,
    /// The data and unified cache sizes the curve is judged against (one instance), bytes.
    pub cache_sizes_bytes: BTreeMap<String, u64>,
    /// Pages backing each measurement.
    pub page_size: PageSizes,
    /// min/avg/max of every repeated figure.
    pub repeats: Repeats,
    /// The idle-latency chain, MiB.
    pub region_mib: usize,
    /// Each bandwidth thread's region, MiB.
    pub thread_region_mib: usize,
    /// Threads of the bandwidth tests (one per usable CPU).
    pub threads: usize,
    /// Parts that failed, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Huge-page reservation notes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Page sizes: `1G`, `2M`, `2M (THP)`, `4K`, or a THP share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageSizes {
    /// Per idle-latency pattern.
    pub idle_latency: BTreeMap<String, String>,
    /// Per sweep pattern (the chaser's chain).
    pub delay_latency_bandwidth: BTreeMap<String, String>,
    /// The cache curve's region.
    pub cache_latency_ns: Option<String>,
}

/// Spread of one repeated figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MinAvgMax {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Largest.
    pub max: f64,
}

/// Repeat statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repeats {
    /// Measurements per figure.
    pub count: usize,
    /// Per pattern and node pair, ns.
    pub idle_latency: BTreeMap<String, NodeMatrix<MinAvgMax>>,
    /// Per mix, MiB/s.
    pub peak_bandwidth_mb_s: BTreeMap<String, MinAvgMax>,
    /// MiB/s.
    pub peak_read_simd_mb_s: Option<MinAvgMax>,
    /// MiB/s.
    pub memcpy_medium_mb_s: Option<MinAvgMax>,
    /// MiB/s.
    pub memcpy_large_mb_s: Option<MinAvgMax>,
}

fn spread(samples: &[f64], digits: i32) -> Option<MinAvgMax> {
    let (min, avg, max) = min_avg_max(samples)?;
    Some(MinAvgMax {
        min: round_to(min, digits),
        avg: round_to(avg, digits),
        max: round_to(max, digits),
    })
}

fn node(id: usize) -> String {
    format!("Node-{id}")
}

/// The idle-latency figures as pattern -> CPU node -> memory node tables.
#[derive(Default)]
struct IdleTables {
    /// Mean ns per cell.
    latency: BTreeMap<String, NodeMatrix<f64>>,
    /// Repeats per cell.
    spread: BTreeMap<String, NodeMatrix<MinAvgMax>>,
    /// Page size per pattern (`mixed` when cells differ).
    pages: BTreeMap<String, String>,
}

/// The row of CPU node `cpu` in `pattern`'s table.
fn row<'a, T>(
    tables: &'a mut BTreeMap<String, NodeMatrix<T>>,
    pattern: &str,
    cpu: &str,
) -> &'a mut BTreeMap<String, T> {
    tables
        .entry(pattern.to_string())
        .or_default()
        .entry(cpu.to_string())
        .or_default()
}

impl IdleTables {
    fn from_figures(figures: &[IdleFigure]) -> Self {
        let mut t = IdleTables::default();
        for f in figures {
            let Some(s) = spread(&f.ns, 1) else { continue };
            let key = f.pattern.name().to_string();
            let (cpu, mem) = (node(f.pair.cpu_node), node(f.pair.mem_node));
            row(&mut t.latency, &key, &cpu).insert(mem.clone(), s.avg);
            row(&mut t.spread, &key, &cpu).insert(mem, s);
            // Node pairs can get different pages (huge pages short on one node): say so.
            t.pages
                .entry(key)
                .and_modify(|p| {
                    if *p != f.page_size {
                        *p = "mixed".into();
                    }
                })
                .or_insert_with(|| f.page_size.clone());
        }
        t
    }
}

impl MemoryPart {
    /// Builds the section from the results; `caches` are the machine's cache levels.
    pub fn from_results(r: &MemoryResults, repeats: usize, caches: &[Cache]) -> Self {
        let idle = IdleTables::from_figures(&r.idle);
        let mut sweep = BTreeMap::new();
        let mut sweep_pages = BTreeMap::new();
        for (pattern, rows, page) in r
            .loaded
            .sweeps
            .iter()
            .filter(|(_, rows, _)| !rows.is_empty())
        {
            let rows = rows
                .iter()
                .map(|x| (x.delay, round_to(x.gib_s, 2), round_to(x.ns, 1)))
                .collect();
            sweep.insert(pattern.name().to_string(), rows);
            sweep_pages.insert(pattern.name().to_string(), page.clone());
        }
        let peak_spread: BTreeMap<String, MinAvgMax> = r
            .peak
            .mixes
            .iter()
            .filter_map(|(m, v)| spread(v, 1).map(|s| (m.label().to_string(), s)))
            .collect();
        let simd = r.peak.simd.as_ref().and_then(|(_, v)| spread(v, 1));
        let medium = spread(&r.memcpy.medium, 1);
        let large = spread(&r.memcpy.large, 1);
        MemoryPart {
            idle_latency: idle.latency,
            delay_latency_bandwidth: sweep,
            peak_bandwidth_mb_s: peak_spread
                .iter()
                .map(|(k, s)| (k.clone(), s.avg))
                .collect(),
            peak_read_simd_mb_s: simd.map(|s| s.avg),
            simd_kernel: simd.and(r.peak.simd.as_ref().map(|(n, _)| n.to_string())),
            memcpy_medium_mb_s: medium.map(|s| s.avg),
            memcpy_large_mb_s: large.map(|s| s.avg),
            cache_latency_ns: r
                .curve
                .points
                .iter()
                .map(|&(b, ns)| (b, round_to(ns, 2)))
                .collect(),
            cache_sizes_bytes: caches
                .iter()
                .filter(|c| c.kind != "Instruction")
                .map(|c| (c.name.clone(), c.size_bytes))
                .collect(),
            page_size: PageSizes {
                idle_latency: idle.pages,
                delay_latency_bandwidth: sweep_pages,
                cache_latency_ns: (!r.curve.points.is_empty()).then(|| r.curve.page_size.clone()),
            },
            repeats: Repeats {
                count: repeats,
                idle_latency: idle.spread,
                peak_bandwidth_mb_s: peak_spread,
                peak_read_simd_mb_s: simd,
                memcpy_medium_mb_s: medium,
                memcpy_large_mb_s: large,
            },
            region_mib: r.region_bytes >> 20,
            thread_region_mib: r.thread_region_bytes >> 20,
            threads: r.threads,
            errors: r.errors.clone(),
            notes: r.notes.clone(),
        }
    }

    /// Whether no part produced a figure.
    pub fn is_empty(&self) -> bool {
        self.idle_latency.is_empty()
            && self.delay_latency_bandwidth.is_empty()
            && self.peak_bandwidth_mb_s.is_empty()
            && self.memcpy_large_mb_s.is_none()
            && self.cache_latency_ns.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::chase::Pattern;
    use crate::memory::latency::IdleFigure;
    use crate::memory::plan::LatencyPair;

    fn figure(mem_node: usize, page_size: &str) -> IdleFigure {
        IdleFigure {
            pattern: Pattern::FullRandom,
            pair: LatencyPair {
                cpu_node: 0,
                cpu: 0,
                mem_node,
            },
            ns: vec![100.0, 110.0],
            page_size: page_size.into(),
        }
    }

    #[test]
    fn idle_cells_on_different_pages_are_reported_as_mixed() {
        let mut r = MemoryResults {
            idle: vec![figure(0, "1G"), figure(1, "1G")],
            ..Default::default()
        };
        let part = MemoryPart::from_results(&r, 2, &[]);
        assert_eq!(part.page_size.idle_latency["FullRandom"], "1G");
        assert_eq!(part.idle_latency["FullRandom"]["Node-0"]["Node-1"], 105.0);
        r.idle[1].page_size = "4K".into();
        let part = MemoryPart::from_results(&r, 2, &[]);
        assert_eq!(part.page_size.idle_latency["FullRandom"], "mixed");
    }
}
