//! The conformance table: what NHC 1.4.3 itself decided, run by hand on this kind of machine
//! (`nhc -D DIR -c CONF -a -l - -t 30 INCDIR=DIR/scripts MARK_OFFLINE=0 NHC_RM=none`), for each
//! supported check, passing and failing, recorded as facts (a line, the machine's state, NHC's
//! verdict and message), and health_check deciding the same on the same state.

use super::checks::run;
use super::conf::{Conf, words};
use super::state::{IbPort, Machine, Mount, Process, Space, parse_mounts};
use std::collections::BTreeMap;
use std::path::Path;

/// A machine made up for a row: the state NHC saw.
struct Fake {
    mounts: &'static str,
    meminfo: &'static str,
    cpuinfo: &'static str,
    processes: Vec<(&'static str, &'static str)>,
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
                ("root", "/usr/sbin/sshd -D"),
                ("root", "/sbin/init"),
                ("daemon", "/usr/sbin/atd -f"),
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
        parse_mounts(self.mounts)
    }
    fn space(&self, _: &str) -> Option<Space> {
        Some(self.space)
    }
    fn meminfo(&self) -> BTreeMap<String, u64> {
        super::state::parse_meminfo(self.meminfo)
    }
    fn cpuinfo(&self) -> String {
        self.cpuinfo.to_string()
    }
    fn processes(&self) -> Vec<Process> {
        self.processes
            .iter()
            .map(|(u, a)| Process {
                user: u.to_string(),
                args: a.to_string(),
            })
            .collect()
    }
    fn loadavg(&self) -> Option<[f64; 3]> {
        Some(self.load)
    }
    fn net_devices(&self) -> Vec<String> {
        self.devices.iter().map(|d| d.to_string()).collect()
    }
    fn infiniband(&self) -> (u32, Vec<IbPort>) {
        // A machine without InfiniBand, as the one NHC ran on.
        (0, Vec::new())
    }
}

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
];

#[test]
fn health_check_decides_as_nhc_decided_on_every_row() {
    let m = Fake::default();
    let vars = super::checks::hw_vars(&m);
    for (line, want) in TABLE {
        let w = words(line).unwrap();
        let args: Vec<String> = w[1..]
            .iter()
            .map(|a| super::checks::expand(a, &vars).unwrap())
            .collect();
        let verdicts = run(&w[0], &args, &m).unwrap_or_else(|e| panic!("{line}: {e}"));
        let failures: Vec<&str> = verdicts
            .iter()
            .filter_map(|v| v.failure.as_deref())
            .collect();
        match want {
            None => assert!(
                failures.is_empty(),
                "{line}: NHC passed, we failed: {failures:?}"
            ),
            Some(msg) => assert_eq!(failures, [*msg], "{line}"),
        }
    }
}

/// A line of the table through the whole path: the file, the document's checks.
#[test]
fn a_conf_gives_checks_named_after_nhc_with_its_verdicts() {
    let conf = Conf::parse(
        "* || check_fs_mount_rw -f / -f /data\n\
         * || check_hw_swap_free 1\n\
         * || check_ps_service -r crond\n",
        Path::new("/etc/nhc/nhc.conf"),
        "n1",
    )
    .unwrap();
    let checks = super::evaluate(&conf, &Fake::default());
    let got: Vec<(String, &str)> = checks
        .iter()
        .map(|c| (c.name.to_string(), c.status.as_str()))
        .collect();
    assert_eq!(
        got,
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
    let conf = Conf::parse(
        "* || export MARK_OFFLINE=0\n* || check_hw_swap_free 1\n",
        Path::new("c"),
        "n1",
    )
    .unwrap();
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
        fn mounts(&self) -> Vec<Mount> {
            Vec::new()
        }
        fn space(&self, _: &str) -> Option<Space> {
            None
        }
        fn meminfo(&self) -> BTreeMap<String, u64> {
            BTreeMap::new()
        }
        fn cpuinfo(&self) -> String {
            String::new()
        }
        fn processes(&self) -> Vec<Process> {
            Vec::new()
        }
        fn loadavg(&self) -> Option<[f64; 3]> {
            None
        }
        fn net_devices(&self) -> Vec<String> {
            Vec::new()
        }
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
        let w = words(line).unwrap();
        run(&w[0], &w[1..], &m).unwrap().remove(0).failure
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
