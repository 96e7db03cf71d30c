//! The fleet's page: what compare found first, then every machine with its status, the mesh
//! matrix as a heat map, and per figure a strip plot of all machines with the flagged ones
//! highlighted and labelled.

use super::plots::{StripPoint, strip_plot};
use super::{escape, heat, missing, num, page as wrap, with_evidence};
use crate::judge::compare::MATRIX_MAX_MACHINES;
use crate::judge::machine::Machine;
use crate::judge::parallel;
use crate::render::fleet_table::shown;
use crate::stats::median;
use crate::wire::document::word;
use crate::wire::figures;
use crate::wire::fleet::{Finding, FleetReport, MachineStatus, Matrix};
use foldhash::fast::FixedState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

/// Figures plotted for every fleet, when machines have them (others only when flagged).
const HEADLINE: &[&str] = &[
    "memory.idle_latency.FullRandom.Node-0.Node-0",
    "memory.idle_latency.RandomInChunk.Node-0.Node-0",
    "memory.peak_bandwidth.all reads",
    "memory.peak_read_simd",
    "memory.memcpy_large",
    "sleepbench.calls_per_second",
    "sleepbench.total_cpu_pct",
    "network.bandwidth",
    "network.reverse_bandwidth",
    "ping.latency",
    "storage.read_iops_4k",
    "storage.write_mb_s_1m",
];

/// The page for a fleet report and its machines (their figures).
pub fn page(report: &FleetReport, machines: &[Machine]) -> String {
    let mut body = format!(
        "<h1>health_check fleet: {} machines</h1>\n<p class=\"meta\">{} group(s) by model &middot; rules: {} &middot; labels: {} &middot; health_check {}</p>\n",
        report.machines.len(),
        report.groups.len(),
        escape(&report.fleet_report.rules_source),
        escape(&report.fleet_report.labels),
        escape(&report.fleet_report.version)
    );
    body.push_str(&findings(report));
    body.push_str(&resolve(report));
    body.push_str(&identity(report));
    body.push_str(&machines_table(report));
    match &report.matrix {
        Some(m) => body.push_str(&matrix(m)),
        // Said on the page, not only in the docs: an operator of 300 machines looks for it here.
        None if report.machines.len() > MATRIX_MAX_MACHINES => {
            let _ = write!(
                body,
                "<h2 id=\"matrix\">Between machines</h2>\n<p>No matrix: it is drawn when 2 to \
                 {MATRIX_MAX_MACHINES} machines measured each other, and this report has {} \
                 machines. The findings above still name every slow server, client and path.</p>\n",
                report.machines.len()
            );
        }
        None => {}
    }
    body.push_str(&strips(report, machines));
    body.push_str(&groups(report));
    wrap(
        &format!("health_check fleet: {} machines", report.machines.len()),
        &body,
    )
}

fn findings(r: &FleetReport) -> String {
    let mut out = String::from("<h2 id=\"findings\">Findings</h2>\n");
    if r.findings.is_empty() {
        out.push_str(
            "<p>No machine is worse than its model's median beyond its rule's tolerance.</p>\n",
        );
        return out;
    }
    if r.findings.len() > ROWS_MAX {
        out.push_str(&grouped_findings(&r.findings));
        return out;
    }
    out.push_str("<table class=\"checks\"><tr><th>status</th><th>scope</th><th>finding</th><th>value</th><th>median</th><th>%</th></tr>\n");
    for f in &r.findings {
        let class = finding_class(f);
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td class=\"status\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            class.to_uppercase(),
            word(&f.scope),
            with_evidence(f.title(), &finding_evidence(f)),
            escape(&shown(f).0),
            escape(&shown(f).1),
            f.deviation_pct.map_or("-".into(), |d| format!("{d:+.1}")),
        );
    }
    out.push_str("</table>\n");
    out
}

/// How a finding is shown: `inconclusive`, `suspect`, or its severity.
fn finding_class(f: &Finding) -> &'static str {
    match (&f.inconclusive, &f.suspect, f.severity) {
        (Some(_), _, _) => "inconclusive",
        (None, Some(_), _) => "suspect",
        (None, None, s) => s.as_str(),
    }
}

