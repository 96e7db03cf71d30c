//! The system section: what this machine is and how it is set up, from /proc and /sys text, plus
//! `dmidecode -t memory` (2 s limit, root) for the DIMMs' peak when the section is planned. CPU model and topology, NUMA nodes, caches, memory and swap, huge pages,
//! THP, the frequency governor, NIC link speeds, degraded PCIe links, thermal-throttle counters,
//! NUMA balancing and timer slack. Sizes are in KiB or bytes as each field's name says.

pub mod cgroup;
pub mod counters;
pub mod cpustat;
pub mod devices;
pub mod dram;
// Fake machines for the tests of every floor (the crates above turn on `fakes` for theirs).
#[cfg(any(test, feature = "fakes"))]
pub mod fake;
pub mod fingerprint;
pub mod identity;
pub mod interference;
pub mod mounts;
pub mod parse;
pub mod source;
pub mod topology;

use crate::system::cpustat::{CpuTimes, parse_proc_stat};
use crate::units::format_binary_size;
use devices::{HugePagePool, NicLink, PcieLink, ThrottleCounts};
use parse::{parse_bracketed_choice, parse_cpuinfo, parse_meminfo, parse_os_release};
use source::Source;
use std::collections::BTreeMap;
use topology::{Cache, Node, Topology};

/// Everything the system section reports. Field names are the JSON keys.
#[derive(Debug, Clone)]
pub struct SystemInfo {
    /// Host name (`/proc/sys/kernel/hostname`).
    pub hostname: Option<String>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// CPU architecture (`x86_64`, `aarch64`).
    pub architecture: String,
    /// os-release `ID` (`debian`, `centos`).
    pub os_id: Option<String>,
    /// os-release `PRETTY_NAME`.
    pub os_name: Option<String>,
    /// Processor model name (on arm64 derived from the MIDR).
    pub cpu_model: Option<String>,
    /// Processor vendor.
    pub cpu_vendor: Option<String>,
    /// Whether the CPU reports running under a hypervisor.
    pub virtualized: bool,
    /// Online logical CPUs.
    pub logical_cpus: usize,
    /// CPUs this process may use (affinity mask); fewer than `logical_cpus` under taskset/cpusets.
    pub usable_cpus: usize,
    /// Sockets.
    pub sockets: usize,
    /// Physical cores.
    pub cores: usize,
    /// Hardware threads per core.
    pub threads_per_core: usize,
    /// NUMA nodes with their CPUs, memory and distances.
    pub numa_nodes: Vec<Node>,
    /// Cache levels (one instance's size and the instance count).
    pub caches: Vec<Cache>,
    /// Total memory, KiB.
    pub mem_total_kib: Option<u64>,
    /// Memory available to new work, KiB.
    pub mem_available_kib: Option<u64>,
    /// Memory this process's cgroup may still allocate (the tightest memory limit minus usage, up
    /// the hierarchy), KiB; `None` without a limit.
    pub cgroup_memory_free_kib: Option<u64>,
    /// Swap configured, KiB.
    pub swap_total_kib: Option<u64>,
    /// Swap in use, KiB.
    pub swap_used_kib: Option<u64>,
    /// Huge-page pools.
    pub hugepages: Vec<HugePagePool>,
    /// Transparent huge pages mode (`always`, `madvise`, `never`).
    pub thp: Option<String>,
    /// THP defrag mode.
    pub thp_defrag: Option<String>,
    /// The cpufreq governor: one name, or `name(count)` pairs when CPUs differ; `None` without cpufreq.
    pub governor: Option<String>,
    /// Network interfaces other than loopback, with link speed in Mbit/s.
    pub nic_links: Vec<NicLink>,
    /// PCIe devices running below their link width or speed.
    pub pcie_links_degraded: Vec<PcieLink>,
    /// Thermal-throttle events since boot, where the kernel counts them.
    pub thermal_throttle: Option<ThrottleCounts>,
    /// Automatic NUMA balancing (`kernel.numa_balancing` non-zero).
    pub numa_balancing: Option<bool>,
    /// This process's timer slack in ns: nanosleep wakes up at most this late (default 50000).
    pub timer_slack_ns: Option<u64>,
    /// The clock's discipline as the kernel keeps it (`adjtimex`); `None` where it cannot say.
    pub clock: Option<crate::os::ClockState>,
    /// Kernel command line.
    pub kernel_cmdline: Option<String>,
    /// The DIMMs and their theoretical peak, from dmidecode (root).
    pub dram: Option<dram::DramInfo>,
    /// The IOMMU's groups and passthrough.
    pub iommu: Option<devices::IommuState>,
    /// Why `dram` is missing.
    pub dram_error: Option<String>,
    /// What changed while the other sections ran (set at the end of a run).
    pub during_run: Option<RunDeltas>,
    /// The configuration as facts, to compare with siblings and past runs.
    pub fingerprint: fingerprint::Facts,
    /// Hardware error counters since boot.
    pub error_counters: Vec<counters::Counter>,
    /// Seconds since boot (`/proc/uptime`).
    pub uptime_secs: Option<f64>,
    /// The topology, for sections that pin threads.
    pub topology: Topology,
    /// CPU times when the section ran, to compute steal over the run.
    pub cpu_times: Option<CpuTimes>,
}

