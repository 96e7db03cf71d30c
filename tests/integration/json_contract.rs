//! The JSON contract from the reader's side: real runs validate against the schema in the repo and
//! read back into test-local types with DCPerf's key spellings.

use crate::util::{assert_valid, run, schema_errors};
use serde::Deserialize;
use std::collections::BTreeMap;

/// DCPerf's sleepbench keys, as a consumer would declare them.
#[derive(Debug, Deserialize)]
struct SleepBench {
    #[serde(rename = "calls per second")]
    calls_per_second: f64,
    #[serde(rename = "usr%")]
    usr: f64,
    #[serde(rename = "sys%")]
    sys: f64,
    #[serde(rename = "idle%")]
    idle: f64,
    #[serde(rename = "irq%")]
    irq: f64,
    #[serde(rename = "guest%")]
    guest: f64,
    total: f64,
    threads: u64,
    seconds: f64,
    calls_per_second_per_thread: f64,
}

#[derive(Debug, Deserialize)]
struct Check {
    name: String,
    status: String,
    message: String,
}

#[derive(Debug, Deserialize)]
struct RunInfo {
    role: String,
    profile: String,
    sections: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct Doc {
    sleepbench: SleepBench,
    checks: Vec<Check>,
    health_check: RunInfo,
}

#[test]
fn server_run_reads_back_with_dcperf_keys() {
    let r = run(&[
        "-r",
        "server",
        "-c",
        "",
        "--skip",
        "memory",
        "--sleep-time",
        "0.3",
        "--sleep-threads",
        "2",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let value = r.json();
    assert_valid(&value);
    let doc: Doc = serde_json::from_value(value).unwrap();
    let s = &doc.sleepbench;
    assert_eq!(s.threads, 2);
    assert!(s.calls_per_second > 0.0);
    assert!((s.calls_per_second_per_thread * 2.0 - s.calls_per_second).abs() < 1.0);
    assert!(s.seconds >= 0.3);
    assert!((s.total - (100.0 - s.idle)).abs() < 0.02);
    assert!(s.usr >= s.guest, "guest time is part of usr");
    assert!(s.usr + s.sys + s.irq <= 100.01);
    assert_eq!(doc.health_check.role, "server");
    assert_eq!(doc.health_check.profile, "standard");
    assert_eq!(doc.health_check.sections["sleep"], "ok");
    assert_eq!(doc.health_check.sections["system"], "ok");
    assert!(doc.health_check.sections["memory"].starts_with("skipped: "));
    let names: Vec<&str> = doc
        .checks
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| n.starts_with("sleepbench."))
        .collect();
    assert_eq!(
        names,
        [
            "sleepbench.total_cpu",
            "sleepbench.irq",
            "sleepbench.calls_per_thread"
        ]
    );
    assert!(doc.checks.iter().all(|c| !c.message.is_empty()));
    assert!(
        doc.checks
            .iter()
            .filter(|c| c.name.starts_with("sleepbench."))
            .all(|c| c.status != "skip"),
        "the sleepbench rules have their figures"
    );
}

#[test]
fn debug_subcommands_print_their_part_only() {
    let sys = run(&["system"]).json();
    assert_valid(&sys);
    assert!(sys.get("sleepbench").is_none());
    assert_eq!(sys["health_check"]["role"], "system");
    assert!(sys["system"]["logical_cpus"].as_u64().unwrap() >= 1);

    let sleep = run(&["sleep", "--sleep-time", "0.2", "--profile", "quick"]).json();
    assert_valid(&sleep);
    assert!(sleep.get("system").is_none());
    assert_eq!(sleep["health_check"]["sections"]["sleep"], "ok");
}

#[test]
fn the_schema_rejects_what_breaks_the_contract() {
    let good = run(&["sleep", "--sleep-time", "0.1"]).json();
    assert_valid(&good);
    let mut renamed = good.clone();
    let s = renamed["sleepbench"].as_object_mut().unwrap();
    let v = s.remove("calls per second").unwrap();
    s.insert("calls_per_second".into(), v);
    assert!(
        !schema_errors(&renamed).is_empty(),
        "a renamed DCPerf key must be caught"
    );
    let mut stringly = good.clone();
    stringly["sleepbench"]["usr%"] = serde_json::json!("0.93");
    assert!(
        !schema_errors(&stringly).is_empty(),
        "string figures must be caught"
    );
    let mut no_info = good;
    no_info.as_object_mut().unwrap().remove("health_check");
    assert!(!schema_errors(&no_info).is_empty());
}

#[test]
fn the_committed_schemas_are_the_ones_the_wire_types_generate() {
    for (args, file) in [
        (&["schema"][..], "health_check.schema.json"),
        (&["schema", "--fleet"][..], "fleet_report.schema.json"),
    ] {
        let r = run(args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let generated: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benchpress")
            .join(file);
        let committed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(
            generated == committed,
            "benchpress/{file} is not what the wire types generate; regenerate it with: \
             cargo run --release -- {} > benchpress/{file}",
            args.join(" ")
        );
    }
}

#[test]
fn documents_read_back_through_the_wire_types_unchanged() {
    use health_check::wire::document::Document;
    for args in [
        &["sleep", "--sleep-time", "0.1"][..],
        &["system"][..],
        &[
            "-r",
            "server",
            "-c",
            "",
            "--skip",
            "memory",
            "--sleep-time",
            "0.1",
        ][..],
    ] {
        let written = run(args).json();
        let doc: Document = serde_json::from_value(written.clone())
            .unwrap_or_else(|e| panic!("{args:?}: the document does not read back: {e}"));
        let again = serde_json::to_value(&doc).unwrap();
        assert_eq!(
            again, written,
            "{args:?}: reading and writing changed the document"
        );
    }
}

/// The family table as docs/contract.md shows it: a row per family of figures, made from the table
/// itself, so a family without its unit, its direction, its rule decision or its line for people
/// fails here.
fn figures_table() -> String {
    use health_check::wire::figures::{Direction, FAMILIES, Judging};
    let mut out = String::from(
        "| figure | labels | unit | better | judged by default | load moves it | in the document | what it is |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for f in FAMILIES {
        assert!(!f.unit.is_empty(), "{}: no unit", f.name);
        assert!(!f.help.is_empty(), "{}: no line for people", f.name);
        let judged = match f.judged {
            Judging::Rule {
                tolerance_pct,
                fails,
                min_difference,
                only,
            } => {
                let mut s = format!(
                    "{} beyond {tolerance_pct}%",
                    if fails { "fails" } else { "warns" }
                );
                if let Some(floor) = min_difference {
                    s.push_str(&format!(" and {floor} {}", f.unit));
                }
                if !only.is_empty() {
                    // `|` escaped: it would split the table's cell.
                    s.push_str(&format!(" (labels `{}`)", only.replace('|', "\\|")));
                }
                s
            }
            Judging::Not(why) => {
                assert!(!why.is_empty(), "{}: not judged, and no reason", f.name);
                format!("not judged: {why}")
            }
        };
        let labels = if f.labels.is_empty() {
            "-".to_string()
        } else {
            f.labels.join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {labels} | {} | {} | {judged} | {} | `{}` | {} |\n",
            f.name,
            f.unit,
            match f.direction {
                Direction::Higher => "higher",
                Direction::Lower => "lower",
            },
            if f.load_moves { "yes" } else { "no" },
            f.at.replace('|', "\\|"),
            f.help
        ));
    }
    out
}

#[test]
fn the_figures_table_in_the_contract_is_the_family_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/contract.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- figures: begin -->\n", "<!-- figures: end -->");
    let committed = doc
        .split_once(begin)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(table, _)| table)
        .expect("docs/contract.md marks its figures table");
    let generated = figures_table();
    assert!(
        committed == generated,
        "docs/contract.md's figures table is not the family table (crates/wire/src/wire/figures.rs); put \
         this between its markers:\n{generated}"
    );
}
