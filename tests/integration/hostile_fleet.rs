//! Issue 21, "hostile fleet": a local user, a broken machine or a bad file must not take over
//! root, hang the readers or hide a machine. Each test failed before its fix.

use crate::network::free_port;
use crate::util::{bin_path, json_of};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn daemon(port: u16, pid_file: Option<&Path>, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(bin_path());
    cmd.args(["-r", "client", "--daemon", "--idle-timeout", "20", "--port"])
        .arg(port.to_string())
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(p) = pid_file {
        cmd.arg("--pid-file").arg(p);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Stops a daemon the test started, and waits until it is gone.
fn stop(pid: u64) {
    let pid = pid as i32;
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    for _ in 0..100 {
        // SAFETY: signal 0 only asks whether the process exists.
        if unsafe { libc::kill(pid, 0) } != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_daemons_pid_file_never_writes_through_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let port = free_port();
    // Where the old default put it, planted by another user in a shared temp directory.
    let planted = dir
        .path()
        .join(format!("health_check-responder-{port}.pid"));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let runtime = dir.path().join("runtime");
    let out = daemon(
        port,
        None,
        &[
            ("TMPDIR", dir.path()),
            ("HEALTH_CHECK_RUNTIME_DIR", &runtime),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out);
    let pid = doc["responder"]["daemon_pid"].as_u64().unwrap();
    let recorded = doc["responder"]["pid_file"].as_str().unwrap().to_string();
    stop(pid);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        recorded,
        runtime
            .join(format!("responder-{port}.pid"))
            .display()
            .to_string()
    );
    // The runtime directory is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&runtime).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "mode {mode:o}");

    // Named explicitly, a symlink is refused and nothing starts.
    let port = free_port();
    let out = daemon(port, Some(&planted), &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(json_of(&out)["responder"]["daemon_pid"].is_null());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "no responder may run without its pid file"
    );
}

#[test]
fn a_runtime_directory_others_can_write_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("shared");
    std::fs::create_dir(&runtime).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = daemon(free_port(), None, &[("HEALTH_CHECK_RUNTIME_DIR", &runtime)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("others can write"), "{stderr}");
}

#[test]
fn a_pid_file_of_a_running_responder_is_not_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("r.pid");
    let first = daemon(free_port(), Some(&pid_file), &[]);
    assert!(first.status.success());
    let pid = json_of(&first)["responder"]["daemon_pid"].as_u64().unwrap();
    let second = daemon(free_port(), Some(&pid_file), &[]);
    let stderr = String::from_utf8_lossy(&second.stderr).into_owned();
    let recorded = std::fs::read_to_string(&pid_file).unwrap();
    stop(pid);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("still runs (pid {pid})")),
        "{stderr}"
    );
    assert_eq!(recorded.trim(), pid.to_string());
    // Once it has stopped, its (removed or stale) pid file is free again.
    let third = daemon(free_port(), Some(&pid_file), &[]);
    assert!(third.status.success());
    stop(json_of(&third)["responder"]["daemon_pid"].as_u64().unwrap());
}

fn fixture() -> std::path::PathBuf {
    crate::fleet_util::fixture("document.json")
}

/// The fixture as machine `name` (distinct host name), written into `dir`.
fn machine_doc(dir: &Path, name: &str) -> std::path::PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    v["system"]["hostname"] = serde_json::json!(name);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

#[test]
fn an_output_file_never_inherits_a_planted_files_mode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !crate::util::needs(
        "an_output_file_never_inherits_a_planted_files_mode",
        &[crate::util::Need::Root],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mode.json");
    std::fs::write(&out, "planted").unwrap();
    // Planted by nobody, set-id and world-writable.
    std::os::unix::fs::chown(&out, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o6777)).unwrap();
    let r = crate::util::run(&["system", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let meta = std::fs::metadata(&out).unwrap();
    assert_eq!(meta.uid(), 0);
    assert_eq!(meta.mode() & 0o7002, 0, "mode {:o}", meta.mode());
    // Our own file keeps its mode, less set-id bits and world write.
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o6664)).unwrap();
    assert_eq!(
        crate::util::run(&["system", "-o", out.to_str().unwrap()]).code,
        0
    );
    assert_eq!(std::fs::metadata(&out).unwrap().mode() & 0o7777, 0o664);
}

#[test]
fn a_symlink_to_a_device_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("out.json");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    let r = crate::util::run(&["system", "-o", link.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("symbolic link to a device"),
        "{}",
        r.stderr
    );
    assert_eq!(crate::util::run(&["system", "-o", "/dev/stdout"]).code, 0);
}

