//! The storage section's safety rules and figures: our own test file in a directory (unlinked
//! while in use, so nothing is left after Ctrl-C or a kill), existing files left byte-for-byte
//! unchanged without --storage-allow-write, a device with a filesystem or in use by anyone else
//! never written, flag or not.

use crate::util::{Need, assert_valid, bin_path, exclusive, needs, run};
use std::process::{Command, Stdio};
use std::time::Duration;

const QUICK: [&str; 6] = [
    "--storage-time",
    "0.3",
    "--storage-threads",
    "8",
    "--storage-size",
    "16",
];

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_directory_gets_a_test_file_that_is_removed() {
    let _cpus = exclusive();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut args = vec!["storage", dir.path().to_str().unwrap()];
    args.extend(QUICK);
    // Other tests' load (and the hypervisor's steal) must not make the verdict inconclusive.
    args.extend(["--storage-expect-iops", "1e12"]);
    args.extend(crate::util::NO_INTERFERENCE_LIMITS);
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_valid(&doc);
    let s = &doc["storage"];
    assert_eq!(s["kind"], "directory");
    assert_eq!(s["size_mib"], 16);
    assert!(s["read_iops_4k"].as_f64().unwrap() > 0.0);
    assert!(s["write_mb_s_1m"].as_f64().unwrap() > 0.0);
    assert!(s["write_iops_4k"].as_f64().unwrap() > 0.0);
    let clat = &s["read_clat_us"];
    assert!(clat["p50"].as_f64().unwrap() <= clat["p99"].as_f64().unwrap());
    assert!(clat["p999"].as_f64().unwrap() <= clat["max"].as_f64().unwrap() + 1.0);
    assert!(leftovers(dir.path()).is_empty(), "the test file is removed");
    let iops = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "storage.read_iops")
        .unwrap();
    assert_eq!(
        iops["status"], "fail",
        "an expectation the device cannot meet fails"
    );
}

#[test]
fn an_existing_file_is_only_read_without_the_flag() {
    let _cpus = exclusive();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("precious");
    let content: Vec<u8> = (0..(8u32 << 20)).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&file, &content).unwrap();
    let mut args = vec!["storage", file.to_str().unwrap()];
    args.extend(QUICK);
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_valid(&doc);
    assert!(doc["storage"]["read_iops_4k"].as_f64().unwrap() > 0.0);
    assert!(doc["storage"]["write_mb_s_1m"].is_null());
    assert!(
        doc["storage"]["writes_skipped"]
            .as_str()
            .unwrap()
            .contains("--storage-allow-write")
    );
    assert!(
        std::fs::read(&file).unwrap() == content,
        "not one byte changed"
    );
}

/// Detaches a loop device when dropped.
struct Detach(String);

