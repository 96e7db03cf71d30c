//! The summary for people, printed on stderr after the JSON is written: each section's outcome
//! with the figures people look for first, then the checks (failures, warnings and inconclusive
//! ones with their messages, passes and skips by name), and the total time. Colour only on a
//! terminal (and never with NO_COLOR set). Never parsed by anything. Text from the document (a
//! BIOS string in a configuration change, a host name, a reason) is shown, never acted on by the
//! terminal: control characters are written out ([`terminal_safe`]).

use super::text::terminal_safe;
use crate::wire::document::{Check, Document, Section, Status, word};
use std::fmt::Write as _;

/// Whether the summary on stderr may use colour: a terminal, and NO_COLOR unset.
pub fn color_wanted() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn paint(word: &str, status: Status, color: bool) -> String {
    if !color {
        return word.to_string();
    }
    let code = match status {
        Status::Pass => "32",
        Status::Warn => "33",
        Status::Fail => "31",
        Status::Skip => "2",
        Status::Inconclusive => "36",
    };
    format!("\u{1b}[{code}m{word}\u{1b}[0m")
}

/// The summary text.
pub fn summary(doc: &Document, color: bool) -> String {
    let info = &doc.health_check;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "health_check {}: {} role, {} profile, {:.1} s",
        terminal_safe(&info.version),
        word(&info.role),
        word(&info.profile),
        info.seconds
    );
    let width = info
        .sections
        .0
        .iter()
        .map(|(s, _)| s.name().len())
        .max()
        .unwrap_or(0);
    for (section, status) in &info.sections.0 {
        let figures = terminal_safe(&key_figures(doc, *section));
        let sep = if figures.is_empty() { "" } else { "  " };
        let shown = paint(&terminal_safe(&status.to_wire()), status.status(), color);
        let _ = writeln!(out, "  {:<width$}  {shown}{sep}{figures}", section.name());
    }
    if !doc.checks.is_empty() {
        let count = |s: Status| doc.checks.iter().filter(|c| c.status == s).count();
        // Inconclusive only when there is one: it says to measure again, and why.
        let inconclusive = match count(Status::Inconclusive) {
            0 => String::new(),
            n => format!(
                "{} inconclusive, ",
                paint(&n.to_string(), Status::Inconclusive, color)
            ),
        };
        let _ = writeln!(
            out,
            "checks: {} pass, {} warn, {} fail, {inconclusive}{} skip",
            paint(&count(Status::Pass).to_string(), Status::Pass, color),
            paint(&count(Status::Warn).to_string(), Status::Warn, color),
            paint(&count(Status::Fail).to_string(), Status::Fail, color),
            count(Status::Skip)
        );
        let alarms: Vec<&Check> = doc
            .checks
            .iter()
            .filter(|c| matches!(c.status, Status::Fail | Status::Warn | Status::Inconclusive))
            .collect();
        for c in alarms.iter().take(ALARM_LINES) {
            let _ = writeln!(out, "  {}", check_line(c, color));
        }
        if alarms.len() > ALARM_LINES {
            let _ = writeln!(
                out,
                "  ... and {} more failures, warnings and inconclusive checks (all in the document)",
                alarms.len() - ALARM_LINES
            );
        }
        for status in [Status::Pass, Status::Skip] {
            let names: Vec<String> = doc
                .checks
                .iter()
                .filter(|c| c.status == status)
                .map(|c| terminal_safe(&c.name.to_string()))
                .collect();
            if !names.is_empty() {
                let word = paint(&status.as_str().to_uppercase(), status, color);
                let _ = writeln!(out, "  {word:<4}  {}", listed(&names, LISTED));
            }
        }
    }
    out
}

/// Failures, warnings and inconclusive checks shown with their messages before the rest are
/// counted.
const ALARM_LINES: usize = 40;

/// Items named in one summary line before the rest are counted: a 2000-client run must not
/// print a 60 KB line.
const LISTED: usize = 12;

/// `a, b, c` for a few items; the first `max` and `... and N more` for many.
fn listed<T: AsRef<str>>(items: &[T], max: usize) -> String {
    let shown: Vec<&str> = items.iter().take(max).map(AsRef::as_ref).collect();
    let mut text = shown.join(", ");
    if items.len() > max {
        let _ = write!(text, ", ... and {} more", items.len() - max);
    }
    text
}

fn check_line(c: &Check, color: bool) -> String {
    let word = paint(&c.status.as_str().to_uppercase(), c.status, color);
    format!(
        "{word:<4}  {}: {}",
        terminal_safe(&c.name.to_string()),
        terminal_safe(&c.message)
    )
}

