//! Where the memory section runs what, decided from the topology alone (pure, so tests drive it
//! with fake machines of 384 CPUs and eight nodes): the (CPU node, memory node) pairs of the idle
//! latency matrix and the CPU each is measured from, the chaser and load generators of the loaded
//! sweep, how big each thread's region may be, and the working sets of the cache curve.

use crate::system::topology::Topology;

/// Nodes with less memory than this are not measured as latency targets (mm-mem: 1 GiB).
pub const MIN_TARGET_NODE_KIB: u64 = 1024 * 1024;

/// The least memory a node needs to be a latency target for a `region_bytes` chain: mm-mem's
/// 1 GiB, or twice the chain, since memory bound to a node that cannot hold it summons the OOM
/// killer instead of spilling over.
pub fn min_target_node_kib(region_bytes: usize) -> u64 {
    MIN_TARGET_NODE_KIB.max(2 * region_bytes as u64 / 1024)
}

/// One cell of the idle latency matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyPair {
    /// The node whose CPU chases.
    pub cpu_node: usize,
    /// The CPU the chasing thread is pinned to.
    pub cpu: usize,
    /// The node the chain's memory is bound to.
    pub mem_node: usize,
}

/// The CPU a single measuring thread uses on a node: index len/4 of its CPU list, as mm-mem
/// does (away from CPU 0, where interrupts and housekeeping tend to land).
pub fn idle_cpu(cpus: &[usize]) -> Option<usize> {
    cpus.get(cpus.len() / 4).copied()
}

/// Every (CPU node, memory node) pair to measure: rows are nodes with usable CPUs, columns are
/// nodes with enough memory for a `region_bytes` chain (memory-only CXL nodes included, CPU-less
/// rows left out).
pub fn latency_pairs(topo: &Topology, usable: &[usize], region_bytes: usize) -> Vec<LatencyPair> {
    let least = min_target_node_kib(region_bytes);
    let targets: Vec<usize> = topo
        .nodes
        .iter()
        .filter(|n| n.mem_total_kib.is_none_or(|kib| kib >= least))
        .map(|n| n.id)
        .collect();
    let mut pairs = Vec::new();
    for node in &topo.nodes {
        let cpus: Vec<usize> = node
            .cpu_ids
            .iter()
            .copied()
            .filter(|c| usable.contains(c))
            .collect();
        let Some(cpu) = idle_cpu(&cpus) else { continue };
        for &mem_node in &targets {
            pairs.push(LatencyPair {
                cpu_node: node.id,
                cpu,
                mem_node,
            });
        }
    }
    pairs
}

/// At most `max` of `pairs`: the local ones (a node's CPUs to its own memory) first, spread over
/// the nodes, then remote ones spread over the matrix, so a sample still shows every kind of
/// path; `max` is at least 1.
pub fn sample_pairs(pairs: Vec<LatencyPair>, max: usize) -> Vec<LatencyPair> {
    let max = max.max(1);
    let (local, remote): (Vec<LatencyPair>, Vec<LatencyPair>) =
        pairs.into_iter().partition(|p| p.cpu_node == p.mem_node);
    let spread = |v: Vec<LatencyPair>, n: usize| -> Vec<LatencyPair> {
        if n >= v.len() {
            return v;
        }
        (0..n).map(|i| v[i * v.len() / n]).collect()
    };
    let from_local = max.min(local.len());
    let mut out = spread(local, from_local);
    out.extend(spread(remote, max - from_local));
    out.sort_by_key(|p| (p.cpu_node, p.mem_node));
    out
}

/// Roles in the loaded-latency sweep: the first usable CPU chases, every other usable CPU
/// (SMT siblings included) generates load, as mm-mem does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedRoles {
    /// CPU of the chasing thread.
    pub chaser: usize,
    /// CPUs of the load generators.
    pub generators: Vec<usize>,
}

/// The sweep's roles, or `None` without a usable CPU.
pub fn loaded_roles(usable: &[usize]) -> Option<LoadedRoles> {
    let (&chaser, rest) = usable.split_first()?;
    Some(LoadedRoles {
        chaser,
        generators: rest.to_vec(),
    })
}

