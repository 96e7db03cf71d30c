//! NHC's node checks through the binary (`--nhc-conf`): an nhc.conf's lines run on this machine,
//! their verdicts as checks of the document, a bad line a configuration error naming it; as
//! root, a read-only bind mount and a small tmpfs filled up fail as NHC fails them.

use crate::util::{Need, bin, needs};
use serde_json::Value;
use std::os::unix::process::CommandExt;
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
    assert!(err.contains("it runs check_fs_{mount,"), "{err}");
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

/// A site's `DF_FLAGS=-Tkl` (DTU's, to leave network file systems out) as NHC 1.4.3 decided it
/// here: df lists no remote file system, so a full one mounted from `nas01:` passes; a full
/// local one still fails. Before, health_check read every mount and failed both.
#[test]
fn a_sites_df_flags_choose_what_is_judged_as_nhcs_df_does() {
    if !needs(
        "a_sites_df_flags_choose_what_is_judged_as_nhcs_df_does",
        &[Need::Root, Need::Tool("df", "coreutils")],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote");
    let local = dir.path().join("local");
    std::fs::create_dir(&remote).unwrap();
    std::fs::create_dir(&local).unwrap();
    let (remote_s, local_s) = (remote.to_str().unwrap(), local.to_str().unwrap());
    let mut mounted = Mounted(Vec::new());
    sh(&[
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "size=1m",
        "nas01:/export",
        remote_s,
    ]);
    mounted.0.push(remote_s.to_string());
    sh(&["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", local_s]);
    mounted.0.push(local_s.to_string());
    for d in [&remote, &local] {
        std::fs::write(d.join("fill"), vec![1u8; 1000 * 1024]).unwrap();
    }
    let conf = dir.path().join("nhc.conf");
    let lines = format!("* || check_fs_free {remote_s} 10%\n* || check_fs_free {local_s} 10%\n");
    for (flags, want) in [
        ("", ["fail", "fail"]),
        ("* || DF_FLAGS=-Tkl\n", ["pass", "fail"]),
    ] {
        std::fs::write(&conf, format!("{flags}{lines}")).unwrap();
        let out = dir.path().join("doc.json");
        let _ = std::fs::remove_file(&out);
        let o = run_with(&conf, &out);
        let checks = node_checks(&out);
        let statuses: Vec<&str> = checks.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(
            statuses,
            want,
            "{flags:?}: {checks:#?}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// NHC's settings file (`/etc/default/nhc` on Debian), laid over `/etc/default` in a mount
/// namespace of the run's own: its `MARK_OFFLINE=0` makes the failure a warning, and its
/// value fills the check's argument, as NHC sources it.
#[test]
fn nhcs_settings_file_holds_before_the_first_line() {
    if !needs(
        "nhcs_settings_file_holds_before_the_first_line",
        &[Need::Root, Need::Tool("unshare", "util-linux")],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let etc_default = dir.path().join("default");
    std::fs::create_dir(&etc_default).unwrap();
    std::fs::write(
        etc_default.join("nhc"),
        "# the site's numbers\nSITE_MIN_FREE=100%\nMARK_OFFLINE=0\n",
    )
    .unwrap();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(&conf, "* || check_fs_free / $SITE_MIN_FREE\n").unwrap();
    let out = dir.path().join("doc.json");
    let script = format!(
        "mount --bind {} /etc/default && exec \"$0\" -r server -c '' --only system --nhc-conf \
         {} -o {}",
        etc_default.display(),
        conf.display(),
        out.display()
    );
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .arg(crate::util::bin_path())
        .output()
        .unwrap();
    let checks = node_checks(&out);
    assert_eq!(checks.len(), 1, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(checks[0].1, "warn", "{checks:?}");
    assert!(checks[0].2.contains("minimum is 100%"), "{checks:?}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // What the reading said is in the document, as on stderr.
    let notes = doc["health_check"]["notes"].to_string();
    assert!(
        notes.contains("/etc/default/nhc: 2 setting line(s) taken"),
        "{notes}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("2 setting line(s) taken"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Kills the processes the test started, also when it fails.
struct Started(Vec<std::process::Child>);

impl Drop for Started {
    fn drop(&mut self) {
        for c in &mut self.0 {
            crate::util::end_group(c);
        }
    }
}

/// A user's process no job started is found as NHC finds it: unauthorized (no job of that
/// user here) and rogue (not under slurmstepd); one under a process named slurmstepd is not
/// rogue. Real processes of a non-system uid, started by the test.
#[test]
fn a_users_process_outside_any_job_is_unauthorized_and_rogue() {
    if !needs(
        "a_users_process_outside_any_job_is_unauthorized_and_rogue",
        &[Need::Root, Need::Tool("setpriv", "util-linux")],
    ) {
        return;
    }
    let _users = crate::util::local_users();
    let as_uid = |uid: &str| {
        let mut c = Command::new("setpriv");
        c.process_group(0);
        c.args([
            &format!("--reuid={uid}"),
            &format!("--regid={uid}"),
            "--clear-groups",
            "sleep",
            "60",
        ]);
        c
    };
    let mut started = Started(Vec::new());
    started.0.push(as_uid("12345").spawn().unwrap());
    let rogue = started.0[0].id();
    // A job's process: its parent's command line says slurmstepd, as a job step's does.
    started.0.push(
        Command::new("bash")
            .process_group(0)
            .args([
                "-c",
                "exec -a 'slurmstepd: [1.0]' bash -c \
                 'setpriv --reuid=12346 --regid=12346 --clear-groups sleep 60 & wait'",
            ])
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(
        &conf,
        "* || export NHC_RM=none\n\
         * || check_ps_unauth_users log\n",
    )
    .unwrap();
    let out = dir.path().join("doc.json");
    run_with(&conf, &out);
    let checks = node_checks(&out);
    assert_eq!(checks[0].1, "pass", "{checks:#?}");
    let ours = format!("12345's \"sleep\" process is unauthorized. (PID {rogue})");
    assert!(checks[0].2.contains(&ours), "{checks:#?}");
    std::fs::write(
        &conf,
        "* || export NHC_RM=slurm\n\
         * || check_ps_userproc_lineage log\n",
    )
    .unwrap();
    run_with(&conf, &out);
    let checks = node_checks(&out);
    let said = &checks[0].2;
    assert!(
        said.contains(&format!(
            "12345's \"sleep\" process is rogue. (PID {rogue})"
        )),
        "{checks:#?}"
    );
    // Named by its own name: the NHC differential scene (pytest, beside these tests) runs
    // processes of the same test users, named hcd-*, which are rogue and say so.
    assert!(
        !said.contains("12346's \"sleep\""),
        "a job's process is not rogue: {said}"
    );
}

/// NHC's own example lines (its sample nhc.conf, those that apply on Linux without Moab or
/// PBS/TORQUE, and without Myrinet's check_hw_gm) load and run: one verdict or more per line,
/// none a configuration error.
#[test]
fn nhcs_own_example_lines_load_and_run() {
    let lines = [
        "* || export MARK_OFFLINE=0",
        "* || export DEBUG=1",
        "* || export TIMEOUT=15",
        "* || export NHC_CHECK_ALL=1",
        "* || check_hw_cpuinfo 2 12 24",
        "* || check_hw_physmem 32gb 32gb 5%",
        "* || check_hw_swap 8g 8g 3%",
        "* || check_hw_mem 40g 40g 5%",
        "* || check_hw_physmem_free 1MB",
        "* || check_hw_swap_free 1MB",
        "* || check_hw_ib 40",
        "* || check_hw_eth eth1",
        "* || check_dmi_data_match \"BIOS Information: Version: 2.0.1\"",
        "* || check_dmi_data_match -t \"Memory Device\" \"*Speed: 1866 MHz\"",
        "* || check_hw_mcelog",
        "* || check_fs_mount_rw -t tmpfs -f /tmp",
        "* || check_fs_mount_rw -t devpts -s '/(none|devpts)/' -f /dev/pts",
        "* || check_fs_free / 3%",
        "* || check_fs_ifree / 1k",
        "* || check_fs_mount -s bluearc0:/home -t nfs -o '/(^|,)vers=3(,|$)/' -f /home",
        "* || check_file_stat -m 0666 -u 0 -g 0 -t 1 -T 3 /dev/null",
        "* || check_file_stat -n 7200 /var/log/messages",
        "* || check_file_contents /etc/passwd \"/^root:x:0:0:/\" \"sshd:*\"",
        "* || check_ps_service -r crond",
        "* || check_ps_daemon wulfd root",
        "* || check_ps_blacklist sshd '!root'",
        "* || check_ps_unauth_users log syslog kill",
        "* || check_ps_userproc_lineage log syslog",
        "* || check_ps_service -d rpc.statd -r nfslock",
        "* || check_ps_service -r auditd",
        "* || check_ps_service -d rsyslogd -r rsyslog",
        "* || check_ps_service -c mysqld",
        "* || check_ps_loadavg 24",
        "* || check_ps_loadavg $((2*HW_CORES))",
        "* || check_nv_healthmon",
    ];
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(&conf, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("doc.json");
    let o = run_with(&conf, &out);
    assert_ne!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let checks = node_checks(&out);
    let checked: std::collections::BTreeSet<&str> = checks
        .iter()
        .map(|c| c.0.split(':').next().unwrap())
        .collect();
    for line in lines.iter().filter(|l| l.contains("check_")) {
        let name = line.split_whitespace().nth(2).unwrap();
        assert!(
            checked.contains(format!("node.{name}").as_str()),
            "{line}: {checks:#?}"
        );
    }
    // MARK_OFFLINE=0: failures are warnings, so the machine is not failed by them.
    assert!(checks.iter().all(|c| c.1 != "fail"), "{checks:#?}");
}
