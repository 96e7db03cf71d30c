//! Work over a fleet spread on the machine's CPUs, its results in the order a single pass
//! would give them: the readers' judging is otherwise one thread while the rest of the CPUs
//! wait (a fleet of 100,000 spent a third of its compare after reading).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` of every item, on up to all CPUs, in the items' order. Each worker keeps its own state
/// from `init` (a cache). Items are handed out one at a time, so uneven items share out evenly.
/// A panic in a worker is the caller's.
pub fn ordered_map<T, S, R>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if workers <= 1 {
        let mut state = init();
        return items.iter().map(|t| f(&mut state, t)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut state = init();
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(t) = items.get(i) else { break };
                        mine.push((i, f(&mut state, t)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Machines in a piece of work when a fleet's machines are shared out between the CPUs: enough
/// that handing a piece to a thread costs nothing beside it.
pub const MACHINES_A_PIECE: usize = 1024;

/// `f` of each piece of `0..len` ([`MACHINES_A_PIECE`] at a time) on all CPUs, the results
/// joined in order: what one pass over the machines would give.
pub fn over_pieces<R: Send>(len: usize, f: impl Fn(Range<usize>) -> Vec<R> + Sync) -> Vec<R> {
    ordered_map(&ranges(len, MACHINES_A_PIECE), || (), |(), r| f(r.clone()))
        .into_iter()
        .flatten()
        .collect()
}

/// `f` of each item, with its index, on all CPUs: a run of items per CPU, of
/// [`MACHINES_A_PIECE`] items at least (fewer are done here). A panic in a worker is the
/// caller's.
pub fn for_each_mut<T: Send>(items: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let size = items.len().div_ceil(cpus).max(MACHINES_A_PIECE);
    if items.len() <= size {
        items.iter_mut().enumerate().for_each(|(i, t)| f(i, t));
        return;
    }
    let f = &f;
    std::thread::scope(|s| {
        for (k, run) in items.chunks_mut(size).enumerate() {
            s.spawn(move || {
                for (j, t) in run.iter_mut().enumerate() {
                    f(k * size + j, t);
                }
            });
        }
    });
}

/// `0..len` in pieces of `size` (the last shorter).
pub fn ranges(len: usize, size: usize) -> Vec<Range<usize>> {
    let size = size.max(1);
    (0..len)
        .step_by(size)
        .map(|start| start..(start + size).min(len))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_with_a_state_per_worker() {
        let items: Vec<u64> = (0..1000).collect();
        let out = ordered_map(
            &items,
            || 0u64,
            |seen, &x| {
                *seen += 1;
                x * x
            },
        );
        assert_eq!(out, items.iter().map(|x| x * x).collect::<Vec<_>>());
        assert!(ordered_map(&[] as &[u8], || (), |_, _| 1).is_empty());
    }

    #[test]
    fn ranges_cover_every_index_once_in_order() {
        for (len, size) in [(0, 4), (1, 4), (4, 4), (9, 4), (5, 0), (1030, 1024)] {
            let pieces = ranges(len, size);
            let flat: Vec<usize> = pieces.iter().flat_map(Clone::clone).collect();
            assert_eq!(flat, (0..len).collect::<Vec<_>>(), "{len} by {size}");
            assert!(
                pieces
                    .iter()
                    .all(|r| !r.is_empty() && r.len() <= size.max(1))
            );
        }
        let len = 3 * MACHINES_A_PIECE + 5;
        for n in [0, 5, len] {
            let mut items = vec![0; n];
            for_each_mut(&mut items, |i, t| *t += i + 1);
            assert_eq!(items, (1..=n).collect::<Vec<_>>());
        }
        assert_eq!(
            over_pieces(len, |r| r.map(|i| 2 * i).collect()),
            (0..len).map(|i| 2 * i).collect::<Vec<_>>()
        );
    }
}
