//! Peak memory bandwidth as mm-mem measures it: one thread per usable CPU, each walking its own
//! region (first-touched by that thread) sequentially in 8 KiB blocks with a read/write mix;
//! bytes counted as range walked x (1 + share of lines written back); the aggregate is all
//! threads' bytes over the mean thread time, in MiB/s. Plus a wide-vector read kernel, which
//! shows what a core's load units can pull when the scalar mix kernels are core-bound, and
//! memcpy of 16 KiB and 128 MiB pieces (bytes copied counted once).

use super::arch::{self, Mix};
use super::buffer::{BLOCK, Pages, Region};
use super::crew::{self, Sample};
use super::error::{MemoryError, Result};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Blocks a kernel handles between two clock readings (512 KiB).
const BATCH_BLOCKS: usize = 64;
/// Rounds of the vector kernels' trial (each kernel once per round, interleaved).
const TRIAL_ROUNDS: usize = 2;
/// The shortest trial phase: long enough for a few hundred batches per thread.
const MIN_TRIAL: Duration = Duration::from_millis(20);
/// mm-mem's medium memcpy fragment.
pub const MEDIUM_COPY: usize = 16 * 1024;
const MIB: f64 = 1024.0 * 1024.0;

/// Settings shared by the bandwidth tests.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthConfig {
    /// One thread per CPU, in this order.
    pub cpus: Vec<usize>,
    /// Each thread's region (memcpy: each of its two buffers).
    pub region_bytes: usize,
    /// Length of each measured phase.
    pub phase_time: Duration,
    /// Length of the unmeasured first phase (warms caches, TLBs and page tables).
    pub warmup: Duration,
    /// How many times each figure is measured.
    pub repeats: usize,
    /// The read/write mixes of the peak test.
    pub mixes: Vec<Mix>,
    /// Whether the peak test measures the wide vector read too.
    pub simd: bool,
}

