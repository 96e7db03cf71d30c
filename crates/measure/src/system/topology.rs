//! CPU, NUMA-node and cache topology read from sysfs text into a plain struct. The memory section
//! pins threads and places buffers from this struct, so tests build fake topologies (two sockets
//! of 192 CPUs, eight nodes, memory-only nodes) and run the same logic.
//!
//! Files (Documentation/ABI/stable/sysfs-devices-system-cpu, sysfs-devices-node):
//! `cpu/online`, `cpuN/topology/{physical_package_id,core_id}`, `cpuN/cache/indexK/{level,type,
//! size,shared_cpu_list,coherency_line_size}`, `node/nodeN/{cpulist,meminfo,distance}`.

use super::parse::{format_cpulist, parse_cache_size, parse_cpulist, parse_int, parse_meminfo};
use super::source::Source;
use std::collections::{BTreeMap, BTreeSet};

const CPU_DIR: &str = "/sys/devices/system/cpu";
const NODE_DIR: &str = "/sys/devices/system/node";

/// One online logical CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpu {
    /// Kernel CPU number.
    pub id: usize,
    /// Socket (`physical_package_id`); 0 when unknown.
    pub package: usize,
    /// Core within the socket (`core_id`); the CPU id when unknown.
    pub core: usize,
}

/// One NUMA node. Nodes without CPUs (CXL or HBM memory-only nodes) have an empty `cpus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Node number (`nodeN`).
    pub id: usize,
    /// Online CPUs of this node, in kernel cpulist form (`0-95,192-287`).
    pub cpulist: String,
    /// Number of online CPUs on the node.
    pub cpu_count: usize,
    /// Memory on the node in KiB, from the node's meminfo.
    pub mem_total_kib: Option<u64>,
    /// ACPI SLIT distances to every node, in node order (10 = local).
    pub distances: Vec<u32>,
    /// The CPU ids, expanded.
    pub cpu_ids: Vec<usize>,
}

/// One cache level as lscpu summarises it: size of one instance and how many instances exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    /// lscpu's name: `L1d`, `L1i`, `L2`, `L3`.
    pub name: String,
    /// Cache level (1, 2, 3, ...).
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size of one instance in bytes.
    pub size_bytes: u64,
    /// How many separate instances the online CPUs share (distinct `shared_cpu_list`s).
    pub instances: usize,
    /// Logical CPUs sharing one instance.
    pub cpus_per_instance: usize,
    /// Cache line size in bytes.
    pub line_bytes: Option<u64>,
}

/// The machine's CPU, node and cache layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    /// Online CPUs in id order.
    pub cpus: Vec<Cpu>,
    /// NUMA nodes in id order (one synthetic node 0 when the kernel has no NUMA support).
    pub nodes: Vec<Node>,
    /// Cache levels from the first online CPU's point of view, in index order.
    pub caches: Vec<Cache>,
}

impl Topology {
    /// Number of sockets (distinct package ids).
    pub fn sockets(&self) -> usize {
        let set: BTreeSet<usize> = self.cpus.iter().map(|c| c.package).collect();
        set.len().max(1)
    }

    /// Number of physical cores (distinct package/core pairs).
    pub fn cores(&self) -> usize {
        let set: BTreeSet<(usize, usize)> = self.cpus.iter().map(|c| (c.package, c.core)).collect();
        set.len().max(1)
    }

    /// Hardware threads per core (rounded down).
    pub fn threads_per_core(&self) -> usize {
        (self.cpus.len() / self.cores()).max(1)
    }

    /// The cache named like lscpu does (`L1d`, `L2`, `L3`), if present.
    pub fn cache(&self, name: &str) -> Option<&Cache> {
        self.caches.iter().find(|c| c.name == name)
    }

    /// Nodes that have CPUs (where threads can run).
    pub fn cpu_nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| !n.cpu_ids.is_empty())
    }

    /// Nodes that have memory (where buffers can be placed), including memory-only nodes.
    pub fn memory_nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(|n| n.mem_total_kib.is_none_or(|kib| kib > 0))
    }
}