/// What opens under a finding's headline: its evidence (a finding older than headlines shows
/// its message as the headline, and nothing under it).
fn finding_evidence(f: &Finding) -> Vec<String> {
    if f.headline.is_empty() {
        Vec::new()
    } else {
        vec![f.message.clone()]
    }
}

/// Findings past [`ROWS_MAX`] as a row per status, scope and figure family, with their count,
/// one finding's headline and evidence as the example, and every finding's headline on demand
/// (the report lists each in full): 6,000 findings of a 100,000-machine fleet were half its
/// page, more rows than a person reads.
fn grouped_findings(findings: &[Finding]) -> String {
    let mut groups: Vec<(&str, String, String, Vec<&Finding>)> = Vec::new();
    let mut index: HashMap<(&str, String, String), usize, FixedState> = HashMap::default();
    for f in findings {
        let key = finding_key(f);
        let what = figures::family_of_key(&key).map_or(key, |family| family.name.to_string());
        let group = (finding_class(f), word(&f.scope), what);
        let i = *index.entry(group.clone()).or_insert_with(|| {
            groups.push((group.0, group.1, group.2, Vec::new()));
            groups.len() - 1
        });
        groups[i].3.push(f);
    }
    let mut out = format!(
        "<p>{} findings, more than {ROWS_MAX}: a row per status, scope and figure, each \
         finding's headline on demand (the report holds each in full).</p>\n\
         <table class=\"checks\"><tr><th>status</th><th>scope</th><th>findings</th>\
         <th>figure: one finding's words</th></tr>\n",
        findings.len()
    );
    for (class, scope, what, members) in &groups {
        let example = members[0];
        let titles: Vec<String> = members.iter().map(|f| escape(f.title())).collect();
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td class=\"status\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}: {}<details class=\"evidence\"><summary>all {}</summary><div>{}</div></details></td></tr>",
            class.to_uppercase(),
            escape(scope),
            members.len(),
            escape(what),
            with_evidence(example.title(), &finding_evidence(example)),
            members.len(),
            titles.join("<br>")
        );
    }
    out.push_str("</table>\n");
    out
}

/// The measurements that would settle the suspects.
fn resolve(r: &FleetReport) -> String {
    if r.resolve.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2 id=\"resolve\">To settle the suspects</h2>\n<p>Measure these in a second round \
         (the playbook does, with <code>health_check_resolve</code>) and compare all rounds \
         together.</p>\n<table><tr><th>from</th><th>to</th><th>what it settles</th></tr>\n",
    );
    for x in &r.resolve {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&x.from),
            escape(&x.to),
            escape(&x.why)
        );
    }
    out.push_str("</table>\n");
    out
}

/// Copies, runs and identity clashes: which files were merged, dropped or doubted.
fn identity(r: &FleetReport) -> String {
    if r.identity.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2 id=\"identity\">One machine, one vote</h2>\n<table><tr><th>kind</th><th>files</th>\
         <th>what it means</th></tr>\n",
    );
    // A fleet that copied every document would list them all: the page shows the first, the
    // report keeps every one.
    const SHOWN: usize = 200;
    for n in r.identity.iter().take(SHOWN) {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            word(&n.kind),
            escape(&n.files.join(", ")),
            escape(&n.message)
        );
    }
    out.push_str("</table>\n");
    if r.identity.len() > SHOWN {
        let _ = writeln!(
            out,
            "<p>... and {} more in the report's <code>identity</code>.</p>",
            r.identity.len() - SHOWN
        );
    }
    out
}

fn status_class(s: MachineStatus) -> &'static str {
    match s {
        MachineStatus::Ok => "pass",
        MachineStatus::Alone => "skip",
        MachineStatus::Inconclusive => "inconclusive",
        MachineStatus::Suspect => "suspect",
        MachineStatus::Warn => "warn",
        MachineStatus::Fail | MachineStatus::Failed | MachineStatus::Unreadable => "fail",
    }
}

