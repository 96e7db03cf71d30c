//! Who is to blame for poor per-client figures (bandwidth, ping), from every document together,
//! whatever the layout: DCPerf's star (only servers write documents), pairs, or a mesh.
//!
//! Each figure of one machine about one client is a measurement of a path between two machines.
//! A machine's value is the median of the measurements it took part in (as the one that
//! measured, or as the one measured); the median of those over the machines of one model is the
//! reference, and each measurement and each machine is judged against it. The worst machine flagged, with two or more measurements, is
//! blamed: as `server` when all its own measurements are poor, as `client` when every machine
//! that measured it found it poor, as `machine` when both. Its measurements are then explained,
//! and the next worst is looked for. A poor measurement nobody explains is the path's: a `link`
//! finding naming both ends, which fails neither. A client with no document of its own (the
//! star's clients) is a machine of the report, judged on this evidence.

use super::compare::{RuleCache, client_index};
use super::machine::Machine;
use super::pipeline::{Judged, Population, Sample, Subject};
use super::reference::Reference;
use crate::units::number;
use crate::wire::figures::{Family, Figure};
use crate::wire::fleet::{Finding, Scope};
use std::collections::{BTreeMap, BTreeSet};

/// One measurement of a path.
#[derive(Debug, Clone, Copy)]
struct Measurement {
    server: usize,
    figure: usize,
    client: usize,
}

impl Measurement {
    fn involves(&self, m: usize) -> bool {
        self.server == m || self.client == m
    }
}

/// Names of a machine's own loopback: a test against them measures the kernel, not a path.
fn loopback(name: &str) -> bool {
    matches!(name, "localhost" | "127.0.0.1" | "::1" | "ip6-localhost") || name.starts_with("127.")
}

/// The machine each figure's client is, per machine and figure: one of the inputs, or a machine
/// known only from these measurements (added to `machines`). Loopback clients, and a machine's
/// own name, are no other machine.
fn resolve_clients(machines: &mut Vec<Machine>) -> Vec<Vec<Option<usize>>> {
    let known = client_index(machines);
    let mut seen = BTreeSet::new();
    let mut unknown = Vec::new();
    for machine in machines.iter() {
        for c in machine.figures.iter().filter_map(Figure::client) {
            if !loopback(c) && !known.contains_key(c) && seen.insert(c.to_string()) {
                unknown.push(c.to_string());
            }
        }
    }
    machines.extend(unknown.iter().map(|name| Machine::measured_only(name)));
    let index = client_index(machines);
    machines
        .iter()
        .enumerate()
        .map(|(m, machine)| {
            machine
                .figures
                .iter()
                .map(|fig| {
                    fig.client()
                        .filter(|c| !loopback(c))
                        .and_then(|c| index.get(c).copied())
                        .filter(|&c| c != m)
                })
                .collect()
        })
        .collect()
}

/// What the blame found: findings, and which measurements each finding explains.
pub struct Blamed {
    /// Findings about machines and links, worst first within each figure.
    pub findings: Vec<Finding>,
    /// (server, client, figure key) of every poor measurement a finding explains.
    pub explained: BTreeSet<(usize, usize, String)>,
}

/// Finds the machines and links behind poor per-client figures. Adds the clients that have no
/// document of their own to `machines`, and sets the status of every machine it blames.
pub fn blame(machines: &mut Vec<Machine>, cache: &mut RuleCache) -> Blamed {
    let clients = resolve_clients(machines);
    // Per figure key and group of the measuring machine, and per basis.
    let mut parts: BTreeMap<(String, Option<usize>, String), Vec<Measurement>> = BTreeMap::new();
    for (m, machine) in machines.iter().enumerate() {
        for (f, fig) in machine.figures.iter().enumerate() {
            let Some(client) = clients.get(m).and_then(|r| r.get(f)).copied().flatten() else {
                continue;
            };
            let key = (fig.key(), machine.entry.group, fig.basis.to_string());
            parts.entry(key).or_default().push(Measurement {
                server: m,
                figure: f,
                client,
            });
        }
    }
    let mut out = Blamed {
        findings: Vec::new(),
        explained: BTreeSet::new(),
    };
    for ((key, _, _), all) in parts {
        judge_key(machines, &key, &all, cache, &mut out);
    }
    record_evidence(machines, &out);
    out
}