impl SystemInfo {
    /// Bytes new work can allocate: MemAvailable, capped by the cgroup's memory limit.
    pub fn allocatable_bytes(&self) -> Option<u64> {
        let available = self.mem_available_kib.map(|k| k * 1024);
        let cgroup = self.cgroup_memory_free_kib.map(|k| k * 1024);
        match (available, cgroup) {
            (Some(a), Some(c)) => Some(a.min(c)),
            (a, c) => a.or(c),
        }
    }
}

/// Counters compared between the start and the end of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunDeltas {
    /// Seconds between the two readings.
    pub seconds: f64,
    /// Thermal-throttle events (core and package) that happened in between.
    pub throttle_events: Option<u64>,
    /// CPU time stolen by the hypervisor in between, % of all CPU time.
    pub steal_pct: Option<f64>,
}

/// The deltas between the system as it was at the start and as it is at the end of a run.
pub fn run_deltas(start: &SystemInfo, end: &SystemInfo, seconds: f64) -> RunDeltas {
    let throttle = match (start.thermal_throttle, end.thermal_throttle) {
        (Some(a), Some(b)) => Some(
            (b.core_events + b.package_events).saturating_sub(a.core_events + a.package_events),
        ),
        _ => None,
    };
    let steal = match (&start.cpu_times, &end.cpu_times) {
        (Some(a), Some(b)) => crate::system::cpustat::shares_between(a, b)
            .map(|s| crate::units::round_to(s.steal_pct, 2)),
        _ => None,
    };
    RunDeltas {
        seconds: crate::units::round_to(seconds, 3),
        throttle_events: throttle,
        steal_pct: steal,
    }
}

impl SystemInfo {
    /// lscpu's cache summary (`"L1d cache": "6 MiB (192 instances)"`): benchpress's `metadata`.
    pub fn lscpu_cache_summary(&self) -> BTreeMap<String, String> {
        self.caches
            .iter()
            .map(|c| {
                let plural = if c.instances == 1 { "" } else { "s" };
                (
                    format!("{} cache", c.name),
                    format!(
                        "{} ({} instance{plural})",
                        format_binary_size(c.size_bytes * c.instances as u64),
                        c.instances
                    ),
                )
            })
            .collect()
    }
}

