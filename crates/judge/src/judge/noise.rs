//! Noise is not a fault. A figure measured while the hypervisor stole time, other processes
//! took the CPUs, our cgroup's CPU quota held us back or the CPUs throttled for heat says little
//! about the machine: a check that would warn or fail on it is `inconclusive` instead, with what
//! interfered in its message, and readers leave such figures out of their references. A check
//! that passes under interference still passes: interference only makes figures worse.
//!
//! That holds for every figure another process can move: speeds, and DCPerf's CPU-split
//! verdicts too (busy CPU and IRQ time during the nanosleep benchmark count everything the
//! machine ran, a job beside the check included). Checks of configuration, of lost packets and
//! of error counters are not affected: no load makes them worse.

use super::limits::Thresholds;
use crate::wire::document::{Check, CheckId, Section, Status};
use crate::wire::figures::{self, Family};
use crate::wire::identity::InterferenceEntry;
use std::collections::BTreeMap;

/// Why a section's window is too disturbed to judge its figures, or `None` when it is not.
pub fn interfered(i: &InterferenceEntry, t: &Thresholds) -> Option<String> {
    let over = |value: Option<f64>, limit: f64| value.filter(|&v| v > limit);
    let why: Vec<String> = [
        over(i.steal_pct, t.interference_steal_pct).map(|p| {
            format!(
                "the hypervisor stole {p:.1}% of the CPU time (limit {}%)",
                t.interference_steal_pct
            )
        }),
        over(i.other_cpu_pct, t.interference_other_cpu_pct).map(|p| {
            format!(
                "other processes used {p:.1}% of the CPU time (limit {}%)",
                t.interference_other_cpu_pct
            )
        }),
        over(i.throttled_pct, t.interference_throttled_pct).map(|p| {
            format!(
                "the cgroup's CPU quota held the run back {p:.1}% of the time (limit {}%)",
                t.interference_throttled_pct
            )
        }),
        over(
            i.thermal_events.map(|n| n as f64),
            t.interference_thermal_events,
        )
        .map(|n| format!("the CPUs throttled for heat {n} time(s)")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!why.is_empty()).then(|| why.join("; "))
}

/// The section a check's figure was measured in: its own section's, or for a `baseline.` or
/// `history.` check the section its figure's name starts with.
pub fn section_of(id: &CheckId) -> Option<Section> {
    let by_name = |name: &str| match name {
        "sleepbench" => Some(Section::Sleep),
        "network" | "ping" => Some(Section::Network),
        "memory" => Some(Section::Memory),
        "storage" => Some(Section::Storage),
        _ => None,
    };
    match id.section.as_str() {
        "baseline" | "history" => by_name(id.rule.split('.').next().unwrap_or_default()),
        other => by_name(other),
    }
}

/// The family of figures a check judges: a `baseline.` or `history.` check's figure's, a run's
/// own check's the family that names it (`Family::run_checks`, said once in the family table);
/// `None` for checks of configuration, counters and facts.
pub fn family_judged(id: &CheckId) -> Option<&'static Family> {
    match id.section.as_str() {
        "baseline" | "history" => figures::family_of_key(&id.rule),
        section => figures::FAMILIES.iter().copied().find(|f| {
            f.run_checks
                .iter()
                .any(|name| name.split_once('.') == Some((section, id.rule.as_str())))
        }),
    }
}

/// Whether another process's load can move the figure a check judges (a speed, or the CPU
/// split while the nanosleep benchmark ran), rather than configuration or lost packets.
pub fn load_can_move(id: &CheckId) -> bool {
    family_judged(id).is_some_and(|f| f.load_moves)
}

/// Turns the warn and fail verdicts on figures measured under interference into `inconclusive`.
pub fn mark_inconclusive(
    checks: &mut [Check],
    interference: &BTreeMap<Section, InterferenceEntry>,
    t: &Thresholds,
) {
    mark_interfered(checks, &interfered_sections(interference, t));
}

/// The sections measured under interference beyond `t`, and what interfered.
pub fn interfered_sections(
    interference: &BTreeMap<Section, InterferenceEntry>,
    t: &Thresholds,
) -> BTreeMap<Section, String> {
    interference
        .iter()
        .filter_map(|(s, i)| interfered(i, t).map(|w| (*s, w)))
        .collect()
}

