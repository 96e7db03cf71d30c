//! Prometheus text exposition format (0.0.4), for node_exporter's textfile collector: every figure
//! as a gauge with its labels (`health_check_memory_idle_latency_ns{pattern="FullRandom",
//! cpu_node="0",mem_node="0"}`), each check's status, each section's outcome, and the run's start
//! time and duration. With `--output` the file is written atomically, so the collector never reads
//! half of it.

use crate::wire::document::{Document, SectionOutcome, Status, word};
use crate::wire::figures::{self, FAMILIES, Figure};
use crate::wire::fleet::{FleetReport, IdentityKind, MachineStatus};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Prefix of every metric.
pub const PREFIX: &str = "health_check_";

/// Escapes a label value: backslash, double quote and newline.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "NaN".into()
    }
}

/// Metrics gathered by name, so each family's HELP and TYPE come once, before its samples.
/// A series whose labels repeat (a document naming two checks alike) gets a `duplicate` label,
/// so no series is written twice (node_exporter would drop the whole file).
#[derive(Default)]
struct Exposition {
    families: BTreeMap<String, (String, Vec<String>)>,
    seen: std::collections::HashMap<String, usize>,
}

impl Exposition {
    fn gauge(&mut self, name: &str, help: &str, label_pairs: &[(&str, &str)], value: f64) {
        let full = format!("{PREFIX}{name}");
        let mut series = format!("{full}{}", labels(label_pairs));
        let n = self.seen.entry(series.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            let mut pairs = label_pairs.to_vec();
            let count = n.to_string();
            pairs.push(("duplicate", &count));
            series = format!("{full}{}", labels(&pairs));
        }
        let entry = self
            .families
            .entry(full)
            .or_insert_with(|| (help.to_string(), Vec::new()));
        entry.1.push(format!("{series} {}", number(value)));
    }

    fn text(self) -> String {
        let mut out = String::new();
        for (name, (help, samples)) in self.families {
            let _ = writeln!(
                out,
                "# HELP {name} {}",
                help.replace('\\', "\\\\").replace('\n', " ")
            );
            let _ = writeln!(out, "# TYPE {name} gauge");
            for s in samples {
                out.push_str(&s);
                out.push('\n');
            }
        }
        out
    }
}

/// One figure as a gauge in its base unit, with `extra` labels first.
fn figure_gauge(e: &mut Exposition, f: &Figure, extra: &[(&str, &str)]) {
    let owned = figure_labels(f);
    let mut pairs: Vec<(&str, &str)> = extra.to_vec();
    pairs.extend(owned.iter().map(|(k, v)| (*k, v.as_str())));
    let help = format!("{} ({})", f.family.help, f.family.unit_note());
    e.gauge(
        f.family.prometheus,
        &help,
        &pairs,
        f.value * f.family.prometheus_scale,
    );
}

/// A figure's labels for Prometheus: node labels without the `Node-` prefix.
fn figure_labels(f: &Figure) -> Vec<(&'static str, String)> {
    f.family
        .labels
        .iter()
        .zip(f.labels.iter())
        .map(|(&name, value)| {
            let v = if name.ends_with("_node") {
                value.strip_prefix("Node-").unwrap_or(value).to_string()
            } else {
                value.clone()
            };
            (name, v)
        })
        .collect()
}

fn status_value(s: Status) -> f64 {
    match s {
        Status::Pass => 0.0,
        Status::Warn => 1.0,
        Status::Fail => 2.0,
        Status::Skip => 3.0,
        Status::Inconclusive => 4.0,
    }
}

/// One run's figures, checks and sections as Prometheus text.
pub fn document(doc: &Document) -> String {
    let mut e = Exposition::default();
    let host = doc
        .system()
        .and_then(|s| s.hostname.clone())
        .unwrap_or_default();
    let info = &doc.health_check;
    e.gauge(
        "info",
        "health_check's version, role and profile (value 1)",
        &[
            ("version", &info.version),
            ("role", &word(&info.role)),
            ("profile", &word(&info.profile)),
            ("hostname", &host),
        ],
        1.0,
    );
    e.gauge(
        "run_timestamp_seconds",
        "when the run started, seconds since the Unix epoch",
        &[],
        info.started_unix as f64,
    );
    e.gauge(
        "run_duration_seconds",
        "how long the run took",
        &[],
        info.seconds,
    );
    e.gauge(
        "health",
        "the run's verdict as Slurm and node-problem-detector act on it: 0 healthy, 1 failing \
         (a check failed or a section failed to run), 2 inconclusive",
        &[],
        f64::from(crate::judge::health::of(doc).code()),
    );
    for (section, outcome) in &info.sections.0 {
        e.gauge(
            "section_ok",
            "1 when the section ran to the end, 0 when it failed, was interrupted or skipped",
            &[
                ("section", section.name()),
                ("outcome", outcome_word(outcome)),
            ],
            f64::from(u8::from(*outcome == SectionOutcome::Ok)),
        );
    }
    for c in &doc.checks {
        e.gauge(
            "check_status",
            "each check's verdict: 0 pass, 1 warn, 2 fail, 3 skip, 4 inconclusive",
            &[
                ("check", &c.name.to_string()),
                ("status", c.status.as_str()),
            ],
            status_value(c.status),
        );
    }
    for f in figures::of_document(doc).figures {
        figure_gauge(&mut e, &f, &[]);
    }
    e.text()
}

