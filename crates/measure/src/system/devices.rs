//! Devices and counters that explain bad figures: NIC link speeds (`/sys/class/net/*/speed`, in
//! Mbit/s), PCIe links trained below their capability (`current_link_{width,speed}` vs `max_*`),
//! thermal-throttle counters, huge-page pools and the CPU frequency governor.

use super::parse::{parse_int, parse_pcie_speed};
use super::source::Source;
use std::collections::BTreeMap;

/// One network interface other than loopback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicLink {
    /// Interface name.
    pub name: String,
    /// Negotiated speed in Mbit/s; `None` when the driver reports none (no link, virtual device).
    pub speed_mbps: Option<u64>,
    /// `operstate`: up, down, unknown...
    pub operstate: Option<String>,
    /// MTU in bytes.
    pub mtu: Option<u64>,
    /// Whether a physical (or paravirtual) device backs it (`device` link in sysfs).
    pub physical: bool,
    /// Its IP addresses (filled on the host by [`fill_addresses`]; files do not hold them).
    pub addresses: Vec<String>,
}

/// Reads every non-loopback interface under /sys/class/net.
pub fn read_nic_links(src: &dyn Source) -> Vec<NicLink> {
    let base = "/sys/class/net";
    src.list(base)
        .into_iter()
        .filter(|name| name != "lo")
        .map(|name| {
            let read = |f: &str| src.read(&format!("{base}/{name}/{f}"));
            NicLink {
                speed_mbps: read("speed")
                    .and_then(|t| parse_int(&t))
                    .and_then(|v| u64::try_from(v).ok())
                    .filter(|&v| v > 0),
                operstate: read("operstate").map(|t| t.trim().to_string()),
                mtu: read("mtu").and_then(|t| t.trim().parse().ok()),
                physical: !src.list(&format!("{base}/{name}/device")).is_empty()
                    || read("device/vendor").is_some(),
                addresses: Vec::new(),
                name,
            }
        })
        .collect()
}

/// A PCIe device whose link trained narrower or slower than its path allows.
#[derive(Debug, Clone, PartialEq)]
pub struct PcieLink {
    /// PCI address (domain:bus:device.function).
    pub device: String,
    /// Current link width (lanes).
    pub current_width: Option<u32>,
    /// Maximum link width (lanes) of the device itself.
    pub max_width: Option<u32>,
    /// Current link speed, GT/s.
    pub current_speed_gts: Option<f64>,
    /// Maximum link speed of the device itself, GT/s.
    pub max_speed_gts: Option<f64>,
    /// The width it can train at: the least of its own and every port's on its path to the root
    /// port (a x16 card in a x8 slot runs x8 by design).
    pub expected_width: Option<u32>,
    /// The speed it can train at, GT/s, the same way (a Gen5 card in a Gen4 slot runs Gen4).
    pub expected_speed_gts: Option<f64>,
    /// The port on its path that sets the expectation below the device's own, if one does.
    pub limited_by: Option<String>,
}

impl PcieLink {
    /// Whether the link runs narrower than its path allows: lanes lost (a card not seated, a
    /// bad riser, bifurcation), whatever the device is doing.
    pub fn narrower(&self) -> bool {
        matches!((self.current_width, self.expected_width), (Some(c), Some(e)) if c < e)
    }

    /// Whether the link runs slower than its path allows. An idle device may lower its speed to
    /// save power, so this alone is not a fault.
    pub fn slower(&self) -> bool {
        matches!((self.current_speed_gts, self.expected_speed_gts), (Some(c), Some(e)) if c < e)
    }

    /// Whether the link runs below what its path allows in width or speed.
    pub fn degraded(&self) -> bool {
        self.narrower() || self.slower()
    }
}

/// Whether a sysfs path component names a PCI function (`0000:3a:00.0`).
fn is_pci_address(name: &str) -> bool {
    let b = name.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
    b.len() == 12
        && hex(0..4)
        && b[4] == b':'
        && hex(5..7)
        && b[7] == b':'
        && hex(8..10)
        && b[10] == b'.'
        && (b'0'..=b'7').contains(&b[11])
}

/// The PCI functions above `device` on its way to the root complex (its switch ports and root
/// port), nearest first, from the device tree path its sysfs link points into.
fn upstream_ports(src: &dyn Source, base: &str, device: &str) -> Vec<String> {
    let Some(real) = src.resolve(&format!("{base}/{device}")) else {
        return Vec::new();
    };
    let mut path: Vec<&str> = real.split('/').filter(|c| is_pci_address(c)).collect();
    if path.last() == Some(&device) {
        path.pop();
    }
    path.into_iter().rev().map(str::to_string).collect()
}

