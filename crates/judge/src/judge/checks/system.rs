//! System sanity, after the storage-tuning guide's debugging list: PCIe links trained below their
//! capability, a frequency governor other than performance, thermal throttling during the run,
//! THP off, swap in use, automatic NUMA balancing on a NUMA machine, steal time during the run,
//! a raised timer slack and a clock no daemon keeps synchronised. Each message says what to do
//! about it.

use super::{Thresholds, check};
use crate::wire::document::{Check, CheckId, Status};
use crate::wire::system::SystemPart;

fn pass(name: &CheckId, message: String) -> Check {
    check(name, Status::Pass, None, 0.0, message).without_limit()
}

fn finding(name: &CheckId, status: Status, value: Option<f64>, message: String) -> Check {
    check(name, status, value, 0.0, message).without_limit()
}

/// Every system rule.
pub fn all(s: &SystemPart, t: &Thresholds) -> Vec<Check> {
    vec![
        pcie_links(s),
        governor(s),
        thermal_throttle(s),
        thp(s),
        swap(s),
        numa_balancing(s),
        steal(s, t),
        timer_slack(s, t),
        clock(s, t),
        iommu(s),
    ]
}

/// An IOMMU that translates every DMA costs network-heavy loads dearly: DCPerf's TaoBench soft-locks
/// in network I/O without passthrough (`iommu=pt` on x86_64, `iommu.passthrough=1` on arm64).
pub fn iommu(s: &SystemPart) -> Check {
    let name = CheckId::new("system", "iommu");
    match &s.iommu {
        None => finding(
            &name,
            Status::Skip,
            None,
            "the kernel's IOMMU state could not be read".into(),
        ),
        Some(i) if i.groups == 0 => pass(&name, "no IOMMU translates DMA".into()),
        Some(i) if i.passthrough => pass(
            &name,
            format!(
                "the IOMMU passes DMA through ({} groups, default domain '{}')",
                i.groups,
                i.default_domain.as_deref().unwrap_or("?")
            ),
        ),
        Some(i) => {
            let option = if s.architecture == "aarch64" {
                "iommu.passthrough=1"
            } else {
                "iommu=pt"
            };
            finding(
                &name,
                Status::Warn,
                Some(i.groups as f64),
                format!(
                    "the IOMMU translates every DMA ({} groups, default domain '{}'): add \
                     '{option}' to the kernel command line; without passthrough DCPerf's TaoBench \
                     soft-locks in network I/O",
                    i.groups,
                    i.default_domain.as_deref().unwrap_or("?")
                ),
            )
        }
    }
}

/// PCIe devices whose link runs narrower than the device and every port on its path to the root
/// port allow. A link only slower than that is named but not counted: an idle device lowers its
/// speed to save power, and sysfs cannot say whether it is busy.
pub fn pcie_links(s: &SystemPart) -> Check {
    let name = CheckId::new("system", "pcie_links");
    let shown = |l: &crate::wire::system::PcieLink| {
        let w = |v: Option<u32>| v.map_or("?".into(), |v| format!("x{v}"));
        let g = |v: Option<f64>| v.map_or("?".into(), |v| format!("{v} GT/s"));
        let by = l
            .limited_by
            .as_ref()
            .map_or(String::new(), |p| format!(" (as port {p} allows)"));
        format!(
            "{} at {} {} of {} {}{by}",
            l.device,
            w(l.current_width),
            g(l.current_speed_gts),
            w(l.expected_width.or(l.max_width)),
            g(l.expected_speed_gts.or(l.max_speed_gts)),
        )
    };
    let (narrow, slow): (Vec<_>, Vec<_>) = s.pcie_links_degraded.iter().partition(|l| l.narrower());
    let resting = if slow.is_empty() {
        String::new()
    } else {
        format!(
            "; slower than their path allows, likely resting to save power (not counted): {}",
            slow.iter().map(|l| shown(l)).collect::<Vec<_>>().join("; ")
        )
    };
    if narrow.is_empty() {
        return pass(
            &name,
            format!("every PCIe link runs at the full width its path allows{resting}"),
        );
    }
    let list: Vec<String> = narrow.iter().map(|l| shown(l)).collect();
    finding(
        &name,
        Status::Warn,
        Some(list.len() as f64),
        format!(
            "{} PCIe link(s) narrower than the device and its slot allow: {}; reseat the card, check \
             the slot's lane and bifurcation settings and the riser{resting}",
            list.len(),
            list.join("; ")
        ),
    )
}

