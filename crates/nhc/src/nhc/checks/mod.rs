//! NHC's checks, with NHC's names, arguments, verdicts and messages (NHC 1.4.3, read from its
//! scripts and held to its own test suite and to runs of NHC itself: `tests.rs`,
//! tests/fixtures/nhc-1.4.3-suite, tests/nhc_differential). Each check line gives one verdict per
//! subject: a mount point, a file, a process, or the machine. Arguments are bytes, as bash passes
//! them.

mod cmd;
mod file;
mod fs;
pub mod hardware;
mod hw;
pub mod processes;
mod ps;

use super::state::Machine;
pub use super::verdict::{LineError, Settings, Verdict};
use std::collections::BTreeMap;

/// What a check reads: the machine and the variables in force at its line.
pub struct Ctx<'a> {
    /// The machine.
    pub m: &'a dyn Machine,
    /// The variables.
    pub settings: &'a Settings,
}

/// What a check line gives.
pub type Outcome = Result<Vec<Verdict>, LineError>;

/// The checks health_check runs, by NHC's names.
pub const SUPPORTED: &[&str] = &[
    "check_fs_mount",
    "check_fs_mount_rw",
    "check_fs_mount_ro",
    "check_fs_free",
    "check_fs_used",
    "check_fs_size",
    "check_fs_inodes",
    "check_fs_ifree",
    "check_fs_iused",
    "check_hw_cpuinfo",
    "check_hw_physmem",
    "check_hw_swap",
    "check_hw_mem",
    "check_hw_physmem_free",
    "check_hw_swap_free",
    "check_hw_mem_free",
    "check_hw_eth",
    "check_hw_ib",
    "check_file_test",
    "check_file_stat",
    "check_file_contents",
    "check_ps_daemon",
    "check_ps_blacklist",
    "check_ps_service",
    "check_ps_loadavg",
    "check_cmd_status",
    "check_cmd_output",
    "check_hw_mcelog",
    "check_dmi_data_match",
    "check_dmi_raw_data_match",
    "check_nv_healthmon",
    "check_nvsmi_healthmon",
    "check_ps_unauth_users",
    "check_ps_userproc_lineage",
];

/// Checks that run a program the file names (directly, or through a setting): honoured only
/// from a file only root can change.
pub const RUN_COMMANDS: &[&str] = &["check_cmd_status", "check_cmd_output"];

/// Checks after which NHC's `HW_*` variables hold the machine's values (they gather them).
pub const GATHER_HARDWARE: &[&str] = &[
    "check_hw_cpuinfo",
    "check_hw_physmem",
    "check_hw_swap",
    "check_hw_mem",
    "check_hw_physmem_free",
    "check_hw_swap_free",
    "check_hw_mem_free",
    "check_hw_eth",
    "check_hw_ib",
];

/// NHC's hardware variables (`HW_CORES` ...) as the machine gives them.
pub fn hw_vars(m: &dyn Machine) -> BTreeMap<&'static str, u64> {
    let (sockets, cores, threads) = cpu_counts(&m.cpuinfo());
    let mem = m.meminfo();
    let get = |k: &str| mem.get(k).copied().unwrap_or(0);
    BTreeMap::from([
        ("HW_SOCKETS", sockets),
        ("HW_CORES", cores),
        ("HW_THREADS", threads),
        ("HW_RAM_TOTAL", get("MemTotal")),
        (
            "HW_RAM_FREE",
            get("MemFree")
                .saturating_add(get("Buffers"))
                .saturating_add(get("Cached")),
        ),
        ("HW_SWAP_TOTAL", get("SwapTotal")),
        ("HW_SWAP_FREE", get("SwapFree")),
    ])
}

/// Sockets (distinct `physical id`), cores (sockets x `cpu cores`) and threads (sockets x
/// `siblings`), as NHC counts them; a machine without `physical id` counts its processors.
pub fn cpu_counts(cpuinfo: &str) -> (u64, u64, u64) {
    let mut ids = std::collections::BTreeSet::new();
    let (mut cores, mut siblings, mut processors) = (0u64, 0u64, 0u64);
    for line in cpuinfo.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "physical id" => {
                ids.insert(v.to_string());
            }
            "cpu cores" => cores = v.parse().unwrap_or(cores),
            "siblings" => siblings = v.parse().unwrap_or(siblings),
            "processor" => processors += 1,
            _ => {}
        }
    }
    let sockets = ids.len() as u64;
    match (sockets, processors) {
        (0, 0) => (1, 1, 1),
        (0, p) => (p, p, p),
        (s, _) => (s, s.saturating_mul(cores), s.saturating_mul(siblings)),
    }
}

/// Runs one check line on `m` with NHC's default settings.
pub fn run(check: &str, args: &[Vec<u8>], m: &dyn Machine) -> Outcome {
    run_with(check, args, m, &Settings::default())
}

