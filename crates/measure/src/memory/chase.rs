//! Pointer-chase latency, as mm-mem measures it: one pointer per 128-byte stride (every other
//! cache line, so an adjacent-line prefetch never fetches the next slot), linked in a random
//! cycle, walked with dependent loads; latency = elapsed ns / loads.
//!
//! - FullRandom: one random cycle over every slot of the region.
//! - RandomInChunk: chunks visited in address order; inside every chunk the same random order of
//!   its slots (so each 4 KiB page's TLB entry serves many loads, while the order still defeats
//!   stride prefetchers).
//!
//! The generator is seeded with 0 like mm-mem's, so the chains are the same on every run.

use super::arch::CHASE_LOADS;
use super::buffer::{Chain, Pages, Position, Region};
use super::error::{MemoryError, Result};
pub use crate::rng::Rng;
use std::time::{Duration, Instant};

/// Bytes between chain slots.
pub const STRIDE: usize = 128;
/// RandomInChunk chunk of the idle latency test.
pub const IDLE_CHUNK: usize = 128 << 10;
/// RandomInChunk chunk of the loaded latency test.
pub const LOADED_CHUNK: usize = 64 << 10;

/// How a chain orders its slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// One random cycle over the whole region.
    FullRandom,
    /// Address-ordered chunks of this many bytes, one shared random order inside each.
    RandomInChunk(usize),
}

impl Pattern {
    /// mm-mem's name (the JSON key).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::FullRandom => "FullRandom",
            Pattern::RandomInChunk(_) => "RandomInChunk",
        }
    }
}

/// Fisher-Yates shuffle of `0..n` with slot 0 kept first (the chain starts at the region start).
fn shuffled_from_zero(n: usize, rng: &mut Rng) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (2..n).rev() {
        let j = 1 + rng.below(i);
        v.swap(i, j);
    }
    v
}

/// The visiting order of `slots` slots for `pattern`.
pub fn order(pattern: Pattern, slots: usize, rng: &mut Rng) -> Vec<u32> {
    match pattern {
        Pattern::FullRandom => shuffled_from_zero(slots, rng),
        Pattern::RandomInChunk(chunk) => {
            let per_chunk = (chunk / STRIDE).clamp(1, slots.max(1));
            let inner = shuffled_from_zero(per_chunk, rng);
            (0..slots / per_chunk)
                .flat_map(|c| inner.iter().map(move |&s| (c * per_chunk) as u32 + s))
                .collect()
        }
    }
}

/// Maps, touches and links a chain of `bytes` with `pattern`, bound to `node` when given.
/// FullRandom gets the largest pages to be had (hugetlb 1 GiB, 2 MiB, else THP); RandomInChunk
/// gets 4 KiB pages, as mm-mem's regular-page runs.
pub fn build(
    bytes: usize,
    pattern: Pattern,
    node: Option<usize>,
    should_stop: &dyn Fn() -> bool,
) -> Result<Chain> {
    let mut region = match pattern {
        Pattern::FullRandom => Region::map_huge(bytes, node),
        Pattern::RandomInChunk(_) => Region::map(bytes, Pages::Small, node),
    }
    .map_err(|e| MemoryError::map(bytes >> 20, &format!("for the {} chain", pattern.name()), e))?;
    if !region.touch_until(should_stop) {
        return Err(MemoryError::Interrupted);
    }
    let slots = region.len() / STRIDE;
    Chain::link(region, &order(pattern, slots, &mut Rng::new(0)), STRIDE)
}

/// One timed walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Walk {
    /// Dependent loads done.
    pub loads: u64,
    /// Time they took.
    pub elapsed: Duration,
}

impl Walk {
    /// Nanoseconds per load.
    pub fn ns_per_load(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.loads.max(1) as f64
    }
}

