//! `health_check slurm`: Slurm's HealthCheckProgram (and Prolog). slurmd runs it as root, with
//! no arguments and `SLURMD_NODENAME` set, kills it after 60 s, and takes no action on its exit
//! code: the program drains its own node. So, as LBNL NHC does:
//!
//! - a failing run (a check or a section failed) drains the node with `scontrol update
//!   NodeName=N State=DRAIN Reason="health_check: <what>: <how>"`, once `--drain-after` runs in a
//!   row have failed (a shared hiccup must not drain a cluster), and never when more than
//!   `--max-drained-pct` of its partition is already drained by health_check (one node may always
//!   be); the reason's first 20 characters are stable from run to run (`sinfo -R` shows 20) and
//!   the same reason is not sent again;
//! - a passing run resumes the node after `--resume-after` runs in a row, only when the current
//!   reason is ours (`health_check:`): an administrator's drain is never lifted;
//! - an inconclusive run (measured under interference) does neither;
//! - on a node running jobs (ALLOCATED or MIXED) the intrusive sections (memory bandwidth,
//!   network, storage) are left out, and the document says so;
//! - every scontrol and sinfo call has a deadline (slurmd runs the program before it registers,
//!   when the controller may not answer), runs overlap-free under a lock, and each action is one
//!   line on stderr and in syslog.
//!
//! Exit 0 healthy (or inconclusive), 1 unhealthy, so the same command works as a Prolog.

use super::{Exit, Outcome, driver};
use crate::config::{Config, Section, SlurmConfig};
use crate::judge::health::{self, Health};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The prefix of every drain reason of ours; a reason that starts otherwise is somebody else's.
pub const REASON_PREFIX: &str = "health_check:";
/// slurmdbd keeps a reason in 255 bytes.
const REASON_MAX: usize = 255;

/// What `scontrol show node` says of this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// `State=`, e.g. `IDLE+DRAIN`, `MIXED`.
    pub state: String,
    /// `Reason=`, without the `[user@time]` Slurm appends.
    pub reason: Option<String>,
    /// `Partitions=`.
    pub partitions: Vec<String>,
}

impl NodeInfo {
    /// Whether the node is drained or draining.
    pub fn drained(&self) -> bool {
        self.state.contains("DRAIN")
    }

    /// Whether its drain is ours.
    pub fn drained_by_us(&self) -> bool {
        self.drained()
            && self
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with(REASON_PREFIX))
    }

    /// Whether jobs run on it.
    pub fn busy(&self) -> bool {
        self.state.contains("ALLOC") || self.state.contains("MIXED")
    }
}

/// Parses `scontrol show node NAME` (one `Key=Value` per word, `Reason=` to the end of its line).
pub fn parse_node(text: &str) -> NodeInfo {
    let mut info = NodeInfo::default();
    for line in text.lines() {
        let line = line.trim();
        if let Some(reason) = line.strip_prefix("Reason=") {
            // "admin: maintenance [root@2026-12-01T15:00:00]"
            let r = match reason.rfind(" [") {
                Some(at) if reason.ends_with(']') => &reason[..at],
                _ => reason,
            };
            info.reason = Some(r.trim().to_string()).filter(|r| !r.is_empty() && r != "(null)");
            continue;
        }
        for word in line.split_whitespace() {
            if let Some(v) = word.strip_prefix("State=") {
                info.state = v.to_string();
            } else if let Some(v) = word.strip_prefix("Partitions=") {
                info.partitions = v.split(',').map(str::to_string).collect();
            }
        }
    }
    info
}

/// A command's stdout, or why not: its exit, or its deadline passed (then it is killed).
fn call(program: &Path, args: &[&str], timeout: Duration) -> Result<String, String> {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run '{shown}': {e}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                let mut err = String::new();
                if let Some(mut o) = child.stdout.take() {
                    let _ = o.read_to_string(&mut out);
                }
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                return if status.success() {
                    Ok(out)
                } else {
                    Err(format!("'{shown}' failed ({status}): {}", err.trim()))
                };
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "'{shown}' did not answer within {} s (is slurmctld up?)",
                    timeout.as_secs_f64()
                ));
            }
            Err(e) => return Err(format!("'{shown}': {e}")),
        }
    }
}

/// One line on stderr and, best effort, in syslog (user.notice).
fn log(line: &str) {
    eprintln!("health_check slurm: {line}");
    let msg = format!("<13>health_check[{}]: slurm: {line}", std::process::id());
    if let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() {
        let _ = sock.send_to(msg.as_bytes(), "/dev/log");
    }
}

/// The streaks kept between runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Streaks {
    /// Failing runs in a row.
    failing: u32,
    /// Passing runs in a row.
    passing: u32,
}

