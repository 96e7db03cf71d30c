//! `health_check history`'s table for people: the runs selected, each figure's trend (the
//! reference its last run was judged against, its last value and how far that is from the
//! reference, a sparkline of the last runs, the verdicts it drew), and the runs where the
//! configuration changed.

use super::html::utc;
use super::text::{shorten as cut, terminal_safe as safe};
use crate::units::number;
use crate::wire::check::Status;
use crate::wire::history::{HistoryReport, PastReference, Trend};
use std::fmt::Write as _;

/// Points in a sparkline.
const SPARK: usize = 24;

/// The table.
pub fn table(r: &HistoryReport) -> String {
    let mut out = String::new();
    let Some((first, last)) = r.runs.first().zip(r.runs.last()) else {
        let _ = writeln!(out, "history {}: no run selected", safe(&r.file));
        return out;
    };
    let machines: std::collections::BTreeSet<&str> =
        r.runs.iter().map(|r| r.machine.as_str()).collect();
    let _ = writeln!(
        out,
        "history {}: {} run(s) of {} machine(s), {} to {}",
        safe(&r.file),
        r.runs.len(),
        machines.len(),
        utc(first.started_unix),
        utc(last.started_unix)
    );
    let worst = |s: Status| r.runs.iter().filter(|x| x.worst == Some(s)).count();
    let _ = writeln!(
        out,
        "  runs whose worst check failed: {}, warned: {}",
        worst(Status::Fail),
        worst(Status::Warn)
    );
    if !r.figures.is_empty() {
        let _ = writeln!(
            out,
            "\n  {:<52} {:>5} {:>14} {:>14} {:>8}  {:<SPARK$}  flagged",
            "figure", "runs", "reference", "last", "vs ref", "trend"
        );
        for (name, t) in &r.figures {
            let _ = writeln!(out, "  {}", row(name, t));
        }
    }
    if !r.changes.is_empty() {
        let _ = writeln!(out, "\n  configuration changes:");
        for c in &r.changes {
            let _ = writeln!(
                out,
                "  {} between runs {} and {}: {}: {} -> {}",
                utc(c.started_unix),
                c.run_before,
                c.run_after,
                safe(&crate::wire::counters::fact_label(&c.fact)),
                cut(&safe(c.from.as_deref().unwrap_or("(none)")), 40),
                cut(&safe(c.to.as_deref().unwrap_or("(none)")), 40)
            );
        }
    }
    out
}

/// The reference the latest run of a trend was judged against: the one it recorded, or for a
/// run recorded before runs kept theirs, its earlier runs as the history judge selects them by
/// default; `None` before there were enough of them.
pub fn latest_reference(t: &Trend) -> Option<PastReference> {
    let (last, earlier) = t.points.split_last()?;
    last.reference.or_else(|| {
        crate::judge::past::reference(
            earlier,
            crate::judge::past::DEFAULT_WINDOW,
            crate::judge::pipeline::Population::past(false),
        )
        .map(|r| PastReference {
            median: r.median,
            runs: r.machines,
        })
    })
}

fn row(name: &str, t: &Trend) -> String {
    let values: Vec<f64> = t.points.iter().map(|p| p.value).collect();
    let med = latest_reference(t).map_or(f64::NAN, |r| r.median);
    let last = values.last().copied().unwrap_or(f64::NAN);
    let vs = if med != 0.0 && med.is_finite() {
        format!("{:+.1}%", 100.0 * (last - med) / med.abs())
    } else {
        "-".into()
    };
    let reference = if med.is_finite() {
        format!("{} {}", number(med), safe(&t.unit))
    } else {
        "-".into()
    };
    let flagged: Vec<String> = t
        .points
        .iter()
        .filter(|p| matches!(p.status, Some(Status::Warn | Status::Fail)))
        .map(|p| p.run.to_string())
        .collect();
    let flagged = match flagged.len() {
        0 => "-".to_string(),
        n if n > 6 => format!("{n} runs, last {}", flagged[n - 1]),
        _ => format!("runs {}", flagged.join(",")),
    };
    format!(
        "{:<52} {:>5} {:>14} {:>14} {:>8}  {:<SPARK$}  {flagged}",
        cut(&safe(name), 52),
        t.points.len(),
        cut(&reference, 14),
        cut(&format!("{} {}", number(last), safe(&t.unit)), 14),
        vs,
        sparkline(&values[values.len().saturating_sub(SPARK)..])
    )
}

/// The values as block characters, lowest to highest.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    values
        .iter()
        .map(|&v| {
            if hi <= lo || !hi.is_finite() {
                return BARS[3];
            }
            let i = ((v - lo) / (hi - lo) * 7.0).round() as usize;
            BARS[i.min(7)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::figures::Direction;
    use crate::wire::history::{FactChange, Point, RunSummary};

    #[test]
    fn sparklines_span_the_range_and_a_flat_line_is_flat() {
        assert_eq!(sparkline(&[1.0, 2.0, 3.0]), "▁▅█");
        assert_eq!(sparkline(&[5.0, 5.0]), "▄▄");
        assert_eq!(sparkline(&[]), "");
    }

    #[test]
    fn the_table_names_trends_flags_and_changes() {
        let run = |n: i64| RunSummary {
            run: n,
            started_unix: 1_764_547_200 + n as u64 * 3600,
            machine: "m".into(),
            hostname: Some("h".into()),
            profile: "quick".into(),
            boot_id: None,
            kernel: None,
            firmware: None,
            worst: Some(if n == 3 { Status::Fail } else { Status::Pass }),
            seconds: 1.0,
        };
        let point = |n: i64, v: f64, s: Option<Status>| Point {
            run: n,
            started_unix: 0,
            value: v,
            noisy: false,
            status: s,
            reference: None,
        };
        let mut figures = std::collections::BTreeMap::new();
        figures.insert(
            "sleepbench.calls_per_second".to_string(),
            Trend {
                unit: "calls/s".into(),
                direction: Direction::Higher,
                basis: String::new(),
                points: vec![
                    point(1, 100.0, None),
                    point(2, 100.0, None),
                    point(3, 100.0, Some(Status::Pass)),
                    point(4, 50.0, Some(Status::Fail)),
                ],
            },
        );
        let r = HistoryReport {
            file: "h.sqlite".into(),
            runs: (1..=4).map(run).collect(),
            figures,
            changes: vec![FactChange {
                fact: "cpu.microcode".into(),
                from: Some("0xa".into()),
                to: Some("0xb".into()),
                run_before: 3,
                run_after: 4,
                started_unix: 1_764_558_000,
            }],
        };
        let t = table(&r);
        assert!(t.contains("4 run(s) of 1 machine(s)"), "{t}");
        assert!(t.contains("runs whose worst check failed: 1"), "{t}");
        // Against the reference the last run was judged by: its 3 earlier runs.
        assert!(t.contains("100.0 calls/s"), "{t}");
        assert!(t.contains("-50.0%"), "{t}");
        assert!(t.contains("runs 4"), "{t}");
        assert!(t.contains("CPU microcode: 0xa -> 0xb"), "{t}");
    }
}