/// Peak bandwidth per mix, MiB/s, one value per repeat.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PeakResults {
    /// (mix, MiB/s per repeat).
    pub mixes: Vec<(Mix, Vec<f64>)>,
    /// The vector kernel's name and its read MiB/s per repeat.
    pub simd: Option<(&'static str, Vec<f64>)>,
    /// Every vector kernel's read MiB/s in the short trial that chose the fastest (empty where
    /// the CPU runs one kernel only).
    pub simd_trials: Vec<(&'static str, f64)>,
}

#[derive(Clone, Copy)]
enum PeakPhase {
    Warmup,
    /// A short run of the vector kernel with this index.
    Trial(usize),
    Mix(Mix),
    Simd,
}

/// How long each kernel's trial phase runs.
fn trial_time(phase_time: Duration) -> Duration {
    (phase_time / 4).max(MIN_TRIAL)
}

/// The vector kernels' whole trial on this CPU, for a phase of `phase_time` (zero with one
/// kernel): what the run-time estimate adds to the peak test.
pub fn trial_duration(phase_time: Duration) -> Duration {
    let kernels = arch::read_wide_kernels().len();
    if kernels > 1 {
        trial_time(phase_time) * (kernels * TRIAL_ROUNDS) as u32
    } else {
        Duration::ZERO
    }
}

/// The index of the fastest kernel by its summed rate, the first (widest) on a tie or no data.
fn fastest(rates: &[f64]) -> usize {
    rates
        .iter()
        .enumerate()
        .fold(
            (0, f64::MIN),
            |best, (i, &r)| if r > best.1 { (i, r) } else { best },
        )
        .0
}

/// Runs the mixes and the vector read kernel, repeats interleaved (all mixes, then again).
/// Where the CPU runs several vector kernels, a short trial of each on the same regions, by
/// every thread at once, picks the one that reads fastest here before the measured phases.
pub fn measure_peak(
    cfg: &BandwidthConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<PeakResults> {
    let kernels = arch::read_wide_kernels();
    let mut phases = vec![PeakPhase::Warmup];
    if cfg.simd && kernels.len() > 1 {
        for _ in 0..TRIAL_ROUNDS {
            phases.extend((0..kernels.len()).map(PeakPhase::Trial));
        }
    }
    for _ in 0..cfg.repeats {
        phases.extend(cfg.mixes.iter().map(|&m| PeakPhase::Mix(m)));
        if cfg.simd {
            phases.push(PeakPhase::Simd);
        }
    }
    // Each thread adds its trial rates here; the crew's gate holds every thread until all have
    // finished a phase, so the first measured phase sees every trial and all threads choose alike.
    let trial_rates = Mutex::new(vec![0.0; kernels.len()]);
    let chosen = OnceLock::new();
    let choose =
        || *chosen.get_or_init(|| fastest(&trial_rates.lock().unwrap_or_else(|e| e.into_inner())));
    let setup = |_| -> Result<(Region, usize)> {
        let mut r = Region::map(cfg.region_bytes, Pages::Default, None)
            .map_err(|e| MemoryError::map(cfg.region_bytes >> 20, "per thread", e))?;
        if !r.touch_until(should_stop) {
            return Err(MemoryError::Interrupted);
        }
        Ok((r, 0))
    };
    let work = |_: usize, state: &mut (Region, usize), phase: &PeakPhase| -> Sample {
        let (kernel, factor, time) = match *phase {
            PeakPhase::Warmup => (arch::mix_kernel(Mix::AllReads), 1.0, cfg.warmup),
            PeakPhase::Trial(k) => (kernels[k].0, 1.0, trial_time(cfg.phase_time)),
            PeakPhase::Mix(m) => (arch::mix_kernel(m), m.traffic_factor(), cfg.phase_time),
            PeakPhase::Simd => (kernels[choose()].0, 1.0, cfg.phase_time),
        };
        let (region, next) = state;
        let sample = crew::timed(time, should_stop, || {
            std::hint::black_box(region.run_blocks(kernel, *next, BATCH_BLOCKS));
            *next += BATCH_BLOCKS;
            (BATCH_BLOCKS * BLOCK) as f64 * factor
        });
        if let PeakPhase::Trial(k) = *phase {
            let secs = sample.elapsed.as_secs_f64();
            if secs > 0.0 {
                trial_rates.lock().unwrap_or_else(|e| e.into_inner())[k] += sample.work / secs;
            }
        }
        sample
    };
    let samples = crew::run(&cfg.cpus, &phases, setup, work, should_stop)?;
    let mut out = PeakResults {
        mixes: cfg.mixes.iter().map(|&m| (m, Vec::new())).collect(),
        simd: cfg.simd.then(|| (kernels[choose()].1, Vec::new())),
        simd_trials: Vec::new(),
    };
    for (i, phase) in phases.iter().enumerate() {
        let Some(rate) = crew::aggregate_rate(&samples, i, cfg.phase_time / 2) else {
            continue;
        };
        let mib_s = rate / MIB;
        match phase {
            PeakPhase::Warmup | PeakPhase::Trial(_) => {}
            PeakPhase::Mix(m) => {
                if let Some((_, v)) = out.mixes.iter_mut().find(|(x, _)| x == m) {
                    v.push(mib_s);
                }
            }
            PeakPhase::Simd => {
                if let Some((_, v)) = &mut out.simd {
                    v.push(mib_s);
                }
            }
        }
    }
    // The rates the choice was made on, per round: what the document shows is what chose.
    if phases.iter().any(|p| matches!(p, PeakPhase::Trial(_))) {
        let rates = trial_rates.into_inner().unwrap_or_else(|e| e.into_inner());
        out.simd_trials = kernels
            .iter()
            .zip(rates)
            .map(|((_, name), r)| (*name, r / TRIAL_ROUNDS as f64 / MIB))
            .collect();
    }
    Ok(out)
}

/// memcpy bandwidth, MiB/s per repeat.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CopyResults {
    /// Whole-region copies (mm-mem "Large", 128 MiB).
    pub large: Vec<f64>,
    /// 16 KiB copies walking the region (mm-mem "Medium").
    pub medium: Vec<f64>,
}

#[derive(Clone, Copy)]
enum CopyPhase {
    Warmup,
    Large,
    Medium,
}

/// Runs the memcpy tests. Copies go through the C library's memcpy (what `copy_from_slice`
/// lowers to on Linux), as mm-mem's do, so the same non-temporal-store threshold applies.
pub fn measure_memcpy(
    cfg: &BandwidthConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<CopyResults> {
    let mut phases = vec![CopyPhase::Warmup];
    for _ in 0..cfg.repeats {
        phases.extend([CopyPhase::Large, CopyPhase::Medium]);
    }
    let setup = |_| -> Result<(Region, Region, usize)> {
        let map = || {
            Region::map(cfg.region_bytes, Pages::Default, None).map_err(|cause| MemoryError::Map {
                what: format!("2 x {} MiB per thread", cfg.region_bytes >> 20),
                cause,
            })
        };
        let (mut src, mut dst) = (map()?, map()?);
        if !src.touch_until(should_stop) || !dst.touch_until(should_stop) {
            return Err(MemoryError::Interrupted);
        }
        Ok((src, dst, 0))
    };
    let work = |_: usize, state: &mut (Region, Region, usize), phase: &CopyPhase| -> Sample {
        let (src, dst, offset) = state;
        let len = src.len();
        match phase {
            CopyPhase::Warmup | CopyPhase::Large => {
                let time = if matches!(phase, CopyPhase::Warmup) {
                    cfg.warmup
                } else {
                    cfg.phase_time
                };
                crew::timed(time, should_stop, || {
                    dst.as_mut_slice().copy_from_slice(src.as_slice());
                    std::hint::black_box(dst.as_slice()[len - 1]);
                    len as f64
                })
            }
            CopyPhase::Medium => crew::timed(cfg.phase_time, should_stop, || {
                for _ in 0..BATCH_BLOCKS {
                    let at = *offset;
                    dst.as_mut_slice()[at..at + MEDIUM_COPY]
                        .copy_from_slice(&src.as_slice()[at..at + MEDIUM_COPY]);
                    *offset = (at + MEDIUM_COPY) % (len - len % MEDIUM_COPY);
                }
                std::hint::black_box(dst.as_slice()[*offset]);
                (BATCH_BLOCKS * MEDIUM_COPY) as f64
            }),
        }
    };
    let samples = crew::run(&cfg.cpus, &phases, setup, work, should_stop)?;
    let mut out = CopyResults::default();
    for (i, phase) in phases.iter().enumerate() {
        let Some(rate) = crew::aggregate_rate(&samples, i, cfg.phase_time / 2) else {
            continue;
        };
        match phase {
            CopyPhase::Warmup => {}
            CopyPhase::Large => out.large.push(rate / MIB),
            CopyPhase::Medium => out.medium.push(rate / MIB),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BandwidthConfig {
        BandwidthConfig {
            cpus: crate::os::allowed_cpus().unwrap_or_else(|| vec![0]),
            region_bytes: 8 << 20,
            phase_time: Duration::from_millis(30),
            warmup: Duration::from_millis(10),
            repeats: 2,
            mixes: Mix::ALL.to_vec(),
            simd: true,
        }
    }

    /// A rate any machine's memory passes, natively: these tests check that every phase was
    /// measured, not how fast. The aarch64 tests run under qemu-user at the lowest priority
    /// beside the suite's other work, where a short phase may finish only a batch or two: there
    /// a rate above nothing is what can be asked.
    const PLAUSIBLE_MB_S: f64 = if cfg!(target_arch = "x86_64") {
        100.0
    } else {
        0.0
    };

    #[test]
    fn peak_gives_every_mix_and_the_vector_read_per_repeat() {
        let r = measure_peak(&cfg(), &|| false).unwrap();
        assert_eq!(r.mixes.len(), 4);
        assert!(
            r.mixes
                .iter()
                .all(|(_, v)| v.len() == 2 && v.iter().all(|&x| x > PLAUSIBLE_MB_S)),
            "{:?}",
            r.mixes
        );
        let (name, simd) = r.simd.unwrap();
        assert_eq!(simd.len(), 2);
        // Several kernels: each was tried and the fastest measured; one: no trial.
        let kernels = arch::read_wide_kernels();
        if kernels.len() > 1 {
            let names: Vec<_> = kernels.iter().map(|k| k.1).collect();
            let tried: Vec<_> = r.simd_trials.iter().map(|t| t.0).collect();
            assert_eq!(tried, names);
            assert!(
                r.simd_trials.iter().all(|t| t.1 > PLAUSIBLE_MB_S),
                "{:?}",
                r.simd_trials
            );
            let best =
                r.simd_trials[fastest(&r.simd_trials.iter().map(|t| t.1).collect::<Vec<_>>())];
            assert_eq!(name, best.0, "{:?}", r.simd_trials);
        } else {
            assert!(r.simd_trials.is_empty());
            assert_eq!(name, kernels[0].1);
        }
    }

    #[test]
    fn the_fastest_kernel_wins_and_the_widest_on_a_tie() {
        assert_eq!(fastest(&[27_000.0, 33_000.0, 30_000.0]), 1);
        assert_eq!(fastest(&[30_000.0, 30_000.0]), 0);
        assert_eq!(fastest(&[0.0, 0.0, 0.0]), 0, "no trial ran: the widest");
        assert_eq!(fastest(&[]), 0);
    }

    #[test]
    fn memcpy_gives_both_sizes() {
        let r = measure_memcpy(&cfg(), &|| false).unwrap();
        assert_eq!((r.large.len(), r.medium.len()), (2, 2));
        assert!(
            r.large
                .iter()
                .chain(&r.medium)
                .all(|&x| x > PLAUSIBLE_MB_S / 10.0),
            "{r:?}"
        );
    }
}