/// Walks `chain` from `pos` for about `duration`, reading the clock every ~2 ms of work (the
/// first 256 loads calibrate how many calls that is). A stop request ends it at the next
/// checkpoint; the returned elapsed time then falls short of `duration`.
pub fn walk_for(
    chain: &Chain,
    pos: &mut Position,
    duration: Duration,
    should_stop: &dyn Fn() -> bool,
) -> Walk {
    let probe = Instant::now();
    chain.walk(pos, 1);
    let per_call = probe
        .elapsed()
        .max(Duration::from_nanos(CHASE_LOADS as u64));
    let batch =
        (Duration::from_millis(2).as_nanos() / per_call.as_nanos()).clamp(1, 1 << 16) as usize;
    let start = Instant::now();
    let mut calls = 0u64;
    loop {
        chain.walk(pos, batch);
        calls += batch as u64;
        let elapsed = start.elapsed();
        if elapsed >= duration || should_stop() {
            return Walk {
                loads: calls * CHASE_LOADS as u64,
                elapsed,
            };
        }
    }
}

/// Latency over `total` time as the median of `parts` equal walks, in ns per load: a short
/// burst of interference (another tenant, an interrupt storm) moves one part, not the figure.
/// `None` when stopped before any part finished.
pub fn median_latency(
    chain: &Chain,
    pos: &mut Position,
    total: Duration,
    parts: u32,
    should_stop: &dyn Fn() -> bool,
) -> Option<f64> {
    let part = total / parts.max(1);
    // A part cut short by a stop request ends the series: it is not a measurement.
    let mut ns: Vec<f64> = (0..parts.max(1))
        .map_while(|_| {
            let w = walk_for(chain, pos, part, should_stop);
            (w.elapsed >= part / 2).then(|| w.ns_per_load())
        })
        .collect();
    if ns.is_empty() {
        return None;
    }
    ns.sort_by(f64::total_cmp);
    Some(ns[ns.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_permutation(v: &[u32]) -> bool {
        let mut s = v.to_vec();
        s.sort_unstable();
        s.iter().enumerate().all(|(i, &x)| x as usize == i)
    }

    #[test]
    fn full_random_is_one_cycle_over_every_slot_from_zero() {
        let o = order(Pattern::FullRandom, 4096, &mut Rng::new(0));
        assert_eq!(o[0], 0);
        assert!(is_permutation(&o));
        assert_ne!(o[1..10], (1..10).collect::<Vec<u32>>()[..], "shuffled");
        assert_eq!(
            o,
            order(Pattern::FullRandom, 4096, &mut Rng::new(0)),
            "deterministic"
        );
    }

    #[test]
    fn random_in_chunk_repeats_one_order_in_address_order_chunks() {
        let per_chunk = IDLE_CHUNK / STRIDE; // 1024 slots
        let o = order(
            Pattern::RandomInChunk(IDLE_CHUNK),
            4 * per_chunk,
            &mut Rng::new(0),
        );
        assert!(is_permutation(&o));
        for c in 0..4 {
            let chunk = &o[c * per_chunk..(c + 1) * per_chunk];
            assert_eq!(
                chunk[0] as usize,
                c * per_chunk,
                "each chunk starts at its offset 0"
            );
            let relative: Vec<u32> = chunk.iter().map(|&s| s - (c * per_chunk) as u32).collect();
            let first: Vec<u32> = o[..per_chunk].to_vec();
            assert_eq!(relative, first, "the same permutation in every chunk");
        }
    }

    #[test]
    fn rng_below_stays_in_range() {
        let mut r = Rng::new(1);
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }

    #[test]
    fn a_small_chain_measures_a_plausible_latency() {
        let chain = build(4 << 20, Pattern::FullRandom, None, &|| false).unwrap();
        let mut pos = chain.head();
        let w = walk_for(&chain, &mut pos, Duration::from_millis(50), &|| false);
        assert!(w.loads >= 256);
        assert!(
            w.ns_per_load() > 0.1 && w.ns_per_load() < 10_000.0,
            "{}",
            w.ns_per_load()
        );
    }
}