/// The cpufreq governor: anything but performance lets frequency sag under benchmarks.
pub fn governor(s: &SystemPart) -> Check {
    let name = CheckId::new("system", "governor");
    match s.governor.as_deref() {
        None => finding(
            &name,
            Status::Skip,
            None,
            "no cpufreq driver: firmware or the hypervisor sets the frequency".into(),
        ),
        Some("performance") => pass(&name, "the frequency governor is 'performance'".into()),
        Some(g) => finding(
            &name,
            Status::Warn,
            None,
            format!(
                "the frequency governor is '{g}': set 'performance' before benchmarking \
             (cpupower frequency-set -g performance)"
            ),
        ),
    }
}

/// Thermal-throttle events that happened while the run went on.
pub fn thermal_throttle(s: &SystemPart) -> Check {
    let name = CheckId::new("system", "thermal_throttle");
    match s.during_run.and_then(|d| d.throttle_events) {
        None => finding(
            &name,
            Status::Skip,
            None,
            "the kernel exposes no thermal-throttle counters here".into(),
        ),
        Some(0) => pass(&name, "no thermal throttling during the run".into()),
        Some(n) => finding(
            &name,
            Status::Fail,
            Some(n as f64),
            format!(
                "{n} thermal-throttle event(s) during the run: the CPUs slowed down to cool; check \
             fans, heat sinks, airflow and the power/thermal profile in the BIOS"
            ),
        ),
    }
}

/// THP set to never: services that rely on huge pages lose TLB reach.
pub fn thp(s: &SystemPart) -> Check {
    let name = CheckId::new("system", "thp");
    match s.thp.as_deref() {
        Some("never") => finding(
            &name,
            Status::Warn,
            None,
            "transparent huge pages are 'never': memory-heavy benchmarks lose TLB reach; set \
             'madvise' or 'always' in /sys/kernel/mm/transparent_hugepage/enabled"
                .into(),
        ),
        Some(mode) => pass(&name, format!("transparent huge pages: '{mode}'")),
        None => pass(&name, "no transparent huge page support reported".into()),
    }
}

/// Swap in use: the machine has run short of memory.
pub fn swap(s: &SystemPart) -> Check {
    let name = CheckId::new("system", "swap");
    match s.swap_used_kib {
        Some(kib) if kib > 0 => finding(
            &name,
            Status::Warn,
            Some(kib as f64),
            format!(
                "{} MiB of swap in use: the machine ran short of memory at some point; find what \
             used it (and consider 'swapoff -a; swapon -a') before benchmarking",
                kib / 1024
            ),
        ),
        _ => pass(&name, "no swap in use".into()),
    }
}

/// Automatic NUMA balancing moves pages during runs; DCPerf's memory tool turns it off.
pub fn numa_balancing(s: &SystemPart) -> Check {
    let name = CheckId::new("system", "numa_balancing");
    match (s.numa_balancing, s.numa_nodes.len() > 1) {
        (Some(true), true) => finding(
            &name,
            Status::Warn,
            None,
            "automatic NUMA balancing is on: it migrates pages while benchmarks run; turn it off \
             for measurements (sysctl kernel.numa_balancing=0)"
                .into(),
        ),
        (Some(true), false) => pass(
            &name,
            "NUMA balancing is on, which does nothing on one node".into(),
        ),
        _ => pass(&name, "automatic NUMA balancing is off".into()),
    }
}

/// CPU time stolen by the hypervisor during the run.
pub fn steal(s: &SystemPart, t: &Thresholds) -> Check {
    let name = CheckId::new("system", "steal");
    let limit = t.steal_pct;
    match s.during_run.and_then(|d| d.steal_pct) {
        None => check(
            &name,
            Status::Skip,
            None,
            limit,
            "steal time could not be measured over the run (too short, or /proc/stat unreadable)"
                .into(),
        ),
        Some(p) if p > limit => check(
            &name,
            Status::Warn,
            Some(p),
            limit,
            format!(
                "the hypervisor gave {p}% of CPU time to other guests during the run: figures are \
             not the hardware's; ask for dedicated (pinned) vCPUs or run on bare metal"
            ),
        ),
        Some(p) => check(
            &name,
            Status::Pass,
            Some(p),
            limit,
            format!("{p}% steal time during the run"),
        ),
    }
}

