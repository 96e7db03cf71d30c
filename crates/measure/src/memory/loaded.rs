//! The loaded-latency sweep (mm-mem's `cpu_loaded_latency`): the first usable CPU chases a
//! 128 MiB chain while every other usable CPU generates 2:1 read/write traffic, throttled by the
//! NOPs the delay label stands for (see `arch::nops_per_group`). Per delay:
//! latency = the chaser's ns per load; bandwidth = (chased lines x 128 B + generators' bytes x
//! 1.5) over the mean thread time, in GiB/s, so the chaser's own traffic is included.
//!
//! Only loads chased under full load count: in each point the chaser starts its clock once every
//! generator is running, and the generators keep going until the chaser has stopped its clock.

use super::arch::{self, DELAYS, Mix};
use super::buffer::{BLOCK, Chain, Pages, Position, Region};
use super::chase::{self, Pattern, STRIDE};
use super::crew::{self, Sample};
use super::error::{MemoryError, Result};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Chase calls between clock readings (16 Ki loads).
const CHASE_BATCH: usize = 64;
/// Generator blocks between clock readings.
const GEN_BATCH: usize = 8;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Sweep settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    /// The chaser's CPU first, then the generators'.
    pub cpus: Vec<usize>,
    /// Each generator's region.
    pub region_bytes: usize,
    /// The chaser's chain (mm-mem: 128 MiB; kept when generators' regions shrink to fit memory,
    /// so the chase still misses the caches).
    pub chain_bytes: usize,
    /// Length of each delay point.
    pub point_time: Duration,
    /// Length of the unmeasured first point of each pattern.
    pub warmup: Duration,
    /// Chain patterns to sweep, in order.
    pub patterns: Vec<Pattern>,
}

/// One row of the sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepRow {
    /// The delay label.
    pub delay: u32,
    /// All threads' traffic, GiB/s.
    pub gib_s: f64,
    /// The chaser's latency, ns.
    pub ns: f64,
}

/// A sweep per pattern, with the chain's page size.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoadedResults {
    /// (pattern, rows, page size of the chain).
    pub sweeps: Vec<(Pattern, Vec<SweepRow>, String)>,
}

#[derive(Clone, Copy)]
struct Point {
    pattern: usize,
    delay: u32,
    warmup: bool,
}

enum Role {
    Chaser(Vec<(Chain, Position)>),
    Generator(Region, usize),
}

/// Longest wait for the other side of a point (a thread that failed or was stopped never comes).
const OVERLAP_PATIENCE: Duration = Duration::from_secs(1);

/// Keeps each point's chase inside the generators' run. Counters only grow: the k-th point (from
/// 1) has begun once `started` reaches k x generators, and is chased once `chased` reaches k.
struct Overlap {
    generators: usize,
    started: AtomicUsize,
    chased: AtomicUsize,
}

impl Overlap {
    fn new(generators: usize) -> Self {
        Overlap {
            generators,
            started: AtomicUsize::new(0),
            chased: AtomicUsize::new(0),
        }
    }

    /// The chaser's `k`-th point (counted from 1): its clock starts once every generator runs
    /// that point, and the generators stop only after it has stopped.
    fn chase(
        &self,
        k: usize,
        time: Duration,
        should_stop: &(dyn Fn() -> bool + Sync),
        step: impl FnMut() -> f64,
    ) -> Sample {
        let want = k * self.generators;
        wait_until(|| self.started.load(Ordering::Acquire) >= want, should_stop);
        let sample = crew::timed(time, should_stop, step);
        self.chased.fetch_max(k, Ordering::AcqRel);
        sample
    }

    /// A generator's `k`-th point: at least `time`, and on until the chaser is done.
    fn generate(
        &self,
        k: usize,
        time: Duration,
        should_stop: &(dyn Fn() -> bool + Sync),
        mut step: impl FnMut() -> f64,
    ) -> Sample {
        let start = Instant::now();
        self.started.fetch_add(1, Ordering::AcqRel);
        let mut work = 0.0;
        loop {
            work += step();
            let elapsed = start.elapsed();
            let chased = self.chased.load(Ordering::Acquire) >= k;
            if (elapsed >= time && chased) || should_stop() || elapsed >= time + OVERLAP_PATIENCE {
                return Sample { work, elapsed };
            }
        }
    }
}

