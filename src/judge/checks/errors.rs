//! Hardware error counters, judged as NHC and fleet operators do. Two kinds:
//!
//! - **Conditions** hold until the part is replaced (or the machine reboots, which resets the
//!   counters): an uncorrected memory error, an uncorrectable PCIe error, a machine-check
//!   exception, a NIC configured up whose link went down. They are judged on the count since
//!   boot, so the check keeps failing on every run while the count stands, not only on the run
//!   that first saw it; an operator's `health_check acknowledge` (recorded in the history, who and
//!   when) lets the count acknowledged pass, and any new event fails again.
//! - **Rates**: corrected errors warn above a rate (per hour, over at least an hour, so two runs a
//!   minute apart do not turn one error into sixty an hour); link losses, receive CRC errors,
//!   drops for lack of buffers and thermal throttling warn on what is new in the window: since the
//!   last recorded run of the same boot (`--history`), else since boot, where the link's first
//!   loss is its coming up and is allowed.
//!
//! One `errors.<source>` check passes for a source with nothing to report; each subject with
//! events gets its own `errors.<source>:<subject>` check.

use super::{Thresholds, check};
use crate::wire::check::{Check, CheckId, Status};
use crate::wire::counters::{CounterWindow, ErrorCounter, ErrorCounters};
use std::collections::BTreeMap;

/// One counter's verdict: status, the figure judged, its limit and what to do.
struct Judged {
    status: Status,
    value: f64,
    limit: f64,
    text: String,
}

/// Every error-counter check.
pub fn all(c: &ErrorCounters, t: &Thresholds) -> Vec<Check> {
    let mut by_subject: BTreeMap<(&str, &str), Vec<&ErrorCounter>> = BTreeMap::new();
    for e in &c.counters {
        by_subject
            .entry((e.source.as_str(), e.subject.as_str()))
            .or_default()
            .push(e);
    }
    let window = match c.since {
        CounterWindow::Boot => format!("since boot ({:.1} h)", c.hours),
        CounterWindow::LastRun => format!("since the last run ({:.1} h ago)", c.hours),
    };
    let mut checks = Vec::new();
    let mut listed: Vec<&str> = Vec::new();
    for ((source, subject), counters) in &by_subject {
        let counted: Vec<(&ErrorCounter, u64, u64)> = counters
            .iter()
            .map(|e| {
                let (total, new) = allowed(e, c.since);
                (*e, total, new)
            })
            .filter(|(_, total, _)| *total > 0)
            .collect();
        if counted.is_empty() {
            continue;
        }
        listed.push(source);
        let judged: Vec<Judged> = counted
            .iter()
            .filter_map(|(e, total, new)| {
                if counter_kind(&e.source, &e.counter).persists {
                    Some(condition(e, *total, *new, t, &window))
                } else {
                    (*new > 0).then(|| judge(e, *new, c.hours, t, &window))
                }
            })
            .collect();
        let name = CheckId::new("errors", source).on(*subject);
        let Some(worst) = judged.iter().max_by_key(|j| rank(j.status)) else {
            // Events since boot, none in the window: listed, and passing.
            let (e, total, _) = counted[0];
            let what = counter_kind(&e.source, &e.counter).what;
            checks.push(check(
                &name,
                Status::Pass,
                Some(0.0),
                limit_of(&e.source, &e.counter, t),
                format!("{total} {what} on {subject} since boot, none new {window}"),
            ));
            continue;
        };
        let text: Vec<&str> = judged.iter().map(|j| j.text.as_str()).collect();
        checks.push(check(
            &name,
            worst.status,
            Some(worst.value),
            worst.limit,
            text.join("; "),
        ));
    }
    for (source, watched) in &c.watched {
        if !listed.contains(&source.as_str()) {
            checks.push(
                check(
                    &CheckId::new("errors", source),
                    Status::Pass,
                    Some(0.0),
                    0.0,
                    format!("no {} {window} ({watched} counters)", describe(source)),
                )
                .without_limit(),
            );
        }
    }
    checks
}

