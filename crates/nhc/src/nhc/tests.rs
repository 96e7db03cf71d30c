//! The conformance table: what NHC 1.4.3 itself decided, run by hand on this kind of machine
//! (`nhc -D DIR -c CONF -a -l - -t 30 INCDIR=DIR/scripts MARK_OFFLINE=0 NHC_RM=none`), for each
//! supported check, passing and failing, recorded as facts (a line, the machine's state, NHC's
//! verdict and message), and health_check deciding the same on the same state. The rows run as
//! one file, in order, as NHC ran them (`$HW_CORES` holds the machine's count once a hardware
//! check has run).

use super::conf::Conf;
use super::state::{IbPort, Machine, Mount, Process, Space, parse_mounts};
use std::collections::BTreeMap;
use std::path::Path;

/// A machine made up for a row: the state NHC saw.
struct Fake {
    mounts: &'static str,
    meminfo: &'static str,
    cpuinfo: &'static str,
    /// (pid, parent, uid, user, command line).
    processes: Vec<(u32, u32, u32, &'static str, &'static str)>,
    space: Space,
    load: [f64; 3],
    devices: Vec<&'static str>,
}

impl Default for Fake {
    fn default() -> Self {
        Fake {
            mounts: "/dev/vda1 / ext4 rw,relatime 0 0\n\
                     tmpfs /tmp tmpfs rw,nosuid,nodev 0 0\n\
                     /dev/vdb /data ext4 ro,relatime 0 0\n\
                     devpts /dev/pts devpts rw,nosuid,noexec 0 0\n",
            meminfo: "MemTotal:       24683584 kB\nMemFree:        20000000 kB\n\
                      Buffers:          100000 kB\nCached:          1000000 kB\n\
                      SwapTotal:             0 kB\nSwapFree:              0 kB\n",
            cpuinfo: "processor\t: 0\nphysical id\t: 0\nsiblings\t: 2\ncpu cores\t: 2\n\n\
                      processor\t: 1\nphysical id\t: 0\nsiblings\t: 2\ncpu cores\t: 2\n",
            processes: vec![
                (410, 1, 0, "root", "/usr/sbin/sshd -D"),
                (1, 0, 0, "root", "/sbin/init"),
                (530, 1, 1, "daemon", "/usr/sbin/atd -f"),
                // A user's process started by no job: NHC's own run had `setpriv` start it.
                (19050, 1, 12345, "12345", "sleep 300"),
                // A job's process: slurmstepd started it.
                (19756, 1, 0, "root", "slurmstepd: [1.0]"),
                (19758, 19756, 12346, "12346", "sleep 300"),
            ],
            space: Space {
                size_kb: 10_000_000,
                used_kb: 9_800_000,
                avail_kb: 200_000,
                inodes: 1_000_000,
                inodes_free: 900_000,
            },
            load: [4.7, 1.0, 0.5],
            devices: vec!["lo", "eth0"],
        }
    }
}

impl Machine for Fake {
    fn mounts(&self) -> Vec<Mount> {
        parse_mounts(self.mounts.as_bytes())
    }
    fn space(&self, _: &[u8]) -> Option<Space> {
        Some(self.space)
    }
    fn meminfo(&self) -> BTreeMap<String, u64> {
        super::state::parse_meminfo(self.meminfo.as_bytes())
    }
    fn cpuinfo(&self) -> String {
        self.cpuinfo.to_string()
    }
    fn processes(&self) -> Vec<Process> {
        self.processes
            .iter()
            .map(|&(pid, ppid, uid, user, args)| Process {
                pid,
                ppid,
                uid,
                user: user.as_bytes().to_vec(),
                args: args.as_bytes().to_vec(),
            })
            .collect()
    }
    fn dmidecode(&self) -> Result<Vec<u8>, String> {
        Ok(DMI.as_bytes().to_vec())
    }
    fn max_sys_uid(&self) -> u32 {
        // This machine's /etc/login.defs: UID_MIN 1000, no SYS_UID_MAX.
        999
    }
    fn loadavg(&self) -> Option<[f64; 3]> {
        Some(self.load)
    }
    fn net_devices(&self) -> Vec<Vec<u8>> {
        self.devices.iter().map(|d| d.as_bytes().to_vec()).collect()
    }
    fn user_name(&self, uid: u32) -> Option<Vec<u8>> {
        (uid == 0).then(|| b"root".to_vec())
    }
    fn group_name(&self, gid: u32) -> Option<Vec<u8>> {
        (gid == 0).then(|| b"root".to_vec())
    }
}

/// What dmidecode printed for NHC's row (its stand-in on NHC's PATH).
const DMI: &str = "# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 2.8 present.\n\n\
Handle 0x0000, DMI type 0, 24 bytes\nBIOS Information\n\tVendor: SeaBIOS\n\tVersion: 2.0.1\n\
\tRelease Date: 04/01/2014\n\tCharacteristics:\n\t\tBIOS characteristics not supported\n\
\t\tTargeted content distribution is supported\n\n\
Handle 0x1100, DMI type 17, 40 bytes\nMemory Device\n\tArray Handle: 0x1000\n\tSize: 16 GB\n\
\tSpeed: 1866 MHz\n\tManufacturer: QEMU\n\n\
Handle 0x1101, DMI type 17, 40 bytes\nMemory Device\n\tSize: 8 GB\n\tSpeed: 1600 MHz\n\n\
Handle 0x7F00, DMI type 127, 4 bytes\nEnd Of Table\n";

