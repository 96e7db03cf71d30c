//! Each class of fault, each layout's blind spot, and the edge cases of blame.

use super::*;
use crate::judge::compare::tests::{fig, machine, sku};
use crate::judge::compare::{RuleCache, group};
use crate::judge::rules::Rules;
use crate::rng::Rng;
use crate::wire::figures::{BANDWIDTH, REVERSE_BANDWIDTH};
use crate::wire::fleet::Sku;

fn run_all(ms: &mut Vec<Machine>) -> Blamed {
    let rules = Rules::builtin();
    let view = View::of(ms);
    group(ms);
    blame(ms, &view, &mut RuleCache::new(&rules))
}

fn run(ms: &mut Vec<Machine>) -> Vec<Finding> {
    run_all(ms).findings
}

fn bw(pairs: &[(&str, f64)]) -> Vec<Figure> {
    pairs
        .iter()
        .map(|(c, v)| fig(&BANDWIDTH, &[c], *v))
        .collect()
}

/// The machines blamed (not links, not suspects), with their scope, sorted.
fn blamed(f: &[Finding]) -> Vec<(&str, Scope)> {
    let mut out: Vec<(&str, Scope)> = f
        .iter()
        .filter(|x| x.scope != Scope::Link)
        .map(|x| (x.machine.as_str(), x.scope))
        .collect();
    out.sort();
    out
}

fn status(ms: &[Machine], label: &str) -> MachineStatus {
    ms.iter()
        .find(|m| m.entry.label == label)
        .unwrap()
        .entry
        .status
}

fn reasons(ms: &[Machine], label: &str) -> String {
    let m = ms.iter().find(|m| m.entry.label == label).unwrap();
    m.entry.reasons.join("; ")
}

/// Asserts each of `labels` reads `ok`, naming the one that does not with its reasons.
fn assert_ok<S: AsRef<str>>(ms: &[Machine], labels: impl IntoIterator<Item = S>) {
    for label in labels {
        let label = label.as_ref();
        assert_eq!(
            status(ms, label),
            MachineStatus::Ok,
            "{label}: {}",
            reasons(ms, label)
        );
    }
}

/// Noise of up to ±2 % on a value.
fn noisy(rng: &mut Rng, v: f64) -> f64 {
    v * (0.98 + 0.04 * rng.below(1001) as f64 / 1000.0)
}

#[test]
fn a_client_two_servers_found_slow_is_blamed() {
    let mut ms: Vec<Machine> = (1..=4)
        .map(|i| {
            let mut row = vec![("c2", 9.4), ("c3", 9.4)];
            if i <= 2 {
                row.push(("c1", 1.2));
            }
            machine(&format!("s{i}"), bw(&row))
        })
        .collect();
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!((f[0].machine.as_str(), f[0].scope), ("c1", Scope::Client));
    assert!(
        f[0].message
            .contains("2 of the 2 measurements of it are poor")
            && f[0]
                .message
                .contains("with 2 distinct machines that do well with others (s1, s2)"),
        "{}",
        f[0].message
    );
}

/// A rack of slow clients: 30 servers each measure 2 random clients of 12, 4 of them slow. The
/// slow clients are blamed; no server, whatever clients it drew, is failed or warned.
#[test]
fn a_rack_of_slow_clients_fails_no_healthy_server() {
    let mut caught = 0;
    for seed in 1..=5 {
        let mut rng = Rng::new(seed);
        let slow = |c: usize| c < 4;
        let mut ms: Vec<Machine> = (0..30)
            .map(|s| {
                let a = rng.below(12);
                let b = (a + 1 + rng.below(11)) % 12;
                let row: Vec<Figure> = [a, b]
                    .iter()
                    .map(|&c| {
                        let v = if slow(c) { 6.0 } else { 9.4 };
                        fig(&BANDWIDTH, &[&format!("c{c}")], noisy(&mut rng, v))
                    })
                    .collect();
                machine(&format!("s{s}"), row)
            })
            .collect();
        let out = run_all(&mut ms);
        for m in ms.iter().filter(|m| m.entry.label.starts_with('s')) {
            assert!(
                m.entry.status <= MachineStatus::Suspect,
                "seed {seed}: {} {:?} {:?}",
                m.entry.label,
                m.entry.status,
                m.entry.reasons
            );
        }
        for (who, scope) in blamed(&out.findings) {
            assert_eq!(scope, Scope::Client, "seed {seed}: {who}");
            let c: usize = who[1..].parse().unwrap();
            assert!(slow(c), "seed {seed}: healthy {who} blamed");
            caught += 1;
        }
        // A slow client the layout cannot pin down (its servers measured other slow clients
        // only) is a suspect; the second round's measurements name it.
        let who = blamed(&out.findings);
        for c in (0..4).map(|c| format!("c{c}")) {
            if !ms.iter().any(|m| m.entry.label == c) || who.iter().any(|w| w.0 == c) {
                continue;
            }
            assert_eq!(
                status(&ms, &c),
                MachineStatus::Suspect,
                "seed {seed}: {c} {:?}",
                reasons(&ms, &c)
            );
            assert!(
                out.resolve.iter().any(|r| r.to == c),
                "{c}: {:?}",
                out.resolve
            );
        }
    }
    assert!(caught >= 12, "only {caught} of 20 slow clients blamed");
}

