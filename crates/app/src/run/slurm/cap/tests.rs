use super::*;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A partition kept in memory, as slurmctld keeps it: each call served whole, one at a time,
/// with a random pause before it (the interleavings of nodes racing each other).
struct Fake {
    nodes: Mutex<BTreeMap<String, PartNode>>,
    /// The most nodes drained by health_check at any moment.
    most: Mutex<usize>,
    fail_reads: bool,
    now: u64,
}

impl Fake {
    fn new(n: usize) -> Fake {
        let nodes = (0..n)
            .map(|i| {
                let name = format!("n{i:02}");
                (
                    name.clone(),
                    PartNode {
                        name,
                        state: "idle".into(),
                        comment: String::new(),
                        reason: String::new(),
                    },
                )
            })
            .collect();
        Fake {
            nodes: Mutex::new(nodes),
            most: Mutex::new(0),
            fail_reads: false,
            now: 1_000_000,
        }
    }

    fn pause() {
        thread_local! {
            // Each thread its own sequence: the time and the thread's id as its seed.
            static RNG: std::cell::RefCell<crate::rng::Rng> = std::cell::RefCell::new({
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::thread::current().id().hash(&mut h);
                std::time::SystemTime::now().hash(&mut h);
                crate::rng::Rng::new(h.finish())
            });
        }
        let jitter = RNG.with(|r| r.borrow_mut().below(300)) as u64;
        std::thread::sleep(Duration::from_micros(jitter));
    }

    fn drain(&self, node: &str) {
        Fake::pause();
        let mut nodes = self.nodes.lock().unwrap();
        let n = nodes.get_mut(node).unwrap();
        // As sinfo's StateComplete says it, the node's other flags kept.
        n.state = format!("{}+drain", n.state);
        n.reason = "health_check: x: check failed".into();
        let ours = nodes.values().filter(|n| n.drained_by_us()).count();
        let mut most = self.most.lock().unwrap();
        *most = (*most).max(ours);
    }
}

impl Marks for Fake {
    fn partition(&self, name: &str) -> Result<Partition, ControllerError> {
        Fake::pause();
        if self.fail_reads {
            return Err(ControllerError::Timeout(
                "'sinfo' did not answer within 10 s".into(),
            ));
        }
        Ok(Partition {
            name: name.into(),
            nodes: self.nodes.lock().unwrap().values().cloned().collect(),
        })
    }
    fn set_comment(&self, node: &str, comment: &str) -> Result<(), ControllerError> {
        Fake::pause();
        self.nodes.lock().unwrap().get_mut(node).unwrap().comment = comment.into();
        Ok(())
    }
    fn now(&self) -> u64 {
        self.now
    }
}

