//! The readers: `compare` and `baseline` over documents of every form and real runs of this
//! machine (runs degraded by real means are in tests/fleet_degraded.rs, alone in their binary).

use crate::fleet_util::{compare, fixture};
use crate::util::run;
use health_check::wire::fleet::MachineStatus;
use serde_json::Value;

/// A directory with our document plain and in an envelope, DCPerf's, and two broken files.
fn mixed_inputs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ours = std::fs::read_to_string(fixture("document.json")).unwrap();
    std::fs::write(dir.path().join("plain.json"), &ours).unwrap();
    let envelope = format!(
        r#"{{"benchmark_name": "health_check", "machines": [{{"hostname": "enveloped"}}],
            "timestamp": 1796027264, "run_id": "0123abcd", "metrics": {ours}}}"#
    );
    std::fs::write(dir.path().join("enveloped.json"), envelope).unwrap();
    std::fs::copy(
        fixture("upstream-health-check-metrics.json"),
        dir.path().join("dcperf.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.json"), r#"{"hello": "world"}"#).unwrap();
    std::fs::write(dir.path().join("cut.json"), r#"{"checks": [], "health"#).unwrap();
    dir
}

#[test]
fn compare_reads_every_form_and_never_drops_a_machine() {
    let dir = mixed_inputs();
    let (code, report, stderr) = compare(&[dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report.machines.len(), 5, "{:#?}", report.machines);
    let by = |label: &str| {
        report
            .machines
            .iter()
            .find(|m| m.label == label)
            .unwrap_or_else(|| panic!("{label} is listed: {:#?}", report.machines))
    };
    // Same host name twice: labelled by file name.
    assert_eq!(by("plain").hostname.as_deref(), Some("fixture-host"));
    assert_eq!(by("enveloped").hostname.as_deref(), Some("fixture-host"));
    assert_eq!(by("notes").status, MachineStatus::Unreadable);
    assert!(
        by("cut").reasons[0].contains("JSON"),
        "{:?}",
        by("cut").reasons
    );
    let dcperf = by("vm");
    assert!(
        dcperf.figures > 50,
        "DCPerf's figures are read: {}",
        dcperf.figures
    );
    assert_eq!(
        dcperf.sku.as_ref().unwrap().cpu_model.as_deref(),
        Some("AMD EPYC")
    );
    assert!(stderr.contains("unreadable"), "{stderr}");
    // --strict: anything flagged (here the unreadable files) exits 3.
    let (code, _, _) = compare(&["--strict", dir.path().to_str().unwrap()]);
    assert_eq!(code, 3);
}

#[test]
fn rules_files_are_checked_and_the_builtin_ones_print() {
    let printed = run(&["compare", "--print-rules"]);
    assert_eq!(printed.code, 0);
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, &printed.stdout).unwrap();
    let doc = fixture("document.json");
    let (code, report, _) = compare(&["--rules", rules.to_str().unwrap(), doc.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        report.fleet_report.rules_source,
        rules.display().to_string()
    );
    // The printed rules read back as the built-in ones, rule for rule.
    assert_eq!(
        report.fleet_report.rules,
        health_check::judge::rules::Rules::builtin().specs()
    );
    std::fs::write(
        &rules,
        "rules:\n  - metrics: '^memory'\n    tolerance_pct: 5\n  - metrics: '[unclosed'\n    tolerance_pct: 5\n",
    )
    .unwrap();
    let bad = run(&[
        "compare",
        "--rules",
        rules.to_str().unwrap(),
        doc.to_str().unwrap(),
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--rules") && bad.stderr.contains("line 4"),
        "{}",
        bad.stderr
    );
    let missing = run(&["compare", "/nonexistent/dir"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("/nonexistent/dir"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_baseline_is_learned_and_judges_runs_and_documents() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.yaml");
    let doc = fixture("document.json");
    let learned = run(&[
        "baseline",
        doc.to_str().unwrap(),
        "-o",
        baseline.to_str().unwrap(),
    ]);
    assert_eq!(learned.code, 0, "{}", learned.stderr);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains("memory.peak_bandwidth.all reads"), "{text}");
    // The same document judged by its own baseline passes every figure.
    let (_, report, _) = compare(&[
        "--baseline",
        baseline.to_str().unwrap(),
        doc.to_str().unwrap(),
    ]);
    let checks = &report.machines[0].baseline_checks;
    assert!(checks.len() > 10, "{checks:#?}");
    assert!(
        checks
            .iter()
            .all(|c| c.status == health_check::wire::document::Status::Pass)
    );
    // A document with a quarter of the memory bandwidth fails, naming figure, value and %.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    let peak = v["memory"]["peak_bandwidth_mb_s"]["all reads"]
        .as_f64()
        .unwrap();
    v["memory"]["peak_bandwidth_mb_s"]["all reads"] = (peak * 0.85 - 1.0).into();
    let slow = dir.path().join("slow.json");
    std::fs::write(&slow, v.to_string()).unwrap();
    let (_, report, _) = compare(&[
        "--baseline",
        baseline.to_str().unwrap(),
        slow.to_str().unwrap(),
    ]);
    let failed: Vec<_> = report.machines[0]
        .baseline_checks
        .iter()
        .filter(|c| c.status == health_check::wire::document::Status::Fail)
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].name, "baseline.memory.peak_bandwidth.all reads");
    assert!(failed[0].message.contains("15.0%"), "{}", failed[0].message);
    assert_eq!(report.machines[0].status, MachineStatus::Fail);
    // A run judged by a baseline of another model: one skip that says so.
    let foreign = dir.path().join("foreign.yaml");
    std::fs::write(&foreign, text.replacen("sockets: ", "sockets: 99", 1)).unwrap();
    let r = run(&[
        "sleep",
        "--sleep-time",
        "0.2",
        "--baseline",
        foreign.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let baseline_checks: Vec<&Value> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("baseline"))
        .collect();
    assert_eq!(baseline_checks.len(), 1, "{baseline_checks:#?}");
    assert_eq!(baseline_checks[0]["status"], "skip");
    assert!(
        baseline_checks[0]["message"]
            .as_str()
            .unwrap()
            .contains("not in the baseline")
    );
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "health_check_baseline: 1\nskus: [\n").unwrap();
    let r = run(&["sleep", "--baseline", broken.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--baseline"), "{}", r.stderr);
}

/// `report` keeps one document while reading (a fleet's page draws none): a lone machine gets
/// its own page whichever file was read first, here its second round's, joined into it and
/// read before its own document, also under names that are not UTF-8; two machines get the
/// fleet's page.
#[test]
fn a_lone_machine_gets_its_page_whichever_file_was_read_first() {
    let dir = tempfile::tempdir().unwrap();
    let ours = std::fs::read_to_string(fixture("document.json")).unwrap();
    std::fs::write(dir.path().join("b.json"), &ours).unwrap();
    std::fs::write(dir.path().join("a.resolve.json"), &ours).unwrap();
    let page = |inputs: &[&str]| {
        let html = dir.path().join("page.html");
        let r = run(&[&["report", "--html", html.to_str().unwrap()][..], inputs].concat());
        assert_eq!(r.code, 0, "{}", r.stderr);
        (r.stderr, std::fs::read_to_string(&html).unwrap())
    };
    let (said, lone) = page(&[dir.path().to_str().unwrap()]);
    assert!(said.contains("(1 machine(s)"), "{said}");
    let b = dir.path().join("b.json");
    let (_, own) = page(&[b.to_str().unwrap()]);
    assert_eq!(lone, own, "the machine's page, as from its document alone");
    let bytes = tempfile::tempdir().unwrap();
    let named = |name: &[u8]| {
        use std::os::unix::ffi::OsStrExt;
        bytes.path().join(std::ffi::OsStr::from_bytes(name))
    };
    std::fs::write(named(b"b\xff.json"), &ours).unwrap();
    std::fs::write(named(b"a\xfe.resolve.json"), &ours).unwrap();
    let (said, lone_bytes) = page(&[bytes.path().to_str().unwrap()]);
    assert!(said.contains("(1 machine(s)"), "{said}");
    assert!(
        lone_bytes.contains("<h1>health_check: fixture-host</h1>"),
        "its own page under a name that is not UTF-8"
    );
    assert!(!fleet_page_of(&lone_bytes));
    std::fs::write(
        dir.path().join("c.json"),
        ours.replace("fixture-host", "other"),
    )
    .unwrap();
    let (said, fleet) = page(&[dir.path().to_str().unwrap()]);
    assert!(said.contains("(2 machine(s)"), "{said}");
    assert_ne!(fleet, lone);
    assert!(fleet_page_of(&fleet) && !fleet_page_of(&lone));
}

/// Whether `page` is the fleet's page (one machine's page has no figures across a fleet).
fn fleet_page_of(page: &str) -> bool {
    page.contains("Figures across the fleet")
}