/// A third of a rack's clients slow, every server drawing two of them and one good client: no
/// server is fine elsewhere (each is even: half its other tests poor), so no client had peers
/// shown fine and every path stayed suspect, through any number of second rounds. The client
/// with the most even witnesses is blamed first, its servers become fine, and the rest follow.
#[test]
fn slow_clients_whose_servers_all_measured_another_slow_one_are_blamed() {
    let mut rng = Rng::new(7);
    let mut ms: Vec<Machine> = (0..6)
        .map(|i| {
            let row: Vec<Figure> = [(i % 4, 6.0), ((i + 1) % 4, 6.0), (4 + i, 9.4)]
                .iter()
                .map(|&(c, v)| fig(&BANDWIDTH, &[&format!("c{c}")], noisy(&mut rng, v)))
                .collect();
            machine(&format!("s{i}"), row)
        })
        .collect();
    let out = run_all(&mut ms);
    let want: Vec<(String, Scope)> = (0..4).map(|c| (format!("c{c}"), Scope::Client)).collect();
    let got: Vec<(String, Scope)> = blamed(&out.findings)
        .into_iter()
        .map(|(m, s)| (m.to_string(), s))
        .collect();
    assert_eq!(got, want, "{:#?}", out.findings);
    assert!(
        out.findings
            .iter()
            .any(|f| f.message.contains("that are never mostly poor with others")),
        "the first is said to stand on even witnesses: {:#?}",
        out.findings
    );
    assert_ok(&ms, (0..6).map(|i| format!("s{i}")));
    // No server is left a candidate: each client is suspect only because, without a document
    // of its own, its model is unknown (its own test in the second round tells it).
    for f in &out.findings {
        assert_eq!(
            f.suspect.as_deref(),
            Some(&[f.machine.clone()][..]),
            "{f:#?}"
        );
        assert!(f.message.contains("its model is unknown"), "{}", f.message);
    }
}

/// A healthy server that measured two slow clients (which other servers found slow too) and
/// one good one is not failed for its clients.
#[test]
fn a_server_is_not_failed_for_its_slow_clients() {
    let rows: [&[&str]; 6] = [
        &["c1", "c2", "c3"],
        &["c1", "c4", "c5"],
        &["c1", "c5", "c6"],
        &["c2", "c4", "c6"],
        &["c2", "c3", "c5"],
        &["c3", "c4", "c6"],
    ];
    let mut rng = Rng::new(7);
    for _ in 0..20 {
        let mut ms: Vec<Machine> = rows
            .iter()
            .enumerate()
            .map(|(s, row)| {
                let figures: Vec<Figure> = row
                    .iter()
                    .map(|&c| {
                        let v = if c == "c1" || c == "c2" { 6.5 } else { 9.4 };
                        fig(&BANDWIDTH, &[c], noisy(&mut rng, v))
                    })
                    .collect();
                machine(&format!("s{s}"), figures)
            })
            .collect();
        let f = run(&mut ms);
        assert_eq!(
            blamed(&f),
            [("c1", Scope::Client), ("c2", Scope::Client)],
            "{f:#?}"
        );
        assert_eq!(
            status(&ms, "s0"),
            MachineStatus::Ok,
            "{:?}",
            reasons(&ms, "s0")
        );
    }
}

/// A bad link on a server that measured two clients, both fine from other servers: the link,
/// not the server (the median of two values is their mean, and no longer decides).
#[test]
fn a_bad_link_on_a_server_of_two_clients_is_the_link() {
    let mut ms = vec![machine("s0", bw(&[("c1", 2.0), ("c2", 9.4)]))];
    ms.extend((1..=3).map(|i| machine(&format!("s{i}"), bw(&[("c1", 9.4), ("c2", 9.3)]))));
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].scope, Scope::Link);
    assert!(f[0].suspect.is_none(), "both ends are fine elsewhere");
    assert!(
        f[0].message.contains(
            "poor only between s0 and c1: s0's 1 other test(s) it led are fine and c1's 3 \
             other measurement(s) of it are fine"
        ),
        "{}",
        f[0].message
    );
    assert_eq!(status(&ms, "s0"), MachineStatus::Ok);
}

fn model_b() -> Sku {
    Sku {
        cpu_model: Some("B".into()),
        ..sku()
    }
}

/// A mesh of 9 machines of model A and 3 of a model B 40 % slower: paths are judged against
/// paths between the same pair of models, and no machine is failed for its model.
#[test]
fn a_slower_model_is_not_failed_for_being_that_model() {
    let mut rng = Rng::new(3);
    let names: Vec<String> = (0..12).map(|i| format!("h{i}")).collect();
    let speed = |i: usize| if i >= 9 { 14.0_f64 } else { 23.5 };
    let mut ms: Vec<Machine> = (0..12)
        .map(|i| {
            let figures = (0..12)
                .filter(|&j| j != i)
                .flat_map(|j| {
                    let v = speed(i).min(speed(j));
                    [
                        fig(&BANDWIDTH, &[&names[j]], noisy(&mut rng, v)),
                        fig(&REVERSE_BANDWIDTH, &[&names[j]], noisy(&mut rng, v)),
                    ]
                })
                .collect();
            let mut m = machine(&names[i], figures);
            if i >= 9 {
                m.entry.sku = Some(model_b());
            }
            m
        })
        .collect();
    let f = run(&mut ms);
    assert!(f.is_empty(), "{f:#?}");
    // One B machine slower than its model still fails, against B's paths.
    let mut ms2: Vec<Machine> = ms
        .into_iter()
        .map(|mut m| {
            m.entry.status = MachineStatus::Ok;
            m.entry.reasons.clear();
            m.entry.group = None;
            m
        })
        .filter(|m| m.entry.kind != DocumentKind::None)
        .collect();
    for m in ms2.iter_mut() {
        for fg in m.figures.iter_mut() {
            if m.entry.label == "h10" || fg.labels[0] == "h10" {
                fg.value *= 0.5;
            }
        }
    }
    let f = run(&mut ms2);
    // Forward and reverse bandwidth, each.
    assert_eq!(
        blamed(&f),
        [("h10", Scope::Machine), ("h10", Scope::Machine)],
        "{f:#?}"
    );
    assert!(
        f[0].message.contains("to B, 1 sockets x 8 cores"),
        "{}",
        f[0].message
    );
}

