//! `health_check slurm`: Slurm's HealthCheckProgram (and Prolog). slurmd runs it as root, with
//! no arguments and `SLURMD_NODENAME` set, kills it after 60 s, and takes no action on its exit
//! code: the program drains its own node. So, as LBNL NHC does, and more carefully:
//!
//! - a failing run (a check or a section failed) drains the node with `scontrol update
//!   NodeName=N State=DRAIN Reason="health_check: <what>: <how>"`, once `--drain-after` runs in a
//!   row have failed (a shared hiccup must not drain a cluster), and never when more than
//!   `--max-drained-pct` of any of its partitions is already drained by health_check (one node
//!   may always be); the reason's first 20 characters are stable from run to run (`sinfo -R`
//!   shows 20) and the same reason is not sent again;
//! - a passing run lifts our drain after `--resume-after` runs in a row (`State=UNDRAIN`: the
//!   drain only, never a down state or a reboot Slurm or an administrator added), only when the
//!   current reason is ours (`health_check:`): an administrator's drain is never lifted, and a
//!   node held for someone else's reason is never drained over it; a Prolog's or a busy node's
//!   run does not reset a failing streak on what it did not run;
//! - an inconclusive run (measured under interference) does neither;
//! - every action is taken only on the state the decision was made on: the node is read again
//!   right before `scontrol update` (the check ran for seconds: an administrator may have drained
//!   it meanwhile) and once more after it, and the log says what Slurm then says. A state that
//!   cannot be read (a controller that does not answer, an answer that cannot be parsed, an empty
//!   partition) means no action: the cap fails closed;
//! - on a node running jobs (ALLOCATED or MIXED) the intrusive sections (memory bandwidth,
//!   network, storage) are left out, and the document says so; what the jobs' load can move is
//!   judged only where the interference stayed within its limits;
//! - every scontrol and sinfo call has a deadline (slurmd runs the program before it registers,
//!   when the controller may not answer), runs overlap-free under a lock, and each action is one
//!   line on stderr and in syslog.
//!
//! stdout gets one line (slurmd logs a failing program's output: not a whole document); the
//! document goes to `--output`. Exit 1 when the run failed, else 0; as a Prolog or Epilog
//! (`SLURM_SCRIPT_CONTEXT`), where slurmd drains the node itself on a non-zero exit, 1 only when
//! the node ends the run drained by health_check, so slurmd's own drain never bypasses the
//! damping and the cap.

pub mod cap;
mod decide;
mod node;

pub use decide::{
    Cause, Decision, OurDrain, Policy, REASON_MAX, Streaks, cause_of, decide, drains_at_once,
    for_failing_streak, for_our_drain, reason,
};
pub use node::{
    ControllerError, NodeInfo, PartNode, Partition, REASON_PREFIX, SINFO_FIELDS, check_node_name,
    parse_node, parse_partition,
};

use super::{Exit, driver};
use crate::command::{self, CommandError};
use crate::config::{Config, Section, SlurmConfig};
use crate::judge::health::{self, Health};
use crate::render::text::terminal_safe;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long slurmd lets its HealthCheckProgram run before it kills it (Slurm 26.05 makes it
/// `HealthCheckTimeout`; before, a fixed 60 s).
const SLURMD_KILLS_AT: Duration = Duration::from_secs(60);

/// What the drain itself needs after its turn under the cap: read the node again, update it,
/// clear the mark, read it back (a few seconds on a busy controller).
const ACTING_RESERVE: Duration = Duration::from_secs(5);

/// When this program started, as slurmd counts.
static BEGAN: OnceLock<Instant> = OnceLock::new();

/// How long a node that has run for `spent` may wait for its turn under the cap and still
/// drain before slurmd kills it: [`cap::CHOOSING_WAIT`] at most (a run stopped by slurmd
/// mid-action leaves its mark up for minutes, holding the partition back).
fn turn_wait(spent: Duration) -> Duration {
    cap::CHOOSING_WAIT.min(SLURMD_KILLS_AT.saturating_sub(spent + ACTING_RESERVE))
}

/// One line on stderr and, best effort, in syslog (user.notice); control characters from a
/// name or a reason are shown, not acted on.
fn log(line: &str) {
    let line = terminal_safe(line);
    eprintln!("health_check slurm: {line}");
    let msg = format!("<13>health_check[{}]: slurm: {line}", std::process::id());
    if let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() {
        let _ = sock.send_to(msg.as_bytes(), "/dev/log");
    }
}

/// Where slurmd runs us: its HealthCheckProgram, or a Prolog or Epilog, where a non-zero exit
/// makes slurmd drain the node itself ("Prolog error") and requeue the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// `HealthCheckProgram` (or run by hand): the exit code is only logged.
    HealthCheck,
    /// `Prolog`, `Epilog` (`SLURM_SCRIPT_CONTEXT=prolog_slurmd`, `epilog_slurmd`, ...).
    JobScript,
}

