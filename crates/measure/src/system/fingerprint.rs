//! A machine's configuration as facts (`name -> value`), to find the one machine in fifty whose
//! firmware, kernel or settings drifted from its siblings', and the run where a machine's own
//! changed: firmware (DMI), CPU microcode, kernel release and command line, frequency governor,
//! SMT, transparent huge pages, idle states, DIMMs, NIC drivers and firmware.
//!
//! Facts are compared as strings, so each is written the same way on every machine: lists
//! sorted, per-CPU settings summarised (`C1,C6` or `C1,C6 (190 of 384 CPUs)` when CPUs differ),
//! and what is unique to a machine by design (its root file system's UUID) left out of the
//! kernel command line.

use super::SystemInfo;
use super::source::Source;
use crate::os::DriverInfo;
use std::collections::BTreeMap;

/// The facts of one machine, by name.
pub type Facts = BTreeMap<String, String>;

const DMI: &str = "/sys/class/dmi/id";
const CPU: &str = "/sys/devices/system/cpu";
const NET: &str = "/sys/class/net";

/// The facts of the machine `sys` describes; `nic` gives an interface's driver and firmware
/// (the `ETHTOOL_GDRVINFO` ioctl on the host, a table in tests).
pub fn collect(
    src: &dyn Source,
    sys: &SystemInfo,
    nic: &dyn Fn(&str) -> Option<DriverInfo>,
) -> Facts {
    let mut facts = Facts::new();
    let mut put = |name: &str, value: Option<String>| {
        if let Some(v) = value
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
        {
            facts.insert(name.to_string(), v);
        }
    };
    let read = |p: &str| src.read(p);
    for (name, file) in [
        ("bios.vendor", "bios_vendor"),
        ("bios.version", "bios_version"),
        ("bios.date", "bios_date"),
        ("board.vendor", "board_vendor"),
        ("board.name", "board_name"),
        ("board.version", "board_version"),
        ("system.product", "product_name"),
    ] {
        put(name, read(&format!("{DMI}/{file}")));
    }
    put(
        "cpu.microcode",
        read("/proc/cpuinfo").and_then(|t| microcode(&t)),
    );
    put("kernel.release", sys.kernel.clone());
    put(
        "kernel.cmdline",
        sys.kernel_cmdline.as_deref().map(comparable_cmdline),
    );
    put("cpu.governor", sys.governor.clone());
    put("cpu.smt", read(&format!("{CPU}/smt/control")));
    put(
        "cpu.idle_driver",
        read(&format!("{CPU}/cpuidle/current_driver")),
    );
    let cpus: Vec<usize> = sys.topology.cpus.iter().map(|c| c.id).collect();
    put("cpu.idle_states", idle_states(src, &cpus));
    put("memory.thp", sys.thp.clone());
    put("memory.thp_defrag", sys.thp_defrag.clone());
    put(
        "kernel.numa_balancing",
        sys.numa_balancing
            .map(|b| if b { "on" } else { "off" }.to_string()),
    );
    put("memory.dimms", sys.dram.as_ref().map(|d| d.modules.clone()));
    // Physical interfaces only: virtual ones (bridges, veths, tunnels) come and go with
    // containers and say nothing about the machine.
    for name in src.list(NET) {
        if name == "lo" || src.list(&format!("{NET}/{name}/device")).is_empty() {
            continue;
        }
        if let Some(info) = nic(&name) {
            put(&format!("nic.{name}.driver"), Some(info.driver));
            put(&format!("nic.{name}.firmware"), Some(info.firmware));
        }
    }
    facts
}

/// The facts of the running host.
pub fn collect_host(sys: &SystemInfo) -> Facts {
    collect(&super::source::HostFs, sys, &crate::os::nic_driver_info)
}

/// The CPUs' microcode revision: one value, or each value with its CPU count when they differ.
fn microcode(cpuinfo: &str) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for line in cpuinfo.lines() {
        if let Some((k, v)) = line.split_once(':') {
            if k.trim() == "microcode" {
                *counts.entry(v.trim()).or_default() += 1;
            }
        }
    }
    summarise(&counts)
}