/// A full mesh: each machine leads a test with every other, forward and reverse;
/// `value(server, client, reverse)`.
fn full_mesh(n: usize, value: impl Fn(usize, usize, bool) -> f64) -> Vec<Machine> {
    (0..n)
        .map(|i| {
            let figures = (0..n)
                .filter(|&j| j != i)
                .flat_map(|j| {
                    let c = format!("h{j}");
                    [
                        fig(&BANDWIDTH, &[&c], value(i, j, false)),
                        fig(&REVERSE_BANDWIDTH, &[&c], value(i, j, true)),
                    ]
                })
                .collect();
            machine(&format!("h{i}"), figures)
        })
        .collect()
}

fn by_figure(f: &[Finding]) -> Vec<(String, &str, Scope)> {
    let mut out: Vec<(String, &str, Scope)> = f
        .iter()
        .map(|x| (x.figure.clone(), x.machine.as_str(), x.scope))
        .collect();
    out.sort();
    out
}

/// Faults tied to one role in a full mesh: a machine slow only in the tests it leads, only in
/// those it answers, or only when it sends (a tired NIC transmits slowly) is found in that role.
#[test]
fn in_a_full_mesh_faults_tied_to_one_role_are_found_in_that_role() {
    let (fwd, rev) = ("network.bandwidth.*", "network.reverse_bandwidth.*");
    let slow = |yes: bool| if yes { 4.0 } else { 9.4 };
    // Slow in the tests it leads, both directions.
    let mut ms = full_mesh(10, |s, _, _| slow(s == 3));
    let f = run(&mut ms);
    assert_eq!(
        by_figure(&f),
        [
            (fwd.into(), "h3", Scope::Server),
            (rev.into(), "h3", Scope::Server)
        ],
        "{f:#?}"
    );
    // Slow in the tests it answers.
    let mut ms = full_mesh(10, |_, c, _| slow(c == 3));
    let f = run(&mut ms);
    assert_eq!(
        by_figure(&f),
        [
            (fwd.into(), "h3", Scope::Client),
            (rev.into(), "h3", Scope::Client)
        ],
        "{f:#?}"
    );
    // Slow to send: forward where it leads, reverse where it answers.
    let mut ms = full_mesh(10, |s, c, reverse| slow(if reverse { c } else { s } == 3));
    let f = run(&mut ms);
    assert_eq!(
        by_figure(&f),
        [
            (fwd.into(), "h3", Scope::Server),
            (rev.into(), "h3", Scope::Client)
        ],
        "{f:#?}"
    );
    assert!(
        f.iter()
            .all(|x| x.message.contains("(it sends in these tests)"))
    );
    // Slow both ways, in every test: the machine.
    let mut ms = full_mesh(10, |s, c, _| slow(s == 3 || c == 3));
    let f = run(&mut ms);
    assert_eq!(
        by_figure(&f),
        [
            (fwd.into(), "h3", Scope::Machine),
            (rev.into(), "h3", Scope::Machine)
        ],
        "{f:#?}"
    );
}

/// DCPerf's star with one server and three clients, the path to one client slow: it cannot be
/// told from the client, so both are suspect (the server is fine with its other clients), and
/// the report says to measure the client from another machine. A second round settles it.
#[test]
fn a_star_with_one_server_leaves_a_suspect_and_a_second_round_settles_it() {
    let first = || vec![machine("s", bw(&[("c1", 9.4), ("c2", 9.3), ("c3", 2.0)]))];
    let mut ms = first();
    let out = run_all(&mut ms);
    assert_eq!(out.findings.len(), 1, "{:#?}", out.findings);
    let f = &out.findings[0];
    assert_eq!(
        f.suspect.as_deref(),
        Some(&["c3".to_string()][..]),
        "{f:#?}"
    );
    assert!(
        f.message
            .contains("the data cannot tell c3, the path between them apart"),
        "{}",
        f.message
    );
    assert_eq!(status(&ms, "c3"), MachineStatus::Suspect);
    // The only document: alone, not suspect (it measured c1 and c2 well).
    assert_eq!(status(&ms, "s"), MachineStatus::Alone);
    assert_eq!(out.resolve.len(), 1, "{:?}", out.resolve);
    let r = &out.resolve[0];
    assert_eq!(r.to, "c3");
    assert!(r.from == "c1" || r.from == "c2", "{r:?}");
    assert!(f.message.contains(&format!("measure c3 from {}", r.from)));
    // The second round: c3 slow from there too is the client's fault.
    for (second, want) in [(2.1, Some(("c3", Scope::Client))), (9.4, None)] {
        let mut ms = first();
        ms.push(machine(&r.from, bw(&[("c3", second)])));
        // The measured end writes its identity in the second round.
        ms.push(identity_only("c3"));
        let out = run_all(&mut ms);
        let machines: Vec<(&str, Scope)> = blamed(&out.findings);
        match want {
            Some(w) => assert_eq!(machines, [w], "{:#?}", out.findings),
            None => {
                assert!(machines.is_empty(), "{:#?}", out.findings);
                assert_eq!(out.findings.len(), 1);
                assert!(
                    out.findings[0].suspect.is_none(),
                    "a link: {:#?}",
                    out.findings
                );
            }
        }
        assert!(out.resolve.is_empty(), "{:?}", out.resolve);
    }
}