/// (check line, NHC's message; `None`: NHC passed).
const TABLE: &[(&str, Option<&str>)] = &[
    ("check_fs_mount_rw -f /", None),
    ("check_fs_mount_rw /", None),
    (
        "check_fs_mount_rw -f /data",
        Some("check_fs_mount:  /data mount options incorrect (should match /(^|,)rw($|,)/)"),
    ),
    ("check_fs_mount_ro -f /data", None),
    ("check_fs_mount_rw -t tmpfs -f /tmp", None),
    (
        "check_fs_mount -t nfs -f /tmp",
        Some("check_fs_mount:  /tmp has incorrect type tmpfs (should match nfs)"),
    ),
    (
        "check_fs_mount_rw -t devpts -s '/(none|devpts)/' -f /dev/pts",
        None,
    ),
    (
        "check_fs_mount -s '!tmpfs' -f /tmp",
        Some("check_fs_mount:  /tmp mounted from tmpfs (should NOT match tmpfs)"),
    ),
    // NHC said "... missing (auto-fixed)": it creates the directory; health_check changes nothing
    // on the node and says it is missing. The verdict is the same.
    (
        "check_fs_mount -f /nonexistent_mnt_xyz",
        Some(
            "check_fs_mount:  /nonexistent_mnt_xyz not mounted; directory /nonexistent_mnt_xyz missing",
        ),
    ),
    (
        "check_fs_free /tmp 3%",
        Some("check_fs_free:  /tmp has only 2% free (200000kB), minimum is 3%"),
    ),
    ("check_fs_free /tmp 1%", None),
    (
        "check_fs_used /tmp 98%",
        Some("check_fs_used:  /tmp is 98% full (9800000kB), threshold is 98%"),
    ),
    ("check_fs_ifree /tmp 1k", None),
    ("check_fs_free /not_a_mount 99%", None),
    ("check_hw_cpuinfo 1 2 2", None),
    (
        "check_hw_cpuinfo 2 12 24",
        Some("check_hw_cpuinfo:  Actual CPU socket count (1) does not match expected (2)."),
    ),
    ("check_hw_physmem 1k 1tb", None),
    ("check_hw_physmem 24G 24G 5%", None),
    (
        "check_hw_physmem 1tb 2tb",
        Some(
            "check_hw_physmem:  Actual RAM size (24683584 kB) less than minimum allowed (1073741824 kB).",
        ),
    ),
    (
        "check_hw_physmem 20G 20G 1G",
        Some(
            "check_hw_physmem:  Actual RAM size (24683584 kB) greater than maximum allowed (20971520 kB).",
        ),
    ),
    ("check_hw_swap 0 0", None),
    ("check_hw_mem_free 1mb", None),
    (
        "check_hw_swap_free 1",
        Some("check_hw_swap_free:  Not enough swap free (0 kB < 1 kB)."),
    ),
    (
        "check_hw_ib 40",
        Some(
            "check_hw_ib:  Version mismatch between kernel OFED drivers and userspace OFED libraries.",
        ),
    ),
    ("check_hw_eth eth0", None),
    ("check_hw_eth eth*", None),
    (
        "check_hw_eth eth1",
        Some("check_hw_eth:  Ethernet device eth1 not detected."),
    ),
    ("check_ps_service -u root -S sshd", None),
    ("check_ps_daemon atd daemon", None),
    (
        "check_ps_daemon no_such_daemon_zz",
        Some("check_ps_daemon:  Process no_such_daemon_zz not running"),
    ),
    ("check_ps_blacklist sshd '!root'", None),
    (
        "check_ps_blacklist atd",
        Some("check_ps_blacklist:  Process atd running"),
    ),
    (
        "check_ps_loadavg 4",
        Some("check_ps_loadavg:  1-minute load average too high:  4 >= 4"),
    ),
    ("check_ps_loadavg 5", None),
    (
        "check_ps_loadavg $((2*HW_CORES))",
        Some("check_ps_loadavg:  1-minute load average too high:  4 >= 4"),
    ),
    ("check_file_test -r -s /etc/passwd", None),
    ("check_file_test -c -r -w /dev/null /dev/zero", None),
    (
        "check_file_test -f /n_glob",
        Some("check_file_test:  -f /n_glob returned 1."),
    ),
    (
        "check_file_stat -m 0666 -u 0 -g 0 -t 1 -T 3 /dev/null",
        None,
    ),
    (
        "check_file_stat -m 0600 /dev/null",
        Some("check_file_stat:  File \"/dev/null\" has permissions 0666; should be 0600"),
    ),
    (
        "check_file_stat -U nobody /dev/null",
        Some("check_file_stat:  File \"/dev/null\" username is \"root\"; should be \"nobody\""),
    ),
    ("check_file_contents /etc/passwd \"/^root:x:0:0:/\"", None),
    (
        "check_file_contents /etc/passwd \"/^nosuchuser:/\"",
        Some("check_file_contents:  File \"/etc/passwd\" failed to match \"/^nosuchuser:/\"."),
    ),
    (
        "check_file_contents /etc/passwd '!/^root:/'",
        Some("check_file_contents:  File \"/etc/passwd\" line 1 matches \"/^root:/\"."),
    ),
    ("check_cmd_status -t 5 -r 1 false", None),
    (
        "check_cmd_status false",
        Some("check_cmd_status:  1 returned by \"false\"."),
    ),
    // NHC said `142 returned by "sleep 3"` (its SIGALRM); health_check says the deadline passed.
    // The verdict is the same.
    (
        "check_cmd_status -t 1 sleep 3",
        Some("check_cmd_status:  TIMEOUT after 1s for \"sleep 3\"; subprocess terminated."),
    ),
    ("check_cmd_output -m hello echo hello", None),
    (
        "check_cmd_output -m /nomatch/ echo hello",
        Some("check_cmd_output:  \"/nomatch/\" failed to match \"echo hello\" output."),
    ),
    (
        "check_cmd_output -m '!/hel/' -e 'echo hello'",
        Some("check_cmd_output:  \"/hel/\" matched at line 1 of \"echo hello\"."),
    ),
    (
        "check_cmd_output -r 2 echo hello",
        Some("check_cmd_output:  0 (expected 2) returned by \"echo hello\"."),
    ),
    (
        "check_file_test -! -d /etc",
        Some("check_file_test:  -d /etc returned 0."),
    ),
    (
        "check_dmi_data_match \"BIOS Information: Version: 2.0.1\"",
        None,
    ),
    (
        "check_dmi_data_match \"BIOS Information: Version: 2.0.2\"",
        Some("check_dmi_data_match:  No match found for BIOS Information: Version: 2.0.2"),
    ),
    (
        "check_dmi_data_match -t \"Memory Device\" \"*Speed: 1866 MHz\"",
        None,
    ),
    (
        "check_dmi_data_match -t 17 \"Speed: 1600 MHz\"",
        Some("check_dmi_data_match:  No match found for Speed: 1600 MHz"),
    ),
    (
        "check_dmi_data_match -t 0 \"*Speed: 1866 MHz\"",
        Some("check_dmi_data_match:  No match found for *Speed: 1866 MHz"),
    ),
    (
        "check_dmi_data_match ! \"/Vendor: Sea/\"",
        Some(
            "check_dmi_data_match:  Match found for /Vendor: Sea/:  BIOS Information: Vendor: SeaBIOS",
        ),
    ),
    (
        "check_dmi_data_match -h 0x1100 \"Memory Device: Size: 16 GB\"",
        None,
    ),
    (
        "check_dmi_data_match -h 0x1100 \"Size: 16 GB\"",
        Some("check_dmi_data_match:  No match found for Size: 16 GB"),
    ),
    // NHC 1.4.3 never files the last structure's lines; dmidecode's last is the empty End Of
    // Table, so the one before it is read, by NHC and by this.
    (
        "check_dmi_data_match -h 0x1101 \"Memory Device: Size: 8 GB\"",
        None,
    ),
    (
        "check_dmi_data_match \"BIOS Information: Characteristics: BIOS characteristics not supported\"",
        None,
    ),
    (
        "check_dmi_data_match -t \"Cache Information\" x",
        Some("check_dmi_data_match:  No valid DMI handles found"),
    ),
    (
        "check_ps_unauth_users",
        Some("check_ps_unauth_users:  12345's \"sleep\" process is unauthorized. (PID 19050)"),
    ),
    ("check_ps_unauth_users log syslog", None),
    ("check_ps_unauth_users -c sleep", None),
    (
        "check_ps_unauth_users -u 12345",
        Some("check_ps_unauth_users:  12346's \"sleep\" process is unauthorized. (PID 19758)"),
    ),
    ("check_ps_unauth_users -u 12345 -u 12346", None),
    // Run by hand on a tmpfs of 10000000 kB with 100000 of its 1000000 inodes used: the
    // made-up machine's /tmp has the same size and inodes.
    ("check_fs_mount -t tmpfs -f /tmp", None),
    (
        "check_fs_mount_ro -f /tmp",
        Some("check_fs_mount:  /tmp mount options incorrect (should match /(^|,)ro($|,)/)"),
    ),
    ("check_fs_used /tmp 99%", None),
    ("check_fs_size /tmp 1g 20g", None),
    (
        "check_fs_size /tmp 20g",
        Some("check_fs_size:  /tmp size 10000000kB less than minimum of 20GB"),
    ),
    (
        "check_fs_size /tmp 1g 5g",
        Some("check_fs_size:  /tmp size 10000000kB exceeds maximum of 5GB"),
    ),
    ("check_fs_iused /tmp 50%", None),
    (
        "check_fs_iused /tmp 5%",
        Some("check_fs_iused:  /tmp has 10% of inodes used (100000), threshold is 5%"),
    ),
    (
        "check_fs_iused /tmp 50k",
        Some("check_fs_iused:  /tmp has 100000 inodes used, threshold is 50k"),
    ),
    (
        "check_fs_ifree /tmp 95%",
        Some("check_fs_ifree:  /tmp has only 90% of inodes free (900000), minimum is 95%"),
    ),
    (
        "check_fs_ifree /tmp 950k",
        Some("check_fs_ifree:  /tmp has only 900000 inodes free, minimum is 950k"),
    ),
    (
        "check_hw_swap 1g 2g",
        Some("check_hw_swap:  Actual SWAP size (0 kB) less than minimum allowed (1048576 kB)."),
    ),
    ("check_hw_mem 1k 1tb", None),
    (
        "check_hw_mem 1tb 2tb",
        Some(
            "check_hw_mem:  Actual system memory (24683584 kB) less than minimum allowed (1073741824 kB).",
        ),
    ),
    ("check_hw_physmem_free 1mb", None),
    // NHC's free RAM is MemFree + Buffers + Cached: the made-up machine's 21100000 kB.
    (
        "check_hw_physmem_free 1tb",
        Some("check_hw_physmem_free:  Not enough RAM free (21100000 kB < 1073741824 kB)."),
    ),
    ("check_hw_swap_free 0", None),
    (
        "check_hw_mem_free 1tb",
        Some("check_hw_mem_free:  Not enough free memory (21100000 kB < 1073741824 kB)."),
    ),
    (
        "check_ps_service crond",
        Some("check_ps_service:  Service crond (process crond) not running"),
    ),
];

