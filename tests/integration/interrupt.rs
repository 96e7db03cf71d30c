//! Ctrl-C and SIGTERM mid-run: the run ends within 2 s and still prints a valid document holding
//! what was measured, with the interrupted section marked.

use crate::util::{assert_valid, bin_path, exclusive};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn interrupt_after(
    args: &[&str],
    signal: i32,
    after: Duration,
) -> (i32, serde_json::Value, Duration) {
    let child = Command::new(bin_path())
        .args(args)
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let sent = Instant::now();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no document after the signal ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc, took)
}

#[test]
fn sigint_during_sleepbench_keeps_the_figures_and_exits_130() {
    let _cpus = exclusive();
    let (code, doc, took) = interrupt_after(
        &[
            "-r",
            "server",
            "-c",
            "",
            "--sleep-time",
            "30",
            "--skip",
            "memory",
        ],
        libc::SIGINT,
        Duration::from_millis(700),
    );
    assert_eq!(code, 130);
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["sections"]["sleep"], "interrupted");
    assert_eq!(doc["health_check"]["interrupted_by"], "SIGINT");
    assert_eq!(doc["sleepbench"]["interrupted"], true);
    assert!(doc["sleepbench"]["calls per second"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["health_check"]["sections"]["system"], "ok");
}

#[test]
fn sigterm_exits_143_with_a_document() {
    let _cpus = exclusive();
    let (code, doc, took) = interrupt_after(
        &["sleep", "--sleep-time", "30"],
        libc::SIGTERM,
        Duration::from_millis(500),
    );
    assert_eq!(code, 143);
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["interrupted_by"], "SIGTERM");
}