fn outcome_word(o: &SectionOutcome) -> &'static str {
    match o {
        SectionOutcome::Ok => "ok",
        SectionOutcome::Interrupted => "interrupted",
        SectionOutcome::Skipped(_) => "skipped",
        SectionOutcome::Failed(_) => "failed",
    }
}

/// A fleet report as Prometheus text: each machine's status, its missing and not-compared
/// figures, and each finding.
pub fn fleet(r: &FleetReport) -> String {
    let mut e = Exposition::default();
    e.gauge(
        "fleet_report_timestamp_seconds",
        "when the fleet report was made, seconds since the Unix epoch",
        &[],
        r.fleet_report.generated_unix as f64,
    );
    let codes: Vec<String> = MachineStatus::ALL
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{i} {}", s.as_str()))
        .collect();
    let status_help = format!("each machine's verdict: {}", codes.join(", "));
    for m in &r.machines {
        let code = MachineStatus::ALL
            .iter()
            .position(|s| *s == m.status)
            .unwrap_or_default();
        e.gauge(
            "fleet_machine_status",
            &status_help,
            &[("machine", &m.label), ("status", m.status.as_str())],
            code as f64,
        );
        e.gauge(
            "fleet_machine_missing_figures",
            "figures the machine's model group has and it lacks",
            &[("machine", &m.label)],
            m.missing_figures.len() as f64,
        );
        e.gauge(
            "fleet_machine_not_compared_figures",
            "figures of the machine measured otherwise than its group's, so not compared",
            &[("machine", &m.label)],
            m.not_compared.len() as f64,
        );
    }
    // What counting one vote per machine did, every kind always (0 where none): a clash is a
    // reason to look before trusting the fleet's medians.
    for (kind, name) in [
        (IdentityKind::Clash, "clash"),
        (IdentityKind::Duplicate, "duplicate"),
        (IdentityKind::Runs, "runs"),
        (IdentityKind::Ignored, "ignored"),
    ] {
        e.gauge(
            "fleet_identity_notes",
            "what counting one vote per machine did: clashes of identity, copies counted once, \
             machines of several runs pooled, second-round documents ignored",
            &[("kind", name)],
            r.identity.iter().filter(|n| n.kind == kind).count() as f64,
        );
    }
    for f in &r.findings {
        let scope = word(&f.scope);
        let inconclusive = if f.inconclusive.is_some() { "1" } else { "0" };
        let suspect = if f.suspect.is_some() { "1" } else { "0" };
        e.gauge(
            "fleet_finding_deviation_ratio",
            "how far a flagged figure is from its group's median, as a share of the median",
            &[
                ("machine", &f.machine),
                ("figure", &f.figure),
                ("scope", &scope),
                ("severity", f.severity.as_str()),
                ("inconclusive", inconclusive),
                ("suspect", suspect),
            ],
            f.deviation_pct.map_or(f64::NAN, |d| d / 100.0),
        );
    }
    e.text()
}

/// Every metric name this module can write (for the tests and the docs).
pub fn metric_names() -> Vec<String> {
    let mut names: Vec<String> = FAMILIES
        .iter()
        .map(|f| format!("{PREFIX}{}", f.prometheus))
        .collect();
    for n in [
        "info",
        "run_timestamp_seconds",
        "run_duration_seconds",
        "health",
        "section_ok",
        "check_status",
        "fleet_report_timestamp_seconds",
        "fleet_machine_status",
        "fleet_machine_missing_figures",
        "fleet_machine_not_compared_figures",
        "fleet_finding_deviation_ratio",
        "fleet_identity_notes",
    ] {
        names.push(format!("{PREFIX}{n}"));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_nodes_are_numbers_and_units_are_base_units() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let f = Figure::new(
            &figures::IDLE_LATENCY,
            vec!["FullRandom".into(), "Node-0".into(), "Node-3".into()],
            120.5,
            std::sync::Arc::from("profile=standard"),
        )
        .unwrap();
        let mut e = Exposition::default();
        figure_gauge(&mut e, &f, &[]);
        let text = e.text();
        let series = "health_check_memory_idle_latency_seconds{pattern=\"FullRandom\",cpu_node=\"0\",mem_node=\"3\"} ";
        let value: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(series))
            .unwrap_or_else(|| panic!("{text}"))
            .parse()
            .unwrap();
        assert!((value - 120.5e-9).abs() < 1e-15, "{value}");
        assert!(text.starts_with("# HELP health_check_memory_idle_latency_seconds "));
        for f in FAMILIES {
            for bad in [
                "_ns", "_ms", "_us", "_mb_s", "_gbps", "_mibps", "_percent", "_pct",
            ] {
                assert!(!f.prometheus.ends_with(bad), "{}", f.prometheus);
            }
        }
    }

    #[test]
    fn a_repeated_series_is_told_apart() {
        let mut e = Exposition::default();
        e.gauge("check_status", "h", &[("check", "a")], 0.0);
        e.gauge("check_status", "h", &[("check", "a")], 2.0);
        let text = e.text();
        assert!(
            text.contains("health_check_check_status{check=\"a\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("health_check_check_status{check=\"a\",duplicate=\"2\"} 2\n"),
            "{text}"
        );
    }
}