fn summarise(counts: &BTreeMap<&str, usize>) -> Option<String> {
    match counts.len() {
        0 => None,
        1 => counts.keys().next().map(|k| k.to_string()),
        _ => Some(
            counts
                .iter()
                .map(|(v, n)| format!("{v}({n})"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    }
}

/// Kernel parameters that name this machine's own disks or addresses: different on every
/// machine by design, so never drift.
const PER_MACHINE_PARAMETERS: &[&str] = &[
    "BOOT_IMAGE",
    "initrd",
    "root",
    "resume",
    "rd.lvm.lv",
    "rd.luks.uuid",
    "rd.md.uuid",
    "cryptdevice",
    "ip",
    "hostname",
    "netroot",
];

/// The kernel command line without the per-machine parameters, in its order (what follows
/// `--` goes to init, where order matters).
pub fn comparable_cmdline(cmdline: &str) -> String {
    let words: Vec<&str> = cmdline
        .split_whitespace()
        .filter(|w| {
            let key = w.split_once('=').map_or(*w, |(k, _)| k);
            !PER_MACHINE_PARAMETERS.contains(&key)
        })
        .collect();
    words.join(" ")
}

/// The idle states the CPUs may enter: the names of the enabled states, with the CPU count
/// where CPUs differ. `None` without cpuidle.
fn idle_states(src: &dyn Source, cpus: &[usize]) -> Option<String> {
    let mut per_set: BTreeMap<String, usize> = BTreeMap::new();
    for cpu in cpus {
        let dir = format!("{CPU}/cpu{cpu}/cpuidle");
        let states = src.list(&dir);
        if states.is_empty() {
            continue;
        }
        let enabled: Vec<String> = states
            .iter()
            .filter(|s| s.starts_with("state"))
            .filter(|s| {
                src.read(&format!("{dir}/{s}/disable"))
                    .is_none_or(|d| d.trim() == "0")
            })
            .filter_map(|s| src.read(&format!("{dir}/{s}/name")))
            .map(|n| n.trim().to_string())
            .collect();
        *per_set.entry(enabled.join(",")).or_default() += 1;
    }
    let total: usize = per_set.values().sum();
    match per_set.len() {
        0 => None,
        1 => per_set.into_keys().next(),
        _ => Some(
            per_set
                .iter()
                .map(|(set, n)| format!("{set} ({n} of {total} CPUs)"))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{collect as collect_system, fake};

    fn no_nic(_: &str) -> Option<DriverInfo> {
        None
    }

    #[test]
    fn firmware_kernel_and_settings_become_facts() {
        let mut fs = fake::two_socket_384();
        fs.insert(format!("{DMI}/bios_vendor"), "Dell Inc.\n")
            .insert(format!("{DMI}/bios_version"), "2.19.1\n")
            .insert(format!("{DMI}/board_name"), "0X1X2X\n")
            .insert(format!("{CPU}/smt/control"), "on\n")
            .insert(
                "/proc/cmdline",
                "BOOT_IMAGE=/vmlinuz-6.6 root=UUID=1234-abcd ro quiet mitigations=off\n",
            )
            .insert(
                "/proc/cpuinfo",
                "processor\t: 0\nmodel name\t: X\nmicrocode\t: 0xb000040\n\n\
                 processor\t: 1\nmodel name\t: X\nmicrocode\t: 0xb000040\n",
            );
        for cpu in 0..384 {
            let d = format!("{CPU}/cpu{cpu}/cpuidle");
            fs.insert(format!("{d}/state0/name"), "POLL\n")
                .insert(format!("{d}/state0/disable"), "0\n")
                .insert(format!("{d}/state1/name"), "C1\n")
                .insert(format!("{d}/state1/disable"), "0\n")
                .insert(format!("{d}/state2/name"), "C6\n")
                .insert(
                    format!("{d}/state2/disable"),
                    if cpu < 4 { "1\n" } else { "0\n" },
                );
        }
        let sys = collect_system(&fs, None);
        let f = collect(&fs, &sys, &no_nic);
        assert_eq!(f["bios.vendor"], "Dell Inc.");
        assert_eq!(f["bios.version"], "2.19.1");
        assert_eq!(f["cpu.smt"], "on");
        assert_eq!(f["cpu.microcode"], "0xb000040");
        assert_eq!(f["kernel.cmdline"], "ro quiet mitigations=off");
        assert_eq!(f["memory.thp"], "always");
        assert_eq!(f["cpu.governor"], "performance");
        assert_eq!(
            f["cpu.idle_states"],
            "POLL,C1 (4 of 384 CPUs); POLL,C1,C6 (380 of 384 CPUs)"
        );
        assert!(!f.contains_key("bios.date"), "missing files are no facts");
    }

    #[test]
    fn physical_nics_give_driver_and_firmware() {
        let mut fs = crate::system::source::FakeFs::new();
        fs.insert(format!("{NET}/eth0/device/vendor"), "0x15b3\n")
            .insert(format!("{NET}/veth1/address"), "aa\n")
            .insert(format!("{NET}/lo/address"), "00\n");
        let sys = collect_system(&fs, None);
        let nic = |name: &str| {
            (name == "eth0").then(|| DriverInfo {
                driver: "mlx5_core".into(),
                version: "6.6".into(),
                firmware: "22.36.1010".into(),
                bus: "0000:3b:00.0".into(),
            })
        };
        let f = collect(&fs, &sys, &nic);
        assert_eq!(f["nic.eth0.driver"], "mlx5_core");
        assert_eq!(f["nic.eth0.firmware"], "22.36.1010");
        assert!(!f.keys().any(|k| k.contains("veth1") || k.contains(".lo.")));
    }

    #[test]
    fn mixed_microcode_is_counted() {
        let text = "microcode : 0xa\n\nmicrocode : 0xb\n\nmicrocode : 0xb\n";
        assert_eq!(microcode(text).as_deref(), Some("0xa(1), 0xb(2)"));
        assert_eq!(microcode("model name : X\n"), None);
    }

    #[test]
    fn the_command_line_keeps_settings_and_drops_disks() {
        assert_eq!(
            comparable_cmdline("root=/dev/sda1 ro  nosmt BOOT_IMAGE=/boot/x rd.lvm.lv=vg/root"),
            "ro nosmt"
        );
    }

    #[test]
    fn the_host_has_a_kernel_fact() {
        let sys = crate::system::collect_host();
        assert!(collect_host(&sys).contains_key("kernel.release"));
    }
}
