//! JUnit XML for CI systems (Jenkins, GitLab): one testcase per check, plus one per section so a
//! section that failed shows up too. fail -> `<failure>`, skip -> `<skipped>`, warn and pass ->
//! a passing testcase with the message in `<system-out>`. For a fleet report, one testsuite per
//! machine: its status, each finding, and each baseline check.

use crate::wire::document::{Check, Document, SectionOutcome, Status, word};
use crate::wire::fleet::{FleetReport, MachineStatus, Scope};
use crate::wire::rule::Severity;
use std::fmt::Write as _;

/// Escapes text for XML 1.0 attributes and text: markup characters become entities and
/// characters XML 1.0 cannot hold at all (most control characters) become `?`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// One testcase.
struct Case {
    class: String,
    name: String,
    outcome: CaseOutcome,
    /// One line: what CI systems show in their list.
    message: String,
    /// The evidence behind `message`, shown when the case is opened.
    evidence: Option<String>,
}

enum CaseOutcome {
    Pass,
    Failure,
    Skipped,
}

fn case_of_check(suite: &str, c: &Check) -> Case {
    Case {
        class: format!("{suite}.{}", c.name.section),
        name: c.name.to_string(),
        outcome: match c.status {
            Status::Fail => CaseOutcome::Failure,
            Status::Skip | Status::Inconclusive => CaseOutcome::Skipped,
            Status::Pass | Status::Warn => CaseOutcome::Pass,
        },
        message: match c.status {
            Status::Warn => format!("WARN: {}", c.message),
            Status::Inconclusive => format!("INCONCLUSIVE: {}", c.message),
            _ => c.message.clone(),
        },
        evidence: None,
    }
}

fn write_suite(out: &mut String, name: &str, hostname: Option<&str>, seconds: f64, cases: &[Case]) {
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, CaseOutcome::Failure))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, CaseOutcome::Skipped))
        .count();
    let host = hostname.map_or(String::new(), |h| format!(" hostname=\"{}\"", escape(h)));
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{seconds:.3}\"{host}>",
        escape(name),
        cases.len()
    );
    for c in cases {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
            escape(&c.class),
            escape(&c.name)
        );
        let msg = escape(&c.message);
        let body = c.evidence.as_deref().map_or_else(|| msg.clone(), escape);
        match c.outcome {
            CaseOutcome::Failure => {
                let _ = write!(
                    out,
                    "<failure message=\"{msg}\" type=\"fail\">{body}</failure>"
                );
            }
            CaseOutcome::Skipped if c.evidence.is_some() => {
                let _ = write!(out, "<skipped message=\"{msg}\">{body}</skipped>");
            }
            CaseOutcome::Skipped => {
                let _ = write!(out, "<skipped message=\"{msg}\"/>");
            }
            CaseOutcome::Pass if c.evidence.is_some() => {
                let _ = write!(out, "<system-out>{msg}\n{body}</system-out>");
            }
            CaseOutcome::Pass => {
                let _ = write!(out, "<system-out>{msg}</system-out>");
            }
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n");
}

fn wrap(name: &str, suites: &str, tests: usize, failures: usize, skipped: usize) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n{suites}</testsuites>",
        escape(name)
    )
}

fn section_cases(suite: &str, doc: &Document) -> Vec<Case> {
    doc.health_check
        .sections
        .0
        .iter()
        .map(|(section, outcome)| Case {
            class: format!("{suite}.sections"),
            name: format!("section.{section}"),
            outcome: match outcome {
                SectionOutcome::Failed(_) => CaseOutcome::Failure,
                SectionOutcome::Skipped(_) => CaseOutcome::Skipped,
                SectionOutcome::Ok | SectionOutcome::Interrupted => CaseOutcome::Pass,
            },
            message: outcome.to_wire(),
            evidence: None,
        })
        .collect()
}

fn counts(cases: &[Case]) -> (usize, usize, usize) {
    (
        cases.len(),
        cases
            .iter()
            .filter(|c| matches!(c.outcome, CaseOutcome::Failure))
            .count(),
        cases
            .iter()
            .filter(|c| matches!(c.outcome, CaseOutcome::Skipped))
            .count(),
    )
}

/// One run's checks and sections as JUnit XML.
pub fn document(doc: &Document) -> String {
    let hostname = doc.system().and_then(|s| s.hostname.as_deref());
    let suite = format!(
        "health_check {}{}",
        word(&doc.health_check.role),
        hostname.map_or(String::new(), |h| format!(" {h}"))
    );
    let mut cases = section_cases("health_check", doc);
    cases.extend(doc.checks.iter().map(|c| case_of_check("health_check", c)));
    let mut suites = String::new();
    write_suite(
        &mut suites,
        &suite,
        hostname,
        doc.health_check.seconds,
        &cases,
    );
    let (t, f, s) = counts(&cases);
    wrap("health_check", &suites, t, f, s)
}

