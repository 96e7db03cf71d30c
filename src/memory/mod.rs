//! The memory section, with mm-mem's methods (`notes/memory-methods.md`) so the figures compare
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
pub mod hugepages;
pub mod latency;
pub mod loaded;
pub mod plan;

use crate::system::topology::Topology;
use bandwidth::{BandwidthConfig, CopyResults, PeakResults};
use chase::Pattern;
use curve::{CurveConfig, CurveResults};
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
    /// Per-thread region used by the bandwidth tests, bytes.
    pub thread_region_bytes: usize,
    /// Threads of the bandwidth tests.
    pub threads: usize,
    /// Parts that failed, and why.
    pub errors: Vec<String>,
    /// Huge-page reservation notes.
    pub notes: Vec<String>,
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
    let mut out = MemoryResults::default();
    let pairs = plan::latency_pairs(topo, usable);
    let curve_sizes = plan::curve_sizes(
        topo.caches.iter().map(|c| c.size_bytes).max(),
        available.map_or(usize::MAX, |a| (a / 4) as usize),
        cfg.curve_fine,
    );
    let _reservation = cfg.reserve_hugepages.then(|| {
        let nodes: Vec<usize> = pairs
            .iter()
            .map(|p| p.mem_node)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let largest = curve_sizes
            .last()
            .copied()
            .unwrap_or(0)
            .max(cfg.region_bytes) as u64;
        let r = hugepages::Reservation::reserve(std::path::Path::new("/"), &nodes, largest);
        out.notes.extend(r.notes.iter().cloned());
        r
    });
    let (threads, region) =
        plan::bandwidth_sizing(cfg.thread_region_bytes, usable.len(), 2, available);
    out.threads = threads;
    out.thread_region_bytes = region;
    if threads < usable.len() {
        out.notes.push(format!(
            "bandwidth tests use {threads} of {} CPUs: the memory available does not hold 2 x 8 MiB for each",
            usable.len()
        ));
    }
    let bw = BandwidthConfig {
        cpus: usable[..threads].to_vec(),
        region_bytes: out.thread_region_bytes,
        phase_time: cfg.bandwidth_time,
        warmup: cfg.warmup,
        repeats: cfg.repeats,
    };
    let go = |wanted: bool| wanted && !should_stop();
    if go(cfg.tests.idle) {
        progress(&format!(
            "memory: idle latency, {} node pair(s)",
            pairs.len()
        ));
        run_idle(cfg, topo, pairs, should_stop, &mut out);
    }
    if go(cfg.tests.peak) {
        progress(&format!("memory: peak bandwidth, {} threads", usable.len()));
        record(
            bandwidth::measure_peak(&bw, should_stop),
            "peak bandwidth",
            should_stop,
            &mut out,
            |o, p| o.peak = p,
        );
    }
    if go(cfg.tests.memcpy) {
        progress("memory: memcpy");
        record(
            bandwidth::measure_memcpy(&bw, should_stop),
            "memcpy",
            should_stop,
            &mut out,
            |o, c| o.memcpy = c,
        );
    }
    if go(cfg.tests.loaded) {
        progress("memory: loaded latency sweep");
        run_loaded(cfg, usable, &bw, should_stop, &mut out);
    }
    if go(cfg.tests.curve) {
        progress(&format!(
            "memory: cache latency curve, {} working sets",
            curve_sizes.len()
        ));
        let curve = CurveConfig {
            cpu: plan::idle_cpu(usable).unwrap_or(0),
            sizes: curve_sizes,
            point_time: cfg.curve_time,
        };
        record(
            curve::measure(&curve, should_stop),
            "cache latency curve",
            should_stop,
            &mut out,
            |o, c| o.curve = c,
        );
    }
    out
}

/// Stores a part's results, or its error (unless a stop request caused it).
fn record<T>(
    result: Result<T, String>,
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
    pairs: Vec<plan::LatencyPair>,
    should_stop: &(dyn Fn() -> bool + Sync),
    out: &mut MemoryResults,
) {
    let idle = IdleConfig {
        pairs,
        bind: topo.nodes.len() > 1,
        region_bytes: cfg.region_bytes,
        point_time: cfg.idle_time,
        warmup: cfg.warmup,
        repeats: cfg.repeats,
        patterns: vec![
            Pattern::RandomInChunk(chase::IDLE_CHUNK),
            Pattern::FullRandom,
        ],
    };
    let (figures, errors) = latency::measure(&idle, should_stop);
    out.idle = figures;
    out.errors.extend(errors);
}

fn run_loaded(
    cfg: &MemoryConfig,
    usable: &[usize],
    bw: &BandwidthConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
    out: &mut MemoryResults,
) {
    let Some(roles) = plan::loaded_roles(usable) else {
        out.errors.push("loaded latency: no usable CPU".into());
        return;
    };
    let mut cpus = vec![roles.chaser];
    cpus.extend(roles.generators);
    let loaded = LoadedConfig {
        cpus,
        region_bytes: bw.region_bytes,
        chain_bytes: cfg.thread_region_bytes,
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