/// A counter's events since boot and in the window, without those that are no fault: since
/// boot, a NIC's first link loss is its coming up.
fn allowed(e: &ErrorCounter, since: CounterWindow) -> (u64, u64) {
    if e.counter == "carrier_down" {
        let new = match since {
            CounterWindow::Boot => e.new.saturating_sub(1),
            CounterWindow::LastRun => e.new,
        };
        (e.total.saturating_sub(1).max(new), new)
    } else {
        (e.total, e.new)
    }
}

fn rank(s: Status) -> u8 {
    match s {
        Status::Fail => 3,
        Status::Warn => 2,
        _ => 1,
    }
}

fn describe(source: &str) -> &'static str {
    match source {
        "edac" => "memory errors (EDAC)",
        "aer" => "PCIe errors (AER)",
        "nic" => "link losses or receive errors on the NICs",
        "thermal" => "thermal throttling",
        "mce" => "machine-check exceptions",
        _ => "events",
    }
}

/// What a counter counts and how it is judged.
struct Kind {
    /// Its status beyond the limit.
    bad: Status,
    /// Judged per hour (else by count).
    per_hour: bool,
    /// A condition that holds until the part is replaced: judged on the count since boot.
    persists: bool,
    /// The events, for people.
    what: &'static str,
    /// What to do about them.
    todo: &'static str,
}

fn counter_kind(source: &str, counter: &str) -> Kind {
    let k = |bad, per_hour, what, todo| Kind {
        bad,
        per_hour,
        persists: false,
        what,
        todo,
    };
    let lasting = |bad, what, todo| Kind {
        bad,
        per_hour: false,
        persists: true,
        what,
        todo,
    };
    match (source, counter) {
        ("edac", "uncorrected") => lasting(
            Status::Fail,
            "uncorrected memory error(s)",
            "replace the DIMM: the machine may crash or corrupt data",
        ),
        ("edac", _) => k(
            Status::Warn,
            true,
            "corrected memory errors",
            "a DIMM going bad: plan its replacement",
        ),
        ("aer", "fatal") => lasting(
            Status::Fail,
            "fatal PCIe errors",
            "the device or its link is failing: reseat or replace it",
        ),
        ("aer", "nonfatal") => lasting(
            Status::Warn,
            "uncorrectable (non-fatal) PCIe errors",
            "the device or its link is failing: reseat or replace it",
        ),
        ("aer", _) => k(
            Status::Warn,
            true,
            "correctable PCIe errors",
            "a marginal link: check the card's seating and riser",
        ),
        ("nic", "link_down") => lasting(
            Status::Fail,
            "link loss(es), the link down now (configured up, it had a link since boot)",
            "check the cable, the optic and the switch port",
        ),
        ("nic", "bond_link_down") => lasting(
            Status::Warn,
            "link loss(es), the link down now (a bond's member: the bond carries on without it)",
            "check the cable, the optic and the switch port: the bond has lost its redundancy",
        ),
        ("nic", "carrier_down") => k(
            Status::Warn,
            false,
            "link losses",
            "check the cable, the optic and the switch port",
        ),
        ("nic", "rx_crc_errors") => k(
            Status::Warn,
            true,
            "receive CRC errors",
            "a bad cable or optic",
        ),
        ("nic", _) => k(
            Status::Warn,
            true,
            "packets dropped for lack of receive buffers",
            "raise the ring size (ethtool -G) or spread the NIC's interrupts",
        ),
        ("thermal", _) => k(
            Status::Warn,
            true,
            "thermal-throttle events",
            "check the cooling: fans, airflow, heatsink",
        ),
        _ => lasting(
            Status::Fail,
            "machine-check exceptions",
            "an uncorrected hardware error was signalled: read the kernel log (rasdaemon, \
             mcelog) for the part",
        ),
    }
}

