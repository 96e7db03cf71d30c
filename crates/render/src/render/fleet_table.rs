//! The fleet report for people, on stderr: the findings as a table (status, scope, machine,
//! figure, value, median, %), every machine status counted, then each machine that is not fine
//! and why. Text from documents is made terminal-safe; long lists are cut with a count.

use super::text::{shorten as cut, terminal_safe as safe};
use crate::wire::fleet::{FleetReport, MachineStatus};
use crate::wire::rule::Severity;
use std::fmt::Write as _;

/// Findings shown before the table is cut short.
const ROWS: usize = 40;

pub use crate::units::number;

/// The summary text.
pub fn summary(r: &FleetReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "compare: {} machine(s) in {} group(s), {} finding(s); rules: {}",
        r.machines.len(),
        r.groups.len(),
        r.findings.len(),
        safe(&r.fleet_report.rules_source)
    );
    if !r.findings.is_empty() {
        let who = |f: &crate::wire::fleet::Finding| safe(&f.who());
        let host_w = r
            .findings
            .iter()
            .map(|f| who(f).len())
            .max()
            .unwrap_or(4)
            .clamp(4, 24);
        let _ = writeln!(
            out,
            "  {:<12}  {:<7}  {:<host_w$}  {:<40}  {:>14}  {:>14}  {:>7}",
            "", "scope", "host", "figure", "value", "median", "%"
        );
        for f in r.findings.iter().take(ROWS) {
            let word = match (&f.inconclusive, f.severity) {
                (Some(_), _) => "INCONCLUSIVE",
                _ if f.suspect.is_some() => "SUSPECT",
                (None, Severity::Fail) => "FAIL",
                (None, Severity::Warn) => "WARN",
            };
            let (value, median) = shown(f);
            let pct = f
                .deviation_pct
                .map_or("-".to_string(), |d| format!("{d:+.1}"));
            let _ = writeln!(
                out,
                "  {word:<12}  {:<7}  {:<host_w$}  {:<40}  {:>14}  {:>14}  {:>7}",
                crate::wire::document::word(&f.scope),
                cut(&who(f), host_w),
                cut(&safe(&f.figure), 40),
                cut(&value, 14),
                cut(&median, 14),
                pct
            );
        }
        if r.findings.len() > ROWS {
            let _ = writeln!(
                out,
                "  ... and {} more finding(s) in the report",
                r.findings.len() - ROWS
            );
        }
    }
    let counts: Vec<String> = MachineStatus::ALL
        .iter()
        .map(|s| {
            let n = r.machines.iter().filter(|m| m.status == *s).count();
            format!("{n} {}", s.as_str())
        })
        .collect();
    let _ = writeln!(out, "machines: {}", counts.join(", "));
    // Every machine not plainly fine: a status other than ok, or figures compared with nothing.
    let troubled: Vec<_> = r
        .machines
        .iter()
        .filter(|m| m.status != MachineStatus::Ok || !m.not_compared.is_empty())
        .collect();
    for m in troubled.iter().take(ROWS) {
        let not_compared = || {
            m.reasons
                .iter()
                .find(|r| r.contains("figures not compared"))
        };
        let why = match m.status {
            MachineStatus::Ok => not_compared(),
            _ => m.reasons.first(),
        }
        .map_or("", String::as_str);
        let _ = writeln!(
            out,
            "  {:<12}  {}: {}",
            m.status.as_str(),
            safe(&m.label),
            cut(&safe(why), 160)
        );
    }
    if troubled.len() > ROWS {
        let _ = writeln!(out, "  ... and {} more", troubled.len() - ROWS);
    }
    if !r.resolve.is_empty() {
        let _ = writeln!(
            out,
            "to settle the suspects, measure (a second round; the playbook runs them):"
        );
        for x in r.resolve.iter().take(ROWS) {
            let _ = writeln!(out, "  {} -> {}", safe(&x.from), safe(&x.to));
        }
        if r.resolve.len() > ROWS {
            let _ = writeln!(
                out,
                "  ... and {} more in the report",
                r.resolve.len() - ROWS
            );
        }
    }
    if !r.identity.is_empty() {
        let _ = writeln!(out, "one machine, one vote:");
        for n in r.identity.iter().take(ROWS) {
            let _ = writeln!(out, "  {}", cut(&safe(&n.message), 200));
        }
        if r.identity.len() > ROWS {
            let _ = writeln!(
                out,
                "  ... and {} more in the report (identity)",
                r.identity.len() - ROWS
            );
        }
    }
    out
}

/// A finding's value and reference as the table shows them: numbers with their unit, or for a
/// fact this machine's value and its siblings'.
pub fn shown(f: &crate::wire::fleet::Finding) -> (String, String) {
    if let Some(d) = &f.fact {
        // A command line is long: its difference says more than its value.
        if d.name == "kernel.cmdline" {
            let diff = crate::wire::counters::fact_difference(&d.name, &d.value, &d.majority);
            return (safe(&diff), format!("{} of {} agree", d.agree, d.of));
        }
        return (safe(&d.value), safe(&d.majority));
    }
    let with_unit = |v: Option<f64>| {
        v.map_or_else(
            || "-".to_string(),
            |v| format!("{} {}", number(v), safe(&f.unit)),
        )
    };
    (with_unit(f.value), with_unit(f.median))
}