/// Rows run with the file's settings: (settings, check line, NHC's message). `{dir}` is a
/// directory of stand-in tools, each printing what NHC's stand-in printed.
const WITH_SETTINGS: &[(&str, &str, Option<&str>)] = &[
    ("MCELOG={dir}/mcelog_ok", "check_hw_mcelog", None),
    (
        "MCELOG={dir}/mcelog_bad",
        "check_hw_mcelog",
        Some(
            "check_hw_mcelog:  MCEs detected - 12 corrected memory errors detected (limit of 9/day).",
        ),
    ),
    (
        "MCELOG={dir}/mcelog_unc",
        "check_hw_mcelog",
        Some(
            "check_hw_mcelog:  MCEs detected - 1 UNcorrected memory errors detected (limit of 0/day).",
        ),
    ),
    ("MCELOG={dir}/mcelog_refused", "check_hw_mcelog", None),
    ("MCELOG={dir}/mcelog_empty", "check_hw_mcelog", None),
    ("MCELOG={dir}/not_installed", "check_hw_mcelog", None),
    (
        "MCELOG={dir}/mcelog_ok MCELOG_MAX_CORRECTED_RATE=",
        "check_hw_mcelog",
        Some("check_hw_mcelog:  MCEs detected in log."),
    ),
    (
        "NVIDIA_HEALTHMON={dir}/nvhm_fail",
        "check_nv_healthmon",
        Some("check_nv_healthmon:  {dir}/nvhm_fail returned failure code 3"),
    ),
    ("NVIDIA_HEALTHMON={dir}/nvhm_ok", "check_nv_healthmon", None),
    (
        "NVIDIA_SMI_HEALTHMON={dir}/nvsmi_15",
        "check_nvsmi_healthmon",
        Some(
            "check_nvsmi_healthmon:  {dir}/nvsmi_15:  The GPU has fallen off the bus or has otherwise become inaccessible",
        ),
    ),
    (
        "NHC_RM=none",
        "check_ps_userproc_lineage",
        Some(
            "check_ps_userproc_lineage:  This check requires a supported resource manager (e.g., Slurm, TORQUE, SGE, LSF)",
        ),
    ),
    (
        "NHC_RM=slurm",
        "check_ps_userproc_lineage",
        Some("check_ps_userproc_lineage:  12345's \"sleep\" process is rogue. (PID 19050)"),
    ),
    ("NHC_RM=slurm", "check_ps_userproc_lineage log", None),
    (
        "NHC_AUTH_USERS=12346",
        "check_ps_unauth_users kill die",
        Some(
            "check_ps_unauth_users:  12345's \"sleep\" process is unauthorized. (PID 19050); NHC would kill it (health_check does not act on the node)",
        ),
    ),
    (
        "NHC_AUTH_USERS='12345 12346 root'",
        "check_ps_unauth_users",
        None,
    ),
    (
        "NVIDIA_SMI_HEALTHMON={dir}/nvhm_ok",
        "check_nvsmi_healthmon",
        None,
    ),
];