/// The limit a counter is judged by.
fn limit_of(source: &str, counter: &str, t: &Thresholds) -> f64 {
    match (source, counter) {
        ("edac", "uncorrected") => t.errors_memory_uncorrected,
        ("edac", _) => t.errors_memory_corrected_per_hour,
        ("aer", "fatal" | "nonfatal") => t.errors_pcie_uncorrectable,
        ("aer", _) => t.errors_pcie_correctable_per_hour,
        ("nic", "carrier_down") => t.errors_nic_carrier_downs,
        ("nic", "link_down" | "bond_link_down") => 0.0,
        ("nic", "rx_crc_errors") => t.errors_nic_crc_per_hour,
        ("nic", _) => t.errors_nic_missed_per_hour,
        ("thermal", _) => t.errors_thermal_per_hour,
        _ => t.errors_machine_checks,
    }
}

/// The verdict on a condition: `total` events since boot (`new` of them in the window), less
/// what an operator acknowledged in this boot.
fn condition(e: &ErrorCounter, total: u64, new: u64, t: &Thresholds, window: &str) -> Judged {
    let kind = counter_kind(&e.source, &e.counter);
    let limit = limit_of(&e.source, &e.counter, t);
    let (subject, what) = (&e.subject, kind.what);
    let acked = e.acknowledged.as_ref();
    let open = total.saturating_sub(acked.map_or(0, |a| a.count));
    let ack_text = acked.map(|a| {
        format!(
            "{} acknowledged by {} at {}{}",
            a.count,
            a.by,
            crate::units::utc(a.at_unix),
            a.note
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        )
    });
    let counted = match (&ack_text, new) {
        (Some(ack), _) => format!("{total} {what} on {subject} since boot, {ack}"),
        (None, 0) => format!("{total} {what} on {subject} since boot, none new {window}"),
        (None, n) => format!("{total} {what} on {subject} since boot, {n} new {window}"),
    };
    let over = open as f64 > limit;
    Judged {
        status: if over { kind.bad } else { Status::Pass },
        value: open as f64,
        limit,
        text: if over {
            format!(
                "{counted} (limit {limit}): {}; this holds until the part is replaced or the \
                 machine reboots, or an operator runs `health_check acknowledge {}:{subject}`",
                kind.todo,
                CheckId::new("errors", &e.source),
            )
        } else {
            counted
        },
    }
}