/// PCIe devices whose current link is below what the device and every port on its path to the
/// root port allow (the link files of each, in sysfs). Idle devices may downshift speed to save
/// power, so a slower link alone is a finding to look at, not proof of a fault.
pub fn read_degraded_pcie_links(src: &dyn Source) -> Vec<PcieLink> {
    let base = "/sys/bus/pci/devices";
    let width = |dev: &str, f: &str| {
        src.read(&format!("{base}/{dev}/{f}"))
            .and_then(|t| t.trim().parse::<u32>().ok())
            .filter(|&w| w > 0)
    };
    let speed = |dev: &str, f: &str| {
        src.read(&format!("{base}/{dev}/{f}"))
            .and_then(|t| parse_pcie_speed(&t))
    };
    src.list(base)
        .into_iter()
        .filter_map(|device| {
            let (max_width, max_speed_gts) = (
                width(&device, "max_link_width"),
                speed(&device, "max_link_speed"),
            );
            let (mut expected_width, mut expected_speed_gts) = (max_width, max_speed_gts);
            let mut limited_by = None;
            for port in upstream_ports(src, base, &device) {
                let (w, s) = (
                    width(&port, "max_link_width"),
                    speed(&port, "max_link_speed"),
                );
                if let (Some(w), Some(e)) = (w, expected_width) {
                    if w < e {
                        expected_width = Some(w);
                        limited_by = Some(port.clone());
                    }
                }
                if let (Some(s), Some(e)) = (s, expected_speed_gts) {
                    if s < e {
                        expected_speed_gts = Some(s);
                        limited_by = Some(port.clone());
                    }
                }
            }
            let link = PcieLink {
                current_width: width(&device, "current_link_width"),
                max_width,
                current_speed_gts: speed(&device, "current_link_speed"),
                max_speed_gts,
                expected_width,
                expected_speed_gts,
                limited_by,
                device,
            };
            link.degraded().then_some(link)
        })
        .collect()
}

/// Thermal-throttle event counts since boot (x86 `thermal_throttle/*_throttle_count`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThrottleCounts {
    /// Sum over CPUs of core throttle events.
    pub core_events: u64,
    /// Sum over sockets of package throttle events.
    pub package_events: u64,
}

/// Reads the throttle counters; `None` where the kernel exposes none (VMs, arm64).
pub fn read_throttle_counts(src: &dyn Source, cpus: &[(usize, usize)]) -> Option<ThrottleCounts> {
    let mut counts = ThrottleCounts::default();
    let mut seen_package = std::collections::BTreeSet::new();
    let mut any = false;
    for &(cpu, package) in cpus {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/thermal_throttle");
        if let Some(v) = src
            .read(&format!("{dir}/core_throttle_count"))
            .and_then(|t| t.trim().parse::<u64>().ok())
        {
            counts.core_events += v;
            any = true;
        }
        if seen_package.insert(package) {
            if let Some(v) = src
                .read(&format!("{dir}/package_throttle_count"))
                .and_then(|t| t.trim().parse::<u64>().ok())
            {
                counts.package_events += v;
                any = true;
            }
        }
    }
    any.then_some(counts)
}

/// One huge-page pool (`/sys/kernel/mm/hugepages/hugepages-<size>kB`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HugePagePool {
    /// Page size in KiB (2048, 1048576...).
    pub page_size_kib: u64,
    /// Pages reserved (`nr_hugepages`).
    pub total: u64,
    /// Pages not in use (`free_hugepages`).
    pub free: u64,
}

/// Reads the huge-page pools, smallest page size first.
pub fn read_hugepage_pools(src: &dyn Source) -> Vec<HugePagePool> {
    let base = "/sys/kernel/mm/hugepages";
    let mut pools: Vec<HugePagePool> = src
        .list(base)
        .into_iter()
        .filter_map(|dir| {
            let size = dir
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let count = |f: &str| {
                src.read(&format!("{base}/{dir}/{f}"))
                    .and_then(|t| t.trim().parse().ok())
            };
            Some(HugePagePool {
                page_size_kib: size,
                total: count("nr_hugepages")?,
                free: count("free_hugepages").unwrap_or(0),
            })
        })
        .collect();
    pools.sort_by_key(|p| p.page_size_kib);
    pools
}