#[test]
fn readers_take_regular_files_only_and_list_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    machine_doc(dir.path(), "a");
    machine_doc(dir.path(), "b");
    let fifo = dir.path().join("pipe.json");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/nonexistent", dir.path().join("dangling.json")).unwrap();
    let started = std::time::Instant::now();
    let (_, r, stderr) = crate::fleet_util::compare(&[dir.path().to_str().unwrap()]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no FIFO hangs it"
    );
    let why = |label: &str| {
        let m = r.machines.iter().find(|m| m.label == label).unwrap();
        (m.status, m.reasons.join(" "))
    };
    use health_check::wire::fleet::MachineStatus::Unreadable;
    assert_ne!(why("a").0, Unreadable, "{stderr}");
    assert_ne!(why("b").0, Unreadable, "{stderr}");
    assert_eq!(why("pipe").0, Unreadable);
    assert!(
        why("pipe").1.contains("not a regular file"),
        "{}",
        why("pipe").1
    );
    assert_eq!(why("dangling").0, Unreadable);
    // A document past the size limit is refused, not read.
    let big = crate::util::bin()
        .args(["compare", dir.path().join("a.json").to_str().unwrap()])
        .env("HEALTH_CHECK_MAX_DOCUMENT", "1000")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&big.stdout).unwrap();
    let reasons = report["machines"][0]["reasons"].to_string();
    assert!(
        reasons.contains("larger than a document can be"),
        "{reasons}"
    );
}

#[test]
fn a_deep_tree_and_an_unlistable_directory_do_not_stop_the_readers() {
    let dir = tempfile::tempdir().unwrap();
    let mut deep = dir.path().to_path_buf();
    for i in 0..120 {
        deep = deep.join(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    machine_doc(&deep, "bottom");
    machine_doc(dir.path(), "top");
    // A descriptor limit far below the depth: the walk holds one directory open at a time.
    let out = Command::new("sh")
        .args(["-c", "ulimit -n 32 && exec \"$0\" compare \"$1\""])
        .arg(bin_path())
        .arg(dir.path())
        .env_remove("HEALTH_CHECK_OPTS")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let labels: Vec<&str> = report["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert!(
        labels.contains(&"bottom") && labels.contains(&"top"),
        "{labels:?}"
    );
    // As another user, a directory it cannot list is listed with the reason; the rest is read.
    if !crate::util::needs(
        "a_deep_tree_and_an_unlistable_directory_do_not_stop_the_readers",
        &[
            crate::util::Need::Root,
            crate::util::Need::Tool("setpriv", "util-linux"),
        ],
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let readable = machine_doc(open.path(), "readable");
    std::fs::set_permissions(readable, std::fs::Permissions::from_mode(0o644)).unwrap();
    let closed = open.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    machine_doc(&closed, "hidden");
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin_path())
        .args(["compare", open.path().to_str().unwrap()])
        .env_remove("HEALTH_CHECK_OPTS")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let text = report["machines"].to_string();
    assert!(text.contains("cannot list this directory"), "{text}");
    assert!(text.contains("\"readable\""), "{text}");
}

#[test]
fn readers_stop_on_the_first_signal() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    for i in 0..1500 {
        machine_doc(dir.path(), &format!("m{i:04}"));
    }
    let mut child = Command::new(bin_path())
        .args(["compare", dir.path().to_str().unwrap()])
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let sent = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "one SIGTERM ends it"
    );
    assert!(
        status.signal() == Some(libc::SIGTERM) || status.code().is_some(),
        "{status:?}"
    );
}

#[test]
fn rules_with_aliases_or_deep_nesting_are_refused_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - &r {metrics: '^memory', tolerance_pct: 5}\n  - *r\n",
    )
    .unwrap();
    let r = crate::util::run(&[
        "compare",
        "--rules",
        rules.to_str().unwrap(),
        fixture().to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("line 2") && r.stderr.contains("anchors"),
        "{}",
        r.stderr
    );
    std::fs::write(
        &rules,
        format!("rules: {}{}\n", "[".repeat(500), "]".repeat(500)),
    )
    .unwrap();
    let r = crate::util::run(&["compare", "--rules", rules.to_str().unwrap(), "x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nested deeper"), "{}", r.stderr);
}

#[test]
fn text_from_documents_cannot_rewrite_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    v["system"]["hostname"] = serde_json::json!("\u{1b}]0;TITLE\u{7}\u{1b}[2J\u{202e}evil");
    std::fs::write(dir.path().join("evil.json"), v.to_string()).unwrap();
    std::fs::write(
        dir.path().join("gone.json"),
        r#"{"fleet_host_error": "\u001b[2J\u001b[H\u001b[32mall machines OK"}"#,
    )
    .unwrap();
    let r = crate::util::run(&[
        "compare",
        "--label-from",
        "hostname",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        !r.stderr.contains('\u{1b}') && !r.stderr.contains('\u{202e}'),
        "{:?}",
        r.stderr
    );
    assert!(r.stderr.contains("\\u{1b}[2J"), "{}", r.stderr);
    let html = dir.path().join("page.html");
    let r = crate::util::run(&[
        "report",
        dir.path().to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains('\u{1b}') && !page.contains('\u{202e}'));
}

#[test]
fn merge_with_a_baseline_adds_its_checks() {
    let dir = tempfile::tempdir().unwrap();
    let a = machine_doc(dir.path(), "a");
    let baseline = dir.path().join("b.yaml");
    let learned = crate::util::run(&[
        "baseline",
        a.to_str().unwrap(),
        "-o",
        baseline.to_str().unwrap(),
    ]);
    assert_eq!(learned.code, 0, "{}", learned.stderr);
    let merged = crate::util::run(&[
        "merge",
        a.to_str().unwrap(),
        "--baseline",
        baseline.to_str().unwrap(),
    ]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    let doc = merged.json();
    let n = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("baseline."))
        .count();
    assert!(n > 10, "{n} baseline checks");
}