/// A star with one server whose every client is slow: the server, or every client? Suspects all,
/// nobody failed.
#[test]
fn a_star_slow_to_every_client_is_suspect_not_failed() {
    let mut ms = vec![
        machine("s", bw(&[("c1", 2.0), ("c2", 2.1), ("c3", 1.9)])),
        machine("t", bw(&[("d1", 9.4), ("d2", 9.3), ("d3", 9.5)])),
        machine("u", bw(&[("d1", 9.4), ("d2", 9.3), ("d3", 9.5)])),
    ];
    let out = run_all(&mut ms);
    assert!(blamed(&out.findings).is_empty(), "{:#?}", out.findings);
    assert_eq!(out.findings.len(), 3);
    for f in &out.findings {
        let c = f.suspect.as_ref().unwrap();
        assert!(c.contains(&"s".to_string()), "{c:?}");
    }
    for m in ["s", "c1", "c2", "c3"] {
        assert_eq!(status(&ms, m), MachineStatus::Suspect, "{m}");
    }
    // The server is measured against a machine not under suspicion, each client from one.
    let pairs: BTreeSet<(String, String)> = out
        .resolve
        .iter()
        .map(|r| (r.from.clone(), r.to.clone()))
        .collect();
    assert!(pairs.iter().any(|(f, _)| f == "s"), "{pairs:?}");
    for c in ["c1", "c2", "c3"] {
        assert!(pairs.iter().any(|(_, t)| t == c), "{c}: {pairs:?}");
    }
    for (from, to) in &pairs {
        assert!(
            !(from.starts_with('c') && to.starts_with('c')),
            "measured among suspects: {pairs:?}"
        );
    }
}

/// With several servers measuring it, a server slow to all its clients is blamed as the server.
#[test]
fn a_server_all_of_whose_clients_are_slow_is_blamed_as_the_server() {
    let mut ms = vec![
        machine("s1", bw(&[("c1", 2.0), ("c2", 2.1), ("c3", 1.9)])),
        machine("s2", bw(&[("c1", 9.4), ("c2", 9.3), ("c3", 9.5)])),
        machine("s3", bw(&[("c1", 9.4), ("c2", 9.4), ("c3", 9.2)])),
    ];
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!((f[0].machine.as_str(), f[0].scope), ("s1", Scope::Server));
    assert!(
        f[0].message
            .contains("3 of the 3 measurements it led are poor (it sends"),
        "{}",
        f[0].message
    );
}

/// A machine whose document gives its model and nothing else (a pairs follower's, or a
/// second round's measured end).
fn identity_only(label: &str) -> Machine {
    machine(label, Vec::new())
}

/// DCPerf's star: four servers measure c1..c4 and only the servers have documents. A client
/// every server found slow is named, but its model is unknown (a slower model looks the same):
/// suspect, and it is asked to lead a test (its document then tells). With its document, it is
/// blamed.
#[test]
fn a_client_of_unknown_model_every_server_found_slow_is_suspect_until_its_model_is_known() {
    let row = || bw(&[("c1", 9.4), ("c2", 9.3), ("c3", 1.2), ("c4", 9.5)]);
    let mut ms: Vec<Machine> = (1..=4).map(|i| machine(&format!("s{i}"), row())).collect();
    let out = run_all(&mut ms);
    let f = &out.findings;
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!((f[0].machine.as_str(), f[0].scope), ("c3", Scope::Client));
    assert_eq!(f[0].suspect.as_deref(), Some(&["c3".to_string()][..]));
    assert!(
        f[0].message.contains("its model is unknown"),
        "{}",
        f[0].message
    );
    assert_eq!(status(&ms, "c3"), MachineStatus::Suspect);
    assert!(
        out.resolve.iter().any(|r| r.from == "c3"),
        "{:?}",
        out.resolve
    );
    let c3 = ms.iter().find(|m| m.entry.label == "c3").unwrap();
    assert_eq!(c3.entry.kind, DocumentKind::None);
    assert_eq!(ms.len(), 8, "every client is a machine of the report");
    for m in &ms {
        let told = reasons(&ms, &m.entry.label).contains("no document of its own: judged on");
        let want = m.entry.label.starts_with('c') && m.entry.label != "c3";
        assert_eq!(told, want, "{}: {:?}", m.entry.label, m.entry.reasons);
    }
    // Its document known, of the servers' model: blamed.
    let mut ms: Vec<Machine> = (1..=4).map(|i| machine(&format!("s{i}"), row())).collect();
    ms.push(identity_only("c3"));
    let f = run(&mut ms);
    assert_eq!(blamed(&f), [("c3", Scope::Client)], "{f:#?}");
    assert!(f[0].suspect.is_none());
}

/// A mesh measured once per pair, by the first of the two (forward and reverse figures).
fn half_mesh(names: &[&str], slow: impl Fn(&str, &str) -> bool) -> Vec<Machine> {
    names
        .iter()
        .enumerate()
        .map(|(i, &me)| {
            let figures = names[i + 1..]
                .iter()
                .flat_map(|&other| {
                    let v = if slow(me, other) { 0.19 } else { 0.95 };
                    [
                        fig(&BANDWIDTH, &[other], v),
                        fig(&REVERSE_BANDWIDTH, &[other], v),
                    ]
                })
                .collect();
            machine(me, figures)
        })
        .collect()
}

#[test]
fn in_a_mesh_a_slow_host_is_blamed_alone() {
    let names = ["h1", "h2", "h3", "h4", "h5", "h6"];
    for slow in [&["h3"][..], &["h1"], &["h6"], &["h2", "h5"]] {
        let mut ms = half_mesh(&names, |a, b| slow.contains(&a) || slow.contains(&b));
        let f = run(&mut ms);
        let who: BTreeSet<&str> = f.iter().map(|f| f.machine.as_str()).collect();
        assert_eq!(who, slow.iter().copied().collect(), "{f:#?}");
        // h1 only leads tests, h6 only answers them, the others do both.
        for x in &f {
            let scope = match x.machine.as_str() {
                "h1" => Scope::Server,
                "h6" => Scope::Client,
                _ => Scope::Machine,
            };
            assert_eq!(x.scope, scope, "{x:#?}");
        }
    }
}

