//! What Slurm says of a node and of its partitions, read from `scontrol show node` and `sinfo`.
//! An answer that cannot be read is an error ("state unknown"), never an empty state: a node
//! read as undrained when it is drained, or a partition read as empty, would steer an action.

/// Why Slurm's word on a node or a partition could not be had. Callers tell the causes apart: an
/// update that timed out may still have been served (the node is read back), one refused was not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerError {
    /// No answer within `--slurm-timeout` (slurmctld down or too busy).
    #[error("{0} (is slurmctld up?)")]
    Timeout(String),
    /// The command answered no: its exit status and what it said on stderr.
    #[error("'{command}' failed (exit {code}): {stderr}")]
    Refused {
        /// The command line.
        command: String,
        /// Its exit status (-1: killed by a signal).
        code: i32,
        /// Its stderr.
        stderr: String,
    },
    /// The command could not be started (not installed, not executable).
    #[error("{0}")]
    NotRun(String),
    /// An answer that cannot be read as what was asked.
    #[error("{0}")]
    Unreadable(String),
}

/// The prefix of every drain reason of ours; a reason that starts otherwise is somebody else's.
pub const REASON_PREFIX: &str = "health_check:";

/// What `scontrol show node` says of one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// `NodeName=`.
    pub name: String,
    /// `State=`, e.g. `IDLE+DRAIN`, `MIXED`.
    pub state: String,
    /// `Reason=`, without the `[user@time]` Slurm appends.
    pub reason: Option<String>,
    /// `Partitions=`.
    pub partitions: Vec<String>,
    /// `Comment=`, where health_check marks its intent to drain ([`super::cap`]).
    pub comment: Option<String>,
}

impl NodeInfo {
    /// Whether the node is drained or draining.
    pub fn drained(&self) -> bool {
        self.flags()
            .any(|f| f == "DRAIN" || f == "DRAINED" || f == "DRAINING")
    }

    /// Whether its drain is ours.
    pub fn drained_by_us(&self) -> bool {
        self.drained() && self.ours()
    }

    /// Whether its reason is ours (`health_check:`).
    fn ours(&self) -> bool {
        self.reason
            .as_deref()
            .is_some_and(|r| r.starts_with(REASON_PREFIX))
    }

    /// A reason that is not ours (an administrator's, or Slurm's own): it is never overwritten
    /// or lifted.
    pub fn foreign_reason(&self) -> Option<&str> {
        self.reason.as_deref().filter(|_| !self.ours())
    }

    /// Whether jobs run on it.
    pub fn busy(&self) -> bool {
        self.flags()
            .any(|f| f.starts_with("ALLOC") || f == "MIXED" || f == "COMPLETING")
    }

    /// Whether an action decided on `self` may still be taken on `now`: the node is drained
    /// (or not) as it was, for the same reason. Other state words (a job starting) do not matter.
    pub fn holds_as(&self, now: &NodeInfo) -> bool {
        self.drained() == now.drained() && self.reason == now.reason
    }

    /// Whether Slurm holds it out of service: drained or draining, down, failing, or in a
    /// maintenance reservation (what slurmd's `SLURM_NODE_IS_HEALTHY=no` says).
    pub fn out_of_service(&self) -> bool {
        self.flags().any(|f| {
            ["DRAIN", "DOWN", "FAIL", "MAINT"]
                .iter()
                .any(|w| f.starts_with(w))
        })
    }

    /// Whether what slurmd told the program (`SLURM_NODE_IS_HEALTHY`, Slurm 26.05.2 and later:
    /// `yes` in service, `no` out of it; unset before the node registers or on older slurmd)
    /// agrees with this read of the node. Disagreement means the node changed between the two:
    /// a run acts only on a state both agree on.
    pub fn agrees_with_slurmd(&self, is_healthy: Option<&str>) -> Result<(), String> {
        let says = match is_healthy.map(str::trim) {
            Some("yes") => true,
            Some("no") => false,
            _ => return Ok(()),
        };
        if says == self.out_of_service() {
            return Err(format!(
                "slurmd says SLURM_NODE_IS_HEALTHY={}, but the controller says {}: the node is \
                 changing",
                if says { "yes" } else { "no" },
                self.describe()
            ));
        }
        Ok(())
    }