impl Drop for Detach {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// Attaches `image` to a free loop device.
fn attach_loop(image: &std::path::Path) -> (String, Detach) {
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(image)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "losetup needs root: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
    (dev.clone(), Detach(dev))
}

#[test]
fn a_blank_device_is_written_only_with_the_flag_and_only_when_nobody_holds_it() {
    use std::os::unix::fs::OpenOptionsExt;
    let test = "a_blank_device_is_written_only_with_the_flag_and_only_when_nobody_holds_it";
    if !needs(test, &[Need::Root, Need::Tool("losetup", "mount")]) {
        return;
    }
    let _cpus = exclusive();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let image = dir.path().join("blank.img");
    std::fs::write(&image, vec![0u8; 32 << 20]).unwrap();
    let (loop_dev, _detach) = attach_loop(&image);
    let mut args = vec!["storage", loop_dev.as_str(), "--storage-allow-write"];
    args.extend(QUICK);
    {
        // Someone else claims the device (as mount, swapon or a RAID driver would).
        let _holder = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(&loop_dev)
            .unwrap();
        let r = run(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let doc = r.json();
        assert_valid(&doc);
        let why = doc["storage"]["writes_skipped"].as_str().unwrap();
        assert!(why.contains("in use"), "{why}");
        assert!(
            doc["storage"]["read_iops_4k"].as_f64().unwrap() > 0.0,
            "reads still run"
        );
        assert!(
            std::fs::read(&image).unwrap().iter().all(|b| *b == 0),
            "not written"
        );
    }
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_valid(&doc);
    assert_eq!(doc["storage"]["kind"], "device");
    assert!(doc["storage"]["write_mb_s_1m"].as_f64().unwrap() > 0.0);
    assert!(
        std::fs::read(&image).unwrap().iter().any(|b| *b != 0),
        "with the flag, a blank device is written"
    );
}

#[test]
fn a_device_with_a_filesystem_is_refused_for_writing_even_with_the_flag() {
    let test = "a_device_with_a_filesystem_is_refused_for_writing_even_with_the_flag";
    let tools = [
        Need::Root,
        Need::Tool("mkfs.ext4", "e2fsprogs"),
        Need::Tool("losetup", "mount"),
    ];
    if !needs(test, &tools) {
        return;
    }
    let _cpus = exclusive();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let image = dir.path().join("disk.img");
    std::fs::write(&image, vec![0u8; 64 << 20]).unwrap();
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&image)
        .status()
        .unwrap();
    assert!(ok.success());
    let (loop_dev, _detach) = attach_loop(&image);
    let before = std::fs::read(&image).unwrap();
    let mut args = vec!["storage", loop_dev.as_str(), "--storage-allow-write"];
    args.extend(QUICK);
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_valid(&doc);
    assert_eq!(doc["storage"]["kind"], "device");
    let why = doc["storage"]["writes_skipped"].as_str().unwrap();
    assert!(why.contains("ext2/3/4 filesystem"), "{why}");
    assert!(
        doc["storage"]["read_iops_4k"].as_f64().unwrap() > 0.0,
        "reads still run"
    );
    assert!(
        std::fs::read(&image).unwrap() == before,
        "the filesystem is untouched"
    );
}

/// Files in `dir` that process `pid` holds open although they are unlinked.
fn held_unlinked(pid: u32, dir: &std::path::Path) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|t| t.starts_with(dir) && t.to_string_lossy().ends_with(" (deleted)"))
                .count()
        })
        .unwrap_or(0)
}

/// Starts a 30 s storage run on a fresh directory and waits until its test file is in use.
fn start_long_storage_run() -> (tempfile::TempDir, std::process::Child) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let child = Command::new(bin_path())
        .args([
            "storage",
            dir.path().to_str().unwrap(),
            "--storage-size",
            "32",
            "--storage-time",
            "30",
            "--storage-threads",
            "4",
        ])
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while held_unlinked(child.id(), dir.path()) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never opened its test file"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        leftovers(dir.path()).is_empty(),
        "the test file is unlinked while in use: {:?}",
        leftovers(dir.path())
    );
    (dir, child)
}

#[test]
fn ctrl_c_reports_and_leaves_no_test_file() {
    let _cpus = exclusive();
    let (dir, child) = start_long_storage_run();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["sections"]["storage"], "interrupted");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn sigkill_leaves_no_test_file() {
    let _cpus = exclusive();
    let (dir, mut child) = start_long_storage_run();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

#[test]
fn usage_errors_name_the_storage_flags() {
    for (args, flag) in [
        (vec!["-r", "server", "--only", "storage"], "--only"),
        (
            vec!["storage", "/tmp", "--storage-size", "0"],
            "--storage-size",
        ),
        (
            vec!["storage", "/tmp", "--storage-time", "x"],
            "--storage-time",
        ),
        (
            vec!["storage", "/tmp", "--storage-expect-iops", "-1"],
            "--storage-expect-iops",
        ),
    ] {
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{args:?}: {}", r.stderr);
    }
    let r = run(&["storage", "/nonexistent/dir"]);
    assert_eq!(r.code, 0);
    let doc = r.json();
    assert!(
        doc["health_check"]["sections"]["storage"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/dir")
    );
}
