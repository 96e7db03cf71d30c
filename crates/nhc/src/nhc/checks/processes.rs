//! NHC's checks of who runs what: `check_ps_unauth_users` (a process of a user with no job on
//! the node) and `check_ps_userproc_lineage` (a user's process not started by the resource
//! manager's daemon). Users with jobs come from Slurm (`squeue -w <node>`); system accounts
//! (uid up to `MAX_SYS_UID`) and `NHC_AUTH_USERS` (`root nobody`) are always allowed.
//! NHC's `kill` action is said, never done: health_check does not act on the node.

use super::getopts;
use crate::nhc::bytes::{show, words};
use crate::nhc::matching::{mcheck_printed, same_printed};
use crate::nhc::size::number;
use crate::nhc::state::{Machine, Process};
use crate::nhc::verdict::{LineError, Settings, Verdict};
use std::collections::BTreeMap;

/// What a line asks: processes to leave alone, and what to do about the others.
struct Wanted {
    ignore_cmd: Vec<Vec<u8>>,
    ignore_uid: Vec<Vec<u8>>,
    ignore_user: Vec<Vec<u8>>,
    ignore_pid: Vec<Vec<u8>>,
    actions: Vec<Vec<u8>>,
}

impl Wanted {
    fn parse(check: &str, args: &[Vec<u8>]) -> Result<Wanted, LineError> {
        let mut w = Wanted {
            ignore_cmd: Vec::new(),
            ignore_uid: Vec::new(),
            ignore_user: Vec::new(),
            ignore_pid: Vec::new(),
            actions: Vec::new(),
        };
        let (given, at) = getopts(check, args, "c:u:n:p:")?;
        for (opt, value) in given {
            let list = match opt {
                b'c' => &mut w.ignore_cmd,
                b'u' => &mut w.ignore_uid,
                b'n' => &mut w.ignore_user,
                _ => &mut w.ignore_pid,
            };
            list.extend(words(value).map(<[u8]>::to_vec));
        }
        // NHC splits its actions on blanks and ignores words it does not know.
        w.actions = args[at..]
            .iter()
            .flat_map(|a| words(a).map(<[u8]>::to_vec).collect::<Vec<_>>())
            .collect();
        if w.actions.is_empty() {
            w.actions.push(b"die".to_vec());
        }
        Ok(w)
    }

    /// Whether the line says to leave `p` alone (NHC compares words of its lists).
    fn ignores(&self, p: &Process) -> bool {
        let has = |list: &[Vec<u8>], v: &[u8]| list.iter().any(|x| same_printed(v, x));
        has(&self.ignore_cmd, command(p))
            || has(&self.ignore_uid, p.uid.to_string().as_bytes())
            || has(&self.ignore_user, &p.user)
            || has(&self.ignore_pid, p.pid.to_string().as_bytes())
    }

    /// The verdict for the processes found, acting as NHC acts on each: its actions in order
    /// up to an `ignore`; `die` fails on the first process found, the others (log, syslog,
    /// kill) pass, saying what was found and what NHC would have done.
    fn verdict(&self, found: &[String]) -> Verdict {
        let until = self.actions.iter().position(|a| a == b"ignore");
        let acts = &self.actions[..until.unwrap_or(self.actions.len())];
        let known = |a: &Vec<u8>| matches!(a.as_slice(), b"log" | b"syslog" | b"die" | b"kill");
        let Some(first) = found.first().filter(|_| acts.iter().any(known)) else {
            return verdict(None, None, None);
        };
        let killed = |upto: usize| acts[..upto].iter().any(|a| a == b"kill");
        if let Some(die) = acts.iter().position(|a| a == b"die") {
            let also = if killed(die) {
                "; NHC would kill it (health_check does not act on the node)"
            } else {
                ""
            };
            return verdict(Some(format!("{first}{also}")), None, None);
        }
        let mut said = found[..found.len().min(5)].join("; ");
        if found.len() > 5 {
            said.push_str(&format!("; and {} more", found.len() - 5));
        }
        if killed(acts.len()) {
            said.push_str(" (NHC would kill them; health_check does not act on the node)");
        }
        verdict(None, Some(said), None)
    }
}

/// A verdict about the machine.
fn verdict(failure: Option<String>, note: Option<String>, skip: Option<String>) -> Verdict {
    Verdict::of_machine(failure, note, skip)
}

/// A process's command as NHC names it: its first word.
fn command(p: &Process) -> &[u8] {
    p.args.split(|b| *b == b' ').next().unwrap_or(b"")
}

/// The highest system uid: the file's `MAX_SYS_UID` (bash arithmetic, as NHC compares it),
/// else the machine's.
fn max_sys_uid(settings: &Settings, m: &dyn Machine) -> i64 {
    match settings.get("MAX_SYS_UID").filter(|v| !v.is_empty()) {
        Some(v) => number(v, settings).unwrap_or(0),
        None => i64::from(m.max_sys_uid()),
    }
}