/// The IOMMU as the kernel set it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IommuState {
    /// IOMMU groups; 0 when no IOMMU translates DMA.
    pub groups: usize,
    /// The first group's default domain type (`identity`, `DMA`, `DMA-FQ`).
    pub default_domain: Option<String>,
    /// DMA passes through untranslated: identity domains or a passthrough boot option.
    pub passthrough: bool,
}

/// Whether a kernel command line asks for IOMMU passthrough (`iommu=pt` on x86_64,
/// `iommu.passthrough=1` on arm64), or turns the IOMMU off.
pub fn cmdline_passthrough(cmdline: &str) -> bool {
    cmdline.split_whitespace().any(|w| {
        matches!(
            w,
            "iommu=pt" | "iommu=off" | "intel_iommu=off" | "amd_iommu=off" | "iommu.passthrough=1"
        ) || w == "iommu.passthrough=on"
    })
}

/// Reads the IOMMU groups; `None` when the kernel command line is unreadable (not a Linux host).
pub fn read_iommu(src: &dyn Source, cmdline: Option<&str>) -> Option<IommuState> {
    let cmdline = cmdline?;
    let base = "/sys/kernel/iommu_groups";
    let groups = src.list(base);
    let default_domain = groups
        .iter()
        .find_map(|g| src.read(&format!("{base}/{g}/type")))
        .map(|t| t.trim().to_string());
    let passthrough = default_domain.as_deref() == Some("identity") || cmdline_passthrough(cmdline);
    Some(IommuState {
        groups: groups.len(),
        default_domain,
        passthrough,
    })
}

