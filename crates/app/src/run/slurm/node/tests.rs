//! Tests of `node.rs`.

/// An action decided on one read may be taken on a later read only while the drain and
/// its reason are as they were; a job starting (IDLE to MIXED) does not matter.
#[test]
fn an_action_holds_only_while_the_drain_and_its_reason_are_unchanged() {
    let n = |state: &str, reason: Option<&str>| NodeInfo {
        name: "n1".into(),
        state: state.into(),
        reason: reason.map(str::to_string),
        partitions: Vec::new(),
        comment: None,
    };
    let ours = Some("health_check: x: check failed");
    assert!(n("IDLE", None).holds_as(&n("MIXED", None)));
    assert!(n("IDLE+DRAIN", ours).holds_as(&n("MIXED+DRAIN", ours)));
    // An administrator drained it meanwhile.
    assert!(!n("IDLE", None).holds_as(&n("IDLE+DRAIN", Some("admin: disk"))));
    // Someone resumed it, and the reason is gone.
    assert!(!n("IDLE+DRAIN", ours).holds_as(&n("IDLE", None)));
    // Drained still, but for another reason now.
    assert!(!n("IDLE+DRAIN", ours).holds_as(&n("IDLE+DRAIN", Some("admin: disk"))));
    // Resumed, the old reason left behind.
    assert!(!n("IDLE+DRAIN", ours).holds_as(&n("IDLE", ours)));
}

/// Every word Slurm uses for a drain counts as drained (scontrol's `+DRAIN` flag, and the
/// `DRAINED` / `DRAINING` states some versions print).
#[test]
fn every_word_for_a_drain_is_drained() {
    for (state, drained) in [
        ("IDLE+DRAIN", true),
        ("DRAINED", true),
        ("DRAINING", true),
        ("MIXED+DRAIN", true),
        ("IDLE", false),
        ("DOWN", false),
        ("DRAINS", false),
    ] {
        let n = NodeInfo {
            name: "n1".into(),
            state: state.into(),
            reason: None,
            partitions: Vec::new(),
            comment: None,
        };
        assert_eq!(n.drained(), drained, "{state}");
    }
}

/// slurmd's word and the controller's read must agree before a run acts on the node.
#[test]
fn slurmds_word_on_the_node_must_agree_with_the_controllers() {
    let node = |state: &str| NodeInfo {
        name: "n1".into(),
        state: state.into(),
        reason: None,
        partitions: Vec::new(),
        comment: None,
    };
    for (state, out) in [
        ("IDLE", false),
        ("MIXED", false),
        ("ALLOCATED", false),
        ("IDLE+DRAIN", true),
        ("MIXED+DRAIN", true),
        ("DOWN", true),
        ("IDLE+FAIL", true),
        ("IDLE+MAINT", true),
        ("IDLE+RESERVED", false),
    ] {
        let n = node(state);
        assert_eq!(n.out_of_service(), out, "{state}");
        let (agrees, differs) = if out { ("no", "yes") } else { ("yes", "no") };
        assert_eq!(n.agrees_with_slurmd(Some(agrees)), Ok(()), "{state}");
        let e = n.agrees_with_slurmd(Some(differs)).unwrap_err();
        assert!(e.contains(state) && e.contains(differs), "{e}");
        // Unset (before registration, older slurmd) or a word it does not know: the read
        // alone decides.
        assert_eq!(n.agrees_with_slurmd(None), Ok(()));
        assert_eq!(n.agrees_with_slurmd(Some("")), Ok(()));
    }
}

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
    // Only a trailing `[user@time]` is Slurm's: a reason that holds " [" itself stays whole.
    let bracket = parse_node(
        "NodeName=n1 State=IDLE+DRAIN\n   Reason=admin: disk [bay 3 of 4\n",
        "n1",
    )
    .unwrap();
    assert_eq!(bracket.reason.as_deref(), Some("admin: disk [bay 3 of 4"));
    // A comment that reads like a state does not hide the node's own.
    let commented = parse_node(
        "NodeName=n1 State=IDLE+DRAIN\n   Partitions=debug\n   Comment=done State=IDLE \
         Partitions=x\n",
        "n1",
    )
    .unwrap();
    assert!(commented.drained());
    assert_eq!(commented.partitions, ["debug"]);
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
        assert!(
            matches!(e, ControllerError::Unreadable(ref m) if m.contains(why)),
            "{text:?}: {e}"
        );
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
    let text = "n1\x1fidle\x1f(null)\x1fnone\n\
                n2\x1fdrained\x1fDIMM | ordered\x1fhealth_check: errors.edac:mc0: check failed\n\
                n3\x1fdraining\x1f(null)\x1fadmin: DIMM | B2\nn4\x1fmixed\x1f(null)\x1fnone\n";
    let p = parse_partition(text, "debug", "n1").unwrap();
    assert_eq!(p.nodes.len(), 4);
    assert!(p.nodes[1].drained_by_us());
    assert_eq!(p.nodes[1].comment, "DIMM | ordered");
    assert_eq!(p.nodes[2].reason, "admin: DIMM | B2");
    assert!(!p.nodes[2].drained_by_us());
    assert_eq!(p.ours_besides("n1"), 1);
    // Our own drain does not count against us.
    assert_eq!(p.ours_besides("n2"), 0);
    assert_eq!(p.allowed(25.0), 1);
    assert_eq!(p.allowed(10.0), 1);
    assert_eq!(p.allowed(50.0), 2);
    assert_eq!(p.allowed(100.0), 4);
    for (text, why) in [
        ("", "no node"),
        ("\n", "no node"),
        ("n2\x1fidle\x1f(null)\x1fnone\n", "does not hold this node"),
        // A line without a separator after a whole record is the rest of its reason (below).
        (
            "n1\x1fidle\x1f(null)\x1fnone\ngarbage\x1f\n",
            "cannot be read",
        ),
        ("n1|idle|Unknown|none\n", "cannot be read"),
    ] {
        let e = parse_partition(text, "debug", "n1").unwrap_err();
        assert!(
            matches!(e, ControllerError::Unreadable(ref m) if m.contains(why)),
            "{text:?}: {e}"
        );
    }
}

