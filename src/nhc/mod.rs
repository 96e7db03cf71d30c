//! NHC's node checks (LBNL Node Health Check 1.4), natively: an operator's nhc.conf read as NHC
//! reads it (`conf`), each line this host matches run against this machine (`state`) with NHC's
//! arguments, verdict and message (`checks`), as checks of the document named
//! `node.<check>:<subject>`. They roll up with every other check: Slurm drains on them, NPD
//! and Prometheus report them. docs/nhc.md has the supported checks and what differs.

pub mod checks;
pub mod conf;
pub mod hardware;
pub mod matching;
pub mod processes;
pub mod shell;
pub mod size;
pub mod state;
#[cfg(test)]
mod tests;
pub mod verdict;

pub use conf::{Conf, ConfError};

use crate::wire::check::{Check, CheckId, Status};
use state::{IbPort, Machine, Mount, Process, Space};
use std::cell::OnceCell;
use std::collections::BTreeMap;

/// The machine read once per run, as NHC caches its process list: a file of ten process or
/// mount checks scans /proc once, not ten times.
struct Once<'a> {
    m: &'a dyn Machine,
    mounts: OnceCell<Vec<Mount>>,
    meminfo: OnceCell<BTreeMap<String, u64>>,
    cpuinfo: OnceCell<String>,
    processes: OnceCell<Vec<Process>>,
    dmi: OnceCell<Result<String, String>>,
    jobs: OnceCell<Option<Result<Vec<String>, String>>>,
}

impl<'a> Once<'a> {
    fn new(m: &'a dyn Machine) -> Once<'a> {
        Once {
            m,
            mounts: OnceCell::new(),
            meminfo: OnceCell::new(),
            cpuinfo: OnceCell::new(),
            processes: OnceCell::new(),
            dmi: OnceCell::new(),
            jobs: OnceCell::new(),
        }
    }
}

impl Machine for Once<'_> {
    fn mounts(&self) -> Vec<Mount> {
        self.mounts.get_or_init(|| self.m.mounts()).clone()
    }
    fn space(&self, point: &str) -> Option<Space> {
        self.m.space(point)
    }
    fn meminfo(&self) -> BTreeMap<String, u64> {
        self.meminfo.get_or_init(|| self.m.meminfo()).clone()
    }
    fn cpuinfo(&self) -> String {
        self.cpuinfo.get_or_init(|| self.m.cpuinfo()).clone()
    }
    fn processes(&self) -> Vec<Process> {
        self.processes.get_or_init(|| self.m.processes()).clone()
    }
    fn loadavg(&self) -> Option<[f64; 3]> {
        self.m.loadavg()
    }
    fn net_devices(&self) -> Vec<String> {
        self.m.net_devices()
    }
    fn infiniband(&self) -> (u32, Vec<IbPort>) {
        self.m.infiniband()
    }
    fn dmidecode(&self) -> Result<String, String> {
        self.dmi.get_or_init(|| self.m.dmidecode()).clone()
    }
    fn max_sys_uid(&self) -> u32 {
        self.m.max_sys_uid()
    }
    fn job_users(&self, host: &str) -> Option<Result<Vec<String>, String>> {
        self.jobs.get_or_init(|| self.m.job_users(host)).clone()
    }
}

/// Runs the checks of `conf` on `m`: one check per verdict. A failure is `fail`, or `warn`
/// where the file says `MARK_OFFLINE=0` (observe only); a line NHC would reject at run time
/// (a size that is no size) fails, naming the line.
pub fn evaluate(conf: &Conf, m: &dyn Machine) -> Vec<Check> {
    let once = Once::new(m);
    let m: &dyn Machine = &once;
    let vars = checks::hw_vars(m);
    let mut settings = conf.settings.clone();
    let host = host_name();
    let short = host.split('.').next().unwrap_or(&host).to_string();
    settings.entry("HOSTNAME".into()).or_insert(host);
    settings.entry("HOSTNAME_S".into()).or_insert(short);
    let failed = if conf.observe_only {
        Status::Warn
    } else {
        Status::Fail
    };
    let mut out = Vec::new();
    for line in &conf.lines {
        let name = CheckId::new("node", &line.check);
        let args: Result<Vec<String>, String> =
            line.args.iter().map(|a| checks::expand(a, &vars)).collect();
        match args.and_then(|a| checks::run_with(&line.check, &a, m, &settings)) {
            Err(message) => out.push(Check {
                name,
                status: failed,
                value: None,
                limit: None,
                message: format!("{} line {}: {message}", conf.path.display(), line.number),
            }),
            Ok(verdicts) => out.extend(verdicts.into_iter().map(|v| {
                let name = match &v.subject {
                    Some(s) => name.clone().on(s.clone()),
                    None => name.clone(),
                };
                let (status, message) = match (v.failure, v.note, v.skip) {
                    (Some(f), note, _) => (failed, note.map_or(f.clone(), |n| format!("{f}; {n}"))),
                    (None, _, Some(why)) => (Status::Skip, why),
                    (None, Some(n), None) => (Status::Pass, n),
                    (None, None, None) => (Status::Pass, format!("passed: {}", line.text)),
                };
                Check {
                    name,
                    status,
                    value: None,
                    limit: None,
                    message,
                }
            })),
        }
    }
    out
}

/// This host's name as NHC matches host masks: the kernel's host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