/// Collects the section from `src`. `usable_cpus` is the affinity-mask count (not a file).
pub fn collect(src: &dyn Source, usable_cpus: Option<usize>) -> SystemInfo {
    let topology = topology::read_topology(src);
    let read_trim = |p: &str| src.read(p).map(|t| t.trim().to_string());
    let cpu = parse_cpuinfo(&src.read("/proc/cpuinfo").unwrap_or_default());
    let meminfo = parse_meminfo(&src.read("/proc/meminfo").unwrap_or_default());
    let os = parse_os_release(
        &src.read("/etc/os-release")
            .or_else(|| src.read("/usr/lib/os-release"))
            .unwrap_or_default(),
    );
    let cpu_ids: Vec<usize> = topology.cpus.iter().map(|c| c.id).collect();
    let cpu_packages: Vec<(usize, usize)> =
        topology.cpus.iter().map(|c| (c.id, c.package)).collect();
    let swap_used = match (meminfo.get("SwapTotal"), meminfo.get("SwapFree")) {
        (Some(t), Some(f)) => Some(t.saturating_sub(*f)),
        _ => None,
    };
    let mut info = SystemInfo {
        hostname: read_trim("/proc/sys/kernel/hostname"),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        architecture: std::env::consts::ARCH.to_string(),
        os_id: os.get("ID").cloned(),
        os_name: os.get("PRETTY_NAME").or_else(|| os.get("NAME")).cloned(),
        cpu_model: cpu.name,
        cpu_vendor: cpu.vendor,
        virtualized: cpu.hypervisor,
        logical_cpus: topology.cpus.len(),
        usable_cpus: usable_cpus.unwrap_or(topology.cpus.len()),
        sockets: topology.sockets(),
        cores: topology.cores(),
        threads_per_core: topology.threads_per_core(),
        numa_nodes: topology.nodes.clone(),
        caches: topology.caches.clone(),
        mem_total_kib: meminfo.get("MemTotal").copied(),
        mem_available_kib: meminfo.get("MemAvailable").copied(),
        cgroup_memory_free_kib: cgroup::memory_headroom(src).map(|b| b / 1024),
        swap_total_kib: meminfo.get("SwapTotal").copied(),
        swap_used_kib: swap_used,
        hugepages: devices::read_hugepage_pools(src),
        thp: src
            .read("/sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|t| parse_bracketed_choice(&t)),
        thp_defrag: src
            .read("/sys/kernel/mm/transparent_hugepage/defrag")
            .and_then(|t| parse_bracketed_choice(&t)),
        governor: summarize_governors(&devices::read_governors(src, &cpu_ids)),
        nic_links: devices::read_nic_links(src),
        pcie_links_degraded: devices::read_degraded_pcie_links(src),
        thermal_throttle: devices::read_throttle_counts(src, &cpu_packages),
        numa_balancing: read_trim("/proc/sys/kernel/numa_balancing")
            .and_then(|t| t.parse::<u32>().ok())
            .map(|v| v != 0),
        timer_slack_ns: read_trim("/proc/self/timerslack_ns").and_then(|t| t.parse().ok()),
        // Not a file: the host's reader asks the kernel (a fake machine has no clock).
        clock: None,
        iommu: devices::read_iommu(src, read_trim("/proc/cmdline").as_deref()),
        kernel_cmdline: read_trim("/proc/cmdline"),
        dram: None,
        dram_error: None,
        during_run: None,
        cpu_times: src.read("/proc/stat").and_then(|t| parse_proc_stat(&t)),
        fingerprint: fingerprint::Facts::new(),
        error_counters: counters::collect(src),
        uptime_secs: src
            .read("/proc/uptime")
            .and_then(|t| t.split_whitespace().next()?.parse().ok()),
        topology,
    };
    info.fingerprint = fingerprint::collect(src, &info, &|_| None);
    info
}

/// Collects the section from the running host.
pub fn collect_host() -> SystemInfo {
    let mut s = collect(&source::HostFs, Some(crate::os::available_cpus()));
    s.clock = crate::os::clock_state();
    devices::fill_addresses(&mut s.nic_links);
    s.fingerprint = fingerprint::collect_host(&s);
    s
}

/// [`collect_host`] plus the DIMMs from dmidecode (an external command with a 2 s limit).
pub fn collect_host_with_dram() -> SystemInfo {
    let mut s = collect_host();
    match dram::read_dram() {
        Ok(d) => {
            if !d.modules.is_empty() {
                s.fingerprint
                    .insert("memory.dimms".to_string(), d.modules.clone());
            }
            s.dram = Some(d);
        }
        Err(e) => s.dram_error = Some(e.to_string()),
    }
    s
}

fn summarize_governors(counts: &BTreeMap<String, usize>) -> Option<String> {
    match counts.len() {
        0 => None,
        1 => counts.keys().next().cloned(),
        _ => Some(
            counts
                .iter()
                .map(|(g, n)| format!("{g}({n})"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    }
}

#[cfg(test)]
mod tests;