impl Context {
    /// From `SLURM_SCRIPT_CONTEXT`'s value.
    pub fn of(script_context: Option<&str>) -> Context {
        match script_context {
            Some(c) if c.starts_with("prolog") || c.starts_with("epilog") => Context::JobScript,
            _ => Context::HealthCheck,
        }
    }
}

/// The calls to Slurm for one node, each with its deadline.
struct Controller<'a> {
    cfg: &'a SlurmConfig,
    node: &'a str,
}

impl Controller<'_> {
    /// What a command printed (bytes read as text, an odd byte as U+FFFD), or why not.
    fn call(&self, program: &Path, args: &[&str]) -> Result<String, ControllerError> {
        match command::run(program, args, self.cfg.timeout) {
            Ok(out) if out.success() => Ok(out.stdout_text()),
            Ok(out) => Err(ControllerError::Refused {
                command: format!("{} {}", program.display(), args.join(" ")),
                code: out.code.unwrap_or(-1),
                stderr: out.stderr_text(),
            }),
            Err(e @ CommandError::Timeout { .. }) => Err(ControllerError::Timeout(e.to_string())),
            Err(e) => Err(ControllerError::NotRun(e.to_string())),
        }
    }

    /// The node as Slurm has it now.
    fn read(&self) -> Result<NodeInfo, ControllerError> {
        let text = self.call(&self.cfg.scontrol, &["show", "node", self.node])?;
        parse_node(&text, self.node)
    }

    /// `scontrol update NodeName=<node> <settings>`.
    fn update(&self, settings: &[&str]) -> Result<(), ControllerError> {
        let name = format!("NodeName={}", self.node);
        let mut args = vec!["update", name.as_str()];
        args.extend_from_slice(settings);
        self.call(&self.cfg.scontrol, &args).map(drop)
    }

    /// A partition's nodes as sinfo lists them now (one call).
    fn partition(&self, name: &str) -> Result<Partition, ControllerError> {
        let text = self.call(
            &self.cfg.sinfo,
            &["-h", "-N", "-p", name, "-O", SINFO_FIELDS],
        )?;
        parse_partition(&text, name, self.node)
    }
}

