//! Hardware error counters since boot: what the kernel counts that no benchmark shows until it is
//! too late. EDAC memory errors per memory controller and DIMM, PCIe AER errors per device, NIC
//! carrier losses and receive errors per interface, thermal throttling per package, machine-check
//! exceptions. Each is a monotonic count since boot (a driver reload may reset one); the
//! difference between two snapshots of one boot is what happened in between.
//!
//! Every error is counted once: where EDAC attributes errors to DIMMs, the DIMMs carry them and
//! the controller keeps only the errors it could not attribute (`*_noinfo_count`).

use super::source::Source;
use std::collections::BTreeMap;

/// Where a counter comes from; its name is the `errors.<source>` check's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CounterSource {
    /// EDAC memory errors (`/sys/devices/system/edac/mc`).
    Edac,
    /// PCIe Advanced Error Reporting (`/sys/bus/pci/devices/*/aer_dev_*`).
    Aer,
    /// Network interfaces (`/sys/class/net/*`).
    Nic,
    /// Thermal throttling (`/sys/devices/system/cpu/cpu*/thermal_throttle`).
    Thermal,
    /// Machine-check exceptions (the `MCE` row of `/proc/interrupts`).
    Mce,
}

impl CounterSource {
    /// Every source, in report order.
    pub const ALL: [CounterSource; 5] = [
        CounterSource::Edac,
        CounterSource::Aer,
        CounterSource::Nic,
        CounterSource::Thermal,
        CounterSource::Mce,
    ];

    /// The name in check ids and the document.
    pub fn name(self) -> &'static str {
        match self {
            CounterSource::Edac => "edac",
            CounterSource::Aer => "aer",
            CounterSource::Nic => "nic",
            CounterSource::Thermal => "thermal",
            CounterSource::Mce => "mce",
        }
    }

    /// The source called `name`.
    pub fn from_name(name: &str) -> Option<CounterSource> {
        CounterSource::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One counter: what counts (`source`, `subject`, `counter`) and its value since boot.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Counter {
    /// Where it comes from.
    pub source: CounterSource,
    /// What it counts on: `mc0`, `mc0/dimm3`, `0000:3b:00.0`, `eth0`, `package0`, `all`.
    pub subject: String,
    /// Which count: `corrected`, `uncorrected`, `correctable`, `nonfatal`, `fatal`,
    /// `carrier_down`, `rx_crc_errors`, `rx_missed_errors`, `core_throttle`, `package_throttle`,
    /// `exceptions`.
    pub counter: String,
    /// Events since boot (or since the driver last reset it).
    pub value: u64,
}

/// Every counter the kernel exposes on this machine, sorted.
pub fn collect(src: &dyn Source) -> Vec<Counter> {
    let mut out = Vec::new();
    edac(src, &mut out);
    aer(src, &mut out);
    nic(src, &mut out);
    thermal(src, &mut out);
    mce(src, &mut out);
    out.sort();
    out
}

fn number(src: &dyn Source, path: &str) -> Option<u64> {
    src.read(path)?.trim().parse().ok()
}

fn push(out: &mut Vec<Counter>, source: CounterSource, subject: &str, counter: &str, value: u64) {
    out.push(Counter {
        source,
        subject: subject.to_string(),
        counter: counter.to_string(),
        value,
    });
}

const EDAC: &str = "/sys/devices/system/edac/mc";

fn edac(src: &dyn Source, out: &mut Vec<Counter>) {
    for mc in src.list(EDAC).into_iter().filter(|n| n.starts_with("mc")) {
        let dir = format!("{EDAC}/{mc}");
        // Newer kernels: dimmN (or rankN on some drivers), each with its own counts.
        let dimms: Vec<String> = src
            .list(&dir)
            .into_iter()
            .filter(|n| n.starts_with("dimm") || n.starts_with("rank"))
            .filter(|n| src.read(&format!("{dir}/{n}/dimm_ce_count")).is_some())
            .collect();
        if dimms.is_empty() {
            for (file, counter) in [("ce_count", "corrected"), ("ue_count", "uncorrected")] {
                if let Some(v) = number(src, &format!("{dir}/{file}")) {
                    push(out, CounterSource::Edac, &mc, counter, v);
                }
            }
            continue;
        }
        for d in &dimms {
            let subject = format!("{mc}/{d}");
            for (file, counter) in [
                ("dimm_ce_count", "corrected"),
                ("dimm_ue_count", "uncorrected"),
            ] {
                if let Some(v) = number(src, &format!("{dir}/{d}/{file}")) {
                    push(out, CounterSource::Edac, &subject, counter, v);
                }
            }
        }
        for (file, counter) in [
            ("ce_noinfo_count", "corrected"),
            ("ue_noinfo_count", "uncorrected"),
        ] {
            if let Some(v) = number(src, &format!("{dir}/{file}")) {
                push(out, CounterSource::Edac, &mc, counter, v);
            }
        }
    }
}

const PCI: &str = "/sys/bus/pci/devices";

/// The `TOTAL_ERR_*` line of an `aer_dev_*` file (one `NAME count` pair per line).
fn aer_total(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (name, value) = l.trim().rsplit_once(char::is_whitespace)?;
        name.trim()
            .starts_with("TOTAL_ERR")
            .then(|| value.trim().parse().ok())?
    })
}

