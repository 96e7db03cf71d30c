//! NHC's checks of who runs what: `check_ps_unauth_users` (a process of a user with no job on
//! the node) and `check_ps_userproc_lineage` (a user's process not started by the resource
//! manager's daemon). Users with jobs come from Slurm (`squeue -w <node>`); system accounts
//! (uid up to `MAX_SYS_UID`) and `NHC_AUTH_USERS` (`root nobody`) are always allowed.
//! NHC's `kill` action is said, never done: health_check does not act on the node.

use super::matching::host_matches;
use super::state::{Machine, Process};
use super::verdict::{Settings, Verdict};
use std::collections::BTreeMap;

/// What a line asks: processes to leave alone, and what to do about the others.
struct Wanted {
    ignore_cmd: Vec<String>,
    ignore_uid: Vec<String>,
    ignore_user: Vec<String>,
    ignore_pid: Vec<String>,
    actions: Vec<String>,
}

impl Wanted {
    fn parse(check: &str, args: &[String]) -> Result<Wanted, String> {
        let mut w = Wanted {
            ignore_cmd: Vec::new(),
            ignore_uid: Vec::new(),
            ignore_user: Vec::new(),
            ignore_pid: Vec::new(),
            actions: Vec::new(),
        };
        let mut i = 0;
        while let Some(a) = args.get(i).filter(|a| a.starts_with('-') && a.len() > 1) {
            let value = args
                .get(i + 1)
                .ok_or_else(|| format!("{check}:  Option {a} requires an argument."))?;
            let list = match a.as_str() {
                "-c" => &mut w.ignore_cmd,
                "-u" => &mut w.ignore_uid,
                "-n" => &mut w.ignore_user,
                "-p" => &mut w.ignore_pid,
                _ => return Err(format!("{check}:  Invalid option:  {a}")),
            };
            list.extend(value.split_whitespace().map(str::to_string));
            i += 2;
        }
        for a in &args[i..] {
            if !["log", "syslog", "die", "kill", "ignore"].contains(&a.as_str()) {
                return Err(format!(
                    "{check}:  Syntax error:  '{a}' is no action (log, syslog, die, kill, ignore)"
                ));
            }
            w.actions.push(a.clone());
        }
        if w.actions.is_empty() {
            w.actions.push("die".into());
        }
        Ok(w)
    }

    /// Whether the line says to leave `p` alone (NHC compares words of its lists).
    fn ignores(&self, p: &Process) -> bool {
        let has = |list: &[String], v: &str| list.iter().any(|x| x == v);
        has(&self.ignore_cmd, command(p))
            || has(&self.ignore_uid, &p.uid.to_string())
            || has(&self.ignore_user, &p.user)
            || has(&self.ignore_pid, &p.pid.to_string())
    }

