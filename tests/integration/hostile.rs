//! What a hostile tester broke, each with a test that failed before the fix: files clobbered
//! through `--output`, too many threads, local errors shown as packet loss, figures from a peer
//! trusted as sent, a storage section "ok" with a failed test, and messages that misled.

use crate::util::{Need, bin_path, needs, run};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::process::{Command, Stdio};

fn document_in(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn output_never_writes_through_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = dir.path().join("result.json");
    // The run takes a moment; meanwhile the names the old code used are planted, pointing at
    // the victim (the process id is known once it started).
    let child = Command::new(bin_path())
        .args(["sleep", "--sleep-time", "0.5", "--output"])
        .arg(&out)
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    for p in pid..pid + 50 {
        let _ =
            std::os::unix::fs::symlink(&victim, dir.path().join(format!(".result.json.tmp-{p}")));
    }
    // And the target itself is a symlink to the victim.
    std::os::unix::fs::symlink(&victim, &out).unwrap();
    let status = child.wait_with_output().unwrap().status;
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let meta = std::fs::symlink_metadata(&out).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the symlink was replaced by the document"
    );
    assert!(document_in(&out)["sleepbench"].is_object());
    // The new file follows the umask, not the temporary file's 0600.
    let umask = health_check::os::umask();
    assert_eq!(meta.permissions().mode() & 0o777, 0o666 & !umask);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn output_to_a_device_or_fifo_writes_into_it_and_leaves_it_there() {
    let r = run(&["sleep", "--sleep-time", "0.1", "--output", "/dev/null"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/null is still a device"
    );
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    let into_fifo = || {
        run(&[
            "sleep",
            "--sleep-time",
            "0.1",
            "--output",
            fifo.to_str().unwrap(),
        ])
    };
    let r = into_fifo();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = reader.join().unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(doc["sleepbench"].is_object());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    // Nobody reads: an error at once, not a hang; the document still goes to stdout.
    let r = into_fifo();
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no process reads"), "{}", r.stderr);
    assert!(r.json()["sleepbench"].is_object());
    // A FIFO another user planted under the name (in /tmp, say): they would read the document.
    if crate::util::needs(
        "output_to_a_device_or_fifo_writes_into_it_and_leaves_it_there (another user's FIFO)",
        &[crate::util::Need::Root],
    ) {
        std::os::unix::fs::lchown(&fifo, Some(65534), None).unwrap();
        let r = into_fifo();
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains("another user owns"), "{}", r.stderr);
    }
}

#[test]
fn output_refuses_block_devices_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&[
        "sleep",
        "--sleep-time",
        "0.1",
        "--output",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("is a directory"), "{}", r.stderr);
    if !needs(
        "output_refuses_block_devices_and_directories",
        &[Need::Root],
    ) {
        return;
    }
    let block = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device()));
    if let Some(dev) = block {
        let before = std::fs::metadata(&dev).unwrap().modified().ok();
        let r = run(&[
            "sleep",
            "--sleep-time",
            "0.1",
            "--output",
            dev.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains("block device"), "{}", r.stderr);
        assert_eq!(std::fs::metadata(&dev).unwrap().modified().ok(), before);
    }
}

#[test]
fn too_many_sleep_threads_fail_the_section_not_the_process() {
    let test = "too_many_sleep_threads_fail_the_section_not_the_process";
    let Some((capacity, limit)) = health_check::os::thread_capacity() else {
        crate::util::unavailable::<()>(test, "this process's thread limit cannot be read");
        return;
    };
    let wanted = capacity + 5000;
    if wanted > 100_000 {
        crate::util::unavailable::<()>(
            test,
            &format!("this machine holds {capacity} threads, past --sleep-threads' range"),
        );
        return;
    }
    let r = run(&[
        "-r",
        "server",
        "-c",
        "",
        "--only",
        "system,sleep",
        "--sleep-time",
        "0.2",
        "--sleep-threads",
        &wanted.to_string(),
    ]);
    assert_eq!(r.code, 0, "a document, not an abort: {}", r.stderr);
    let doc = r.json();
    let outcome = doc["health_check"]["sections"]["sleep"].as_str().unwrap();
    assert!(
        outcome.starts_with("failed: ") && outcome.contains(limit),
        "{outcome}"
    );
    assert_eq!(doc["health_check"]["sections"]["system"], "ok");
}