/// A fleet report as JUnit XML: one testsuite per machine.
pub fn fleet(r: &FleetReport) -> String {
    let mut suites = String::new();
    let (mut t, mut f, mut s) = (0, 0, 0);
    for m in &r.machines {
        let mut cases = vec![Case {
            class: "fleet.machine".into(),
            name: "fleet.status".into(),
            outcome: match m.status {
                MachineStatus::Ok | MachineStatus::Warn => CaseOutcome::Pass,
                MachineStatus::Alone | MachineStatus::Inconclusive | MachineStatus::Suspect => {
                    CaseOutcome::Skipped
                }
                MachineStatus::Fail | MachineStatus::Failed | MachineStatus::Unreadable => {
                    CaseOutcome::Failure
                }
            },
            // The first reason heads; all of them are the evidence.
            message: match m.reasons.first() {
                None => m.status.as_str().to_string(),
                Some(first) => format!("{}: {first}", m.status.as_str()),
            },
            evidence: (m.reasons.len() > 1).then(|| m.reasons.join("\n")),
        }];
        // A link finding is listed under both its ends, a group finding under its members:
        // it fails none of them (a group's fails its own suite, below).
        let own = |x: &&crate::wire::fleet::Finding| {
            let among = |l: &Option<Vec<String>>| l.as_ref().is_some_and(|l| l.contains(&m.label));
            (x.machine == m.label && x.scope != Scope::Group) || among(&x.link) || among(&x.members)
        };
        for finding in r.findings.iter().filter(own) {
            let fails_none = finding.link.is_some() || finding.scope == Scope::Group;
            cases.push(Case {
                class: "fleet.findings".into(),
                name: format!("compare.{}", finding.figure),
                outcome: match (&finding.inconclusive, finding.severity) {
                    (Some(_), _) => CaseOutcome::Skipped,
                    _ if finding.suspect.is_some() => CaseOutcome::Skipped,
                    (None, Severity::Fail) if !fails_none => CaseOutcome::Failure,
                    _ => CaseOutcome::Pass,
                },
                message: match (&finding.inconclusive, finding.severity) {
                    (Some(_), _) => format!("INCONCLUSIVE: {}", finding.title()),
                    _ if finding.suspect.is_some() => format!("SUSPECT: {}", finding.title()),
                    (None, Severity::Warn) => format!("WARN: {}", finding.title()),
                    (None, Severity::Fail) if finding.scope == Scope::Group => {
                        format!("GROUP: {}", finding.title())
                    }
                    (None, Severity::Fail) if fails_none => format!("LINK: {}", finding.title()),
                    _ => finding.title().to_string(),
                },
                evidence: Some(finding.message.clone()),
            });
        }
        for figure in &m.missing_figures {
            cases.push(Case {
                class: "fleet.missing".into(),
                name: format!("missing.{figure}"),
                outcome: CaseOutcome::Skipped,
                message: format!("its model's other machines have {figure}; it does not"),
                evidence: None,
            });
        }
        cases.extend(m.baseline_checks.iter().map(|c| case_of_check("fleet", c)));
        write_suite(&mut suites, &m.label, m.hostname.as_deref(), 0.0, &cases);
        let (a, b, c) = counts(&cases);
        (t, f, s) = (t + a, f + b, s + c);
    }
    // A shortfall a whole model shares: its own suite, failed when its severity is fail.
    for g in r.findings.iter().filter(|x| x.scope == Scope::Group) {
        let cases = [Case {
            class: "fleet.groups".into(),
            name: format!("compare.{}", g.figure),
            outcome: match g.severity {
                Severity::Fail => CaseOutcome::Failure,
                Severity::Warn => CaseOutcome::Pass,
            },
            message: format!("{}: {}", g.severity.as_str().to_uppercase(), g.title()),
            evidence: Some(g.message.clone()),
        }];
        write_suite(
            &mut suites,
            &format!("group {}", g.machine),
            None,
            0.0,
            &cases,
        );
        let (a, b, c) = counts(&cases);
        (t, f, s) = (t + a, f + b, s + c);
    }
    wrap("health_check compare", &suites, t, f, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>\u{1}"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;?"
        );
        assert_eq!(escape("ünïcödé\n"), "ünïcödé\n");
    }
}