/// Stand-in tools, as NHC's were: (name, shell script).
const TOOLS: &[(&str, &str)] = &[
    (
        "mcelog_ok",
        "printf 'corrected memory errors:\\n  325 total\\n  9 in 24h\\nuncorrected memory errors:\\n  0 total\\n  0 in 24h\\n'",
    ),
    (
        "mcelog_bad",
        "printf 'corrected memory errors:\\n  325 total\\n  12 in 24h\\nuncorrected memory errors:\\n  1 total\\n  1 in 24h\\n'",
    ),
    (
        "mcelog_unc",
        "printf 'corrected memory errors:\\n  0 total\\n  0 in 24h\\nuncorrected memory errors:\\n  2 total\\n  1 in 24h\\n'",
    ),
    (
        "mcelog_refused",
        "echo 'mcelog: client connect: Connection refused' >&2; exit 1",
    ),
    ("mcelog_empty", "exit 0"),
    ("nvhm_fail", "echo 'GPU 0: bad'; exit 3"),
    ("nvhm_ok", "exit 0"),
    ("nvsmi_15", "exit 15"),
];

/// Runs `text` as an nhc.conf (from a file only root can change) on `m`: each line's outcome.
fn run_conf(text: &str, m: &dyn Machine) -> Vec<super::LineOutcome> {
    let conf = Conf::parse(text.as_bytes(), Path::new("nhc.conf"), b"n1", true)
        .unwrap_or_else(|e| panic!("{e}"));
    super::run(&conf, m)
}

/// A line's verdicts against NHC's: no failure where NHC passed, NHC's message where it failed.
fn decides_as_nhc(line: &str, outcome: &super::LineOutcome, want: Option<String>) {
    assert_eq!(outcome.stopped, None, "{line}");
    let failures: Vec<&str> = outcome
        .checks
        .iter()
        .filter(|c| matches!(c.status.as_str(), "fail" | "warn"))
        .map(|c| c.message.as_str())
        .collect();
    match want {
        None => assert!(
            failures.is_empty(),
            "{line}: NHC passed, we failed: {failures:?}"
        ),
        // What NHC would have done, said after its message, is ours.
        Some(msg) => assert!(
            failures.len() == 1
                && (failures[0] == msg || failures[0].starts_with(&format!("{msg}; NHC would"))),
            "{line}: {failures:?}, NHC said {msg:?}"
        ),
    }
}

#[test]
fn health_check_decides_as_nhc_decided_on_every_row() {
    let m = Fake::default();
    let text: String = TABLE.iter().map(|(l, _)| format!("* || {l}\n")).collect();
    let outcomes = run_conf(&text, &m);
    assert_eq!(outcomes.len(), TABLE.len());
    for ((line, want), outcome) in TABLE.iter().zip(&outcomes) {
        decides_as_nhc(line, outcome, want.map(str::to_string));
    }
}

#[test]
fn health_check_decides_as_nhc_decided_with_the_files_settings() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    for (name, script) in TOOLS {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let m = Fake::default();
    for (settings, line, want) in WITH_SETTINGS {
        // The settings hold for the one line, as `VAR=x check` makes them.
        let text = format!("* || {} {line}\n", settings.replace("{dir}", &d));
        let outcomes = run_conf(&text, &m);
        decides_as_nhc(line, &outcomes[0], want.map(|w| w.replace("{dir}", &d)));
    }
}