/// The reference is the quiet machines': servers whose network section was disturbed do not
/// make their own slowness the norm, and what they found is inconclusive.
#[test]
fn the_reference_is_taken_from_quiet_machines() {
    use crate::wire::document::Section;
    let mut ms: Vec<Machine> = (1..=4)
        .map(|i| machine(&format!("s{i}"), bw(&[("c1", 9.4), ("c2", 9.4)])))
        .collect();
    for i in 1..=3 {
        let mut busy = machine(&format!("b{i}"), bw(&[("c1", 2.0), ("c2", 2.0)]));
        busy.interfered
            .insert(Section::Network, "30 % of the CPU stolen".into());
        ms.push(busy);
    }
    let f = run(&mut ms);
    assert_eq!(
        blamed(&f),
        [
            ("b1", Scope::Server),
            ("b2", Scope::Server),
            ("b3", Scope::Server)
        ],
        "{f:#?}"
    );
    assert!(f.iter().all(|x| x.inconclusive.is_some()));
}

#[test]
fn in_a_mesh_a_slow_path_is_a_link_and_neither_end_is_blamed() {
    let names = ["h1", "h2", "h3", "h4", "h5", "h6"];
    let mut ms = half_mesh(&names, |a, b| (a, b) == ("h2", "h5"));
    let f = run(&mut ms);
    assert_eq!(f.len(), 2, "forward and reverse: {f:#?}");
    for x in &f {
        assert_eq!(x.scope, Scope::Link);
        assert!(x.suspect.is_none());
        assert_eq!(
            x.link.as_deref(),
            Some(&["h2".to_string(), "h5".to_string()][..])
        );
        assert!(
            x.message.contains(
                "poor only between h2 and h5: h2's 3 other test(s) it led are fine and h5's 3 \
                 other measurement(s) of it are fine"
            ),
            "{}",
            x.message
        );
    }
    for end in ["h2", "h5"] {
        assert!(reasons(&ms, end).contains("one end of a poor path (h2 <-> h5)"));
        assert_eq!(status(&ms, end), MachineStatus::Ok);
    }
}

/// Evidence sentences are computed: the other measurements of an end are counted as they are,
/// poor ones too.
#[test]
fn evidence_counts_the_other_measurements_as_they_are() {
    let good = |ms: &mut Vec<Machine>| {
        ms.push(machine("g1", bw(&[("c", 0.95), ("x", 0.95), ("y", 0.95)])));
        ms.push(machine("g2", bw(&[("c", 0.95), ("x", 0.96), ("y", 0.94)])));
        ms.push(machine("g3", bw(&[("x", 0.95), ("y", 0.95)])));
    };
    // a's one measurement, of c, whom two others measured well: a has nothing else.
    let mut ms = vec![machine("a", bw(&[("c", 0.19)]))];
    good(&mut ms);
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].suspect.as_deref(), Some(&["a".to_string()][..]));
    assert!(
        f[0].message
            .contains("a has no other test(s) it led; c's 2 other measurement(s) of it are fine"),
        "{}",
        f[0].message
    );
    assert_eq!(status(&ms, "a"), MachineStatus::Suspect);
    assert_eq!(status(&ms, "c"), MachineStatus::Ok);
    // s measured x and y well and z, whom nobody else measured, poorly.
    let mut ms = vec![machine("s", bw(&[("x", 0.95), ("y", 0.95), ("z", 0.19)]))];
    good(&mut ms);
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("s's 2 other test(s) it led are fine; z has no other measurement(s) of it"),
        "{}",
        f[0].message
    );
}

/// Edge cases: one path in all, a whole fleet equally slow, pairs that measure once.
#[test]
fn edge_cases_get_clear_verdicts() {
    // One path in all: nothing to compare it with.
    let mut ms = vec![machine("a", bw(&[("b", 0.2)]))];
    assert!(run(&mut ms).is_empty());
    // A whole fleet equally slow: no machine stands out (a baseline or the machines' own past
    // judges the level).
    let mut ms = full_mesh(6, |_, _, _| 0.2);
    assert!(run(&mut ms).is_empty());
    // Pairs: each pair measured once; a slow one cannot be told from its ends.
    let mut ms = vec![
        machine("a", bw(&[("b", 0.95)])),
        machine("c", bw(&[("d", 0.19)])),
        machine("e", bw(&[("f", 0.94)])),
        machine("g", bw(&[("h", 0.96)])),
    ];
    let out = run_all(&mut ms);
    assert_eq!(out.findings.len(), 1, "{:#?}", out.findings);
    let f = &out.findings[0];
    assert_eq!(
        f.suspect.as_deref(),
        Some(&["c".to_string(), "d".to_string()][..])
    );
    assert_eq!(
        f.link.as_deref(),
        Some(&["c".to_string(), "d".to_string()][..])
    );
    assert_eq!(out.resolve.len(), 2, "{:?}", out.resolve);
    // Documents that contradict each other (a measured b slow, b measured a fast, on the same
    // figure): one poor measurement of the pair's two: the pair is suspect, not a machine.
    let mut ms = full_mesh(6, |_, _, _| 9.4);
    ms[0].figures[0].value = 1.0; // h0 -> h1 forward
    let f = run(&mut ms);
    assert!(blamed(&f).is_empty(), "{f:#?}");
    assert_eq!(f.len(), 1);
}

#[test]
fn loopback_names_are_the_machine_itself() {
    let mut ms = vec![
        machine("s1", bw(&[("localhost", 2.0), ("127.0.0.1", 2.0)])),
        machine("s2", bw(&[("localhost", 9.4), ("127.0.0.1", 9.4)])),
        machine("s3", bw(&[("localhost", 9.4), ("127.0.0.1", 9.3)])),
    ];
    let f = run(&mut ms);
    assert_eq!(ms.len(), 3, "no machine made of a loopback name");
    assert!(f.is_empty(), "{f:#?}");
}