impl cap::Marks for Controller<'_> {
    fn partition(&self, name: &str) -> Result<Partition, ControllerError> {
        Controller::partition(self, name)
    }

    fn set_comment(&self, node: &str, comment: &str) -> Result<(), ControllerError> {
        let name = format!("NodeName={node}");
        let comment = format!("Comment={comment}");
        self.call(
            &self.cfg.scontrol,
            &["update", name.as_str(), comment.as_str()],
        )
        .map(drop)
    }

    fn now(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// What the run did to the node.
struct Acted {
    /// The line that says it (also stdout's).
    line: String,
    /// Whether the node ends the run drained by health_check.
    drained_by_us: bool,
}

/// Carries `decision` out on the node, read again right before and after: nothing happens to a
/// node whose drain or reason changed since `before` was read.
fn carry_out(ctl: &Controller, before: &NodeInfo, decision: Decision, no_act: bool) -> Acted {
    let node = ctl.node;
    let (settings, doing, reason): (Vec<String>, String, Option<String>) = match decision {
        Decision::Leave(line) => {
            return Acted {
                line: format!("{node}: {line}"),
                drained_by_us: before.drained_by_us(),
            };
        }
        Decision::Drain { reason, why } => {
            // A node health_check holds drained already takes no new place under the cap, and
            // one in no partition has none to take (nor any partition to read its comment from:
            // a mark would overwrite an administrator's).
            if !before.drained_by_us() && !no_act && !before.partitions.is_empty() {
                let (parts, pct) = (&before.partitions, ctl.cfg.max_drained_pct);
                let spent = BEGAN.get().map_or(Duration::ZERO, Instant::elapsed);
                if let Err(e) = cap::claim(ctl, node, parts, pct, turn_wait(spent)) {
                    return Acted {
                        line: format!("{node}: failing ({reason}); {e}"),
                        drained_by_us: before.drained_by_us(),
                    };
                }
            }
            (
                vec!["State=DRAIN".into(), format!("Reason={reason}")],
                format!("drain after {why}: {reason}"),
                Some(reason),
            )
        }
        // UNDRAIN lifts the drain and nothing else: RESUME would also bring a node Slurm holds
        // down (a job's processes that would not die, an unexpected reboot: Slurm keeps our
        // reason for them) back into service, and drop a reboot an administrator asked for.
        Decision::Resume { why } => (
            vec!["State=UNDRAIN".into()],
            format!("resume after {why}"),
            None,
        ),
    };
    // Whatever ends this run's action, its mark of intent (a drain's turn under the cap) is
    // cleared: a ticket left up holds the other nodes of the partition back for minutes.
    let release = || {
        if reason.is_some() && !no_act {
            if let Err(e) = cap::release(ctl, node, &before.partitions) {
                log(&format!(
                    "{node}: its mark of intent could not be cleared ({e})"
                ));
            }
        }
    };
    let unchanged = |line: String| Acted {
        line,
        drained_by_us: before.drained_by_us(),
    };
    let now = match ctl.read() {
        Ok(now) => now,
        Err(e) => {
            release();
            return unchanged(format!(
                "{node}: would {doing}, but its state cannot be read again ({e}): no action"
            ));
        }
    };
    if !before.holds_as(&now) {
        release();
        return unchanged(format!(
            "{node}: would {doing}, but it changed while the check ran (was {}, now {}): no \
             action",
            before.describe(),
            now.describe()
        ));
    }
    if no_act {
        return unchanged(format!("{node}: would {doing} (--no-act: nothing changed)"));
    }
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    // An update whose answer did not come may still have been served (slurmctld busy): what
    // Slurm says afterwards decides, not the answer.
    let failed = ctl.update(&settings).err();
    // The drain landed (or did not): this node's mark has done its work either way.
    release();
    match ctl.read() {
        Ok(after) => {
            let took = match &reason {
                Some(r) => after.drained() && after.reason.as_deref() == Some(r.as_str()),
                None => !after.drained(),
            };
            let asked = match (&failed, took) {
                (None, true) => String::new(),
                (None, false) => "asked to ".into(),
                (Some(e), true) => format!("asked to {doing} ({e}), and it did: "),
                (Some(e), false) => {
                    return unchanged(format!("{node}: could not {doing}: {e}"));
                }
            };
            Acted {
                line: format!(
                    "{node}: {asked}{doing}; Slurm now says {}",
                    after.describe()
                ),
                drained_by_us: after.drained_by_us(),
            }
        }
        Err(e) => match &failed {
            Some(f) => unchanged(format!("{node}: could not {doing}: {f}")),
            None => Acted {
                line: format!("{node}: asked to {doing}; its state cannot be read back ({e})"),
                drained_by_us: reason.is_some(),
            },
        },
    }
}

/// The streaks and our drain as the state file keeps them. A missing file is a first run; one
/// that cannot be read is said, and then read as no streaks (the runs start counting again).
fn load(path: &Path) -> Streaks {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Streaks::default(),
        Err(e) => {
            log(&format!(
                "warning: the state file '{}' cannot be read ({e}): no streaks",
                path.display()
            ));
            return Streaks::default();
        }
    };
    serde_json::from_str(&text).unwrap_or_else(|e| {
        log(&format!(
            "warning: the state file '{}' is corrupt ({e}): read as no streaks; it is written \
             anew after this run",
            path.display()
        ));
        Streaks::default()
    })
}

