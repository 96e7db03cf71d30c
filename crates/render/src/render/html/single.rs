//! One machine's page: the verdicts first, then each section's plots and tables, then the
//! system's facts. A section without figures says why instead.

use super::plots::{
    self, BarChart, BarGroup, LineChart, Reference, Segment, Series, bar_chart, line_chart,
    stacked_bar,
};
use super::{checks_table, escape, facts, heat, missing, num};
use crate::units::{format_binary_size, utc};
use crate::wire::document::{Document, NotMeasured, Part, Section, SectionOutcome, word};
use crate::wire::history::HistoryReport;
use crate::wire::memory::MemoryPart;
use crate::wire::storage::StoragePart;
use crate::wire::system::SystemPart;
use std::fmt::Write as _;

/// The page for one document; `source` names the file it came from. With the machine's
/// `history`, its trends follow the verdicts' sections.
pub fn page(doc: &Document, source: &str, history: Option<&HistoryReport>) -> String {
    let host = doc
        .system()
        .and_then(|s| s.hostname.clone())
        .unwrap_or_else(|| source.to_string());
    let info = &doc.health_check;
    let mut body = format!(
        "<h1>health_check: {}</h1>\n<p class=\"meta\">{} role, {} profile &middot; started {} &middot; {:.1} s &middot; health_check {} &middot; from {}</p>\n",
        escape(&host),
        escape(&word(&info.role)),
        escape(&word(&info.profile)),
        escape(&utc(info.started_unix)),
        info.seconds,
        escape(&info.version),
        escape(source)
    );
    if let Some(sig) = &info.interrupted_by {
        body.push_str(&missing(
            "Interrupted",
            &format!(
                "{} ended the run early; the figures below are what was measured before it",
                word(sig)
            ),
        ));
    }
    body.push_str("<h2 id=\"verdicts\">Verdicts</h2>\n");
    body.push_str(&checks_table(&doc.checks));
    body.push_str(&sections(doc));
    body.push_str(&memory(doc));
    body.push_str(&network(doc));
    body.push_str(&sleep(doc));
    body.push_str(&storage(doc));
    if let Some(h) = history {
        body.push_str(&super::trends::section(&h.figures, &h.changes));
    }
    body.push_str(&system(doc));
    body.push_str(&every_figure(doc));
    super::page(&format!("health_check: {host}"), &body)
}

/// Every figure the document has, one row each, from the family table (`wire::figures`): what
/// the judges compare and the exports carry, so no figure is on them and not here. The sections
/// above tell the story; this is the list, closed until opened.
fn every_figure(doc: &Document) -> String {
    let extracted = crate::wire::figures::of_document(doc);
    if extracted.figures.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2 id=\"figures\">Every figure</h2>\n<details><summary>{} figures, as compare, \
         baseline and the exports read them</summary>\n<table><tr><th>figure</th><th>value</th>\
         <th>what it is</th></tr>\n",
        extracted.figures.len()
    );
    for f in &extracted.figures {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{} {}</td><td>{}</td></tr>",
            escape(&f.name()),
            crate::units::number(f.value),
            escape(f.family.unit),
            escape(f.family.help)
        );
    }
    out.push_str("</table>\n</details>\n");
    out
}

fn sections(doc: &Document) -> String {
    let mut out = String::from(
        "<h2 id=\"sections\">Sections</h2>\n<table><tr><th>section</th><th>outcome</th></tr>\n",
    );
    for (name, outcome) in &doc.health_check.sections.0 {
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td>{}</td><td class=\"status\">{}</td></tr>",
            outcome.status().as_str(),
            name,
            escape(&outcome.to_wire())
        );
    }
    out.push_str("</table>\n");
    out
}

