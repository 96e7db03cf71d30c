//! What else happened on the machine while a section measured, so that a figure taken under load
//! is not read as a fault: time stolen by the hypervisor, CPU time of other processes (all CPU
//! time but idle, I/O wait and interrupts, minus our own process's), time our cgroup was
//! throttled by its CPU quota (`cpu.stat`, any level up the hierarchy), and thermal-throttle
//! events. A snapshot is taken before and after each section; [`between`] gives the window's
//! shares.

use super::cgroup;
use super::cpustat::{CpuTimes, parse_proc_stat};
use super::devices::read_throttle_counts;
use super::source::Source;
use std::time::Instant;

/// The counters at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    cpu: Option<CpuTimes>,
    own_ticks: Option<u64>,
    throttled_us: Option<u64>,
    thermal_events: Option<u64>,
}

/// What happened between two snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Interference {
    /// Seconds between the snapshots.
    pub seconds: f64,
    /// Time stolen by the hypervisor, % of all CPU time.
    pub steal_pct: Option<f64>,
    /// CPU time of other processes, % of all CPU time.
    pub other_cpu_pct: Option<f64>,
    /// Time our cgroup was throttled by a CPU quota, % of the window.
    pub throttled_pct: Option<f64>,
    /// Thermal-throttle events (cores and packages).
    pub thermal_events: Option<u64>,
}

/// User, system and children's time of the process whose /proc/PID/stat text this is, in clock
/// ticks (the unit of /proc/stat): fields 14 to 17 (proc(5)), counted after the command name,
/// which may itself hold spaces and parentheses.
pub fn parse_own_ticks(stat: &str) -> Option<u64> {
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After ')': state is field 3, so utime (14) .. cstime (17) are at 11..=14.
    fields
        .get(11..=14)?
        .iter()
        .map(|f| f.parse::<u64>().ok())
        .sum()
}

/// Takes a snapshot from `src`; `cpus` are (cpu, package) pairs for the thermal counters.
pub fn snapshot(src: &dyn Source, cpus: &[(usize, usize)]) -> Snapshot {
    Snapshot {
        at: Instant::now(),
        cpu: src.read("/proc/stat").and_then(|t| parse_proc_stat(&t)),
        own_ticks: src
            .read("/proc/self/stat")
            .and_then(|t| parse_own_ticks(&t)),
        throttled_us: cgroup::cpu_throttled_us(src),
        thermal_events: read_throttle_counts(src, cpus).map(|c| c.core_events + c.package_events),
    }
}

/// The window between `a` and `b`.
pub fn between(a: &Snapshot, b: &Snapshot) -> Interference {
    let seconds = b.at.duration_since(a.at).as_secs_f64();
    let (mut steal_pct, mut other_cpu_pct) = (None, None);
    if let (Some(x), Some(y)) = (&a.cpu, &b.cpu) {
        let total = y.total().saturating_sub(x.total());
        if total > 0 {
            let pct = |ticks: u64| 100.0 * ticks as f64 / total as f64;
            steal_pct = Some(pct(y.steal.saturating_sub(x.steal)));
            let busy = (y.user + y.nice + y.system).saturating_sub(x.user + x.nice + x.system);
            other_cpu_pct = match (a.own_ticks, b.own_ticks) {
                (Some(p), Some(q)) => Some(pct(busy.saturating_sub(q.saturating_sub(p)))),
                _ => None,
            };
        }
    }
    let throttled_pct = match (a.throttled_us, b.throttled_us) {
        (Some(p), Some(q)) if seconds > 0.0 => {
            Some((100.0 * q.saturating_sub(p) as f64 / (seconds * 1e6)).min(100.0))
        }
        _ => None,
    };
    let thermal_events = match (a.thermal_events, b.thermal_events) {
        (Some(p), Some(q)) => Some(q.saturating_sub(p)),
        _ => None,
    };
    Interference {
        seconds,
        steal_pct,
        other_cpu_pct,
        throttled_pct,
        thermal_events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::source::FakeFs;
    use std::time::Duration;

    #[test]
    fn own_ticks_survive_odd_command_names() {
        let stat = "4242 (health (x) check) R 1 4242 4242 0 -1 4194304 100 0 0 0 \
                    250 30 7 3 20 0 5 0 1000 1000000 200 18446744073709551615";
        assert_eq!(parse_own_ticks(stat), Some(250 + 30 + 7 + 3));
        assert_eq!(parse_own_ticks("4242 (x) R 1"), None);
    }

    fn snap(fs: &FakeFs, at: Instant) -> Snapshot {
        Snapshot {
            at,
            ..snapshot(fs, &[(0, 0)])
        }
    }

    #[test]
    fn other_load_steal_throttling_and_heat_are_told_apart() {
        let mut fs = FakeFs::new();
        fs.insert("/proc/stat", "cpu 100 0 100 800 0 0 0 0 0 0\n")
            .insert("/proc/self/stat", "1 (hc) R 1 1 1 0 -1 0 0 0 0 0 50 50 0 0")
            .insert("/proc/self/cgroup", "0::/job\n")
            .insert(
                "/proc/self/mountinfo",
                "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            )
            .insert(
                "/sys/fs/cgroup/job/cpu.stat",
                "usage_usec 1\nthrottled_usec 0\n",
            )
            .insert(
                "/sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count",
                "5\n",
            );
        let t0 = Instant::now();
        let a = snap(&fs, t0);
        // 1000 ticks later: 200 busy of which our process took 100; 50 stolen.
        fs.insert("/proc/stat", "cpu 250 0 150 1550 0 0 0 50 0 0\n")
            .insert(
                "/proc/self/stat",
                "1 (hc) R 1 1 1 0 -1 0 0 0 0 0 120 80 0 0",
            )
            .insert(
                "/sys/fs/cgroup/job/cpu.stat",
                "usage_usec 9\nthrottled_usec 500000\n",
            )
            .insert(
                "/sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count",
                "7\n",
            );
        let b = snap(&fs, t0 + Duration::from_secs(10));
        let i = between(&a, &b);
        assert_eq!(i.steal_pct, Some(5.0));
        assert_eq!(i.other_cpu_pct, Some(10.0));
        assert_eq!(i.throttled_pct, Some(5.0));
        assert_eq!(i.thermal_events, Some(2));
        // Nothing readable: nothing claimed.
        let empty = FakeFs::new();
        let n = between(
            &snap(&empty, t0),
            &snap(&empty, t0 + Duration::from_secs(1)),
        );
        assert_eq!(
            (
                n.steal_pct,
                n.other_cpu_pct,
                n.throttled_pct,
                n.thermal_events
            ),
            (None, None, None, None)
        );
    }
}