/// An arithmetic error inside a check (`1.5g`, a mode or fudge that is no number) makes bash
/// abandon the line, not the run: NHC 1.4.3 then says "Check ... returned 1" (under `-a` it
/// ignores the line), and the next line still runs. Only `${X:?}` ends the run.
#[test]
fn an_arithmetic_error_fails_its_line_and_the_run_goes_on() {
    let m = Fake::default();
    let text = "* || check_hw_swap_free 1.5g\n\
                * || check_file_stat -M 7x /etc/passwd\n\
                * || check_hw_eth no-such-dev0\n\
                * || X=${UNSET_HC:?gone} check_hw_eth lo\n\
                * || check_hw_eth no-such-dev1\n";
    let outcomes = run_conf(text, &m);
    let said = |i: usize| outcomes[i].checks[0].message.clone();
    assert!(
        said(0).starts_with("Check check_hw_swap_free 1.5g returned 1 (1.5*1024*1024: "),
        "{}",
        said(0)
    );
    assert!(
        said(1).starts_with("Check check_file_stat -M 7x /etc/passwd returned 1 ("),
        "{}",
        said(1)
    );
    assert_eq!(
        said(2),
        "check_hw_eth:  Ethernet device no-such-dev0 not detected."
    );
    assert_eq!(outcomes.len(), 4, "the run ends at ${{X:?}}");
    assert_eq!(outcomes[3].stopped.as_deref(), Some("UNSET_HC: gone"));
}

/// Each check's name and status, in order.
fn named(checks: &[crate::wire::check::Check]) -> Vec<(String, &str)> {
    checks
        .iter()
        .map(|c| (c.name.to_string(), c.status.as_str()))
        .collect()
}

/// A line of the table through the whole path: the file, the document's checks.
#[test]
fn a_conf_gives_checks_named_after_nhc_with_its_verdicts() {
    let parse = |text: &str| {
        Conf::parse(text.as_bytes(), Path::new("/etc/nhc/nhc.conf"), b"n1", true).unwrap()
    };
    let conf = parse(
        "* || check_fs_mount_rw -f / -f /data\n\
         * || check_hw_swap_free 1\n\
         * || check_ps_service -r crond\n",
    );
    let checks = super::evaluate(&conf, &Fake::default());
    assert_eq!(
        named(&checks),
        [
            ("node.check_fs_mount_rw:/".to_string(), "pass"),
            ("node.check_fs_mount_rw:/data".to_string(), "fail"),
            ("node.check_hw_swap_free".to_string(), "fail"),
            ("node.check_ps_service:crond".to_string(), "fail"),
        ]
    );
    assert!(
        checks[3]
            .message
            .contains("Service crond (process crond) not running; NHC would restart the service (health_check does not act on the node)"),
        "{}",
        checks[3].message
    );
    // MARK_OFFLINE=0: observe only, failures are warnings.
    let conf = parse("* || export MARK_OFFLINE=0\n* || check_hw_swap_free 1\n");
    assert_eq!(
        super::evaluate(&conf, &Fake::default())[0].status.as_str(),
        "warn"
    );
}