/// Reads the topology from `src`. Missing files degrade to neutral values rather than errors:
/// containers and VMs hide parts of sysfs.
pub fn read_topology(src: &dyn Source) -> Topology {
    let cpu_ids = online_cpus(src);
    let cpus = cpu_ids
        .iter()
        .map(|&id| {
            let topo = |f: &str| {
                src.read(&format!("{CPU_DIR}/cpu{id}/topology/{f}"))
                    .and_then(|t| parse_int(&t))
                    .and_then(|v| usize::try_from(v).ok())
            };
            Cpu {
                id,
                package: topo("physical_package_id").unwrap_or(0),
                core: topo("core_id").unwrap_or(id),
            }
        })
        .collect();
    let nodes = read_nodes(src, &cpu_ids);
    let caches = read_caches(src, &cpu_ids);
    Topology {
        cpus,
        nodes,
        caches,
    }
}

fn online_cpus(src: &dyn Source) -> Vec<usize> {
    if let Some(list) = src
        .read(&format!("{CPU_DIR}/online"))
        .and_then(|t| parse_cpulist(&t))
        .filter(|l| !l.is_empty())
    {
        return list;
    }
    let mut ids: Vec<usize> = src
        .list(CPU_DIR)
        .iter()
        .filter_map(|n| n.strip_prefix("cpu")?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

fn read_nodes(src: &dyn Source, online: &[usize]) -> Vec<Node> {
    let mut ids: Vec<usize> = src
        .list(NODE_DIR)
        .iter()
        .filter_map(|n| n.strip_prefix("node")?.parse().ok())
        .collect();
    ids.sort_unstable();
    if ids.is_empty() {
        // No NUMA in this kernel: one node holding everything.
        let mem = src
            .read("/proc/meminfo")
            .and_then(|t| parse_meminfo(&t).get("MemTotal").copied());
        return vec![make_node(0, online.to_vec(), mem, vec![10])];
    }
    let online: BTreeSet<usize> = online.iter().copied().collect();
    ids.into_iter()
        .map(|id| {
            let dir = format!("{NODE_DIR}/node{id}");
            let cpus: Vec<usize> = src
                .read(&format!("{dir}/cpulist"))
                .and_then(|t| parse_cpulist(&t))
                .unwrap_or_default()
                .into_iter()
                .filter(|c| online.contains(c))
                .collect();
            let mem = src
                .read(&format!("{dir}/meminfo"))
                .and_then(|t| parse_meminfo(&t).get("MemTotal").copied());
            let distances = src
                .read(&format!("{dir}/distance"))
                .map(|t| {
                    t.split_whitespace()
                        .filter_map(|d| d.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            make_node(id, cpus, mem, distances)
        })
        .collect()
}

fn make_node(id: usize, cpus: Vec<usize>, mem: Option<u64>, distances: Vec<u32>) -> Node {
    Node {
        id,
        cpulist: format_cpulist(&cpus),
        cpu_count: cpus.len(),
        mem_total_kib: mem,
        distances,
        cpu_ids: cpus,
    }
}

/// One cache index as one CPU sees it.
struct CacheEntry {
    level: u8,
    kind: String,
    size_bytes: u64,
    shared: Vec<usize>,
    line_bytes: Option<u64>,
}

fn read_cache_entry(src: &dyn Source, cpu: usize, index: &str) -> Option<CacheEntry> {
    let dir = format!("{CPU_DIR}/cpu{cpu}/cache/{index}");
    let level = src.read(&format!("{dir}/level"))?.trim().parse().ok()?;
    let kind = src.read(&format!("{dir}/type"))?.trim().to_string();
    let size_bytes = parse_cache_size(&src.read(&format!("{dir}/size"))?)?;
    let shared = src
        .read(&format!("{dir}/shared_cpu_list"))
        .and_then(|t| parse_cpulist(&t))
        .unwrap_or_else(|| vec![cpu]);
    let line_bytes = src
        .read(&format!("{dir}/coherency_line_size"))
        .and_then(|t| t.trim().parse().ok());
    Some(CacheEntry {
        level,
        kind,
        size_bytes,
        shared,
        line_bytes,
    })
}

fn cache_name(level: u8, kind: &str) -> String {
    match kind {
        "Data" => format!("L{level}d"),
        "Instruction" => format!("L{level}i"),
        _ => format!("L{level}"),
    }
}

/// One instance's entry and the distinct CPU sets that share an instance, per (level, type).
type CacheLevels = BTreeMap<(u8, String), (CacheEntry, BTreeSet<Vec<usize>>)>;

fn read_caches(src: &dyn Source, online: &[usize]) -> Vec<Cache> {
    let mut levels = CacheLevels::new();
    for &cpu in online {
        let indexes: Vec<String> = src
            .list(&format!("{CPU_DIR}/cpu{cpu}/cache"))
            .into_iter()
            .filter(|n| n.starts_with("index"))
            .collect();
        for index in indexes {
            let Some(entry) = read_cache_entry(src, cpu, &index) else {
                continue;
            };
            let shared = entry.shared.clone();
            levels
                .entry((entry.level, entry.kind.clone()))
                .or_insert_with(|| (entry, BTreeSet::new()))
                .1
                .insert(shared);
        }
    }
    let mut caches: Vec<Cache> = levels
        .into_values()
        .map(|(e, sets)| Cache {
            name: cache_name(e.level, &e.kind),
            level: e.level,
            cpus_per_instance: e.shared.len().max(1),
            kind: e.kind,
            size_bytes: e.size_bytes,
            instances: sets.len().max(1),
            line_bytes: e.line_bytes,
        })
        .collect();
    // lscpu's order: L1d, L1i, L2, L3.
    caches.sort_by_key(|c| (c.level, c.kind != "Data"));
    caches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::fake;

    #[test]
    fn two_socket_384_cpu_machine() {
        let fs = fake::two_socket_384();
        let t = read_topology(&fs);
        assert_eq!(t.cpus.len(), 384);
        assert_eq!(t.sockets(), 2);
        assert_eq!(t.cores(), 192);
        assert_eq!(t.threads_per_core(), 2);
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.nodes[0].cpulist, "0-95,192-287");
        assert_eq!(t.nodes[1].cpu_count, 192);
        assert_eq!(t.nodes[1].distances, vec![32, 10]);
        let names: Vec<&str> = t.caches.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["L1d", "L1i", "L2", "L3"]);
        let l3 = t.cache("L3").unwrap();
        assert_eq!(
            (l3.size_bytes, l3.instances, l3.cpus_per_instance),
            (32 << 20, 24, 16)
        );
        assert_eq!(t.cache("L2").unwrap().instances, 192);
    }

    #[test]
    fn memory_only_nodes_are_kept_apart_from_cpu_nodes() {
        let fs = fake::eight_nodes_with_cxl();
        let t = read_topology(&fs);
        assert_eq!(t.nodes.len(), 8);
        assert_eq!(t.cpu_nodes().count(), 6);
        assert_eq!(t.memory_nodes().count(), 8);
        assert!(t.nodes[7].cpu_ids.is_empty());
    }

    #[test]
    fn kernel_without_numa_gets_one_node() {
        let mut fs = crate::system::source::FakeFs::new();
        fs.insert(format!("{CPU_DIR}/online"), "0-3\n")
            .insert("/proc/meminfo", "MemTotal: 1000 kB\n");
        let t = read_topology(&fs);
        assert_eq!(t.nodes.len(), 1);
        assert_eq!(t.nodes[0].cpu_ids, vec![0, 1, 2, 3]);
        assert_eq!(t.nodes[0].mem_total_kib, Some(1000));
        assert_eq!(t.sockets(), 1);
        assert!(t.caches.is_empty());
    }

    #[test]
    fn offline_cpus_are_left_out_of_nodes() {
        let mut fs = crate::system::source::FakeFs::new();
        fs.insert(format!("{CPU_DIR}/online"), "0-1\n")
            .insert(format!("{NODE_DIR}/node0/cpulist"), "0-3\n");
        let t = read_topology(&fs);
        assert_eq!(t.nodes[0].cpu_ids, vec![0, 1]);
    }
}
