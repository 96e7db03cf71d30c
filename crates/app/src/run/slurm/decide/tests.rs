//! Tests of `decide.rs`.

use super::*;

fn node(state: &str, reason: Option<&str>) -> NodeInfo {
    NodeInfo {
        name: "n1".into(),
        state: state.into(),
        reason: reason.map(str::to_string),
        partitions: vec!["debug".into()],
        comment: None,
    }
}

fn failing(what: &str) -> Health {
    Health::Failing {
        what: what.into(),
        check: true,
        count: 1,
    }
}

const POLICY: Policy = Policy {
    drain_after: 2,
    resume_after: 2,
};

fn streaks(failing: u32, passing: u32) -> Streaks {
    Streaks {
        failing,
        passing,
        ..Streaks::default()
    }
}

#[test]
fn a_check_named_to_drain_at_once_is_found_by_name_or_prefix() {
    let at_once = vec![
        "node.*".to_string(),
        "errors.memory_uncorrected".to_string(),
    ];
    let failed = [
        "sleepbench.calls_per_thread",
        "node.check_fs_mount_rw:/scratch",
    ];
    assert_eq!(
        drains_at_once(failed.into_iter(), &at_once),
        Some("node.check_fs_mount_rw:/scratch")
    );
    assert_eq!(
        drains_at_once(["errors.memory_uncorrected"].into_iter(), &at_once),
        Some("errors.memory_uncorrected")
    );
    // A name is the whole name; only `*` makes a prefix.
    assert_eq!(
        drains_at_once(["errors.memory_uncorrected_rate"].into_iter(), &at_once),
        None
    );
    assert_eq!(drains_at_once(["node"].into_iter(), &at_once), None);
    assert_eq!(drains_at_once(failed.into_iter(), &[]), None);
}

#[test]
fn a_reason_is_stable_bounded_one_line_and_ours() {
    let r = reason(&failing("sleepbench.calls_per_thread")).unwrap();
    assert_eq!(r, "health_check: sleepbench.calls_per_thread: check failed");
    assert!(reason(&failing(&"x".repeat(400))).unwrap().len() <= REASON_MAX);
    // A reason of exactly slurmdbd's 255 bytes is kept whole; one more byte cuts the name, not
    // the ending, and the cut says so.
    let fixed = "health_check: ".len() + ": check failed".len();
    let exact = reason(&failing(&"y".repeat(REASON_MAX - fixed))).unwrap();
    assert_eq!(exact.len(), REASON_MAX);
    assert!(exact.ends_with("y: check failed"), "{exact}");
    let over = reason(&failing(&"y".repeat(REASON_MAX - fixed + 1))).unwrap();
    assert_eq!(over.len(), REASON_MAX);
    assert!(over.ends_with("y~: check failed"), "{over}");
    assert_eq!(cause_of(&over).map(|c| c.1), Some(false));
    // Cut on a character, never inside one; a section's ending kept too.
    for n in 230..250 {
        let name = format!("node.check_file_test:/{}", "é".repeat(n));
        let r = reason(&failing(&name)).unwrap();
        assert!(r.len() <= REASON_MAX, "{n}");
        assert!(r.ends_with("~: check failed"), "{r}");
        let section = Health::Failing {
            what: name,
            check: false,
            count: 1,
        };
        let r = reason(&section).unwrap();
        assert!(
            r.len() <= REASON_MAX && r.ends_with("~: section failed to run"),
            "{r}"
        );
    }
    assert_eq!(
        reason(&failing("errors.nic:eth0\nn2|drained|health_check: x")).unwrap(),
        "health_check: errors.nic:eth0?n2?drained?health_check: x: check failed"
    );
    let section = Health::Failing {
        what: "memory".into(),
        check: false,
        count: 1,
    };
    assert_eq!(
        reason(&section).unwrap(),
        "health_check: memory: section failed to run"
    );
    assert_eq!(reason(&Health::Healthy), None);
}

