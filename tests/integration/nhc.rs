//! NHC's node checks through the binary (`--nhc-conf`): an nhc.conf's lines run on this machine,
//! their verdicts as checks of the document, a bad line a configuration error naming it; as
//! root, a read-only bind mount and a small tmpfs filled up fail as NHC fails them.

use crate::util::{Need, bin, needs};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn run_with(conf: &Path, out: &Path) -> std::process::Output {
    bin()
        .args([
            "-r",
            "server",
            "-c",
            "",
            "--only",
            "system",
            "--strict",
            "--nhc-conf",
        ])
        .arg(conf)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

fn node_checks(out: &Path) -> Vec<(String, String, String)> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("node."))
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn an_nhc_conf_runs_on_this_machine_as_checks_of_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(
        &conf,
        "# NHC's own sample lines, and two that fail\n\
         * || check_fs_mount_rw -f /\n\
         * || check_file_test -r -s /etc/passwd /etc/group\n\
         * || check_file_test -c -r -w /dev/null /dev/zero\n\
         * || check_hw_physmem 1tb 2tb\n\
         * || check_ps_daemon no_such_daemon_zz\n\
         no-such-host-* || check_ps_daemon never_run_here\n",
    )
    .unwrap();
    let out = dir.path().join("doc.json");
    let o = run_with(&conf, &out);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let checks = node_checks(&out);
    let names: Vec<(&str, &str)> = checks
        .iter()
        .map(|(n, s, _)| (n.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("node.check_fs_mount_rw:/", "pass"),
            ("node.check_file_test:/etc/passwd /etc/group", "pass"),
            ("node.check_file_test:/dev/null /dev/zero", "pass"),
            ("node.check_hw_physmem", "fail"),
            ("node.check_ps_daemon:no_such_daemon_zz", "fail"),
        ],
        "{checks:#?}"
    );
    assert!(
        checks[3]
            .2
            .starts_with("check_hw_physmem:  Actual RAM size (")
            && checks[3]
                .2
                .ends_with("less than minimum allowed (1073741824 kB)."),
        "{}",
        checks[3].2
    );
    assert_eq!(
        checks[4].2,
        "check_ps_daemon:  Process no_such_daemon_zz not running"
    );
}

#[test]
fn a_line_health_check_cannot_honour_is_a_configuration_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(
        &conf,
        "* || check_fs_mount_rw -f /\n* || check_moab_sched\n",
    )
    .unwrap();
    let out = dir.path().join("doc.json");
    let o = run_with(&conf, &out);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--nhc-conf")
            && err.contains("nhc.conf:2")
            && err.contains("check_moab_sched"),
        "{err}"
    );
    assert!(err.contains("it runs: check_fs_mount"), "{err}");
}

fn sh(argv: &[&str]) {
    let s = Command::new(argv[0]).args(&argv[1..]).status().unwrap();
    assert!(s.success(), "{argv:?}");
}

/// Unmounts what the test mounted, also when it fails.
struct Mounted(Vec<String>);

impl Drop for Mounted {
    fn drop(&mut self) {
        for m in self.0.iter().rev() {
            let _ = Command::new("umount").arg(m).status();
        }
    }
}

#[test]
fn a_read_only_mount_and_a_full_tmpfs_fail_as_nhc_fails_them() {
    if !needs(
        "a_read_only_mount_and_a_full_tmpfs_fail_as_nhc_fails_them",
        &[Need::Root],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    let small = dir.path().join("small");
    std::fs::create_dir(&ro).unwrap();
    std::fs::create_dir(&small).unwrap();
    let (ro_s, small_s) = (ro.to_str().unwrap(), small.to_str().unwrap());
    let mut mounted = Mounted(Vec::new());
    sh(&["mount", "--bind", ro_s, ro_s]);
    mounted.0.push(ro_s.to_string());
    sh(&["mount", "-o", "remount,bind,ro", ro_s]);
    sh(&["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small_s]);
    mounted.0.push(small_s.to_string());
    std::fs::write(small.join("fill"), vec![1u8; 1000 * 1024]).unwrap();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(
        &conf,
        format!(
            "* || check_fs_mount_rw -f {ro_s}\n\
             * || check_fs_mount_ro -f {ro_s}\n\
             * || check_fs_free {small_s} 10%\n\
             * || check_fs_mount_rw -t tmpfs -f {small_s}\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("doc.json");
    let o = run_with(&conf, &out);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let checks = node_checks(&out);
    let statuses: Vec<&str> = checks.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(statuses, ["fail", "pass", "fail", "pass"], "{checks:#?}");
    assert_eq!(
        checks[0].2,
        format!("check_fs_mount:  {ro_s} mount options incorrect (should match /(^|,)rw($|,)/)")
    );
    assert!(
        checks[2]
            .2
            .starts_with(&format!("check_fs_free:  {small_s} has only ")),
        "{}",
        checks[2].2
    );
    assert!(checks[2].2.ends_with("minimum is 10%"), "{}", checks[2].2);
}