/// The measurement's figure.
fn figure<'a>(machines: &'a [Machine], x: &Measurement) -> &'a Figure {
    &machines[x.server].figures[x.figure]
}

fn judge_key(
    machines: &mut [Machine],
    key: &str,
    all: &[Measurement],
    cache: &mut RuleCache,
    out: &mut Blamed,
) {
    let family = figure(machines, &all[0]).family;
    let Some(rule) = cache.get(format!("{key}.*")) else {
        return;
    };
    let direction = rule.direction(family.direction);
    // The reference is the typical machine's: the median, over machines, of the median of the
    // measurements each took part in (a path's two slow ends must not make slow the norm).
    let quiet = Population::SIBLINGS.select(all, |x| Sample {
        value: figure(machines, x).value,
        who: x.server as i64,
        interfered: machines[x.server].interfered.contains_key(&family.section),
        flagged: false,
    });
    let ends = per_end(machines, quiet.iter().copied());
    let typical: Vec<f64> = ends
        .values()
        .filter_map(|mine| crate::stats::median(mine))
        .collect();
    let Some(reference) = Reference::of(&typical, ends.len()) else {
        return;
    };
    let poor: Vec<&Measurement> = all
        .iter()
        .filter(|x| {
            reference
                .judge(figure(machines, x).value, direction, &rule.spec)
                .flagged
        })
        .collect();
    if poor.is_empty() {
        return;
    }
    // Blame machines, worst first, until no machine stands out. Each machine's standing (the
    // median of its measurements not yet explained) is updated only where a blame removed some.
    let mut mine: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, x) in all.iter().enumerate() {
        mine.entry(x.server).or_default().push(i);
        if x.client != x.server {
            mine.entry(x.client).or_default().push(i);
        }
    }
    let mut gone = vec![false; all.len()];
    let standing_of = |ids: &[usize], gone: &[bool]| -> Option<f64> {
        let values: Vec<f64> = ids
            .iter()
            .filter(|&&i| !gone[i])
            .map(|&i| figure(machines, &all[i]).value)
            .collect();
        // One measurement alone cannot tell its two ends apart.
        if values.len() < 2 {
            return None;
        }
        crate::stats::median(&values)
    };
    let mut standing: BTreeMap<usize, f64> = mine
        .iter()
        .filter_map(|(&m, ids)| Some((m, standing_of(ids, &gone)?)))
        .collect();
    loop {
        let mut worst: Option<(usize, f64, f64)> = None;
        for (&m, &value) in &standing {
            let v = reference.judge(value, direction, &rule.spec);
            let how_bad = (value - reference.median).abs();
            // `>`: of equally poor machines the first in the report's order is blamed.
            if v.flagged && worst.is_none_or(|w| how_bad > w.2) {
                worst = Some((m, value, how_bad));
            }
        }
        let Some((m, value, _)) = worst else { break };
        let ids: Vec<usize> = mine[&m].iter().copied().filter(|&i| !gone[i]).collect();
        let theirs: Vec<&Measurement> = ids.iter().map(|&i| &all[i]).collect();
        out.findings.push(blame_finding(
            machines, m, value, key, family, &theirs, &poor, &reference, rule,
        ));
        let mut touched: BTreeSet<usize> = BTreeSet::new();
        for &i in &ids {
            let x = &all[i];
            out.explained.insert((x.server, x.client, key.to_string()));
            gone[i] = true;
            touched.insert(x.server);
            touched.insert(x.client);
        }
        for t in touched {
            match standing_of(&mine[&t], &gone) {
                Some(v) => standing.insert(t, v),
                None => standing.remove(&t),
            };
        }
    }
    // What no machine explains is the path's.
    for x in poor {
        if out.explained.insert((x.server, x.client, key.to_string())) {
            out.findings
                .push(link_finding(machines, x, key, all, &reference, rule));
        }
    }
}

