//! `health_check slurm` against a stand-in controller (issue 32: never the wrong action): a
//! scontrol and a sinfo that answer from files the test writes, byte for byte, and log every
//! call, so the cases a real controller gives rarely (an administrator's drain landing while the
//! check runs, an odd byte, an empty partition, a node name that is a host list, a call that
//! hangs with a grandchild) are made at will. The real cluster's tests are in
//! tests/python/test_slurm.py.

use crate::util::{NO_INTERFERENCE_LIMITS, bin_path, faulty_bin_path};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// scontrol: `show node` answers from `show.N` (the Nth call) or `show`; `update` is logged and,
/// when `after-update` exists, becomes the answer of later calls.
const SCONTROL: &str = r#"#!/bin/sh
d=$(dirname "$0")
printf '%s\n' "$*" >> "$d/calls.log"
case "$1" in
show)
    n=$(cat "$d/shows" 2>/dev/null || echo 0)
    n=$((n + 1))
    echo "$n" > "$d/shows"
    if [ -f "$d/show.$n" ]; then cat "$d/show.$n"; else cat "$d/show"; fi
    ;;
update)
    # A drain or resume (not a comment's mark) changes what show answers.
    case "$3" in State=*)
        if [ -f "$d/after-update" ]; then
            mv "$d/after-update" "$d/show"
            rm -f "$d"/show.[0-9]*
        fi
    ;; esac
    ;;
esac
"#;