/// The verdict on `new` events of one counter in a window of `hours`.
fn judge(e: &ErrorCounter, new: u64, hours: f64, t: &Thresholds, window: &str) -> Judged {
    let kind = counter_kind(&e.source, &e.counter);
    let limit = limit_of(&e.source, &e.counter, t);
    let rate = new as f64 / hours.max(1.0);
    let subject = &e.subject;
    let what = kind.what;
    let value = if kind.per_hour { rate } else { new as f64 };
    let counted = if kind.per_hour {
        format!("{new} {what} on {subject} {window}: {rate:.1}/h (limit {limit}/h)")
    } else {
        format!("{new} {what} on {subject} {window} (limit {limit})")
    };
    let over = value > limit;
    Judged {
        status: if over { kind.bad } else { Status::Pass },
        value: crate::units::round_to(value, 3),
        limit,
        text: if over {
            format!("{counted}: {}", kind.todo)
        } else {
            counted
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(
        since: CounterWindow,
        hours: f64,
        list: &[(&str, &str, &str, u64)],
    ) -> ErrorCounters {
        let mut watched = BTreeMap::new();
        for (source, ..) in list {
            *watched.entry(source.to_string()).or_default() += 1;
        }
        watched.insert("aer".to_string(), 40);
        ErrorCounters {
            since,
            hours,
            last_run_unix: None,
            watched,
            counters: list
                .iter()
                .map(|(source, subject, counter, new)| ErrorCounter {
                    source: source.to_string(),
                    subject: subject.to_string(),
                    counter: counter.to_string(),
                    total: *new,
                    new: *new,
                    acknowledged: None,
                })
                .collect(),
        }
    }

    fn status(checks: &[Check], name: &str) -> Status {
        checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
            .status
    }

    #[test]
    fn any_uncorrected_memory_error_fails_and_names_the_dimm() {
        let c = counters(
            CounterWindow::LastRun,
            2.0,
            &[
                ("edac", "mc0/dimm1", "uncorrected", 1),
                ("edac", "mc0/dimm1", "corrected", 1),
            ],
        );
        let checks = all(&c, &Thresholds::default());
        let dimm = checks
            .iter()
            .find(|c| c.name == "errors.edac:mc0/dimm1")
            .unwrap();
        assert_eq!(dimm.status, Status::Fail);
        assert!(
            dimm.message.contains("replace the DIMM"),
            "{}",
            dimm.message
        );
        assert!(dimm.message.contains("since the last run (2.0 h ago)"));
        // Sources with nothing new pass in one line.
        assert_eq!(status(&checks, "errors.aer"), Status::Pass);
    }

    #[test]
    fn corrected_errors_warn_above_a_rate_over_at_least_an_hour() {
        let t = Thresholds::default();
        // 20 in 10 hours: 2/h, over the 1/h limit.
        let c = counters(
            CounterWindow::LastRun,
            10.0,
            &[("edac", "mc1", "corrected", 20)],
        );
        assert_eq!(status(&all(&c, &t), "errors.edac:mc1"), Status::Warn);
        // 5 in 10 hours passes (and is still listed).
        let c = counters(
            CounterWindow::LastRun,
            10.0,
            &[("edac", "mc1", "corrected", 5)],
        );
        assert_eq!(status(&all(&c, &t), "errors.edac:mc1"), Status::Pass);
        // One error a minute after the last run is one an hour, not sixty.
        let c = counters(
            CounterWindow::LastRun,
            0.02,
            &[("edac", "mc1", "corrected", 1)],
        );
        assert_eq!(status(&all(&c, &t), "errors.edac:mc1"), Status::Pass);
    }

    #[test]
    fn a_link_loss_between_runs_warns_but_its_coming_up_does_not() {
        let t = Thresholds::default();
        let boot = counters(
            CounterWindow::Boot,
            100.0,
            &[("nic", "eth0", "carrier_down", 1)],
        );
        let checks = all(&boot, &t);
        assert_eq!(status(&checks, "errors.nic"), Status::Pass);
        assert!(!checks.iter().any(|c| c.name == "errors.nic:eth0"));
        // Seen since boot, nothing new: listed, passing.
        let mut seen = counters(
            CounterWindow::LastRun,
            1.0,
            &[("nic", "eth0", "carrier_down", 0)],
        );
        seen.counters[0].total = 4;
        let checks = all(&seen, &t);
        let c = checks.iter().find(|c| c.name == "errors.nic:eth0").unwrap();
        assert_eq!(c.status, Status::Pass);
        assert!(
            c.message
                .contains("3 link losses on eth0 since boot, none new"),
            "{}",
            c.message
        );
        let flap = counters(
            CounterWindow::LastRun,
            0.1,
            &[("nic", "eth0", "carrier_down", 1)],
        );
        let checks = all(&flap, &t);
        let c = checks.iter().find(|c| c.name == "errors.nic:eth0").unwrap();
        assert_eq!(c.status, Status::Warn);
        assert!(c.message.contains("1 link losses on eth0"), "{}", c.message);
        assert!(c.message.contains("switch port"), "{}", c.message);
    }

    #[test]
    fn pcie_fatal_fails_nonfatal_and_correctable_warn() {
        let t = Thresholds::default();
        let c = counters(
            CounterWindow::LastRun,
            1.0,
            &[
                ("aer", "0000:3b:00.0", "fatal", 1),
                ("aer", "0000:5e:00.0", "nonfatal", 2),
                ("aer", "0000:86:00.0", "correctable", 50),
                ("thermal", "package0", "core_throttle", 500),
                ("mce", "all", "exceptions", 1),
                ("nic", "eth1", "rx_crc_errors", 30),
            ],
        );
        let checks = all(&c, &t);
        assert_eq!(status(&checks, "errors.aer:0000:3b:00.0"), Status::Fail);
        assert_eq!(status(&checks, "errors.aer:0000:5e:00.0"), Status::Warn);
        assert_eq!(status(&checks, "errors.aer:0000:86:00.0"), Status::Warn);
        assert_eq!(status(&checks, "errors.thermal:package0"), Status::Warn);
        assert_eq!(status(&checks, "errors.mce:all"), Status::Fail);
        assert_eq!(status(&checks, "errors.nic:eth1"), Status::Warn);
        assert!(
            !checks.iter().any(|c| c.name == "errors.aer"),
            "aer had news"
        );
    }

    /// Each counter is judged by its own kind: its status beyond its own limit, per hour or by
    /// count, and named for people. The limits here are all different, so a counter judged by
    /// another's limit shows.
    #[test]
    fn every_counter_has_its_own_status_limit_rate_and_words() {
        let t = Thresholds {
            errors_memory_uncorrected: 1.0,
            errors_memory_corrected_per_hour: 2.0,
            errors_pcie_uncorrectable: 3.0,
            errors_pcie_correctable_per_hour: 4.0,
            errors_nic_carrier_downs: 5.0,
            errors_nic_crc_per_hour: 6.0,
            errors_nic_missed_per_hour: 7.0,
            errors_thermal_per_hour: 8.0,
            errors_machine_checks: 9.0,
            ..Thresholds::default()
        };
        let (warn, fail) = (Status::Warn, Status::Fail);
        // source, counter, status, limit, per hour, what
        let table = [
            (
                "edac",
                "uncorrected",
                fail,
                1.0,
                false,
                "uncorrected memory error(s)",
            ),
            (
                "edac",
                "corrected",
                warn,
                2.0,
                true,
                "corrected memory errors",
            ),
            ("aer", "fatal", fail, 3.0, false, "fatal PCIe errors"),
            (
                "aer",
                "nonfatal",
                warn,
                3.0,
                false,
                "uncorrectable (non-fatal) PCIe errors",
            ),
            (
                "aer",
                "correctable",
                warn,
                4.0,
                true,
                "correctable PCIe errors",
            ),
            ("nic", "carrier_down", warn, 5.0, false, "link losses"),
            (
                "nic",
                "rx_crc_errors",
                warn,
                6.0,
                true,
                "receive CRC errors",
            ),
            (
                "nic",
                "rx_missed_errors",
                warn,
                7.0,
                true,
                "packets dropped for lack of receive buffers",
            ),
            (
                "thermal",
                "core_throttle",
                warn,
                8.0,
                true,
                "thermal-throttle events",
            ),
            (
                "mce",
                "exceptions",
                fail,
                9.0,
                false,
                "machine-check exceptions",
            ),
        ];
        for (source, counter, bad, limit, per_hour, what) in table {
            let c = counters(
                CounterWindow::LastRun,
                10.0,
                &[(source, "dev", counter, 100)],
            );
            let checks = all(&c, &t);
            let got = checks
                .iter()
                .find(|c| c.name.to_string() == format!("errors.{source}:dev"))
                .unwrap();
            let want = if per_hour { 10.0 } else { 100.0 };
            assert_eq!(
                (got.status, got.limit, got.value),
                (bad, Some(limit), Some(want)),
                "{source} {counter}: {}",
                got.message
            );
            assert!(
                got.message.starts_with(&format!("100 {what} on dev ")),
                "{source} {counter}: {}",
                got.message
            );
        }
    }

    /// An uncorrected error is a condition: it fails on every run while its count stands, not
    /// only on the run that first saw it, until an operator acknowledges it; a new one after
    /// that fails again. A rate (corrected errors) is still judged on what is new.
    #[test]
    fn a_condition_keeps_failing_until_acknowledged_and_fails_again_when_it_grows() {
        let t = Thresholds::default();
        let mut c = counters(
            CounterWindow::LastRun,
            0.1,
            &[
                ("edac", "mc0/dimm1", "uncorrected", 0),
                ("aer", "0000:3b:00.0", "fatal", 0),
                ("mce", "all", "exceptions", 0),
                ("nic", "eth0", "link_down", 0),
                ("edac", "mc1", "corrected", 0),
            ],
        );
        for e in &mut c.counters {
            e.total = 2;
        }
        let checks = all(&c, &t);
        for name in [
            "errors.edac:mc0/dimm1",
            "errors.aer:0000:3b:00.0",
            "errors.mce:all",
            "errors.nic:eth0",
        ] {
            let got = checks.iter().find(|c| c.name == name).unwrap();
            assert_eq!(got.status, Status::Fail, "{name}: {}", got.message);
            assert!(
                got.message.contains("since boot, none new"),
                "{}",
                got.message
            );
            assert!(
                got.message.contains("health_check acknowledge"),
                "{}",
                got.message
            );
        }
        assert_eq!(status(&checks, "errors.edac:mc1"), Status::Pass);
        // Acknowledged at its count: passes, and says by whom and when.
        c.counters[0].acknowledged = Some(crate::wire::counters::Acknowledgement {
            by: "alice (uid 1000)".into(),
            at_unix: 1_796_027_264,
            count: 2,
            note: Some("DIMM B2 ordered".into()),
        });
        let dimm = all(&c, &t)
            .into_iter()
            .find(|c| c.name == "errors.edac:mc0/dimm1")
            .unwrap();
        assert_eq!(dimm.status, Status::Pass, "{}", dimm.message);
        assert_eq!(
            dimm.message,
            "2 uncorrected memory error(s) on mc0/dimm1 since boot, 2 acknowledged by alice \
             (uid 1000) at 2026-11-30 08:27 UTC (DIMM B2 ordered)"
        );
        // One more after the acknowledgement fails again.
        c.counters[0].total = 3;
        c.counters[0].new = 1;
        let dimm = all(&c, &t)
            .into_iter()
            .find(|c| c.name == "errors.edac:mc0/dimm1")
            .unwrap();
        assert_eq!(dimm.status, Status::Fail, "{}", dimm.message);
        assert_eq!(dimm.value, Some(1.0));
    }

    /// A subject's check takes its worst counter's status, wherever that counter is listed.
    #[test]
    fn a_subject_is_as_bad_as_its_worst_counter() {
        let t = Thresholds::default();
        for list in [
            [
                ("edac", "mc1", "corrected", 50),
                ("edac", "mc1", "corrected_noinfo", 1),
            ],
            [
                ("edac", "mc1", "corrected_noinfo", 1),
                ("edac", "mc1", "corrected", 50),
            ],
        ] {
            let c = counters(CounterWindow::LastRun, 10.0, &list);
            assert_eq!(
                status(&all(&c, &t), "errors.edac:mc1"),
                Status::Warn,
                "{list:?}"
            );
        }
    }

    /// A source watched with nothing to report passes in one line that says what was watched.
    #[test]
    fn a_quiet_source_says_what_it_watched() {
        let watched = ["edac", "aer", "nic", "thermal", "mce"];
        let c = ErrorCounters {
            since: CounterWindow::Boot,
            hours: 3.0,
            last_run_unix: None,
            watched: watched.iter().map(|s| (s.to_string(), 2)).collect(),
            counters: Vec::new(),
        };
        let checks = all(&c, &Thresholds::default());
        let words = [
            "memory errors (EDAC)",
            "PCIe errors (AER)",
            "link losses or receive errors on the NICs",
            "thermal throttling",
            "machine-check exceptions",
        ];
        for (source, what) in watched.iter().zip(words) {
            let got = checks
                .iter()
                .find(|c| c.name.to_string() == format!("errors.{source}"))
                .unwrap();
            assert_eq!(got.status, Status::Pass);
            assert_eq!(
                got.message,
                format!("no {what} since boot (3.0 h) (2 counters)")
            );
        }
    }
}
