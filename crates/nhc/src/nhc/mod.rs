//! NHC's node checks (LBNL Node Health Check 1.4.3), natively: an operator's nhc.conf read as
//! NHC reads it (`conf`, its words as bash reads them: `bash`), then run line by line as NHC's
//! `eval` runs it: settings change the variables for the lines after them, `VAR=x check` for
//! that check only, `$HW_*` hold the machine's values once a hardware check has run, and each
//! check (`checks`, on the machine read once: `state`) gives NHC's verdict and message as checks
//! of the document named `node.<check>:<subject>`. They roll up with every other check: Slurm
//! drains on them, NPD and Prometheus report them. docs/nhc.md has the supported checks and what
//! differs.

pub mod bash;
pub mod bytes;
pub mod checks;
pub mod conf;
pub mod extglob;
#[cfg(test)]
mod fuzz_tests;
pub mod matching;
pub mod posix;
pub mod size;
pub mod state;
#[cfg(test)]
mod suite_tests;
#[cfg(test)]
mod tests;
pub mod verdict;

pub use conf::{Conf, ConfError};

use crate::wire::check::{Check, CheckId, Status};
use bash::words::Word;
use bash::{Vars, expand};
use bytes::show;
use conf::Kind;
use state::{DfListing, IbPort, Machine, Mount, Process, Space};
use std::cell::OnceCell;
use std::collections::BTreeMap;
use verdict::{LineError, Settings};

/// The machine read once per run, as NHC caches its process list: a file of ten process or
/// mount checks scans /proc once, not ten times.
pub struct Once<'a> {
    m: &'a dyn Machine,
    mounts: OnceCell<Vec<Mount>>,
    meminfo: OnceCell<BTreeMap<String, u64>>,
    cpuinfo: OnceCell<String>,
    processes: OnceCell<Vec<Process>>,
    dmi: OnceCell<Result<Vec<u8>, String>>,
    jobs: OnceCell<Option<Result<Vec<Vec<u8>>, String>>>,
    /// df's listing of space, then of inodes, as first asked for.
    df_rows: [OnceCell<DfListing>; 2],
}