fn save(path: &Path, s: &Streaks) {
    let text = serde_json::to_string(s).unwrap_or_default();
    if let Err(e) = crate::render::write_private(path, &text) {
        log(&format!("cannot keep the run streaks: {e}"));
    }
}

/// The state file: `--state`, else `slurm-state.json` in `/var/lib/health_check` (root) or the
/// runtime directory, made private if missing. A file, or a directory on its way, that another
/// user could change is refused: its streaks and its lock would steer the node.
fn state_path(cfg: &SlurmConfig) -> Result<PathBuf, String> {
    let path = match &cfg.state {
        Some(p) => p.clone(),
        None => {
            let dir = if crate::os::euid() == 0 {
                PathBuf::from("/var/lib/health_check")
            } else {
                super::pidfile::runtime_dir()
            };
            super::pidfile::ensure_private_dir(&dir).map_err(|e| e.to_string())?;
            dir.join("slurm-state.json")
        }
    };
    // By its real path: a link on the way changed later cannot redirect it.
    crate::trust::check_file(&path)
        .map_err(|e| format!("refusing the state file '{}': {e}", path.display()))
}

/// Holds an exclusive lock on `<state>.lock` while it lives: a run that finds it held (an
/// overlapping HealthCheckProgram, or the Prolog beside it) stops without acting.
struct Lock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

fn lock(state: &Path) -> Result<Lock, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = state.with_extension("lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| format!("cannot open the lock '{}': {e}", path.display()))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map(Lock)
        .map_err(|(_, e)| {
            format!(
                "another 'health_check slurm' holds '{}' ({e}): this run takes no action",
                path.display()
            )
        })
}

/// This node's name: `--node`, `$SLURMD_NODENAME`, else the short host name.
fn node_name(cfg: &SlurmConfig) -> String {
    name_of_node(
        cfg.node.clone(),
        std::env::var("SLURMD_NODENAME").ok(),
        std::fs::read_to_string("/proc/sys/kernel/hostname").ok(),
    )
}

/// `--node`, else slurmd's `SLURMD_NODENAME` when it says something, else the short host name.
fn name_of_node(given: Option<String>, slurmd: Option<String>, host: Option<String>) -> String {
    given
        .or_else(|| slurmd.filter(|n| !n.is_empty()))
        .or_else(|| host.map(|h| h.trim().split('.').next().unwrap_or_default().to_string()))
        .unwrap_or_else(|| "localhost".into())
}

/// The run as this node's state asks: while our drain holds, the history's reference leaves out
/// the failing runs (the level that drained the node must not become the reference it passes
/// against); on a node that runs jobs, the intrusive sections are left out, with the reason.
fn gentle(config: &Config, info: &NodeInfo) -> Config {
    let mut c = config.clone();
    if let Some(h) = &mut c.history {
        h.without_flagged = info.drained_by_us();
    }
    if !info.busy() {
        return c;
    }
    let why = format!(
        "the node runs jobs ({}): intrusive sections are left out",
        info.state
    );
    for s in [Section::Network, Section::Storage] {
        if c.plan.contains(&s) {
            c.plan.retain(|p| *p != s);
            c.excluded.push((s, why.clone()));
        }
    }
    // Memory: the idle-latency chain only, no bandwidth test.
    c.memory.tests.peak = false;
    c.memory.tests.memcpy = false;
    c.memory.tests.loaded = false;
    c
}

