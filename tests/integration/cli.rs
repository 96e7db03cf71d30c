//! The command line: help, usage errors (exit 2, the flag named), output files, envelope, strict.

use crate::util::{assert_valid, bin, run};
use predicates::prelude::*;

#[test]
fn help_lists_the_roles_and_the_client_list() {
    bin()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("--role").and(predicate::str::contains("--clients")));
}

#[test]
fn version_is_printed() {
    bin()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("health_check "));
}

#[test]
fn usage_errors_exit_2_and_name_the_flag() {
    for (args, flag) in [
        (vec![], "'-r'"),
        (vec!["-r", "master"], "--role"),
        (vec!["-r", "server", "--profile", "fast"], "--profile"),
        (vec!["-r", "server", "--only", "disk"], "--only"),
        (vec!["-r", "server", "--skip", "gpu"], "--skip"),
        (vec!["-r", "server", "--sleep-time", "soon"], "--sleep-time"),
        (
            vec!["-r", "server", "--sleep-threads", "0"],
            "--sleep-threads",
        ),
        (
            vec!["-r", "server", "--sleep-threads", "-3"],
            "--sleep-threads",
        ),
        (vec!["sleep", "--sleep-time", "-1"], "--sleep-time"),
        (vec!["-r", "server", "--bogus"], "--bogus"),
    ] {
        let r = run(&args);
        assert_eq!(
            r.code, 2,
            "{args:?} should be a usage error; stderr: {}",
            r.stderr
        );
        assert!(
            r.stdout.is_empty(),
            "{args:?}: nothing on stdout for a usage error"
        );
        assert!(
            r.stderr.contains(flag),
            "{args:?}: stderr should name {flag}: {}",
            r.stderr
        );
    }
}

#[test]
fn stdout_holds_only_the_document_and_people_get_stderr() {
    let r = run(&[
        "-r",
        "server",
        "-c",
        "--only",
        "system,sleep",
        "--sleep-time",
        "0.2",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_valid(&doc);
    assert!(
        r.stderr.contains("checks:"),
        "summary on stderr: {}",
        r.stderr
    );
    assert!(
        !r.stderr.contains('\u{1b}'),
        "no escape codes when stderr is not a terminal"
    );
}

#[test]
fn output_file_holds_the_same_document_and_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hc.json");
    let r = run(&["system", "--output", path.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let from_file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(from_file, r.json());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn unwritable_output_still_prints_the_document_and_exits_1() {
    let r = run(&["system", "--output", "/nonexistent-dir/hc.json"]);
    assert_eq!(r.code, 1);
    assert_valid(&r.json());
    assert!(
        r.stderr.contains("--output '/nonexistent-dir/hc.json'"),
        "{}",
        r.stderr
    );
}

#[test]
fn envelope_has_benchpress_keys_and_string_machine_values() {
    let r = run(&[
        "-r",
        "server",
        "-c",
        "h1,h2",
        "--only",
        "system",
        "--envelope",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let env = r.json();
    let keys: Vec<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "benchmark_args",
            "benchmark_desc",
            "benchmark_hooks",
            "benchmark_name",
            "machines",
            "metadata",
            "metrics",
            "run_id",
            "timestamp"
        ]
    );
    assert_eq!(
        env["benchmark_args"],
        serde_json::json!(["-r server", "-c h1,h2"])
    );
    assert_eq!(env["benchmark_name"], "health_check");
    assert!(env["timestamp"].is_u64());
    for (k, v) in env["machines"][0].as_object().unwrap() {
        assert!(v.is_string(), "machines.{k} must be a string");
    }
    assert!(
        env["metadata"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| k.ends_with(" cache"))
    );
    assert_valid(&env["metrics"]);
}

#[test]
fn strict_exits_3_when_a_check_fails() {
    use std::os::unix::process::CommandExt;
    // A 1 ms timer slack caps a thread at 1 000 calls/s: the 15 000 calls/s rule must fail.
    let mut cmd = std::process::Command::new(crate::util::bin_path());
    // Other tests' load (and the hypervisor's steal) must not make the verdict inconclusive.
    cmd.args([
        "sleep",
        "--sleep-time",
        "0.3",
        "--sleep-threads",
        "1",
        "--strict",
    ]);
    cmd.args(crate::util::NO_INTERFERENCE_LIMITS);
    // SAFETY: prctl only changes this child's timer slack; it is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_TIMERSLACK, 1_000_000u64, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    assert_eq!(doc["sleepbench"]["timer_slack_ns"], 1_000_000);
    let rule = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sleepbench.calls_per_thread")
        .unwrap();
    assert_eq!(rule["status"], "fail");
    assert!(
        rule["message"]
            .as_str()
            .unwrap()
            .contains("timer slack of 1000000 ns")
    );
    // Without --strict the same run exits 0.
    let r = run(&["sleep", "--sleep-time", "0.2", "--sleep-threads", "1"]);
    assert_eq!(r.code, 0);
}

#[test]
fn env_options_apply_and_the_command_line_wins() {
    let out = bin()
        .env("HEALTH_CHECK_OPTS", "--profile quick --sleep-time 5")
        .args(["sleep", "--sleep-time", "0.2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["profile"], "quick");
    assert!(doc["sleepbench"]["seconds"].as_f64().unwrap() < 2.0);
    assert_eq!(
        doc["health_check"]["options_from_env"],
        "--profile quick --sleep-time 5"
    );
}
