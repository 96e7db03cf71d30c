//! The drain cap, decided before anyone drains: no more than `--max-drained-pct` of a partition
//! is ever drained by health_check, at any moment, however many of its nodes fail at once.
//!
//! A drain takes a node out of scheduling the moment it lands, so draining first and lifting the
//! drains past the cap afterwards (what health_check did before) kept a whole partition out of
//! service for seconds. Instead, a node that wants to drain takes a ticket, as in Lamport's
//! bakery: it marks its intent in its own `Comment` (a field scheduling never reads; any text an
//! administrator keeps there stays), first as "choosing", then with a ticket one above every
//! ticket it sees; it waits until no other node of its partitions is still choosing, reads every
//! node's mark again in one `sinfo` per partition, and drains only when the drains of
//! health_check already there and the tickets ahead of its own (ticket, then name: an order every
//! node computes alike) leave room under the cap. Whoever reads later sees the earlier's mark, so
//! two nodes never both count themselves inside the cap. A mark is cleared once its node drained,
//! decided not to, passed or resumed; a mark older than [`LIVE`] counts for nothing. A node that
//! Slurm says is not responding still counts: slurmctld marks it so after one missed ping, while
//! the node's own run may still reach the controller and drain (a hung file system that stalls
//! slurmd fails many nodes at once, each of them "not responding"). Anything that cannot be
//! read, written or waited for in time means no drain (fail closed), and [`CapError`] says which.

use super::node::{ControllerError, PartNode, Partition};
use std::time::{Duration, Instant};

/// How long a mark counts: a run of health_check never lasts this long (slurmd kills its
/// HealthCheckProgram at 60 s); a node that died with its mark up stops blocking others then.
pub const LIVE: Duration = Duration::from_secs(300);

/// How long a node waits for others still choosing their ticket (one read and one write each;
/// a controller serving a storm of them may take seconds).
pub const CHOOSING_WAIT: Duration = Duration::from_secs(15);

/// How soon it looks again while it waits, at first; each look after waits twice as long, up
/// to [`POLL_MAX`]: every waiting node reads its whole partition each time, and a storm of
/// hundreds of them polling every 100 ms would be thousands of reads a second on the controller.
pub const POLL: Duration = Duration::from_millis(100);

/// The longest pause between two looks.
pub const POLL_MAX: Duration = Duration::from_secs(1);

/// The pause before look `n` (from 0) of node `me`: doubling from [`POLL`] to [`POLL_MAX`],
/// less up to a quarter for this node (nodes that started together do not read together).
fn pause(me: &str, n: u32) -> Duration {
    let full = POLL.saturating_mul(1 << n.min(4)).min(POLL_MAX);
    let spread = me
        .bytes()
        .fold(n, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 25;
    full - full * spread / 100
}

/// The mark's prefix in a node's comment.
const MARK: &str = "health_check-cap:";

/// A node's mark of intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Choosing its ticket.
    Choosing {
        /// When it was set, Unix seconds.
        at: u64,
    },
    /// Holding a ticket.
    Ticket {
        /// The ticket.
        ticket: u64,
        /// When it was set, Unix seconds.
        at: u64,
    },
}

impl Mark {
    /// The mark as it is written in a comment.
    pub fn text(&self) -> String {
        match self {
            Mark::Choosing { at } => format!("{MARK}choosing@{at}"),
            Mark::Ticket { ticket, at } => format!("{MARK}{ticket}@{at}"),
        }
    }

    fn at(&self) -> u64 {
        match self {
            Mark::Choosing { at } | Mark::Ticket { at, .. } => *at,
        }
    }

    /// The mark in `comment`, if any.
    pub fn of(comment: &str) -> Option<Mark> {
        // Words as `with_mark` writes them, apart by one space (as `without_mark` reads them).
        let word = comment.split(' ').find_map(|w| w.strip_prefix(MARK))?;
        let word = word.trim_end();
        let (what, at) = word.split_once('@')?;
        let at = at.parse().ok()?;
        match what {
            "choosing" => Some(Mark::Choosing { at }),
            t => Some(Mark::Ticket {
                ticket: t.parse().ok()?,
                at,
            }),
        }
    }
}

/// `comment` without a mark of ours (an administrator's text kept as written, its spacing too).
pub fn without_mark(comment: &str) -> String {
    comment
        .split(' ')
        .filter(|w| !w.starts_with(MARK))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `comment` with `mark` in place of any mark of ours.
pub fn with_mark(comment: &str, mark: Mark) -> String {
    let kept = without_mark(comment);
    if kept.is_empty() {
        mark.text()
    } else {
        format!("{kept} {}", mark.text())
    }
}

/// Why a node may not drain now.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapError {
    /// The cap is reached: drains of health_check, and tickets ahead of this node's.
    #[error(
        "{ours} of {nodes} nodes of partition '{partition}' are drained by health_check already \
         and {ahead} more are ahead of this one to drain; --max-drained-pct {pct} allows \
         {allowed}: not draining, look for a cause they share (held back by the cap)"
    )]
    Reached {
        /// The partition.
        partition: String,
        /// Its nodes.
        nodes: usize,
        /// Its nodes drained by health_check, this one aside.
        ours: usize,
        /// Nodes whose tickets come before this one's.
        ahead: usize,
        /// How many it allows.
        allowed: usize,
        /// The cap.
        pct: f64,
    },
    /// The partitions or the marks cannot be read or written (a controller that does not
    /// answer, an answer that cannot be read): the state is unknown, so nothing is drained.
    #[error("the cap cannot be read: {0}: not draining (fail closed)")]
    Unknown(ControllerError),
    /// Other nodes were still choosing their tickets when the wait ran out.
    #[error("{0} other node(s) still choosing to drain after {1:?}: not draining this run")]
    Busy(usize, Duration),
}