fn load(path: &Path) -> Streaks {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn save(path: &Path, s: &Streaks) {
    let text = serde_json::to_string(s).unwrap_or_default();
    if let Err(e) = crate::render::write_atomically(path, &text) {
        log(&format!("cannot keep the run streaks: {e}"));
    }
}

/// The state file: `--state`, else `slurm-state.json` in `/var/lib/health_check` (root) or the
/// runtime directory, made private if missing.
fn state_path(cfg: &SlurmConfig) -> Result<PathBuf, String> {
    if let Some(p) = &cfg.state {
        return Ok(p.clone());
    }
    let dir = if crate::os::euid() == 0 {
        PathBuf::from("/var/lib/health_check")
    } else {
        super::pidfile::runtime_dir()
    };
    super::pidfile::ensure_private_dir(&dir).map_err(|e| e.to_string())?;
    Ok(dir.join("slurm-state.json"))
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
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
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
    cfg.node
        .clone()
        .or_else(|| {
            std::env::var("SLURMD_NODENAME")
                .ok()
                .filter(|n| !n.is_empty())
        })
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().split('.').next().unwrap_or_default().to_string())
        })
        .unwrap_or_else(|| "localhost".into())
}

/// The drain reason of a failing verdict: prefix, what failed, how. No figure, count or time,
/// so the same problem gives the same reason and `sinfo -R`'s 20 characters group it.
pub fn reason(h: &Health) -> Option<String> {
    let text = match h {
        Health::Failing {
            what, check: true, ..
        } => format!("{REASON_PREFIX} {what}: check failed"),
        Health::Failing { what, .. } => format!("{REASON_PREFIX} {what}: section failed to run"),
        _ => return None,
    };
    let mut cut = text;
    while cut.len() > REASON_MAX {
        cut.pop();
    }
    Some(cut)
}

/// The run's sections on a node that runs jobs: the intrusive ones left out, with the reason.
fn gentle(config: &Config, info: &NodeInfo) -> Config {
    let mut c = config.clone();
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

/// Whether draining one more node keeps the partition under the cap; `Err` says why not.
fn under_cap(cfg: &SlurmConfig, info: &NodeInfo) -> Result<(), String> {
    let Some(partition) = info.partitions.first() else {
        return Ok(());
    };
    let text = call(
        &cfg.sinfo,
        &["-h", "-N", "-p", partition, "-o", "%N|%T|%E"],
        cfg.timeout,
    )?;
    let mut nodes = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, '|');
        let (Some(n), Some(state), reason) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let ours = state.contains("drain") && reason.is_some_and(|r| r.starts_with(REASON_PREFIX));
        nodes.insert(n.to_string(), ours);
    }
    let total = nodes.len().max(1);
    let ours = nodes.values().filter(|&&o| o).count();
    let share = 100.0 * (ours + 1) as f64 / total as f64;
    if ours == 0 || share <= cfg.max_drained_pct {
        Ok(())
    } else {
        Err(format!(
            "{ours} of {total} nodes of partition '{partition}' are drained by health_check \
             already; one more would be {share:.0}% (--max-drained-pct {}): not draining, look \
             for a cause they share",
            cfg.max_drained_pct
        ))
    }
}

/// Runs the check and acts on it; returns the exit status.
pub fn run(config: &Config, cfg: &SlurmConfig, options_from_env: Option<String>) -> Exit {
    let node = node_name(cfg);
    let state = match state_path(cfg) {
        Ok(p) => p,
        Err(e) => {
            log(&format!("no state file: {e}; streaks are not kept"));
            std::env::temp_dir().join(format!("health_check-slurm-{}.json", std::process::id()))
        }
    };
    let _lock = match lock(&state) {
        Ok(l) => l,
        Err(e) => {
            log(&e);
            return Exit::Ok;
        }
    };
    let scontrol = |args: &[&str]| call(&cfg.scontrol, args, cfg.timeout);
    let info = scontrol(&["show", "node", &node]).map(|t| parse_node(&t));
    if let Err(e) = &info {
        log(&format!(
            "{node}: cannot read its state ({e}): the run goes on, no action after it"
        ));
    }
    let run_config = info
        .as_ref()
        .map_or_else(|_| config.clone(), |i| gentle(config, i));
    let outcome = driver::run(&run_config, options_from_env);
    let written = super::deliver_quietly(&run_config, &outcome);
    let verdict = health::of(&outcome.doc);
    let mut streaks = load(&state);
    match verdict {
        Health::Healthy => {
            streaks.passing += 1;
            streaks.failing = 0;
        }
        Health::Failing { .. } => {
            streaks.failing += 1;
            streaks.passing = 0;
        }
        Health::Inconclusive { .. } => {}
    }
    save(&state, &streaks);
    if let Ok(info) = &info {
        act(cfg, &node, info, &verdict, &streaks, &scontrol);
    }
    finish(written, &outcome, &verdict)
}