/// check_hw_ib on a fake `/sys/class/infiniband` tree: an active 100 Gb/s port passes at 100,
/// fails at 200 and on another port, and a port that dropped to Polling fails.
#[test]
fn infiniband_ports_are_read_from_sysfs_and_judged_by_rate_and_state() {
    struct Ib(std::path::PathBuf, std::path::PathBuf);
    impl Machine for Ib {
        fn infiniband(&self) -> (u32, Vec<IbPort>) {
            super::state::read_infiniband(&self.0, &self.1)
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let port = dir.path().join("infiniband/mlx5_0/ports/1");
    std::fs::create_dir_all(&port).unwrap();
    std::fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
    std::fs::write(port.join("phys_state"), "5: LinkUp\n").unwrap();
    std::fs::write(port.join("rate"), "100 Gb/sec (4X EDR)\n").unwrap();
    let abi = dir.path().join("abi_version");
    std::fs::write(&abi, "5\n").unwrap();
    let m = Ib(dir.path().join("infiniband"), abi);
    let verdict = |line: &str| {
        let o = run_conf(&format!("* || {line}\n"), &m);
        o[0].checks
            .iter()
            .find(|c| c.status.as_str() == "fail")
            .map(|c| c.message.clone())
    };
    assert_eq!(verdict("check_hw_ib 100"), None);
    assert_eq!(verdict("check_hw_ib 100 mlx5_0:1"), None);
    assert_eq!(
        verdict("check_hw_ib 200").as_deref(),
        Some("check_hw_ib:  No IB port is ACTIVE (LinkUp 200 Gb/sec).")
    );
    assert_eq!(
        verdict("check_hw_ib 100 mlx5_1:1").as_deref(),
        Some("check_hw_ib:  No IB port mlx5_1:1 is ACTIVE (LinkUp 100 Gb/sec).")
    );
    std::fs::write(port.join("phys_state"), "2: Polling\n").unwrap();
    assert!(verdict("check_hw_ib 100").is_some());
}

/// What cannot be judged here is a skip that says why, not a failure: a node without GPU tools,
/// a Slurm controller that did not say who has jobs.
#[test]
fn a_missing_gpu_tool_or_a_silent_slurm_skips_and_says_why() {
    struct Silent(Fake);
    impl Machine for Silent {
        fn processes(&self) -> Vec<Process> {
            self.0.processes()
        }
        fn max_sys_uid(&self) -> u32 {
            999
        }
        fn job_users(&self, _: &[u8], _: &[u8]) -> Option<Result<Vec<Vec<u8>>, String>> {
            Some(Err("'squeue' did not answer within 10 s".into()))
        }
    }
    let conf = Conf::parse(
        b"* || export NVIDIA_HEALTHMON=/nonexistent/nvidia-healthmon NHC_RM=slurm\n\
         * || check_nv_healthmon\n\
         * || check_ps_unauth_users\n\
         * || check_dmi_data_match \"BIOS Information: Vendor: *\"\n\
         * || export NVIDIA_SMI_HEALTHMON=/nonexistent/nvidia-smi\n\
         * || check_nvsmi_healthmon\n\
         * || check_ps_service -S -0 -u nobody telegraf\n",
        Path::new("c"),
        b"n1",
        true,
    )
    .unwrap();
    let checks = super::evaluate(&conf, &Silent(Fake::default()));
    let got: Vec<(&str, &str)> = checks
        .iter()
        .map(|c| (c.status.as_str(), c.message.as_str()))
        .collect();
    assert_eq!(got[0].0, "skip");
    assert!(
        got[0]
            .1
            .contains("/nonexistent/nvidia-healthmon is not installed"),
        "{got:?}"
    );
    // What NHC would say, each check its own words (NHC 1.4.3 run here without the tools).
    assert!(
        got[0].1.ends_with(
            "NHC would fail \"check_nv_healthmon:  /nonexistent/nvidia-healthmon not found or \
             not runnable.\""
        ),
        "{got:?}"
    );
    assert_eq!(got[3].0, "skip");
    assert!(
        got[3].1.ends_with(
            "NHC would fail \"check_nvsmi_healthmon:  /nonexistent/nvidia-smi:  Returned \
             failure code 127\""
        ),
        "{got:?}"
    );
    // Non-fatal, and what NHC would have set off said (NHC: "; start in progress").
    assert_eq!(got[4].0, "pass");
    assert!(
        got[4].1.ends_with(
            "owned by nobody not running (non-fatal); NHC would start the service \
             (health_check does not act on the node)"
        ),
        "{got:?}"
    );
    assert_eq!(got[1].0, "skip");
    assert!(got[1].1.contains("cannot tell who has jobs"), "{got:?}");
    // NHC fails a DMI match without dmidecode, and so does this, saying why.
    assert_eq!(got[2].0, "fail");
    assert!(
        got[2]
            .1
            .contains("No valid DMI handles found; dmidecode is not installed"),
        "{got:?}"
    );
}

/// dmidecode's nesting flattened as NHC flattens it: each line under its headings.
#[test]
fn dmi_lines_carry_their_headings() {
    let t = super::checks::hardware::parse_dmi(DMI.as_bytes());
    assert_eq!(t.len(), 4);
    assert_eq!(t[0].type_name, b"BIOS Information");
    let lines: Vec<String> = t[0]
        .lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    assert_eq!(
        lines,
        [
            "BIOS Information: Vendor: SeaBIOS",
            "BIOS Information: Version: 2.0.1",
            "BIOS Information: Release Date: 04/01/2014",
            "BIOS Information: Characteristics:",
            "BIOS Information: Characteristics: BIOS characteristics not supported",
            "BIOS Information: Characteristics: Targeted content distribution is supported",
        ]
    );
    assert_eq!(
        (t[2].handle.as_slice(), t[2].type_id.as_slice()),
        (&b"0x1101"[..], &b"17"[..])
    );
}

/// Every check health_check runs has a row where NHC passed and one where it failed (check_hw_ib
/// passes on the fake InfiniBand tree of its own test; check_fs_inodes and
/// check_dmi_raw_data_match are held by NHC's own suite, tests/fixtures/nhc-1.4.3-suite).
#[test]
fn the_conformance_tables_cover_every_check_passing_and_failing() {
    let rows = TABLE
        .iter()
        .map(|(line, want)| (*line, want.is_some()))
        .chain(
            WITH_SETTINGS
                .iter()
                .map(|(_, line, want)| (*line, want.is_some())),
        );
    let mut seen = std::collections::BTreeSet::new();
    for (line, failed) in rows {
        seen.insert((line.split_whitespace().next().unwrap().to_string(), failed));
    }
    seen.insert(("check_hw_ib".to_string(), false));
    for check in super::checks::SUPPORTED {
        if ["check_fs_inodes", "check_dmi_raw_data_match"].contains(check) {
            continue;
        }
        for failed in [false, true] {
            assert!(
                seen.contains(&(check.to_string(), failed)),
                "{check}: no row where NHC {}",
                if failed { "failed" } else { "passed" }
            );
        }
    }
}

/// Settings hold from their line on, as NHC's `eval` runs them: `export A=1 B=2` sets both,
/// `VAR=x check` holds for that check only, `MARK_OFFLINE` is a number compared with `-eq 1`
/// (`no` observes only), `$HOSTNAME` and `$HOSTNAME_S` are NHC's.
#[test]
fn settings_hold_line_by_line_as_nhc_runs_them() {
    let run = |text: &str, host: &[u8]| {
        let conf = Conf::parse(text.as_bytes(), Path::new("nhc.conf"), host, true).unwrap();
        super::evaluate(&conf, &Fake::default())
            .into_iter()
            .map(|c| (c.status.as_str().to_string(), c.message))
            .collect::<Vec<_>>()
    };
    let got = run(
        "* || export A=1 B=2\n\
         * || check_ps_loadavg $((A+B+1))\n\
         * || MAX_SYS_UID=20000 check_ps_unauth_users\n\
         * || check_ps_unauth_users\n\
         * || MARK_OFFLINE=no\n\
         * || check_ps_loadavg 1\n",
        b"n1",
    );
    assert_eq!(got[0].0, "fail");
    assert_eq!(
        got[0].1,
        "check_ps_loadavg:  1-minute load average too high:  4 >= 4"
    );
    // The prefix held for its check only: uid 12345 was a system account there, not after.
    assert_eq!(got[1].0, "pass", "{got:?}");
    assert_eq!(got[2].0, "fail", "{got:?}");
    // `MARK_OFFLINE=no` is 0 to `-eq 1`: observe only from its line on.
    assert_eq!(got[3].0, "warn", "{got:?}");
    for (value, want) in [
        ("0", "warn"),
        ("no", "warn"),
        ("''", "warn"),
        ("1", "fail"),
        ("01", "fail"),
    ] {
        let got = run(
            &format!("* || MARK_OFFLINE={value}\n* || check_ps_loadavg 1\n"),
            b"n1",
        );
        assert_eq!(got[0].0, want, "MARK_OFFLINE={value}");
    }
    let got = run(
        "* || check_hw_eth $HOSTNAME_S\n* || check_hw_eth \"$HOSTNAME\"\n",
        b"eth0.cluster",
    );
    assert_eq!(got[0].0, "pass", "{got:?}");
    assert_eq!(
        got[1].1,
        "check_hw_eth:  Ethernet device eth0.cluster not detected."
    );
}

/// NHC sources its settings file (`/etc/default/nhc`, `/etc/sysconfig/nhc`) after its command
/// line and before its defaults: a site that keeps its numbers there (`SITE_CORES=4`) and
/// observes only (`MARK_OFFLINE=0`) gets NHC's verdicts, not checks of empty settings.
#[test]
fn the_settings_file_nhc_sources_holds_before_the_first_line() {
    let mut conf = Conf::parse(
        b"* || check_hw_cpuinfo $SITE_SOCKETS $SITE_CORES $SITE_THREADS\n\
          * || check_fs_mount_rw -t $SITE_TMP_FS -f /tmp\n\
          * || check_hw_swap_free $(( TIMEOUT / 10 ))\n",
        Path::new("/etc/nhc/nhc.conf"),
        b"n1",
        true,
    )
    .unwrap();
    conf.command_line = vec![(b"MARK_OFFLINE".to_vec(), b"1".to_vec())];
    conf.source(
        b"# site settings\n\
          SITE_SOCKETS=1 SITE_CORES=4 \\\n  SITE_THREADS=4\n\
          export SITE_TMP_FS=tmpfs   # the scratch\n\
          MARK_OFFLINE=0\n\
          TIMEOUT=${TIMEOUT:-60}\n\
          if true; then X=1; fi\n\
          check_fs_mount /nope\n\
          \n",
        Path::new("/etc/default/nhc"),
        true,
    );
    assert_eq!(conf.sysconfig.len(), 4, "{:?}", conf.notes);
    assert_eq!(
        conf.sysconfig[0].number, 2,
        "a joined line is numbered by its first"
    );
    let notes = conf.notes.join("\n");
    assert!(notes.contains("/etc/default/nhc:7: "), "{notes}");
    assert!(
        notes.contains("/etc/default/nhc:8: check_fs_mount is a check"),
        "{notes}"
    );
    let checks = super::evaluate(&conf, &Fake::default());
    let got: Vec<(String, &str, &str)> = checks
        .iter()
        .map(|c| (c.name.to_string(), c.status.as_str(), c.message.as_str()))
        .collect();
    // 2 cores, not 4: a failure, observed only (the file's MARK_OFFLINE=0 over the command
    // line's 1); /tmp is tmpfs; TIMEOUT is the file's 60 (NHC's default of 30 comes after).
    assert_eq!(got[0].0, "node.check_hw_cpuinfo");
    assert_eq!(got[0].1, "warn", "{got:?}");
    assert!(got[0].2.contains("does not match expected (4)"), "{got:?}");
    assert_eq!(got[1].1, "pass", "{got:?}");
    assert!(got[2].2.contains("(0 kB < 6 kB)"), "{got:?}");
    // Without the file, the settings are empty, as before: the CPU check has nothing to compare
    // and passes, and `-t -f /tmp` looks for a type named -f.
    let mut bare = conf.clone();
    bare.sysconfig.clear();
    let checks = super::evaluate(&bare, &Fake::default());
    assert_eq!(checks[0].status.as_str(), "pass", "{checks:?}");
    assert!(checks[1].message.contains("incorrect type"), "{checks:?}");
}

/// A site's `DF_FLAGS` choose what NHC's df lists (`-l`: local file systems only; without `-a`,
/// one mount per device): with flags other than NHC's own, df runs with them and its list
/// decides, as in NHC. A remote file system full to the brim passes under `-l`, as NHC passes it.
#[test]
fn df_flags_of_the_site_choose_the_file_systems_judged() {
    struct Df {
        calls: std::cell::Cell<usize>,
        out: Result<&'static str, &'static str>,
    }
    impl Machine for Df {
        fn mounts(&self) -> Vec<Mount> {
            super::state::parse_mounts(
                b"/dev/vda1 / ext4 rw 0 0\nnas01:/export /srv nfs rw 0 0\n/dev/vdb /scratch ext4 rw 0 0\n",
            )
        }
        fn space(&self, _: &[u8]) -> Option<Space> {
            Some(Space {
                size_kb: 1000,
                used_kb: 1000,
                avail_kb: 0,
                inodes: 10,
                inodes_free: 0,
            })
        }
        fn df(&self, args: &[Vec<u8>]) -> Result<Vec<u8>, String> {
            self.calls.set(self.calls.get() + 1);
            assert_eq!(args, [b"-Tkl".to_vec()]);
            self.out
                .map(|o| o.as_bytes().to_vec())
                .map_err(str::to_string)
        }
    }
    // df -Tkl: the NFS mount is not listed; a long device name wraps onto the next line.
    let listing = "Filesystem     Type 1K-blocks  Used Available Use% Mounted on\n\
                   /dev/vda1      ext4   1000000 10000    990000   2% /\n\
                   /dev/mapper/a-very-long-volume-name\n\
                                  ext4      1000   990        10  99% /scratch\n";
    let conf =
        |text: &str| Conf::parse(text.as_bytes(), Path::new("nhc.conf"), b"n1", true).unwrap();
    let m = Df {
        calls: std::cell::Cell::new(0),
        out: Ok(listing),
    };
    let c = conf(
        "* || DF_FLAGS=-Tkl\n\
         * || check_fs_free /srv 3%\n\
         * || check_fs_free /scratch 3%\n\
         * || check_fs_used / 90%\n\
         * || DF_FLAGS=-Tka\n\
         * || check_fs_free /srv 3%\n",
    );
    let checks = super::evaluate(&c, &m);
    assert_eq!(
        named(&checks),
        [
            ("node.check_fs_free:/srv".to_string(), "pass"),
            ("node.check_fs_free:/scratch".to_string(), "fail"),
            ("node.check_fs_used:/".to_string(), "pass"),
            // NHC reads df once, with the flags of its first use: /srv is still not listed.
            ("node.check_fs_free:/srv".to_string(), "pass"),
        ]
    );
    assert!(
        checks[1]
            .message
            .contains("/scratch has only 1% free (10kB)"),
        "{}",
        checks[1].message
    );
    assert_eq!(m.calls.get(), 1, "df runs once");
    // NHC's own flags: no df, the mount table and statvfs (the full NFS mount fails).
    let checks = super::evaluate(&conf("* || check_fs_free /srv 3%\n"), &m);
    assert_eq!(checks[0].status.as_str(), "fail");
    assert_eq!(m.calls.get(), 1);
    // df that cannot run: said, not judged (NHC would pass on an empty list).
    let broken = Df {
        calls: std::cell::Cell::new(0),
        out: Err("df is not installed"),
    };
    let checks = super::evaluate(
        &conf("* || DF_FLAGS=-Tkl\n* || check_fs_free /scratch 3%\n"),
        &broken,
    );
    assert_eq!(checks[0].status.as_str(), "skip", "{checks:?}");
    assert!(checks[0].message.contains("`df -Tkl`"), "{checks:?}");
}

#[test]
fn df_output_is_read_as_nhc_reads_it() {
    let rows = super::state::parse_df(
        b"Filesystem Type 1K-blocks Used Available Use% Mounted on\n\
          tmpfs tmpfs 100 - - - /run\n\
          /dev/x\n  ext4 10 5 5 50% /a b\n\
          odd\n",
    );
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].numbers, [Some(100), Some(0), Some(0)]);
    assert_eq!(rows[1].device, b"/dev/x");
    // A blank in a mount point cuts it, as NHC's word splitting does.
    assert_eq!(rows[1].point, b"/a");
    assert_eq!(rows[2].point, b"");
}

