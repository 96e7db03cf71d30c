//! A machine's past as a page (`health_check history --html`, `report --history`): one plot per
//! figure over its runs, with the reference its last run was judged against drawn (the history
//! judge's own), the runs where the configuration changed marked, and the runs whose verdict on
//! the figure was a warning or a failure listed.

use super::plots::{LineChart, Reference, Series, line_chart};
use super::{escape, missing, utc};
use crate::units::number;
use crate::wire::check::Status;
use crate::wire::history::{FactChange, HistoryReport, Trend};
use std::fmt::Write as _;

/// The whole page.
pub fn page(r: &HistoryReport) -> String {
    let hosts: std::collections::BTreeSet<String> = r
        .runs
        .iter()
        .map(|x| x.hostname.clone().unwrap_or_else(|| x.machine.clone()))
        .collect();
    let title = format!(
        "health_check history: {}",
        hosts.into_iter().collect::<Vec<_>>().join(", ")
    );
    let mut body = format!("<h1>{}</h1>\n", escape(&title));
    match (r.runs.first(), r.runs.last()) {
        (Some(a), Some(b)) => {
            let _ = writeln!(
                body,
                "<p class=\"meta\">{} run(s) from {} to {} &middot; {}</p>",
                r.runs.len(),
                escape(&utc(a.started_unix)),
                escape(&utc(b.started_unix)),
                escape(&r.file)
            );
        }
        _ => body.push_str(&missing("No runs", "the history holds no run that matches")),
    }
    body.push_str(&section(&r.figures, &r.changes));
    super::page(&title, &body)
}

/// The trends and the changes, as a part of a page.
pub fn section(
    figures: &std::collections::BTreeMap<String, Trend>,
    changes: &[FactChange],
) -> String {
    let mut out = String::from("<h2 id=\"history\">History</h2>\n");
    if !changes.is_empty() {
        out.push_str(
            "<table><tr><th>when</th><th>runs</th><th>fact</th><th>from</th><th>to</th></tr>\n",
        );
        for c in changes {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{} &rarr; {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&utc(c.started_unix)),
                c.run_before,
                c.run_after,
                escape(&crate::wire::counters::fact_label(&c.fact)),
                escape(c.from.as_deref().unwrap_or("(none)")),
                escape(c.to.as_deref().unwrap_or("(none)"))
            );
        }
        out.push_str("</table>\n");
    }
    if figures.is_empty() {
        out.push_str(&missing(
            "No figures",
            "no figure was recorded in the runs selected",
        ));
    }
    for (i, (name, t)) in figures.iter().enumerate() {
        out.push_str(&plot(i, name, t, changes));
    }
    out
}

fn plot(i: usize, name: &str, t: &Trend, changes: &[FactChange]) -> String {
    let x = |run: i64| run as f64;
    let mut horizontal = Vec::new();
    // The reference the last run was judged against, not a median of every run drawn.
    if let Some(r) = crate::render::trends::latest_reference(t) {
        horizontal.push(Reference {
            at: r.median,
            label: format!("reference {} (last {} runs)", number(r.median), r.runs),
        });
    }
    let runs: std::collections::BTreeSet<i64> = t.points.iter().map(|p| p.run).collect();
    let vertical: Vec<Reference> = changes
        .iter()
        .filter(|c| runs.contains(&c.run_after))
        .map(|c| Reference {
            at: x(c.run_after),
            label: crate::wire::counters::fact_label(&c.fact),
        })
        .collect();
    let chart = LineChart {
        id: format!("history-{i}"),
        title: format!(
            "{name} ({}, {} is better)",
            t.unit,
            crate::wire::document::word(&t.direction)
        ),
        x_label: "run".into(),
        y_label: t.unit.clone(),
        x_log: false,
        series: vec![Series {
            name: name.to_string(),
            points: t.points.iter().map(|p| (x(p.run), p.value)).collect(),
        }],
        horizontal,
        vertical,
    };
    let mut out = line_chart(&chart).map(|p| p.html).unwrap_or_default();
    let flagged: Vec<String> = t
        .points
        .iter()
        .filter_map(|p| match p.status {
            Some(s @ (Status::Warn | Status::Fail)) => Some(format!(
                "run {} ({}, {})",
                p.run,
                s.as_str(),
                number(p.value)
            )),
            _ => None,
        })
        .collect();
    if !flagged.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">flagged against the machine's past: {}</p>",
            escape(&flagged.join("; "))
        );
    }
    let noisy = t.points.iter().filter(|p| p.noisy).count();
    if noisy > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{noisy} run(s) measured under interference (left out of references)</p>"
        );
    }
    out
}
