//! System-wide CPU time from the first line of /proc/stat, and the percentage split of a delta
//! between two readings (usr, nice, sys, idle, iowait, irq, softirq, steal, guest).
//!
//! proc(5): the fields are user, nice, system, idle, iowait, irq, softirq, steal, guest and
//! guest_nice, in USER_HZ ticks. The kernel already counts guest time inside user (and guest_nice
//! inside nice), so the total is the sum of the first eight fields; adding guest again, as DCPerf's
//! collect-cpu-util.py does, counts it twice.

/// Cumulative CPU ticks of all CPUs since boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time in user mode, guest time included.
    pub user: u64,
    /// Time in user mode at low priority, guest_nice included.
    pub nice: u64,
    /// Time in kernel mode.
    pub system: u64,
    /// Idle time.
    pub idle: u64,
    /// Idle time waiting for I/O.
    pub iowait: u64,
    /// Time servicing hardware interrupts.
    pub irq: u64,
    /// Time servicing softirqs.
    pub softirq: u64,
    /// Time stolen by the hypervisor for other guests.
    pub steal: u64,
    /// Time running a guest (already part of `user`).
    pub guest: u64,
    /// Time running a niced guest (already part of `nice`).
    pub guest_nice: u64,
}

impl CpuTimes {
    /// All ticks: the first eight fields (guest fields are inside user and nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    fn saturating_sub(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
            guest: self.guest.saturating_sub(earlier.guest),
            guest_nice: self.guest_nice.saturating_sub(earlier.guest_nice),
        }
    }
}

/// Parses the aggregate `cpu` line of /proc/stat. Fields missing on old kernels count as zero.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| {
        let mut words = l.split_whitespace();
        words.next() == Some("cpu")
    })?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    if values.len() < 4 {
        return None;
    }
    let f = |i: usize| values.get(i).copied().unwrap_or(0);
    Some(CpuTimes {
        user: f(0),
        nice: f(1),
        system: f(2),
        idle: f(3),
        iowait: f(4),
        irq: f(5),
        softirq: f(6),
        steal: f(7),
        guest: f(8),
        guest_nice: f(9),
    })
}

/// Reads and parses /proc/stat.
pub fn read_cpu_times() -> std::io::Result<CpuTimes> {
    let text = std::fs::read_to_string("/proc/stat")?;
    parse_proc_stat(&text).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "/proc/stat has no readable 'cpu' line",
        )
    })
}

/// Percentages of all CPU time between two readings. usr..steal sum to 100; guest is the part of
/// usr spent running guests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuShares {
    /// User time, %.
    pub usr_pct: f64,
    /// Niced user time, %.
    pub nice_pct: f64,
    /// Kernel time, %.
    pub sys_pct: f64,
    /// Idle time, %.
    pub idle_pct: f64,
    /// I/O wait, %.
    pub iowait_pct: f64,
    /// Hardware interrupts, %.
    pub irq_pct: f64,
    /// Softirqs, %.
    pub softirq_pct: f64,
    /// Stolen by the hypervisor, %.
    pub steal_pct: f64,
    /// Guest time (inside usr), %.
    pub guest_pct: f64,
    /// Ticks the shares were computed from (all CPUs).
    pub ticks: u64,
}

impl CpuShares {
    /// Busy time: 100 - idle, as DCPerf's `total`.
    pub fn total_pct(&self) -> f64 {
        100.0 - self.idle_pct
    }
}

/// The split of the time that passed between `before` and `after`; `None` when no tick passed.
pub fn shares_between(before: &CpuTimes, after: &CpuTimes) -> Option<CpuShares> {
    let d = after.saturating_sub(before);
    let total = d.total();
    if total == 0 {
        return None;
    }
    let pct = |v: u64| 100.0 * v as f64 / total as f64;
    Some(CpuShares {
        usr_pct: pct(d.user),
        nice_pct: pct(d.nice),
        sys_pct: pct(d.system),
        idle_pct: pct(d.idle),
        iowait_pct: pct(d.iowait),
        irq_pct: pct(d.irq),
        softirq_pct: pct(d.softirq),
        steal_pct: pct(d.steal),
        guest_pct: pct(d.guest),
        ticks: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str =
        "cpu  1304 0 955 42543 307 0 26 55 0 0\ncpu0 370 0 377 21786 15 0 9 31 0 0\n";

    #[test]
    fn parses_the_aggregate_line_not_cpu0() {
        let t = parse_proc_stat(BEFORE).unwrap();
        assert_eq!((t.user, t.system, t.idle, t.steal), (1304, 955, 42543, 55));
        assert_eq!(t.total(), 1304 + 955 + 42543 + 307 + 26 + 55);
    }

    #[test]
    fn old_kernels_without_steal_parse() {
        let t = parse_proc_stat("cpu 1 2 3 4\n").unwrap();
        assert_eq!((t.user, t.nice, t.system, t.idle, t.steal), (1, 2, 3, 4, 0));
        assert!(parse_proc_stat("cpu 1 2\n").is_none());
        assert!(parse_proc_stat("intr 1 2 3 4\n").is_none());
        assert!(parse_proc_stat("cpu 1 x 3 4\n").is_none());
    }

    #[test]
    fn guest_is_not_counted_twice() {
        // 100 ticks in all: 50 user of which 40 guest, 50 idle.
        let before = parse_proc_stat("cpu 0 0 0 0 0 0 0 0 0 0").unwrap();
        let after = parse_proc_stat("cpu 50 0 0 50 0 0 0 0 40 0").unwrap();
        let s = shares_between(&before, &after).unwrap();
        assert_eq!(s.usr_pct, 50.0);
        assert_eq!(s.idle_pct, 50.0);
        assert_eq!(s.guest_pct, 40.0);
        assert_eq!(s.total_pct(), 50.0);
        let sum = s.usr_pct
            + s.nice_pct
            + s.sys_pct
            + s.idle_pct
            + s.iowait_pct
            + s.irq_pct
            + s.softirq_pct
            + s.steal_pct;
        assert!((sum - 100.0).abs() < 1e-9);
    }

    #[test]
    fn no_ticks_means_no_shares() {
        let t = parse_proc_stat(BEFORE).unwrap();
        assert!(shares_between(&t, &t).is_none());
    }
}
