//! `health_check slurm` at the size of a large cluster (issues 29, 39): a partition of 10,000
//! nodes kept by a stand-in controller (tests/slurm_standin: a scontrol that serves updates one at
//! a time, as slurmctld does, and a sinfo that prints the partition, 300 KB), and many of its nodes
//! failing in the same moment. The partition is sampled every 100 ms while they run: however many
//! fail at once, never more than the cap is drained at any sample (each takes its turn before it
//! drains: `run::slurm::cap`), every failing node drained or was held back, and no mark of intent
//! is left. benchmarks/slurm_scale.py runs 1,000 at once (docs/performance.md); here 100, in a few
//! seconds.

use crate::util::{Need, faulty_bin_path, needs};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const NODES: usize = 10_000;

/// A fresh stand-in for a partition of `NODES` idle nodes, in `dir`.
fn standin(dir: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm_standin");
    for tool in ["scontrol", "sinfo"] {
        std::fs::copy(src.join(tool), dir.join(tool)).unwrap();
        std::fs::set_permissions(dir.join(tool), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let state: String = (1..=NODES)
        .map(|i| format!("n{i:05}\x1fidle\x1f(null)\x1fnone\n"))
        .collect();
    std::fs::write(dir.join("state"), state).unwrap();
}

#[test]
fn nodes_failing_together_in_a_10000_node_partition_never_pass_the_cap() {
    if !needs(
        "nodes_failing_together_in_a_10000_node_partition_never_pass_the_cap",
        &[Need::Tool("flock", "util-linux"), Need::Tool("awk", "mawk")],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    standin(dir.path());
    let states = dir.path().join("states");
    std::fs::create_dir(&states).unwrap();
    std::fs::set_permissions(&states, std::fs::Permissions::from_mode(0o700)).unwrap();
    // 0.5 % of 10,000: 50 may be drained; 100 fail at once (their system section made to fail).
    let failing = 100;
    // Every 100 ms while they run: how many health_check holds drained.
    let done = AtomicBool::new(false);
    let most = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut most = 0;
            while !done.load(Ordering::Relaxed) {
                if let Ok(state) = std::fs::read_to_string(dir.path().join("state")) {
                    let ours = state
                        .lines()
                        .filter(|l| l.contains("\x1fidle+drain\x1f") && l.contains("health_check:"))
                        .count();
                    most = most.max(ours);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            most
        });
        // The sampler stops when the storm ends, a panic in it included (else the test hangs).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let stop = Stop(&done);
        let lines = storm(dir.path(), &states, failing);
        drop(stop);
        (sampler.join().unwrap(), lines)
    });
    let (most, lines) = most;
    let state = std::fs::read_to_string(dir.path().join("state")).unwrap();
    assert_eq!(state.lines().count(), NODES, "no update lost a line");
    let drained = state
        .lines()
        .filter(|l| l.contains("\x1fidle+drain\x1f"))
        .count();
    let held = lines
        .iter()
        .filter(|l| l.contains("held back by the cap") || l.contains("still choosing"))
        .count();
    assert!(
        most <= 50,
        "{most} drained at one sample, past the cap of 50"
    );
    assert!(
        (1..=50).contains(&drained),
        "{drained} drained, past the cap of 50:\n{}",
        lines.join("")
    );
    assert_eq!(
        drained + held,
        failing,
        "every failing node drained or was held back:\n{}",
        lines.join("")
    );
    assert!(
        !state.contains("health_check-cap:"),
        "marks of intent left behind"
    );
}

/// `failing` nodes' runs at once, each failing its system section; their stdout lines.
fn storm(dir: &Path, states: &Path, failing: usize) -> Vec<String> {
    storm_with(dir, states, failing, &["--slurm-timeout", "60"])
}

/// [`storm`] with more options.
fn storm_with(dir: &Path, states: &Path, failing: usize, more: &[&str]) -> Vec<String> {
    let runs: Vec<_> = (1..=failing)
        .map(|i| {
            let node = format!("n{i:05}");
            Command::new(faulty_bin_path())
                .args(["slurm", "--node", &node, "--scontrol"])
                .arg(dir.join("scontrol"))
                .arg("--sinfo")
                .arg(dir.join("sinfo"))
                .arg("--state")
                .arg(states.join(format!("{node}.json")))
                .args(["--drain-after", "1", "--max-drained-pct", "0.5"])
                .args(more)
                .args(["--deadline", "300", "--only", "system"])
                .env("HEALTH_CHECK_INJECT_PANIC", "system")
                // No backtrace of the panic (its stderr is dropped): with RUST_BACKTRACE set,
                // reading the binary's symbols was over a third of the storm's 48 CPU-seconds.
                .env("RUST_BACKTRACE", "0")
                .env_remove("HEALTH_CHECK_OPTS")
                .env_remove("HEALTH_CHECK_HISTORY")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    runs.into_iter()
        .map(|c| String::from_utf8_lossy(&c.wait_with_output().unwrap().stdout).into_owned())
        .collect()
}

/// A controller that has slowed down (sinfo answers after the deadline health_check gives it):
/// the turn to drain cannot be taken, so no node drains (fail closed), and each says why.
/// Before, the nodes drained first and could not read the cap again to lift the drains past it.
#[test]
fn a_controller_too_slow_to_read_the_cap_gets_no_drain() {
    if !needs(
        "a_controller_too_slow_to_read_the_cap_gets_no_drain",
        &[Need::Tool("flock", "util-linux"), Need::Tool("awk", "mawk")],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    standin(dir.path());
    std::fs::write(dir.path().join("sinfo-delay"), "3").unwrap();
    let states = dir.path().join("states");
    std::fs::create_dir(&states).unwrap();
    std::fs::set_permissions(&states, std::fs::Permissions::from_mode(0o700)).unwrap();
    let lines = storm_with(dir.path(), &states, 20, &["--slurm-timeout", "1"]);
    let state = std::fs::read_to_string(dir.path().join("state")).unwrap();
    assert_eq!(
        state
            .lines()
            .filter(|l| l.contains("\x1fidle+drain\x1f"))
            .count(),
        0
    );
    assert!(
        lines.iter().all(|l| l.contains("fail closed")),
        "{}",
        lines.join("")
    );
}