/// DCPerf's star over two models, clients without documents: a fault on an unknown client is
/// as slow as, or slower than, a healthy client of the slower model, and where the slower model
/// and the faults are a third of the clients the pair's median sits at the slower model's
/// level. The level of paths to ends of unknown model is the better quarter of the machines',
/// so the faulty clients (and the slower model's, which only their documents tell apart) are
/// suspect, never passed as fine, and no server is blamed.
#[test]
fn among_two_models_a_faulty_client_of_unknown_model_is_suspect_not_fine() {
    let level = |c: usize| match c {
        0..=4 => 23.5, // model A
        5..=8 => 14.0, // model B
        _ => 11.75,    // model A, at half speed
    };
    let clients: Vec<String> = (0..12).map(|c| format!("c{c}")).collect();
    let mut ms = Vec::new();
    for s in 0..6 {
        let cap = if s < 4 { 23.5 } else { 14.0 };
        let pairs: Vec<(&str, f64)> = clients
            .iter()
            .enumerate()
            .map(|(c, name)| (name.as_str(), f64::min(cap, level(c))))
            .collect();
        let mut m = machine(&format!("s{s}"), bw(&pairs));
        if s >= 4 {
            m.entry.sku = Some(model_b());
        }
        ms.push(m);
    }
    let out = run_all(&mut ms);
    for c in 9..12 {
        assert_eq!(
            status(&ms, &format!("c{c}")),
            MachineStatus::Suspect,
            "{:#?}",
            out.findings
        );
    }
    for s in 0..6 {
        assert_eq!(
            status(&ms, &format!("s{s}")),
            MachineStatus::Ok,
            "{:#?}",
            out.findings
        );
    }
    assert!(
        blamed(&out.findings)
            .iter()
            .all(|(m, _)| m.starts_with('c'))
    );
}

/// A client measured only by a server at fault is hidden behind that fault: its measurement is
/// explained by the server, and nothing shows the client fine or slow. It is suspect, and the
/// second round measures it from another server.
#[test]
fn a_client_measured_only_by_a_faulty_server_is_suspect_and_measured_again() {
    let mut ms = vec![
        machine("s0", bw(&[("c0", 10.0), ("c1", 10.1), ("c2", 9.9)])),
        machine("s1", bw(&[("c0", 20.0), ("c1", 20.1), ("c3", 19.9)])),
        machine("s2", bw(&[("c3", 20.2), ("c4", 19.8)])),
        machine("s3", bw(&[("c4", 20.0), ("c0", 20.1)])),
    ];
    let out = run_all(&mut ms);
    assert_eq!(blamed(&out.findings), vec![("s0", Scope::Server)]);
    assert_eq!(
        status(&ms, "c2"),
        MachineStatus::Suspect,
        "{:#?}",
        out.findings
    );
    let hidden = out
        .findings
        .iter()
        .find(|f| f.suspect.as_deref() == Some(&["c2".to_string()][..]))
        .unwrap();
    assert!(
        hidden
            .message
            .contains("c2's 1 measurement(s) are all poor and all with machines at fault (s0)"),
        "{}",
        hidden.message
    );
    assert!(
        out.resolve.iter().any(|r| r.to == "c2" && r.from != "s0"),
        "{:?}",
        out.resolve
    );
    for c in ["c0", "c1", "c3", "c4"] {
        assert_eq!(status(&ms, c), MachineStatus::Ok, "{c}");
    }
}

/// One model whose paths run at two levels, the worse as common as the better: seven of twelve
/// clients at half the speed of the others. A slower part (a NIC of another speed) looks the
/// same as faults on half the fleet, and the median sits at the worse level: the better level
/// judges, so the slow clients are suspect (not passed as fine), and nobody is failed. Three
/// slow clients of twelve are faults, and are blamed.
#[test]
fn two_levels_as_common_as_each_other_are_suspect_not_fine() {
    let judge_with = |slow: usize| {
        let clients: Vec<String> = (0..12).map(|c| format!("c{c}")).collect();
        let mut ms: Vec<Machine> = (0..6)
            .map(|s| {
                let pairs: Vec<(&str, f64)> = (0..4)
                    .map(|k| (s + 3 * k) % 12)
                    .map(|c| (clients[c].as_str(), if c < slow { 10.0 } else { 20.0 }))
                    .collect();
                machine(&format!("s{s}"), bw(&pairs))
            })
            .collect();
        let out = run_all(&mut ms);
        (ms, out)
    };
    let (ms, out) = judge_with(7);
    assert!(!out.findings.is_empty());
    assert!(
        out.findings
            .iter()
            .all(|f| f.suspect.is_some() && f.message.contains("against 20.0 Gbit/s")),
        "{:#?}",
        out.findings
    );
    for c in 0..7 {
        let c = format!("c{c}");
        assert_eq!(
            status(&ms, &c),
            MachineStatus::Suspect,
            "{c}: {:#?}",
            out.findings
        );
    }
    let (_, out) = judge_with(3);
    assert_eq!(
        blamed(&out.findings),
        [
            ("c0", Scope::Client),
            ("c1", Scope::Client),
            ("c2", Scope::Client)
        ],
        "{:#?}",
        out.findings
    );
}

/// A poor path one of whose ends already fails for a finding of its own is put down to that
/// end: the other end is not made suspect for it, and no second round is asked.
#[test]
fn a_poor_path_from_a_failing_machine_makes_nobody_suspect() {
    // s0 is slow to every client that three other servers find fine: it fails as a server.
    // Its only reverse test, with c9 (which nobody else measured), is poor too: s0 or c9 or
    // the path, the data alone cannot tell, but s0 fails already.
    let mut s0 = bw(&[("c0", 10.0), ("c1", 10.1), ("c2", 9.9)]);
    s0.push(fig(&REVERSE_BANDWIDTH, &["c9"], 2.0));
    let mut ms = vec![
        machine("s0", s0),
        machine("s1", bw(&[("c0", 20.0), ("c1", 20.1), ("c2", 19.9)])),
        machine("s2", bw(&[("c0", 20.2), ("c1", 19.8), ("c2", 20.0)])),
        machine("s3", bw(&[("c0", 20.1), ("c1", 20.0), ("c2", 20.2)])),
    ];
    for (i, m) in ms.iter_mut().enumerate().skip(1) {
        m.figures
            .push(fig(&REVERSE_BANDWIDTH, &[&format!("c{i}")], 20.0));
    }
    let out = run_all(&mut ms);
    assert_eq!(blamed(&out.findings), vec![("s0", Scope::Server)]);
    assert!(
        out.findings.iter().all(|f| f.suspect.is_none()),
        "{:#?}",
        out.findings
    );
    assert_eq!(status(&ms, "c9"), MachineStatus::Ok, "{:#?}", out.findings);
    assert!(out.resolve.is_empty(), "{:?}", out.resolve);
}