/// The users always allowed: the file's `NHC_AUTH_USERS`, else NHC's `root nobody`.
fn auth_users(settings: &Settings) -> Vec<Vec<u8>> {
    words(settings.get_or("NHC_AUTH_USERS", b"root nobody"))
        .map(<[u8]>::to_vec)
        .collect()
}

/// The resource manager NHC would ask: the file's `NHC_RM`, else Slurm where its commands are
/// installed (NHC looks for the resource manager itself), else none.
fn resource_manager(settings: &Settings) -> Vec<u8> {
    match settings.get("NHC_RM") {
        Some(rm) => rm.to_vec(),
        None if crate::nhc::state::find_command(b"scontrol", crate::nhc::state::COMMAND_PATH)
            .is_some() =>
        {
            b"slurm".to_vec()
        }
        None => Vec::new(),
    }
}

/// `check_ps_unauth_users [-c cmd] [-u uid] [-n user] [-p pid] [ACTION...]`: every process
/// of a non-system user who has no job here (and is not in `NHC_AUTH_USERS`). Where Slurm
/// did not answer, the check is skipped, not failed: a node is never judged on a controller's
/// silence.
pub fn unauth_users(
    args: &[Vec<u8>],
    m: &dyn Machine,
    settings: &Settings,
) -> Result<Verdict, LineError> {
    let check = "check_ps_unauth_users";
    let wanted = Wanted::parse(check, args)?;
    let max_sys = max_sys_uid(settings, m);
    let mut allowed = auth_users(settings);
    let host = settings.get_or("HOSTNAME_S", b"");
    let rm = resource_manager(settings);
    let jobs = match rm.as_slice() {
        b"" | b"none" => None,
        rm => m.job_users(host, rm),
    };
    match jobs {
        Some(Ok(users)) => allowed.extend(users),
        Some(Err(why)) => {
            return Ok(verdict(
                None,
                None,
                Some(format!(
                    "{check}:  cannot tell who has jobs on {}: {why}",
                    show(host)
                )),
            ));
        }
        None => {}
    }
    let found: Vec<String> = m
        .processes()
        .iter()
        .filter(|p| !wanted.ignores(p))
        .filter(|p| i64::from(p.uid) > max_sys && !allowed.iter().any(|a| same_printed(&p.user, a)))
        .map(|p| {
            format!(
                "{check}:  {}'s \"{}\" process is unauthorized. (PID {})",
                show(&p.user),
                show(command(p)),
                p.pid
            )
        })
        .collect();
    Ok(wanted.verdict(&found))
}

/// `check_ps_userproc_lineage [-c cmd] [-u uid] [-n user] [-p pid] [ACTION...]`: every
/// process of a non-system user that neither is nor descends from the resource manager's
/// daemon (`RM_DAEMON_MATCH`, `/\bslurmstepd\b/` for Slurm). NHC needs a resource manager
/// for it: without one (`NHC_RM=none`, no Slurm installed) it fails, and so does this.
pub fn userproc_lineage(
    args: &[Vec<u8>],
    m: &dyn Machine,
    settings: &Settings,
) -> Result<Verdict, LineError> {
    let check = "check_ps_userproc_lineage";
    let wanted = Wanted::parse(check, args)?;
    let rm = resource_manager(settings);
    let default = match rm.as_slice() {
        b"" | b"none" => {
            return Ok(verdict(
                Some(format!(
                    "{check}:  This check requires a supported resource manager (e.g., Slurm, \
                     TORQUE, SGE, LSF)"
                )),
                None,
                None,
            ));
        }
        b"pbs" => &br"/\bpbs_mom\b/"[..],
        b"slurm" => br"/\bslurmstepd\b/",
        b"sge" => br"/\bsge_(execd|shepherd)\b/",
        b"lsf" => br"/\bres\b/",
        _ => b"",
    };
    let daemon = settings
        .get("RM_DAEMON_MATCH")
        .filter(|d| !d.is_empty())
        .unwrap_or(default)
        .to_vec();
    let max_sys = max_sys_uid(settings, m);
    let allowed = auth_users(settings);
    let procs = m.processes();
    let by_pid: BTreeMap<u32, &Process> = procs.iter().map(|p| (p.pid, p)).collect();
    let descends = |p: &Process| -> bool {
        if daemon.is_empty() {
            return false;
        }
        let mut at = p.ppid;
        // A cycle in a racing process table must not loop.
        for _ in 0..by_pid.len() {
            let Some(parent) = by_pid.get(&at) else {
                return false;
            };
            if mcheck_printed(&daemon, &parent.args) {
                return true;
            }
            if at == 1 {
                return false;
            }
            at = parent.ppid;
        }
        false
    };
    let mut found = Vec::new();
    for p in &procs {
        if wanted.ignores(p)
            || i64::from(p.uid) <= max_sys
            || allowed.iter().any(|a| same_printed(&p.user, a))
            || mcheck_printed(&daemon, command(p))
            || descends(p)
        {
            continue;
        }
        found.push(format!(
            "{check}:  {}'s \"{}\" process is rogue. (PID {})",
            show(&p.user),
            show(command(p)),
            p.pid
        ));
    }
    Ok(wanted.verdict(&found))
}
