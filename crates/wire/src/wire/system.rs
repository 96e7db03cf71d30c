//! The system section in the wire format: what the machine is and how it is set up. Built from
//! [`crate::system::SystemInfo`] with `From`, so the collector's fields can change without
//! changing the document. Sizes are in KiB or bytes as each key says.

use super::counters::ErrorCounters;
use super::nullable::nullable;
use crate::system::{SystemInfo, devices, dram, topology};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The system section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SystemPart {
    /// Host name (`/proc/sys/kernel/hostname`).
    #[schemars(required, transform = nullable)]
    pub hostname: Option<String>,
    /// Kernel release (`uname -r`).
    #[schemars(required, transform = nullable)]
    pub kernel: Option<String>,
    /// CPU architecture (`x86_64`, `aarch64`).
    pub architecture: String,
    /// os-release `ID` (`debian`, `centos`).
    pub os_id: Option<String>,
    /// os-release `PRETTY_NAME`.
    pub os_name: Option<String>,
    /// Processor model name (on arm64 derived from the MIDR).
    #[schemars(required, transform = nullable)]
    pub cpu_model: Option<String>,
    /// Processor vendor.
    pub cpu_vendor: Option<String>,
    /// Whether the CPU reports running under a hypervisor.
    #[serde(default)]
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
    pub numa_nodes: Vec<NumaNode>,
    /// Cache levels (one instance's size and the instance count).
    pub caches: Vec<CacheLevel>,
    /// Total memory, KiB.
    #[schemars(required, transform = nullable)]
    pub mem_total_kib: Option<u64>,
    /// Memory available to new work, KiB.
    pub mem_available_kib: Option<u64>,
    /// Memory this process's cgroup may still allocate (the tightest memory limit minus usage, up
    /// the hierarchy), KiB; null without a limit.
    pub cgroup_memory_free_kib: Option<u64>,
    /// Swap configured, KiB.
    pub swap_total_kib: Option<u64>,
    /// Swap in use, KiB.
    pub swap_used_kib: Option<u64>,
    /// Huge-page pools.
    #[serde(default)]
    pub hugepages: Vec<HugePagePool>,
    /// Transparent huge pages mode (`always`, `madvise`, `never`).
    #[schemars(required, transform = nullable)]
    pub thp: Option<String>,
    /// THP defrag mode.
    pub thp_defrag: Option<String>,
    /// The cpufreq governor: one name, or `name(count)` pairs when CPUs differ; null without
    /// cpufreq.
    #[schemars(required, transform = nullable)]
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
    /// The clock's discipline as the kernel keeps it; absent where the kernel cannot say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<Clock>,
    /// Kernel command line.
    pub kernel_cmdline: Option<String>,
    /// The IOMMU: whether one translates DMA, and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iommu: Option<Iommu>,
    /// The DIMMs and their theoretical peak, from dmidecode (root).
    pub dram: Option<DramInfo>,
    /// Why `dram` is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dram_error: Option<String>,
    /// What changed while the other sections ran (set at the end of a run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub during_run: Option<RunDeltas>,
    /// The configuration as facts (`bios.version`, `cpu.microcode`, `kernel.cmdline`,
    /// `cpu.smt`, `memory.dimms`, `nic.<name>.firmware`, ...): `compare` names machines whose
    /// facts differ from their siblings', `history` the runs where one changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fingerprint: BTreeMap<String, String>,
    /// Hardware error counters (EDAC, PCIe AER, NICs, thermal throttling, machine checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_counters: Option<ErrorCounters>,
}

/// One NUMA node. Nodes without CPUs (CXL or HBM memory-only nodes) have an empty `cpus`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NumaNode {
    /// Node number (`nodeN`).
    pub id: usize,
    /// Online CPUs of this node, in kernel cpulist form (`0-95,192-287`).
    pub cpus: String,
    /// Number of online CPUs on the node.
    pub cpu_count: usize,
    /// Memory on the node in KiB, from the node's meminfo.
    pub mem_total_kib: Option<u64>,
    /// ACPI SLIT distances to every node, in node order (10 = local).
    pub distances: Vec<u32>,
}

/// One cache level as lscpu summarises it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CacheLevel {
    /// lscpu's name: `L1d`, `L1i`, `L2`, `L3`.
    pub name: String,
    /// Cache level (1, 2, 3, ...).
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Size of one instance in bytes.
    pub size_bytes: u64,
    /// How many separate instances the online CPUs share.
    pub instances: usize,
    /// Logical CPUs sharing one instance.
    pub cpus_per_instance: usize,
    /// Cache line size in bytes.
    pub line_bytes: Option<u64>,
}