/// The second round never asks for a pair already measured, and takes a helper shown fine in
/// the role it plays.
#[test]
fn a_helper_is_new_to_the_suspect_and_shown_fine_in_its_role() {
    // c3 is measured by s only (poor): suspect. a1 wrote a document but led no test (nothing
    // shows it fine as a server); s2 led a fine one.
    let mut ms = vec![
        machine("s", bw(&[("c1", 9.4), ("c2", 9.3), ("c3", 2.0)])),
        identity_only("a1"),
        machine("s2", bw(&[("c1", 9.5)])),
    ];
    let out = run_all(&mut ms);
    let to_c3: Vec<&Resolve> = out.resolve.iter().filter(|r| r.to == "c3").collect();
    assert_eq!(to_c3.len(), 1, "{:?}", out.resolve);
    assert_eq!(to_c3[0].from, "s2", "{:?}", out.resolve);
    assert!(out.resolve.iter().all(|r| !(r.from == "s" && r.to == "c3")));
}

/// DCPerf's star with one server: h1 finds h3 and h4 slow, and its ping to h2 came out slow
/// (a busy moment). The second round must not measure a poor pair again (h1 -> h3 adds a poor
/// vote against h1 and h3 in every figure, and no witness), and h2, suspect for its ping only,
/// still settles the bandwidth question as the one client h1 did well with.
#[test]
fn a_second_round_repeats_no_poor_pair_and_a_ping_suspect_still_helps_with_bandwidth() {
    use crate::wire::figures::PING_LATENCY;
    let mut figures = bw(&[("h2", 300.0), ("h3", 50.0), ("h4", 50.0)]);
    figures.extend([
        fig(&PING_LATENCY, &["h2"], 0.5),
        fig(&PING_LATENCY, &["h3"], 0.05),
        fig(&PING_LATENCY, &["h4"], 0.05),
    ]);
    let mut ms = vec![machine("h1", figures)];
    let out = run_all(&mut ms);
    let pairs: Vec<(&str, &str)> = out
        .resolve
        .iter()
        .map(|r| (r.from.as_str(), r.to.as_str()))
        .collect();
    assert!(
        !pairs.contains(&("h1", "h3")) && !pairs.contains(&("h1", "h4")),
        "{pairs:?}"
    );
    for want in [("h2", "h3"), ("h2", "h4"), ("h1", "h2")] {
        assert!(pairs.contains(&want), "{want:?} in {pairs:?}");
    }
}

/// A star of two models after its second round: the A clients x1 and x2 are slow, and model B's
/// servers measured them. Only the clients found slow wrote documents (naming model A), so
/// every measured path from B to A is a slow one: as their own level they would read fine, and
/// the B servers' poor measurements would be left to them. Paths between two models run no
/// better than the slower model's own, so both clients are blamed and no B server is touched.
/// (Every client here wrote a document: a path to a client of unknown model, among several
/// models, is evidence about the client only.)
#[test]
fn paths_between_two_models_are_judged_no_better_than_the_slower_models_own() {
    let mut rng = Rng::new(5);
    let mut server = |name: &str, clients: &[(&str, f64)], b: bool| {
        let figures = clients
            .iter()
            .map(|(c, v)| fig(&BANDWIDTH, &[c], noisy(&mut rng, *v)))
            .collect();
        let mut m = machine(name, figures);
        if b {
            m.entry.sku = Some(model_b());
        }
        m
    };
    let mut ms = vec![
        server("a1", &[("ca1", 23.5), ("ca2", 23.5), ("x1", 11.7)], false),
        server("a2", &[("ca1", 23.5), ("ca2", 23.5), ("x1", 11.7)], false),
        server("a3", &[("ca1", 23.5), ("ca2", 23.5), ("x2", 11.7)], false),
        server("b1", &[("cb1", 14.0), ("cb2", 14.0), ("x1", 7.0)], true),
        server("b2", &[("cb1", 14.0), ("cb2", 14.0), ("x2", 7.0)], true),
        server("b3", &[("cb1", 14.0), ("cb2", 14.0), ("x2", 7.0)], true),
        identity_only("x1"),
        identity_only("x2"),
    ];
    for c in ["ca1", "ca2", "cb1", "cb2"] {
        let mut m = identity_only(c);
        if c.starts_with("cb") {
            m.entry.sku = Some(model_b());
        }
        ms.push(m);
    }
    let f = run(&mut ms);
    assert_eq!(
        blamed(&f),
        [("x1", Scope::Client), ("x2", Scope::Client)],
        "{f:#?}"
    );
    assert_ok(&ms, ["b1", "b2", "b3"]);
    assert!(
        f.iter()
            .all(|x| x.suspect.is_none() && x.scope != Scope::Link),
        "{f:#?}"
    );
}

