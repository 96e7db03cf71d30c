//! Who a machine is, for readers that must never mix two machines up nor compare unlike ones:
//! what it was bought as (CPU model, sockets, cores per socket, NUMA nodes), what it has now
//! (logical CPUs online, memory), and which machine and boot it is. The machine id is an
//! application-specific hash of /etc/machine-id (never the id itself, which other software uses
//! as a secret-ish key); the boot id separates the counters of one boot from the next.

use super::SystemInfo;
use super::source::Source;
use sha2::{Digest, Sha256};

/// A machine's identity, read from /proc, /sys and /etc.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    /// Host name.
    pub hostname: Option<String>,
    /// [`app_specific_id`] of /etc/machine-id.
    pub machine_id: Option<String>,
    /// /proc/sys/kernel/random/boot_id.
    pub boot_id: Option<String>,
    /// `x86_64`, `aarch64`.
    pub architecture: String,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Sockets.
    pub sockets: usize,
    /// Physical cores per socket (of the CPUs online).
    pub cores_per_socket: usize,
    /// Hardware threads per core.
    pub threads_per_core: usize,
    /// Logical CPUs online.
    pub logical_cpus: usize,
    /// NUMA nodes.
    pub numa_nodes: usize,
    /// MemTotal, KiB.
    pub mem_total_kib: Option<u64>,
}

/// A hash of the machine id that is ours alone: SHA-256 over a fixed prefix and the id, 32 hex
/// digits. It tells machines apart without exposing the id itself.
pub fn app_specific_id(machine_id: &str) -> Option<String> {
    let id = machine_id.trim();
    if id.len() < 16 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let digest = Sha256::digest(format!("health_check machine id v1\n{id}").as_bytes());
    Some(digest.iter().take(16).map(|b| format!("{b:02x}")).collect())
}

/// Cores per socket as the machine was bought: from the CPUs *present*, offline ones included,
/// so a core taken offline leaves the machine in its model (the CPUs online are a judged
/// figure, `machine.logical_cpus`). An offline CPU has no topology in sysfs: the threads per
/// core are the most any online core has (two where SMT is switched off).
fn cores_per_socket_bought(src: &dyn Source, sys: &SystemInfo) -> usize {
    let sockets = sys.sockets.max(1);
    let online = (sys.cores / sockets).max(1);
    let present = src
        .read("/sys/devices/system/cpu/present")
        .and_then(|t| crate::system::parse::parse_cpulist(&t))
        .map_or(0, |l| l.len());
    if present <= sys.logical_cpus {
        return online;
    }
    let mut per_core: std::collections::BTreeMap<(usize, usize), usize> = Default::default();
    for c in &sys.topology.cpus {
        *per_core.entry((c.package, c.core)).or_default() += 1;
    }
    let mut threads = per_core.values().copied().max().unwrap_or(1);
    let smt_off = src
        .read("/sys/devices/system/cpu/smt/control")
        .is_some_and(|t| matches!(t.trim(), "off" | "forceoff"));
    if smt_off {
        threads = threads.max(2);
    }
    (present / (sockets * threads)).max(online)
}

/// The identity of the machine `sys` describes; machine and boot ids come from `src`.
pub fn identity(src: &dyn Source, sys: &SystemInfo) -> Identity {
    let trimmed = |p: &str| {
        src.read(p)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    };
    let machine_id = trimmed("/etc/machine-id")
        .or_else(|| trimmed("/var/lib/dbus/machine-id"))
        .and_then(|id| app_specific_id(&id));
    Identity {
        hostname: sys.hostname.clone(),
        machine_id,
        boot_id: trimmed("/proc/sys/kernel/random/boot_id"),
        architecture: sys.architecture.clone(),
        cpu_model: sys.cpu_model.clone(),
        sockets: sys.sockets,
        cores_per_socket: cores_per_socket_bought(src, sys),
        threads_per_core: sys.threads_per_core,
        logical_cpus: sys.logical_cpus,
        numa_nodes: sys.numa_nodes.len().max(1),
        mem_total_kib: sys.mem_total_kib,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{collect, fake};

    #[test]
    fn the_machine_id_is_hashed_never_copied() {
        let id = "0123456789abcdef0123456789abcdef";
        let hashed = app_specific_id(id).unwrap();
        assert_eq!(hashed.len(), 32);
        assert_ne!(hashed, id);
        assert_eq!(app_specific_id(&format!("{id}\n")), Some(hashed.clone()));
        assert_ne!(
            app_specific_id("fedcba9876543210fedcba9876543210"),
            Some(hashed)
        );
        assert_eq!(app_specific_id("not an id"), None);
        assert_eq!(app_specific_id(""), None);
    }

    /// A core taken offline (both its threads) leaves the machine in its model: cores per
    /// socket come from the CPUs present; CPUs online say what is missing.
    #[test]
    fn an_offline_core_keeps_the_model_and_shows_in_the_cpus_online() {
        let mut fs = fake::two_socket_384();
        let online: Vec<usize> = (0..384).filter(|&c| c != 5 && c != 5 + 192).collect();
        fs.insert(
            "/sys/devices/system/cpu/online",
            crate::system::parse::format_cpulist(&online),
        )
        .insert("/sys/devices/system/cpu/present", "0-383\n");
        let sys = collect(&fs, None);
        let id = identity(&fs, &sys);
        assert_eq!(id.logical_cpus, 382);
        assert_eq!(
            (id.sockets, id.cores_per_socket, id.threads_per_core),
            (2, 96, 2)
        );
        // SMT switched off: half the CPUs online, the same cores.
        let mut fs = fake::two_socket_384();
        fs.insert("/sys/devices/system/cpu/online", "0-191\n")
            .insert("/sys/devices/system/cpu/present", "0-383\n")
            .insert("/sys/devices/system/cpu/smt/control", "off\n");
        let sys = collect(&fs, None);
        assert_eq!(identity(&fs, &sys).cores_per_socket, 96);
    }

    #[test]
    fn a_two_socket_fixture_is_what_it_was_bought_as() {
        let mut fs = fake::two_socket_384();
        fs.insert("/etc/machine-id", "0123456789abcdef0123456789abcdef\n")
            .insert("/proc/sys/kernel/random/boot_id", "b007-1d\n");
        let sys = collect(&fs, None);
        let id = identity(&fs, &sys);
        assert_eq!((id.sockets, id.cores_per_socket), (2, 96));
        assert_eq!((id.logical_cpus, id.threads_per_core), (384, 2));
        assert_eq!(id.boot_id.as_deref(), Some("b007-1d"));
        assert!(id.machine_id.is_some());
    }
}
