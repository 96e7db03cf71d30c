//! `health_check slurm` at the size of a large cluster (issue 29): a partition of 10,000 nodes kept
//! by a stand-in controller (tests/slurm_standin: a scontrol that serves updates one at a time and
//! stamps them, as slurmctld does, and a sinfo that prints the partition, 250 KB), and many of its
//! nodes failing in the same moment. However many drain at once, no more than the cap end drained
//! (the others lift their own drains, ranked by drain time and name), and the answers, larger than
//! a pipe, are read whole. benchmarks/slurm_scale.py runs 1,000 at once (docs/performance.md);
//! here 100, in a few seconds.

use crate::util::{Need, bin_path, needs};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

const NODES: usize = 10_000;

/// A fresh stand-in for a partition of `NODES` idle nodes, in `dir`.
fn standin(dir: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm_standin");
    for tool in ["scontrol", "sinfo"] {
        std::fs::copy(src.join(tool), dir.join(tool)).unwrap();
        std::fs::set_permissions(dir.join(tool), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let state: String = (1..=NODES)
        .map(|i| format!("n{i:05}|idle|Unknown|none\n"))
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
    let runs: Vec<_> = (1..=failing)
        .map(|i| {
            let node = format!("n{i:05}");
            Command::new(bin_path())
                .args(["slurm", "--node", &node, "--scontrol"])
                .arg(dir.path().join("scontrol"))
                .arg("--sinfo")
                .arg(dir.path().join("sinfo"))
                .arg("--state")
                .arg(states.join(format!("{node}.json")))
                .args(["--drain-after", "1", "--max-drained-pct", "0.5"])
                .args([
                    "--slurm-timeout",
                    "60",
                    "--deadline",
                    "300",
                    "--only",
                    "system",
                ])
                .env("HEALTH_CHECK_INJECT_PANIC", "system")
                .env_remove("HEALTH_CHECK_OPTS")
                .env_remove("HEALTH_CHECK_HISTORY")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let lines: Vec<String> = runs
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.wait_with_output().unwrap().stdout).into_owned())
        .collect();
    let state = std::fs::read_to_string(dir.path().join("state")).unwrap();
    assert_eq!(state.lines().count(), NODES, "no update lost a line");
    let drained = state.lines().filter(|l| l.contains("|drained|")).count();
    let lifted = lines
        .iter()
        .filter(|l| l.contains("held back by the cap"))
        .count();
    let refused = lines
        .iter()
        .filter(|l| l.contains("are drained by health_check already"))
        .count();
    assert!(
        (1..=50).contains(&drained),
        "{drained} drained, past the cap of 50:\n{}",
        lines.join("")
    );
    assert_eq!(
        drained + lifted + refused,
        failing,
        "every failing node drained, lifted its drain or was held back:\n{}",
        lines.join("")
    );
}
