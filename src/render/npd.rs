//! node-problem-detector's custom plugin contract: stdout is one line, cut to its
//! `max_output_length` (80 by default), and the exit code is the verdict: 0 OK, 1 NonOK, 2
//! Unknown. The line names the first failing check and no figure, so an unchanged problem
//! writes an unchanged line (NPD raises an event when the condition's message changes).

use super::text::{shorten_bytes, terminal_safe};
use crate::judge::health::{self, Health};
use crate::wire::document::Document;
use crate::wire::fleet::{FleetReport, MachineStatus};

/// NPD's default `max_output_length`, in bytes.
pub const MAX_LINE: usize = 80;

/// A document's NPD line and exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// At most [`MAX_LINE`] bytes.
    pub line: String,
    /// 0 healthy, 1 failing, 2 inconclusive or could not run.
    pub code: u8,
}

/// The NPD verdict of one run.
pub fn verdict(doc: &Document) -> Verdict {
    let (line, code) = match health::of(doc) {
        Health::Healthy => ("health_check: ok".to_string(), 0),
        Health::Failing {
            what,
            check: true,
            count,
        } => (more(format!("health_check: fail: {what}"), count), 1),
        Health::Failing { what, count, .. } => (
            more(format!("health_check: could not run: {what} failed"), count),
            2,
        ),
        Health::Inconclusive { what } => (
            format!("health_check: inconclusive (interference): {what}"),
            2,
        ),
    };
    Verdict {
        line: shorten_bytes(&terminal_safe(&line), MAX_LINE),
        code,
    }
}

/// `line` and how many more failed: a count after the name, so the start stays the same.
fn more(line: String, count: usize) -> String {
    if count > 1 {
        format!("{line} (+{} more)", count - 1)
    } else {
        line
    }
}

/// A fleet report's line: the worst machine and how many fail.
pub fn fleet_line(r: &FleetReport) -> String {
    let failing: Vec<&str> = r
        .machines
        .iter()
        .filter(|m| m.status >= MachineStatus::Fail)
        .map(|m| m.label.as_str())
        .collect();
    let line = match failing.as_slice() {
        [] => format!("health_check: ok: {} machines", r.machines.len()),
        [one] => format!("health_check: fail: {one}"),
        [first, rest @ ..] => format!("health_check: fail: {first} (+{} more)", rest.len()),
    };
    shorten_bytes(&terminal_safe(&line), MAX_LINE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::document::{Check, CheckId, Status};

    #[test]
    fn one_short_line_and_npds_codes() {
        let mut d = Document::default();
        assert_eq!(
            verdict(&d),
            Verdict {
                line: "health_check: ok".into(),
                code: 0
            }
        );
        d.checks.push(Check {
            name: CheckId::new("network", "bandwidth")
                .on("a-client-with-a-very-long-name.example.com"),
            status: Status::Fail,
            value: Some(1.0),
            limit: Some(10.0),
            message: "m".into(),
        });
        let v = verdict(&d);
        assert_eq!(v.code, 1);
        assert!(
            v.line
                .starts_with("health_check: fail: network.bandwidth:a-client")
        );
        assert!(v.line.len() <= MAX_LINE, "{}", v.line);
        // A name of two-byte characters is cut by bytes, on a character boundary.
        d.checks[0].name = CheckId::new("network", "bandwidth").on("é".repeat(60));
        let v = verdict(&d);
        assert!(
            v.line.len() <= MAX_LINE,
            "{} bytes: {}",
            v.line.len(),
            v.line
        );
        assert!(v.line.ends_with('~'), "{}", v.line);
        d.checks[0].status = Status::Inconclusive;
        assert_eq!(verdict(&d).code, 2);
    }
}