/// sinfo: answers from `sinfo.out.N` (the Nth call) or `sinfo.out`.
const SINFO: &str = r#"#!/bin/sh
d=$(dirname "$0")
printf 'sinfo %s\n' "$*" >> "$d/calls.log"
n=$(cat "$d/sinfos" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$d/sinfos"
if [ -f "$d/sinfo.out.$n" ]; then cat "$d/sinfo.out.$n"; else cat "$d/sinfo.out"; fi
"#;

/// sinfo's lines (`-O NodeList,StateComplete,Comment,Reason`) for idle nodes.
fn sinfo(nodes: &[&str]) -> String {
    nodes
        .iter()
        .map(|n| format!("{n}\x1fidle\x1f(null)\x1fnone\n"))
        .collect()
}

/// A stand-in controller for the node `n1` in the partition `debug`.
struct Controller {
    dir: tempfile::TempDir,
}

fn show(state: &str, reason: &str) -> Vec<u8> {
    format!(
        "NodeName=n1 Arch=x86_64 CoresPerSocket=1\n   State={state} ThreadsPerCore=1\n   \
         Partitions=debug\n   Reason={reason}\n"
    )
    .into_bytes()
}

impl Controller {
    fn new() -> Controller {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [("scontrol", SCONTROL), ("sinfo", SINFO)] {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let c = Controller { dir };
        c.answer("show", &show("IDLE", "(null)"));
        c.answer("sinfo.out", sinfo(&["n1", "n2", "n3", "n4"]).as_bytes());
        c
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// What the file `name` answers from now on.
    fn answer(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.path(name), bytes).unwrap();
    }

    /// The calls made, one line each.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn updates(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|c| c.starts_with("update") && !c.contains(" Comment="))
            .collect()
    }

    /// The marks of intent written (`update NodeName=n1 Comment=...`), in order.
    fn marks(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|c| c.starts_with("update") && c.contains(" Comment="))
            .collect()
    }

    /// `health_check slurm` for node `n1`, its state in a private directory, the nanosleep
    /// benchmark alone made to fail or pass, draining at the first failing run.
    fn command(&self, failing: bool, extra: &[&str]) -> Command {
        self.command_of(&bin_path(), failing, extra)
    }

    /// [`Self::command`] run by `binary` (the tests' build with fault injection).
    fn command_of(&self, binary: &std::path::Path, failing: bool, extra: &[&str]) -> Command {
        let state = self.dir.path().join("state");
        let _ = std::fs::create_dir(&state);
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let rate = if failing { "1e12" } else { "1" };
        let mut cmd = Command::new(binary);
        cmd.args(["slurm", "--node", "n1", "--scontrol"])
            .arg(self.path("scontrol"))
            .arg("--sinfo")
            .arg(self.path("sinfo"))
            .arg("--state")
            .arg(state.join("slurm-state.json"))
            .args(["--drain-after", "1", "--resume-after", "1"])
            .args(["--slurm-timeout", "5", "--max-drained-pct", "50"])
            .args(["--only", "sleep", "--sleep-time", "0.1"])
            .arg(format!("--threshold=sleepbench.calls_per_thread={rate}"))
            .args([
                "--threshold=sleepbench.total_cpu_pct=1000",
                "--threshold=sleepbench.irq_pct=1000",
            ])
            .args(NO_INTERFERENCE_LIMITS)
            .args(extra)
            .env_remove("HEALTH_CHECK_OPTS")
            .env_remove("HEALTH_CHECK_HISTORY")
            .env_remove("SLURMD_NODENAME")
            .env_remove("SLURM_SCRIPT_CONTEXT")
            .env_remove("SLURM_NODE_IS_HEALTHY");
        cmd
    }

    fn run(&self, failing: bool, extra: &[&str]) -> Ran {
        Ran::of(self.command(failing, extra).output().unwrap())
    }
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn of(out: std::process::Output) -> Ran {
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

#[test]
fn a_failing_run_drains_and_reads_the_node_back_and_stdout_is_one_line() {
    let c = Controller::new();
    c.answer(
        "after-update",
        &show(
            "IDLE+DRAIN",
            "health_check: sleepbench.calls_per_thread: check failed [root@t]",
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("doc.json");
    let r = c.run(true, &["--output", doc.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        c.updates(),
        [
            "update NodeName=n1 State=DRAIN Reason=health_check: sleepbench.calls_per_thread: check failed"
        ]
    );
    // Read again right before the update and once after it.
    let shows = c.calls().iter().filter(|l| l.starts_with("show")).count();
    assert_eq!(shows, 3, "{:?}", c.calls());
    // slurmd logs a failing program's output: one line, the document in --output.
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("Slurm now says IDLE+DRAIN"),
        "{}",
        r.stdout
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    assert!(written["sleepbench"].is_object());
}

/// A node in no partition runs no job and has no partition to cap: it drains without a mark of
/// intent, and an administrator's comment on it stays (a mark written from no partition's view
/// of its comment replaced it).
#[test]
fn a_node_in_no_partition_drains_without_touching_its_comment() {
    let c = Controller::new();
    let alone = |state: &str, reason: &str| {
        format!(
            "NodeName=n1 Arch=x86_64 CoresPerSocket=1\n   State={state} ThreadsPerCore=1\n   \
             Comment=rack 4, do not move\n   Reason={reason}\n"
        )
        .into_bytes()
    };
    c.answer("show", &alone("IDLE", "(null)"));
    c.answer(
        "after-update",
        &alone(
            "IDLE+DRAIN",
            "health_check: sleepbench.calls_per_thread: check failed [root@t]",
        ),
    );
    let r = c.run(true, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(c.updates().len(), 1, "{:?}", c.calls());
    assert!(
        !c.calls().iter().any(|l| l.contains("Comment=")),
        "{:?}",
        c.calls()
    );
}

/// slurmd's word on the node (`SLURM_NODE_IS_HEALTHY`, Slurm 26.05.2+) must agree with the
/// controller's answer: a node slurmd calls out of service while the controller reads it idle is
/// changing, and nothing is done; where both agree, the failing run drains.
#[test]
fn a_node_slurmd_and_the_controller_disagree_on_is_left_alone() {
    let c = Controller::new();
    let mut cmd = c.command(true, &[]);
    let r = Ran::of(cmd.env("SLURM_NODE_IS_HEALTHY", "no").output().unwrap());
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    assert!(
        r.stdout.contains("SLURM_NODE_IS_HEALTHY=no") && r.stdout.contains("no action"),
        "{}",
        r.stdout
    );
    let mut cmd = c.command(true, &[]);
    Ran::of(cmd.env("SLURM_NODE_IS_HEALTHY", "yes").output().unwrap());
    assert_eq!(c.updates().len(), 1, "{:?}", c.calls());
}

#[test]
fn an_administrators_drain_made_while_the_check_runs_is_never_touched() {
    let c = Controller::new();
    let admin = show(
        "IDLE+DRAIN",
        "admin: replacing DIMM B2, do not resume [alice@2026-12-02T10:00:00]",
    );
    // Idle when the run starts; drained by an administrator when the drain would be sent.
    c.answer("show.1", &show("IDLE", "(null)"));
    c.answer("show", &admin);
    // The partition shows n1's mark (a stale one, so that every read finds one to clear).
    let marked = sinfo(&["n1", "n2", "n3", "n4"]).replacen(
        "n1\x1fidle\x1f(null)",
        "n1\x1fidle\x1fhealth_check-cap:choosing@1",
        1,
    );
    c.answer("sinfo.out", marked.as_bytes());
    let r = c.run(true, &[]);
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    assert!(
        r.stdout.contains("changed while the check ran"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("replacing DIMM B2"), "{}", r.stdout);
    // It took its turn under the cap, then did not drain: its mark is cleared, not left to hold
    // the partition's other nodes back.
    let calls = c.calls();
    let last_mark = calls.iter().rev().find(|c| c.contains("Comment="));
    assert!(
        last_mark.is_some_and(|c| !c.contains("health_check-cap:")),
        "{calls:?}"
    );
    // Our drain, re-drained by an administrator during a healthy run: not resumed.
    let c = Controller::new();
    c.answer(
        "show.1",
        &show(
            "IDLE+DRAIN",
            "health_check: sleepbench.calls_per_thread: check failed [root@t]",
        ),
    );
    c.answer("show", &admin);
    let r = c.run(false, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    assert!(r.stdout.contains("would resume"), "{}", r.stdout);
}

#[test]
fn one_odd_byte_in_the_controllers_answer_is_not_an_empty_answer() {
    // An administrator's reason with byte 0xFC (Latin-1 'ü'): the node reads drained by
    // someone else, and stays so.
    let c = Controller::new();
    let mut answer = show("IDLE+DRAIN", "");
    let at = answer.len() - 1;
    answer.splice(at..at, b"Gr\xfcn: fan [bob@t]".iter().copied());
    c.answer("show", &answer);
    let r = c.run(true, &[]);
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    assert!(
        r.stdout.contains("held by someone else (Gr\u{fffd}n: fan)"),
        "{}",
        r.stdout
    );
    // An answer that cannot be read at all: state unknown, no action.
    let c = Controller::new();
    c.answer("show", b"\xff\xfe garbage\n");
    let r = c.run(true, &[]);
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    assert!(r.stderr.contains("state unknown"), "{}", r.stderr);
}

#[test]
fn a_partition_that_cannot_be_counted_drains_nothing_and_a_large_one_is_read() {
    for (answer, why) in [
        (Vec::new(), "listed no node"),
        (sinfo(&["n2", "n3"]).into_bytes(), "does not hold this node"),
        // A line of fewer fields than asked for (one without a separator after a whole line is
        // the rest of a reason over several lines: node::records).
        (
            format!("{}not a line\x1fof sinfo's\n", sinfo(&["n1"])).into_bytes(),
            "cannot be read",
        ),
    ] {
        let c = Controller::new();
        c.answer("sinfo.out", &answer);
        let r = c.run(true, &[]);
        assert!(c.updates().is_empty(), "{why}: {:?}", c.calls());
        assert!(r.stdout.contains(why), "{why}: {}", r.stdout);
    }
    // 30,000 nodes (over 1 MiB, past a pipe's 64 KiB): read whole, and the cap counts them.
    let mut big = sinfo(&["n1"]);
    for i in 2..=30_000 {
        let reason = if i <= 3_000 {
            "idle+drain\x1f(null)\x1fhealth_check: memory: check failed"
        } else {
            "idle\x1f(null)\x1fnone"
        };
        big.push_str(&format!("node-with-a-longish-name-{i:05}\x1f{reason}\n"));
    }
    assert!(big.len() > 1 << 20);
    let c = Controller::new();
    c.answer("sinfo.out", big.as_bytes());
    let started = Instant::now();
    let r = c.run(true, &["--max-drained-pct", "5"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(c.updates().is_empty());
    assert!(
        r.stdout
            .contains("2999 of 30000 nodes of partition 'debug' are drained by health_check"),
        "{}",
        r.stdout
    );
}

/// `update` with its mark's time (taken by the run, so possibly a second or two after the test's
/// `now`) checked and replaced by `T`.
fn unstamped(update: &str, now: u64) -> String {
    let Some((head, stamp)) = update.rsplit_once('@') else {
        return update.to_string();
    };
    let at: u64 = stamp.parse().unwrap_or_else(|_| panic!("{update}"));
    assert!(
        (now..now + 30).contains(&at),
        "{update}: not within 30 s of {now}"
    );
    format!("{head}@T")
}

/// Every node of a partition fails at once: each takes a ticket before it drains (a mark in
/// its comment), and a node whose ticket comes after the cap's worth of others does not drain at
/// all (before, it drained and lifted its drain again); its mark is cleared either way, and an
/// administrator's comment kept.
#[test]
fn nodes_failing_at_once_take_their_turn_before_any_drains() {
    let ours = "health_check: sleepbench.calls_per_thread: check failed";
    let with = |n1: &str, n0: &str| {
        format!(
            "n0\x1fidle\x1f{n0}\x1fnone\nn1\x1fidle\x1f{n1}\x1fnone\n\
             n3\x1fidle\x1f(null)\x1fnone\nn4\x1fidle\x1f(null)\x1fnone\n"
        )
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // n0 took ticket 1 first: n1, with ticket 2, is past a cap of one node.
    let c = Controller::new();
    c.answer("sinfo.out.1", with("DIMM ordered", "(null)").as_bytes());
    c.answer(
        "sinfo.out.2",
        with(
            &format!("DIMM ordered health_check-cap:choosing@{now}"),
            &format!("health_check-cap:1@{now}"),
        )
        .as_bytes(),
    );
    c.answer(
        "sinfo.out",
        with(
            &format!("DIMM ordered health_check-cap:2@{now}"),
            &format!("health_check-cap:1@{now}"),
        )
        .as_bytes(),
    );
    let r = c.run(true, &["--max-drained-pct", "25"]);
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    let updates = c.marks();
    assert_eq!(
        unstamped(&updates[0], now),
        "update NodeName=n1 Comment=DIMM ordered health_check-cap:choosing@T"
    );
    assert_eq!(
        unstamped(&updates[1], now),
        "update NodeName=n1 Comment=DIMM ordered health_check-cap:2@T"
    );
    assert_eq!(
        updates.last().unwrap(),
        "update NodeName=n1 Comment=DIMM ordered"
    );
    assert!(r.stdout.contains("held back by the cap"), "{}", r.stdout);
    assert!(
        r.stdout.contains("1 more are ahead of this one"),
        "{}",
        r.stdout
    );
    // A failing run still exits 1 as a HealthCheckProgram (as a Prolog: 0, the node is not ours).
    assert_eq!(r.code, 1, "{}", r.stderr);
    // No other node marked: n1's ticket is the first, it drains, then clears its mark.
    let c = Controller::new();
    c.answer(
        "after-update",
        &show("IDLE+DRAIN", &format!("{ours} [root@t]")),
    );
    c.answer("sinfo.out.1", with("(null)", "(null)").as_bytes());
    c.answer(
        "sinfo.out",
        with(&format!("health_check-cap:1@{now}"), "(null)").as_bytes(),
    );
    let r = c.run(true, &["--max-drained-pct", "25"]);
    let calls = c.calls();
    let drain = calls
        .iter()
        .position(|u| u.contains("State=DRAIN"))
        .unwrap_or_else(|| panic!("{calls:?}"));
    assert!(
        calls[drain + 1..].iter().any(|u| u.ends_with("Comment=")),
        "the mark is cleared after the drain: {calls:?}"
    );
    assert!(
        r.stdout.contains("Slurm now says IDLE+DRAIN"),
        "{}",
        r.stdout
    );
}

/// A run stuck past its `--deadline` (a section that never returns, as on a sick node) is a
/// failing run: counted and acted on before the program gives up, where slurmd would only kill it.
#[test]
fn a_run_stuck_past_its_deadline_counts_as_failing_and_drains() {
    let reason = "health_check: sleep: section failed to run";
    let c = Controller::new();
    c.answer(
        "after-update",
        &show("IDLE+DRAIN", &format!("{reason} [root@t]")),
    );
    let started = Instant::now();
    let r = Ran::of(
        c.command_of(&faulty_bin_path(), false, &["--deadline", "1"])
            .env("HEALTH_CHECK_INJECT_HANG", "sleep")
            .output()
            .unwrap(),
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        c.updates(),
        [format!("update NodeName=n1 State=DRAIN Reason={reason}")]
    );
    assert!(r.stderr.contains("did not stop"), "{}", r.stderr);
}

#[test]
fn a_node_name_that_is_not_one_node_never_reaches_scontrol() {
    for name in ["n[1-100]", "ALL", "n1 State=RESUME", "n1,n2"] {
        let c = Controller::new();
        let r = Ran::of(
            c.command(true, &[])
                .args(["--node", name])
                .output()
                .unwrap(),
        );
        assert!(c.calls().is_empty(), "{name}: {:?}", c.calls());
        assert!(
            r.stderr.contains("is not the name of one Slurm node"),
            "{name}: {}",
            r.stderr
        );
    }
}

#[test]
fn a_call_that_hangs_with_a_grandchild_is_cut_at_its_deadline() {
    let c = Controller::new();
    // Answers, then leaves a grandchild holding the pipe for 30 s.
    std::fs::write(
        c.path("scontrol"),
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$(dirname \"$0\")/calls.log\"\n\
         echo 'NodeName=n1 State=IDLE'\nsleep 30 &\n",
    )
    .unwrap();
    let started = Instant::now();
    let r = c.run(true, &["--slurm-timeout", "1"]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "{took:?}: {}", r.stderr);
    assert!(
        r.stderr.contains("did not answer within 1 s"),
        "{}",
        r.stderr
    );
    assert!(c.updates().is_empty());
}

#[test]
fn no_act_decides_and_logs_but_changes_nothing() {
    let c = Controller::new();
    let r = c.run(true, &["--no-act"]);
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    assert!(
        r.stdout.contains("would drain after 1 failing run(s)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("--no-act"), "{}", r.stdout);
}

#[test]
fn a_state_directory_others_can_write_is_refused_and_nothing_is_done() {
    let c = Controller::new();
    let shared = c.dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = Ran::of(
        c.command(true, &[])
            .arg("--state")
            .arg(shared.join("slurm-state.json"))
            .output()
            .unwrap(),
    );
    assert!(c.updates().is_empty(), "{:?}", c.calls());
    assert!(r.stdout.contains("refusing the state file"), "{}", r.stdout);
    assert!(
        r.stdout.contains("writable by group or others"),
        "{}",
        r.stdout
    );
    assert!(!shared.join("slurm-state.lock").exists());
}

#[test]
fn an_output_that_cannot_be_written_does_not_change_the_verdict() {
    let c = Controller::new();
    let r = c.run(false, &["--output", "/nonexistent-dir/doc.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot write the document"),
        "{}",
        r.stderr
    );
    // node-problem-detector: the exit code says what the line says.
    let out = Command::new(bin_path())
        .args(["sleep", "--sleep-time", "0.1", "--format", "npd"])
        .args([
            "--threshold=sleepbench.total_cpu_pct=1000",
            "--threshold=sleepbench.irq_pct=1000",
        ])
        .args(["--threshold=sleepbench.calls_per_thread=1"])
        .args(NO_INTERFERENCE_LIMITS)
        .args(["--output", "/nonexistent-dir/doc.json"])
        .env_remove("HEALTH_CHECK_OPTS")
        .output()
        .unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        (Some(0), "health_check: ok")
    );
}

#[test]
fn as_a_prolog_it_exits_non_zero_only_when_it_holds_the_node_drained() {
    let c = Controller::new();
    // The first failing run of two: not drained, so slurmd must not drain it either.
    let r = Ran::of(
        c.command(true, &["--drain-after", "2"])
            .env("SLURM_SCRIPT_CONTEXT", "prolog_slurmd")
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(c.updates().is_empty());
    // The second drains it: now the Prolog fails, and the reason is ours.
    c.answer(
        "after-update",
        &show(
            "IDLE+DRAIN",
            "health_check: sleepbench.calls_per_thread: check failed [root@t]",
        ),
    );
    let r = Ran::of(
        c.command(true, &["--drain-after", "2"])
            .env("SLURM_SCRIPT_CONTEXT", "prolog_slurmd")
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(c.updates().len(), 1);
}

/// The stand-in's own files stay put: a test that leaves its directory behind is a bug.
#[test]
fn the_stand_in_answers_as_written() {
    let c = Controller::new();
    let out = Command::new(c.path("scontrol"))
        .args(["show", "node", "n1"])
        .output()
        .unwrap();
    assert_eq!(out.stdout, show("IDLE", "(null)"));
    assert!(Path::new(&c.path("calls.log")).exists());
}

/// What we drained and why lives in our own state file: a reason Slurm cut (an NHC check with a
/// 277-character subject) and a drain for an overrun ("the run") both resume after passing
/// runs. Before, the first no longer named a check and the second named no section: neither
/// ever came back.
#[test]
fn every_drain_of_ours_comes_back() {
    // An NHC line failing on a path of over 277 characters: the reason is cut at 255 bytes, and
    // Slurm keeps even less of it here.
    let dir = tempfile::tempdir().unwrap();
    let long = dir
        .path()
        .join("a".repeat(120))
        .join("b".repeat(120))
        .join("c".repeat(40));
    assert!(long.as_os_str().len() > 277);
    let conf = dir.path().join("nhc.conf");
    std::fs::write(
        &conf,
        format!("* || check_file_test -e {}\n", long.display()),
    )
    .unwrap();
    let c = Controller::new();
    let reason = format!(
        "health_check: node.check_file_test:{}: check failed",
        long.display()
    );
    c.answer(
        "after-update",
        &show("IDLE+DRAIN", &format!("{} [root@t]", &reason[..200])),
    );
    let nhc = ["--nhc-conf", conf.to_str().unwrap()];
    let r = c.run(false, &nhc);
    assert_eq!(c.updates().len(), 1, "{}", r.stdout);
    assert!(c.updates()[0].contains("State=DRAIN"), "{:?}", c.updates());
    // The path is there now: the check passes, and the drain is lifted, its reason cut or not.
    std::fs::create_dir_all(&long).unwrap();
    c.answer("after-update", &show("IDLE", "(null)"));
    let r = c.run(false, &nhc);
    assert_eq!(
        c.updates().last().map(String::as_str),
        Some("update NodeName=n1 State=UNDRAIN"),
        "{}\n{:?}",
        r.stdout,
        c.calls()
    );

    // A run stuck past its deadline outside any section (here in an NHC command, which runs
    // only from a file only root can change) drains for "the run"; the next run that ends in
    // time lifts it.
    if !crate::util::needs(
        "every_drain_of_ours_comes_back (the overrun)",
        &[crate::util::Need::Root],
    ) {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("slurm-overrun");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("nhc.conf");
    std::fs::write(&conf, "* || check_cmd_status -t 20 /bin/sleep 20\n").unwrap();
    let c = Controller::new();
    let reason = "health_check: the run: section failed to run";
    c.answer(
        "after-update",
        &show("IDLE+DRAIN", &format!("{reason} [root@t]")),
    );
    let r = c.run(
        false,
        &["--deadline", "2", "--nhc-conf", conf.to_str().unwrap()],
    );
    assert_eq!(
        c.updates(),
        [format!("update NodeName=n1 State=DRAIN Reason={reason}")],
        "{}",
        r.stderr
    );
    c.answer("after-update", &show("IDLE", "(null)"));
    let r = c.run(false, &[]);
    assert_eq!(
        c.updates().last().map(String::as_str),
        Some("update NodeName=n1 State=UNDRAIN"),
        "{}",
        r.stdout
    );
}

/// `--no-act` leaves no trace: no streak file, no mark, no history record.
#[test]
fn no_act_writes_nothing_at_all() {
    let c = Controller::new();
    let history = c.path("history.sqlite");
    let r = c.run(true, &["--no-act", "--history", history.to_str().unwrap()]);
    assert!(r.stdout.contains("would drain"), "{}", r.stdout);
    assert!(
        c.updates().is_empty() && c.marks().is_empty(),
        "{:?}",
        c.calls()
    );
    assert!(!c.path("state").join("slurm-state.json").exists());
    assert!(!history.exists(), "--no-act recorded the run");
}