fn key_figures(doc: &Document, section: Section) -> String {
    let figures = match section {
        Section::Sleep => doc.sleepbench.as_ref().and_then(|p| p.measured()).map(|s| {
            let busy = s
                .total
                .map_or_else(String::new, |t| format!(", busy CPU {t:.1}%"));
            format!(
                "{:.0} calls/s, {:.0} per thread{busy}",
                s.calls_per_second, s.calls_per_second_per_thread
            )
        }),
        Section::System => doc.system.as_ref().and_then(|p| p.measured()).map(|s| {
            format!(
                "{}, {} CPUs, {} node(s)",
                s.cpu_model.as_deref().unwrap_or("unknown CPU"),
                s.logical_cpus,
                s.numa_nodes.len()
            )
        }),
        Section::Network => network_figures(doc),
        Section::Memory => doc.memory.as_ref().and_then(|p| p.measured()).map(|m| {
            let mut parts = Vec::new();
            for (pattern, matrix) in &m.idle_latency.patterns {
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
            parts.join(", ")
        }),
        Section::Storage => None,
    };
    figures
        .filter(|f| !f.is_empty())
        .map(|f| format!("({f})"))
        .unwrap_or_default()
}

fn network_figures(doc: &Document) -> Option<String> {
    let mut parts = Vec::new();
    for b in doc.iperf3_bandwidth.iter().flatten() {
        parts.push(match (b.bandwidth, b.reverse_gbps) {
            (Some(f), Some(r)) => format!("{} {f}/{r} Gbit/s", b.hostname),
            (Some(f), None) => format!("{} {f} Gbit/s", b.hostname),
            _ => format!("{} no bandwidth", b.hostname),
        });
    }
    if parts.is_empty() {
        for p in doc.ping.iter().flatten() {
            parts.push(match p.latency {
                Some(ms) => format!("{} {ms} ms", p.hostname),
                None => format!("{} no reply", p.hostname),
            });
        }
    }
    Some(listed(&parts, LISTED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::document::{CheckId, Profile, Role, RunInfo, SectionOutcome, SectionStatuses};

    fn check(name: &str, status: Status, message: &str) -> Check {
        Check {
            name: CheckId::parse(name),
            status,
            value: None,
            limit: None,
            message: message.into(),
        }
    }

    fn doc() -> Document {
        Document {
            checks: vec![
                check(
                    "sleepbench.irq",
                    Status::Fail,
                    "IRQ time 42.0% is not under 30%",
                ),
                check("sleepbench.total_cpu", Status::Pass, "fine"),
                check("system.governor", Status::Skip, "no cpufreq"),
                check("memory.cache_step:L3", Status::Warn, "no step"),
            ],
            health_check: RunInfo {
                version: "0.1.0".into(),
                role: Role::Server,
                profile: Profile::Quick,
                seconds: 3.25,
                sections: SectionStatuses(vec![
                    (Section::System, SectionOutcome::Ok),
                    (
                        Section::Network,
                        SectionOutcome::Skipped("no clients".into()),
                    ),
                    (Section::Sleep, SectionOutcome::Interrupted),
                ]),
                ..RunInfo::default()
            },
            ..Document::default()
        }
    }

    #[test]
    fn plain_summary_snapshot() {
        let expected = "\
health_check 0.1.0: server role, quick profile, 3.2 s
  system   ok
  network  skipped: no clients
  sleep    interrupted
checks: 1 pass, 1 warn, 1 fail, 1 skip
  FAIL  sleepbench.irq: IRQ time 42.0% is not under 30%
  WARN  memory.cache_step:L3: no step
  PASS  sleepbench.total_cpu
  SKIP  system.governor
";
        assert_eq!(summary(&doc(), false), expected);
    }

    /// A figure made inconclusive by interference is counted and shown with its reason, never
    /// left out of the summary.
    #[test]
    fn inconclusive_checks_are_counted_and_say_why() {
        let mut d = doc();
        d.checks.push(check(
            "sleepbench.calls_per_thread",
            Status::Inconclusive,
            "inconclusive, measured under interference (steal 12.0%): 4763 calls/s",
        ));
        let text = summary(&d, false);
        assert!(
            text.contains("checks: 1 pass, 1 warn, 1 fail, 1 inconclusive, 1 skip\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  INCONCLUSIVE  sleepbench.calls_per_thread: inconclusive, measured under \
                 interference (steal 12.0%)"
            ),
            "{text}"
        );
    }

    /// A crafted BIOS string in a configuration change (`history.fingerprint`), a host name or
    /// a section's reason reaches the terminal written out, never as escape sequences.
    #[test]
    fn text_from_the_document_cannot_drive_the_terminal() {
        let mut d = doc();
        d.checks.push(check(
            "history.fingerprint",
            Status::Warn,
            "changed since the last run: BIOS version 1.0 -> \u{1b}]0;owned\u{7}\u{1b}[2J2.0",
        ));
        d.checks
            .push(check("network.ping_loss:h\u{1b}[31m", Status::Pass, ""));
        d.health_check.sections.0.push((
            Section::Memory,
            SectionOutcome::Failed("x\u{1b}[2Jy\ru\u{9b}".into()),
        ));
        let ours = regex::Regex::new("\u{1b}\\[[0-9]+m").unwrap();
        for color in [false, true] {
            let text = summary(&d, color);
            // Our own colours taken out, nothing but new lines is left to act on the terminal.
            let rest = ours.replace_all(&text, "");
            assert!(
                !rest.chars().any(|c| c.is_control() && c != '\n'),
                "{text:?}"
            );
            assert!(text.contains("\\u{1b}]0;owned\\u{7}"), "{text}");
            assert!(
                text.contains("failed: x\\u{1b}[2Jy\\u{d}u\\u{9b}"),
                "{text}"
            );
        }
    }

    #[test]
    fn colour_only_when_asked() {
        let plain = summary(&doc(), false);
        assert!(!plain.chars().any(|c| c.is_control() && c != '\n'));
        let coloured = summary(&doc(), true);
        assert!(coloured.contains("\u{1b}[31mFAIL\u{1b}[0m"));
        assert!(coloured.contains("\u{1b}[32mok\u{1b}[0m"));
    }
}