impl<'a> Once<'a> {
    /// `m`, each of its tables read at most once.
    pub fn new(m: &'a dyn Machine) -> Once<'a> {
        Once {
            m,
            mounts: OnceCell::new(),
            meminfo: OnceCell::new(),
            cpuinfo: OnceCell::new(),
            processes: OnceCell::new(),
            dmi: OnceCell::new(),
            jobs: OnceCell::new(),
            df_rows: [OnceCell::new(), OnceCell::new()],
        }
    }
}

impl Machine for Once<'_> {
    fn mounts(&self) -> Vec<Mount> {
        self.mounts.get_or_init(|| self.m.mounts()).clone()
    }
    fn space(&self, point: &[u8]) -> Option<Space> {
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
    fn net_devices(&self) -> Vec<Vec<u8>> {
        self.m.net_devices()
    }
    fn infiniband(&self) -> (u32, Vec<IbPort>) {
        self.m.infiniband()
    }
    fn dmidecode(&self) -> Result<Vec<u8>, String> {
        self.dmi.get_or_init(|| self.m.dmidecode()).clone()
    }
    fn max_sys_uid(&self) -> u32 {
        self.m.max_sys_uid()
    }
    fn job_users(&self, host: &[u8], rm: &[u8]) -> Option<Result<Vec<Vec<u8>>, String>> {
        self.jobs.get_or_init(|| self.m.job_users(host, rm)).clone()
    }
    fn user_name(&self, uid: u32) -> Option<Vec<u8>> {
        self.m.user_name(uid)
    }
    fn group_name(&self, gid: u32) -> Option<Vec<u8>> {
        self.m.group_name(gid)
    }
    fn environment(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.m.environment()
    }
    fn df(&self, args: &[Vec<u8>]) -> Result<Vec<u8>, String> {
        self.m.df(args)
    }
    fn df_rows(&self, inodes: bool, flags: &[u8]) -> DfListing {
        self.df_rows[usize::from(inodes)]
            .get_or_init(|| self.m.df_rows(inodes, flags))
            .clone()
    }
}

/// What one line of the file did.
#[derive(Debug, Clone, PartialEq)]
pub struct LineOutcome {
    /// Its number in the file.
    pub number: usize,
    /// The check as NHC evaluates it.
    pub text: Vec<u8>,
    /// Its verdicts.
    pub checks: Vec<Check>,
    /// Where NHC's bash would leave the whole run at this line: why (nothing after it ran).
    pub stopped: Option<String>,
    /// What was wrong with the line's match strings (they matched nothing): for the operator.
    pub notes: Vec<String>,
    /// The variables the line reads as they are (`$NAME`, `${NAME}`) that were not set when it
    /// ran: each expands to nothing, in NHC as here, which a site rarely means.
    pub unset: Vec<Vec<u8>>,
}

/// The variables `c` reads as they are (`$NAME`, `${NAME}`, also inside `$((...))`) that `vars`
/// does not hold; names of bash's own parameters (`$1`, `$?`) left out.
fn unset_reads(c: &bash::words::Command, vars: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<Vec<u8>> {
    use bash::words::{ParamOp, Piece};
    fn walk(pieces: &[Piece], out: &mut Vec<Vec<u8>>) {
        for p in pieces {
            match p {
                Piece::Param {
                    name,
                    op: ParamOp::Value,
                    ..
                } => out.push(name.clone()),
                Piece::Arith { expr, .. } => walk(expr, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for a in &c.assignments {
        walk(&a.value, &mut out);
    }
    for w in &c.args {
        walk(w, &mut out);
    }
    let name = |n: &[u8]| {
        n.first()
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && n.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|n| name(n) && !vars.contains_key(n) && seen.insert(n.clone()));
    out
}

/// Variables NHC holds before the first line runs (`nhcmain_init_env`, `nhcmain_finalize_env`
/// and its scripts' defaults, 1.4.3), over the environment it inherits.
fn initial_vars(conf: &Conf, m: &dyn Machine) -> BTreeMap<Vec<u8>, Vec<u8>> {
    // What NHC unsets so the environment cannot leak in.
    const UNSET: &[&str] = &[
        "CONFDIR",
        "CONFFILE",
        "INCDIR",
        "HELPERDIR",
        "ONLINE_NODE",
        "OFFLINE_NODE",
        "LOGFILE",
        "DEBUG",
        "SILENT",
        "VERBOSE",
        "TIMEOUT",
        "RESULTFILE",
        "MAX_SYS_UID",
        "NHC_RM",
        "NHC_CHECK_ALL",
        "NHC_CHECK_FORKED",
        "EVAL_LINE",
    ];
    let mut vars: BTreeMap<Vec<u8>, Vec<u8>> = m
        .environment()
        .into_iter()
        .filter(|(k, _)| !UNSET.iter().any(|u| u.as_bytes() == k.as_slice()))
        .collect();
    let host = conf.host.clone();
    let short = host.split(|b| *b == b'.').next().unwrap_or(&host).to_vec();
    let set: &[(&str, &[u8])] = &[
        ("PATH", state::COMMAND_PATH),
        ("HOSTNAME", &host),
        ("HOSTNAME_S", &short),
        ("NAME", b"nhc"),
    ];
    for (k, v) in set {
        vars.insert(k.as_bytes().to_vec(), v.to_vec());
    }
    // NHC evaluates its command line's settings after it set its own and before it sources its
    // settings file and fills in its defaults.
    for (k, v) in &conf.command_line {
        vars.insert(k.clone(), v.clone());
    }
    vars
}

/// NHC's defaults, filled in after its settings file (`nhcmain_finalize_env`, `VAR=${VAR:-x}`:
/// a variable set and not empty keeps its value) and its scripts' own (the hardware variables
/// are set to 0 as the scripts load, whatever was set before).
fn finalize_vars(conf: &Conf, vars: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let conf_file = conf.path.as_os_str().as_encoded_bytes().to_vec();
    let debug = vars
        .get(b"DEBUG".as_slice())
        .filter(|v| !v.is_empty())
        .cloned()
        .unwrap_or_else(|| b"0".to_vec());
    let defaults: &[(&str, &[u8])] = &[
        ("CONFDIR", b"/etc/nhc"),
        ("CONFFILE", &conf_file),
        ("INCDIR", b"/etc/nhc/scripts"),
        ("DEBUG", b"0"),
        ("TS", &debug),
        ("SILENT", b"0"),
        ("VERBOSE", b"0"),
        ("MARK_OFFLINE", b"1"),
        ("DETACHED_MODE", b"0"),
        ("TIMEOUT", b"30"),
        ("NHC_CHECK_ALL", b"0"),
        ("NHC_CHECK_FORKED", b"0"),
        ("MCELOG", b"mcelog"),
        ("MCELOG_ARGS", b"--client"),
        ("MCELOG_MAX_CORRECTED_RATE", b"9"),
        ("MCELOG_MAX_UNCORRECTED_RATE", b"0"),
    ];
    for (k, v) in defaults {
        let slot = vars.entry(k.as_bytes().to_vec()).or_default();
        if slot.is_empty() {
            *slot = v.to_vec();
        }
    }
    for name in checks::hw_vars(&NoMachine).keys() {
        vars.insert(name.as_bytes().to_vec(), b"0".to_vec());
    }
}

/// A machine with nothing, for the names of NHC's hardware variables.
struct NoMachine;
impl Machine for NoMachine {}

/// The interpreter's state while the file runs.
struct Run<'a> {
    m: &'a dyn Machine,
    vars: BTreeMap<Vec<u8>, Vec<u8>>,
    gathered: bool,
    /// NHC marks the node offline only at its first failure, and only when MARK_OFFLINE is 1
    /// then: set at the first failure.
    first_failure_marks: Option<bool>,
}

/// Runs the lines of `conf` on `m`, line by line, as NHC runs them.
pub fn run(conf: &Conf, m: &dyn Machine) -> Vec<LineOutcome> {
    let once = Once::new(m);
    let mut r = Run {
        m: &once,
        vars: initial_vars(conf, &once),
        gathered: false,
        first_failure_marks: None,
    };
    // `. /etc/default/nhc`: its settings over the command line's, before the defaults.
    for line in &conf.sysconfig {
        r.line(line);
    }
    finalize_vars(conf, &mut r.vars);
    let mut out = Vec::new();
    for line in &conf.lines {
        let outcome = r.line(line);
        let stop = outcome.stopped.is_some();
        out.push(outcome);
        if stop {
            break;
        }
    }
    out
}

/// Runs the checks of `conf` on `m`: one check per verdict, and one `node.nhc_conf` where
/// NHC's bash would stop the run. A failure is `fail`, or `warn` where MARK_OFFLINE (a number,
/// as NHC compares it) is not 1 at NHC's first failure or at the failing line.
pub fn evaluate(conf: &Conf, m: &dyn Machine) -> Vec<Check> {
    run(conf, m)
        .into_iter()
        .flat_map(|o| {
            let stopped = o.stopped.map(|why| Check {
                name: CheckId::new("node", "nhc_conf"),
                status: Status::Warn,
                value: None,
                limit: None,
                message: format!(
                    "{} line {}: NHC's bash would stop its whole run here, marking nothing: \
                     {why}; the lines after it were not run",
                    conf.path.display(),
                    o.number
                ),
            });
            // A match string that matched nothing is said where the operator reads the verdict.
            let said = o.notes.join("; ");
            o.checks
                .into_iter()
                .map(move |mut c| {
                    if !said.is_empty() {
                        c.message = format!("{} (health_check: {said})", c.message);
                    }
                    c
                })
                .chain(stopped)
        })
        .collect()
}

impl Run<'_> {
    fn line(&mut self, line: &conf::Line) -> LineOutcome {
        let mut out = LineOutcome {
            number: line.number,
            text: line.text.clone(),
            checks: Vec::new(),
            stopped: None,
            notes: Vec::new(),
            unset: unset_reads(&line.command, &self.vars),
        };
        let name = match &line.kind {
            Kind::Check(c) => CheckId::new("node", c),
            _ => CheckId::new("node", "nhc_conf").on(format!("line {}", line.number)),
        };
        let protected = self.programs();
        // NHC holds the line in $CHECK while it runs (its messages and the line may use it).
        self.vars.insert(b"CHECK".to_vec(), line.raw.clone());
        let result = self.execute(line, &protected);
        out.notes = matching::take_problems();
        match result {
            Ok(verdicts) => {
                for v in verdicts {
                    out.checks.push(self.check(&name, line, v));
                }
            }
            Err(LineError::Stops(why)) => out.stopped = Some(why),
            Err(LineError::Abandons(why)) => {
                let failed = verdict::Verdict::fail(
                    None,
                    format!("Check {} returned 1 ({why})", show(&line.raw)),
                );
                out.checks.push(self.check(&name, line, failed));
            }
            Err(LineError::Fails(why)) => {
                let failed = verdict::Verdict::fail(None, why);
                out.checks.push(self.check(&name, line, failed));
            }
        }
        if !line.root_only && self.programs() != protected {
            // Only a computed assignment (`${MCELOG:=...}`, `unset PATH`) gets here: the static
            // ones are refused when the file is read. A check on the line never ran with it
            // (`execute` refuses first); here the settings are put back for the lines after.
            for (k, v) in protected {
                match v {
                    Some(v) => self.vars.insert(k, v),
                    None => self.vars.remove(&k),
                };
            }
            out.checks.push(
                self.check(
                    &name,
                    line,
                    verdict::Verdict::fail(
                        None,
                        "this line sets a variable naming a program to run (or what it is \
                         given), from a file others can change: refused"
                            .into(),
                    ),
                ),
            );
        }
        out
    }

    /// The variables naming programs, as they stand.
    fn programs(&self) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        conf::PROGRAM_SETTINGS
            .iter()
            .map(|k| (k.as_bytes().to_vec(), self.vars.get(k.as_bytes()).cloned()))
            .collect()
    }

    /// The document's check for one verdict of the line.
    fn check(&mut self, name: &CheckId, line: &conf::Line, v: verdict::Verdict) -> Check {
        let name = match &v.subject {
            Some(s) => name.clone().on(show(s)),
            None => name.clone(),
        };
        let (status, message) = match (v.failure, v.note, v.skip) {
            (Some(f), note, _) => {
                let marks_now = size::number(
                    self.vars
                        .get(&b"MARK_OFFLINE"[..])
                        .map_or(&b""[..], Vec::as_slice),
                    &Settings::default(),
                ) == Ok(1);
                let first = *self.first_failure_marks.get_or_insert(marks_now);
                let status = if first && marks_now {
                    Status::Fail
                } else {
                    Status::Warn
                };
                (status, note.map_or(f.clone(), |n| format!("{f}; {n}")))
            }
            (None, _, Some(why)) => (Status::Skip, why),
            (None, Some(n), None) => (Status::Pass, n),
            (None, None, None) => (Status::Pass, format!("passed: {}", show(&line.text))),
        };
        Check {
            name,
            status,
            value: None,
            limit: None,
            message,
        }
    }

    /// Runs the line's command: its verdicts, or why it has none.
    fn execute(
        &mut self,
        line: &conf::Line,
        protected: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> Result<Vec<verdict::Verdict>, LineError> {
        let c = &line.command;
        // NHC fails a line whose expansion fails: `eval` returns 1, and NHC dies with
        // "Check ... returned 1".
        let failed = |e: expand::ExpandError| match e {
            expand::ExpandError::Fails(why) => {
                LineError::Fails(format!("Check {} returned 1 ({why})", show(&line.raw)))
            }
            expand::ExpandError::Stops(why) => LineError::Stops(why),
        };
        match &line.kind {
            Kind::Nothing => Ok(Vec::new()),
            Kind::Set => {
                for a in conf::assignments(c) {
                    self.assign(&a.name, a.append, &a.value).map_err(failed)?;
                }
                Ok(Vec::new())
            }
            Kind::Unset => {
                let names = expand::args(&c.args, &mut self.vars).map_err(failed)?;
                for n in names.iter().filter(|n| n.as_slice() != b"-v") {
                    self.vars.remove(n);
                }
                Ok(Vec::new())
            }
            Kind::Check(check) => {
                // Bash expands the words first, then the assignments before the name, which
                // hold for this check only.
                let args = expand::args(&c.args, &mut self.vars).map_err(failed)?;
                let saved: Vec<(Vec<u8>, Option<Vec<u8>>)> = c
                    .assignments
                    .iter()
                    .map(|a| (a.name.clone(), self.vars.get(&a.name).cloned()))
                    .collect();
                for a in &c.assignments {
                    if let Err(e) = self.assign(&a.name, a.append, &a.value) {
                        self.restore(saved);
                        return Err(failed(e));
                    }
                }
                if checks::GATHER_HARDWARE.contains(&check.as_str()) && !self.gathered {
                    self.gathered = true;
                    for (k, v) in checks::hw_vars(self.m) {
                        self.vars
                            .insert(k.as_bytes().to_vec(), v.to_string().into_bytes());
                    }
                }
                // From a file others can change, a program (or its arguments) set while this
                // line expanded (`${NVIDIA_SMI_HEALTHMON:=/home/u/x}`) never runs: the check
                // does not run at all.
                if !line.root_only && self.programs() != protected {
                    self.restore(saved);
                    return Ok(Vec::new());
                }
                let settings = Settings::from_pairs(self.vars.clone());
                let result = checks::run_with(check, &args, self.m, &settings);
                self.restore(saved);
                result
            }
        }
    }

    fn assign(
        &mut self,
        name: &[u8],
        append: bool,
        value: &Word,
    ) -> Result<(), expand::ExpandError> {
        let mut v = expand::value(value, &mut self.vars)?;
        if append {
            let mut old = self.vars.get(name).cloned().unwrap_or_default();
            old.append(&mut v);
            v = old;
        }
        self.vars.set(name, v);
        Ok(())
    }

    fn restore(&mut self, saved: Vec<(Vec<u8>, Option<Vec<u8>>)>) {
        for (k, v) in saved.into_iter().rev() {
            match v {
                Some(v) => self.vars.insert(k, v),
                None => self.vars.remove(&k),
            };
        }
    }
}

/// This host's name as NHC matches host masks: the kernel's host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
