//! The cache-latency curve: FullRandom chase latency over working sets from 16 KiB to beyond 4x
//! the largest cache, on one thread, in one huge-page region (so TLB misses stay out of it as
//! far as the pages allow). Each working set is walked once untimed before it is measured, so
//! what fits a cache level is in that level when the clock starts.

use super::buffer::{Chain, Region};
use super::chase::{self, Pattern, Rng, STRIDE};
use super::error::{MemoryError, Result};
use std::time::Duration;

/// Curve settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveConfig {
    /// The CPU the chase runs on.
    pub cpu: usize,
    /// Working sets, ascending, in bytes.
    pub sizes: Vec<usize>,
    /// Measured time per working set.
    pub point_time: Duration,
}

/// (working set bytes, ns per load) points and the region's page size.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CurveResults {
    /// The curve.
    pub points: Vec<(usize, f64)>,
    /// Page size of the region.
    pub page_size: String,
}

/// Warm-up laps are skipped above this many loads (the set is far beyond every cache anyway).
const MAX_WARMUP_LOADS: usize = 1 << 21;

/// Measures the curve on a thread pinned to `cfg.cpu`.
pub fn measure(cfg: &CurveConfig, should_stop: &(dyn Fn() -> bool + Sync)) -> Result<CurveResults> {
    let Some(&largest) = cfg.sizes.iter().max() else {
        return Ok(CurveResults::default());
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::os::pin_current_thread(cfg.cpu).map_err(|cause| MemoryError::Pin {
                cpu: cfg.cpu,
                cause,
            })?;
            let mut region = Region::map_huge(largest, None)
                .map_err(|e| MemoryError::map(largest >> 20, "for the cache curve", e))?;
            if !region.touch_until(should_stop) {
                return Err(MemoryError::Interrupted);
            }
            let mut out = CurveResults {
                page_size: region.page_size(),
                points: Vec::new(),
            };
            for &size in &cfg.sizes {
                if should_stop() {
                    break;
                }
                let slots = (size / STRIDE).max(1);
                let order = chase::order(Pattern::FullRandom, slots, &mut Rng::new(0));
                let chain = Chain::link(region, &order, STRIDE)?;
                let mut pos = chain.head();
                if slots <= MAX_WARMUP_LOADS {
                    // One lap brings what fits a cache level into it.
                    chain.walk(&mut pos, slots.div_ceil(super::arch::CHASE_LOADS));
                }
                if let Some(ns) =
                    chase::median_latency(&chain, &mut pos, cfg.point_time, 5, should_stop)
                {
                    out.points.push((size, ns));
                }
                region = chain.into_region();
            }
            Ok(out)
        })
        .join()
        .unwrap_or_else(|_| Err(MemoryError::Panicked("the cache-curve thread".into())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_has_a_point_per_size_and_rises() {
        let cfg = CurveConfig {
            cpu: crate::os::allowed_cpus().map_or(0, |c| c[0]),
            sizes: vec![16 << 10, 64 << 20],
            point_time: Duration::from_millis(30),
        };
        let r = measure(&cfg, &|| false).unwrap();
        assert_eq!(r.points.len(), 2);
        // Caches make 64 MiB tens of times slower than 16 KiB on hardware. The aarch64 tests run
        // under qemu-user, which emulates no cache: there the two are alike, and a loaded host's
        // noise orders them (it failed a CI run once).
        if cfg!(target_arch = "x86_64") {
            assert!(
                r.points[1].1 > r.points[0].1,
                "64 MiB is slower than 16 KiB: {:?}",
                r.points
            );
        } else {
            println!("the curve's order not checked: aarch64 tests run under qemu-user");
        }
    }
}
