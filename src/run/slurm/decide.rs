//! What to do with the node after a run: a pure function of what Slurm said of the node before
//! the run, the run's verdict, the streaks of failing and passing runs, and the policy. No call
//! to Slurm is made here; `mod.rs` carries the decision out on the node as it is read again.

use super::node::{NodeInfo, REASON_PREFIX};
use crate::judge::health::Health;

/// slurmdbd keeps a reason in 255 bytes.
pub const REASON_MAX: usize = 255;

/// The streaks kept between runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Streaks {
    /// Failing runs in a row.
    pub failing: u32,
    /// Passing runs in a row.
    pub passing: u32,
}

impl Streaks {
    /// The streaks after a run with `verdict`: an inconclusive run counts for neither.
    pub fn after(&self, verdict: &Health) -> Streaks {
        match verdict {
            Health::Healthy => Streaks {
                failing: 0,
                passing: self.passing.saturating_add(1),
            },
            Health::Failing { .. } => Streaks {
                failing: self.failing.saturating_add(1),
                passing: 0,
            },
            Health::Inconclusive { .. } => self.clone(),
        }
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
/// `|` (sinfo's field separator here) become `?`.
pub fn reason(h: &Health) -> Option<String> {
    let text = match h {
        Health::Failing {
            what, check: true, ..
        } => format!("{REASON_PREFIX} {what}: check failed"),
        Health::Failing { what, .. } => format!("{REASON_PREFIX} {what}: section failed to run"),
        _ => return None,
    };
    let mut cut: String = text
        .chars()
        .map(|c| if c.is_control() || c == '|' { '?' } else { c })
        .collect();
    while cut.len() > REASON_MAX {
        cut.pop();
    }
    Some(cut)
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
/// system section) is inconclusive about it, not a pass. `judged(what, section)` says whether
/// this run judged that check and it passed (or ran that section).
pub fn for_our_drain(
    node: &NodeInfo,
    verdict: Health,
    judged: impl Fn(&str, bool) -> bool,
) -> Health {
    if verdict != Health::Healthy || !node.drained_by_us() {
        return verdict;
    }
    let reason = node.reason.as_deref().unwrap_or_default();
    match cause_of(reason) {
        Some((what, section)) if judged(what, section) => verdict,
        Some((what, _)) => Health::Inconclusive {
            what: format!("{what}, which drained the node, was not judged by this run"),
        },
        None => Health::Inconclusive {
            what: format!("the drain reason '{reason}' names no check this version knows"),
        },
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