/// Puts each interface's IP addresses on its link (Unix: getifaddrs).
pub fn fill_addresses(links: &mut [NicLink]) {
    #[cfg(unix)]
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for a in addrs {
            let Some(ip) = a.address.as_ref().and_then(|s| {
                s.as_sockaddr_in()
                    .map(|v4| std::net::IpAddr::V4(v4.ip()))
                    .or_else(|| s.as_sockaddr_in6().map(|v6| std::net::IpAddr::V6(v6.ip())))
            }) else {
                continue;
            };
            if let Some(link) = links.iter_mut().find(|l| l.name == a.interface_name) {
                let text = ip.to_string();
                if !link.addresses.contains(&text) {
                    link.addresses.push(text);
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = links;
}

/// The scaling governor of every CPU that has cpufreq, counted by name.
pub fn read_governors(src: &dyn Source, cpus: &[usize]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for cpu in cpus {
        if let Some(g) = src.read(&format!(
            "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
        )) {
            *counts.entry(g.trim().to_string()).or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::fake;
    use crate::system::source::FakeFs;

    #[test]
    fn nic_speed_minus_one_is_unknown() {
        let mut fs = FakeFs::new();
        fs.insert("/sys/class/net/eth0/speed", "-1\n")
            .insert("/sys/class/net/lo/mtu", "65536\n")
            .insert("/sys/class/net/eth1/speed", "25000\n")
            .insert("/sys/class/net/eth1/device/vendor", "0x8086\n");
        let links = read_nic_links(&fs);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].speed_mbps, None);
        assert!(!links[0].physical);
        assert_eq!(links[1].speed_mbps, Some(25_000));
        assert!(links[1].physical);
    }

    #[test]
    fn pcie_width_and_speed_downgrades_are_found() {
        let fs = fake::two_socket_384();
        let links = read_degraded_pcie_links(&fs);
        let names: Vec<&str> = links.iter().map(|l| l.device.as_str()).collect();
        assert_eq!(names, ["0000:41:00.0", "0000:c2:00.0"]);
        assert_eq!(links[0].current_width, Some(8));
        assert_eq!(links[1].current_speed_gts, Some(8.0));
    }

    /// A PCIe function in a fake sysfs: its link files, and `/sys/bus/pci/devices/<it>` linked
    /// into the device tree below `path` (the ports above it, root port first).
    fn pci(fs: &mut FakeFs, path: &[&str], now: (u32, &str), max: (u32, &str)) {
        let device = path[path.len() - 1];
        let bus = format!("/sys/bus/pci/devices/{device}");
        let tree = format!("/sys/devices/pci0000:00/{}", path.join("/"));
        fs.link(bus.clone(), tree)
            .insert(format!("{bus}/current_link_width"), format!("{}\n", now.0))
            .insert(
                format!("{bus}/current_link_speed"),
                format!("{} PCIe\n", now.1),
            )
            .insert(format!("{bus}/max_link_width"), format!("{}\n", max.0))
            .insert(format!("{bus}/max_link_speed"), format!("{} PCIe\n", max.1));
    }

    #[test]
    fn a_link_is_expected_at_the_least_its_path_to_the_root_port_allows() {
        let (root, up, down) = ("0000:00:01.0", "0000:01:00.0", "0000:02:00.0");
        let mut fs = FakeFs::new();
        // A Gen4 x16 root port, a Gen5 switch under it, and cards under the switch.
        pci(&mut fs, &[root], (16, "16.0 GT/s"), (16, "16.0 GT/s"));
        pci(&mut fs, &[root, up], (16, "16.0 GT/s"), (16, "32.0 GT/s"));
        pci(
            &mut fs,
            &[root, up, down],
            (16, "16.0 GT/s"),
            (16, "32.0 GT/s"),
        );
        // A Gen5 card running Gen4 below the Gen4 root port: as fast as its path allows.
        pci(
            &mut fs,
            &[root, up, down, "0000:03:00.0"],
            (16, "16.0 GT/s"),
            (16, "32.0 GT/s"),
        );
        // A x16 card trained x8 under x16 ports: lanes lost.
        pci(
            &mut fs,
            &[root, up, down, "0000:04:00.0"],
            (8, "16.0 GT/s"),
            (16, "16.0 GT/s"),
        );
        // A x16 card in a x8 slot, at x8: by design.
        pci(
            &mut fs,
            &["0000:00:02.0"],
            (8, "16.0 GT/s"),
            (8, "16.0 GT/s"),
        );
        pci(
            &mut fs,
            &["0000:00:02.0", "0000:05:00.0"],
            (8, "16.0 GT/s"),
            (16, "16.0 GT/s"),
        );
        // An idle Gen4 card resting at Gen1 behind Gen4 ports: slower, not narrower.
        pci(
            &mut fs,
            &[root, up, down, "0000:06:00.0"],
            (16, "2.5 GT/s"),
            (16, "16.0 GT/s"),
        );
        let links = read_degraded_pcie_links(&fs);
        let names: Vec<&str> = links.iter().map(|l| l.device.as_str()).collect();
        assert_eq!(names, ["0000:04:00.0", "0000:06:00.0"], "{links:#?}");
        assert!(links[0].narrower() && !links[0].slower());
        assert_eq!(links[0].expected_width, Some(16));
        assert!(links[1].slower() && !links[1].narrower());
        assert_eq!(links[1].expected_speed_gts, Some(16.0));
        // The switch's ports themselves run at what their link to the root port allows.
        assert!(!names.contains(&up) && !names.contains(&down));
    }

    #[test]
    fn pci_addresses_are_told_from_other_path_components() {
        assert!(is_pci_address("0000:3a:00.0"));
        assert!(!is_pci_address("10000:00:01.7"));
        assert!(!is_pci_address("pci0000:00"));
        assert!(!is_pci_address("0000:3a:00.8"));
        assert!(!is_pci_address("0000:3g:00.0"));
    }

    #[test]
    fn throttle_counts_sum_cores_and_packages_once() {
        let mut fs = FakeFs::new();
        for (cpu, core, pkg) in [(0, 3, 7), (1, 4, 7)] {
            let d = format!("/sys/devices/system/cpu/cpu{cpu}/thermal_throttle");
            fs.insert(format!("{d}/core_throttle_count"), format!("{core}\n"))
                .insert(format!("{d}/package_throttle_count"), format!("{pkg}\n"));
        }
        let c = read_throttle_counts(&fs, &[(0, 0), (1, 0)]).unwrap();
        assert_eq!((c.core_events, c.package_events), (7, 7));
        assert!(read_throttle_counts(&FakeFs::new(), &[(0, 0)]).is_none());
    }

    #[test]
    fn hugepage_pools_and_governors() {
        let fs = fake::two_socket_384();
        let pools = read_hugepage_pools(&fs);
        assert_eq!(pools.len(), 2);
        assert_eq!(pools[1].page_size_kib, 1_048_576);
        assert_eq!(pools[1].free, 4);
        let g = read_governors(&fs, &[0, 1, 383]);
        assert_eq!(g.get("performance"), Some(&3));
    }
}