/// Timer slack above the default lengthens every sleep.
pub fn timer_slack(s: &SystemPart, t: &Thresholds) -> Check {
    let name = CheckId::new("system", "timer_slack");
    let limit = t.timer_slack_ns;
    match s.timer_slack_ns {
        None => check(
            &name,
            Status::Skip,
            None,
            limit,
            "timer slack could not be read".into(),
        ),
        Some(ns) if ns as f64 > limit => check(
            &name,
            Status::Warn,
            Some(ns as f64),
            limit,
            format!(
                "timer slack is {ns} ns, above the {limit} ns default: every sleep may wake that \
             late; find what raised it (prctl PR_SET_TIMERSLACK, cgroup timer_slack_ns)"
            ),
        ),
        Some(ns) => check(
            &name,
            Status::Pass,
            Some(ns as f64),
            limit,
            format!("timer slack is {ns} ns"),
        ),
    }
}

/// The system clock: synchronised by a time daemon, within the error it estimates. A clock
/// nobody disciplines drifts (seconds a day), and logs, leases and distributed traces across
/// machines stop lining up; node-problem-detector's users ask for this check.
pub fn clock(s: &SystemPart, t: &Thresholds) -> Check {
    let name = CheckId::new("system", "clock");
    let limit = t.clock_error_ms;
    let Some(c) = s.clock else {
        return check(
            &name,
            Status::Skip,
            None,
            limit,
            "the kernel cannot say whether the clock is synchronised (adjtimex is read on Linux \
             only)"
                .into(),
        );
    };
    let error = c.estimated_error_ms;
    if !c.synchronised {
        return check(
            &name,
            Status::Warn,
            Some(error),
            limit,
            format!(
                "the clock is not synchronised (the kernel's error bound has grown to {} ms): no \
                 NTP or PTP daemon disciplines it; start chronyd, ntpd or ptp4l and phc2sys, and \
                 check that it reaches its servers",
                crate::units::number(c.max_error_ms)
            ),
        );
    }
    if error > limit {
        return check(
            &name,
            Status::Warn,
            Some(error),
            limit,
            format!(
                "the clock is synchronised but its daemon estimates an error of {} ms, above \
                 {limit} ms: look at its servers' reach and delay (chronyc tracking, ntpq -p)",
                crate::units::number(error)
            ),
        );
    }
    check(
        &name,
        Status::Pass,
        Some(error),
        limit,
        format!(
            "the clock is synchronised, estimated error {} ms",
            crate::units::number(error)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{collect, fake};
    use crate::wire::system::{PcieLink, RunDeltas};

    fn fake_system() -> SystemPart {
        SystemPart::from(&collect(&fake::two_socket_384(), None))
    }

    fn status(c: &Check) -> Status {
        c.status
    }

    #[test]
    fn the_384_cpu_fixture_has_findings() {
        let mut s = fake_system();
        s.during_run = Some(RunDeltas {
            seconds: 60.0,
            throttle_events: Some(3),
            steal_pct: Some(0.0),
        });
        let checks = all(&s, &Thresholds::default());
        let by = |n: &str| checks.iter().find(|c| c.name == n).unwrap();
        assert_eq!(status(by("system.pcie_links")), Status::Warn);
        assert!(
            by("system.pcie_links")
                .message
                .contains("0000:41:00.0 at x8 16 GT/s of x16 16 GT/s")
        );
        assert_eq!(status(by("system.governor")), Status::Pass);
        assert_eq!(status(by("system.thermal_throttle")), Status::Fail);
        assert_eq!(status(by("system.thp")), Status::Pass);
        assert_eq!(status(by("system.swap")), Status::Pass);
        assert_eq!(
            status(by("system.numa_balancing")),
            Status::Warn,
            "two nodes, balancing on"
        );
        assert_eq!(status(by("system.steal")), Status::Pass);
        assert_eq!(
            status(by("system.timer_slack")),
            Status::Skip,
            "the fixture has no timer slack"
        );
    }

    #[test]
    fn the_clock_passes_synchronised_and_warns_unsynchronised_or_far_off() {
        use crate::wire::system::Clock;
        let t = Thresholds::default();
        let mut s = fake_system();
        let at = |synchronised, estimated_error_ms| Clock {
            synchronised,
            estimated_error_ms,
            max_error_ms: 16_000.0,
        };
        assert_eq!(
            status(&clock(&s, &t)),
            Status::Skip,
            "a kernel that cannot say"
        );
        s.clock = Some(at(true, 0.5));
        assert_eq!(status(&clock(&s, &t)), Status::Pass);
        s.clock = Some(at(true, 250.0));
        let far = clock(&s, &t);
        assert_eq!(status(&far), Status::Warn);
        assert!(far.message.contains("error of 250"), "{}", far.message);
        s.clock = Some(at(false, 0.0));
        let loose = clock(&s, &t);
        assert_eq!(status(&loose), Status::Warn);
        assert!(
            loose.message.contains("not synchronised"),
            "{}",
            loose.message
        );
        assert!(loose.message.contains("16000 ms"), "{}", loose.message);
    }

    #[test]
    fn each_finding_triggers_on_its_own() {
        let t = Thresholds::default();
        let mut s = fake_system();
        s.pcie_links_degraded = vec![];
        assert_eq!(pcie_links(&s).status, Status::Pass);
        let link = PcieLink {
            device: "x".into(),
            current_width: Some(4),
            max_width: Some(16),
            current_speed_gts: None,
            max_speed_gts: None,
            expected_width: None,
            expected_speed_gts: None,
            limited_by: None,
        };
        s.pcie_links_degraded = vec![link.clone()];
        assert!(pcie_links(&s).message.contains("x at x4 ? of x16 ?"));
        assert_eq!(pcie_links(&s).status, Status::Warn);
        // x8 is all a x8 slot gives a x16 card: no finding.
        s.pcie_links_degraded = vec![PcieLink {
            current_width: Some(8),
            expected_width: Some(8),
            limited_by: Some("0000:00:02.0".into()),
            ..link.clone()
        }];
        assert_eq!(pcie_links(&s).status, Status::Pass);
        // Slower alone: named, not counted (an idle device rests at a lower speed).
        s.pcie_links_degraded = vec![PcieLink {
            current_width: Some(16),
            current_speed_gts: Some(2.5),
            max_speed_gts: Some(16.0),
            expected_width: Some(16),
            expected_speed_gts: Some(16.0),
            ..link
        }];
        let resting = pcie_links(&s);
        assert_eq!(resting.status, Status::Pass);
        assert!(
            resting.message.contains("x at x16 2.5 GT/s of x16 16 GT/s"),
            "{}",
            resting.message
        );
        s.governor = Some("powersave".into());
        assert_eq!(governor(&s).status, Status::Warn);
        s.governor = None;
        assert_eq!(governor(&s).status, Status::Skip);
        s.thp = Some("never".into());
        assert_eq!(thp(&s).status, Status::Warn);
        s.swap_used_kib = Some(2048);
        assert!(swap(&s).message.starts_with("2 MiB of swap"));
        s.during_run = Some(RunDeltas {
            seconds: 1.0,
            throttle_events: Some(0),
            steal_pct: Some(4.5),
        });
        assert_eq!(steal(&s, &t).status, Status::Warn);
        s.during_run = Some(RunDeltas {
            seconds: 1.0,
            throttle_events: Some(0),
            steal_pct: Some(t.steal_pct),
        });
        assert_eq!(steal(&s, &t).status, Status::Pass, "at the limit");
        assert_eq!(thermal_throttle(&s).status, Status::Pass);
        s.timer_slack_ns = Some(1_000_000);
        assert_eq!(timer_slack(&s, &t).status, Status::Warn);
        s.numa_nodes.truncate(1);
        let c = numa_balancing(&s);
        assert_eq!(c.status, Status::Pass, "one node: nothing to balance");
        assert!(
            c.message.contains("does nothing on one node"),
            "{}",
            c.message
        );
    }

    /// The IOMMU: unknown is skipped; none, or passthrough, passes; translating every DMA warns
    /// with the kernel option of the machine's architecture.
    #[test]
    fn an_iommu_that_translates_every_dma_warns_with_the_option_to_add() {
        use crate::wire::system::Iommu;
        let mut s = fake_system();
        s.iommu = None;
        assert_eq!(iommu(&s).status, Status::Skip);
        let unit = |groups, passthrough, domain: &str| Iommu {
            groups,
            default_domain: Some(domain.into()),
            passthrough,
        };
        s.iommu = Some(unit(0, false, "DMA"));
        let c = iommu(&s);
        assert_eq!(
            (c.status, c.message.as_str()),
            (Status::Pass, "no IOMMU translates DMA")
        );
        s.iommu = Some(unit(12, true, "identity"));
        let c = iommu(&s);
        assert_eq!(c.status, Status::Pass);
        assert!(
            c.message
                .contains("passes DMA through (12 groups, default domain 'identity')")
        );
        s.iommu = Some(unit(12, false, "DMA-FQ"));
        for (arch, option) in [
            ("x86_64", "'iommu=pt'"),
            ("aarch64", "'iommu.passthrough=1'"),
        ] {
            s.architecture = arch.into();
            let c = iommu(&s);
            assert_eq!((c.status, c.value), (Status::Warn, Some(12.0)), "{arch}");
            assert!(c.message.contains(option), "{arch}: {}", c.message);
            assert!(c.message.contains("(12 groups, default domain 'DMA-FQ')"));
        }
    }
}
