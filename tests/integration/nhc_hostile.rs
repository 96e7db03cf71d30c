//! The NHC layer on what real sites and local users have (issue 38), through the binary: mount
//! points, users and processes whose names are not UTF-8, a local user racing to swap the file
//! that steers root, nhc.conf as a FIFO, files and commands without end.

use crate::util::{Need, bin, needs};
use serde_json::Value;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// `health_check nhc FILE`: each line's checks, as (name, status, message).
fn nhc(conf: &Path) -> (i32, Vec<(String, String, String)>, String) {
    let o = bin().arg("nhc").arg(conf).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let code = o.status.code().unwrap_or(-1);
    if code != 0 {
        return (code, Vec::new(), stderr);
    }
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let checks = doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["checks"].as_array().unwrap().clone())
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            (s("name"), s("status"), s("message"))
        })
        .collect();
    (code, checks, stderr)
}

/// A directory only root can change, for files that steer root: under the target directory
/// (not /tmp, whose other entries another user could own).
fn root_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sh(argv: &[&OsStr]) {
    let s = Command::new(argv[0]).args(&argv[1..]).status().unwrap();
    assert!(s.success(), "{argv:?}");
}

struct Unmount(Vec<PathBuf>);

impl Drop for Unmount {
    fn drop(&mut self) {
        for m in self.0.iter().rev() {
            let _ = Command::new("umount").arg(m).status();
        }
    }
}

/// A Latin-1 mount point is seen: mounted, its options read, and a full file system there
/// fails check_fs_free (before, it read "not mounted" and a full one passed).
#[test]
fn a_mount_point_that_is_not_utf8_is_seen_and_judged() {
    if !needs(
        "a_mount_point_that_is_not_utf8_is_seen_and_judged",
        &[Need::Root],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut point = dir.path().as_os_str().as_bytes().to_vec();
    point.extend_from_slice(b"/caf\xe9 \xff");
    let point = PathBuf::from(OsStr::from_bytes(&point));
    std::fs::create_dir(&point).unwrap();
    let mut mounted = Unmount(Vec::new());
    sh(&[
        OsStr::new("mount"),
        OsStr::new("-t"),
        OsStr::new("tmpfs"),
        OsStr::new("-o"),
        OsStr::new("size=1m"),
        OsStr::new("tmpfs"),
        point.as_os_str(),
    ]);
    mounted.0.push(point.clone());
    std::fs::write(point.join("fill"), vec![1u8; 1000 * 1024]).unwrap();
    // The file names the point with bash's own escapes: $'...' for the bytes.
    let quoted: String = point
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("\\x{b:02x}"))
        .collect();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(
        &conf,
        format!(
            "* || check_fs_mount_rw -t tmpfs -f $'{quoted}'\n\
             * || check_fs_free $'{quoted}' 10%\n"
        )
        .replace("\\x", "\\\\x"),
    )
    .unwrap();
    let (code, checks, err) = nhc(&conf);
    assert_eq!(code, 0, "{err}");
    let statuses: Vec<&str> = checks.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(statuses, ["pass", "fail"], "{checks:#?}");
    assert!(
        checks[1].2.contains("caf\\xe9 \\xff has only"),
        "{checks:#?}"
    );
}