/// Each machine's values among `xs`, the measurements it took part in (as server, client or
/// both), in one pass: a fleet has tens of thousands of measurements.
fn per_end<'a>(
    machines: &[Machine],
    xs: impl Iterator<Item = &'a Measurement>,
) -> BTreeMap<usize, Vec<f64>> {
    let mut by: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for x in xs {
        let v = figure(machines, x).value;
        by.entry(x.server).or_default().push(v);
        if x.client != x.server {
            by.entry(x.client).or_default().push(v);
        }
    }
    by
}

/// How a machine took part in a set of measurements: as server, as client, both.
fn scope_of(m: usize, xs: &[&Measurement]) -> Scope {
    let served = xs.iter().any(|x| x.server == m);
    let measured = xs.iter().any(|x| x.client == m);
    match (served, measured) {
        (true, true) => Scope::Machine,
        (true, false) => Scope::Server,
        _ => Scope::Client,
    }
}

#[allow(clippy::too_many_arguments)]
fn blame_finding(
    machines: &[Machine],
    m: usize,
    value: f64,
    key: &str,
    family: &'static Family,
    theirs: &[&Measurement],
    poor: &[&Measurement],
    reference: &Reference,
    rule: &super::rules::Rule,
) -> Finding {
    let scope = scope_of(m, theirs);
    let bad = theirs
        .iter()
        .filter(|x| {
            poor.iter()
                .any(|p| p.server == x.server && p.client == x.client)
        })
        .count();
    let n = theirs.len();
    let evidence = match scope {
        Scope::Server => format!("{bad} of its {n} clients are poor from it"),
        Scope::Client => format!("poor from {bad} of the {n} machines that measured it"),
        _ => format!("{bad} of the {n} paths through it are poor, both ways"),
    };
    let unit = family.unit;
    let message = format!(
        "{key}: {evidence} (median {} {unit} against {} {unit} for its model, tolerance {}%), \
         while the machines on the other ends do well elsewhere: the cause is on this machine's \
         side; look at its NIC, driver settings, cable and switch port",
        number(value),
        number(reference.median),
        rule.spec.tolerance_pct
    );
    Judged::new(value, *reference, rule, family.direction).finding(
        Subject {
            machine: machines[m].entry.label.clone(),
            figure: format!("{key}.*"),
            scope,
            client: None,
            link: None,
        },
        unit,
        machines[m].interfered.get(&family.section).cloned(),
        message,
    )
}

fn link_finding(
    machines: &[Machine],
    x: &Measurement,
    key: &str,
    all: &[Measurement],
    reference: &Reference,
    rule: &super::rules::Rule,
) -> Finding {
    let fig = figure(machines, x);
    let (a, b) = (
        &machines[x.server].entry.label,
        &machines[x.client].entry.label,
    );
    let others = |m: usize| {
        all.iter()
            .filter(|y| y.involves(m))
            .count()
            .saturating_sub(1)
    };
    let (oa, ob) = (others(x.server), others(x.client));
    let evidence = if oa > 0 && ob > 0 {
        format!(
            "poor only between {a} and {b}: {a}'s {oa} other measurement(s) and {b}'s {ob} are \
             fine; look at the path between them (cables, switch ports, routing, a congested \
             uplink)"
        )
    } else {
        format!(
            "the only measurement of this path cannot tell {a}, {b} and the path between them \
             apart ({a} has {oa} other measurement(s), {b} {ob}); measure {b} from another \
             machine (a mesh run) to find which"
        )
    };
    let unit = fig.family.unit;
    let message = format!(
        "{key} {a} -> {b}: {} {unit} against {} {unit} for the model (tolerance {}%): {evidence}",
        number(fig.value),
        number(reference.median),
        rule.spec.tolerance_pct
    );
    Judged::new(fig.value, *reference, rule, fig.family.direction).finding(
        Subject {
            machine: a.clone(),
            figure: fig.name(),
            scope: Scope::Link,
            client: fig.client().map(str::to_string),
            link: Some(vec![a.clone(), b.clone()]),
        },
        unit,
        machines[x.server]
            .interfered
            .get(&fig.family.section)
            .cloned(),
        message,
    )
}