fn finish(written: Exit, outcome: &Outcome, verdict: &Health) -> Exit {
    if let Some(signal) = outcome.interrupted {
        return Exit::Interrupted(signal);
    }
    match verdict {
        Health::Failing { .. } => Exit::Unhealthy,
        _ => written,
    }
}

/// Drains, resumes or leaves the node, saying so in one line.
fn act(
    cfg: &SlurmConfig,
    node: &str,
    info: &NodeInfo,
    verdict: &Health,
    streaks: &Streaks,
    scontrol: &dyn Fn(&[&str]) -> Result<String, String>,
) {
    match verdict {
        Health::Inconclusive { what } => log(&format!(
            "{node}: inconclusive ({what} measured under interference): no action"
        )),
        Health::Healthy if info.drained_by_us() && streaks.passing >= cfg.resume_after => {
            match scontrol(&["update", &format!("NodeName={node}"), "State=RESUME"]) {
                Ok(_) => log(&format!(
                    "{node}: resumed after {} passing run(s) (it was drained: {})",
                    streaks.passing,
                    info.reason.as_deref().unwrap_or_default()
                )),
                Err(e) => log(&format!("{node}: could not resume: {e}")),
            }
        }
        Health::Healthy if info.drained() && !info.drained_by_us() => log(&format!(
            "{node}: healthy; drained by someone else ({}): left alone",
            info.reason.as_deref().unwrap_or("no reason")
        )),
        Health::Healthy => log(&format!("{node}: healthy")),
        Health::Failing { .. } => {
            let Some(reason) = reason(verdict) else {
                return;
            };
            if streaks.failing < cfg.drain_after {
                log(&format!(
                    "{node}: failing ({reason}); {} of {} failing runs before a drain",
                    streaks.failing, cfg.drain_after
                ));
            } else if info.drained() && !info.drained_by_us() {
                log(&format!(
                    "{node}: failing ({reason}); already drained by someone else ({}): left alone",
                    info.reason.as_deref().unwrap_or("no reason")
                ));
            } else if info.reason.as_deref() == Some(reason.as_str()) && info.drained() {
                log(&format!("{node}: still failing, still drained ({reason})"));
            } else if let Err(why) = under_cap(cfg, info) {
                log(&format!("{node}: failing ({reason}); {why}"));
            } else {
                let args = [
                    "update".to_string(),
                    format!("NodeName={node}"),
                    "State=DRAIN".into(),
                    format!("Reason={reason}"),
                ];
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                match scontrol(&args) {
                    Ok(_) => log(&format!(
                        "{node}: drained after {} failing run(s): {reason}",
                        streaks.failing
                    )),
                    Err(e) => log(&format!("{node}: could not drain: {e}")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOW: &str = "NodeName=n1 Arch=x86_64 CoresPerSocket=1\n   CPUAlloc=0 CPUEfctv=1 \
                        CPUTot=1\n   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 \
                        Weight=1\n   Partitions=debug,batch\n   Reason=admin: maintenance \
                        [root@2026-12-01T15:00:00]\n";

    #[test]
    fn scontrols_node_view_is_read_with_its_reason_and_partitions() {
        let i = parse_node(SHOW);
        assert_eq!(i.state, "IDLE+DRAIN");
        assert_eq!(i.reason.as_deref(), Some("admin: maintenance"));
        assert_eq!(i.partitions, ["debug", "batch"]);
        assert!(i.drained() && !i.drained_by_us() && !i.busy());
        let ours =
            parse_node("   State=MIXED+DRAIN\n   Reason=health_check: x: check failed [root@t]\n");
        assert!(ours.drained_by_us() && ours.busy());
        assert_eq!(parse_node("   State=IDLE\n   Reason=(null)\n").reason, None);
    }

    #[test]
    fn a_reason_is_stable_bounded_and_ours() {
        let h = Health::Failing {
            what: "sleepbench.calls_per_thread".into(),
            check: true,
            count: 3,
        };
        let r = reason(&h).unwrap();
        assert_eq!(r, "health_check: sleepbench.calls_per_thread: check failed");
        assert!(r.starts_with(REASON_PREFIX));
        let long = Health::Failing {
            what: "x".repeat(400),
            check: true,
            count: 1,
        };
        assert!(reason(&long).unwrap().len() <= REASON_MAX);
        assert_eq!(reason(&Health::Healthy), None);
    }

    #[test]
    fn a_call_that_hangs_is_cut_at_its_deadline() {
        let started = Instant::now();
        let e = call(Path::new("sleep"), &["5"], Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(e.contains("did not answer"), "{e}");
        assert_eq!(
            call(Path::new("echo"), &["hi"], Duration::from_secs(2)).unwrap(),
            "hi\n"
        );
    }
}