fn storm(fake: &Fake, failing: usize, pct: f64) -> Vec<Result<(), CapError>> {
    let parts = vec!["debug".to_string()];
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..failing)
            .map(|i| {
                let parts = &parts;
                s.spawn(move || {
                    let me = format!("n{i:02}");
                    let r = claim(fake, &me, parts, pct, CHOOSING_WAIT);
                    if r.is_ok() {
                        fake.drain(&me);
                        release(fake, &me, parts).unwrap();
                    }
                    r
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

/// Every node of a partition fails at once, in many interleavings: never more than the cap is
/// drained at any moment, some node drains, and every mark is cleared at the end. The same when
/// Slurm has stopped hearing from them all (a hung file system stalls every slurmd, and the
/// controller marks them not responding while their runs still reach it and drain).
#[test]
fn nodes_failing_at_once_never_drain_past_the_cap_at_any_moment() {
    let cases = [(8, 8, 12.5, 1), (20, 12, 10.0, 2), (10, 10, 30.0, 3)];
    for (state, (nodes, failing, pct, cap)) in ["idle", "idle+not_responding"]
        .into_iter()
        .flat_map(|s| cases.map(|c| (s, c)))
    {
        for _ in 0..15 {
            let fake = Fake::new(nodes);
            for n in fake.nodes.lock().unwrap().values_mut() {
                n.state = state.into();
            }
            let results = storm(&fake, failing, pct);
            let drained = results.iter().filter(|r| r.is_ok()).count();
            let most = *fake.most.lock().unwrap();
            assert!(
                most <= cap,
                "{most} drained at once, cap {cap}, {state}: {results:?}"
            );
            assert!(
                (1..=cap).contains(&drained),
                "{drained} drained: {results:?}"
            );
            for r in results.iter().filter_map(|r| r.as_ref().err()) {
                assert!(
                    matches!(r, CapError::Reached { .. } | CapError::Busy(..)),
                    "{r}"
                );
            }
            let nodes = fake.nodes.lock().unwrap();
            assert!(
                nodes.values().all(|n| Mark::of(&n.comment).is_none()),
                "marks left: {nodes:?}"
            );
        }
    }
}

#[test]
fn a_full_partition_a_lost_node_a_dead_mark_and_a_silent_controller() {
    // Full already: refused without a mark.
    let fake = Fake::new(4);
    fake.drain("n01");
    let e = claim(&fake, "n00", &["debug".into()], 25.0, CHOOSING_WAIT).unwrap_err();
    assert!(
        matches!(
            e,
            CapError::Reached {
                ours: 1,
                ahead: 0,
                allowed: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("held back by the cap"), "{e}");
    assert!(fake.nodes.lock().unwrap()["n00"].comment.is_empty());
    // A node Slurm calls down and not responding, its ticket up a moment ago, still counts: its
    // run may still be draining it.
    let fake = Fake::new(4);
    {
        let mut nodes = fake.nodes.lock().unwrap();
        let n1 = nodes.get_mut("n01").unwrap();
        n1.state = "down+not_responding".into();
        n1.comment = Mark::Ticket {
            ticket: 1,
            at: 1_000_000,
        }
        .text();
    }
    let e = claim(&fake, "n00", &["debug".into()], 25.0, CHOOSING_WAIT).unwrap_err();
    assert!(
        matches!(
            e,
            CapError::Reached {
                ours: 0,
                ahead: 1,
                ..
            }
        ),
        "{e}"
    );
    // A node that died choosing, its mark older than LIVE, blocks nobody; an administrator's
    // comment stays.
    let fake = Fake::new(4);
    {
        let mut nodes = fake.nodes.lock().unwrap();
        let n1 = nodes.get_mut("n01").unwrap();
        n1.state = "down+not_responding".into();
        n1.comment = Mark::Choosing { at: 1 }.text();
        nodes.get_mut("n02").unwrap().comment = Mark::Choosing { at: 1 }.text();
        nodes.get_mut("n00").unwrap().comment = "DIMM B2 ordered".into();
    }
    claim(&fake, "n00", &["debug".into()], 25.0, CHOOSING_WAIT).unwrap();
    assert!(
        fake.nodes.lock().unwrap()["n00"]
            .comment
            .starts_with("DIMM B2 ordered health_check-cap:1@")
    );
    release(&fake, "n00", &["debug".into()]).unwrap();
    assert_eq!(fake.nodes.lock().unwrap()["n00"].comment, "DIMM B2 ordered");
    // A live node still choosing past the wait: no drain this run.
    let fake = Fake::new(4);
    fake.nodes.lock().unwrap().get_mut("n03").unwrap().comment =
        Mark::Choosing { at: 1_000_000 }.text();
    let short = Duration::from_millis(300);
    let e = claim(&fake, "n00", &["debug".into()], 50.0, short).unwrap_err();
    assert_eq!(e, CapError::Busy(1, short));
    // sinfo that does not answer: unknown, no drain.
    let mut fake = Fake::new(4);
    fake.fail_reads = true;
    let e = claim(&fake, "n00", &["debug".into()], 50.0, CHOOSING_WAIT).unwrap_err();
    assert!(
        matches!(e, CapError::Unknown(ControllerError::Timeout(_))),
        "a silent controller is not a full partition: {e:?}"
    );
    assert!(e.to_string().contains("fail closed"), "{e}");
    assert!(e.to_string().contains("is slurmctld up?"), "{e}");
}

#[test]
fn marks_are_read_and_written_around_what_else_the_comment_holds() {
    assert_eq!(
        Mark::of("x health_check-cap:7@123 y"),
        Some(Mark::Ticket { ticket: 7, at: 123 })
    );
    assert_eq!(
        Mark::of("health_check-cap:choosing@5"),
        Some(Mark::Choosing { at: 5 })
    );
    assert_eq!(Mark::of("health_check-cap:x@5"), None);
    assert_eq!(Mark::of(""), None);
    assert_eq!(
        with_mark("a health_check-cap:1@2", Mark::Ticket { ticket: 3, at: 4 }),
        "a health_check-cap:3@4"
    );
    assert_eq!(without_mark("health_check-cap:1@2"), "");
    // An administrator's text comes back as written, its spacing and line breaks too.
    let admin = "rack 4,  do not move\n(ticket 12)";
    let marked = with_mark(admin, Mark::Ticket { ticket: 3, at: 4 });
    assert_eq!(marked, format!("{admin} health_check-cap:3@4"));
    assert_eq!(without_mark(&marked), admin);
    assert_eq!(without_mark("a health_check-cap:1@2 b"), "a b");
}

/// A storm's waiting nodes back off: their reads of the partition come at most once a second
/// after a few looks, each node a little apart from the others.
#[test]
fn waiting_nodes_look_again_less_and_less_often_and_apart() {
    let looks: Vec<Duration> = (0..8).map(|n| pause("n0001", n)).collect();
    assert!(looks[0] <= POLL && looks[0] >= POLL * 3 / 4, "{looks:?}");
    assert!(looks.windows(2).take(3).all(|w| w[1] > w[0]), "{looks:?}");
    assert!(looks.iter().all(|&l| l <= POLL_MAX), "{looks:?}");
    assert!(looks[7] >= POLL_MAX * 3 / 4, "{looks:?}");
    let apart: std::collections::BTreeSet<Duration> =
        (0..50).map(|i| pause(&format!("n{i:04}"), 5)).collect();
    assert!(apart.len() > 10, "{apart:?}");
}