/// Why a section has no figures, from the document.
fn absent<T>(part: &Option<Part<T>>, section: Section, doc: &Document) -> Option<String> {
    match part {
        Some(Part::Measured(_)) => None,
        Some(Part::NotMeasured(NotMeasured { skipped, error })) => Some(missing(
            "No figures",
            error
                .as_deref()
                .or(skipped.as_deref())
                .unwrap_or("not measured"),
        )),
        None => Some(missing(
            "Not in this document",
            &match doc.health_check.sections.get(section) {
                Some(SectionOutcome::Skipped(why)) => format!("skipped: {why}"),
                Some(o) => o.to_wire(),
                None => "the run did not plan this section".to_string(),
            },
        )),
    }
}

fn memory(doc: &Document) -> String {
    let mut out = String::from("<h2 id=\"memory\">Memory</h2>\n");
    if let Some(why) = absent(&doc.memory, Section::Memory, doc) {
        out.push_str(&why);
        return out;
    }
    let Some(m) = doc.memory() else { return out };
    let mut plots_html = String::new();
    if let Some(p) = loaded_latency(m) {
        plots_html.push_str(&p.html);
    } else {
        out.push_str(&missing("Loaded latency", "the sweep was not measured"));
    }
    if let Some(p) = cache_curve(m) {
        plots_html.push_str(&p.html);
    }
    let _ = writeln!(out, "<div class=\"plots\">{plots_html}</div>");
    out.push_str(&idle_tables(m));
    let mut rows: Vec<(&str, String)> = m
        .peak_bandwidth_mb_s
        .iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                format!("{} MiB/s", crate::render::fleet_table::number(*v)),
            )
        })
        .collect();
    // The kernel, and where several were tried, what each read (the fastest was kept).
    let trial: Vec<String> = m
        .simd_kernel_trial_mb_s
        .iter()
        .map(|(k, v)| format!("{k} {}", crate::render::fleet_table::number(*v)))
        .collect();
    let simd = format!(
        "{} MiB/s ({}{})",
        num(m.peak_read_simd_mb_s),
        m.simd_kernel.as_deref().unwrap_or("-"),
        if trial.is_empty() {
            String::new()
        } else {
            format!(", fastest in a trial of {} MiB/s", trial.join(", "))
        }
    );
    rows.push(("vector reads", simd));
    rows.push((
        "memcpy 16 KiB",
        format!("{} MiB/s", num(m.memcpy_medium_mb_s)),
    ));
    rows.push((
        "memcpy 128 MiB",
        format!("{} MiB/s", num(m.memcpy_large_mb_s)),
    ));
    rows.push((
        "regions",
        format!(
            "{} MiB chain, {} MiB per thread, {} threads, {} repeat(s)",
            m.region_mib, m.thread_region_mib, m.threads, m.repeats.count
        ),
    ));
    let pages: Vec<String> = m
        .page_size
        .idle_latency
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    rows.push(("pages (idle latency)", pages.join(", ")));
    out.push_str("<h3>Peak bandwidth</h3>\n");
    out.push_str(&facts(&rows));
    for e in &m.errors {
        out.push_str(&missing("Part not measured", e));
    }
    for n in &m.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(n));
    }
    out
}

fn loaded_latency(m: &MemoryPart) -> Option<plots::Plot> {
    let series: Vec<Series> = m
        .delay_latency_bandwidth
        .iter()
        .map(|(pattern, rows)| Series {
            name: pattern.clone(),
            points: rows.iter().map(|&(_, gib_s, ns)| (gib_s, ns)).collect(),
        })
        .collect();
    // The idle latency of the chaser's own node, for each pattern: the curve starts there.
    let horizontal = m
        .idle_latency
        .patterns
        .iter()
        .filter(|(p, _)| m.delay_latency_bandwidth.contains_key(*p))
        .filter_map(|(p, matrix)| {
            let (cpu, row) = matrix.iter().next()?;
            let ns = *row.get(cpu)?;
            Some(Reference {
                at: ns,
                label: format!("idle {p} {ns} ns"),
            })
        })
        .collect();
    line_chart(&LineChart {
        id: "loaded-latency".into(),
        title: "Loaded latency: latency against the bandwidth of the other threads".into(),
        x_label: "bandwidth, GiB/s".into(),
        y_label: "latency, ns".into(),
        x_log: false,
        series,
        horizontal,
        vertical: Vec::new(),
    })
}