/// Whether the run judged what drained the node: a check, judged and passed; a section, run; an
/// overrun, a run that ended within its deadline.
fn judged_cause(
    doc: &crate::wire::document::Document,
    cause: &Cause,
    interrupted: Option<crate::os::Interrupt>,
) -> bool {
    match cause {
        Cause::Check(what) => judged(doc, what, false),
        Cause::Section(what) => judged(doc, what, true),
        Cause::Overrun => interrupted.is_none(),
    }
}

/// Whether the run judged `what` and it passed (a check), or ran it (a section). A check with a
/// subject that no longer appears (a DIMM's errors after the part was replaced and the counters
/// reset) is judged when its rule was, and every check of that rule passed.
fn judged(doc: &crate::wire::document::Document, what: &str, section: bool) -> bool {
    use crate::wire::document::{CheckId, SectionOutcome, Status};
    if section {
        return doc
            .health_check
            .sections
            .0
            .iter()
            .any(|(s, o)| s.name() == what && matches!(o, SectionOutcome::Ok));
    }
    if let Some(c) = doc.checks.iter().find(|c| c.name == what) {
        return c.status == Status::Pass;
    }
    let id = CheckId::parse(what);
    let mut same_rule = doc
        .checks
        .iter()
        .filter(|c| c.name.section == id.section && c.name.rule == id.rule)
        .peekable();
    id.subject.is_some()
        && same_rule.peek().is_some()
        && same_rule.all(|c| c.status == Status::Pass)
}

/// The verdict in a few words, for stdout's line.
fn verdict_words(v: &Health) -> String {
    match v {
        Health::Healthy => "healthy".into(),
        Health::Failing { .. } => format!("failing ({})", reason(v).unwrap_or_default()),
        Health::Inconclusive { what } => format!("inconclusive ({what})"),
    }
}

/// Runs the check and acts on it; returns the exit status.
pub fn run(config: &Config, cfg: &SlurmConfig, options_from_env: Option<String>) -> Exit {
    let began = *BEGAN.get_or_init(Instant::now);
    let context = Context::of(std::env::var("SLURM_SCRIPT_CONTEXT").ok().as_deref());
    let node = node_name(cfg);
    let state = state_path(cfg);
    let _lock = match state.as_ref().map(|s| lock(s)) {
        Ok(Err(e)) => {
            log(&e);
            println!(
                "health_check slurm: {}: {}",
                terminal_safe(&node),
                terminal_safe(&e)
            );
            return Exit::Ok;
        }
        Ok(Ok(l)) => Some(l),
        Err(_) => None,
    };
    let ctl = Controller { cfg, node: &node };
    let slurmd_says = std::env::var("SLURM_NODE_IS_HEALTHY").ok();
    let before = check_node_name(&node)
        .and_then(|()| ctl.read().map_err(|e| e.to_string()))
        .and_then(|i| i.agrees_with_slurmd(slurmd_says.as_deref()).map(|()| i));
    if let Err(e) = &before {
        log(&format!(
            "{node}: state unknown ({e}): the run goes on, no action after it"
        ));
    }
    let mut run_config = before
        .as_ref()
        .map_or_else(|_| config.clone(), |i| gentle(config, i));
    // --no-act leaves no trace: no history record either.
    if cfg.no_act {
        run_config.history = None;
    }
    if let Some(deadline) = config.deadline {
        // A run stuck past its deadline (a process in the kernel on a sick node) is a failing
        // run: counted and acted on before the process gives up, as slurmd would only kill it.
        let (cfg, node, state, before) = (cfg.clone(), node.clone(), state.clone(), before.clone());
        super::watchdog::on_overrun(Box::new(move |section| {
            let verdict = Health::Failing {
                what: section.map_or(decide::OVERRUN, |s| s.name()).to_string(),
                check: false,
                count: 1,
            };
            let acted = act_on(&cfg, &node, &state, &before, &verdict, false);
            report(&node, &verdict, &acted);
            exit_status(
                context,
                &verdict,
                acted.as_ref().is_ok_and(|a| a.drained_by_us),
                None,
            )
            .code()
        }));
        // From the program's start, as slurmd counts, not from after the first read of the
        // node (which may take the controller's whole timeout).
        super::watchdog::start_from(deadline, began);
    }
    let outcome = driver::run(&run_config, options_from_env);
    write_document(&run_config, &outcome);
    let mut verdict = health::of(&outcome.doc);
    if let Ok(info) = &before {
        let kept = state.as_ref().ok().map(|p| load(p));
        let judged = |cause: &Cause| judged_cause(&outcome.doc, cause, outcome.interrupted);
        verdict = for_our_drain(
            info,
            kept.as_ref().and_then(|k| k.our_drain_on(info)),
            verdict,
            judged,
        );
        // A Prolog's or a busy node's run leaves checks out (`gentle`).
        let partial = context == Context::JobScript || info.busy();
        if let Some(kept) = &kept {
            verdict = for_failing_streak(kept, verdict, partial, judged);
        }
    }
    // A check the site drains on at once (NHC's way: a read-only file system) drains on this
    // run, and the reason names it.
    let failed = outcome
        .doc
        .checks
        .iter()
        .filter(|c| c.status == crate::wire::check::Status::Fail)
        .map(|c| c.name.to_string())
        .collect::<Vec<_>>();
    let at_once = drains_at_once(failed.iter().map(String::as_str), &cfg.drain_at_once);
    if let (Some(name), Health::Failing { count, .. }) = (at_once, &verdict) {
        verdict = Health::Failing {
            what: name.to_string(),
            check: true,
            count: *count,
        };
    }
    let acted = act_on(cfg, &node, &state, &before, &verdict, at_once.is_some());
    report(&node, &verdict, &acted);
    let drained_by_us = acted.as_ref().is_ok_and(|a| a.drained_by_us);
    exit_status(context, &verdict, drained_by_us, outcome.interrupted)
}