/// A network interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NicLink {
    /// Interface name.
    pub name: String,
    /// Link speed, Mbit/s (null when the driver reports none, as virtual links do).
    pub speed_mbps: Option<u64>,
    /// `up`, `down`, ...
    pub operstate: Option<String>,
    /// MTU, bytes.
    pub mtu: Option<u64>,
    /// Whether a device backs it (not a bridge, veth or tunnel).
    pub physical: bool,
    /// Its IP addresses (fleet reports map a client's address to the machine that holds it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
}

/// A PCIe link below what its path allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PcieLink {
    /// PCI address.
    pub device: String,
    /// Lanes in use.
    pub current_width: Option<u32>,
    /// Lanes the device allows.
    pub max_width: Option<u32>,
    /// Speed in use, GT/s.
    pub current_speed_gts: Option<f64>,
    /// Speed the device allows, GT/s.
    pub max_speed_gts: Option<f64>,
    /// Lanes it can train at: the least of the device's and every port's on its path to the root
    /// port (absent in documents of older versions, which compared with the device alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_width: Option<u32>,
    /// Speed it can train at, GT/s, the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_speed_gts: Option<f64>,
    /// The port on its path that sets the expectation below the device's own, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
}

impl PcieLink {
    /// Lanes lost: narrower than its path allows (a device of an older document: than itself).
    pub fn narrower(&self) -> bool {
        let expected = self.expected_width.or(self.max_width);
        matches!((self.current_width, expected), (Some(c), Some(e)) if c < e)
    }
}

/// The system clock's discipline, from `adjtimex(2)` (what `timedatectl` and `chronyc tracking`
/// read): whether an NTP or PTP daemon holds it synchronised, and the error it estimates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Clock {
    /// Whether the kernel holds the clock synchronised (`STA_UNSYNC` clear, not `TIME_ERROR`).
    pub synchronised: bool,
    /// The daemon's estimated error, ms.
    pub estimated_error_ms: f64,
    /// The largest error the kernel allows it, ms (it grows while nobody disciplines the clock).
    pub max_error_ms: f64,
}

/// Thermal-throttle event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ThrottleCounts {
    /// Core throttle events, summed over CPUs.
    pub core_events: u64,
    /// Package throttle events, once per package.
    pub package_events: u64,
}

/// One hugetlb pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HugePagePool {
    /// Page size, KiB.
    pub page_size_kib: u64,
    /// Pages in the pool.
    pub total: u64,
    /// Pages free.
    pub free: u64,
}

/// The IOMMU as the kernel set it up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Iommu {
    /// IOMMU groups (0: no IOMMU translates DMA).
    pub groups: usize,
    /// The default domain type of the groups (`identity` is passthrough; `DMA`, `DMA-FQ`
    /// translate every DMA).
    pub default_domain: Option<String>,
    /// Whether DMA passes through untranslated (`iommu=pt`, `iommu.passthrough=1`, or identity
    /// domains).
    pub passthrough: bool,
}

/// What the DIMMs add up to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DramInfo {
    /// Populated memory devices.
    pub dimms: usize,
    /// Distinct memory channels they sit on.
    pub channels: usize,
    /// Memory type (`DDR5`, ...).
    pub kind: Option<String>,
    /// Configured speed, MT/s (the slowest populated DIMM).
    pub speed_mts: u32,
    /// Data width per DIMM, bits (64 without ECC bits).
    pub data_width_bits: u32,
    /// channels x MT/s x data width, MiB/s.
    pub theoretical_peak_mb_s: f64,
}

/// Counters compared between the start and the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunDeltas {
    /// Seconds between the two readings.
    pub seconds: f64,
    /// Thermal-throttle events (core and package) that happened in between.
    pub throttle_events: Option<u64>,
    /// CPU time stolen by the hypervisor in between, % of all CPU time.
    pub steal_pct: Option<f64>,
}

impl From<&topology::Node> for NumaNode {
    fn from(n: &topology::Node) -> Self {
        NumaNode {
            id: n.id,
            cpus: n.cpulist.clone(),
            cpu_count: n.cpu_count,
            mem_total_kib: n.mem_total_kib,
            distances: n.distances.clone(),
        }
    }
}

impl From<&topology::Cache> for CacheLevel {
    fn from(c: &topology::Cache) -> Self {
        CacheLevel {
            name: c.name.clone(),
            level: c.level,
            kind: c.kind.clone(),
            size_bytes: c.size_bytes,
            instances: c.instances,
            cpus_per_instance: c.cpus_per_instance,
            line_bytes: c.line_bytes,
        }
    }
}