fn cache_curve(m: &MemoryPart) -> Option<plots::Plot> {
    if m.cache_latency_ns.is_empty() {
        return None;
    }
    let vertical = m
        .cache_sizes_bytes
        .iter()
        .map(|(name, &bytes)| Reference {
            at: bytes as f64,
            label: format!("{name} {}", format_binary_size(bytes)),
        })
        .collect();
    line_chart(&LineChart {
        id: "cache-latency".into(),
        title: "Latency by working set (cache sizes marked)".into(),
        x_label: "working set (log scale)".into(),
        y_label: "latency, ns".into(),
        x_log: true,
        series: vec![Series {
            name: "random chase".into(),
            points: m
                .cache_latency_ns
                .iter()
                .map(|&(b, ns)| (b as f64, ns))
                .collect(),
        }],
        horizontal: Vec::new(),
        vertical,
    })
}

fn idle_tables(m: &MemoryPart) -> String {
    let mut out =
        String::from("<h3>Idle latency by node (ns; row: CPU node, column: memory node)</h3>\n");
    if m.idle_latency.patterns.is_empty() {
        out.push_str(&missing("Idle latency", "not measured"));
        return out;
    }
    for (pattern, matrix) in &m.idle_latency.patterns {
        let cols: std::collections::BTreeSet<&String> =
            matrix.values().flat_map(|row| row.keys()).collect();
        let values: Vec<f64> = matrix.values().flat_map(|r| r.values().copied()).collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let _ = write!(
            out,
            "<table class=\"heat\" data-pattern=\"{}\"><tr><th>{}</th>",
            escape(pattern),
            escape(pattern)
        );
        for c in &cols {
            let _ = write!(out, "<th>{}</th>", escape(c));
        }
        out.push_str("</tr>\n");
        for (cpu, row) in matrix {
            let _ = write!(out, "<tr><th>{}</th>", escape(cpu));
            for c in &cols {
                match row.get(*c) {
                    Some(&v) => {
                        let _ = write!(
                            out,
                            "<td class=\"num\" style=\"{}\">{v}</td>",
                            heat(v, lo, hi)
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

fn network(doc: &Document) -> String {
    let mut out = String::from("<h2 id=\"network\">Network</h2>\n");
    if doc.ping.is_none() && doc.iperf3_bandwidth.is_none() {
        out.push_str(&missing(
            "Not measured",
            &match doc.health_check.sections.get(Section::Network) {
                Some(o) => o.to_wire(),
                None => "the run did not plan the network section".into(),
            },
        ));
        return out;
    }
    if let Some(entries) = &doc.iperf3_bandwidth {
        let cpus = doc.system().map(|s| s.logical_cpus);
        let required = match cpus {
            Some(n) if n > 72 => 20.0,
            _ => 10.0,
        };
        let mut horizontal = vec![Reference {
            at: required,
            label: format!("DCPerf requirement {required} Gbit/s"),
        }];
        // The link's TCP goodput limit: bandwidth / efficiency, where the link speed is known.
        if let Some(limit) = entries.iter().find_map(|e| {
            let eff = e.link_efficiency_pct?;
            let bw = e.bandwidth?;
            (eff > 0.0).then(|| bw * 100.0 / eff)
        }) {
            horizontal.push(Reference {
                at: crate::units::round_to(limit, 2),
                label: format!("link TCP limit {:.2} Gbit/s", limit),
            });
        }
        let chart = bar_chart(&BarChart {
            id: "bandwidth".into(),
            title: "TCP bandwidth per client (receiver goodput)".into(),
            y_label: "Gbit/s".into(),
            bars: vec!["to the client".into(), "from the client".into()],
            groups: entries
                .iter()
                .map(|e| BarGroup {
                    label: e.hostname.clone(),
                    values: vec![e.bandwidth, e.reverse_gbps],
                })
                .collect(),
            horizontal,
            y_log: false,
        });
        match chart {
            Some(p) => {
                let _ = writeln!(out, "<div class=\"plots\">{}</div>", p.html);
            }
            None => out.push_str(&missing("Bandwidth", "no client produced a figure")),
        }
        out.push_str("<table><tr><th>client</th><th>to, Gbit/s</th><th>from, Gbit/s</th><th>retransmits</th><th>link</th><th>efficiency</th><th>peer</th><th>error</th></tr>\n");
        for e in entries {
            let link = match (&e.interface, e.link_speed_gbps) {
                (Some(i), Some(s)) => format!("{i} {s} Gbit/s"),
                (Some(i), None) => format!("{i} (no wire speed)"),
                _ => "-".into(),
            };
            let error = [e.error.as_deref(), e.reverse_error.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; ");
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                escape(&e.hostname),
                num(e.bandwidth),
                num(e.reverse_gbps),
                e.retransmits.map_or("-".into(), |r| r.to_string()),
                escape(&link),
                e.link_efficiency_pct
                    .map_or("-".into(), |p| format!("{p}%")),
                escape(e.peer.as_deref().unwrap_or("-")),
                escape(&error)
            );
        }
        out.push_str("</table>\n");
    }
    if let Some(a) = &doc.network_aggregate {
        let _ = writeln!(
            out,
            "<p>All {} clients at once: <b>{} Gbit/s</b>{}{}</p>",
            a.clients.len(),
            num(a.bandwidth),
            a.window_seconds.map_or(String::new(), |w| format!(
                " over the {w} s all ran together"
            )),
            a.note
                .as_deref()
                .map_or(String::new(), |n| format!(" ({})", escape(n)))
        );
    }
    if let Some(pings) = &doc.ping {
        out.push_str("<h3>Ping</h3>\n<table><tr><th>client</th><th>min, ms</th><th>median, ms</th><th>avg, ms</th><th>max, ms</th><th>mdev, ms</th><th>loss</th><th>method</th><th>error</th></tr>\n");
        for p in pings {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                escape(&p.hostname),
                num(p.min),
                num(p.median),
                num(p.latency),
                num(p.max),
                num(p.mdev),
                p.loss_pct
                    .map_or("-".into(), |l| format!("{l}% of {}", p.sent)),
                p.method.map_or("-".into(), |m| word(&m)),
                escape(p.error.as_deref().unwrap_or(""))
            );
        }
        out.push_str("</table>\n");
    }
    out
}

fn sleep(doc: &Document) -> String {
    let mut out = String::from("<h2 id=\"sleep\">Scheduling (nanosleep benchmark)</h2>\n");
    if let Some(why) = absent(&doc.sleepbench, Section::Sleep, doc) {
        out.push_str(&why);
        return out;
    }
    let Some(s) = doc.sleep() else { return out };
    // Busy time in strong colours, idle in light grey: the busy share reads at a glance.
    let parts = [
        ("usr", s.usr_pct, "#0072B2"),
        ("nice", s.nice_pct, "#56B4E9"),
        ("sys", s.sys_pct, "#E69F00"),
        ("irq", s.irq_pct, "#D55E00"),
        ("softirq", s.softirq_pct, "#CC79A7"),
        ("iowait", s.iowait_pct, "#009E73"),
        ("steal", s.steal_pct, "#000000"),
        ("idle", s.idle_pct, "#DDDDDD"),
    ];
    let segments: Vec<Segment> = parts
        .iter()
        .filter_map(|&(n, v, color)| {
            v.map(|pct| Segment {
                name: n.to_string(),
                pct,
                color,
            })
        })
        .collect();
    let limits = [
        Reference {
            at: 50.0,
            label: "busy-CPU limit 50%".into(),
        },
        Reference {
            at: 30.0,
            label: "IRQ limit 30%".into(),
        },
    ];
    match stacked_bar(
        "cpu-split",
        "CPU time during the benchmark (DCPerf's limits in red)",
        &segments,
        &limits,
    ) {
        Some(p) => {
            let _ = writeln!(out, "<div class=\"plots\">{}</div>", p.html);
        }
        None => out.push_str(&missing(
            "CPU split",
            s.cpu_error
                .as_deref()
                .unwrap_or("/proc/stat could not be read"),
        )),
    }
    out.push_str(&facts(&[
        (
            "calls per second",
            crate::render::fleet_table::number(s.calls_per_second),
        ),
        (
            "per thread",
            format!(
                "{} calls/s ({} threads, DCPerf asks more than 15000)",
                crate::render::fleet_table::number(s.calls_per_second_per_thread),
                s.threads
            ),
        ),
        (
            "busy CPU",
            s.total.map_or("-".into(), |t| format!("{t}% (limit 50%)")),
        ),
        (
            "IRQ",
            s.irq_pct
                .map_or("-".into(), |t| format!("{t}% (limit 30%)")),
        ),
        ("length", format!("{} s", s.seconds)),
        (
            "timer slack",
            s.timer_slack_ns.map_or("-".into(), |t| format!("{t} ns")),
        ),
    ]));
    out
}

fn storage(doc: &Document) -> String {
    let mut out = String::from("<h2 id=\"storage\">Storage</h2>\n");
    if let Some(why) = absent(&doc.storage, Section::Storage, doc) {
        out.push_str(&why);
        return out;
    }
    let Some(s) = doc.storage() else { return out };
    out.push_str(&storage_plot(s));
    out.push_str(&facts(&[
        ("target", format!("{} ({})", s.path, word(&s.kind))),
        (
            "device",
            format!(
                "{} {} {}",
                s.device.as_deref().unwrap_or("-"),
                s.fstype.as_deref().unwrap_or(""),
                match s.rotational {
                    Some(true) => "(spinning)",
                    Some(false) => "(solid state)",
                    None => "",
                }
            ),
        ),
        (
            "4 KiB random reads",
            format!("{} IOPS", num(s.read_iops_4k)),
        ),
        (
            "4 KiB random writes",
            format!("{} IOPS", num(s.write_iops_4k)),
        ),
        (
            "1 MiB sequential writes",
            format!("{} MB/s", num(s.write_mb_s_1m)),
        ),
        (
            "direct I/O",
            if s.direct {
                "yes".into()
            } else {
                "no: figures include the page cache".into()
            },
        ),
    ]));
    if let Some(w) = &s.writes_skipped {
        out.push_str(&missing("Writes not measured", w));
    }
    for e in &s.errors {
        out.push_str(&missing("Test failed", &e.to_string()));
    }
    for n in &s.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(n));
    }
    out
}

fn storage_plot(s: &StoragePart) -> String {
    let group = |label: &str, l: &Option<crate::wire::storage::Latency>| BarGroup {
        label: label.into(),
        values: match l {
            Some(l) => vec![Some(l.p50), Some(l.p99), Some(l.p999), Some(l.max)],
            None => vec![None; 4],
        },
    };
    bar_chart(&BarChart {
        id: "storage-latency".into(),
        title: "Completion latency percentiles (log scale)".into(),
        y_label: "µs".into(),
        bars: vec!["p50".into(), "p99".into(), "p99.9".into(), "max".into()],
        groups: vec![
            group("4 KiB reads", &s.read_clat_us),
            group("4 KiB writes", &s.write_clat_us),
        ],
        horizontal: Vec::new(),
        y_log: true,
    })
    .map_or_else(
        || missing("Latency", "no latency was measured"),
        |p| format!("<div class=\"plots\">{}</div>\n", p.html),
    )
}

fn system(doc: &Document) -> String {
    let mut out = String::from("<h2 id=\"system\">System</h2>\n");
    if let Some(why) = absent(&doc.system, Section::System, doc) {
        out.push_str(&why);
        return out;
    }
    let Some(s) = doc.system() else { return out };
    out.push_str(&facts(&system_rows(s)));
    out
}

fn system_rows(s: &SystemPart) -> Vec<(&'static str, String)> {
    let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let caches: Vec<String> = s
        .caches
        .iter()
        .map(|c| {
            format!(
                "{} {} x{}",
                c.name,
                format_binary_size(c.size_bytes),
                c.instances
            )
        })
        .collect();
    let nodes: Vec<String> = s
        .numa_nodes
        .iter()
        .map(|n| {
            format!(
                "node {}: CPUs {} ({}), {}",
                n.id,
                if n.cpus.is_empty() { "none" } else { &n.cpus },
                n.cpu_count,
                n.mem_total_kib
                    .map_or("-".into(), |k| format_binary_size(k * 1024))
            )
        })
        .collect();
    let nics: Vec<String> = s
        .nic_links
        .iter()
        .map(|l| {
            format!(
                "{} {} {}",
                l.name,
                l.speed_mbps
                    .map_or("no speed".into(), |m| format!("{m} Mbit/s")),
                l.operstate.as_deref().unwrap_or("")
            )
        })
        .collect();
    vec![
        ("host", or(&s.hostname)),
        ("CPU", format!("{} ({})", or(&s.cpu_model), s.architecture)),
        (
            "CPUs",
            format!(
                "{} logical ({} usable), {} socket(s), {} core(s), {} thread(s) per core",
                s.logical_cpus, s.usable_cpus, s.sockets, s.cores, s.threads_per_core
            ),
        ),
        ("NUMA", nodes.join("; ")),
        ("caches", caches.join(", ")),
        (
            "memory",
            s.mem_total_kib
                .map_or("-".into(), |k| format_binary_size(k * 1024)),
        ),
        (
            "DIMMs",
            match &s.dram {
                Some(d) => format!(
                    "{} x {} on {} channels at {} MT/s: peak {} MiB/s",
                    d.dimms,
                    d.kind.as_deref().unwrap_or("?"),
                    d.channels,
                    d.speed_mts,
                    d.theoretical_peak_mb_s
                ),
                None => or(&s.dram_error),
            },
        ),
        ("kernel", or(&s.kernel)),
        ("OS", or(&s.os_name)),
        (
            "THP",
            format!("{} (defrag {})", or(&s.thp), or(&s.thp_defrag)),
        ),
        ("governor", or(&s.governor)),
        (
            "clock",
            s.clock.map_or("-".into(), |c| {
                if c.synchronised {
                    format!(
                        "synchronised, estimated error {} ms",
                        crate::units::number(c.estimated_error_ms)
                    )
                } else {
                    "not synchronised".into()
                }
            }),
        ),
        ("NICs", nics.join("; ")),
        (
            "IOMMU",
            s.iommu.as_ref().map_or("-".into(), |i| {
                format!(
                    "{} groups, {} {}",
                    i.groups,
                    i.default_domain.as_deref().unwrap_or("-"),
                    if i.passthrough { "(passthrough)" } else { "" }
                )
            }),
        ),
        (
            "virtualized",
            if s.virtualized {
                "yes".into()
            } else {
                "no".into()
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every figure of a document has its row on the machine page, so a figure added to the
    /// family table is on the page without a hand-written row.
    #[test]
    fn every_figure_of_the_document_is_on_its_page() {
        let doc: Document = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/document.json"
        )))
        .expect("the fixture is a document");
        let figures = crate::wire::figures::of_document(&doc).figures;
        assert!(figures.len() > 50, "{}", figures.len());
        let html = page(&doc, "fixture.json", None);
        for f in &figures {
            let row = format!("<tr><td>{}</td>", escape(&f.name()));
            assert!(html.contains(&row), "no row for {}", f.name());
        }
    }
}