/// A variable read while unset expands to nothing, in NHC as here: said beside the line (a site
/// rarely means `check_hw_cpuinfo $NHC_SOCKETS` to check nothing).
#[test]
fn a_variable_read_while_unset_is_said() {
    let out = run_conf(
        "* || check_hw_cpuinfo $SOCKETS ${CORES} $((2*$X)) $SOCKETS\n\
         * || export CORES=2 SOCKETS=1\n\
         * || check_hw_cpuinfo $SOCKETS $CORES ${T:-4} $HOSTNAME\n",
        &Fake::default(),
    );
    let unset: Vec<Vec<String>> = out
        .iter()
        .map(|o| {
            o.unset
                .iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect()
        })
        .collect();
    assert_eq!(unset, [vec!["SOCKETS", "CORES", "X"], vec![], vec![]]);
}

/// From a file others can change, a program or its arguments set by an expansion while a check
/// line expands (`${NVIDIA_SMI_HEALTHMON:=...}`: no plain setting, so the reading cannot refuse
/// it) never runs as root: the check does not run, the line fails saying why. The same from
/// NHC's settings file others can change, with nhc.conf root's alone: each line is trusted as
/// its own file is. A tool's arguments are a program's setting (`nvidia-smi -f FILE` writes it).
#[test]
fn an_expansion_never_makes_root_run_a_program_a_user_named() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let evil = dir.path().join("evil");
    std::fs::write(&evil, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&evil, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let e = evil.display();
    for (conf_text, conf_root, settings, settings_root) in [
        (
            format!("* || check_nvsmi_healthmon ${{NVIDIA_SMI_HEALTHMON:={e}}}\n"),
            false,
            String::new(),
            true,
        ),
        (
            format!("* || X=${{NVIDIA_HEALTHMON:={e}}} check_nv_healthmon\n"),
            false,
            String::new(),
            true,
        ),
        (
            "* || check_hw_mcelog\n".to_string(),
            true,
            format!("X=${{MCELOG:={e}}}\n"),
            false,
        ),
        (
            "* || check_hw_mcelog\n".to_string(),
            true,
            format!(
                "unset PATH\nX=${{PATH:={}}}\nMCELOG=evil\n",
                dir.path().display()
            ),
            false,
        ),
    ] {
        let mut conf = Conf::parse(
            conf_text.as_bytes(),
            Path::new("nhc.conf"),
            b"n1",
            conf_root,
        )
        .unwrap();
        conf.source(
            settings.as_bytes(),
            Path::new("/etc/default/nhc"),
            settings_root,
        );
        let checks = super::evaluate(&conf, &Fake::default());
        assert!(
            !marker.exists(),
            "{conf_text} / {settings}: root ran the user's program"
        );
        if !conf_root {
            assert!(
                checks
                    .iter()
                    .any(|c| c.message.contains("from a file others can change: refused")),
                "{conf_text}: {checks:?}"
            );
        }
    }
    // The tools' arguments are refused as a plain setting from a file others can change.
    for line in [
        "* || NVIDIA_SMI_HEALTHMON_ARGS='-f /etc/passwd'\n",
        "* || MCELOG_ARGS=--daemon\n",
        "* || DF_FLAGS=--files0-from=/x\n",
    ] {
        let e = Conf::parse(line.as_bytes(), Path::new("nhc.conf"), b"n1", false).unwrap_err();
        assert!(e.message.contains("or what it is given"), "{line}: {e}");
    }
}