/// Runs one check line on `m` with the variables in force.
pub fn run_with(check: &str, args: &[Vec<u8>], m: &dyn Machine, settings: &Settings) -> Outcome {
    let cx = Ctx { m, settings };
    let one = |v: Result<Verdict, LineError>| v.map(|v| vec![v]);
    match check {
        "check_fs_mount" => fs::mount(args, None, &cx),
        "check_fs_mount_rw" => fs::mount(args, Some(b"/(^|,)rw($|,)/"), &cx),
        "check_fs_mount_ro" => fs::mount(args, Some(b"/(^|,)ro($|,)/"), &cx),
        "check_fs_free" | "check_fs_used" | "check_fs_ifree" | "check_fs_iused" => {
            fs::space(check, args, &cx)
        }
        "check_fs_size" => fs::size(args, &cx),
        "check_fs_inodes" => fs::inodes(args, &cx),
        "check_hw_cpuinfo" => one(hw::cpuinfo(args, &cx)),
        "check_hw_physmem" | "check_hw_swap" | "check_hw_mem" => one(hw::mem(check, args, &cx)),
        "check_hw_physmem_free" | "check_hw_swap_free" | "check_hw_mem_free" => {
            one(hw::mem_free(check, args, &cx))
        }
        "check_hw_eth" => one(hw::eth(args, &cx)),
        "check_hw_ib" => one(hw::ib(args, &cx)),
        "check_file_test" => file::test(args, &cx),
        "check_file_stat" => file::stat(args, &cx),
        "check_file_contents" => one(file::contents(args)),
        "check_ps_daemon" | "check_ps_blacklist" => one(ps::daemon(check, args, &cx)),
        "check_ps_service" => one(ps::service(args, &cx)),
        "check_ps_loadavg" => one(ps::loadavg(args, &cx)),
        "check_cmd_status" | "check_cmd_output" => one(cmd::run(check, args, settings)),
        "check_hw_mcelog" => one(hardware::mcelog(settings)),
        "check_dmi_data_match" => one(hardware::dmi_data_match(args, m, settings)),
        "check_dmi_raw_data_match" => one(hardware::dmi_raw_data_match(args, m)),
        "check_nv_healthmon" | "check_nvsmi_healthmon" => one(hardware::gpu(check, settings)),
        "check_ps_unauth_users" => one(processes::unauth_users(args, m, settings)),
        "check_ps_userproc_lineage" => one(processes::userproc_lineage(args, m, settings)),
        other => Err(LineError::Fails(format!(
            "{other} is not a check health_check runs"
        ))),
    }
}

/// Options given, in order: the letter and its value (empty for a flag).
pub type Given<'a> = Vec<(u8, &'a [u8])>;

/// NHC's `getopts` over `args`: options from `spec` (a letter, `:` after one that takes a
/// value), stopping at the first word that is no option or at `--`. Gives the options in order
/// and the index of the first operand; an unknown option or a missing value is NHC's message.
pub fn getopts<'a>(
    check: &str,
    args: &'a [Vec<u8>],
    spec: &str,
) -> Result<(Given<'a>, usize), LineError> {
    let takes = |c: u8| {
        let at = spec.as_bytes().iter().position(|s| *s == c)?;
        Some(spec.as_bytes().get(at + 1) == Some(&b':'))
    };
    let mut opts = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.as_slice() == b"--" {
            return Ok((opts, i + 1));
        }
        if a.len() < 2 || a[0] != b'-' {
            break;
        }
        let mut j = 1;
        while j < a.len() {
            let c = a[j];
            match takes(c) {
                None => {
                    return Err(LineError::Fails(format!(
                        "{check}:  Invalid option:  -{}",
                        super::bytes::show(&[c])
                    )));
                }
                Some(false) => {
                    opts.push((c, &b""[..]));
                    j += 1;
                }
                Some(true) => {
                    let value: &[u8] = if j + 1 < a.len() {
                        &a[j + 1..]
                    } else {
                        i += 1;
                        args.get(i).map(Vec::as_slice).ok_or_else(|| {
                            LineError::Fails(format!(
                                "{check}:  Option -{} requires an argument.",
                                c as char
                            ))
                        })?
                    };
                    opts.push((c, value));
                    break;
                }
            }
        }
        i += 1;
    }
    Ok((opts, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn options_are_read_as_getopts_reads_them() {
        let args = v(&["-0f", "/a", "-t", "nfs", "-sx", "/b", "-e"]);
        let (opts, at) = getopts("c", &args, "0f:s:t:e:").unwrap();
        let got: Vec<(char, &[u8])> = opts.iter().map(|(c, v)| (*c as char, *v)).collect();
        assert_eq!(
            got,
            [('0', &b""[..]), ('f', b"/a"), ('t', b"nfs"), ('s', b"x")]
        );
        assert_eq!(at, 5);
        let args = v(&["-t"]);
        assert!(matches!(
            getopts("c", &args, "t:"),
            Err(LineError::Fails(m)) if m == "c:  Option -t requires an argument."
        ));
        let args = v(&["-q"]);
        assert!(matches!(
            getopts("c", &args, "t:"),
            Err(LineError::Fails(m)) if m == "c:  Invalid option:  -q"
        ));
        let args = v(&["--", "-x"]);
        assert_eq!(getopts("c", &args, "x").unwrap().1, 1);
    }
}