/// What needs a person first, a row each: every machine whose status is not `ok`. The machines
/// that are `ok` follow, counted and listed by name, one closed line each for those with notes
/// (a page of 10,000 machines stays a few megabytes).
fn machines_table(r: &FleetReport) -> String {
    let mut out = String::from("<h2 id=\"machines\">Machines</h2>\n");
    let mut order: Vec<&crate::wire::fleet::MachineEntry> = r
        .machines
        .iter()
        .filter(|m| m.status != MachineStatus::Ok)
        .collect();
    order.sort_by_key(|m| std::cmp::Reverse(m.status));
    if order.len() > ROWS_MAX {
        out.push_str(&grouped(&order));
    } else if !order.is_empty() {
        out.push_str("<table><tr><th>status</th><th>machine</th><th>model</th><th>figures</th><th>checks failed</th><th>notes</th></tr>\n");
    }
    for m in order.iter().filter(|_| order.len() <= ROWS_MAX) {
        let notes = notes(m);
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td class=\"status\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            status_class(m.status),
            m.status.as_str().to_uppercase(),
            escape(&m.label),
            escape(&m.sku.as_ref().map_or("unknown".into(), |s| s.label())),
            m.figures,
            escape(&m.checks_failed.join(", ")),
            notes
                .split_first()
                .map_or_else(String::new, |(first, rest)| with_evidence(first, rest))
        );
    }
    if (1..=ROWS_MAX).contains(&order.len()) {
        out.push_str("</table>\n");
    }
    let ok: Vec<&crate::wire::fleet::MachineEntry> = r
        .machines
        .iter()
        .filter(|m| m.status == MachineStatus::Ok)
        .collect();
    if ok.is_empty() {
        return out;
    }
    let (quiet, noted): (Vec<&crate::wire::fleet::MachineEntry>, Vec<_>) =
        ok.iter().partition(|m| notes(m).is_empty());
    let _ = write!(
        out,
        "<p class=\"ok-machines\"><span class=\"pass\">OK</span> {} machine(s){}</p>\n\
         <details><summary>their names</summary><p>{}</p>",
        ok.len(),
        if noted.is_empty() {
            String::new()
        } else {
            format!(", {} with notes", noted.len())
        },
        quiet
            .iter()
            .map(|m| format!("<span>{}</span>", escape(&m.label)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for m in noted {
        let notes = notes(m);
        let _ = write!(
            out,
            "<details><summary>{}</summary>{}</details>",
            escape(&m.label),
            notes
                .iter()
                .map(|n| escape(n))
                .collect::<Vec<_>>()
                .join("<br>")
        );
    }
    out.push_str("</details>\n");
    out
}

/// Machines needing a look, or findings, beyond which they are grouped (by status and what
/// decided it; by status, scope and figure), a row per group, its members named on demand: a
/// fleet where thousands fail the same check gets a page of a few lines, not of thousands of
/// rows.
const ROWS_MAX: usize = 300;

/// The machines in `order` (worst first) as a row per status and kind of first reason, with
/// the count, one machine's reason as the example, and every machine named on demand.
fn grouped(order: &[&crate::wire::fleet::MachineEntry]) -> String {
    let mut groups: Vec<(
        MachineStatus,
        String,
        Vec<&crate::wire::fleet::MachineEntry>,
    )> = Vec::new();
    let mut index: BTreeMap<(MachineStatus, String), usize> = BTreeMap::new();
    for m in order {
        let key = (m.status, reason_kind(m));
        let i = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key.0, key.1, Vec::new()));
            groups.len() - 1
        });
        groups[i].2.push(m);
    }
    let mut out = String::from(
        "<table><tr><th>status</th><th>machines</th><th>what decided it (one machine's words)</th></tr>\n",
    );
    for (status, _, members) in &groups {
        let example = members[0].reasons.first().map_or("", String::as_str);
        let names: Vec<String> = members
            .iter()
            .map(|m| format!("<span>{}</span>", escape(&m.label)))
            .collect();
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td class=\"status\">{}</td><td class=\"num\">{}</td><td>{}<details class=\"evidence\"><summary>the machines</summary><div>{}</div></details></td></tr>",
            status_class(*status),
            status.as_str().to_uppercase(),
            members.len(),
            escape(example),
            names.join(" ")
        );
    }
    out.push_str("</table>\n");
    out
}