    /// State and reason, for a log line.
    pub fn describe(&self) -> String {
        match &self.reason {
            Some(r) => format!("{} ({r})", self.state),
            None => self.state.clone(),
        }
    }

    fn flags(&self) -> impl Iterator<Item = &str> {
        self.state.split('+').map(str::trim)
    }
}

/// Parses `scontrol show node NAME` (one `Key=Value` per word, `Reason=` to the end of its
/// line); `Err` when the answer is not about `name` or says no state.
pub fn parse_node(text: &str, name: &str) -> Result<NodeInfo, ControllerError> {
    let mut info = NodeInfo::default();
    let (mut named, mut state, mut partitions) = (None, None, None);
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
        if let Some(comment) = line.strip_prefix("Comment=") {
            info.comment = Some(comment.trim().to_string()).filter(|c| c != "(null)");
            continue;
        }
        // Each key's first word only: a `Comment=` or `Extra=` holding "State=IDLE" later on
        // must not hide the node's state.
        for word in line.split_whitespace() {
            if let Some(v) = word.strip_prefix("NodeName=") {
                named.get_or_insert_with(|| v.to_string());
            } else if let Some(v) = word.strip_prefix("State=") {
                state.get_or_insert_with(|| v.to_string());
            } else if let Some(v) = word.strip_prefix("Partitions=") {
                partitions.get_or_insert_with(|| {
                    v.split(',')
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect()
                });
            }
        }
    }
    info.state = state.unwrap_or_default();
    info.partitions = partitions.unwrap_or_default();
    match named {
        Some(n) if n == name && !info.state.is_empty() => {
            info.name = n;
            Ok(info)
        }
        Some(n) if n != name => Err(ControllerError::Unreadable(format!(
            "scontrol answered about node '{n}', not '{name}'"
        ))),
        _ => Err(ControllerError::Unreadable(format!(
            "scontrol's answer for '{name}' holds no NodeName= and State= ({} bytes)",
            text.len()
        ))),
    }
}

/// Checks that `name` is one node's name, as Slurm gives it: letters, digits, `-`, `_` and
/// `.`, not a host list (`n[1-100]`, `a,b`), not the keyword `ALL`, nothing that reads as
/// another `scontrol update` argument.
pub fn check_node_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && !name.starts_with(['-', '.'])
        && !name.eq_ignore_ascii_case("all")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{}' is not the name of one Slurm node (letters, digits, '-', '_' and '.' only)",
            crate::render::text::terminal_safe(name)
        ))
    }
}

/// The `sinfo -O` fields [`parse_partition`] reads, separated by ASCII's unit separator (no
/// name or state holds one; a `|` may be in a comment or a reason, and a newline too): node, its
/// state with every flag (`StateComplete`: `StateLong` names one state, and a drained node
/// waiting for a reboot reads `reboot` there, not `drained`), the node's comment (where
/// health_check marks its intent to drain, [`super::cap`]), reason (last).
pub const SINFO_FIELDS: &str = "NodeList:0\x1f,StateComplete:0\x1f,Comment:0\x1f,Reason:0";

/// The separator of [`SINFO_FIELDS`].
pub const SINFO_SEPARATOR: char = '\x1f';

/// One node of a partition as sinfo lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartNode {
    /// Its name.
    pub name: String,
    /// sinfo's state with its flags (`idle`, `mixed+drain`, `idle+drain+reboot_requested`,
    /// `down+drain+not_responding`, ...).
    pub state: String,
    /// Its comment, empty when unset.
    pub comment: String,
    /// Its reason, empty when none.
    pub reason: String,
}

impl PartNode {
    /// Whether health_check drained it (or is draining it): its DRAIN flag is up, whatever
    /// else it is (rebooting, down, not responding, in maintenance), and the reason is ours.
    pub fn drained_by_us(&self) -> bool {
        let drain = |f: &str| f.get(..5).is_some_and(|w| w.eq_ignore_ascii_case("drain"));
        self.state.split('+').any(drain) && self.reason.starts_with(REASON_PREFIX)
    }
}