/// Threads and bytes per thread region for the bandwidth tests: `wanted` bytes (mm-mem: 128 MiB)
/// for each of `buffers` regions on every usable CPU, shrunk (in 2 MiB steps) so that all of them
/// take at most half the available memory; when even 8 MiB each would not fit, fewer threads run
/// rather than the machine running out of memory. A 384-CPU machine with 64 GiB free gets
/// 42 MiB per buffer.
pub fn bandwidth_sizing(
    wanted: usize,
    usable: usize,
    buffers: usize,
    available: Option<u64>,
) -> (usize, usize) {
    const TWO_MIB: usize = 2 << 20;
    const FLOOR: usize = 8 << 20;
    let usable = usable.max(1);
    let Some(available) = available else {
        return (usable, wanted);
    };
    let budget = (available / 2) as usize;
    let per_thread = budget / (usable * buffers.max(1));
    if per_thread >= FLOOR {
        return (usable, wanted.min(per_thread) / TWO_MIB * TWO_MIB);
    }
    ((budget / (FLOOR * buffers.max(1))).clamp(1, usable), FLOOR)
}

/// Working sets of the cache-latency curve: 16 KiB up to at least 4x the largest cache instance,
/// on a grid of 2^k bytes (and 1.5 x 2^k up to 8 MiB when `fine`, where the L1 and L2 steps
/// are), capped at `max_bytes`.
pub fn curve_sizes(largest_cache: Option<u64>, max_bytes: usize, fine: bool) -> Vec<usize> {
    let top = largest_cache
        .map_or(256 << 20, |c| (c as usize).saturating_mul(4))
        .max(1 << 20);
    let top = top.min(max_bytes.max(16 << 10));
    let mut sizes = Vec::new();
    let mut s: usize = 16 << 10;
    while s < top {
        sizes.push(s);
        if fine && s < 8 << 20 {
            sizes.push(s + s / 2);
        }
        s *= 2;
    }
    sizes.retain(|&x| x < top);
    let two_mib = 2 << 20;
    sizes.push(
        top.div_ceil(two_mib)
            .saturating_mul(two_mib)
            .min(max_bytes)
            .max(top),
    );
    sizes
}

/// The last-level cache: one instance's size (what a single chasing thread can hold) and all
/// instances together (what every thread of a bandwidth test can hold), bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastLevelCache {
    /// One instance.
    pub instance: u64,
    /// Every instance.
    pub total: u64,
}

impl LastLevelCache {
    /// The highest-level data or unified cache of `topo`; `None` when the kernel reports none.
    pub fn of(topo: &Topology) -> Option<LastLevelCache> {
        let llc = topo
            .caches
            .iter()
            .filter(|c| c.kind != "Instruction")
            .max_by_key(|c| (c.level, c.size_bytes))?;
        Some(LastLevelCache {
            instance: llc.size_bytes,
            total: llc.size_bytes * llc.instances.max(1) as u64,
        })
    }
}

/// What a working set of `wanted` bytes must grow to so it exceeds `factor` x `cache` bytes,
/// rounded up to whole 2 MiB pages.
pub fn beyond_cache(wanted: usize, cache: u64, factor: f64) -> usize {
    const TWO_MIB: u64 = 2 << 20;
    let least = ((cache as f64 * factor.max(0.0)).ceil() as u64).div_ceil(TWO_MIB) * TWO_MIB;
    wanted.max(usize::try_from(least).unwrap_or(usize::MAX))
}

/// The loaded sweep's chain: `wanted`, but the chaser's two chains (one per pattern) and the
/// generators' regions (`generators` x `region`) together take at most half the memory
/// available; cut to whole 2 MiB pages and never under 16 MiB.
pub fn loaded_chain(
    wanted: usize,
    generators: usize,
    region: usize,
    available: Option<u64>,
) -> usize {
    const TWO_MIB: usize = 2 << 20;
    let Some(available) = available else {
        return wanted;
    };
    let budget = (available / 2) as usize;
    let left = budget.saturating_sub(generators.saturating_mul(region));
    wanted.min((left / 2 / TWO_MIB * TWO_MIB).max(16 << 20))
}