/// Counts the run in the streaks and carries out what they decide, on the node as read before
/// the run (`at_once`: a check that drains on its first failing run failed); `Err` says why no
/// action could be taken.
fn act_on(
    cfg: &SlurmConfig,
    node: &str,
    state: &Result<PathBuf, String>,
    before: &Result<NodeInfo, String>,
    verdict: &Health,
    at_once: bool,
) -> Result<Acted, String> {
    let path = state
        .as_ref()
        .map_err(|e| format!("{e}; no streaks are kept"))?;
    let mut streaks = load(path).after(verdict);
    // --no-act leaves no trace: nothing is written.
    if !cfg.no_act {
        save(path, &streaks);
    }
    let info = before.as_ref().map_err(|e| format!("state unknown: {e}"))?;
    let policy = Policy {
        drain_after: if at_once { 1 } else { cfg.drain_after },
        resume_after: cfg.resume_after,
    };
    let ctl = Controller { cfg, node };
    let decision = decide(info, verdict, &streaks, policy);
    // A mark of intent this node left behind (a run killed while it waited its turn) is
    // cleared by any run that does not drain.
    let stale = info.comment.as_deref().and_then(cap::Mark::of).is_some();
    if stale && !cfg.no_act && !matches!(decision, Decision::Drain { .. }) {
        if let Err(e) = cap::release(&ctl, node, &info.partitions) {
            log(&format!(
                "{node}: its mark of intent could not be cleared ({e})"
            ));
        }
    }
    let drain = match &decision {
        Decision::Drain { reason, .. } => Cause::of(verdict).map(|cause| OurDrain {
            reason: reason.clone(),
            cause,
        }),
        _ => None,
    };
    let acted = carry_out(&ctl, info, decision, cfg.no_act);
    // What we drained and why, in our own state; forgotten once the node is not ours.
    let now_ours = if acted.drained_by_us {
        drain.or_else(|| streaks.drained.clone())
    } else {
        None
    };
    if now_ours != streaks.drained && !cfg.no_act {
        streaks.drained = now_ours;
        save(path, &streaks);
    }
    Ok(acted)
}

/// The one line of what the run did: on stdout, on stderr and in syslog.
fn report(node: &str, verdict: &Health, acted: &Result<Acted, String>) {
    let line = match acted {
        Ok(a) => a.line.clone(),
        Err(why) => format!("{node}: {}; no action ({why})", verdict_words(verdict)),
    };
    log(&line);
    println!("health_check slurm: {}", terminal_safe(&line));
}

