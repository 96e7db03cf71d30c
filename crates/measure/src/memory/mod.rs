//! The memory section, with mm-mem's methods (`docs/memory-methods.md`) so the figures compare
//! with DCPerf's: idle latency per (CPU node, memory node) pair for FullRandom and RandomInChunk
//! chains (ns), the loaded-latency delay sweep ([delay, GiB/s, ns]), peak bandwidth for four
//! read/write mixes and a vector read kernel (MiB/s), memcpy of 16 KiB and 128 MiB pieces (MiB/s),
//! and a cache-latency curve ([bytes, ns]). Every part is time-boxed; a part that fails is
//! recorded and the others still run.

pub mod arch;
pub mod bandwidth;
pub mod buffer;
pub mod chase;
pub mod crew;
pub mod curve;
pub mod error;
pub mod hugepages;
pub mod latency;
pub mod loaded;
pub mod plan;

use crate::system::topology::Topology;
use bandwidth::{BandwidthConfig, CopyResults, PeakResults};
use chase::Pattern;
use curve::{CurveConfig, CurveResults};
use error::MemoryError;
use latency::{IdleConfig, IdleFigure};
use loaded::{LoadedConfig, LoadedResults};
use std::time::Duration;

/// Validated memory-section settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    /// Idle-latency chain size (mm-mem: 512 MiB).
    pub region_bytes: usize,
    /// Per-thread region of the bandwidth, memcpy and loaded tests (mm-mem: 128 MiB).
    pub thread_region_bytes: usize,
    /// Measurements per idle-latency cell and per bandwidth figure.
    pub repeats: usize,
    /// Measured time per idle-latency repeat.
    pub idle_time: Duration,
    /// Measured time per bandwidth and memcpy phase.
    pub bandwidth_time: Duration,
    /// Measured time per loaded-latency delay.
    pub sweep_time: Duration,
    /// Measured time per cache-curve working set.
    pub curve_time: Duration,
    /// Unmeasured warm-up before each test.
    pub warmup: Duration,
    /// Grow the hugetlb pools for the run (and restore them).
    pub reserve_hugepages: bool,
    /// Measure the cache curve at 1.5 x 2^k bytes too, not only at 2^k.
    pub curve_fine: bool,
    /// Which parts to run.
    pub tests: Tests,
    /// Working sets grow to this multiple of the last-level cache where memory allows (the
    /// `memory.working_set_factor` threshold, which also judges them).
    pub working_set_factor: f64,
    /// Idle latency of the FullRandom chain only (the check level); else both patterns.
    pub idle_full_random_only: bool,
    /// Peak bandwidth of the all-reads mix only (the check level); else every mix and the
    /// vector read.
    pub peak_all_reads_only: bool,
    /// Most idle-latency node pairs to measure (a level's time budget): local pairs first, then
    /// remote ones spread over the matrix; the rest are named in a note. `None`: all.
    pub max_idle_pairs: Option<usize>,
    /// What a level's time budget left out of the section (beyond the pairs), for its notes.
    pub budget_notes: Vec<String>,
}

/// Which parts of the section run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tests {
    /// Idle latency matrix.
    pub idle: bool,
    /// Peak bandwidth and vector reads.
    pub peak: bool,
    /// memcpy.
    pub memcpy: bool,
    /// Loaded-latency sweep.
    pub loaded: bool,
    /// Cache-latency curve.
    pub curve: bool,
}

impl Tests {
    /// Every part.
    pub const ALL: Tests = Tests {
        idle: true,
        peak: true,
        memcpy: true,
        loaded: true,
        curve: true,
    };
}

/// Everything the section measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryResults {
    /// Idle latency cells.
    pub idle: Vec<IdleFigure>,
    /// The loaded-latency sweeps.
    pub loaded: LoadedResults,
    /// Peak bandwidth.
    pub peak: PeakResults,
    /// memcpy bandwidth.
    pub memcpy: CopyResults,
    /// The cache-latency curve.
    pub curve: CurveResults,
    /// The idle-latency chain, bytes (the configured size, or less when memory is short).
    pub region_bytes: usize,
    /// Per-thread region used by the bandwidth tests, bytes.
    pub thread_region_bytes: usize,
    /// Threads of the bandwidth tests.
    pub threads: usize,
    /// The loaded sweep's chain, bytes.
    pub loaded_chain_bytes: usize,
    /// The last-level cache the working sets were sized against.
    pub llc: Option<plan::LastLevelCache>,
    /// Parts that failed, and why.
    pub errors: Vec<String>,
    /// Huge-page reservation notes.
    pub notes: Vec<String>,
}