/// Spins (yielding) until `ready`, a stop request, or [`OVERLAP_PATIENCE`].
fn wait_until(ready: impl Fn() -> bool, should_stop: &(dyn Fn() -> bool + Sync)) {
    let give_up = Instant::now() + OVERLAP_PATIENCE;
    while !ready() && !should_stop() && Instant::now() < give_up {
        std::thread::yield_now();
    }
}

/// Runs the sweep.
pub fn measure(
    cfg: &LoadedConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<LoadedResults> {
    let phases = phases(cfg.patterns.len());
    let pages = Mutex::new(Vec::new());
    let overlap = Overlap::new(cfg.cpus.len().saturating_sub(1));
    let setup = |i: usize| setup_role(cfg, i, &pages, should_stop).map(|r| (r, 0usize));
    let work = |_: usize, (role, done): &mut (Role, usize), point: &Point| -> Sample {
        let time = if point.warmup {
            cfg.warmup
        } else {
            cfg.point_time
        };
        *done += 1;
        let k = *done;
        match role {
            Role::Chaser(chains) => {
                let (chain, pos) = &mut chains[point.pattern];
                overlap.chase(k, time, should_stop, || {
                    chain.walk(pos, CHASE_BATCH);
                    (CHASE_BATCH * arch::CHASE_LOADS) as f64
                })
            }
            Role::Generator(region, next) => {
                let kernel =
                    arch::loaded_kernel(point.delay).unwrap_or(arch::mix_kernel(Mix::TwoToOne));
                overlap.generate(k, time, should_stop, || {
                    std::hint::black_box(region.run_blocks(kernel, *next, GEN_BATCH));
                    *next += GEN_BATCH;
                    (GEN_BATCH * BLOCK) as f64 * Mix::TwoToOne.traffic_factor()
                })
            }
        }
    };
    let samples = crew::run(&cfg.cpus, &phases, setup, work, should_stop)?;
    let pages = pages.into_inner().unwrap_or_default();
    let mut out = LoadedResults {
        sweeps: cfg
            .patterns
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, Vec::new(), pages.get(i).cloned().unwrap_or_default()))
            .collect(),
    };
    for (i, point) in phases.iter().enumerate().filter(|(_, p)| !p.warmup) {
        if let Some(row) = sweep_row(&samples, i, point.delay, cfg.point_time / 2) {
            out.sweeps[point.pattern].1.push(row);
        }
    }
    Ok(out)
}

/// Per pattern: a warm-up at the first delay, then every delay.
fn phases(patterns: usize) -> Vec<Point> {
    let mut phases = Vec::new();
    for pattern in 0..patterns {
        phases.push(Point {
            pattern,
            delay: DELAYS[0],
            warmup: true,
        });
        phases.extend(DELAYS.iter().map(|&delay| Point {
            pattern,
            delay,
            warmup: false,
        }));
    }
    phases
}

