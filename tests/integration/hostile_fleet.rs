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