/// The idle-latency chain: `wanted`, but at most a quarter of the memory available (so a small
/// container is not OOM-killed), cut to whole 2 MiB pages and never under 16 MiB.
pub fn idle_region(wanted: usize, available: Option<u64>) -> usize {
    const TWO_MIB: usize = 2 << 20;
    let cap = available.map_or(usize::MAX, |a| {
        ((a / 4) as usize / TWO_MIB * TWO_MIB).max(16 << 20)
    });
    wanted.min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{fake, topology::read_topology};

    fn all(topo: &Topology) -> Vec<usize> {
        topo.cpus.iter().map(|c| c.id).collect()
    }

    #[test]
    fn two_sockets_give_a_two_by_two_matrix_pinned_at_a_quarter() {
        let t = read_topology(&fake::two_socket_384());
        let pairs = latency_pairs(&t, &all(&t), 512 << 20);
        assert_eq!(pairs.len(), 4);
        // Node 0 owns 0-95,192-287 (192 CPUs): index 48 is CPU 48. Node 1: 96-191,288-383 -> 144.
        assert_eq!(
            pairs[0],
            LatencyPair {
                cpu_node: 0,
                cpu: 48,
                mem_node: 0
            }
        );
        assert_eq!(
            pairs[3],
            LatencyPair {
                cpu_node: 1,
                cpu: 144,
                mem_node: 1
            }
        );
    }

    #[test]
    fn eight_nodes_give_sixty_four_pairs() {
        let t = read_topology(&fake::eight_nodes_384());
        let pairs = latency_pairs(&t, &all(&t), 512 << 20);
        assert_eq!(pairs.len(), 64);
        // Node 5: cores 120-143 and their siblings 312-335; index 12 of 48 CPUs is CPU 132.
        assert!(pairs.contains(&LatencyPair {
            cpu_node: 5,
            cpu: 132,
            mem_node: 2
        }));
    }

    #[test]
    fn memory_only_nodes_are_columns_not_rows() {
        let t = read_topology(&fake::eight_nodes_with_cxl());
        let pairs = latency_pairs(&t, &all(&t), 512 << 20);
        assert_eq!(pairs.len(), 6 * 8);
        assert!(pairs.iter().all(|p| p.cpu_node < 6));
        assert!(pairs.iter().any(|p| p.mem_node == 7));
    }

    #[test]
    fn nodes_too_small_for_the_chain_are_not_targets() {
        // Two nodes of 189 GiB: a 64 GiB chain fits, a 100 GiB one does not.
        let t = read_topology(&fake::eight_nodes_384());
        assert_eq!(latency_pairs(&t, &all(&t), 64 << 30).len(), 64);
        assert!(latency_pairs(&t, &all(&t), 100 << 30).is_empty());
        assert_eq!(min_target_node_kib(16 << 20), MIN_TARGET_NODE_KIB);
    }

    #[test]
    fn taskset_limits_which_cpus_measure() {
        let t = read_topology(&fake::two_socket_384());
        let usable: Vec<usize> = (100..110).collect();
        let pairs = latency_pairs(&t, &usable, 512 << 20);
        assert_eq!(pairs.len(), 2, "only node 1 has usable CPUs");
        assert_eq!(pairs[0].cpu, 102);
    }

    #[test]
    fn single_cpu_and_two_cpu_machines() {
        assert_eq!(
            idle_cpu(&[0, 1]),
            Some(0),
            "a 2-CPU VM measures from CPU 0, as mm-mem"
        );
        assert_eq!(idle_cpu(&(0..36).collect::<Vec<_>>()), Some(9));
        assert_eq!(idle_cpu(&[]), None);
        let r = loaded_roles(&[0, 1]).unwrap();
        assert_eq!((r.chaser, r.generators.as_slice()), (0, &[1][..]));
        let big = loaded_roles(&(0..384).collect::<Vec<_>>()).unwrap();
        assert_eq!(big.generators.len(), 383);
        assert!(loaded_roles(&[]).is_none());
    }

    #[test]
    fn bandwidth_sizing_shrinks_regions_then_threads() {
        let mib = 1 << 20;
        assert_eq!(
            bandwidth_sizing(128 * mib, 2, 2, Some(24 << 30)),
            (2, 128 * mib)
        );
        // 384 threads x 2 buffers in 64 GiB: half of it is 32 GiB / 768 = 42.67 MiB -> 42 MiB.
        assert_eq!(
            bandwidth_sizing(128 * mib, 384, 2, Some(64 << 30)),
            (384, 42 * mib)
        );
        // 1 GiB: 512 MiB of budget holds only 32 threads at the 8 MiB x 2 floor.
        assert_eq!(
            bandwidth_sizing(128 * mib, 384, 2, Some(1 << 30)),
            (32, 8 * mib)
        );
        // Never fewer than one thread, even when nothing fits.
        assert_eq!(
            bandwidth_sizing(128 * mib, 4, 2, Some(1 << 20)),
            (1, 8 * mib)
        );
        assert_eq!(bandwidth_sizing(128 * mib, 4, 1, None), (4, 128 * mib));
    }

    #[test]
    fn working_sets_grow_beyond_the_cache_and_the_sweep_fits_memory() {
        let mib = 1 << 20;
        assert_eq!(beyond_cache(512 * mib, 32 << 20, 4.0), 512 * mib);
        assert_eq!(beyond_cache(128 * mib, 260 << 20, 4.0), 1040 * mib);
        let t = read_topology(&fake::two_socket_384());
        let llc = LastLevelCache::of(&t).unwrap();
        assert_eq!((llc.instance, llc.total), (32 << 20, 768 << 20));
        // 384 threads must hold 3 GiB between them: 8 MiB each.
        assert_eq!(beyond_cache(0, llc.total, 4.0) / 384, 8 * mib);
        // The sweep in 256 MiB: 1 generator of 32 MiB leaves (128 - 32) / 2 = 48 MiB a chain.
        assert_eq!(
            loaded_chain(128 * mib, 1, 32 * mib, Some(256 << 20)),
            48 * mib
        );
        assert_eq!(loaded_chain(128 * mib, 1, 32 * mib, None), 128 * mib);
        assert_eq!(
            loaded_chain(128 * mib, 383, 8 * mib, Some(1 << 30)),
            16 * mib,
            "a floor"
        );
    }

    #[test]
    fn idle_region_fits_a_quarter_of_available_memory() {
        let mib = 1 << 20;
        assert_eq!(idle_region(1024 * mib, None), 1024 * mib);
        assert_eq!(idle_region(1024 * mib, Some(24 << 30)), 1024 * mib);
        assert_eq!(idle_region(1024 * mib, Some(2 << 30)), 512 * mib);
        assert_eq!(idle_region(1024 * mib, Some(1000 * mib as u64)), 250 * mib);
        assert_eq!(idle_region(1024 * mib, Some(1 << 20)), 16 * mib, "a floor");
        assert_eq!(
            idle_region(mib, Some(1 << 20)),
            mib,
            "never more than asked"
        );
    }

    #[test]
    fn curve_reaches_four_times_the_largest_cache() {
        let coarse = curve_sizes(Some(32 << 20), 1 << 40, false);
        assert_eq!(coarse[1], 32 << 10);
        let s = curve_sizes(Some(32 << 20), 1 << 40, true);
        assert_eq!(s[0], 16 << 10);
        assert_eq!(s[1], 24 << 10);
        assert_eq!(*s.last().unwrap(), 128 << 20);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        // A VM reporting a 260 MiB L3 needs more than 1 GiB.
        assert!(*curve_sizes(Some(260 << 20), 1 << 40, true).last().unwrap() >= 1040 << 20);
        // Capped by memory.
        assert_eq!(
            *curve_sizes(Some(260 << 20), 256 << 20, true)
                .last()
                .unwrap(),
            256 << 20
        );
    }
}
