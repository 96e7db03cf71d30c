//! Issue 32, "never the wrong action", outside Slurm (tests/integration/slurm_actions.rs has the
//! Slurm mode): a busy machine is inconclusive, not failed; an uncorrected error keeps failing
//! until an operator acknowledges it; a history only its owner can steer; bad text and odd files
//! cannot crash, hang or steer a run. Each test failed before its fix.

use crate::util::{Need, bin_path, exclusive, json_of, needs, run};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn check<'a>(doc: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
}

/// A CPU burner on one CPU for as long as it lives (a job beside the check).
struct Burner(std::process::Child);

impl Burner {
    fn start() -> Burner {
        Burner(
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A job on one CPU beside the nanosleep benchmark moves DCPerf's busy-CPU verdict as much as the
/// rate: both are inconclusive, naming the load, and node-problem-detector hears Unknown (2),
/// not NonOK (1).
#[test]
fn a_job_beside_the_check_makes_its_cpu_figures_inconclusive_not_failed() {
    let _quiet = exclusive();
    let _job = Burner::start();
    std::thread::sleep(Duration::from_millis(300));
    let r = run(&["sleep", "--sleep-time", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let busy = check(&doc, "sleepbench.total_cpu").unwrap();
    assert_eq!(busy["status"], "inconclusive", "{busy}");
    assert!(
        busy["message"]
            .as_str()
            .unwrap()
            .contains("other processes used"),
        "{busy}"
    );
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] != "fail"),
        "{doc}"
    );
    let npd = run(&["sleep", "--sleep-time", "1", "--format", "npd"]);
    assert_eq!(npd.code, 2, "{}", npd.stdout);
    assert!(
        npd.stdout.starts_with("health_check: inconclusive"),
        "{}",
        npd.stdout
    );
}

/// The history decides whether a node is drained: a file another user made, or one in a
/// directory others can write, is refused and left as it was.
#[test]
fn a_history_someone_else_could_change_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o777);
    let history = shared.join("history.sqlite");
    let refused = |path: &Path, why: &str| {
        let r = run(&[
            "sleep",
            "--sleep-time",
            "0.1",
            "--history",
            path.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let doc = r.json();
        let skip = check(&doc, "history").unwrap_or_else(|| panic!("no history check: {doc}"));
        assert_eq!(skip["status"], "skip");
        let message = skip["message"].as_str().unwrap();
        assert!(message.contains("refusing the history"), "{message}");
        assert!(message.contains(why), "{message}");
    };
    refused(&history, "writable by group or others");
    assert!(
        !history.exists(),
        "nothing was made in the shared directory"
    );
    if !needs(
        "a_history_someone_else_could_change_is_refused_and_left_untouched (another user's file)",
        &[Need::Root],
    ) {
        return;
    }
    // Another user pre-creates the file, mode 666, in a directory both can write (sticky, as
    // /tmp): refused, and never written.
    chmod(&shared, 0o1777);
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    for (parent, what) in [
        (&shared, "writable by group or others"),
        (&mine, "owned by uid 65534"),
    ] {
        let planted = parent.join("history.sqlite");
        std::fs::write(&planted, b"").unwrap();
        chmod(&planted, 0o666);
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
        refused(&planted, what);
        assert_eq!(std::fs::metadata(&planted).unwrap().len(), 0);
    }
}

#[test]
fn multi_byte_text_in_retention_or_since_is_a_usage_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("h.sqlite");
    for keep in ["１２", "9ü", "ü"] {
        let r = run(&[
            "sleep",
            "--sleep-time",
            "0.1",
            "--history",
            h.to_str().unwrap(),
            "--history-keep",
            keep,
        ]);
        assert_eq!(r.code, 2, "--history-keep {keep}: {}", r.stderr);
        assert!(r.stderr.contains("--history-keep"), "{}", r.stderr);
    }
    let r = run(&[
        "sleep",
        "--sleep-time",
        "0.1",
        "--history",
        h.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for since in ["9ü", "１２", "２０２６-01-01"] {
        let r = run(&["history", h.to_str().unwrap(), "--since", since]);
        assert_eq!(r.code, 2, "--since {since}: {}", r.stderr);
        assert!(r.stderr.contains("--since"), "{}", r.stderr);
    }
}

/// Two responders started at once with one pid file: one detaches, the other refuses; none is
/// left running that no pid file names.
#[test]
fn two_daemons_started_together_with_one_pid_file_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("r.pid");
    let start = |port: u16| {
        Command::new(bin_path())
            .args(["-r", "client", "--daemon", "--idle-timeout", "20", "--port"])
            .arg(port.to_string())
            .arg("--pid-file")
            .arg(&pid_file)
            .env_remove("HEALTH_CHECK_OPTS")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for _ in 0..5 {
        let (a, b) = (
            start(crate::network::free_port()),
            start(crate::network::free_port()),
        );
        let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        let pids: Vec<u64> = outs
            .iter()
            .filter_map(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
            .filter_map(|d| d["responder"]["daemon_pid"].as_u64())
            .collect();
        for pid in &pids {
            // SAFETY: kill(2) on a process this test started.
            unsafe { libc::kill(*pid as i32, libc::SIGTERM) };
        }
        let refused: Vec<String> = outs
            .iter()
            .filter(|o| !o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect();
        assert_eq!(pids.len(), 1, "both detached: {pids:?}");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].contains("starting or running") || refused[0].contains("still runs"),
            "{}",
            refused[0]
        );
        // Its pid file goes with it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while pid_file.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!pid_file.exists());
    }
}

/// A mount (bind, read-only) of a directory the test made, removed when dropped.
struct ReadOnlyMount(PathBuf);

impl ReadOnlyMount {
    fn of(source: &Path, target: &Path) -> ReadOnlyMount {
        std::fs::create_dir_all(target).unwrap();
        let ok = |args: &[&str]| {
            let s = Command::new("mount").args(args).status().unwrap();
            assert!(s.success(), "mount {args:?}");
        };
        ok(&["--bind", source.to_str().unwrap(), target.to_str().unwrap()]);
        let m = ReadOnlyMount(target.to_path_buf());
        ok(&["-o", "remount,bind,ro", target.to_str().unwrap()]);
        m
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_history_on_read_only_media_can_be_read() {
    if !needs(
        "a_history_on_read_only_media_can_be_read",
        &[Need::Root, Need::Tool("mount", "mount")],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    chmod(&data, 0o700);
    let h = data.join("h.sqlite");
    for _ in 0..2 {
        let r = run(&[
            "sleep",
            "--sleep-time",
            "0.1",
            "--history",
            h.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    // As a copy is kept: the file alone (its write-ahead log folded in by the last writer).
    let ro = dir.path().join("ro");
    let _mount = ReadOnlyMount::of(&data, &ro);
    let r = run(&["history", ro.join("h.sqlite").to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.json()["runs"].as_array().unwrap().len(),
        2,
        "{}",
        r.stdout
    );
}

/// The binary run with a fake EDAC tree laid over /sys/devices/system in a mount namespace of
/// its own (overlayfs: the real tree stays as it is beneath), so the kernel's counters are the
/// test's.
fn with_fake_edac(edac: &Path, args: &[&str]) -> std::process::Output {
    Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            r#"mount -t overlay overlay -o "lowerdir=$1:/sys/devices/system" /sys/devices/system && shift && exec "$@""#,
            "sh",
        ])
        .arg(edac)
        .arg(bin_path())
        .args(args)
        .env_remove("HEALTH_CHECK_OPTS")
        .env_remove("HEALTH_CHECK_HISTORY")
        .output()
        .unwrap()
}

/// A fake `edac/mc/mc0` holding `ue` uncorrected errors, under `root` (as the overlay's upper
/// layer of /sys/devices/system).
fn fake_edac(root: &Path, ue: u64) {
    let mc = root.join("edac/mc/mc0");
    std::fs::create_dir_all(&mc).unwrap();
    for (file, v) in [
        ("ce_count", 0),
        ("ue_count", ue),
        ("ce_noinfo_count", 0),
        ("ue_noinfo_count", ue),
    ] {
        let p = mc.join(file);
        let _ = std::fs::remove_file(&p);
        std::fs::write(p, format!("{v}\n")).unwrap();
    }
}

fn edac_check(out: &std::process::Output) -> serde_json::Value {
    let doc = json_of(out);
    check(&doc, "errors.edac:mc0")
        .unwrap_or_else(|| panic!("no errors.edac:mc0: {doc}"))
        .clone()
}

fn fake_sysfs_usable(test: &str) -> bool {
    needs(test, &[Need::Root, Need::Tool("unshare", "util-linux")])
}

/// An uncorrected memory error fails every run while its count stands (with --history, where
/// the window is since the last run: before, only the first run failed), passes once an
/// operator acknowledges it (who and when in the message), and fails again when it grows.
#[test]
fn an_uncorrected_error_keeps_failing_until_acknowledged_and_again_when_it_grows() {
    let test = "an_uncorrected_error_keeps_failing_until_acknowledged_and_again_when_it_grows";
    if !fake_sysfs_usable(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("sys");
    fake_edac(&sys, 1);
    let h = dir.path().join("h.sqlite");
    let history = ["--history", h.to_str().unwrap()];
    let system = |extra: &[&str]| {
        let mut args = vec!["system"];
        args.extend_from_slice(&history);
        args.extend_from_slice(extra);
        with_fake_edac(&sys, &args)
    };
    for run in 1..=3 {
        let c = edac_check(&system(&[]));
        assert_eq!(c["status"], "fail", "run {run}: {c}");
        assert!(
            c["message"]
                .as_str()
                .unwrap()
                .contains("1 uncorrected memory error(s) on mc0 since boot"),
            "{c}"
        );
    }
    let ack = Command::new(bin_path())
        .args([
            "acknowledge",
            "errors.edac:mc0",
            "--note",
            "DIMM B2 ordered",
        ])
        .args(history)
        .env("SUDO_USER", "alice")
        .output()
        .unwrap();
    assert!(
        ack.status.success(),
        "{}",
        String::from_utf8_lossy(&ack.stderr)
    );
    assert_eq!(json_of(&ack)["acknowledged"][0]["count"], 1);
    let c = edac_check(&system(&[]));
    assert_eq!(c["status"], "pass", "{c}");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("acknowledged by alice (sudo, uid 0)"),
        "{message}"
    );
    assert!(message.contains("DIMM B2 ordered"), "{message}");
    fake_edac(&sys, 2);
    let c = edac_check(&system(&[]));
    assert_eq!(c["status"], "fail", "{c}");
    assert_eq!(c["value"], 1.0, "{c}");
    // Nothing to acknowledge is said, not recorded.
    let none = Command::new(bin_path())
        .args(["acknowledge", "errors.aer:0000:00:00.0"])
        .args(history)
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("nothing to acknowledge"));
}

/// A counter file that is a FIFO (or any file that would block on open) is not waited for.
#[test]
fn a_counter_that_is_a_fifo_does_not_hang_the_run() {
    if !fake_sysfs_usable("a_counter_that_is_a_fifo_does_not_hang_the_run") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("sys");
    fake_edac(&sys, 0);
    let fifo = sys.join("edac/mc/mc0/ue_count");
    std::fs::remove_file(&fifo).unwrap();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let started = Instant::now();
    let out = with_fake_edac(&sys, &["system"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(json_of(&out)["system"].is_object());
}
