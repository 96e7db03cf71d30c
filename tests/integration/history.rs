//! `--history`: runs recorded in SQLite and judged against the machine's past, error counters
//! between runs (a veth's carrier flapped between two runs), a file that survives SIGKILL and
//! concurrent writers, and `health_check history` reading it back.

use crate::netns::{NetPair, Side};
use crate::util::{NO_INTERFERENCE_LIMITS, bin, bin_str, json_of};
use health_check::history::{Filter, History};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn recorded_sleep(history: &Path) -> Value {
    let out = bin()
        .args(["sleep", "--sleep-time", "0.2"])
        .args(NO_INTERFERENCE_LIMITS)
        .arg("--history")
        .arg(history)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

fn check<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
}

/// The history's pages draw the reference the verdict used: a run judged with a window of 3
/// records that median, not the default window's.
#[test]
fn the_history_draws_the_reference_each_run_was_judged_against() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.sqlite");
    for _ in 0..5 {
        recorded_sleep(&file);
    }
    let out = bin()
        .args(["sleep", "--sleep-time", "0.2", "--history-window", "3"])
        .args(NO_INTERFERENCE_LIMITS)
        .arg("--history")
        .arg(&file)
        .output()
        .unwrap();
    let sixth = json_of(&out);
    let calls = check(&sixth, "history.sleepbench.calls_per_second").expect("judged");
    let message = calls["message"].as_str().unwrap();
    assert!(
        message.contains("of this machine's last 3 runs"),
        "{message}"
    );
    let judged: f64 = message
        .split_once("against the median ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    let out = bin().arg("history").arg(&file).output().unwrap();
    let report = json_of(&out);
    let points = report["figures"]["sleepbench.calls_per_second"]["points"]
        .as_array()
        .unwrap()
        .clone();
    let drawn = &points.last().unwrap()["reference"];
    assert_eq!(drawn["runs"], 3, "{drawn}");
    let median = drawn["median"].as_f64().unwrap();
    assert!(
        (median - judged).abs() <= 0.001 * judged.abs().max(1.0),
        "drawn {median}, judged {judged}"
    );
    // The first runs, judged before there were three earlier ones, recorded none.
    assert!(points[0].get("reference").is_none(), "{}", points[0]);
}

#[test]
fn runs_are_judged_against_the_machines_past_from_the_fourth_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sub/history.sqlite");
    let first = recorded_sleep(&file);
    let skipped = check(&first, "history").expect("a history check in the first run");
    assert_eq!(skipped["status"], "skip");
    assert!(
        skipped["message"]
            .as_str()
            .unwrap()
            .contains("0 earlier run(s)"),
        "{skipped}"
    );
    for _ in 0..2 {
        recorded_sleep(&file);
    }
    let fourth = recorded_sleep(&file);
    assert!(
        check(&fourth, "history").is_none(),
        "three earlier runs are enough"
    );
    let calls = check(&fourth, "history.sleepbench.calls_per_second").expect("judged");
    assert!(
        calls["message"]
            .as_str()
            .unwrap()
            .contains("of this machine's last 3 runs"),
        "{calls}"
    );
    // The file is private and the directory was made for it.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // `history` reads it back: four runs, each figure's trend with a point per run.
    let out = bin().arg("history").arg(&file).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json_of(&out);
    assert_eq!(report["runs"].as_array().unwrap().len(), 4);
    let trend = &report["figures"]["sleepbench.calls_per_second"];
    assert_eq!(trend["points"].as_array().unwrap().len(), 4, "{trend}");
    assert_eq!(trend["unit"], "calls/s");
    let table = String::from_utf8_lossy(&out.stderr);
    assert!(table.contains("4 run(s) of 1 machine(s)"), "{table}");
    assert!(table.contains("sleepbench.calls_per_second"), "{table}");
    // --figure selects, and the last run's verdict is on its point.
    let out = bin()
        .args(["history", "--figure", "^sleepbench\\.calls_per_second$"])
        .arg(&file)
        .output()
        .unwrap();
    let report = json_of(&out);
    let figures = report["figures"].as_object().unwrap();
    assert_eq!(figures.len(), 1, "{figures:?}");
    let last = figures["sleepbench.calls_per_second"]["points"][3].clone();
    assert_eq!(last["status"], calls["status"], "{last}");
}