/// One partition as `sinfo -h -N -p P -O` [`SINFO_FIELDS`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Its name.
    pub name: String,
    /// Its nodes, by name.
    pub nodes: Vec<PartNode>,
}

impl Partition {
    /// Its nodes other than `me` drained by health_check.
    pub fn ours_besides(&self, me: &str) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.name != me && n.drained_by_us())
            .count()
    }

    /// How many of its nodes health_check may hold drained at `max_pct` %: one at least. The
    /// product first, so that a whole share is whole (29 % of 100 is 29; 0.29 x 100 is
    /// 28.999...), and a rounding error below a millionth of a node is forgiven.
    pub fn allowed(&self, max_pct: f64) -> usize {
        ((max_pct * self.nodes.len() as f64 / 100.0 + 1e-6).floor() as usize).max(1)
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&PartNode> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

/// sinfo's lines as records of four fields. sinfo prints a comment or a reason as it was given,
/// newlines included (Slurm takes multi-line reasons), so a line that does not finish a record's
/// three separators, or one with none after a whole record (the rest of a reason), belongs to
/// the record before it. Blank lines are no record.
fn records(text: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    let seps = |l: &str| l.matches(SINFO_SEPARATOR).count();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    std::iter::from_fn(move || {
        let first = lines.next()?;
        let mut record = std::borrow::Cow::Borrowed(first);
        let mut count = seps(first);
        while let Some(next) = lines.peek() {
            let n = seps(next);
            if count >= 3 && n > 0 {
                break;
            }
            let joined = record.to_mut();
            joined.push('\n');
            joined.push_str(next);
            count += n;
            lines.next();
        }
        Some(record)
    })
}

/// Parses sinfo's node list of `partition`; `Err` when it is empty, a line cannot be read, or
/// this node (`me`) is not in it: the share drained cannot be known, so nothing is drained.
pub fn parse_partition(
    text: &str,
    partition: &str,
    me: &str,
) -> Result<Partition, ControllerError> {
    // A node listed twice counts once, as its last line says. Most nodes have neither comment
    // nor reason: two allocations a line, for partitions of tens of thousands of nodes, read by
    // each node that fails.
    let mut nodes = Vec::new();
    for line in records(text) {
        let line = line.as_ref();
        let unreadable = || {
            ControllerError::Unreadable(format!(
                "sinfo's line for partition '{partition}' cannot be read: '{}'",
                crate::render::text::terminal_safe(line)
            ))
        };
        let mut parts = line.splitn(4, SINFO_SEPARATOR);
        let (Some(node), Some(state), Some(comment), Some(reason)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(unreadable());
        };
        // Only a comment or a reason spans lines: a name or a state that does means lines that
        // are no record.
        if node.contains('\n') || state.contains('\n') {
            return Err(unreadable());
        }
        let unset = |v: &str| {
            let v = v.trim();
            if v == "(null)" || v == "none" {
                String::new()
            } else {
                v.to_string()
            }
        };
        nodes.push(PartNode {
            name: node.trim().to_string(),
            state: state.trim().to_string(),
            comment: unset(comment),
            reason: unset(reason),
        });
    }
    // Last line first, then a stable sort by name: the first of each name is its last line.
    nodes.reverse();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    nodes.dedup_by(|later, first| later.name == first.name);
    if nodes.is_empty() {
        return Err(ControllerError::Unreadable(format!(
            "sinfo listed no node in partition '{partition}'"
        )));
    }
    if nodes.binary_search_by(|n| n.name.as_str().cmp(me)).is_err() {
        return Err(ControllerError::Unreadable(format!(
            "sinfo's list of partition '{partition}' does not hold this node ('{me}')"
        )));
    }
    Ok(Partition {
        name: partition.to_string(),
        nodes,
    })
}

#[cfg(test)]
mod tests;