impl From<&devices::NicLink> for NicLink {
    fn from(l: &devices::NicLink) -> Self {
        NicLink {
            name: l.name.clone(),
            speed_mbps: l.speed_mbps,
            operstate: l.operstate.clone(),
            mtu: l.mtu,
            physical: l.physical,
            addresses: l.addresses.clone(),
        }
    }
}

impl From<&devices::PcieLink> for PcieLink {
    fn from(l: &devices::PcieLink) -> Self {
        PcieLink {
            device: l.device.clone(),
            current_width: l.current_width,
            max_width: l.max_width,
            current_speed_gts: l.current_speed_gts,
            max_speed_gts: l.max_speed_gts,
            expected_width: l.expected_width,
            expected_speed_gts: l.expected_speed_gts,
            limited_by: l.limited_by.clone(),
        }
    }
}

impl From<&dram::DramInfo> for DramInfo {
    fn from(d: &dram::DramInfo) -> Self {
        DramInfo {
            dimms: d.dimms,
            channels: d.channels,
            kind: d.kind.clone(),
            speed_mts: d.speed_mts,
            data_width_bits: d.data_width_bits,
            theoretical_peak_mb_s: d.theoretical_peak_mb_s,
        }
    }
}

impl From<&crate::system::RunDeltas> for RunDeltas {
    fn from(d: &crate::system::RunDeltas) -> Self {
        RunDeltas {
            seconds: d.seconds,
            throttle_events: d.throttle_events,
            steal_pct: d.steal_pct,
        }
    }
}

impl From<&devices::IommuState> for Iommu {
    fn from(i: &devices::IommuState) -> Self {
        Iommu {
            groups: i.groups,
            default_domain: i.default_domain.clone(),
            passthrough: i.passthrough,
        }
    }
}

impl From<&SystemInfo> for SystemPart {
    fn from(s: &SystemInfo) -> Self {
        SystemPart {
            hostname: s.hostname.clone(),
            kernel: s.kernel.clone(),
            architecture: s.architecture.clone(),
            os_id: s.os_id.clone(),
            os_name: s.os_name.clone(),
            cpu_model: s.cpu_model.clone(),
            cpu_vendor: s.cpu_vendor.clone(),
            virtualized: s.virtualized,
            logical_cpus: s.logical_cpus,
            usable_cpus: s.usable_cpus,
            sockets: s.sockets,
            cores: s.cores,
            threads_per_core: s.threads_per_core,
            numa_nodes: s.topology.nodes.iter().map(NumaNode::from).collect(),
            caches: s.topology.caches.iter().map(CacheLevel::from).collect(),
            mem_total_kib: s.mem_total_kib,
            mem_available_kib: s.mem_available_kib,
            cgroup_memory_free_kib: s.cgroup_memory_free_kib,
            swap_total_kib: s.swap_total_kib,
            swap_used_kib: s.swap_used_kib,
            hugepages: s
                .hugepages
                .iter()
                .map(|p| HugePagePool {
                    page_size_kib: p.page_size_kib,
                    total: p.total,
                    free: p.free,
                })
                .collect(),
            thp: s.thp.clone(),
            thp_defrag: s.thp_defrag.clone(),
            governor: s.governor.clone(),
            nic_links: s.nic_links.iter().map(NicLink::from).collect(),
            pcie_links_degraded: s.pcie_links_degraded.iter().map(PcieLink::from).collect(),
            thermal_throttle: s.thermal_throttle.map(|t| ThrottleCounts {
                core_events: t.core_events,
                package_events: t.package_events,
            }),
            numa_balancing: s.numa_balancing,
            timer_slack_ns: s.timer_slack_ns,
            clock: s.clock.map(|c| Clock {
                synchronised: c.synchronised,
                estimated_error_ms: c.estimated_error_us as f64 / 1000.0,
                max_error_ms: c.max_error_us as f64 / 1000.0,
            }),
            kernel_cmdline: s.kernel_cmdline.clone(),
            iommu: s.iommu.as_ref().map(Iommu::from),
            dram: s.dram.as_ref().map(DramInfo::from),
            dram_error: s.dram_error.clone(),
            during_run: s.during_run.as_ref().map(RunDeltas::from),
            fingerprint: s.fingerprint.clone(),
            error_counters: s
                .uptime_secs
                .map(|up| ErrorCounters::since_boot(&s.error_counters, up)),
        }
    }
}

impl SystemPart {
    /// Memory rounded to whole GiB, for grouping machines of one SKU (a few MiB of firmware
    /// reservations differ between otherwise identical machines).
    pub fn mem_gib(&self) -> Option<u64> {
        self.mem_total_kib
            .map(|k| (k as f64 / (1 << 20) as f64).round() as u64)
    }
}
