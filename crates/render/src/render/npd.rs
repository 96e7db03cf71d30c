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

/// The NPD verdict of one run: the code is the roll-up Slurm and Prometheus act on too
/// ([`Health::code`]): a section that failed to run (or overran the `--deadline`) is a failing
/// run, as Slurm drains on it. The line names the first failure and no count, so an unchanged
/// problem writes an unchanged line (NPD raises an event when the message changes).
pub fn verdict(doc: &Document) -> Verdict {
    let health = health::of(doc);
    let line = match &health {
        Health::Healthy => "health_check: ok".to_string(),
        Health::Failing {
            what, check: true, ..
        } => format!("health_check: fail: {what}"),
        Health::Failing { what, .. } => format!("health_check: fail: {what} failed to run"),
        Health::Inconclusive { what } => {
            format!("health_check: inconclusive (interference): {what}")
        }
    };
    Verdict {
        line: shorten_bytes(&terminal_safe(&line), MAX_LINE),
        code: health.code(),
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
