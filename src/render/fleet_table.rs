//! The fleet report for people, on stderr: the findings as a table (host, figure, value, median,
//! %), then the machines that are not fine and why. Long lists are cut with a count.

use crate::wire::fleet::{FleetReport, MachineStatus};
use crate::wire::rule::Severity;
use std::fmt::Write as _;

/// Findings shown before the table is cut short.
const ROWS: usize = 40;

fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
        s.push('~');
        s
    }
}

pub use crate::units::number;

/// The summary text.
pub fn summary(r: &FleetReport) -> String {
    let mut out = String::new();
    let count = |s: MachineStatus| r.machines.iter().filter(|m| m.status == s).count();
    let _ = writeln!(
        out,
        "compare: {} machine(s) in {} group(s), {} finding(s); rules: {}",
        r.machines.len(),
        r.groups.len(),
        r.findings.len(),
        r.fleet_report.rules_source
    );
    if !r.findings.is_empty() {
        let host_w = r
            .findings
            .iter()
            .map(|f| f.machine.len())
            .max()
            .unwrap_or(4)
            .clamp(4, 24);
        let _ = writeln!(
            out,
            "  {:<4}  {:<host_w$}  {:<44}  {:>16}  {:>16}  {:>7}",
            "", "host", "figure", "value", "median", "%"
        );
        for f in r.findings.iter().take(ROWS) {
            let word = match f.severity {
                Severity::Fail => "FAIL",
                Severity::Warn => "WARN",
            };
            let value = format!("{} {}", number(f.value), f.unit);
            let median = format!("{} {}", number(f.median), f.unit);
            let pct = f
                .deviation_pct
                .map_or("-".to_string(), |d| format!("{d:+.1}"));
            let _ = writeln!(
                out,
                "  {word:<4}  {:<host_w$}  {:<44}  {:>16}  {:>16}  {:>7}",
                cut(&f.machine, host_w),
                cut(&f.figure, 44),
                cut(&value, 16),
                cut(&median, 16),
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
    let _ = writeln!(
        out,
        "machines: {} ok, {} warn, {} fail, {} failed, {} unreadable",
        count(MachineStatus::Ok),
        count(MachineStatus::Warn),
        count(MachineStatus::Fail),
        count(MachineStatus::Failed),
        count(MachineStatus::Unreadable)
    );
    let troubled: Vec<_> = r
        .machines
        .iter()
        .filter(|m| matches!(m.status, MachineStatus::Failed | MachineStatus::Unreadable))
        .collect();
    for m in troubled.iter().take(ROWS) {
        let why = m.reasons.first().map_or("", String::as_str);
        let _ = writeln!(
            out,
            "  {:<10}  {}: {}",
            m.status.as_str(),
            m.label,
            cut(why, 160)
        );
    }
    if troubled.len() > ROWS {
        let _ = writeln!(out, "  ... and {} more", troubled.len() - ROWS);
    }
    out
}