    /// The verdict for the processes found, acting as NHC acts on each: its actions in order
    /// up to an `ignore`; `die` fails on the first process found, the others (log, syslog,
    /// kill) pass, saying what was found and what NHC would have done.
    fn verdict(&self, found: &[String]) -> Verdict {
        let until = self.actions.iter().position(|a| a == "ignore");
        let acts = &self.actions[..until.unwrap_or(self.actions.len())];
        let Some(first) = found.first().filter(|_| !acts.is_empty()) else {
            return verdict(None, None, None);
        };
        let killed = |upto: usize| acts[..upto].iter().any(|a| a == "kill");
        if let Some(die) = acts.iter().position(|a| a == "die") {
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
fn command(p: &Process) -> &str {
    p.args.split(' ').next().unwrap_or("")
}

/// The highest system uid: the file's `MAX_SYS_UID`, else the machine's.
fn max_sys_uid(settings: &Settings, m: &dyn Machine) -> Result<u32, String> {
    match settings.get("MAX_SYS_UID") {
        Some(v) => v.parse().map_err(|_| format!("MAX_SYS_UID={v} is no uid")),
        None => Ok(m.max_sys_uid()),
    }
}

/// The users always allowed: the file's `NHC_AUTH_USERS`, else NHC's `root nobody`.
fn auth_users(settings: &Settings) -> Vec<String> {
    settings
        .get("NHC_AUTH_USERS")
        .map_or("root nobody", String::as_str)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Which resource manager NHC would ask: the file's `NHC_RM`, else Slurm where its commands
/// are installed.
fn asks_slurm(settings: &Settings) -> Option<bool> {
    settings.get("NHC_RM").map(|rm| rm == "slurm")
}

/// `check_ps_unauth_users [-c cmd] [-u uid] [-n user] [-p pid] [ACTION...]`: every process
/// of a non-system user who has no job here (and is not in `NHC_AUTH_USERS`). Where Slurm
/// did not answer, the check is skipped, not failed: a node is never judged on a controller's
/// silence.
pub fn unauth_users(
    args: &[String],
    m: &dyn Machine,
    settings: &Settings,
) -> Result<Verdict, String> {
    let check = "check_ps_unauth_users";
    let wanted = Wanted::parse(check, args)?;
    let max_sys = max_sys_uid(settings, m)?;
    let mut allowed = auth_users(settings);
    let host = settings.get("HOSTNAME_S").map_or("", String::as_str);
    let jobs = match asks_slurm(settings) {
        Some(false) => None,
        _ => m.job_users(host),
    };
    match jobs {
        Some(Ok(users)) => allowed.extend(users),
        Some(Err(why)) => {
            return Ok(verdict(
                None,
                None,
                Some(format!(
                    "{check}:  cannot tell who has jobs on {host}: {why}"
                )),
            ));
        }
        None => {}
    }
    let found: Vec<String> = m
        .processes()
        .iter()
        .filter(|p| !wanted.ignores(p))
        .filter(|p| p.uid > max_sys && !allowed.contains(&p.user))
        .map(|p| {
            format!(
                "{check}:  {}'s \"{}\" process is unauthorized. (PID {})",
                p.user,
                command(p),
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
    args: &[String],
    m: &dyn Machine,
    settings: &Settings,
) -> Result<Verdict, String> {
    let check = "check_ps_userproc_lineage";
    let wanted = Wanted::parse(check, args)?;
    let slurm =
        asks_slurm(settings).unwrap_or_else(|| super::state::find_command("scontrol").is_some());
    let daemon = match settings.get("RM_DAEMON_MATCH") {
        Some(d) => d.clone(),
        None if slurm => r"/\bslurmstepd\b/".to_string(),
        None => {
            return Ok(verdict(
                Some(format!(
                    "{check}:  This check requires a supported resource manager (e.g., Slurm, \
                     TORQUE, SGE, LSF)"
                )),
                None,
                None,
            ));
        }
    };
    let max_sys = max_sys_uid(settings, m)?;
    let allowed = auth_users(settings);
    let procs = m.processes();
    let by_pid: BTreeMap<u32, &Process> = procs.iter().map(|p| (p.pid, p)).collect();
    let descends = |p: &Process| -> Result<bool, String> {
        let mut at = p.ppid;
        // A cycle in a racing process table must not loop.
        for _ in 0..by_pid.len() {
            if at <= 1 {
                return Ok(false);
            }
            let Some(parent) = by_pid.get(&at) else {
                return Ok(false);
            };
            if host_matches(&daemon, &parent.args)? {
                return Ok(true);
            }
            at = parent.ppid;
        }
        Ok(false)
    };
    let mut found = Vec::new();
    for p in &procs {
        if wanted.ignores(p)
            || p.uid <= max_sys
            || allowed.contains(&p.user)
            || host_matches(&daemon, command(p))?
            || descends(p)?
        {
            continue;
        }
        found.push(format!(
            "{check}:  {}'s \"{}\" process is rogue. (PID {})",
            p.user,
            command(p),
            p.pid
        ));
    }
    Ok(wanted.verdict(&found))
}
