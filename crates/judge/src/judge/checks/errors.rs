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
mod tests;