#[test]
fn a_drain_of_ours_counts_whatever_else_the_node_is() {
    // sinfo's StateComplete: the base state and every flag. StateLong said `reboot` for a node
    // drained and waiting for an administrator's reboot, and the cap lost count of it.
    let ours = "health_check: memory.peak: check failed";
    let drained = [
        "idle+drain",
        "mixed+drain",
        "idle+drain+reboot_requested",
        "down+drain+reboot_issued",
        "down+drain+not_responding",
        "idle+drain+maint",
        "drained",
        "draining",
        "drained*",
    ];
    let not = [
        "idle",
        "down+not_responding",
        "idle+reboot_requested",
        "mixed+maint",
    ];
    for (state, want) in drained
        .iter()
        .map(|s| (s, true))
        .chain(not.iter().map(|s| (s, false)))
    {
        let text = format!("n1\x1fidle\x1f(null)\x1fnone\nn2\x1f{state}\x1f(null)\x1f{ours}\n");
        let p = parse_partition(&text, "debug", "n1").unwrap();
        assert_eq!(p.nodes[1].drained_by_us(), want, "{state}");
        assert_eq!(p.ours_besides("n1"), usize::from(want), "{state}");
    }
}

#[test]
fn a_reason_or_a_comment_over_several_lines_stays_in_its_record() {
    // Slurm takes multi-line reasons and sinfo prints them as given: one admin's reason must
    // not make the partition unreadable (no node in it could drain then).
    let text = "n1\x1fidle\x1f(null)\x1fnone\n\
                n2\x1fidle+drain\x1f(null)\x1fadmin: fan\nreplaced, see ticket\n\
                n3\x1fidle\x1fline one\nline two\x1fnone\n\
                n4\x1fidle+drain\x1f(null)\x1fhealth_check: x: check failed\n";
    let p = parse_partition(text, "debug", "n1").unwrap();
    let names: Vec<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["n1", "n2", "n3", "n4"]);
    assert_eq!(p.nodes[1].reason, "admin: fan\nreplaced, see ticket");
    assert_eq!(p.nodes[2].comment, "line one\nline two");
    assert_eq!(p.ours_besides("n1"), 1);
    // Lines that are no record are still unreadable, first or last.
    for text in [
        "garbage\nn1\x1fidle\x1f(null)\x1fnone\n",
        "n1\x1fidle\x1f(null)\x1fnone\nn2\x1fidle\n",
    ] {
        let e = parse_partition(text, "debug", "n1").unwrap_err();
        assert!(
            matches!(e, ControllerError::Unreadable(ref m) if m.contains("cannot be read")),
            "{text:?}: {e}"
        );
    }
}