/// What the cap needs of Slurm: each partition's nodes as they are now, and a node's comment
/// written.
pub trait Marks {
    /// The partition's nodes (one `sinfo` call).
    fn partition(&self, name: &str) -> Result<Partition, ControllerError>;
    /// Sets `node`'s comment.
    fn set_comment(&self, node: &str, comment: &str) -> Result<(), ControllerError>;
    /// Now, Unix seconds.
    fn now(&self) -> u64;
}

/// A mark that still counts: set within [`LIVE`] of now, whatever Slurm says of its node (a
/// node it calls down or not responding may still be running health_check and draining).
fn live(n: &PartNode, now: u64) -> Option<Mark> {
    let mark = Mark::of(&n.comment)?;
    (now.abs_diff(mark.at()) < LIVE.as_secs()).then_some(mark)
}

fn read_all(slurm: &dyn Marks, partitions: &[String]) -> Result<Vec<Partition>, CapError> {
    partitions
        .iter()
        .map(|p| slurm.partition(p).map_err(CapError::Unknown))
        .collect()
}

/// This node's comment as the partitions show it (the first that lists it).
fn comment_of(views: &[Partition], me: &str) -> String {
    views
        .iter()
        .find_map(|p| p.node(me))
        .map(|n| n.comment.clone())
        .unwrap_or_default()
}

/// The first partition with no room for one more drain by health_check (its drains and, with
/// `ticket`, the tickets ahead of it), as the error saying so.
fn no_room(
    views: &[Partition],
    me: &str,
    ticket: Option<u64>,
    pct: f64,
    now: u64,
) -> Option<CapError> {
    views.iter().find_map(|p| {
        let ours = p.ours_besides(me);
        let ahead = ticket.map_or(0, |mine| {
            p.nodes
                .iter()
                .filter(|n| n.name != me && !n.drained_by_us())
                .filter(|n| match live(n, now) {
                    Some(Mark::Ticket { ticket, .. }) => (ticket, n.name.as_str()) < (mine, me),
                    _ => false,
                })
                .count()
        });
        let allowed = p.allowed(pct);
        (ours + ahead >= allowed).then(|| CapError::Reached {
            partition: p.name.clone(),
            nodes: p.nodes.len(),
            ours,
            ahead,
            allowed,
            pct,
        })
    })
}

/// Takes this node's turn to drain: `Ok` when it may drain now (its ticket stays up until the
/// drain has landed: [`release`]), `Err` why not (its mark is cleared then).
pub fn claim(
    slurm: &dyn Marks,
    me: &str,
    partitions: &[String],
    pct: f64,
    wait: Duration,
) -> Result<(), CapError> {
    let result = take_turn(slurm, me, partitions, pct, wait);
    if result.is_err() {
        let _ = release(slurm, me, partitions);
    }
    result
}

fn take_turn(
    slurm: &dyn Marks,
    me: &str,
    partitions: &[String],
    pct: f64,
    wait: Duration,
) -> Result<(), CapError> {
    let views = read_all(slurm, partitions)?;
    // Already full with drains: no mark is needed to say so.
    if let Some(e) = no_room(&views, me, None, pct, slurm.now()) {
        return Err(e);
    }
    let comment = comment_of(&views, me);
    let choosing = Mark::Choosing { at: slurm.now() };
    slurm
        .set_comment(me, &with_mark(&comment, choosing))
        .map_err(CapError::Unknown)?;
    let views = read_all(slurm, partitions)?;
    let now = slurm.now();
    let highest = views
        .iter()
        .flat_map(|p| &p.nodes)
        .filter(|n| n.name != me)
        .filter_map(|n| match live(n, now) {
            Some(Mark::Ticket { ticket, .. }) => Some(ticket),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let ticket = highest + 1;
    slurm
        .set_comment(
            me,
            &with_mark(
                &comment,
                Mark::Ticket {
                    ticket,
                    at: slurm.now(),
                },
            ),
        )
        .map_err(CapError::Unknown)?;
    // Bakery's wait: for each node that was choosing once this ticket was up, until it is seen
    // choosing no longer. A node that starts choosing later sees this ticket and takes a higher
    // one, so it is not waited for: a stream of new nodes cannot hold this one back.
    let started = Instant::now();
    let mut waiting: Option<std::collections::BTreeSet<String>> = None;
    let mut looks = 0;
    loop {
        let views = read_all(slurm, partitions)?;
        let now = slurm.now();
        let choosing: std::collections::BTreeSet<String> = views
            .iter()
            .flat_map(|p| &p.nodes)
            .filter(|n| n.name != me && matches!(live(n, now), Some(Mark::Choosing { .. })))
            .map(|n| n.name.clone())
            .collect();
        let pending = match waiting.take() {
            None => choosing,
            Some(before) => before.intersection(&choosing).cloned().collect(),
        };
        if pending.is_empty() {
            return match no_room(&views, me, Some(ticket), pct, now) {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        if started.elapsed() >= wait {
            return Err(CapError::Busy(pending.len(), wait));
        }
        waiting = Some(pending);
        std::thread::sleep(pause(me, looks).min(wait.saturating_sub(started.elapsed())));
        looks += 1;
    }
}

/// Clears this node's mark (an administrator's comment kept); `Err` says why it could not be.
pub fn release(slurm: &dyn Marks, me: &str, partitions: &[String]) -> Result<(), ControllerError> {
    let views: Vec<Partition> = partitions
        .iter()
        .map(|p| slurm.partition(p))
        .collect::<Result<_, _>>()?;
    let comment = comment_of(&views, me);
    if Mark::of(&comment).is_none() {
        return Ok(());
    }
    slurm.set_comment(me, &without_mark(&comment))
}

#[cfg(test)]
mod tests;