/// Roughly how long one idle-latency cell (both patterns) takes: building the chain (about a
/// second per GiB, first touch included), the warm-up and the repeats.
pub fn idle_cell_time(cfg: &MemoryConfig) -> Duration {
    let build = Duration::from_secs_f64(cfg.region_bytes as f64 / f64::from(1u32 << 30));
    2 * (build + cfg.warmup + cfg.idle_time * cfg.repeats as u32)
}

/// Runs the section on the CPUs in `usable`. `available` is MemAvailable in bytes (regions
/// shrink to fit); `progress` gets one line per part.
pub fn run(
    cfg: &MemoryConfig,
    topo: &Topology,
    usable: &[usize],
    available: Option<u64>,
    should_stop: &(dyn Fn() -> bool + Sync),
    progress: &dyn Fn(&str),
) -> MemoryResults {
    if usable.is_empty() {
        return MemoryResults {
            errors: vec![
                "no usable CPU: the topology lists no online CPU this process may run on \
                 (check /sys/devices/system/cpu and the affinity mask: taskset, cpusets)"
                    .into(),
            ],
            ..Default::default()
        };
    }
    let plan = RunPlan::new(cfg, topo, usable, available);
    let mut out = MemoryResults {
        region_bytes: plan.idle_region,
        thread_region_bytes: plan.bw.region_bytes,
        threads: plan.bw.cpus.len(),
        loaded_chain_bytes: plan.loaded_chain,
        llc: plan.llc,
        notes: plan.notes.clone(),
        ..Default::default()
    };
    let _reservation = cfg.reserve_hugepages.then(|| {
        let r = plan.reserve_hugepages();
        out.notes.extend(r.notes.iter().cloned());
        r
    });
    let go = |wanted: bool| wanted && !should_stop();
    if go(cfg.tests.idle) {
        progress(&format!(
            "memory: idle latency, {} node pair(s)",
            plan.pairs.len()
        ));
        run_idle(cfg, topo, &plan, should_stop, &mut out);
    }
    if go(cfg.tests.peak) {
        progress(&format!(
            "memory: peak bandwidth, {} threads",
            plan.bw.cpus.len()
        ));
        record(
            bandwidth::measure_peak(&plan.bw, should_stop),
            "peak bandwidth",
            should_stop,
            &mut out,
            |o, p| o.peak = p,
        );
    }
    if go(cfg.tests.memcpy) {
        progress("memory: memcpy");
        record(
            bandwidth::measure_memcpy(&plan.bw, should_stop),
            "memcpy",
            should_stop,
            &mut out,
            |o, c| o.memcpy = c,
        );
    }
    if go(cfg.tests.loaded) {
        progress("memory: loaded latency sweep");
        run_loaded(cfg, &plan.bw, plan.loaded_chain, should_stop, &mut out);
    }
    if go(cfg.tests.curve) {
        progress(&format!(
            "memory: cache latency curve, {} working sets",
            plan.curve.sizes.len()
        ));
        record(
            curve::measure(&plan.curve, should_stop),
            "cache latency curve",
            should_stop,
            &mut out,
            |o, c| o.curve = c,
        );
    }
    out
}

/// What a run measures with how much memory, decided before anything is allocated.
struct RunPlan {
    /// The idle-latency chain, bytes.
    idle_region: usize,
    /// The idle-latency cells.
    pairs: Vec<plan::LatencyPair>,
    /// The bandwidth, memcpy and loaded-latency threads and regions.
    bw: BandwidthConfig,
    /// The loaded sweep's chain (each of two patterns), bytes.
    loaded_chain: usize,
    /// The last-level cache the working sets are sized against.
    llc: Option<plan::LastLevelCache>,
    /// The cache curve.
    curve: CurveConfig,
    /// Why the plan is smaller than asked, for people.
    notes: Vec<String>,
}