/// Turns the warn and fail verdicts on figures load can move into `inconclusive` where their
/// section was measured under interference; `why` holds those sections and what interfered
/// (from [`interfered`]).
pub fn mark_interfered(checks: &mut [Check], why: &BTreeMap<Section, String>) {
    if why.is_empty() {
        return;
    }
    for c in checks.iter_mut() {
        if !matches!(c.status, Status::Warn | Status::Fail) || !load_can_move(&c.name) {
            continue;
        }
        if let Some(w) = section_of(&c.name).and_then(|s| why.get(&s)) {
            c.message = format!(
                "inconclusive, measured under interference ({w}): {}; run it again on a quiet \
                 machine (or with --retry-inconclusive)",
                c.message
            );
            c.status = Status::Inconclusive;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, status: Status) -> Check {
        Check {
            name: CheckId::parse(name),
            status,
            value: Some(1.0),
            limit: Some(2.0),
            message: "m".into(),
        }
    }

    fn busy(other: f64) -> InterferenceEntry {
        InterferenceEntry {
            seconds: 3.0,
            steal_pct: Some(0.5),
            other_cpu_pct: Some(other),
            throttled_pct: Some(0.0),
            thermal_events: Some(0),
        }
    }

    #[test]
    fn a_slow_figure_under_load_is_inconclusive_not_a_fault() {
        let t = Thresholds::default();
        let mut checks = vec![
            check("sleepbench.calls_per_thread", Status::Fail),
            check("sleepbench.total_cpu", Status::Fail),
            check("sleepbench.calls_per_thread", Status::Pass),
            check("baseline.sleepbench.calls_per_second", Status::Warn),
            check("memory.cache_step:L2", Status::Warn),
            check("network.ping_loss:h", Status::Fail),
        ];
        let load = BTreeMap::from([(Section::Sleep, busy(60.0))]);
        mark_inconclusive(&mut checks, &load, &t);
        let statuses: Vec<Status> = checks.iter().map(|c| c.status).collect();
        assert_eq!(
            statuses,
            [
                Status::Inconclusive,
                Status::Inconclusive,
                Status::Pass,
                Status::Inconclusive,
                Status::Warn,
                Status::Fail
            ]
        );
        assert!(checks[0].message.contains("other processes used 60.0%"));
        // The busy-CPU verdict counts the other processes' time: theirs, not the machine's.
        assert!(checks[1].message.contains("other processes used 60.0%"));
        // The same run on a quiet machine stands as judged.
        let mut quiet = vec![check("sleepbench.calls_per_thread", Status::Fail)];
        mark_inconclusive(
            &mut quiet,
            &BTreeMap::from([(Section::Sleep, busy(2.0))]),
            &t,
        );
        assert_eq!(quiet[0].status, Status::Fail);
    }

    #[test]
    fn each_kind_of_interference_has_its_limit() {
        let t = Thresholds::default();
        let quiet = busy(0.0);
        assert_eq!(interfered(&quiet, &t), None);
        let steal = InterferenceEntry {
            steal_pct: Some(20.0),
            ..quiet
        };
        assert!(interfered(&steal, &t).unwrap().contains("stole 20.0%"));
        let quota = InterferenceEntry {
            throttled_pct: Some(40.0),
            ..quiet
        };
        assert!(interfered(&quota, &t).unwrap().contains("CPU quota"));
        let hot = InterferenceEntry {
            thermal_events: Some(3),
            ..quiet
        };
        assert!(interfered(&hot, &t).unwrap().contains("heat 3"));
        // Each limit is the most that is still quiet.
        let at_the_limits = InterferenceEntry {
            steal_pct: Some(t.interference_steal_pct),
            other_cpu_pct: Some(t.interference_other_cpu_pct),
            throttled_pct: Some(t.interference_throttled_pct),
            thermal_events: Some(t.interference_thermal_events as u64),
            ..quiet
        };
        assert_eq!(interfered(&at_the_limits, &t), None);
        // Each cause has its word in a finding's headline.
        let other = InterferenceEntry {
            other_cpu_pct: Some(90.0),
            ..quiet
        };
        let words: Vec<&str> = [&steal, &other, &quota, &hot]
            .into_iter()
            .map(|i| crate::wire::headline::interference_word(&interfered(i, &t).unwrap()))
            .collect();
        assert_eq!(words, ["CPU steal", "other processes", "CPU quota", "heat"]);
        assert_eq!(
            section_of(&CheckId::parse("baseline.network.bandwidth.h1")),
            Some(Section::Network)
        );
        assert_eq!(section_of(&CheckId::parse("system.thp")), None);
        for (check, section) in [
            ("sleepbench.calls_per_thread", Section::Sleep),
            ("ping.ping_rtt", Section::Network),
            ("memory.numa_ratio", Section::Memory),
            ("storage.read_iops", Section::Storage),
            ("history.memory.peak_bandwidth.all reads", Section::Memory),
        ] {
            assert_eq!(section_of(&CheckId::parse(check)), Some(section), "{check}");
        }
        for speed in [
            "memory.peak_vs_theoretical",
            "memory.numa_ratio",
            "storage.read_iops",
            "network.bandwidth",
            "sleepbench.total_cpu",
            "sleepbench.irq",
            "history.memory.peak_bandwidth.all reads",
            "baseline.network.bandwidth.h1",
        ] {
            assert!(load_can_move(&CheckId::parse(speed)), "{speed}");
        }
        for setting in [
            "memory.full_random_pages",
            "network.ping_loss",
            "errors.edac:mc0",
            "system.governor",
            // What the machine has, judged against its past or a baseline: no load moves it.
            "history.machine.mem_total_gib",
            "baseline.machine.logical_cpus",
            "history.fingerprint",
        ] {
            assert!(!load_can_move(&CheckId::parse(setting)), "{setting}");
        }
    }
}