/// Says on every machine what others' measurements found: a machine with no document of its own
/// is judged on them; the ends of a poor link are told so (it fails neither).
fn record_evidence(machines: &mut [Machine], out: &Blamed) {
    for f in &out.findings {
        if let Some(ends) = &f.link {
            for end in ends {
                if let Some(m) = machines.iter_mut().find(|m| &m.entry.label == end) {
                    m.entry.reasons.push(format!(
                        "one end of a poor path ({} <-> {}): see the link finding",
                        ends[0], ends[1]
                    ));
                }
            }
        }
    }
    for m in machines
        .iter_mut()
        .filter(|m| m.entry.kind == crate::wire::fleet::DocumentKind::None)
    {
        if !out
            .findings
            .iter()
            .any(|f| f.machine == m.entry.label && f.link.is_none())
        {
            m.entry.reasons.push(
                "no document of its own: judged on the measurements others took of it".into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::compare::tests::{fig, machine};
    use crate::judge::compare::{RuleCache, group};
    use crate::judge::rules::Rules;
    use crate::wire::figures::{BANDWIDTH, REVERSE_BANDWIDTH};

    fn run(ms: &mut Vec<Machine>) -> Vec<Finding> {
        let rules = Rules::builtin();
        group(ms);
        blame(ms, &mut RuleCache::new(&rules)).findings
    }

    fn bw(pairs: &[(&str, f64)]) -> Vec<Figure> {
        pairs
            .iter()
            .map(|(c, v)| fig(&BANDWIDTH, &[c], *v))
            .collect()
    }

    /// The machines blamed (not links), in the findings' order, with their scope.
    fn blamed(f: &[Finding]) -> Vec<(&str, Scope)> {
        f.iter()
            .filter(|x| x.scope != Scope::Link)
            .map(|x| (x.machine.as_str(), x.scope))
            .collect()
    }

    /// Two measurements are enough to tell a machine from its paths: a client two servers found
    /// slow is blamed (one measurement alone is a link).
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
    }

    /// The worst machine is blamed first, and what it explains no longer counts against the
    /// others: m2 looks slow only through its tests with m1 (very slow) and m3 (slow), so once
    /// they are blamed, m2 is not.
    #[test]
    fn the_worst_machine_is_blamed_first_and_clears_the_others() {
        let mut ms = vec![
            machine("m2", bw(&[("d", 9.4), ("e", 9.4)])),
            machine("m1", bw(&[("a", 1.0), ("b", 1.0), ("c", 1.0), ("m2", 1.0)])),
            machine("m3", bw(&[("a", 3.0), ("b", 3.0), ("c", 3.0), ("m2", 3.5)])),
        ];
        ms.extend((1..=5).map(|i| machine(&format!("g{i}"), bw(&[("d", 9.4), ("e", 9.4)]))));
        let f = run(&mut ms);
        assert_eq!(
            blamed(&f),
            [("m1", Scope::Server), ("m3", Scope::Server)],
            "{f:#?}"
        );
        assert!(
            f.iter().all(|x| x.scope != Scope::Link),
            "every slow test is explained by a machine: {f:#?}"
        );
    }

    /// Two machines as poor as each other, whose one shared test explains the other's
    /// slowness: the first in the report's order is blamed, and the other's one slow test left is
    /// a link. The same input always blames the same machine.
    #[test]
    fn of_two_equally_poor_machines_the_first_is_blamed() {
        for (first, second) in [("m1", "m2"), ("m2", "m1")] {
            let mut ms = vec![
                machine(
                    first,
                    bw(&[(second, 1.0), ("a", 1.0), ("c", 9.4), ("f", 9.4)]),
                ),
                machine(second, bw(&[("b", 1.0), ("d", 9.4), ("e", 9.4)])),
            ];
            ms.extend((1..=5).map(|i| machine(&format!("g{i}"), bw(&[("c", 9.4), ("d", 9.4)]))));
            let f = run(&mut ms);
            assert_eq!(blamed(&f), [(first, Scope::Server)], "{f:#?}");
            assert!(
                f[0].message.contains("2 of its 4 clients are poor from it"),
                "{}",
                f[0].message
            );
            let links: Vec<_> = f.iter().filter_map(|x| x.link.clone()).collect();
            assert_eq!(links, [vec![second.to_string(), "b".to_string()]], "{f:#?}");
        }
    }

    #[test]
    fn loopback_names_are_the_machine_itself() {
        for name in [
            "localhost",
            "127.0.0.1",
            "127.0.1.1",
            "::1",
            "ip6-localhost",
        ] {
            assert!(loopback(name), "{name}");
        }
        for name in [
            "c1",
            "10.0.0.1",
            "::2",
            "localhost.example.com",
            "1127.0.0.1",
        ] {
            assert!(!loopback(name), "{name}");
        }
        // A loopback client is no other machine: nothing is added, nothing blamed.
        let mut ms = vec![
            machine("s1", bw(&[("localhost", 2.0), ("127.0.0.1", 2.0)])),
            machine("s2", bw(&[("localhost", 9.4), ("127.0.0.1", 9.4)])),
            machine("s3", bw(&[("localhost", 9.4), ("127.0.0.1", 9.3)])),
        ];
        let f = run(&mut ms);
        assert_eq!(ms.len(), 3, "no machine made of a loopback name");
        assert!(f.is_empty(), "{f:#?}");
    }

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
            f[0].message.contains("3 of its 3 clients"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn a_client_every_server_found_slow_is_blamed_though_it_wrote_nothing() {
        // DCPerf's star: four servers measure c1..c4; only the servers have documents.
        let row = || bw(&[("c1", 9.4), ("c2", 9.3), ("c3", 1.2), ("c4", 9.5)]);
        let mut ms: Vec<Machine> = (1..=4).map(|i| machine(&format!("s{i}"), row())).collect();
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!((f[0].machine.as_str(), f[0].scope), ("c3", Scope::Client));
        assert!(
            f[0].message.contains("poor from 4 of the 4"),
            "{}",
            f[0].message
        );
        let c3 = ms.iter().find(|m| m.entry.label == "c3").unwrap();
        assert_eq!(c3.entry.kind, crate::wire::fleet::DocumentKind::None);
        assert_eq!(ms.len(), 8, "every client is a machine of the report");
        // A machine without a document is told it was judged on others' measurements, unless
        // they blamed it (its finding says so).
        for m in &ms {
            let told = reasons(&ms, &m.entry.label).contains("no document of its own");
            let want = m.entry.label.starts_with('c') && m.entry.label != "c3";
            assert_eq!(told, want, "{}: {:?}", m.entry.label, m.entry.reasons);
        }
    }

    /// A mesh: every pair measured once each way (forward and reverse figures).
    fn mesh(names: &[&str], slow: impl Fn(&str, &str) -> bool) -> Vec<Machine> {
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
            let mut ms = mesh(&names, |a, b| slow.contains(&a) || slow.contains(&b));
            let f = run(&mut ms);
            let blamed: BTreeSet<&str> = f.iter().map(|f| f.machine.as_str()).collect();
            assert_eq!(blamed, slow.iter().copied().collect(), "{f:#?}");
            // Here each pair is measured once, by the first of the two: h1 only leads tests,
            // h6 only answers them, the others do both (the machine is at fault).
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

    /// The reference is the quiet machines': servers whose network section was disturbed do
    /// not make their own slowness the norm.
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
        let mut blamed: Vec<(&str, Scope)> =
            f.iter().map(|f| (f.machine.as_str(), f.scope)).collect();
        blamed.sort_by_key(|b| b.0);
        let want = [
            ("b1", Scope::Server),
            ("b2", Scope::Server),
            ("b3", Scope::Server),
        ];
        assert_eq!(blamed, want, "{f:#?}");
    }

    #[test]
    fn in_a_mesh_a_slow_path_is_a_link_and_neither_end_is_blamed() {
        let names = ["h1", "h2", "h3", "h4", "h5", "h6"];
        let mut ms = mesh(&names, |a, b| (a, b) == ("h2", "h5"));
        let f = run(&mut ms);
        assert!(!f.is_empty());
        assert!(f.iter().all(|f| f.scope == Scope::Link), "{f:#?}");
        assert!(
            f.iter()
                .all(|f| f.link.as_deref() == Some(&["h2".to_string(), "h5".to_string()][..]))
        );
        assert!(
            f[0].message.contains("poor only between h2 and h5"),
            "{}",
            f[0].message
        );
    }

    fn reasons(ms: &[Machine], label: &str) -> String {
        let m = ms.iter().find(|m| m.entry.label == label).unwrap();
        m.entry.reasons.join("; ")
    }

    /// A path is poor "only between" its ends only when both have other measurements (the mesh
    /// test above); when either end has none, its one measurement cannot tell the ends from the
    /// path, whichever end it is. Both ends are told; the machines that took no part are not.
    #[test]
    fn a_path_is_told_from_its_ends_only_when_both_have_other_measurements() {
        let good = |ms: &mut Vec<Machine>| {
            ms.push(machine("g1", bw(&[("c", 0.95), ("x", 0.95), ("y", 0.95)])));
            ms.push(machine("g2", bw(&[("c", 0.95), ("x", 0.96), ("y", 0.94)])));
            ms.push(machine("g3", bw(&[("x", 0.95), ("y", 0.95)])));
        };
        // a's one measurement, of c, whom two others measured.
        let mut ms = vec![machine("a", bw(&[("c", 0.19)]))];
        good(&mut ms);
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].scope, Scope::Link);
        assert!(
            f[0].message
                .contains("cannot tell a, c and the path between them apart (a has 0 other measurement(s), c 2)"),
            "{}",
            f[0].message
        );
        for end in ["a", "c"] {
            assert!(
                reasons(&ms, end).contains("one end of a poor path (a <-> c)"),
                "{end}: {}",
                reasons(&ms, end)
            );
        }
        assert!(!reasons(&ms, "g1").contains("poor path"));
        // s measured x and y well and z, whom nobody else measured, poorly.
        let mut ms = vec![machine("s", bw(&[("x", 0.95), ("y", 0.95), ("z", 0.19)]))];
        good(&mut ms);
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].message
                .contains("cannot tell s, z and the path between them apart (s has 2 other measurement(s), z 0)"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn one_measurement_alone_is_a_link_naming_both_ends() {
        // Pairs: a measures b, c measures d (slow), e measures f; followers write no figures.
        let mut ms = vec![
            machine("a", bw(&[("b", 0.95)])),
            machine("c", bw(&[("d", 0.19)])),
            machine("e", bw(&[("f", 0.94)])),
            machine("g", bw(&[("h", 0.96)])),
        ];
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].scope, Scope::Link);
        assert_eq!(
            f[0].link.as_deref(),
            Some(&["c".to_string(), "d".to_string()][..])
        );
        assert!(
            f[0].message.contains("cannot tell c, d and the path"),
            "{}",
            f[0].message
        );
    }
}