/// The exit status: a failing run exits 1 (slurmd logs it). As a Prolog or Epilog, where
/// slurmd drains the node on any non-zero exit, 1 only when the node ends the run drained by
/// health_check, and 0 otherwise, an interrupted run included.
fn exit_status(
    context: Context,
    verdict: &Health,
    drained_by_us: bool,
    interrupted: Option<crate::os::Interrupt>,
) -> Exit {
    let failing = matches!(verdict, Health::Failing { .. });
    match context {
        Context::JobScript if failing && drained_by_us => Exit::Unhealthy,
        Context::JobScript => Exit::Ok,
        Context::HealthCheck => match interrupted {
            // The run's own deadline is a failing run, not a signal.
            Some(signal) if signal != crate::os::Interrupt::Deadline => Exit::Interrupted(signal),
            _ if failing => Exit::Unhealthy,
            _ => Exit::Ok,
        },
    }
}

/// The document to `--output` in `--format`; a failure to write it is logged and changes
/// nothing about the node.
fn write_document(config: &Config, outcome: &super::Outcome) {
    let Some(path) = &config.output else {
        return;
    };
    let exporter = super::run_exporter(config, outcome);
    let written = exporter
        .document(&outcome.doc, true)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            crate::render::write_atomically(path, &text).map_err(|e| format!("{e:#}"))
        });
    if let Err(e) = written {
        log(&format!(
            "cannot write the document to '{}': {e}",
            path.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::Interrupt;
    use crate::wire::document::{
        Check, CheckId, Document, SectionOutcome, SectionStatuses, Status,
    };

    #[test]
    fn a_drains_cause_is_judged_when_its_check_passed_or_its_section_ran() {
        let check = |name: &str, status| Check {
            name: CheckId::parse(name),
            status,
            value: None,
            limit: None,
            message: String::new(),
        };
        let mut doc = Document {
            checks: vec![
                check("sleepbench.calls_per_thread", Status::Pass),
                check("errors.edac", Status::Pass),
                check("errors.aer:0000:3b:00.0", Status::Warn),
            ],
            ..Document::default()
        };
        doc.health_check.sections = SectionStatuses(vec![(Section::Sleep, SectionOutcome::Ok)]);
        assert!(judged(&doc, "sleepbench.calls_per_thread", false));
        // Not run at all (a busy node's run leaves memory bandwidth out).
        assert!(!judged(&doc, "memory.peak_vs_theoretical", false));
        // The DIMM's own check is gone after its replacement: its source passes.
        assert!(judged(&doc, "errors.edac:mc0/dimm1", false));
        // A source with a subject still not passing.
        assert!(!judged(&doc, "errors.aer:0000:5e:00.0", false));
        assert!(judged(&doc, "sleep", true));
        assert!(!judged(&doc, "memory", true));
    }

    #[test]
    fn the_node_is_named_by_the_flag_else_slurmd_else_the_short_host_name() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(name_of_node(s("n1"), s("n2"), s("h.x")), "n1");
        assert_eq!(name_of_node(None, s("n2"), s("h.x")), "n2");
        // slurmd set it empty: the host name decides.
        assert_eq!(name_of_node(None, s(""), s("h3.example.com\n")), "h3");
        assert_eq!(name_of_node(None, None, None), "localhost");
    }

    /// On a node that runs jobs the run leaves out what would disturb them (the network and
    /// storage sections, the memory bandwidth tests) and says why; an idle node's run is as
    /// asked. While our drain holds, failing runs stay out of the history's reference.
    #[test]
    fn a_busy_node_is_measured_gently_and_our_drain_keeps_failing_runs_out_of_the_reference() {
        let argv = [
            "hc",
            "slurm",
            "--profile",
            "standard",
            "--history",
            "/tmp/h.sqlite",
        ];
        let cli = crate::cli::Cli::parse_args(argv).unwrap();
        let config = Config::from_cli(&cli, 2).unwrap();
        let node = |state: &str, reason: Option<&str>| NodeInfo {
            name: "n1".into(),
            state: state.into(),
            reason: reason.map(str::to_string),
            partitions: Vec::new(),
            comment: None,
        };
        let idle = gentle(&config, &node("IDLE", None));
        assert_eq!(idle.plan, config.plan);
        assert!(idle.memory.tests.peak && idle.memory.tests.loaded);
        assert!(!idle.history.as_ref().unwrap().without_flagged);
        let busy = gentle(&config, &node("MIXED", None));
        assert!(!busy.plan.contains(&Section::Network), "{:?}", busy.plan);
        assert!(busy.plan.contains(&Section::Memory) && busy.plan.contains(&Section::Sleep));
        assert!(
            busy.excluded
                .iter()
                .any(|(s, why)| *s == Section::Network && why.contains("runs jobs (MIXED)")),
            "{:?}",
            busy.excluded
        );
        let t = &busy.memory.tests;
        assert!(!t.peak && !t.memcpy && !t.loaded);
        let ours = gentle(
            &config,
            &node("IDLE+DRAIN", Some("health_check: x: check failed")),
        );
        assert!(ours.history.as_ref().unwrap().without_flagged);
    }

    #[test]
    fn the_script_context_is_read_as_slurm_sets_it() {
        assert_eq!(Context::of(None), Context::HealthCheck);
        assert_eq!(Context::of(Some("")), Context::HealthCheck);
        for c in ["prolog_slurmd", "epilog_slurmd", "prolog_slurmctld"] {
            assert_eq!(Context::of(Some(c)), Context::JobScript, "{c}");
        }
    }

    /// As a Prolog, a non-zero exit drains the node behind health_check's back: only a node
    /// health_check itself holds drained exits 1 there.
    #[test]
    fn a_job_script_exits_non_zero_only_when_we_hold_the_node_drained() {
        let fail = Health::Failing {
            what: "a.b".into(),
            check: true,
            count: 1,
        };
        let inconclusive = Health::Inconclusive { what: "a".into() };
        let js = Context::JobScript;
        assert_eq!(exit_status(js, &fail, true, None), Exit::Unhealthy);
        assert_eq!(exit_status(js, &fail, false, None), Exit::Ok);
        assert_eq!(exit_status(js, &Health::Healthy, true, None), Exit::Ok);
        assert_eq!(exit_status(js, &inconclusive, false, None), Exit::Ok);
        assert_eq!(
            exit_status(js, &fail, true, Some(Interrupt::Term)),
            Exit::Unhealthy
        );
        assert_eq!(
            exit_status(js, &Health::Healthy, false, Some(Interrupt::Term)),
            Exit::Ok
        );
        let hc = Context::HealthCheck;
        assert_eq!(exit_status(hc, &fail, false, None), Exit::Unhealthy);
        assert_eq!(exit_status(hc, &inconclusive, false, None), Exit::Ok);
        assert_eq!(exit_status(hc, &Health::Healthy, false, None), Exit::Ok);
        assert_eq!(
            exit_status(hc, &Health::Healthy, false, Some(Interrupt::Term)),
            Exit::Interrupted(Interrupt::Term)
        );
        assert_eq!(
            exit_status(hc, &fail, false, Some(Interrupt::Deadline)),
            Exit::Unhealthy
        );
    }

    /// A node's turn under the cap waits no longer than slurmd leaves it to drain: a run that
    /// measured for 50 s waits 5 s, one at slurmd's limit not at all (it does not drain).
    #[test]
    fn the_turn_under_the_cap_ends_before_slurmd_kills_the_run() {
        let s = Duration::from_secs;
        assert_eq!(turn_wait(s(0)), cap::CHOOSING_WAIT);
        assert_eq!(turn_wait(s(50)), s(5));
        assert_eq!(turn_wait(s(55)), Duration::ZERO);
        assert_eq!(turn_wait(s(70)), Duration::ZERO);
    }
}