/// A healthy run lifts our drain only when it judged what drained the node.
#[test]
fn a_run_that_did_not_judge_the_cause_does_not_count_toward_a_resume() {
    let ours = node(
        "MIXED+DRAIN",
        Some("health_check: memory.peak_vs_theoretical: check failed"),
    );
    let judged_it = |c: &Cause| *c == Cause::Check("memory.peak_vs_theoretical".into());
    assert_eq!(
        for_our_drain(&ours, None, Health::Healthy, judged_it),
        Health::Healthy
    );
    let narrower = for_our_drain(&ours, None, Health::Healthy, |_| false);
    assert!(
        matches!(&narrower, Health::Inconclusive { what } if what.contains("memory.peak_vs_theoretical, which drained the node")),
        "{narrower:?}"
    );
    // Its streak does not move, so no resume follows.
    assert_eq!(streaks(0, 0).after(&narrower), streaks(0, 0));
    // A section that failed to run: judged when it ran.
    let section = node(
        "IDLE+DRAIN",
        Some("health_check: memory: section failed to run"),
    );
    assert_eq!(
        cause_of(section.reason.as_deref().unwrap()),
        Some(("memory", true))
    );
    assert_eq!(
        for_our_drain(&section, None, Health::Healthy, |c| *c
            == Cause::Section("memory".into())),
        Health::Healthy
    );
    // Not ours, or not healthy: as it was.
    let admin = node("IDLE+DRAIN", Some("admin: x"));
    assert_eq!(
        for_our_drain(&admin, None, Health::Healthy, |_| false),
        Health::Healthy
    );
    let fail = failing("a.b");
    assert_eq!(for_our_drain(&ours, None, fail.clone(), |_| false), fail);
    // A reason of ours this version cannot read back, and no state of it: never resumes by
    // itself.
    let odd = node("IDLE+DRAIN", Some("health_check: something else"));
    assert!(matches!(
        for_our_drain(&odd, None, Health::Healthy, |_| true),
        Health::Inconclusive { .. }
    ));
}

/// What we drained and why is kept in our own state: a reason Slurm cut (an NHC subject of 277
/// characters) and a drain for an overrun ("the run") still come back.
#[test]
fn every_drain_of_ours_comes_back_from_our_own_state() {
    let long = failing(&format!("node.check_fs_mount_rw:/{}", "x".repeat(277)));
    let given = reason(&long).unwrap();
    assert_eq!(given.len(), REASON_MAX);
    let kept = OurDrain {
        reason: given.clone(),
        cause: Cause::of(&long).unwrap(),
    };
    let state = Streaks {
        drained: Some(kept.clone()),
        ..Streaks::default()
    };
    // Slurm kept less of it still: the drain is ours, and its cause known.
    let cut = node("IDLE+DRAIN", Some(&given[..200]));
    assert_eq!(state.our_drain_on(&cut), Some(&kept));
    assert_eq!(
        for_our_drain(&cut, state.our_drain_on(&cut), Health::Healthy, |c| *c
            == kept.cause),
        Health::Healthy
    );
    // Without the state (a diskless node after a reboot), the reason as we gave it still names
    // the check's kind and rule: its cut name is judged (`judged` in mod.rs matches it by
    // rule), and the drain comes back.
    let whole = node("IDLE+DRAIN", Some(&given));
    assert_eq!(
        for_our_drain(&whole, None, Health::Healthy, |c| matches!(
            c,
            Cause::Check(w) if w.starts_with("node.check_fs_mount_rw:/x") && w.ends_with('~')
        )),
        Health::Healthy
    );
    // A reason cut shorter still (by another tool) names nothing this version can judge.
    assert!(matches!(
        for_our_drain(&cut, None, Health::Healthy, |_| true),
        Health::Inconclusive { .. }
    ));
    // An overrun: a run that ends within its deadline judges it.
    let overrun = Health::Failing {
        what: OVERRUN.into(),
        check: false,
        count: 1,
    };
    assert_eq!(Cause::of(&overrun), Some(Cause::Overrun));
    let drained = node("IDLE+DRAIN", Some(&reason(&overrun).unwrap()));
    assert_eq!(
        for_our_drain(&drained, None, Health::Healthy, |c| *c == Cause::Overrun),
        Health::Healthy
    );
    // Another reason on the node now (an administrator's): not ours, whatever the state says.
    let admin = node("IDLE+DRAIN", Some("admin: reseat the DIMM"));
    assert_eq!(state.our_drain_on(&admin), None);
}

#[test]
fn streaks_count_pass_and_fail_and_an_inconclusive_run_neither() {
    let s = streaks(1, 0);
    let failed = s.after(&failing("a.b"));
    assert_eq!((failed.failing, failed.passing), (2, 0));
    assert_eq!(failed.failing_on, Some(Cause::Check("a.b".into())));
    assert_eq!(failed.after(&Health::Healthy), streaks(0, 1));
    let i = Health::Inconclusive { what: "a".into() };
    assert_eq!(s.after(&i), s);
    assert_eq!(streaks(u32::MAX, 0).after(&failing("a")).failing, u32::MAX);
}

