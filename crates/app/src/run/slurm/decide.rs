//! What to do with the node after a run: a pure function of what Slurm said of the node before
//! the run, the run's verdict, the streaks of failing and passing runs, and the policy. No call
//! to Slurm is made here; `mod.rs` carries the decision out on the node as it is read again.

use super::node::{NodeInfo, REASON_PREFIX};
use crate::judge::health::Health;

/// slurmdbd keeps a reason in 255 bytes.
pub const REASON_MAX: usize = 255;

/// What drained the node, as health_check drained it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Cause {
    /// A check failed (its name).
    Check(String),
    /// A section failed to run (its name).
    Section(String),
    /// The run overran its deadline.
    Overrun,
}

impl Cause {
    /// The cause of a failing verdict.
    pub fn of(verdict: &Health) -> Option<Cause> {
        match verdict {
            Health::Failing {
                what, check: true, ..
            } => Some(Cause::Check(what.clone())),
            Health::Failing { what, .. } if what == OVERRUN => Some(Cause::Overrun),
            Health::Failing { what, .. } => Some(Cause::Section(what.clone())),
            _ => None,
        }
    }
}

/// What a run that overran its deadline failed: the run itself.
pub const OVERRUN: &str = "the run";

/// A drain of health_check's, as kept in its own state: the reason it gave Slurm and what it
/// was for, so that it comes back whatever Slurm keeps of the reason (cut at 255 bytes) and
/// whatever the cause's name (the run itself, a check with a long subject).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OurDrain {
    /// The reason given to Slurm.
    pub reason: String,
    /// What failed.
    pub cause: Cause,
}

/// The streaks kept between runs, and the drain health_check holds on the node.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Streaks {
    /// Failing runs in a row.
    pub failing: u32,
    /// What the last failing run failed, while the streak lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_on: Option<Cause>,
    /// Passing runs in a row.
    pub passing: u32,
    /// The drain health_check made and holds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drained: Option<OurDrain>,
}

impl Streaks {
    /// The streaks after a run with `verdict`: an inconclusive run counts for neither.
    pub fn after(&self, verdict: &Health) -> Streaks {
        match verdict {
            Health::Healthy => Streaks {
                failing: 0,
                failing_on: None,
                passing: self.passing.saturating_add(1),
                drained: self.drained.clone(),
            },
            Health::Failing { .. } => Streaks {
                failing: self.failing.saturating_add(1),
                failing_on: Cause::of(verdict),
                passing: 0,
                drained: self.drained.clone(),
            },
            Health::Inconclusive { .. } => self.clone(),
        }
    }

    /// Our drain as recorded, when Slurm's reason for the node is the one we gave (or what
    /// Slurm kept of it).
    pub fn our_drain_on(&self, node: &NodeInfo) -> Option<&OurDrain> {
        let kept = node.reason.as_deref()?;
        self.drained
            .as_ref()
            .filter(|d| node.drained() && !kept.is_empty() && d.reason.starts_with(kept))
    }
}

/// How many runs in a row decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Failing runs in a row before a drain.
    pub drain_after: u32,
    /// Passing runs in a row before our drain is lifted.
    pub resume_after: u32,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing; the line says why.
    Leave(String),
    /// Drain the node with this reason (once the cap allows and the node still is as read).
    Drain {
        /// The reason, ours.
        reason: String,
        /// Why, for the log.
        why: String,
    },
    /// Lift our drain (once the node still is as read).
    Resume {
        /// Why, for the log.
        why: String,
    },
}

/// The drain reason of a failing verdict: prefix, what failed, how. No figure, count or time,
/// so the same problem gives the same reason and `sinfo -R`'s 20 characters group it. Control
/// characters (a newline from a crafted name would split the log line and sinfo's answer) and
/// `|` become `?`. A name too long for slurmdbd's 255 bytes (an NHC check's path) is cut in
/// the middle and ends in `~`: the prefix and the ending still say the drain is ours and what
/// kind it is, so that it comes back without our state file (a diskless node after a reboot),
/// judged by its rule ([`cause_of`]).
pub fn reason(h: &Health) -> Option<String> {
    let (what, how) = match h {
        Health::Failing {
            what, check: true, ..
        } => (what, ": check failed"),
        Health::Failing { what, .. } => (what, ": section failed to run"),
        _ => return None,
    };
    let mut what: String = what
        .chars()
        .map(|c| if c.is_control() || c == '|' { '?' } else { c })
        .collect();
    let room = REASON_MAX - REASON_PREFIX.len() - " ".len() - how.len();
    if what.len() > room {
        let mut end = room - "~".len();
        while !what.is_char_boundary(end) {
            end -= 1;
        }
        what.truncate(end);
        what.push('~');
    }
    Some(format!("{REASON_PREFIX} {what}{how}"))
}

/// What drained the node, read back from our reason: the check's (or the section's) name and
/// whether it is a section that failed to run.
pub fn cause_of(reason: &str) -> Option<(&str, bool)> {
    let rest = reason.strip_prefix(REASON_PREFIX)?.trim_start();
    if let Some(what) = rest.strip_suffix(": check failed") {
        return Some((what, false));
    }
    rest.strip_suffix(": section failed to run")
        .map(|what| (what, true))
}

