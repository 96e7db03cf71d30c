//! benchpress's result envelope, for runs outside benchpress (`--envelope`): the same keys and
//! value formats benchpress writes (`docs/contract.md`, "The envelope"), filled from the system section.
//! `machines` values are all strings, `timestamp` an integer, `run_id` eight hex digits.

use crate::system::SystemInfo;
use crate::wire::document::Document;
use serde::Serialize;
use std::collections::BTreeMap;

/// The envelope around the document.
#[derive(Debug, Serialize)]
pub struct Envelope<'a> {
    /// The role's argument strings after substitution (`["-r server", "-c a,b"]`).
    pub benchmark_args: Vec<String>,
    /// DCPerf's job description.
    pub benchmark_desc: &'static str,
    /// Hooks (`"<hook>: <options>"`); none for health_check.
    pub benchmark_hooks: Vec<String>,
    /// The benchmark's name.
    pub benchmark_name: &'static str,
    /// One entry: this machine.
    pub machines: Vec<Machine>,
    /// lscpu's cache summary.
    pub metadata: BTreeMap<String, String>,
    /// The document itself.
    pub metrics: &'a Document,
    /// Eight hex digits, as benchpress takes from a uuid4.
    pub run_id: String,
    /// Seconds since the Unix epoch at the start of the run.
    pub timestamp: u64,
}

/// benchpress's machine record; every value is a string.
#[derive(Debug, Serialize)]
pub struct Machine {
    /// `x86_64`, `aarch64`.
    pub cpu_architecture: String,
    /// lscpu's model name.
    pub cpu_model: String,
    /// Host name.
    pub hostname: String,
    /// Kernel release.
    pub kernel_version: String,
    /// Memory, e.g. `24684096 KiB`.
    pub mem_total_kib: String,
    /// Logical CPUs, e.g. `384`.
    pub num_logical_cpus: String,
    /// os-release ID.
    pub os_distro: String,
    /// os-release PRETTY_NAME.
    pub os_release_name: String,
}

const UNKNOWN: &str = "unknown";

impl Machine {
    /// The record for the machine `sys` describes.
    pub fn from_system(sys: &SystemInfo) -> Self {
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| UNKNOWN.to_string());
        Machine {
            cpu_architecture: sys.architecture.clone(),
            cpu_model: text(&sys.cpu_model),
            hostname: text(&sys.hostname),
            kernel_version: text(&sys.kernel),
            mem_total_kib: sys
                .mem_total_kib
                .map_or_else(|| UNKNOWN.to_string(), |k| format!("{k} KiB")),
            num_logical_cpus: sys.logical_cpus.to_string(),
            os_distro: text(&sys.os_id),
            os_release_name: text(&sys.os_name),
        }
    }
}

/// Wraps `doc` the way benchpress would.
pub fn wrap<'a>(
    doc: &'a Document,
    sys: &SystemInfo,
    benchmark_args: Vec<String>,
    run_id: String,
    timestamp: u64,
) -> Envelope<'a> {
    Envelope {
        benchmark_args,
        benchmark_desc: "Default run for health_check",
        benchmark_hooks: Vec::new(),
        benchmark_name: "health_check",
        machines: vec![Machine::from_system(sys)],
        metadata: sys.lscpu_cache_summary(),
        metrics: doc,
        run_id,
        timestamp,
    }
}

/// A fresh run id: the last eight hex digits of a random UUID from the kernel, as benchpress
/// takes them from uuid4; the process id and time when the kernel file is unreadable.
pub fn new_run_id() -> String {
    let uuid = std::fs::read_to_string("/proc/sys/kernel/random/uuid").unwrap_or_default();
    let hex: String = uuid.chars().filter(char::is_ascii_hexdigit).collect();
    if hex.len() >= 8 {
        return hex[hex.len() - 8..].to_string();
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{:08x}", nanos ^ std::process::id().rotate_left(16))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{collect, fake};

    #[test]
    fn machine_values_are_strings_in_benchpress_formats() {
        let sys = collect(&fake::two_socket_384(), None);
        let doc = Document::default();
        let env = wrap(
            &doc,
            &sys,
            vec!["-r server".into(), "-c a".into()],
            "0123abcd".into(),
            7,
        );
        let v = serde_json::to_value(&env).unwrap();
        let m = &v["machines"][0];
        assert_eq!(m["num_logical_cpus"], "384");
        assert_eq!(m["mem_total_kib"], "1585446912 KiB");
        assert_eq!(m["os_distro"], "centos");
        assert_eq!(v["metadata"]["L3 cache"], "768 MiB (24 instances)");
        assert_eq!(v["timestamp"], 7);
        assert_eq!(v["benchmark_args"][1], "-c a");
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 9);
    }

    #[test]
    fn run_ids_are_eight_hex_digits() {
        let id = new_run_id();
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