fn aer(src: &dyn Source, out: &mut Vec<Counter>) {
    for dev in src.list(PCI) {
        for (file, counter) in [
            ("aer_dev_correctable", "correctable"),
            ("aer_dev_nonfatal", "nonfatal"),
            ("aer_dev_fatal", "fatal"),
        ] {
            if let Some(v) = src
                .read(&format!("{PCI}/{dev}/{file}"))
                .and_then(|t| aer_total(&t))
            {
                push(out, CounterSource::Aer, &dev, counter, v);
            }
        }
    }
}

const NET: &str = "/sys/class/net";

fn nic(src: &dyn Source, out: &mut Vec<Counter>) {
    for name in src.list(NET).into_iter().filter(|n| n != "lo") {
        let dir = format!("{NET}/{name}");
        // carrier_down_count (kernel 5.0+) counts losses; carrier_changes counts both edges.
        let down = number(src, &format!("{dir}/carrier_down_count"))
            .or_else(|| number(src, &format!("{dir}/carrier_changes")).map(|c| c / 2));
        if let Some(v) = down {
            push(out, CounterSource::Nic, &name, "carrier_down", v);
        }
        for counter in ["rx_crc_errors", "rx_missed_errors"] {
            if let Some(v) = number(src, &format!("{dir}/statistics/{counter}")) {
                push(out, CounterSource::Nic, &name, counter, v);
            }
        }
        if let Some(losses) = link_lost(src, &dir, down) {
            // A bond's member: the bond carries on over its other links.
            let bonded = src.list(&dir).iter().any(|n| n == "bonding_slave");
            let counter = if bonded {
                "bond_link_down"
            } else {
                "link_down"
            };
            push(out, CounterSource::Nic, &name, counter, losses);
        }
    }
}

/// When the NIC at `dir` lost its link and has not got it back, its losses since boot (so an
/// operator's acknowledgement covers this loss, not a later one): a physical port (it has a
/// `device`) configured up (`IFF_UP` in `flags`) whose link is down now, and was up since boot.
/// A port nobody configured, or that never had a link (an unused port), is not a fault.
fn link_lost(src: &dyn Source, dir: &str, losses: Option<u64>) -> Option<u64> {
    let physical = src.list(dir).iter().any(|n| n == "device");
    let configured_up = src
        .read(&format!("{dir}/flags"))
        .and_then(|t| u64::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok())
        .is_some_and(|f| f & 1 == 1);
    let down = src
        .read(&format!("{dir}/operstate"))
        .is_some_and(|t| matches!(t.trim(), "down" | "lowerlayerdown"));
    // Up since boot: counted up at least once, or (older kernels) two edges at least.
    let was_up = number(src, &format!("{dir}/carrier_up_count"))
        .map(|n| n > 0)
        .or_else(|| number(src, &format!("{dir}/carrier_changes")).map(|n| n >= 2))
        .unwrap_or(false);
    (physical && configured_up && down && was_up).then(|| losses.unwrap_or(1).max(1))
}

const CPU: &str = "/sys/devices/system/cpu";

fn thermal(src: &dyn Source, out: &mut Vec<Counter>) {
    // Per package: the cores' events summed, the package's counted once.
    let mut packages: BTreeMap<String, (u64, Option<u64>)> = BTreeMap::new();
    let cpus = src.list(CPU).into_iter().filter(|n| {
        n.strip_prefix("cpu")
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    });
    for cpu in cpus {
        let dir = format!("{CPU}/{cpu}/thermal_throttle");
        let Some(core) = number(src, &format!("{dir}/core_throttle_count")) else {
            continue;
        };
        let package = src
            .read(&format!("{CPU}/{cpu}/topology/physical_package_id"))
            .map_or_else(|| "0".to_string(), |t| t.trim().to_string());
        let entry = packages.entry(format!("package{package}")).or_default();
        entry.0 += core;
        if entry.1.is_none() {
            entry.1 = number(src, &format!("{dir}/package_throttle_count"));
        }
    }
    for (package, (core, pkg)) in packages {
        push(out, CounterSource::Thermal, &package, "core_throttle", core);
        if let Some(p) = pkg {
            push(out, CounterSource::Thermal, &package, "package_throttle", p);
        }
    }
}