/// The verdict that counts toward lifting our drain: a healthy run that did not judge what
/// drained the node (a busy node's run leaves the memory bandwidth out; a Prolog's runs only the
/// system section) is inconclusive about it, not a pass. What drained it comes from our own
/// state (`ours`), else from the reason (a drain made before health_check kept state of it).
/// `judged(cause)` says whether this run judged that check and it passed, ran that section, or
/// ran within its deadline.
pub fn for_our_drain(
    node: &NodeInfo,
    ours: Option<&OurDrain>,
    verdict: Health,
    judged: impl Fn(&Cause) -> bool,
) -> Health {
    if verdict != Health::Healthy || !node.drained_by_us() {
        return verdict;
    }
    let reason = node.reason.as_deref().unwrap_or_default();
    let cause = ours.map(|d| d.cause.clone()).or_else(|| {
        cause_of(reason).map(|(what, section)| match (what, section) {
            (OVERRUN, true) => Cause::Overrun,
            (what, true) => Cause::Section(what.to_string()),
            (what, false) => Cause::Check(what.to_string()),
        })
    });
    match cause {
        Some(c) if judged(&c) => verdict,
        Some(Cause::Check(what)) => Health::Inconclusive {
            what: format!(
                "{what}, which drained the node, did not pass in this run (not run, skipped or \
                 warning)"
            ),
        },
        Some(Cause::Section(what)) => Health::Inconclusive {
            what: format!("{what}, which drained the node, did not run in full in this run"),
        },
        Some(Cause::Overrun) => Health::Inconclusive {
            what: "the run overran its deadline again".into(),
        },
        None => Health::Inconclusive {
            what: format!("the drain reason '{reason}' names no check this version knows"),
        },
    }
}

/// The verdict that counts toward a failing streak: a healthy run that only part of the checks
/// ran in (a Prolog's system section, a busy node's run without the intrusive tests; `partial`)
/// and that did not judge what the streak is failing on leaves the streak as it was. Otherwise a
/// node receiving jobs would have its streak reset by each Prolog and never drain for what only
/// the full runs measure. A full run resets it, whatever it judged: a check dropped from the
/// configuration holds no streak for ever.
pub fn for_failing_streak(
    kept: &Streaks,
    verdict: Health,
    partial: bool,
    judged: impl Fn(&Cause) -> bool,
) -> Health {
    if verdict != Health::Healthy || !partial || kept.failing == 0 {
        return verdict;
    }
    match &kept.failing_on {
        Some(cause) if !judged(cause) => Health::Inconclusive {
            what: format!(
                "{}, failing {} run(s) in a row, was not judged by this partial run",
                match cause {
                    Cause::Check(what) | Cause::Section(what) => what.as_str(),
                    Cause::Overrun => OVERRUN,
                },
                kept.failing
            ),
        },
        _ => verdict,
    }
}

/// The first failing check that drains at once (`--drain-at-once`: a name, or a prefix ending in
/// `*`), among `failed` in the document's order.
pub fn drains_at_once<'a>(
    mut failed: impl Iterator<Item = &'a str>,
    at_once: &[String],
) -> Option<&'a str> {
    failed.find(|name| {
        at_once.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == p,
        })
    })
}

/// The decision for `node` (as read before the run) after a run with `verdict`, the streaks
/// counting that run.
pub fn decide(node: &NodeInfo, verdict: &Health, streaks: &Streaks, policy: Policy) -> Decision {
    let leave = Decision::Leave;
    match verdict {
        Health::Inconclusive { what } => leave(format!("inconclusive ({what}): no action")),
        Health::Healthy => {
            if node.drained_by_us() {
                if streaks.passing >= policy.resume_after {
                    Decision::Resume {
                        why: format!(
                            "{} passing run(s); it was drained: {}",
                            streaks.passing,
                            node.reason.as_deref().unwrap_or_default()
                        ),
                    }
                } else {
                    leave(format!(
                        "healthy; {} of {} passing runs before our drain is lifted",
                        streaks.passing, policy.resume_after
                    ))
                }
            } else if let Some(theirs) = node.foreign_reason() {
                leave(format!(
                    "healthy; held by someone else ({theirs}): left alone"
                ))
            } else {
                leave("healthy".into())
            }
        }
        Health::Failing { .. } => {
            let Some(reason) = reason(verdict) else {
                return leave("failing, but no reason could be made: no action".into());
            };
            if let Some(theirs) = node.foreign_reason() {
                leave(format!(
                    "failing ({reason}); held by someone else ({theirs}): left alone"
                ))
            } else if streaks.failing < policy.drain_after {
                leave(format!(
                    "failing ({reason}); {} of {} failing runs before a drain",
                    streaks.failing, policy.drain_after
                ))
            } else if node.drained_by_us() && node.reason.as_deref() == Some(reason.as_str()) {
                leave(format!("still failing, still drained ({reason})"))
            } else {
                Decision::Drain {
                    why: format!("{} failing run(s) in a row", streaks.failing),
                    reason,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
