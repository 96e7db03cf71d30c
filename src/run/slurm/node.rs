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
    let mut named = None;
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
            if let Some(v) = word.strip_prefix("NodeName=") {
                named.get_or_insert_with(|| v.to_string());
            } else if let Some(v) = word.strip_prefix("State=") {
                info.state = v.to_string();
            } else if let Some(v) = word.strip_prefix("Partitions=") {
                info.partitions = v
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect();
            }
        }
    }
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

/// One partition as `sinfo -h -N -p P -o '%N|%T|%E'` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Its name.
    pub name: String,
    /// Its nodes.
    pub nodes: usize,
    /// Its nodes other than this one drained by health_check, sorted.
    pub ours_elsewhere: Vec<String>,
}

/// Parses sinfo's node list of `partition`; `Err` when it is empty, a line cannot be read, or
/// this node (`me`) is not in it: the share drained cannot be known, so nothing is drained.
pub fn parse_partition(text: &str, partition: &str, me: &str) -> Result<Partition, String> {
    let mut nodes = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.splitn(3, '|');
        let (Some(node), Some(state), reason) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!(
                "sinfo's line for partition '{partition}' cannot be read: '{}'",
                crate::render::text::terminal_safe(line)
            ));
        };
        let ours = state.contains("drain") && reason.is_some_and(|r| r.starts_with(REASON_PREFIX));
        nodes.insert(node.trim().to_string(), ours);
    }
    if nodes.is_empty() {
        return Err(format!("sinfo listed no node in partition '{partition}'"));
    }
    if !nodes.contains_key(me) {
        return Err(format!(
            "sinfo's list of partition '{partition}' does not hold this node ('{me}')"
        ));
    }
    Ok(Partition {
        name: partition.to_string(),
        nodes: nodes.len(),
        ours_elsewhere: nodes
            .iter()
            .filter(|(n, ours)| **ours && n.as_str() != me)
            .map(|(n, _)| n.clone())
            .collect(),
    })
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
        let i = parse_node(SHOW, "n1").unwrap();
        assert_eq!(i.state, "IDLE+DRAIN");
        assert_eq!(i.reason.as_deref(), Some("admin: maintenance"));
        assert_eq!(i.foreign_reason(), Some("admin: maintenance"));
        assert_eq!(i.partitions, ["debug", "batch"]);
        assert!(i.drained() && !i.drained_by_us() && !i.busy());
        let ours = parse_node(
            "NodeName=n1\n   State=MIXED+DRAIN\n   Reason=health_check: x: check failed [root@t]\n",
            "n1",
        )
        .unwrap();
        assert!(ours.drained_by_us() && ours.busy() && ours.foreign_reason().is_none());
        let idle = parse_node("NodeName=n1 State=IDLE\n   Reason=(null)\n", "n1").unwrap();
        assert_eq!(idle.reason, None);
        assert!(!idle.drained());
    }

    #[test]
    fn an_answer_that_cannot_be_read_is_unknown_not_empty() {
        // A lossily decoded byte in a reason keeps the rest readable, and the reason foreign.
        let odd = parse_node(
            "NodeName=n1 State=IDLE+DRAIN\n   Reason=caf\u{fffd} DIMM B2 [root@t]\n",
            "n1",
        )
        .unwrap();
        assert_eq!(odd.foreign_reason(), Some("caf\u{fffd} DIMM B2"));
        for (text, why) in [
            ("", "holds no NodeName"),
            ("Node n1 not found\n", "holds no NodeName"),
            ("NodeName=n1 Arch=x86_64\n", "holds no NodeName"),
            ("NodeName=n2 State=IDLE\n", "about node 'n2'"),
        ] {
            let e = parse_node(text, "n1").unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_node_name_is_one_name_not_a_list_or_an_argument() {
        for good in ["n1", "gpu-node-017", "rack3.n12", "node_a"] {
            assert_eq!(check_node_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "n[1-100]",
            "ALL",
            "all",
            "n1 State=RESUME",
            "n1,n2",
            "-n1",
            "n1\nState=DRAIN",
            "n1=x",
        ] {
            assert!(check_node_name(bad).is_err(), "{bad:?}");
        }
        assert!(
            check_node_name("n1\u{1b}[2J")
                .unwrap_err()
                .contains("\\u{1b}")
        );
    }

    #[test]
    fn a_partition_is_counted_and_an_odd_answer_is_unknown() {
        let text = "n1|idle|none\nn2|drained|health_check: errors.edac:mc0: check failed\n\
                    n3|draining|admin: DIMM\nn4|mixed|none\n";
        let p = parse_partition(text, "debug", "n1").unwrap();
        assert_eq!((p.nodes, p.ours_elsewhere.clone()), (4, vec!["n2".into()]));
        // Our own drain does not count against us.
        let p = parse_partition(text, "debug", "n2").unwrap();
        assert!(p.ours_elsewhere.is_empty());
        for (text, why) in [
            ("", "no node"),
            ("\n", "no node"),
            ("n2|idle|none\n", "does not hold this node"),
            ("n1|idle|none\ngarbage\n", "cannot be read"),
        ] {
            let e = parse_partition(text, "debug", "n1").unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