/// A process whose name holds byte 0xFF is seen by check_ps_blacklist, and a user whose GECOS
/// and name hold Latin-1 bytes does not blind the owner checks (a private /etc/passwd, in a
/// mount namespace of the test's own).
#[test]
fn processes_and_users_with_any_bytes_are_seen() {
    if !needs(
        "processes_and_users_with_any_bytes_are_seen",
        &[
            Need::Root,
            Need::Tool("unshare", "util-linux"),
            Need::Tool("setpriv", "util-linux"),
        ],
    ) {
        return;
    }
    let _users = crate::util::local_users();
    let dir = tempfile::tempdir().unwrap();
    let mut name = dir.path().as_os_str().as_bytes().to_vec();
    name.extend_from_slice(b"/ev\xffil");
    let evil = PathBuf::from(OsStr::from_bytes(&name));
    std::fs::copy("/bin/sleep", &evil).unwrap();
    let mut passwd = std::fs::read("/etc/passwd").unwrap();
    passwd.extend_from_slice(b"jos\xe9:x:12346:12346:Jos\xe9 Garc\xeda,,,:/nonexistent:/bin/sh\n");
    let passwd_file = dir.path().join("passwd");
    std::fs::write(&passwd_file, &passwd).unwrap();
    let mut child = Command::new("setpriv")
        .process_group(0)
        .args(["--reuid=12346", "--regid=12346", "--clear-groups"])
        .arg(&evil)
        .arg("60")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let conf = dir.path().join("nhc.conf");
    std::fs::write(
        &conf,
        "* || check_ps_blacklist ev\n\
         * || check_ps_daemon $'ev\\\\xffil'\n\
         * || export NHC_RM=none\n\
         * || check_ps_unauth_users log\n\
         * || check_file_stat -U $'jos\\\\xe9' /\n",
    )
    .unwrap();
    let script = format!(
        "mount --bind {} /etc/passwd && exec {} nhc {}",
        passwd_file.display(),
        crate::util::bin_str(),
        conf.display()
    );
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    crate::util::end_group(&mut child);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let checks: Vec<(String, String)> = doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["checks"].as_array().unwrap().clone())
        .map(|c| {
            (
                c["status"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        checks[0].0, "fail",
        "the 0xFF process is running: {checks:#?}"
    );
    assert_eq!(checks[1].0, "pass", "{checks:#?}");
    // Logged, not failed: every unauthorized process is named (another test's users may have
    // processes of their own at this moment; NHC's default would name only the first).
    assert_eq!(checks[2].0, "pass", "{checks:#?}");
    assert!(
        checks[2].1.contains("jos\\xe9's \"") && checks[2].1.contains("ev\\xffil"),
        "the user is named, its byte shown escaped: {checks:#?}"
    );
    // `/` is root's, not josé's: the owner check reads the name as bytes.
    assert!(
        checks[3]
            .1
            .contains("username is \"root\"; should be \"jos\\xe9\""),
        "{checks:#?}"
    );
}

/// A local user who can write the directory swaps nhc.conf for one that runs their command,
/// in a loop, while root reads it: the command never runs (the directory is not root's alone,
/// so no line that runs a program is honoured from it, whatever was read).
#[test]
fn a_local_user_swapping_the_file_never_gets_root_to_run_a_command() {
    if !needs(
        "a_local_user_swapping_the_file_never_gets_root_to_run_a_command",
        &[Need::Root, Need::Tool("setpriv", "util-linux")],
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let _users = crate::util::local_users();
    let dir = root_dir("nhc-swap");
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = dir.join("ran");
    let conf = shared.join("nhc.conf");
    std::fs::write(&conf, "* || check_ps_loadavg 1000\n").unwrap();
    // The user's loop: two files renamed into place, as fast as it can.
    let script = format!(
        "cd {shared}; printf '* || check_ps_loadavg 1000\\n' > good; \
         printf '* || check_cmd_status -t 5 /usr/bin/touch {marker}\\n' > bad; \
         while :; do cp good a; mv -f a nhc.conf; cp bad b; mv -f b nhc.conf; done",
        shared = shared.display(),
        marker = marker.display()
    );
    let mut racer = Command::new("setpriv")
        .process_group(0)
        .args([
            "--reuid=12345",
            "--regid=12345",
            "--clear-groups",
            "sh",
            "-c",
            &script,
        ])
        .spawn()
        .unwrap();
    let mut refused = 0;
    for _ in 0..60 {
        let o = bin().arg("nhc").arg(&conf).output().unwrap();
        refused += usize::from(o.status.code() == Some(2));
    }
    crate::util::end_group(&mut racer);
    assert!(!marker.exists(), "root ran the user's command");
    assert!(refused > 0, "the swapped-in file was refused at least once");
}

/// nhc.conf as a FIFO, or a device, is refused at once (before, `slurm` hung past every
/// deadline reading it); /dev/zero in check_file_contents is read up to its bound; a command's
/// endless output is cut and said; a timeout no clock can hold does not panic.
#[test]
fn files_and_commands_without_end_are_bounded() {
    // Root: the commands run only from a file only root can change.
    if !needs("files_and_commands_without_end_are_bounded", &[Need::Root]) {
        return;
    }
    let dir = root_dir("nhc-bounded");
    let fifo = dir.join("nhc.conf");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let started = Instant::now();
    let o = bin()
        .args(["-r", "server", "-c", "", "--only", "system", "--nhc-conf"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a regular file"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let conf = dir.join("bounded.conf");
    // A file of a terabyte (sparse: it takes no room) stands for a log that never ends.
    let big = dir.join("big.log");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let big = big.display();
    std::fs::write(
        &conf,
        format!(
            "* || check_file_contents {big} '!/x/'\n\
             * || check_file_contents {big} 'x'\n\
             * || check_cmd_output -t 10 -m '/never/' -e 'head -c 5000000 /dev/zero'\n\
             * || check_cmd_status -t 18446744073709551615 true\n\
             * || check_file_contents /dev/zero 'x'\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let (code, checks, err) = nhc(&conf);
    assert_eq!(code, 0, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(checks[0].1, "pass", "{checks:#?}");
    assert!(
        checks[0].2.contains("read its first 16 MiB only"),
        "{checks:#?}"
    );
    assert_eq!(checks[1].1, "fail", "{checks:#?}");
    assert!(
        checks[1].2.contains("read its first 16 MiB only"),
        "{checks:#?}"
    );
    // 5 MB of output: what was kept is said.
    assert_eq!(checks[2].1, "fail", "{checks:#?}");
    assert!(
        checks[2].2.contains("kept the first 1 MiB of its output"),
        "{checks:#?}"
    );
    // bash wraps 18446744073709551615 to -1: NHC's timer ends the command at once.
    assert_eq!(checks[3].1, "fail", "{checks:#?}");
    assert!(
        checks[3].2.contains("TIMEOUT after 18446744073709551615s"),
        "{checks:#?}"
    );
    // A device is never opened as root (opening some acts: a watchdog's arms it).
    assert_eq!(checks[4].1, "skip", "{checks:#?}");
    assert!(checks[4].2.contains("is a device"), "{checks:#?}");
}

/// A process any user can start, with a long argument, against an extended pattern of the
/// site's file: the C library's matcher crashed (`*(a)b`) or never returned (`+(a|aa)b`) on a
/// thousand bytes; the run now ends at once, the patterns judged.
#[test]
fn extended_patterns_meet_long_process_arguments_in_linear_time() {
    let long = "a".repeat(60_000);
    let mut child = Command::new("bash")
        .args(["-c", "sleep 60; :", &long])
        .spawn()
        .unwrap();
    let dir = root_dir("nhc_extglob");
    let conf = dir.join("nhc.conf");
    std::fs::write(
        &conf,
        "* || check_ps_service -f -m '*(a)b' absent-one\n\
         * || check_ps_service -f -m '+(a|aa)b' absent-two\n\
         * || check_ps_service -f -m '*+(a)' present\n\
         * || check_ps_service -f -m '*!(a)*!(b)c' refused\n",
    )
    .unwrap();
    let started = Instant::now();
    let (code, checks, stderr) = nhc(&conf);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code, 0, "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "{stderr}");
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c.1 != "pass")
        .map(|c| c.2.as_str())
        .collect();
    assert_eq!(failed.len(), 3, "{checks:#?}");
    assert!(failed[0].contains("Service absent-one"), "{failed:?}");
    assert!(failed[1].contains("Service absent-two"), "{failed:?}");
    assert!(failed[2].contains("Service refused"), "{failed:?}");
    let doc = bin().arg("nhc").arg(&conf).output().unwrap();
    let text = String::from_utf8_lossy(&doc.stdout);
    assert!(
        text.contains("only as the whole pattern"),
        "the refused pattern is said"
    );
}

/// NHC's command-line settings (`nhc NHC_RM=none`) are taken the same way, before the file's
/// first line; something that is no setting is a usage error naming it.
#[test]
fn settings_are_given_as_on_nhcs_command_line() {
    let dir = root_dir("nhc_settings");
    let conf = dir.join("nhc.conf");
    std::fs::write(&conf, "* || check_ps_userproc_lineage\n").unwrap();
    let o = bin()
        .arg("nhc")
        .arg(&conf)
        .arg("NHC_RM=none")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("requires a supported resource manager"),
        "{text}"
    );
    let bad = bin().arg("nhc").arg(&conf).arg("NHC-RM").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("'NHC-RM' is no setting"), "{said}");
}