/// A one-server star after its second round (the project's CI saw it on a real fleet): h4's
/// NIC is slow and the path h1 <-> h3 is slow. h3 is fine from h2; its only other
/// poor measurement came from h4, a machine with a fault of its own, which never makes h3
/// suspect: the path is a link, h4 a client, and nothing is left suspect.
#[test]
fn a_poor_measurement_from_a_faulty_machine_leaves_its_peer_fine() {
    let mut ms = vec![
        machine(
            "h1",
            bw(&[
                ("h2", 285.0),
                ("h3", 48.0),
                ("h4", 49.0),
                ("h5", 284.0),
                ("h6", 287.0),
            ]),
        ),
        machine(
            "h2",
            bw(&[("h3", 288.0), ("h4", 49.0), ("h5", 286.0), ("h6", 283.0)]),
        ),
        machine("h3", bw(&[("h4", 49.0)])),
        machine("h4", bw(&[("h3", 49.0)])),
    ];
    let f = run(&mut ms);
    assert!(f.iter().all(|x| x.suspect.is_none()), "{f:#?}");
    assert_eq!(blamed(&f), [("h4", Scope::Client)], "{f:#?}");
    let links: Vec<&Option<Vec<String>>> = f
        .iter()
        .filter(|x| x.scope == Scope::Link)
        .map(|x| &x.link)
        .collect();
    assert_eq!(links.len(), 1, "{f:#?}");
    let ends = links[0].as_ref().map(|l| l.join(" "));
    assert!(
        ends.as_deref()
            .is_some_and(|e| e.contains("h1") && e.contains("h3")),
        "{f:#?}"
    );
    assert_ok(&ms, ["h2", "h3", "h5", "h6"]);
}

/// A star of two models whose clients wrote no documents, after a second round: a fine
/// measurement speaks of both its ends whatever the other's model, so the servers are shown fine
/// by their own clients. x, slow from its rack's server and from the helper the second round
/// chose, is blamed, and the helper (whose only other tests are to clients of unknown model) is
/// not made suspect by the one poor test it led.
#[test]
fn a_fine_test_to_a_client_of_unknown_model_shows_its_server_fine() {
    let mut b1 = machine("b1", bw(&[("c41", 14.0), ("c42", 14.1), ("c43", 13.9)]));
    b1.entry.sku = Some(model_b());
    let mut ms = vec![
        machine("s1", bw(&[("c11", 23.5), ("c12", 23.4), ("c13", 23.6)])),
        machine("s2", bw(&[("c21", 23.5), ("c22", 23.3), ("x", 11.0)])),
        machine("h", bw(&[("c31", 23.4), ("c32", 23.6), ("x", 11.2)])),
        b1,
        identity_only("x"),
    ];
    let f = run(&mut ms);
    assert_eq!(blamed(&f), [("x", Scope::Client)], "{f:#?}");
    assert!(f.iter().all(|x| x.suspect.is_none()), "{f:#?}");
    assert_ok(&ms, ["s2", "h"]);
}

/// A model whose paths run at two levels, the worse as common as the better, leaves its slow
/// machines suspect: only the parts tell a slower NIC from faults on many machines, so the
/// report asks no measurement of them (another would change no status).
#[test]
fn a_suspect_only_the_parts_can_settle_asks_no_measurement() {
    let mut ms: Vec<Machine> = (0..4)
        .map(|i| {
            let row: Vec<(String, f64)> = (0..6)
                .map(|c| (format!("c{c}"), if c < 3 { 23.5 } else { 11.7 }))
                .collect();
            let row: Vec<(&str, f64)> = row.iter().map(|(c, v)| (c.as_str(), *v)).collect();
            machine(&format!("s{i}"), bw(&row))
        })
        .collect();
    ms.extend((0..6).map(|c| identity_only(&format!("c{c}"))));
    let out = run_all(&mut ms);
    let two_levels: Vec<&Finding> = out
        .findings
        .iter()
        .filter(|f| f.message.contains("two levels"))
        .collect();
    assert!(!two_levels.is_empty(), "{:#?}", out.findings);
    assert!(out.resolve.is_empty(), "{:#?}", out.resolve);
    for c in ["c3", "c4", "c5"] {
        assert_eq!(
            status(&ms, c),
            MachineStatus::Suspect,
            "{c}: {}",
            reasons(&ms, c)
        );
    }
}

/// A second round's verdict on a rack of DCPerf's star whose server is of model B and two of its
/// three clients are slow: with the clients' models known, the server is even (one fine test,
/// one poor, besides the client in question) and each slow client has one witness fine
/// elsewhere, the helper that measured it. Two witnesses, one of them fine, blame the client;
/// the server is then fine for the other (seen in the fleet simulator: Star1, seed 104948).
#[test]
fn a_client_slow_from_an_even_server_and_a_fine_helper_is_blamed() {
    let with_model_b = |label: &str, row: &[(&str, f64)]| {
        let mut m = machine(label, bw(row));
        m.entry.sku = Some(model_b());
        m
    };
    let mut ms = vec![
        with_model_b("b1", &[("c1", 7.0), ("c2", 14.0), ("c3", 7.1)]),
        with_model_b(
            "b2",
            &[("d1", 14.1), ("d2", 13.9), ("d3", 14.0), ("c1", 6.9)],
        ),
        with_model_b(
            "b3",
            &[("e1", 14.0), ("e2", 14.2), ("e3", 13.8), ("c3", 7.0)],
        ),
    ];
    ms.extend(
        ["c1", "c2", "c3", "d1", "d2", "d3", "e1", "e2", "e3"]
            .into_iter()
            .map(identity_only),
    );
    let out = run_all(&mut ms);
    let mut found = blamed(&out.findings);
    found.sort();
    assert_eq!(
        found,
        [("c1", Scope::Client), ("c3", Scope::Client)],
        "{:#?}",
        out.findings
    );
    assert!(
        out.findings.iter().all(|x| x.suspect.is_none()),
        "{:#?}",
        out.findings
    );
    assert!(out.resolve.is_empty(), "{:#?}", out.resolve);
    assert_ok(&ms, ["b1", "b2", "b3", "c2"]);
}
