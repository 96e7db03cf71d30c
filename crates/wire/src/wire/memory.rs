//! The memory section in the wire format: DCPerf's keys (`idle_latency`, `delay_latency_bandwidth`,
//! `peak_bandwidth_mb_s`, `memcpy_*_mb_s`) with mm-mem's units (ns, GiB/s in the sweep, MiB/s for
//! peak and memcpy), and ours beside them (`peak_read_simd_mb_s`, `cache_latency_ns`,
//! `page_size`, `repeats`). Each headline figure is the mean of its repeats.

use super::nullable::nullable;
use crate::memory::MemoryResults;
use crate::memory::latency::IdleFigure;
use crate::stats::min_avg_max;
use crate::system::topology::Cache;
use crate::units::round_to;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `{"Node-i": {"Node-j": value}}`.
pub type NodeMatrix<T> = BTreeMap<String, BTreeMap<String, T>>;

/// One row of the loaded-latency sweep: `[delay, bandwidth, ns]`.
pub type SweepRow = (u32, f64, f64);

/// The memory section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MemoryPart {
    /// Idle latency per pattern and (CPU node, memory node), ns.
    pub idle_latency: IdleLatency,
    /// Loaded-latency sweep per pattern: rows [delay, GiB/s of all threads, ns].
    pub delay_latency_bandwidth: BTreeMap<String, Vec<SweepRow>>,
    /// The same sweep under the name DCPerf's parser writes (same rows); on aarch64 it also holds
    /// `loaded_latency`, the FullRandom sweep as DCPerf's aarch64 path names it, with bandwidth in
    /// MB/s (10^6 B/s) as that tool reports it.
    // Not read by the fleet's readers (`copies.rs`).
    #[serde(
        default,
        deserialize_with = "super::copies::copy",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub delay_bandwidth_latency: BTreeMap<String, Vec<SweepRow>>,
    /// Peak bandwidth per read/write mix, MiB/s (mm-mem prints these as "MB/s").
    pub peak_bandwidth_mb_s: BTreeMap<String, f64>,
    /// Read bandwidth with wide vector loads, MiB/s.
    #[schemars(required, transform = nullable)]
    pub peak_read_simd_mb_s: Option<f64>,
    /// The vector kernel used (`avx512`, `avx2`, `sve256`, `neon`, ...): the fastest in the trial below.
    #[schemars(required, transform = nullable)]
    pub simd_kernel: Option<String>,
    /// Every vector kernel the CPU runs, with its read MiB/s in the short trial (all threads,
    /// the same regions) that chose `simd_kernel`. Absent where the CPU runs one kernel only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub simd_kernel_trial_mb_s: BTreeMap<String, f64>,
    /// 16 KiB memcpy, MiB/s (bytes copied counted once).
    #[schemars(required, transform = nullable)]
    pub memcpy_medium_mb_s: Option<f64>,
    /// 128 MiB memcpy, MiB/s.
    #[schemars(required, transform = nullable)]
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
    /// The loaded sweep's chain (each pattern), MiB.
    #[serde(default)]
    pub loaded_chain_mib: usize,
    /// One instance of the last-level cache, bytes: working sets must exceed it 4x (a chain)
    /// or the whole cache 4x (a bandwidth test) to measure memory, not cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_bytes: Option<u64>,
    /// Every instance of the last-level cache together, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_total_bytes: Option<u64>,
    /// Parts that failed, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Huge-page reservation notes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Idle latency per pattern, `{"FullRandom": {"Node-0": {"Node-1": ns}}}`; on aarch64 also
/// `avg_latency`, the name DCPerf's aarch64 path gives its one idle figure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleLatency {
    /// The aarch64 name for the local FullRandom latency of the first node, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_latency: Option<f64>,
    /// Per pattern: CPU node -> memory node -> ns.
    #[serde(flatten)]
    pub patterns: BTreeMap<String, NodeMatrix<f64>>,
}

impl JsonSchema for IdleLatency {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IdleLatency".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let matrix = generator.subschema_for::<NodeMatrix<f64>>();
        schemars::json_schema!({
            "description": "Per pattern (FullRandom, RandomInChunk): CPU node -> memory node -> ns;                             on aarch64 also avg_latency (ns), DCPerf's aarch64 name.",
            "type": "object",
            "properties": { "avg_latency": { "type": "number" } },
            "additionalProperties": matrix
        })
    }
}

/// Page sizes: `1G`, `2M`, `2M (THP)`, `4K`, or a THP share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PageSizes {
    /// Per idle-latency pattern.
    pub idle_latency: BTreeMap<String, String>,
    /// Per sweep pattern (the chaser's chain).
    pub delay_latency_bandwidth: BTreeMap<String, String>,
    /// The cache curve's region.
    pub cache_latency_ns: Option<String>,
}