impl RunPlan {
    /// Fits the configured sizes to `available` bytes (MemAvailable and the cgroup limit): every
    /// allocation of the section is planned here, before anything is allocated. Working sets grow
    /// to `working_set_factor` x the last-level cache where memory allows, so the figures
    /// measure memory rather than caches (one instance for a single chasing thread, all instances
    /// for the threads of the bandwidth tests).
    fn new(cfg: &MemoryConfig, topo: &Topology, usable: &[usize], available: Option<u64>) -> Self {
        let mut notes = cfg.budget_notes.clone();
        let llc = plan::LastLevelCache::of(topo);
        let factor = cfg.working_set_factor;
        let chain_wanted = llc.map_or(cfg.region_bytes, |c| {
            plan::beyond_cache(cfg.region_bytes, c.instance, factor)
        });
        if chain_wanted > cfg.region_bytes {
            notes.push(format!(
                "the idle-latency chain grows from {} MiB to {} MiB: {factor} x the {} MiB \
                 last-level cache",
                cfg.region_bytes >> 20,
                chain_wanted >> 20,
                llc.map_or(0, |c| c.instance >> 20)
            ));
        }
        let idle_region = plan::idle_region(chain_wanted, available);
        if idle_region < chain_wanted {
            notes.push(format!(
                "idle latency uses a {} MiB chain: the memory available does not hold {} MiB x 4",
                idle_region >> 20,
                chain_wanted >> 20
            ));
        }
        let threads_wanted = usable.len().max(1);
        let region_wanted = llc.map_or(cfg.thread_region_bytes, |c| {
            plan::beyond_cache(0, c.total, factor)
                .div_ceil(threads_wanted)
                .max(cfg.thread_region_bytes)
        });
        let (threads, region) = plan::bandwidth_sizing(region_wanted, usable.len(), 2, available);
        let threads = threads.min(usable.len());
        if threads < usable.len() {
            notes.push(format!(
                "bandwidth tests use {threads} of {} CPUs: the memory available does not hold \
                 2 x 8 MiB for each",
                usable.len()
            ));
        }
        let chaser_wanted = llc.map_or(cfg.thread_region_bytes, |c| {
            plan::beyond_cache(cfg.thread_region_bytes, c.instance, factor)
        });
        let loaded_chain =
            plan::loaded_chain(chaser_wanted, threads.saturating_sub(1), region, available);
        if loaded_chain < chaser_wanted {
            notes.push(format!(
                "the loaded-latency chaser uses {} MiB chains: the memory available does not \
                 hold {} MiB beside the generators",
                loaded_chain >> 20,
                chaser_wanted >> 20
            ));
        }
        let mut pairs = plan::latency_pairs(topo, usable, idle_region);
        if let Some(max) = cfg.max_idle_pairs.filter(|&m| m < pairs.len()) {
            let all = pairs.len();
            pairs = plan::sample_pairs(pairs, max);
            notes.push(format!(
                "idle latency measured on {max} of {all} node pairs (the profile's time budget): \
                 {}; the others are not measured (--profile thorough measures all)",
                pairs
                    .iter()
                    .map(|p| format!("{}>{}", p.cpu_node, p.mem_node))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        RunPlan {
            idle_region,
            pairs,
            bw: BandwidthConfig {
                cpus: usable[..threads].to_vec(),
                region_bytes: region,
                phase_time: cfg.bandwidth_time,
                warmup: cfg.warmup,
                repeats: cfg.repeats,
                mixes: if cfg.peak_all_reads_only {
                    vec![arch::Mix::AllReads]
                } else {
                    arch::Mix::ALL.to_vec()
                },
                simd: !cfg.peak_all_reads_only,
            },
            loaded_chain,
            llc,
            curve: CurveConfig {
                cpu: plan::idle_cpu(usable).unwrap_or(0),
                sizes: plan::curve_sizes(
                    topo.caches.iter().map(|c| c.size_bytes).max(),
                    available.map_or(usize::MAX, |a| (a / 4) as usize),
                    cfg.curve_fine,
                ),
                point_time: cfg.curve_time,
            },
            notes,
        }
    }

    /// Grows the hugetlb pools of the measured nodes enough for the largest chain.
    fn reserve_hugepages(&self) -> hugepages::Reservation {
        let nodes: Vec<usize> = self
            .pairs
            .iter()
            .map(|p| p.mem_node)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let largest = self
            .curve
            .sizes
            .iter()
            .copied()
            .fold(self.idle_region, usize::max);
        hugepages::Reservation::reserve(std::path::Path::new("/"), &nodes, largest as u64)
    }
}

/// Stores a part's results, or its error (unless a stop request caused it).
fn record<T>(
    result: Result<T, MemoryError>,
    part: &str,
    should_stop: &(dyn Fn() -> bool + Sync),
    out: &mut MemoryResults,
    store: impl FnOnce(&mut MemoryResults, T),
) {
    match result {
        Ok(v) => store(out, v),
        Err(_) if should_stop() => {}
        Err(e) => out.errors.push(format!("{part}: {e}")),
    }
}

fn run_idle(
    cfg: &MemoryConfig,
    topo: &Topology,
    plan: &RunPlan,
    should_stop: &(dyn Fn() -> bool + Sync),
    out: &mut MemoryResults,
) {
    if plan.pairs.is_empty() {
        out.errors.push(format!(
            "idle latency: no node pair to measure: a row needs usable CPUs (taskset, cpusets) \
             and a column {} MiB of memory for the {} MiB chain (--memory-size)",
            plan::min_target_node_kib(plan.idle_region) >> 10,
            plan.idle_region >> 20
        ));
        return;
    }
    let idle = IdleConfig {
        pairs: plan.pairs.clone(),
        bind: topo.nodes.len() > 1,
        region_bytes: plan.idle_region,
        point_time: cfg.idle_time,
        warmup: cfg.warmup,
        repeats: cfg.repeats,
        patterns: if cfg.idle_full_random_only {
            vec![Pattern::FullRandom]
        } else {
            vec![
                Pattern::RandomInChunk(chase::IDLE_CHUNK),
                Pattern::FullRandom,
            ]
        },
    };
    let (figures, errors) = latency::measure(&idle, should_stop);
    out.idle = figures;
    out.errors.extend(errors);
}

fn run_loaded(
    cfg: &MemoryConfig,
    bw: &BandwidthConfig,
    chain_bytes: usize,
    should_stop: &(dyn Fn() -> bool + Sync),
    out: &mut MemoryResults,
) {
    // The bandwidth threads' CPUs: their regions are what fits in memory.
    let Some(roles) = plan::loaded_roles(&bw.cpus) else {
        out.errors.push("loaded latency: no usable CPU".into());
        return;
    };
    let mut cpus = vec![roles.chaser];
    cpus.extend(roles.generators);
    let loaded = LoadedConfig {
        cpus,
        region_bytes: bw.region_bytes,
        chain_bytes,
        point_time: cfg.sweep_time,
        warmup: cfg.warmup,
        patterns: vec![
            Pattern::RandomInChunk(chase::LOADED_CHUNK),
            Pattern::FullRandom,
        ],
    };
    record(
        loaded::measure(&loaded, should_stop),
        "loaded latency",
        should_stop,
        out,
        |o, l| o.loaded = l,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_usable_cpu_is_an_error_not_a_panic() {
        let ms = Duration::from_millis;
        let cfg = MemoryConfig {
            region_bytes: 16 << 20,
            thread_region_bytes: 8 << 20,
            repeats: 1,
            idle_time: ms(10),
            bandwidth_time: ms(10),
            sweep_time: ms(10),
            curve_time: ms(10),
            warmup: ms(0),
            reserve_hugepages: false,
            curve_fine: false,
            tests: Tests::ALL,
            working_set_factor: 4.0,
            idle_full_random_only: false,
            peak_all_reads_only: false,
            max_idle_pairs: None,
            budget_notes: Vec::new(),
        };
        let r = run(&cfg, &Topology::default(), &[], None, &|| false, &|_| {});
        assert!(r.errors[0].contains("no usable CPU"), "{:?}", r.errors);
        assert!(r.idle.is_empty() && r.peak.mixes.is_empty());
    }
}
