//! The summary for people, printed on stderr after the JSON is written: each section's outcome
//! with the figures people look for first, then every check. Never parsed by anything.

use super::schema::{Check, Document, Status};
use std::fmt::Write as _;

/// The summary as plain text (no control characters).
pub fn summary(doc: &Document) -> String {
    let info = &doc.health_check;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "health_check {}: {} role, {} profile, {:.1} s",
        info.version, info.role, info.profile, info.seconds
    );
    let width = info
        .sections
        .0
        .iter()
        .map(|(s, _)| s.len())
        .max()
        .unwrap_or(0);
    for (section, status) in &info.sections.0 {
        let figures = key_figures(doc, section);
        let sep = if figures.is_empty() { "" } else { "  " };
        let _ = writeln!(out, "  {section:<width$}  {status}{sep}{figures}");
    }
    if !doc.checks.is_empty() {
        let count = |s: Status| doc.checks.iter().filter(|c| c.status == s).count();
        let _ = writeln!(
            out,
            "checks: {} pass, {} warn, {} fail, {} skip",
            count(Status::Pass),
            count(Status::Warn),
            count(Status::Fail),
            count(Status::Skip)
        );
        for c in &doc.checks {
            let _ = writeln!(out, "  {}", check_line(c));
        }
    }
    out
}

fn check_line(c: &Check) -> String {
    format!(
        "{:<4}  {}: {}",
        c.status.as_str().to_uppercase(),
        c.name,
        c.message
    )
}

fn key_figures(doc: &Document, section: &str) -> String {
    match section {
        "sleep" => doc
            .sleepbench
            .as_ref()
            .and_then(|p| p.measured())
            .map(|s| {
                let busy = s
                    .total
                    .map_or_else(String::new, |t| format!(", busy CPU {t:.1}%"));
                format!(
                    "({:.0} calls/s, {:.0} per thread{busy})",
                    s.calls_per_second, s.calls_per_second_per_thread
                )
            })
            .unwrap_or_default(),
        "system" => doc
            .system
            .as_ref()
            .and_then(|p| p.measured())
            .map(|s| {
                format!(
                    "({}, {} CPUs, {} node(s))",
                    s.cpu_model.as_deref().unwrap_or("unknown CPU"),
                    s.logical_cpus,
                    s.numa_nodes.len()
                )
            })
            .unwrap_or_default(),
        "network" => network_figures(doc),
        "memory" => doc
            .memory
            .as_ref()
            .and_then(|p| p.measured())
            .map(|m| {
                let mut parts = Vec::new();
                for (pattern, matrix) in &m.idle_latency {
                    if let Some(ns) = matrix.values().next().and_then(|row| row.values().next()) {
                        parts.push(format!("idle {pattern} {ns} ns"));
                    }
                }
                if let Some(v) = m.peak_bandwidth_mb_s.get("all reads") {
                    parts.push(format!("all reads {v:.0} MiB/s"));
                }
                if let Some(v) = m.peak_read_simd_mb_s {
                    parts.push(format!("vector reads {v:.0} MiB/s"));
                }
                format!("({})", parts.join(", "))
            })
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn network_figures(doc: &Document) -> String {
    let mut parts = Vec::new();
    for b in doc.iperf3_bandwidth.iter().flatten() {
        match (b.bandwidth, b.reverse_gbps) {
            (Some(f), Some(r)) => parts.push(format!("{} {f}/{r} Gbit/s", b.hostname)),
            (Some(f), None) => parts.push(format!("{} {f} Gbit/s", b.hostname)),
            _ => parts.push(format!("{} no bandwidth", b.hostname)),
        }
    }
    if parts.is_empty() {
        for p in doc.ping.iter().flatten() {
            parts.push(match p.latency {
                Some(ms) => format!("{} {ms} ms", p.hostname),
                None => format!("{} no reply", p.hostname),
            });
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("({})", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::schema::{RunInfo, SectionStatuses};

    #[test]
    fn summary_lists_sections_and_checks_without_control_characters() {
        let doc = Document {
            checks: vec![Check {
                name: "sleepbench.irq".into(),
                status: Status::Fail,
                value: Some(42.0),
                limit: Some(30.0),
                message: "IRQ time 42.0% is not under 30%".into(),
            }],
            health_check: RunInfo {
                version: "0.1.0".into(),
                role: "server".into(),
                profile: "quick".into(),
                seconds: 3.25,
                sections: SectionStatuses(vec![
                    ("system".into(), "ok".into()),
                    ("network".into(), "skipped: no clients".into()),
                ]),
                ..RunInfo::default()
            },
            ..Document::default()
        };
        let text = summary(&doc);
        assert!(text.starts_with("health_check 0.1.0: server role, quick profile, 3.2 s\n"));
        assert!(text.contains("  network  skipped: no clients\n"));
        assert!(text.contains("checks: 0 pass, 0 warn, 1 fail, 0 skip\n"));
        assert!(text.contains("FAIL  sleepbench.irq: IRQ time"));
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
    }
}