/// Every branch, each with the case that owns it.
#[test]
fn the_decision_table() {
    let ours = "health_check: a.b: check failed";
    let idle = node("IDLE", None);
    let drained_by_us = node("IDLE+DRAIN", Some(ours));
    let admin = node(
        "IDLE+DRAIN",
        Some("admin: replacing DIMM B2, do not resume"),
    );
    let down = node("DOWN", Some("Not responding"));
    let ours_other = node("IDLE+DRAIN", Some("health_check: c.d: check failed"));
    let fail = failing("a.b");
    let inconclusive = Health::Inconclusive {
        what: "sleepbench.total_cpu".into(),
    };
    let drain = |why: &str| Decision::Drain {
        reason: ours.into(),
        why: why.into(),
    };
    let leaves = |d: &Decision, words: &str| match d {
        Decision::Leave(line) => line.contains(words),
        _ => false,
    };
    // (node, verdict, streaks, what happens)
    type Want<'a> = Box<dyn Fn(&Decision) -> bool + 'a>;
    let table: Vec<(&NodeInfo, &Health, Streaks, Want<'_>)> = vec![
        // Inconclusive: nothing, whatever the node.
        (
            &idle,
            &inconclusive,
            streaks(5, 0),
            Box::new(|d| leaves(d, "inconclusive")),
        ),
        (
            &drained_by_us,
            &inconclusive,
            streaks(0, 5),
            Box::new(|d| leaves(d, "inconclusive")),
        ),
        // Failing: counted until --drain-after, then drained; not twice for one reason.
        (
            &idle,
            &fail,
            streaks(1, 0),
            Box::new(|d| leaves(d, "1 of 2 failing runs")),
        ),
        (
            &idle,
            &fail,
            streaks(2, 0),
            Box::new(move |d| *d == drain("2 failing run(s) in a row")),
        ),
        (
            &drained_by_us,
            &fail,
            streaks(3, 0),
            Box::new(|d| leaves(d, "still drained")),
        ),
        // Our drain for another reason is ours to update.
        (
            &ours_other,
            &fail,
            streaks(2, 0),
            Box::new(move |d| *d == drain("2 failing run(s) in a row")),
        ),
        // Someone else's reason is never overwritten nor lifted.
        (
            &admin,
            &fail,
            streaks(9, 0),
            Box::new(|d| leaves(d, "held by someone else")),
        ),
        (
            &down,
            &fail,
            streaks(9, 0),
            Box::new(|d| leaves(d, "Not responding")),
        ),
        (
            &admin,
            &Health::Healthy,
            streaks(0, 9),
            Box::new(|d| leaves(d, "left alone")),
        ),
        // Healthy: our drain lifted after --resume-after, not before.
        (
            &drained_by_us,
            &Health::Healthy,
            streaks(0, 1),
            Box::new(|d| leaves(d, "1 of 2 passing")),
        ),
        (
            &drained_by_us,
            &Health::Healthy,
            streaks(0, 2),
            Box::new(|d| matches!(d, Decision::Resume { why } if why.contains(ours))),
        ),
        (
            &idle,
            &Health::Healthy,
            streaks(0, 9),
            Box::new(|d| *d == Decision::Leave("healthy".into())),
        ),
    ];
    for (i, (n, v, s, want)) in table.iter().enumerate() {
        let got = decide(n, v, s, POLICY);
        assert!(want(&got), "row {i}: {n:?} {v:?} {s:?} -> {got:?}");
    }
}

/// A Prolog's run (the system section) or a busy node's (no bandwidth tests) that passes does not
/// reset a streak failing on what it did not run; a full run does, whatever it judged.
#[test]
fn a_partial_run_leaves_a_failing_streak_on_what_it_did_not_run() {
    let kept = streaks(0, 3)
        .after(&failing("memory.peak_bandwidth"))
        .after(&failing("memory.peak_bandwidth"));
    assert_eq!(kept.failing, 2);
    let memory = |c: &Cause| *c == Cause::Check("memory.peak_bandwidth".into());
    // A Prolog: only the system section ran.
    let v = for_failing_streak(&kept, Health::Healthy, true, |_| false);
    assert!(
        matches!(&v, Health::Inconclusive { what } if what.contains("memory.peak_bandwidth")),
        "{v:?}"
    );
    assert_eq!(kept.after(&v), kept, "the streak as it was");
    // A partial run that did judge it, or a full run: the streak ends.
    assert_eq!(
        for_failing_streak(&kept, Health::Healthy, true, memory),
        Health::Healthy
    );
    assert_eq!(
        for_failing_streak(&kept, Health::Healthy, false, |_| false),
        Health::Healthy
    );
    // A failing or inconclusive verdict, or no streak, passes through.
    let f = failing("system.x");
    assert_eq!(for_failing_streak(&kept, f.clone(), true, |_| false), f);
    assert_eq!(
        for_failing_streak(&streaks(0, 1), Health::Healthy, true, |_| false),
        Health::Healthy
    );
    // State files written before the cause was kept read as no cause: nothing held.
    let old: Streaks = serde_json::from_str(r#"{"failing":2,"passing":0}"#).unwrap();
    assert_eq!(old.failing_on, None);
    assert_eq!(
        for_failing_streak(&old, Health::Healthy, true, |_| false),
        Health::Healthy
    );
}
