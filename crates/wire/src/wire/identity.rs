//! Who wrote a document and under what conditions: the machine's identity (`health_check.machine`)
//! and the interference each section measured under (`health_check.interference`). Readers group
//! machines by what they were bought as and set aside figures measured under load.

use super::nullable::nullable;
use crate::system::identity::Identity;
use crate::system::interference::Interference;
use crate::units::round_to;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The machine a document is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MachineIdentity {
    /// Host name.
    #[schemars(required, transform = nullable)]
    pub hostname: Option<String>,
    /// A hash of /etc/machine-id that is health_check's alone (32 hex digits; never the id).
    #[schemars(required, transform = nullable)]
    pub machine_id: Option<String>,
    /// The kernel's boot id: counters of one boot are comparable, across boots they are not.
    #[schemars(required, transform = nullable)]
    pub boot_id: Option<String>,
    /// `x86_64`, `aarch64`.
    pub architecture: String,
    /// CPU model name.
    #[schemars(required, transform = nullable)]
    pub cpu_model: Option<String>,
    /// Sockets.
    pub sockets: usize,
    /// Physical cores per socket, of the CPUs online.
    pub cores_per_socket: usize,
    /// Hardware threads per core.
    pub threads_per_core: usize,
    /// Logical CPUs online.
    pub logical_cpus: usize,
    /// NUMA nodes.
    pub numa_nodes: usize,
    /// MemTotal, KiB.
    #[schemars(required, transform = nullable)]
    pub mem_total_kib: Option<u64>,
}

impl From<&Identity> for MachineIdentity {
    fn from(i: &Identity) -> Self {
        MachineIdentity {
            hostname: i.hostname.clone(),
            machine_id: i.machine_id.clone(),
            boot_id: i.boot_id.clone(),
            architecture: i.architecture.clone(),
            cpu_model: i.cpu_model.clone(),
            sockets: i.sockets,
            cores_per_socket: i.cores_per_socket,
            threads_per_core: i.threads_per_core,
            logical_cpus: i.logical_cpus,
            numa_nodes: i.numa_nodes,
            mem_total_kib: i.mem_total_kib,
        }
    }
}

/// What else happened on the machine while one section measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct InterferenceEntry {
    /// The section's window, seconds.
    pub seconds: f64,
    /// CPU time stolen by the hypervisor, % of all CPU time.
    #[schemars(required, transform = nullable)]
    pub steal_pct: Option<f64>,
    /// CPU time of other processes, % of all CPU time.
    #[schemars(required, transform = nullable)]
    pub other_cpu_pct: Option<f64>,
    /// Time our cgroup was held back by a CPU quota, % of the window.
    #[schemars(required, transform = nullable)]
    pub throttled_pct: Option<f64>,
    /// Thermal-throttle events (cores and packages).
    #[schemars(required, transform = nullable)]
    pub thermal_events: Option<u64>,
}

impl From<&Interference> for InterferenceEntry {
    fn from(i: &Interference) -> Self {
        let pct = |v: Option<f64>| v.map(|v| round_to(v, 2));
        InterferenceEntry {
            seconds: round_to(i.seconds, 3),
            steal_pct: pct(i.steal_pct),
            other_cpu_pct: pct(i.other_cpu_pct),
            throttled_pct: pct(i.throttled_pct),
            thermal_events: i.thermal_events,
        }
    }
}