#[test]
fn sleep_figures_cover_only_the_window_in_which_every_thread_ran() {
    let r = run(&["sleep", "--sleep-threads", "400", "--sleep-time", "0.3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = &r.json()["sleepbench"];
    let seconds = s["seconds"].as_f64().unwrap();
    assert!(
        (0.3..0.6).contains(&seconds),
        "the window, not the start-up: {seconds}"
    );
    assert!(s["startup_seconds"].as_f64().unwrap() >= 0.0);
    let per_thread = s["calls_per_second_per_thread"].as_f64().unwrap();
    let slack = s["timer_slack_ns"].as_f64().unwrap_or(50_000.0);
    assert!(
        per_thread <= 1e9 / slack * 1.05,
        "no thread sleeps less than its timer slack: {per_thread} calls/s"
    );
}

#[test]
fn out_of_file_descriptors_is_a_local_error_not_packet_loss() {
    let hosts: Vec<String> = (1..=100).map(|i| format!("127.0.0.{i}")).collect();
    let script = format!(
        "ulimit -n 64 && exec \"$0\" ping --ping-count 2 --ping-interval 0.05 {}",
        hosts.join(" ")
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .arg(bin_path())
        .env_remove("HEALTH_CHECK_OPTS")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    crate::util::assert_valid(&doc);
    let entries = doc["ping"].as_array().unwrap();
    assert_eq!(entries.len(), 100);
    let mut local = 0;
    for e in entries {
        match e["error"].as_str() {
            Some(why) => {
                assert!(why.contains("ulimit -n"), "{why}");
                local += 1;
            }
            None => assert_eq!(e["loss_pct"], 0.0, "loopback loses nothing: {e}"),
        }
    }
    assert!(local > 0, "64 descriptors cannot serve 100 clients at once");
    let checks = doc["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .filter(|c| c["name"]
                .as_str()
                .unwrap()
                .starts_with("network.ping_loss:"))
            .all(
                |c| !c["message"].as_str().unwrap().contains("drops packets")
                    && c["status"] != "fail"
            ),
        "a local error is never blamed on the path, nor fails the loss check"
    );
}

#[test]
fn messages_say_what_is_wrong_in_words() {
    let r = run(&["-r", "server", "--port", "70000"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("1..=65535"), "{}", r.stderr);
    let r = run(&["-r", "server", "--port", "0"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("1..=65535"), "{}", r.stderr);
    let r = run(&["memory", "--memory-size", "1e3"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not a whole number"), "{}", r.stderr);
    assert!(!r.stderr.contains("invalid digit"), "{}", r.stderr);
}

#[test]
fn a_summary_for_thousands_of_clients_stays_readable() {
    let hosts: Vec<String> = (0..2000)
        .map(|i| format!("127.0.{}.{}", i / 250, i % 250 + 1))
        .collect();
    let mut args = vec!["ping", "--ping-count", "1", "--ping-method", "tcp"];
    args.extend(hosts.iter().map(String::as_str));
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", &r.stderr[..r.stderr.len().min(2000)]);
    assert_eq!(r.json()["ping"].as_array().unwrap().len(), 2000);
    let longest = r.stderr.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 2000, "a stderr line of {longest} bytes");
    assert!(
        r.stderr.lines().count() < 100,
        "{} lines",
        r.stderr.lines().count()
    );
}

#[test]
fn out_of_descriptors_in_a_bandwidth_test_names_the_local_cause() {
    // Both ends in one process need at least 14 descriptors (stdio; our control connection and 4
    // streams; the in-process responder's listener, control connection and 4 streams): 16 left
    // room for a test to get through when nothing else was open at that moment; 10 never does.
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -n 10 && exec \"$0\" iperf localhost --iperf-time 1",
        ])
        .arg(bin_path())
        .env_remove("HEALTH_CHECK_OPTS")
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &doc["iperf3 bandwidth"][0];
    let errors: Vec<&str> = [&e["error"], &e["reverse_error"]]
        .into_iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        !errors.is_empty(),
        "10 descriptors cannot carry the test: {e}"
    );
    for why in errors {
        assert!(why.contains("ulimit -n"), "the local cause is named: {why}");
    }
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(test: &str, size: &str) -> Option<SmallFs> {
        if !needs(test, &[Need::Root, Need::Tool("mount", "mount")]) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(ok.success(), "mounting a tmpfs");
        Some(SmallFs { dir })
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_storage_test_that_fails_fails_the_section_and_keeps_the_others() {
    use std::os::unix::fs::FileExt;
    let test = "a_storage_test_that_fails_fails_the_section_and_keeps_the_others";
    let Some(fs) = SmallFs::mount(test, "80m") else {
        return;
    };
    // 128 MiB, the first 64 MiB written, the rest holes; then the filesystem is filled up, so
    // writing into the holes finds no space.
    let file = fs.dir.path().join("data");
    let f = std::fs::File::create(&file).unwrap();
    f.set_len(128 << 20).unwrap();
    f.write_all_at(&vec![9u8; 64 << 20], 0).unwrap();
    drop(f);
    let filler = std::fs::File::create(fs.dir.path().join("filler")).unwrap();
    let chunk = vec![1u8; 1 << 20];
    let mut at = 0u64;
    while filler.write_all_at(&chunk, at).is_ok() {
        at += 1 << 20;
    }
    drop(filler);
    let r = run(&[
        "-r",
        "server",
        "-c",
        "",
        "--only",
        "storage",
        "--storage",
        file.to_str().unwrap(),
        "--storage-allow-write",
        "--storage-time",
        "0.3",
        "--storage-threads",
        "4",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let outcome = doc["health_check"]["sections"]["storage"].as_str().unwrap();
    assert!(
        outcome.starts_with("failed: ") && outcome.contains("No space left"),
        "{outcome}"
    );
    assert!(
        doc["storage"]["read_iops_4k"].as_f64().is_some(),
        "the reads still count"
    );
    let tests = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "storage.tests")
        .unwrap();
    assert_eq!(tests["status"], "fail");
    assert!(
        r.stderr.contains("storage") && r.stderr.contains("failed"),
        "{}",
        r.stderr
    );
}