#[test]
fn the_cap_of_a_whole_share_is_whole() {
    let of = |n: usize| Partition {
        name: "p".into(),
        nodes: (0..n)
            .map(|i| PartNode {
                name: format!("n{i}"),
                state: "idle".into(),
                comment: String::new(),
                reason: String::new(),
            })
            .collect(),
    };
    // 0.29 x 100 is 28.999... in floating point: the cap was one node short.
    assert_eq!(of(100).allowed(29.0), 29);
    assert_eq!(of(100).allowed(57.0), 57);
    assert_eq!(of(50).allowed(58.0), 29);
    assert_eq!(of(3).allowed(33.3), 1);
    assert_eq!(of(3).allowed(33.34), 1);
    assert_eq!(of(3).allowed(66.67), 2);
    assert_eq!(of(7).allowed(0.0), 1);
    for n in 1..=400 {
        for pct in 1..=100 {
            assert_eq!(
                of(n).allowed(f64::from(pct)),
                (pct as usize * n / 100).max(1)
            );
        }
    }
}

#[test]
fn a_node_listed_twice_counts_once_as_its_last_line_says() {
    let text = "n2\x1fidle\x1f(null)\x1fnone\n\
                n1\x1fidle\x1f(null)\x1fnone\n\
                n2\x1fdrained\x1f(null)\x1fhealth_check: errors.edac: check failed\n\
                n3\x1fidle\x1f(null)\x1fnone\n";
    let p = parse_partition(text, "debug", "n1").unwrap();
    let names: Vec<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["n1", "n2", "n3"]);
    assert_eq!(p.node("n2").unwrap().state, "drained");
    assert_eq!(p.ours_besides("n1"), 1);
    assert_eq!(p.allowed(100.0), 3);
}

/// The reading as the earlier one made it (a tree by name, the last line winning), kept as the
/// property test's reference: the order and allocation changed, never what is read. Records are
/// gathered field by field: a line's first piece continues the field before it when the record
/// is not whole, or when the line has no separator (the rest of a reason).
fn partition_as_a_tree(text: &str, me: &str) -> Option<Vec<(String, String, String, String)>> {
    let mut records: Vec<Vec<String>> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let pieces: Vec<&str> = line.split(SINFO_SEPARATOR).collect();
        match records.last_mut() {
            Some(r) if r.len() < 4 || pieces.len() == 1 => {
                let last = r.last_mut().unwrap();
                last.push('\n');
                last.push_str(pieces[0]);
                r.extend(pieces[1..].iter().map(|p| p.to_string()));
            }
            _ => records.push(pieces.iter().map(|p| p.to_string()).collect()),
        }
    }
    let mut nodes = std::collections::BTreeMap::new();
    for r in &records {
        if r.len() < 4 || r[0].contains('\n') || r[1].contains('\n') {
            return None;
        }
        let reason = r[3..].join(&SINFO_SEPARATOR.to_string());
        let f = [r[0].as_str(), r[1].as_str(), r[2].as_str(), reason.as_str()];
        let unset = |v: &str| {
            let v = v.trim();
            if v == "(null)" || v == "none" { "" } else { v }.to_string()
        };
        let name = f[0].trim().to_string();
        let fields = (
            name.clone(),
            f[1].trim().to_string(),
            unset(f[2]),
            unset(f[3]),
        );
        nodes.insert(name, fields);
    }
    (!nodes.is_empty() && nodes.contains_key(me)).then(|| nodes.into_values().collect())
}

use proptest::prelude::*;

proptest::proptest! {
    /// Generated sinfo answers (names repeated, padded, fields unset or not, lines that cannot
    /// be read, any text): never a panic, and the same nodes as the reference, in name order.
    #[test]
    fn a_partition_is_read_as_the_reference_reads_it(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                4 => (
                    proptest::sample::select(vec!["n1", "n2", " n2", "n10", "", "n1 "]),
                    proptest::sample::select(vec!["idle", "drained", " mixed ", ""]),
                    proptest::sample::select(vec!["(null)", "none", "DIMM", " x "]),
                    proptest::sample::select(vec!["none", "health_check: a", "admin", ""]),
                )
                    .prop_map(|(n, s, c, r)| format!("{n}\x1f{s}\x1f{c}\x1f{r}")),
                1 => ".{0,12}",
            ],
            0..12,
        ),
    ) {
        let text = lines.join("\n");
        let ours = parse_partition(&text, "p", "n1").ok().map(|p| {
            p.nodes
                .into_iter()
                .map(|n| (n.name, n.state, n.comment, n.reason))
                .collect::<Vec<_>>()
        });
        proptest::prop_assert_eq!(ours, partition_as_a_tree(&text, "n1"));
    }
}