/// What decided a machine's status, with what varies between machines left out: its first
/// reason without its own name, its numbers, or what follows the first colon after the opening
/// words (`its own check sleepbench.calls_per_thread failed`).
fn reason_kind(m: &crate::wire::fleet::MachineEntry) -> String {
    let Some(first) = m.reasons.first() else {
        return String::new();
    };
    let text = first.replace(&m.label, "");
    let head = match text.match_indices(": ").find(|(i, _)| *i > 5) {
        Some((i, _)) => &text[..i],
        None => &text,
    };
    head.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

/// A machine's notes: its reasons, the figures it lacks, those not compared, failed baseline
/// checks.
fn notes(m: &crate::wire::fleet::MachineEntry) -> Vec<String> {
    let mut notes = m.reasons.clone();
    if !m.missing_figures.is_empty() {
        notes.push(format!(
            "lacks figures others have: {}",
            by_family(&m.missing_figures)
        ));
    }
    notes.extend(m.not_compared.iter().map(|n| format!("not compared: {n}")));
    let failed_baseline = m
        .baseline_checks
        .iter()
        .filter(|c| c.status == crate::wire::document::Status::Fail)
        .count();
    if failed_baseline > 0 {
        notes.push(format!("{failed_baseline} baseline check(s) failed"));
    }
    notes
}

/// Missing figures counted by family (`memory.loaded_latency (48), ping.latency (1)`).
fn by_family(missing: &[String]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for key in missing {
        let family = figures::family_of_key(key).map_or(key.as_str(), |f| f.name);
        *counts.entry(family).or_default() += 1;
    }
    counts
        .iter()
        .map(|(f, n)| format!("{f} ({n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn matrix(m: &Matrix) -> String {
    let mut out = String::from("<h2 id=\"matrix\">Between machines</h2>\n");
    for (title, unit, cells, class) in [
        (
            "Bandwidth from row to column",
            "Gbit/s",
            &m.bandwidth_gbps,
            "bandwidth",
        ),
        (
            "Ping RTT between row and column",
            "ms",
            &m.latency_ms,
            "latency",
        ),
    ] {
        let values: Vec<f64> = cells.iter().flatten().flatten().copied().collect();
        if values.is_empty() {
            continue;
        }
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let _ = write!(
            out,
            "<h3>{title}, {unit}</h3>\n<table class=\"heat matrix\" data-matrix=\"{class}\"><tr><th></th>"
        );
        for name in &m.machines {
            let _ = write!(out, "<th>{}</th>", escape(name));
        }
        out.push_str("</tr>\n");
        for (name, row) in m.machines.iter().zip(cells) {
            let _ = write!(out, "<tr><th>{}</th>", escape(name));
            for cell in row {
                match cell {
                    // Higher bandwidth is better: dark means low, so problems stand out.
                    Some(v) if class == "bandwidth" => {
                        let _ = write!(
                            out,
                            "<td class=\"num\" style=\"{}\">{}</td>",
                            heat(hi - v + lo, lo, hi),
                            num(Some(*v))
                        );
                    }
                    Some(v) => {
                        let _ = write!(
                            out,
                            "<td class=\"num\" style=\"{}\">{}</td>",
                            heat(*v, lo, hi),
                            num(Some(*v))
                        );
                    }
                    None => out.push_str("<td class=\"num\">-</td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    out
}

/// Per key, one point per machine: its value, or the median of its clients' for per-client
/// figures. One walk over the figures for all the keys, on all CPUs a piece of the fleet at a
/// time, the points in the machines' order. A figure's key is found once per shared spec, and
/// a figure whose spec is the one at its place in the last machine is not even looked up (a
/// fleet's documents are alike): a lookup per figure was most of drawing 100,000 machines.
fn per_machine(machines: &[Machine], keys: &[String]) -> Vec<Vec<(String, f64)>> {
    struct Walk {
        key_of: HashMap<*const figures::Spec, Option<usize>, FixedState>,
        /// Per place in a machine's figures, the last spec seen there and its key.
        at_place: Vec<(*const figures::Spec, Option<usize>)>,
        values: Vec<Vec<f64>>,
    }
    let pieces = parallel::ranges(machines.len(), parallel::MACHINES_A_PIECE);
    let walked = parallel::ordered_map(
        &pieces,
        || Walk {
            key_of: HashMap::default(),
            at_place: Vec::new(),
            values: vec![Vec::new(); keys.len()],
        },
        |w, piece| {
            let mut points: Vec<(usize, String, f64)> = Vec::new();
            for m in &machines[piece.clone()] {
                for (place, f) in m.figures.iter().enumerate() {
                    let spec = Arc::as_ptr(&f.spec);
                    let k = match w.at_place.get(place) {
                        Some(&(seen, k)) if seen == spec => k,
                        _ => {
                            let k = *w
                                .key_of
                                .entry(spec)
                                .or_insert_with(|| keys.iter().position(|k| f.key_is(k)));
                            if place >= w.at_place.len() {
                                w.at_place.resize(place + 1, (std::ptr::null(), None));
                            }
                            w.at_place[place] = (spec, k);
                            k
                        }
                    };
                    if let Some(k) = k {
                        w.values[k].push(f.value);
                    }
                }
                for (k, v) in w.values.iter_mut().enumerate() {
                    if let Some(median) = median(v) {
                        points.push((k, m.entry.label.clone(), median));
                    }
                    v.clear();
                }
            }
            points
        },
    );
    let mut per_key = vec![Vec::new(); keys.len()];
    for (k, label, median) in walked.into_iter().flatten() {
        per_key[k].push((label, median));
    }
    per_key
}

/// The reference the verdicts on `key` used, when there is one: its group's median (compare's
/// statistics) and the medians its findings were judged against, if they agree. Machines of
/// several models have several references: then none is drawn (the groups' table has them).
fn reference_of(r: &FleetReport, key: &str) -> Option<f64> {
    let mut references: Vec<f64> = r
        .groups
        .iter()
        .flat_map(|g| g.figures.iter())
        .filter(|s| s.figure == key)
        .map(|s| s.median)
        .chain(
            r.findings
                .iter()
                .filter(|f| finding_key(f) == key)
                .filter_map(|f| f.median),
        )
        .collect();
    references.sort_by(f64::total_cmp);
    references.dedup();
    match references.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The figure key a finding is about (its client, or `.*`, left off).
fn finding_key(f: &crate::wire::fleet::Finding) -> String {
    let key = f.figure.trim_end_matches(".*");
    match &f.client {
        Some(c) => key
            .strip_suffix(&format!(".{c}"))
            .unwrap_or(key)
            .to_string(),
        None => key.to_string(),
    }
}

fn strips(r: &FleetReport, machines: &[Machine]) -> String {
    let mut out = String::from("<h2 id=\"figures\">Figures across the fleet</h2>\n");
    // Keys with findings first, then the headline figures.
    let flagged: BTreeMap<String, BTreeSet<&str>> =
        r.findings.iter().fold(BTreeMap::new(), |mut acc, f| {
            acc.entry(finding_key(f))
                .or_default()
                .insert(f.machine.as_str());
            acc
        });
    let mut keys: Vec<String> = flagged.keys().cloned().collect();
    for h in HEADLINE {
        if !keys.iter().any(|k| k == h) {
            keys.push(h.to_string());
        }
    }
    let mut plots = String::new();
    for (key, points) in keys.iter().zip(per_machine(machines, &keys)) {
        if points.len() < 2 {
            continue;
        }
        let Some(family) = figures::family_of_key(key) else {
            continue;
        };
        let marked = flagged.get(key);
        let strip: Vec<StripPoint> = points
            .into_iter()
            .map(|(label, value)| StripPoint {
                flagged: marked.is_some_and(|m| m.contains(label.as_str())),
                label,
                value,
            })
            .collect();
        let better = match family.direction {
            figures::Direction::Higher => "higher is better",
            figures::Direction::Lower => "lower is better",
        };
        if let Some(p) = strip_plot(
            &format!("strip:{key}"),
            &format!("{key} ({better})"),
            family.unit,
            &strip,
            reference_of(r, key),
        ) {
            plots.push_str(&p.html);
        }
    }
    if plots.is_empty() {
        out.push_str(&missing(
            "No strip plot",
            "fewer than two machines share a figure",
        ));
    } else {
        let _ = writeln!(out, "<div class=\"plots\">{plots}</div>");
    }
    out
}

fn groups(r: &FleetReport) -> String {
    let mut out = String::from(
        "<h2 id=\"groups\">Models</h2>\n<table><tr><th>model</th><th>machines</th><th>figures compared</th></tr>\n",
    );
    for g in &r.groups {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&g.label),
            g.machines.len(),
            g.figures.len()
        );
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(machines: usize) -> FleetReport {
        FleetReport {
            machines: (0..machines)
                .map(|i| Machine::measured_only(&format!("m{i}")).entry)
                .collect(),
            ..FleetReport::default()
        }
    }

    #[test]
    fn above_the_matrix_limit_the_page_says_why_there_is_none() {
        let big = page(&report(MATRIX_MAX_MACHINES + 1), &[]);
        assert!(
            big.contains(
                "No matrix: it is drawn when 2 to 256 machines measured each other, and this \
                 report has 257 machines"
            ),
            "{big}"
        );
        assert!(!page(&report(3), &[]).contains("No matrix"));
    }

    /// Thousands of machines failing the same check are one row with their count and their
    /// names on demand; the healthy ones are counted and named, not a row each.
    #[test]
    fn many_machines_alike_are_a_row_not_thousands() {
        let mut r = report(2_000);
        for (i, m) in r.machines.iter_mut().enumerate() {
            if i < 1_500 {
                m.status = MachineStatus::Fail;
                m.reasons = vec![format!(
                    "its own check sleepbench.calls_per_thread failed: {} calls/s per thread",
                    9_000 + i
                )];
            } else if i < 1_600 {
                m.status = MachineStatus::Suspect;
                m.reasons = vec![format!(
                    "{}<->x: network.bandwidth 1.2 vs 9.4 Gbit/s",
                    m.label
                )];
            } else {
                m.status = MachineStatus::Ok;
            }
        }
        let html = machines_table(&r);
        assert_eq!(html.matches("<tr class=").count(), 2, "{}", &html[..2000]);
        assert!(html.contains("<td class=\"num\">1500</td>"));
        assert!(html.contains("<td class=\"num\">100</td>"));
        assert!(html.contains("400 machine(s)"));
        assert!(html.len() < 200_000, "{}", html.len());
        // Fewer than the limit: a row each.
        let mut r = report(10);
        r.machines[0].status = MachineStatus::Fail;
        assert_eq!(machines_table(&r).matches("<tr class=").count(), 1);
    }

    /// The points the walk on all CPUs gives are those of spelling every figure's key, machine
    /// by machine: machines in several pieces, their figures in differing orders (so the spec
    /// at a place changes), per-client figures taken as their median, figures of no key and
    /// machines without a key's figure left out.
    #[test]
    fn strips_points_are_those_of_every_figures_spelled_key() {
        use crate::wire::figures::{BANDWIDTH, CALLS, Figure, PEAK_BANDWIDTH, READ_IOPS, Spec};
        let spec = |family, labels: &[&str], basis: &str| {
            Spec::shared(family, figures::labels(labels), figures::basis(basis))
        };
        let pool = [
            spec(&CALLS, &[], "a"),
            spec(&CALLS, &[], "b"),
            spec(&PEAK_BANDWIDTH, &["all reads"], "a"),
            spec(&PEAK_BANDWIDTH, &["1:1 read/write"], "a"),
            spec(&BANDWIDTH, &["c1"], "a"),
            spec(&BANDWIDTH, &["c2"], "a"),
            spec(&BANDWIDTH, &["c3"], "a"),
            spec(&READ_IOPS, &[], "a"),
        ];
        let n = 2 * parallel::MACHINES_A_PIECE + 77;
        let machines: Vec<Machine> = (0..n)
            .map(|i| {
                let mut m = Machine::measured_only(&format!("m{i}"));
                let mut specs: Vec<&Arc<Spec>> = pool.iter().collect();
                specs.rotate_left(i % pool.len());
                specs.retain(|_| i % 5 != 0 || i % 3 == 0);
                m.figures = specs
                    .into_iter()
                    .enumerate()
                    .filter(|(j, _)| (i + j) % 7 != 0)
                    .map(|(j, s)| Figure {
                        spec: s.clone(),
                        value: (i * 31 + j * 17) as f64 % 101.0,
                    })
                    .collect();
                m
            })
            .collect();
        let keys: Vec<String> = [
            "sleepbench.calls_per_second",
            "memory.peak_bandwidth.all reads",
            "network.bandwidth",
            "nothing.at_all",
        ]
        .map(String::from)
        .to_vec();
        let spelled: Vec<Vec<(String, f64)>> = keys
            .iter()
            .map(|k| {
                machines
                    .iter()
                    .filter_map(|m| {
                        let v: Vec<f64> = m
                            .figures
                            .iter()
                            .filter(|f| f.key() == *k)
                            .map(|f| f.value)
                            .collect();
                        median(&v).map(|x| (m.entry.label.clone(), x))
                    })
                    .collect()
            })
            .collect();
        let walked = per_machine(&machines, &keys);
        assert_eq!(walked, spelled);
        assert!(walked[..3].iter().all(|points| points.len() > n / 2));
        assert!(walked[3].is_empty());
    }

    /// Past 300 findings, a row per status, scope and figure family with its count, one
    /// finding's words and evidence, and every finding's headline on demand; up to 300, a row
    /// each as before.
    #[test]
    fn many_findings_are_a_row_per_kind_with_every_one_on_demand() {
        use crate::wire::fleet::{FactDrift, Scope};
        use crate::wire::rule::Severity;
        let finding = |i: usize| {
            let drift = i % 3 == 0;
            let mut f = Finding {
                machine: format!("m{i}"),
                figure: if drift {
                    "drift.kernel.release".into()
                } else {
                    format!("network.bandwidth.c{i}")
                },
                client: (!drift).then(|| format!("c{i}")),
                scope: Scope::Machine,
                link: None,
                members: None,
                value: (!drift).then_some(5.0),
                median: (!drift).then_some(20.0),
                fact: drift.then(|| FactDrift {
                    name: "kernel.release".into(),
                    value: "6.1".into(),
                    majority: "6.8".into(),
                    agree: 9,
                    of: 10,
                }),
                unit: "Gbit/s".into(),
                deviation_pct: None,
                robust_z: None,
                severity: if drift {
                    Severity::Warn
                } else {
                    Severity::Fail
                },
                inconclusive: None,
                suspect: None,
                headline: String::new(),
                message: format!("evidence of m{i}"),
            };
            f.headline = crate::wire::headline::of(&f);
            f
        };
        let mut r = report(3);
        r.findings = (0..ROWS_MAX + 1).map(finding).collect();
        let html = findings(&r);
        assert_eq!(html.matches("<tr class=").count(), 2, "{html}");
        assert!(html.contains(&format!(
            "<td class=\"num\">{}</td>",
            2 * (ROWS_MAX + 1) / 3
        )));
        assert!(
            html.contains("network.bandwidth: m1: network.bandwidth.c1 5 vs 20"),
            "{html}"
        );
        assert!(html.contains("evidence of m1<"), "{html}");
        for i in 0..=ROWS_MAX {
            assert!(html.contains(&format!("m{i}: ")), "m{i} is not on the page");
        }
        r.findings.truncate(ROWS_MAX);
        assert_eq!(findings(&r).matches("<tr class=").count(), ROWS_MAX);
    }
}