/// Member 0 builds the chaser's chains (their page sizes go to `pages`); the others map and
/// touch their generator regions.
fn setup_role(
    cfg: &LoadedConfig,
    member: usize,
    pages: &Mutex<Vec<String>>,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<Role> {
    if member > 0 {
        let mut r = Region::map(cfg.region_bytes, Pages::Default, None)
            .map_err(|e| MemoryError::map(cfg.region_bytes >> 20, "per generator", e))?;
        if !r.touch_until(should_stop) {
            return Err(MemoryError::Interrupted);
        }
        return Ok(Role::Generator(r, 0));
    }
    let mut chains = Vec::new();
    for &p in &cfg.patterns {
        let chain = chase::build(cfg.chain_bytes, p, None, should_stop)?;
        if let Ok(mut v) = pages.lock() {
            v.push(chain.page_size());
        }
        let head = chain.head();
        chains.push((chain, head));
    }
    Ok(Role::Chaser(chains))
}

/// One delay's row from the threads' samples (thread 0 is the chaser). Samples shorter than
/// `min_elapsed` (cut short by a stop request) make no row.
fn sweep_row(
    samples: &[Vec<Option<Sample>>],
    phase: usize,
    delay: u32,
    min_elapsed: Duration,
) -> Option<SweepRow> {
    let chaser = samples
        .first()?
        .get(phase)
        .copied()
        .flatten()
        .filter(|s| s.elapsed >= min_elapsed)?;
    let all: Vec<Sample> = samples
        .iter()
        .filter_map(|t| t.get(phase).copied().flatten())
        .filter(|s| s.elapsed >= min_elapsed)
        .collect();
    let mean_secs = all.iter().map(|s| s.elapsed.as_secs_f64()).sum::<f64>() / all.len() as f64;
    let bytes = chaser.work * STRIDE as f64 + all[1..].iter().map(|s| s.work).sum::<f64>();
    Some(SweepRow {
        delay,
        gib_s: bytes / mean_secs / GIB,
        ns: chaser.elapsed.as_nanos() as f64 / chaser.work.max(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_has_every_delay_for_every_pattern() {
        let cfg = LoadedConfig {
            cpus: crate::os::allowed_cpus().unwrap_or_else(|| vec![0]),
            region_bytes: 8 << 20,
            chain_bytes: 8 << 20,
            point_time: Duration::from_millis(5),
            warmup: Duration::from_millis(5),
            patterns: vec![
                Pattern::RandomInChunk(chase::LOADED_CHUNK),
                Pattern::FullRandom,
            ],
        };
        let r = measure(&cfg, &|| false).unwrap();
        assert_eq!(r.sweeps.len(), 2);
        for (_, rows, page) in &r.sweeps {
            assert_eq!(rows.len(), 24);
            assert_eq!(rows[0].delay, 1);
            assert!(rows.iter().all(|r| r.ns > 0.0 && r.gib_s > 0.0));
            assert!(!page.is_empty());
        }
    }

    #[test]
    fn the_chase_runs_only_while_every_generator_runs() {
        // Generators that start late (up to 30 ms) and a chaser whose clock would otherwise start
        // at once: every chased step must fall inside every generator's run.
        let overlap = Overlap::new(3);
        let window = |k: usize, late_ms: u64| {
            std::thread::sleep(Duration::from_millis(late_ms));
            let first = Instant::now();
            overlap.generate(k, Duration::from_millis(5), &|| false, || {
                std::thread::sleep(Duration::from_micros(200));
                1.0
            });
            (first, Instant::now())
        };
        for k in 1..=3 {
            std::thread::scope(|scope| {
                let gens: Vec<_> = [0, 10, 30]
                    .into_iter()
                    .map(|late| scope.spawn(move || window(k, late)))
                    .collect();
                let mut steps = Vec::new();
                overlap.chase(k, Duration::from_millis(20), &|| false, || {
                    steps.push(Instant::now());
                    1.0
                });
                for g in gens {
                    let (first, last) = g.join().unwrap();
                    assert!(steps.iter().all(|t| *t >= first && *t <= last), "point {k}");
                }
            });
        }
    }

    #[test]
    fn rows_count_the_chasers_lines_and_the_generators_bytes() {
        let s = |work: f64, ms: u64| {
            Some(Sample {
                work,
                elapsed: Duration::from_millis(ms),
            })
        };
        // Chaser: 1 Mi loads in 100 ms; generator: 1 GiB in 100 ms.
        let samples = vec![vec![s(1048576.0, 100)], vec![s(GIB, 100)]];
        let row = sweep_row(&samples, 0, 8, Duration::ZERO).unwrap();
        assert!(sweep_row(&samples, 0, 8, Duration::from_secs(1)).is_none());
        assert!((row.ns - 95.367).abs() < 0.01);
        assert!((row.gib_s - (1.0 + 0.125) * 10.0).abs() < 1e-9);
    }
}