/// Spread of one repeated figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MinAvgMax {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Largest.
    pub max: f64,
}

/// Repeat statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
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
            idle_latency: IdleLatency {
                avg_latency: None,
                patterns: idle.latency,
            },
            delay_latency_bandwidth: sweep,
            delay_bandwidth_latency: BTreeMap::new(),
            peak_bandwidth_mb_s: peak_spread
                .iter()
                .map(|(k, s)| (k.clone(), s.avg))
                .collect(),
            peak_read_simd_mb_s: simd.map(|s| s.avg),
            simd_kernel: simd.and(r.peak.simd.as_ref().map(|(n, _)| n.to_string())),
            simd_kernel_trial_mb_s: r
                .peak
                .simd_trials
                .iter()
                .map(|&(name, mib_s)| (name.to_string(), round_to(mib_s, 1)))
                .collect(),
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
            loaded_chain_mib: r.loaded_chain_bytes >> 20,
            llc_bytes: r.llc.map(|c| c.instance),
            llc_total_bytes: r.llc.map(|c| c.total),
            errors: r.errors.clone(),
            notes: r.notes.clone(),
        }
    }

    /// Adds DCPerf's parser names (see [`super::document::Document::add_dcperf_names`]).
    pub fn add_dcperf_names(&mut self, aarch64: bool) {
        self.delay_bandwidth_latency = self.delay_latency_bandwidth.clone();
        if !aarch64 {
            return;
        }
        // DCPerf's aarch64 tool chases one random cycle (FullRandom here) and reports decimal MB/s.
        let chase = self
            .delay_latency_bandwidth
            .get("FullRandom")
            .or_else(|| self.delay_latency_bandwidth.values().next());
        if let Some(rows) = chase {
            let mb_s = |gib_s: f64| round_to(gib_s * (1u64 << 30) as f64 / 1e6, 1);
            let rows = rows.iter().map(|&(d, g, ns)| (d, mb_s(g), ns)).collect();
            self.delay_bandwidth_latency
                .insert("loaded_latency".into(), rows);
        }
        self.idle_latency.avg_latency = self
            .idle_latency
            .patterns
            .get("FullRandom")
            .or_else(|| self.idle_latency.patterns.values().next())
            .and_then(|m| m.iter().find_map(|(cpu, row)| row.get(cpu)).copied());
    }

    /// Whether no part produced a figure.
    pub fn is_empty(&self) -> bool {
        self.idle_latency.patterns.is_empty()
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
        assert_eq!(
            part.idle_latency.patterns["FullRandom"]["Node-0"]["Node-1"],
            105.0
        );
        r.idle[1].page_size = "4K".into();
        let part = MemoryPart::from_results(&r, 2, &[]);
        assert_eq!(part.page_size.idle_latency["FullRandom"], "mixed");
    }

    #[test]
    fn dcperf_names_on_x86_and_aarch64() {
        use crate::memory::loaded::{LoadedResults, SweepRow};
        let row = |delay, gib_s, ns| SweepRow { delay, gib_s, ns };
        let r = MemoryResults {
            idle: vec![figure(0, "1G"), figure(1, "1G")],
            loaded: LoadedResults {
                sweeps: vec![(
                    Pattern::FullRandom,
                    vec![row(1, 10.0, 180.0), row(2048, 1.0, 120.0)],
                    "1G".into(),
                )],
            },
            ..Default::default()
        };
        let mut x86 = MemoryPart::from_results(&r, 2, &[]);
        x86.add_dcperf_names(false);
        assert_eq!(x86.delay_bandwidth_latency, x86.delay_latency_bandwidth);
        assert!(!x86.delay_bandwidth_latency.contains_key("loaded_latency"));
        assert_eq!(x86.idle_latency.avg_latency, None);

        let mut arm = MemoryPart::from_results(&r, 2, &[]);
        arm.add_dcperf_names(true);
        let json = serde_json::to_value(&arm).unwrap();
        // DCPerf's aarch64 tool: [delay, decimal MB/s, ns] rows and one idle figure.
        let loaded = &json["delay_bandwidth_latency"]["loaded_latency"];
        assert_eq!(loaded[0], serde_json::json!([1, 10737.4, 180.0]));
        assert_eq!(loaded[1], serde_json::json!([2048, 1073.7, 120.0]));
        assert_eq!(json["idle_latency"]["avg_latency"], 105.0);
        assert!(json["delay_bandwidth_latency"]["FullRandom"].is_array());
    }
}