#[test]
fn a_history_that_cannot_be_used_costs_the_run_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let not_ours = dir.path().join("notes.txt");
    std::fs::write(
        &not_ours,
        "not a database, an operator's notes\n".repeat(200),
    )
    .unwrap();
    let out = bin()
        .args(["sleep", "--sleep-time", "0.1", "--history"])
        .arg(&not_ours)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc = json_of(&out);
    let c = check(&doc, "history").expect("says it was not recorded");
    assert_eq!(c["status"], "skip");
    assert!(
        c["message"].as_str().unwrap().contains("not recorded"),
        "{c}"
    );
    assert!(
        doc["sleepbench"]["calls per second"].is_number(),
        "the figures are all there"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the run was not recorded"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&not_ours).unwrap(),
        "not a database, an operator's notes\n".repeat(200),
        "the file is untouched"
    );
    // Reading a file that is not a history says so and exits 2.
    let out = bin().arg("history").arg(&not_ours).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a health_check history"), "{stderr}");
    // A symlink is not followed.
    let link = dir.path().join("link.sqlite");
    std::os::unix::fs::symlink(dir.path().join("elsewhere.sqlite"), &link).unwrap();
    let doc = json_of(
        &bin()
            .args(["sleep", "--sleep-time", "0.1", "--history"])
            .arg(&link)
            .output()
            .unwrap(),
    );
    assert_eq!(check(&doc, "history").unwrap()["status"], "skip");
    assert!(!dir.path().join("elsewhere.sqlite").exists());
}

#[test]
fn concurrent_and_killed_runs_leave_every_finished_run_in_a_sound_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.sqlite");
    // Six runs at once, each marked by its options; every other one killed at a different
    // moment (SIGKILL), some before their write, some perhaps after it.
    let marker = |i: usize| format!("--threshold=sleepbench.irq_pct=3{i}");
    let mut children: Vec<std::process::Child> = (0..6)
        .map(|i| {
            std::process::Command::new(crate::util::bin_path())
                .args(["sleep", "--sleep-time", "0.3", "--history"])
                .arg(&file)
                .env("HEALTH_CHECK_OPTS", marker(i))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, c) in children.iter_mut().enumerate().filter(|(i, _)| i % 2 == 1) {
        std::thread::sleep(Duration::from_millis(120 * i as u64));
        let _ = c.kill();
    }
    let finished: Vec<usize> = children
        .into_iter()
        .enumerate()
        .filter_map(|(i, mut c)| (c.wait().unwrap().code() == Some(0)).then_some(i))
        .collect();
    assert!(finished.len() >= 3, "the runs not killed all finish");
    let h = History::open_existing(&file).unwrap();
    h.check_integrity().unwrap();
    let recorded: Vec<String> = h
        .documents(&Filter::default())
        .unwrap()
        .into_iter()
        .filter_map(|(_, d)| d.health_check.options_from_env)
        .collect();
    for i in &finished {
        assert!(
            recorded.contains(&marker(*i)),
            "run {i} finished but is not in the history: {recorded:?}"
        );
    }
    // A killed run is in it only if it was killed after its commit: whole or not at all.
    assert!(recorded.len() <= 6 && recorded.len() >= finished.len());
}

#[test]
fn a_link_that_flapped_between_two_runs_is_named() {
    let Some(pair) = NetPair::new("a_link_that_flapped_between_two_runs_is_named") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.sqlite");
    let system = |file: &Path| {
        let out = pair
            .command(Side::A, &bin_str())
            .args(["system", "--history"])
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json_of(&out)
    };
    let first = system(&file);
    assert_eq!(first["system"]["error_counters"]["since"], "boot");
    // The peer goes down and up: host A's end loses its carrier once.
    for state in ["down", "up"] {
        let ok = std::process::Command::new("ip")
            .args(["-n", pair.ns_name(Side::B), "link", "set", "hcb", state])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    std::thread::sleep(Duration::from_millis(300));
    let second = system(&file);
    let counters = &second["system"]["error_counters"];
    assert_eq!(counters["since"], "last_run", "{counters}");
    let c = check(&second, "errors.nic:hca").unwrap_or_else(|| panic!("{:#}", second["checks"]));
    assert_eq!(c["status"], "warn", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("1 link losses on hca since the last run"),
        "{c}"
    );
    // Nothing flapped since: the next run is quiet about it.
    let third = system(&file);
    assert_eq!(check(&third, "errors.nic:hca").unwrap()["status"], "pass");
    // The configuration did not change between the runs.
    assert_eq!(
        check(&third, "history.fingerprint").unwrap()["status"],
        "pass"
    );
}
