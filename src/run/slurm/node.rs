//! What Slurm says of a node and of its partitions, read from `scontrol show node` and `sinfo`.
//! An answer that cannot be read is an error ("state unknown"), never an empty state: a node
//! read as undrained when it is drained, or a partition read as empty, would steer an action.

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
pub fn parse_node(text: &str, name: &str) -> Result<NodeInfo, String> {
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
        Some(n) if n != name => Err(format!("scontrol answered about node '{n}', not '{name}'")),
        _ => Err(format!(
            "scontrol's answer for '{name}' holds no NodeName= and State= ({} bytes)",
            text.len()
        )),
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

/// The `sinfo -o` format [`parse_partition`] reads: node, state, when its reason was set, reason
/// (last: a reason may hold `|`).
pub const SINFO_FORMAT: &str = "%N|%T|%H|%E";

/// One partition as `sinfo -h -N -p P -o` [`SINFO_FORMAT`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Its name.
    pub name: String,
    /// Its nodes.
    pub nodes: usize,
    /// Its nodes drained by health_check, this one included, as (when the reason was set,
    /// node), in that order: who drained first.
    pub ours: Vec<(String, String)>,
}

impl Partition {
    /// Its nodes other than `me` drained by health_check.
    pub fn ours_besides(&self, me: &str) -> usize {
        self.ours.iter().filter(|(_, n)| n != me).count()
    }

    /// How many of its nodes health_check may hold drained at `max_pct` %: one at least.
    pub fn allowed(&self, max_pct: f64) -> usize {
        ((max_pct / 100.0 * self.nodes as f64).floor() as usize).max(1)
    }

    /// Where `me` stands among health_check's drains (0: the first), if drained by it.
    pub fn rank_of(&self, me: &str) -> Option<usize> {
        self.ours.iter().position(|(_, n)| n == me)
    }
}

/// Parses sinfo's node list of `partition`; `Err` when it is empty, a line cannot be read, or
/// this node (`me`) is not in it: the share drained cannot be known, so nothing is drained.
pub fn parse_partition(text: &str, partition: &str, me: &str) -> Result<Partition, String> {
    let mut nodes = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.splitn(4, '|');
        let (Some(node), Some(state), Some(at), Some(reason)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!(
                "sinfo's line for partition '{partition}' cannot be read: '{}'",
                crate::render::text::terminal_safe(line)
            ));
        };
        let ours = state.contains("drain") && reason.starts_with(REASON_PREFIX);
        nodes.insert(node.trim().to_string(), ours.then(|| at.trim().to_string()));
    }
    if nodes.is_empty() {
        return Err(format!("sinfo listed no node in partition '{partition}'"));
    }
    if !nodes.contains_key(me) {
        return Err(format!(
            "sinfo's list of partition '{partition}' does not hold this node ('{me}')"
        ));
    }
    let mut ours: Vec<(String, String)> = nodes
        .iter()
        .filter_map(|(n, at)| at.clone().map(|at| (at, n.clone())))
        .collect();
    ours.sort();
    Ok(Partition {
        name: partition.to_string(),
        nodes: nodes.len(),
        ours,
    })
}

#[cfg(test)]
mod tests;
