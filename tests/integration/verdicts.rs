//! Verdicts and robustness end to end: thresholds from the command line, the rule list, system
//! findings, a panic confined to its section, and sections a Ctrl-C never reached.

use crate::util::{assert_valid, bin, bin_path, exclusive, faulty_bin, run};
use std::process::{Command, Stdio};
use std::time::Duration;

fn check_status(doc: &serde_json::Value, name: &str) -> String {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn thresholds_from_the_command_line_change_the_verdict() {
    let lenient = run(&[
        "sleep",
        "--sleep-time",
        "0.2",
        "--threshold",
        "sleepbench.calls_per_thread=1",
    ])
    .json();
    assert_valid(&lenient);
    assert_eq!(
        check_status(&lenient, "sleepbench.calls_per_thread"),
        "pass"
    );
    // Other tests' load (and the hypervisor's steal) must not make the verdict inconclusive.
    let mut args = vec![
        "sleep",
        "--sleep-time",
        "0.2",
        "--threshold",
        "sleepbench.calls_per_thread=1e9",
    ];
    args.extend(crate::util::NO_INTERFERENCE_LIMITS);
    let strict = run(&args).json();
    assert_eq!(check_status(&strict, "sleepbench.calls_per_thread"), "fail");
    let limit = strict["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sleepbench.calls_per_thread")
        .unwrap()["limit"]
        .clone();
    assert_eq!(limit, 1e9);
}

#[test]
fn checks_list_prints_every_threshold_with_its_default() {
    let out = bin().args(["checks", "--list"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for (name, default) in [
        ("sleepbench.total_cpu_pct", "50"),
        ("network.ping_loss_pct", "1"),
        ("memory.repeat_spread", "1.1"),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"));
        assert!(line.split_whitespace().nth(1) == Some(default), "{line}");
    }
    assert_eq!(
        run(&["checks"]).code,
        2,
        "checks without --list is a usage error"
    );
}

#[test]
fn a_system_run_judges_the_machines_setup() {
    let doc = run(&["system"]).json();
    assert_valid(&doc);
    let sys = &doc["system"];
    let status = |rule: &str| check_status(&doc, rule);
    // Each verdict as this machine's own figures in the document call for it.
    let governor = match sys["governor"].as_str() {
        None => "skip",
        Some("performance") => "pass",
        Some(_) => "warn",
    };
    assert_eq!(status("system.governor"), governor, "{}", sys["governor"]);
    let thp = if sys["thp"] == "never" {
        "warn"
    } else {
        "pass"
    };
    assert_eq!(status("system.thp"), thp, "{}", sys["thp"]);
    let swap = if sys["swap_used_kib"].as_u64().unwrap_or(0) > 0 {
        "warn"
    } else {
        "pass"
    };
    assert_eq!(status("system.swap"), swap, "{}", sys["swap_used_kib"]);
    let nodes = sys["numa_nodes"].as_array().unwrap().len();
    let balancing = if sys["numa_balancing"] == true && nodes > 1 {
        "warn"
    } else {
        "pass"
    };
    assert_eq!(status("system.numa_balancing"), balancing);
    let slack = sys["timer_slack_ns"].as_u64().unwrap();
    let slack_status = if slack > 50_000 { "warn" } else { "pass" };
    assert_eq!(status("system.timer_slack"), slack_status, "{slack}");
    let degraded = sys["pcie_links_degraded"].as_array().unwrap().is_empty();
    assert_eq!(
        status("system.pcie_links"),
        if degraded { "pass" } else { "warn" }
    );
    let throttle = match sys["during_run"]["throttle_events"].as_u64() {
        None => "skip",
        Some(0) => "pass",
        Some(_) => "fail",
    };
    assert_eq!(status("system.thermal_throttle"), throttle);
    let steal = sys["during_run"]["steal_pct"].as_f64();
    let steal_status = match steal {
        None => "skip",
        Some(p) if p > 1.0 => "warn",
        Some(_) => "pass",
    };
    assert_eq!(status("system.steal"), steal_status, "{steal:?}");
    let d = &doc["system"]["during_run"];
    assert!(d["seconds"].as_f64().is_some(), "{d}");
    // Without dmidecode (or root) the DIMMs' peak is unknown, and the document says why.
    assert!(doc["system"]["dram"].is_object() || doc["system"]["dram_error"].is_string());
}

#[test]
fn a_panic_in_one_section_is_recorded_and_the_others_run() {
    let out = faulty_bin()
        .env("HEALTH_CHECK_INJECT_PANIC", "sleep")
        .args([
            "-r",
            "server",
            "-c",
            "",
            "--only",
            "system,sleep,network",
            "--sleep-time",
            "0.2",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "a failed section is in the document, not the exit code"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    let sleep = doc["health_check"]["sections"]["sleep"].as_str().unwrap();
    assert!(
        sleep.starts_with("failed: internal error (panic): injected panic"),
        "{sleep}"
    );
    assert!(
        doc["sleepbench"]["error"]
            .as_str()
            .unwrap()
            .contains("injected panic")
    );
    assert_eq!(doc["health_check"]["sections"]["system"], "ok");
    assert!(
        doc["health_check"]["sections"]["network"]
            .as_str()
            .unwrap()
            .starts_with("skipped")
    );
}

/// The injection variables are the tests' build's alone: the shipped binary, given both, measures
/// the section they name as it would without them.
#[test]
fn the_shipped_binary_ignores_the_fault_injection_variables() {
    let out = bin()
        .env("HEALTH_CHECK_INJECT_PANIC", "sleep")
        .env("HEALTH_CHECK_INJECT_HANG", "sleep")
        .args(["-r", "server", "-c", "", "--only", "sleep"])
        .args(["--sleep-time", "0.2", "--deadline", "30"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["health_check"]["sections"]["sleep"], "ok", "{doc}");
    assert!(doc["sleepbench"]["calls per second"].is_number(), "{doc}");
}

#[test]
fn sections_a_ctrl_c_never_reached_are_skipped_as_interrupted() {
    let _cpus = exclusive();
    let child = Command::new(bin_path())
        .args([
            "-r",
            "server",
            "-c",
            "",
            "--only",
            "sleep,memory",
            "--sleep-time",
            "30",
        ])
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["sections"]["sleep"], "interrupted");
    assert_eq!(
        doc["health_check"]["sections"]["memory"],
        "skipped: interrupted"
    );
    assert_eq!(doc["memory"]["skipped"], "interrupted");
}

/// One roll-up: the same documents give the same verdict to Slurm (a failing run counts toward a
/// drain, an inconclusive one toward nothing), node-problem-detector (its exit code) and
/// Prometheus (`health_check_health`).
#[test]
fn slurm_npd_and_prometheus_act_on_one_verdict() {
    use health_check::judge::health;
    use health_check::render::{npd, prometheus};
    use health_check::run::slurm::{Decision, NodeInfo, Policy, Streaks, decide};
    use health_check::wire::document::{
        Check, CheckId, Document, Section, SectionOutcome, SectionStatuses, SignalName, Status,
    };
    let check = |name: &str, status| Check {
        name: CheckId::parse(name),
        status,
        value: None,
        limit: None,
        message: String::new(),
    };
    let doc = |checks: Vec<Check>, sections: Vec<(Section, SectionOutcome)>| {
        let mut d = Document {
            checks,
            ..Document::default()
        };
        d.health_check.sections = SectionStatuses(sections);
        d
    };
    let ok = (Section::Sleep, SectionOutcome::Ok);
    let mut overran = doc(
        vec![],
        vec![(
            Section::Memory,
            SectionOutcome::Failed("stopped at the --deadline of 50 s".into()),
        )],
    );
    overran.health_check.interrupted_by = Some(SignalName::Deadline);
    let cases = [
        (
            "healthy",
            doc(
                vec![check("sleepbench.irq", Status::Pass)],
                vec![ok.clone()],
            ),
            0,
        ),
        (
            "warned",
            doc(vec![check("system.thp", Status::Warn)], vec![ok.clone()]),
            0,
        ),
        (
            "a failing check",
            doc(
                vec![check("sleepbench.irq", Status::Fail)],
                vec![ok.clone()],
            ),
            1,
        ),
        (
            "a section that failed to run",
            doc(
                vec![],
                vec![(Section::Memory, SectionOutcome::Failed("x".into()))],
            ),
            1,
        ),
        ("a run past its deadline", overran, 1),
        (
            "inconclusive",
            doc(
                vec![check("sleepbench.total_cpu", Status::Inconclusive)],
                vec![ok.clone()],
            ),
            2,
        ),
    ];
    let node = NodeInfo {
        name: "n1".into(),
        state: "IDLE".into(),
        reason: None,
        partitions: vec!["debug".into()],
        comment: None,
    };
    let policy = Policy {
        drain_after: 1,
        resume_after: 1,
    };
    for (what, d, code) in cases {
        let verdict = health::of(&d);
        assert_eq!(verdict.code(), code, "{what}");
        assert_eq!(npd::verdict(&d).code, code, "{what}: node-problem-detector");
        let text = prometheus::document(&d);
        assert!(
            text.contains(&format!("\nhealth_check_health {code}\n")),
            "{what}: Prometheus\n{text}"
        );
        let decision = decide(&node, &verdict, &Streaks::default().after(&verdict), policy);
        assert_eq!(
            matches!(decision, Decision::Drain { .. }),
            code == 1,
            "{what}: Slurm {decision:?}"
        );
    }
}

/// `--deadline`: the run stops itself, writes its document with the section that overran failed
/// and the run's own word for it, and exits 124; a section that never returns (stuck in the
/// kernel, here an injected hang) is abandoned a few seconds later with a document that says so.
#[test]
fn a_run_stops_itself_at_its_deadline_and_names_the_section_that_overran() {
    let started = std::time::Instant::now();
    let r = run(&["sleep", "--sleep-time", "30", "--deadline", "1"]);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.code, 124, "{}", r.stderr);
    let doc = r.json();
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["interrupted_by"], "deadline");
    assert_eq!(
        doc["health_check"]["sections"]["sleep"],
        "failed: stopped at the --deadline of 1 s"
    );
    assert!(
        doc["sleepbench"]["calls per second"].is_number(),
        "what it measured is kept"
    );
    let started = std::time::Instant::now();
    let out = faulty_bin()
        .env("HEALTH_CHECK_INJECT_HANG", "sleep")
        .args(["sleep", "--deadline", "1"])
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(124));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    assert!(
        doc["health_check"]["sections"]["sleep"]
            .as_str()
            .unwrap()
            .starts_with("failed: did not stop"),
        "{doc}"
    );
    let r = run(&["sleep", "--deadline", "0"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--deadline"), "{}", r.stderr);
}

/// Under `--format npd` a run past its deadline exits with a code NPD knows, the one its line
/// says (the section failed to run: 1), whether it stopped itself or hung (124 is no NPD
/// status: a memory check slowed past NPD's deadline by a host backing fresh memory slowly
/// exited so).
#[test]
fn a_deadline_under_npd_exits_with_what_its_line_says() {
    let r = run(&[
        "sleep",
        "--sleep-time",
        "30",
        "--deadline",
        "1",
        "--format",
        "npd",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    // The line names the first failure: this VM's own per-thread check may come before it.
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(r.stdout.starts_with("health_check: fail: "), "{}", r.stdout);
    let out = faulty_bin()
        .env("HEALTH_CHECK_INJECT_HANG", "sleep")
        .args(["sleep", "--deadline", "1", "--format", "npd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "health_check: fail: sleep failed to run"
    );
}