fn mce(src: &dyn Source, out: &mut Vec<Counter>) {
    let Some(text) = src.read("/proc/interrupts") else {
        return;
    };
    // x86: `MCE:  0  0 ...  Machine check exceptions`, one count per CPU.
    if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("MCE:")) {
        let total: u64 = line
            .trim_start()
            .trim_start_matches("MCE:")
            .split_whitespace()
            .map_while(|w| w.parse::<u64>().ok())
            .sum();
        push(out, CounterSource::Mce, "all", "exceptions", total);
    }
}

/// What happened to one counter between two snapshots of the same boot: the increase, or the
/// value itself where the counter went back (a driver reload reset it). Never negative.
pub fn increase(before: u64, now: u64) -> u64 {
    if now >= before { now - before } else { now }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::source::FakeFs;

    fn with_edac_dimms(fs: &mut FakeFs) {
        let mc = format!("{EDAC}/mc0");
        fs.insert(format!("{mc}/ce_count"), "7\n")
            .insert(format!("{mc}/ue_count"), "1\n")
            .insert(format!("{mc}/ce_noinfo_count"), "2\n")
            .insert(format!("{mc}/ue_noinfo_count"), "0\n")
            .insert(format!("{mc}/dimm0/dimm_ce_count"), "5\n")
            .insert(format!("{mc}/dimm0/dimm_ue_count"), "0\n")
            .insert(format!("{mc}/dimm1/dimm_ce_count"), "0\n")
            .insert(format!("{mc}/dimm1/dimm_ue_count"), "1\n");
        // An older driver: counts on the controller only.
        fs.insert(format!("{EDAC}/mc1/ce_count"), "3\n")
            .insert(format!("{EDAC}/mc1/ue_count"), "0\n");
    }

    fn find<'a>(c: &'a [Counter], subject: &str, counter: &str) -> Option<&'a Counter> {
        c.iter()
            .find(|c| c.subject == subject && c.counter == counter)
    }

    #[test]
    fn edac_counts_each_error_once() {
        let mut fs = FakeFs::new();
        with_edac_dimms(&mut fs);
        let c = collect(&fs);
        assert_eq!(find(&c, "mc0/dimm0", "corrected").unwrap().value, 5);
        assert_eq!(find(&c, "mc0/dimm1", "uncorrected").unwrap().value, 1);
        // The controller keeps only what it could not attribute: 2, not 7.
        assert_eq!(find(&c, "mc0", "corrected").unwrap().value, 2);
        assert_eq!(find(&c, "mc1", "corrected").unwrap().value, 3);
        let corrected: u64 = c
            .iter()
            .filter(|c| c.subject.starts_with("mc0") && c.counter == "corrected")
            .map(|c| c.value)
            .sum();
        assert_eq!(corrected, 7, "the controller's ce_count, every error once");
    }

    #[test]
    fn aer_nic_thermal_and_mce_counters_are_read() {
        let mut fs = FakeFs::new();
        let dev = format!("{PCI}/0000:3b:00.0");
        fs.insert(
            format!("{dev}/aer_dev_correctable"),
            "RxErr 0\nBadTLP 3\nBadDLLP 1\nTOTAL_ERR_COR 4\n",
        )
        .insert(
            format!("{dev}/aer_dev_nonfatal"),
            "Undefined 0\nTOTAL_ERR_NONFATAL 0\n",
        )
        .insert(format!("{dev}/aer_dev_fatal"), "TOTAL_ERR_FATAL 0\n")
        // A device without AER says nothing.
        .insert(format!("{PCI}/0000:00:00.0/vendor"), "0x8086\n")
        .insert(format!("{NET}/lo/carrier_changes"), "0\n")
        .insert(format!("{NET}/eth0/carrier_down_count"), "3\n")
        .insert(format!("{NET}/eth0/carrier_changes"), "7\n")
        .insert(format!("{NET}/eth0/statistics/rx_crc_errors"), "12\n")
        .insert(format!("{NET}/eth0/statistics/rx_missed_errors"), "0\n")
        // An old kernel: only carrier_changes (both edges).
        .insert(format!("{NET}/eth1/carrier_changes"), "4\n")
        .insert(
            "/proc/interrupts",
            "           CPU0       CPU1\n  0:   20   0   IO-APIC   2-edge  timer\n\
             MCE:          1          2   Machine check exceptions\n\
             MCP:        100        100   Machine check polls\n",
        );
        for (cpu, package, core) in [(0, 0, 4), (1, 0, 1), (2, 1, 0)] {
            let d = format!("{CPU}/cpu{cpu}");
            fs.insert(
                format!("{d}/thermal_throttle/core_throttle_count"),
                format!("{core}\n"),
            )
            .insert(
                format!("{d}/thermal_throttle/package_throttle_count"),
                format!("{}\n", 10 + package),
            )
            .insert(
                format!("{d}/topology/physical_package_id"),
                format!("{package}\n"),
            );
        }
        let c = collect(&fs);
        assert_eq!(find(&c, "0000:3b:00.0", "correctable").unwrap().value, 4);
        assert_eq!(find(&c, "0000:3b:00.0", "fatal").unwrap().value, 0);
        assert!(find(&c, "0000:00:00.0", "correctable").is_none());
        assert!(find(&c, "lo", "carrier_down").is_none());
        assert_eq!(find(&c, "eth0", "carrier_down").unwrap().value, 3);
        assert_eq!(find(&c, "eth1", "carrier_down").unwrap().value, 2);
        assert_eq!(find(&c, "eth0", "rx_crc_errors").unwrap().value, 12);
        assert_eq!(find(&c, "package0", "core_throttle").unwrap().value, 5);
        assert_eq!(find(&c, "package0", "package_throttle").unwrap().value, 10);
        assert_eq!(find(&c, "package1", "package_throttle").unwrap().value, 11);
        assert_eq!(find(&c, "all", "exceptions").unwrap().value, 3);
    }

    #[test]
    fn a_link_configured_up_that_went_down_is_a_condition() {
        let nic = |fs: &mut FakeFs, name: &str, flags: &str, state: &str, ups: &str| {
            let d = format!("{NET}/{name}");
            fs.insert(format!("{d}/device/vendor"), "0x8086\n")
                .insert(format!("{d}/flags"), format!("{flags}\n"))
                .insert(format!("{d}/operstate"), format!("{state}\n"))
                .insert(format!("{d}/carrier_up_count"), format!("{ups}\n"));
        };
        let mut fs = FakeFs::new();
        nic(&mut fs, "eth0", "0x1003", "down", "1"); // lost its link
        nic(&mut fs, "eth1", "0x1003", "up", "1"); // fine
        nic(&mut fs, "eth2", "0x1002", "down", "1"); // an administrator set it down
        nic(&mut fs, "eth3", "0x1003", "down", "0"); // configured, never cabled
        nic(&mut fs, "eth4", "0x1003", "down", "3"); // a bond's member
        fs.insert(format!("{NET}/eth4/bonding_slave/state"), "backup\n");
        // Its losses count, so an acknowledgement covers this one only.
        fs.insert(format!("{NET}/eth0/carrier_down_count"), "2\n");
        // A virtual interface (no device) that is down is nobody's fault.
        fs.insert(format!("{NET}/veth0/flags"), "0x1003\n")
            .insert(format!("{NET}/veth0/operstate"), "down\n")
            .insert(format!("{NET}/veth0/carrier_up_count"), "2\n");
        // An older kernel: only both edges counted; one edge is no link ever had.
        fs.insert(format!("{NET}/eth5/device/vendor"), "0x8086\n")
            .insert(format!("{NET}/eth5/flags"), "0x1003\n")
            .insert(format!("{NET}/eth5/operstate"), "down\n")
            .insert(format!("{NET}/eth5/carrier_changes"), "1\n");
        let c = collect(&fs);
        let down: Vec<(&str, &str, u64)> = c
            .iter()
            .filter(|c| c.counter.ends_with("link_down"))
            .map(|c| (c.subject.as_str(), c.counter.as_str(), c.value))
            .collect();
        assert_eq!(
            down,
            [("eth0", "link_down", 2), ("eth4", "bond_link_down", 1)]
        );
    }

    #[test]
    fn a_machine_without_counters_has_none() {
        assert!(collect(&FakeFs::new()).is_empty());
    }

    #[test]
    fn a_reset_counter_never_goes_negative() {
        assert_eq!(increase(5, 9), 4);
        assert_eq!(increase(9, 2), 2, "reset: what it counted since");
        assert_eq!(increase(3, 3), 0);
    }

    #[test]
    fn sources_round_trip_their_names() {
        for s in CounterSource::ALL {
            assert_eq!(CounterSource::from_name(s.name()), Some(s));
        }
    }
}
