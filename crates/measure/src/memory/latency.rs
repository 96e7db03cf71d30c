//! Idle latency per (CPU node, memory node) pair, FullRandom and RandomInChunk (mm-mem's
//! `cpu_idle_latency --latency_matrix`): for each pair, one thread pinned to the CPU at index
//! len/4 of the node's CPUs maps the chain bound to the memory node, first-touches and links it,
//! walks it untimed (warm-up), then measures it `repeats` times. Each repeat is the median of
//! ten equal parts, so one burst of interference does not move it.

use super::chase::{self, Pattern};
use super::error::{MemoryError, Result};
use super::plan::LatencyPair;
use std::time::Duration;

/// Idle-latency settings.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleConfig {
    /// The matrix cells.
    pub pairs: Vec<LatencyPair>,
    /// Bind memory to the pair's node (false on a machine with one node).
    pub bind: bool,
    /// Chain size.
    pub region_bytes: usize,
    /// Measured time per repeat.
    pub point_time: Duration,
    /// Untimed walk before the first repeat.
    pub warmup: Duration,
    /// Measurements per cell.
    pub repeats: usize,
    /// Patterns, in order.
    pub patterns: Vec<Pattern>,
}

/// One cell's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleFigure {
    /// The pattern.
    pub pattern: Pattern,
    /// The cell.
    pub pair: LatencyPair,
    /// ns per load, one per repeat.
    pub ns: Vec<f64>,
    /// Page size of the chain.
    pub page_size: String,
}

/// Measures every cell for every pattern; a cell that fails is reported in the error list and
/// the others go on.
pub fn measure(
    cfg: &IdleConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> (Vec<IdleFigure>, Vec<String>) {
    let mut figures = Vec::new();
    let mut errors = Vec::new();
    for &pattern in &cfg.patterns {
        for &pair in &cfg.pairs {
            if should_stop() {
                return (figures, errors);
            }
            match measure_cell(cfg, pattern, pair, should_stop) {
                Ok(f) => figures.push(f),
                Err(_) if should_stop() => return (figures, errors),
                Err(e) => errors.push(format!(
                    "idle latency {} CPU node {} -> memory node {}: {e}",
                    pattern.name(),
                    pair.cpu_node,
                    pair.mem_node
                )),
            }
        }
    }
    (figures, errors)
}

fn measure_cell(
    cfg: &IdleConfig,
    pattern: Pattern,
    pair: LatencyPair,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<IdleFigure> {
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::os::pin_current_thread(pair.cpu).map_err(|cause| MemoryError::Pin {
                cpu: pair.cpu,
                cause,
            })?;
            let chain = chase::build(
                cfg.region_bytes,
                pattern,
                cfg.bind.then_some(pair.mem_node),
                should_stop,
            )?;
            let mut pos = chain.head();
            chase::walk_for(&chain, &mut pos, cfg.warmup, should_stop);
            let ns = (0..cfg.repeats)
                .map_while(|_| {
                    chase::median_latency(&chain, &mut pos, cfg.point_time, 10, should_stop)
                })
                .collect::<Vec<_>>();
            if ns.is_empty() {
                return Err(MemoryError::Interrupted);
            }
            Ok(IdleFigure {
                pattern,
                pair,
                ns,
                page_size: chain.page_size(),
            })
        })
        .join()
        .unwrap_or_else(|_| Err(MemoryError::Panicked("the measuring thread".into())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cell_per_pattern_with_every_repeat() {
        let cpu = crate::os::allowed_cpus().map_or(0, |c| c[0]);
        let cfg = IdleConfig {
            pairs: vec![LatencyPair {
                cpu_node: 0,
                cpu,
                mem_node: 0,
            }],
            bind: false,
            region_bytes: 8 << 20,
            point_time: Duration::from_millis(20),
            warmup: Duration::from_millis(5),
            repeats: 3,
            patterns: vec![
                Pattern::RandomInChunk(chase::IDLE_CHUNK),
                Pattern::FullRandom,
            ],
        };
        let (figures, errors) = measure(&cfg, &|| false);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(figures.len(), 2);
        assert!(
            figures
                .iter()
                .all(|f| f.ns.len() == 3 && f.ns.iter().all(|&n| n > 0.0))
        );
        assert_eq!(figures[0].page_size, "4K");
    }
}
