//! The HTML report: one self-contained page (inline CSS and SVG; no script, font or image is
//! fetched from anywhere) for people reviewing a machine or a rack. One document gives the
//! machine's page (verdicts first, then memory, network, sleep, storage and the system); several
//! give the fleet's (findings first, then machines, the mesh matrix and strip plots).
//! Whatever a document lacks (a failed section, an interrupted run) is said where it would be.

mod fleet_page;
pub mod plots;
mod single;
pub mod trends;

pub use crate::units::utc;
pub use fleet_page::page as fleet_page;
pub use single::page as machine_page;

use crate::wire::document::{Check, Status};
use std::fmt::Write as _;

/// Escapes text for HTML (element content and quoted attributes).
pub fn escape(text: &str) -> String {
    let text = super::text::terminal_safe(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub use super::text::shorten as short;

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0 auto; max-width: 1240px; padding: 16px 20px; color: #111; background: #fff; }
h1 { font-size: 1.5em; margin: 0.2em 0; } h2 { font-size: 1.2em; border-bottom: 2px solid #ccc; padding-bottom: 3px; margin-top: 1.6em; }
h3 { font-size: 1.02em; margin: 1em 0 0.4em; }
.meta { color: #444; font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.4em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 3px 7px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
details.evidence summary { color: #444; font-size: 0.9em; cursor: pointer; }
details.evidence div { color: #333; font-size: 0.92em; margin-top: 2px; }
p.ok-machines + details span { display: inline-block; margin-right: 0.7em; }
th { background: #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.status { font-weight: bold; white-space: nowrap; }
tr.fail td.status, span.fail { background: #f6c6c0; color: #7a1500; }
tr.warn td.status, span.warn { background: #fbe3b0; color: #6b4300; }
tr.pass td.status, span.pass { background: #d5ecd5; color: #1d4d1d; }
tr.skip td.status, span.skip { background: #e4e4e4; color: #333; }
tr.inconclusive td.status, span.inconclusive { background: #d9e8f5; color: #1b3d5c; }
tr.suspect td.status, span.suspect { background: #efe3f7; color: #4a2763; }
span.fail, span.warn, span.pass, span.skip, span.inconclusive, span.suspect { padding: 0 4px; font-weight: bold; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
figure.plot { margin: 0; border: 1px solid #ddd; padding: 4px; width: 600px; }
figure.plot svg { display: block; }
figcaption { font-size: 0.85em; color: #333; padding: 2px 4px; }
.key { margin-right: 12px; white-space: nowrap; } .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; border: 1px solid #333; }
.missing { border-left: 4px solid #999; background: #f4f4f4; padding: 6px 10px; margin: 0.6em 0; }
.heat td.num { min-width: 60px; }
.note { color: #444; }
@media print { figure.plot { break-inside: avoid; } body { max-width: none; } }
";

/// `head`, with `evidence` under it, shown on demand (a closed `<details>`); both escaped.
pub fn with_evidence(head: &str, evidence: &[String]) -> String {
    if evidence.is_empty() {
        return escape(head);
    }
    let lines: Vec<String> = evidence.iter().map(|e| escape(e)).collect();
    format!(
        "{}<details class=\"evidence\"><summary>evidence</summary><div>{}</div></details>",
        escape(head),
        lines.join("<br>")
    )
}

/// The page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n",
        escape(title)
    )
}

/// A status word, coloured (and readable without colour).
pub fn status_word(s: Status) -> String {
    format!(
        "<span class=\"{0}\">{1}</span>",
        s.as_str(),
        s.as_str().to_uppercase()
    )
}

/// A figure for a table cell, or `-`.
pub fn num(v: Option<f64>) -> String {
    v.map_or("-".to_string(), crate::render::fleet_table::number)
}

/// The verdict table: failures first, then warnings, skips and passes, with their messages.
pub fn checks_table(checks: &[Check]) -> String {
    if checks.is_empty() {
        return "<p class=\"missing\">No checks: no section produced a figure to judge.</p>".into();
    }
    let mut sorted: Vec<&Check> = checks.iter().collect();
    sorted.sort_by_key(|c| c.status.urgency());
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    let mut out = format!(
        "<p>{} {} &middot; {} {} &middot; {} {} &middot; {} {}</p>",
        status_word(Status::Fail),
        count(Status::Fail),
        status_word(Status::Warn),
        count(Status::Warn),
        status_word(Status::Pass),
        count(Status::Pass),
        status_word(Status::Skip),
        count(Status::Skip)
    );
    out.push_str(
        "<table class=\"checks\"><tr><th>status</th><th>check</th><th>value</th><th>limit</th><th>message</th></tr>\n",
    );
    for c in sorted {
        let _ = writeln!(
            out,
            "<tr class=\"{0}\"><td class=\"status\">{1}</td><td>{2}</td><td class=\"num\">{3}</td><td class=\"num\">{4}</td><td>{5}</td></tr>",
            c.status.as_str(),
            c.status.as_str().to_uppercase(),
            escape(&c.name.to_string()),
            num(c.value),
            num(c.limit),
            escape(&c.message)
        );
    }
    out.push_str("</table>\n");
    out
}

/// A two-column table of facts.
pub fn facts(rows: &[(&str, String)]) -> String {
    let mut out = String::from("<table class=\"facts\">\n");
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    out.push_str("</table>\n");
    out
}

/// A note that something is not there, and why.
pub fn missing(what: &str, why: &str) -> String {
    format!(
        "<p class=\"missing\">{}: {}</p>\n",
        escape(what),
        escape(why)
    )
}

/// Background for a heat-table cell: light for the smallest value, dark for the largest (the
/// text stays readable: it turns white on the darkest cells).
pub fn heat(value: f64, lo: f64, hi: f64) -> String {
    let t = if hi > lo {
        ((value - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let shade = (235.0 - 175.0 * t) as u8;
    let text = if t > 0.6 { "#fff" } else { "#000" };
    format!(
        "background: rgb({shade},{},{}); color: {text}",
        shade.saturating_add(8),
        255
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_cut() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(short("abcdef", 4), "abc~");
        assert_eq!(short("abc", 4), "abc");
    }
}
