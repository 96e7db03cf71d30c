//! The fleet simulator (issue 28): synthetic fleets shaped like real ones, with known faults,
//! judged by the real pipeline (`judge::fleet::judge`: groups, compare, blame, accounting), and
//! scored against the truth.
//!
//! Layouts: DCPerf's star (racks of 6 servers and 12 clients, each server measuring 2-4 of its
//! rack's clients; the clients write no document), the star with one server per 3 clients,
//! pairs (both write documents), a sparse mesh (each machine leads tests with 4 others) and a full mesh (every pair
//! measured once, by one of the two). Each test gives bandwidth both ways; paths run at the
//! slower end's speed (model B is 40 % slower than model A), with noise of up to ±2 %.
//! Faults halve a machine's figures as the server, as the client, when it sends, or in every
//! test, or one path's; `rack` slows 4 of a rack's 12 clients; `none` is a healthy fleet.
//! Every other draw mixes the two models (a quarter of the machines are B).
//!
//! It prints, per layout and fault kind, over all draws: faulty machines found (fail or warn),
//! suspect, missed; healthy machines failed or warned (must be 0); suspect machines before and
//! after a second round that runs the report's `resolve` measurements, and the share resolved;
//! for link faults, links found, suspect and missed.
//!
//! Usage: cargo bench --bench blame_sim [-- --draws 20 --sizes 24,200,2000]
//! (`--layouts Star --kinds Rack --seed S` replays one draw; BLAME_SIM_DEBUG=1 names the draws)

use health_check::judge::fleet::{ReaderConfig, judge};
use health_check::judge::machine::{ClientCheck, Machine};
use health_check::rng::Rng;
use health_check::wire::check::{CheckId, Status};
use health_check::wire::figures::{BANDWIDTH, Basis, Figure, REVERSE_BANDWIDTH};
use health_check::wire::fleet::{DocumentKind, FleetReport, MachineStatus, Scope, Sku};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layout {
    Star,
    Star1,
    Pairs,
    Sparse,
    Mesh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    None,
    Server,
    Client,
    Send,
    Machine,
    Link,
    Rack,
    /// Every path at half speed: a cause all machines share (the switch, the fabric).
    Fabric,
}

/// The truth of one fleet.
struct Fleet {
    names: Vec<String>,
    model_b: Vec<bool>,
    writes: Vec<bool>,
    tests: Vec<(usize, usize)>,
    fault: Vec<Option<Kind>>,
    links: HashSet<(usize, usize)>,
    fabric: bool,
}

fn pair(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

impl Fleet {
    fn layout(layout: Layout, n: usize, rng: &mut Rng) -> Fleet {
        let mut tests = Vec::new();
        let mut writes = vec![false; n];
        match layout {
            Layout::Star | Layout::Star1 => {
                let (servers, clients) = if layout == Layout::Star {
                    (6, 12)
                } else {
                    (1, 3)
                };
                let rack = servers + clients;
                for r in 0..n / rack {
                    let base = r * rack;
                    writes[base..base + servers].fill(true);
                    for s in base..base + servers {
                        let k = if layout == Layout::Star {
                            2 + rng.below(3)
                        } else {
                            3
                        };
                        let mut picked = BTreeSet::new();
                        while picked.len() < k {
                            picked.insert(base + servers + rng.below(clients));
                        }
                        tests.extend(picked.into_iter().map(|c| (s, c)));
                    }
                }
            }
            Layout::Pairs => {
                // The follower writes a document too (its local sections): its model is known.
                for a in (0..n - 1).step_by(2) {
                    writes[a] = true;
                    writes[a + 1] = true;
                    tests.push((a, a + 1));
                }
            }
            Layout::Sparse => {
                writes.fill(true);
                for s in 0..n {
                    let mut picked = BTreeSet::new();
                    while picked.len() < 4 {
                        let c = rng.below(n);
                        if c != s {
                            picked.insert(c);
                        }
                    }
                    tests.extend(picked.into_iter().map(|c| (s, c)));
                }
            }
            Layout::Mesh => {
                writes.fill(true);
                for s in 0..n {
                    for c in s + 1..n {
                        tests.push(if rng.below(2) == 0 { (s, c) } else { (c, s) });
                    }
                }
            }
        }
        Fleet {
            names: (0..n).map(|i| format!("h{i:04}")).collect(),
            model_b: vec![false; n],
            writes,
            tests,
            fault: vec![None; n],
            links: HashSet::new(),
            fabric: false,
        }
    }

    /// Injects faults of `kind` on machines the layout exercises in that role: about 2 % of
    /// them, at least one.
    fn inject(&mut self, kind: Kind, layout: Layout, rng: &mut Rng) {
        let n = self.names.len();
        let leads: BTreeSet<usize> = self.tests.iter().map(|t| t.0).collect();
        let measured: BTreeSet<usize> = self.tests.iter().map(|t| t.1).collect();
        let count = (n / 50).max(1);
        let pick = |pool: &BTreeSet<usize>, rng: &mut Rng| -> Vec<usize> {
            let v: Vec<usize> = pool.iter().copied().collect();
            let mut out = BTreeSet::new();
            while out.len() < count.min(v.len()) {
                out.insert(v[rng.below(v.len())]);
            }
            out.into_iter().collect()
        };
        let anyone: BTreeSet<usize> = leads.union(&measured).copied().collect();
        match kind {
            Kind::None => {}
            Kind::Fabric => self.fabric = true,
            Kind::Server => pick(&leads, rng)
                .into_iter()
                .for_each(|m| self.fault[m] = Some(kind)),
            Kind::Client => pick(&measured, rng)
                .into_iter()
                .for_each(|m| self.fault[m] = Some(kind)),
            Kind::Send | Kind::Machine => pick(&anyone, rng)
                .into_iter()
                .for_each(|m| self.fault[m] = Some(kind)),
            Kind::Link => {
                // Paths with no end in common: two bad links at one machine measured only by
                // them are that machine, as far as any data can tell.
                let mut ends = BTreeSet::new();
                for _ in 0..100 * count {
                    if self.links.len() == count {
                        break;
                    }
                    let t = self.tests[rng.below(self.tests.len())];
                    if !ends.contains(&t.0) && !ends.contains(&t.1) {
                        ends.extend([t.0, t.1]);
                        self.links.insert(pair(t.0, t.1));
                    }
                }
            }
            Kind::Rack => {
                let (servers, clients) = if layout == Layout::Star {
                    (6, 12)
                } else {
                    (1, 3)
                };
                let racks = n / (servers + clients);
                let base = rng.below(racks) * (servers + clients) + servers;
                let slow = if layout == Layout::Star { 4 } else { 1 };
                for c in base..base + slow {
                    if measured.contains(&c) {
                        self.fault[c] = Some(Kind::Client);
                    }
                }
            }
        }
    }

    /// Goodput of a test led by `s` measuring `c`, forward (s sends) or reverse.
    fn speed(&self, s: usize, c: usize, reverse: bool, rng: &mut Rng) -> f64 {
        let cap = |m: usize| if self.model_b[m] { 14.0_f64 } else { 23.5 };
        let sender = if reverse { c } else { s };
        let slow = self.fault[s] == Some(Kind::Server)
            || self.fault[c] == Some(Kind::Client)
            || self.fault[sender] == Some(Kind::Send)
            || self.fault[s] == Some(Kind::Machine)
            || self.fault[c] == Some(Kind::Machine)
            || self.links.contains(&pair(s, c))
            || self.fabric;
        let factor = if slow { 0.5 } else { 1.0 };
        let noise = 0.98 + 0.04 * rng.below(10_001) as f64 / 10_000.0;
        cap(s).min(cap(c)) * factor * noise
    }

    /// The checks a server's own run gives a path at `gbps` that do not pass, as the binary's:
    /// under the 10 Gbit/s floor fails; under 90 % of the server's link (25 Gbit/s for model
    /// A, 15 for B, about 94 % of it TCP payload) warns.
    fn own_checks(&self, s: usize, c: usize, gbps: f64) -> Vec<ClientCheck> {
        let client = self.names[c].clone();
        let link = if self.model_b[s] { 15.0 } else { 25.0 };
        let efficiency = 100.0 * gbps / (0.94 * link);
        let check = |rule: &str, status, value: f64, limit| {
            ClientCheck::own(
                &client,
                CheckId::new("network", rule).on(client.as_str()),
                status,
                Some(value),
                Some(limit),
                format!("{value:.1} under {limit}"),
            )
        };
        let mut out = Vec::new();
        if gbps < 10.0 {
            out.push(check("bandwidth", Status::Fail, gbps, 10.0));
        }
        if efficiency < 90.0 {
            out.push(check("link_efficiency", Status::Warn, efficiency, 90.0));
        }
        out
    }

    fn sku(&self, m: usize) -> Sku {
        Sku {
            cpu_model: Some(if self.model_b[m] { "B" } else { "A" }.into()),
            sockets: Some(2),
            cores_per_socket: Some(32),
            numa_nodes: Some(2),
        }
    }

    /// The machines of the documents: each writer's figures of its tests.
    fn machines(&self, tests: &[(usize, usize)], rng: &mut Rng) -> Vec<Machine> {
        let basis: Basis = Arc::from("profile=standard");
        let mut figures: BTreeMap<usize, Vec<Figure>> = BTreeMap::new();
        let mut checks: BTreeMap<usize, Vec<ClientCheck>> = BTreeMap::new();
        for (m, _) in self.writes.iter().enumerate().filter(|w| *w.1) {
            figures.insert(m, Vec::new());
        }
        for &(s, c) in tests {
            for (family, reverse) in [(&BANDWIDTH, false), (&REVERSE_BANDWIDTH, true)] {
                let v = self.speed(s, c, reverse, rng);
                let f = Figure::new(family, vec![self.names[c].clone()], v, basis.clone())
                    .expect("a positive figure");
                figures.entry(s).or_default().push(f);
                if !reverse {
                    checks
                        .entry(s)
                        .or_default()
                        .extend(self.own_checks(s, c, v));
                }
            }
        }
        figures
            .into_iter()
            .map(|(s, figs)| {
                let mut m = Machine::measured_only(&self.names[s]);
                m.client_checks = checks.remove(&s).unwrap_or_default();
                m.entry.source = format!("{}.json", self.names[s]);
                m.entry.kind = DocumentKind::HealthCheck;
                m.entry.sku = Some(self.sku(s));
                m.entry.figures = figs.len();
                m.figures = figs;
                m
            })
            .collect()
    }
}

#[derive(Default, Clone)]
struct Score {
    draws: usize,
    faulty: usize,
    found: usize,
    suspect: usize,
    missed: usize,
    healthy_flagged: usize,
    healthy_suspect: usize,
    suspects_before: usize,
    suspects_after: usize,
    /// Measurements the first round's `resolve` asks for, and the second round's.
    resolve_before: usize,
    resolve_after: usize,
    /// Healthy machines suspect or flagged after the second round.
    healthy_suspect_after: usize,
    healthy_flagged_after: usize,
    /// Draws whose second round left as many measurements to make, or more.
    resolve_grew: usize,
    found_after: usize,
    links: usize,
    links_found: usize,
    links_suspect: usize,
    groups: usize,
    group_draws: usize,
    seconds: f64,
}

fn statuses(r: &FleetReport) -> BTreeMap<&str, MachineStatus> {
    r.machines
        .iter()
        .map(|m| (m.label.as_str(), m.status))
        .collect()
}

fn reader() -> ReaderConfig {
    ReaderConfig::builtin()
}

fn flagged(s: MachineStatus) -> bool {
    matches!(s, MachineStatus::Warn | MachineStatus::Fail)
}

fn draw(layout: Layout, kind: Kind, n: usize, seed: u64, score: &mut Score) {
    let mut rng = Rng::new(seed);
    let mut fleet = Fleet::layout(layout, n, &mut rng);
    if kind == Kind::None || seed % 2 == 0 {
        // Two models: a quarter of the machines are B.
        for m in 0..n {
            fleet.model_b[m] = rng.below(4) == 0;
        }
    }
    fleet.inject(kind, layout, &mut rng);
    let started = Instant::now();
    let (report, _) = judge(fleet.machines(&fleet.tests, &mut rng), &reader(), None);
    score.seconds += started.elapsed().as_secs_f64();
    score.draws += 1;
    let st = statuses(&report);
    let status = |m: usize| st.get(fleet.names[m].as_str()).copied();
    let groups = report
        .findings
        .iter()
        .filter(|f| f.scope == Scope::Group)
        .count();
    score.groups += groups;
    score.group_draws += usize::from(groups > 0);
    let mut suspects_before = 0;
    for m in 0..n {
        let Some(s) = status(m) else { continue };
        if fleet.fault[m].is_some() {
            score.faulty += 1;
            match s {
                _ if flagged(s) => score.found += 1,
                MachineStatus::Suspect => score.suspect += 1,
                _ => {
                    score.missed += 1;
                    if std::env::var_os("BLAME_SIM_DEBUG").is_some() {
                        let name = &fleet.names[m];
                        eprintln!(
                            "{layout:?} {n} {kind:?} seed {seed}: missed {name} ({:?}, model B: {}, {s:?})",
                            fleet.fault[m], fleet.model_b[m]
                        );
                        for f in report
                            .findings
                            .iter()
                            .filter(|f| f.message.contains(name.as_str()))
                        {
                            eprintln!("  {:?} {} {}: {}", f.scope, f.machine, f.figure, f.message);
                        }
                        let tests: Vec<String> = fleet
                            .tests
                            .iter()
                            .filter(|t| t.0 == m || t.1 == m)
                            .map(|t| {
                                format!(
                                    "{}->{} (B: {}, {}; faults {:?}, {:?})",
                                    t.0,
                                    t.1,
                                    fleet.model_b[t.0],
                                    fleet.model_b[t.1],
                                    fleet.fault[t.0],
                                    fleet.fault[t.1]
                                )
                            })
                            .collect();
                        eprintln!("  tests: {tests:?}");
                    }
                }
            }
        } else if flagged(s) {
            score.healthy_flagged += 1;
            if std::env::var_os("BLAME_SIM_DEBUG").is_some() {
                let m = report.machines.iter().find(|e| e.label == fleet.names[m]);
                eprintln!("{layout:?} {n} {kind:?} seed {seed}: healthy flagged: {m:#?}");
                eprintln!("findings: {:#?}", report.findings);
            }
        } else if s == MachineStatus::Suspect {
            score.healthy_suspect += 1;
        }
        if s == MachineStatus::Suspect {
            suspects_before += 1;
        }
    }
    for &(a, b) in &fleet.links {
        score.links += 1;
        let (na, nb) = (&fleet.names[a], &fleet.names[b]);
        let about = |f: &&health_check::wire::fleet::Finding| {
            f.link
                .as_ref()
                .is_some_and(|l| l.contains(na) && l.contains(nb))
        };
        if report
            .findings
            .iter()
            .filter(about)
            .any(|f| f.suspect.is_none())
        {
            score.links_found += 1;
        } else if report.findings.iter().any(|f| about(&f)) {
            score.links_suspect += 1;
        }
    }
    score.suspects_before += suspects_before;
    score.resolve_before += report.resolve.len();
    if report.resolve.is_empty() {
        // No second round: the first stands.
        score.suspects_after += suspects_before;
        score.healthy_suspect_after += (0..n)
            .filter(|&m| fleet.fault[m].is_none() && status(m) == Some(MachineStatus::Suspect))
            .count();
        score.healthy_flagged_after += (0..n)
            .filter(|&m| fleet.fault[m].is_none() && status(m).is_some_and(flagged))
            .count();
        score.found_after += (0..n)
            .filter(|&m| fleet.fault[m].is_some() && status(m).is_some_and(flagged))
            .count();
        return;
    }
    // The second round: the report's measurements, judged with the first round's.
    let index: BTreeMap<&str, usize> = fleet
        .names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut tests = fleet.tests.clone();
    tests.extend(
        report
            .resolve
            .iter()
            .map(|r| (index[r.from.as_str()], index[r.to.as_str()])),
    );
    // Every host of the second round writes a document (the measured ones their identity).
    for r in &report.resolve {
        fleet.writes[index[r.to.as_str()]] = true;
    }
    let (second, _) = judge(fleet.machines(&tests, &mut rng), &reader(), None);
    score.resolve_after += second.resolve.len();
    if second.resolve.len() >= report.resolve.len() {
        score.resolve_grew += 1;
        if std::env::var_os("BLAME_SIM_DEBUG").is_some() {
            eprintln!(
                "{layout:?} {n} {kind:?} seed {seed}: resolve {} -> {}",
                report.resolve.len(),
                second.resolve.len()
            );
        }
    }
    let st = statuses(&second);
    for m in 0..n {
        let Some(&s) = st.get(fleet.names[m].as_str()) else {
            continue;
        };
        if s == MachineStatus::Suspect {
            score.suspects_after += 1;
        }
        if fleet.fault[m].is_some() && flagged(s) {
            score.found_after += 1;
        }
        if fleet.fault[m].is_none() {
            score.healthy_suspect_after += usize::from(s == MachineStatus::Suspect);
            score.healthy_flagged_after += usize::from(flagged(s));
            if std::env::var_os("BLAME_SIM_DEBUG").is_some() && flagged(s) {
                let name = &fleet.names[m];
                let e = second.machines.iter().find(|e| &e.label == name);
                eprintln!(
                    "{layout:?} {n} {kind:?} seed {seed}: healthy {name} {s:?} after round 2: {:?}",
                    e.map(|e| &e.reasons)
                );
                if std::env::var_os("BLAME_SIM_DEBUG_ALL").is_some() {
                    for e in &second.machines {
                        if e.status != MachineStatus::Ok {
                            eprintln!("  machine {} {:?} {:?}", e.label, e.status, e.reasons);
                        }
                    }
                    eprintln!("  {} findings in round 2", second.findings.len());
                    for g in &second.groups {
                        eprintln!("  group {} {:?}", g.label, g.machines);
                        for fs in &g.figures {
                            eprintln!(
                                "    {} n={} median={} mad={}",
                                fs.figure, fs.count, fs.median, fs.mad
                            );
                        }
                    }
                    eprintln!(
                        "  tests round 2: {:?}",
                        tests
                            .iter()
                            .filter(|t| t.1 == m || t.0 == m)
                            .collect::<Vec<_>>()
                    );
                    for f in &second.findings {
                        eprintln!("  {:?} {}: {}", f.scope, f.headline, f.message);
                    }
                    for f in &report.findings {
                        eprintln!("  round 1: {:?} {}: {}", f.scope, f.headline, f.message);
                    }
                    eprintln!(
                        "  resolve: {:?}",
                        report
                            .resolve
                            .iter()
                            .map(|r| format!("{}->{}", r.from, r.to))
                            .collect::<Vec<_>>()
                    );
                }
            }
            if std::env::var_os("BLAME_SIM_DEBUG").is_some() && s == MachineStatus::Suspect {
                let name = &fleet.names[m];
                eprintln!(
                    "{layout:?} {n} {kind:?} seed {seed}: healthy {name} suspect after round 2; \
                     its tests in both rounds: {:?}",
                    tests
                        .iter()
                        .filter(|t| t.0 == m || t.1 == m)
                        .map(|t| format!(
                            "{} -> {}{}",
                            fleet.names[t.0],
                            fleet.names[t.1],
                            if fleet.fault[t.1].is_some() {
                                " (faulty)"
                            } else {
                                ""
                            }
                        ))
                        .collect::<Vec<_>>()
                );
                for f in second
                    .findings
                    .iter()
                    .filter(|f| f.suspect.as_ref().is_some_and(|s| s.contains(name)))
                {
                    eprintln!("  {}: {}", f.headline, f.message);
                }
                for f in report
                    .findings
                    .iter()
                    .filter(|f| f.message.contains(name.as_str()))
                {
                    eprintln!("  round 1: {}: {}", f.headline, f.message);
                }
            }
        }
    }
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.0} %", 100.0 * a as f64 / b as f64)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| default.to_string())
    };
    let draws: u64 = value("--draws", "20").parse().expect("--draws N");
    let sizes: Vec<usize> = value("--sizes", "24,200,2000")
        .split(',')
        .map(|s| s.parse().expect("--sizes N,N"))
        .collect();
    // `--layouts Star,Mesh` and `--kinds Rack` narrow the table (to look at one row's draws).
    let layouts_wanted = value("--layouts", "");
    let kinds_wanted = value("--kinds", "");
    // `--seed S`: the one draw a debug line named.
    let only_seed: Option<u64> = args.iter().position(|a| a == "--seed").map(|i| {
        args.get(i + 1)
            .and_then(|s| s.parse().ok())
            .expect("--seed N")
    });
    let chosen =
        |wanted: &str, name: &str| wanted.is_empty() || wanted.split(',').any(|w| w == name);
    let layouts = [
        Layout::Star,
        Layout::Star1,
        Layout::Pairs,
        Layout::Sparse,
        Layout::Mesh,
    ];
    let kinds = [
        Kind::None,
        Kind::Server,
        Kind::Client,
        Kind::Send,
        Kind::Machine,
        Kind::Link,
        Kind::Rack,
        Kind::Fabric,
    ];
    println!(
        "| layout | machines | fault | draws | faulty | found | suspect | missed | healthy failed | \
         healthy suspect | suspects before -> after (resolved) | found after round 2 | resolve before -> after (draws not shrinking) | healthy suspect / failed after round 2 | links found / suspect / of | group findings (draws) | ms per compare |"
    );
    println!(
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    let mut total = Score::default();
    for layout in layouts {
        for &n in &sizes {
            // A full mesh of 2,000 is 2 million tests: the mesh stops at 200.
            if layout == Layout::Mesh && n > 200 {
                continue;
            }
            for kind in kinds {
                let star = matches!(layout, Layout::Star | Layout::Star1);
                if kind == Kind::Rack && !star
                    || !chosen(&layouts_wanted, &format!("{layout:?}"))
                    || !chosen(&kinds_wanted, &format!("{kind:?}"))
                {
                    continue;
                }
                let mut score = Score::default();
                let seeds: Vec<u64> = match &only_seed {
                    Some(seed) => vec![*seed],
                    None => (0..draws).map(|d| 1 + d * 7919 + n as u64).collect(),
                };
                for seed in seeds {
                    draw(layout, kind, n, seed, &mut score);
                }
                println!(
                    "| {layout:?} | {n} | {kind:?} | {} | {} | {} ({}) | {} | {} | {} | {} | {} -> {} ({}) | {} | {} -> {} ({}) | {} / {} | {} / {} / {} | {} ({}) | {:.1} |",
                    score.draws,
                    score.faulty,
                    score.found,
                    pct(score.found, score.faulty),
                    score.suspect,
                    score.missed,
                    score.healthy_flagged,
                    score.healthy_suspect,
                    score.suspects_before,
                    score.suspects_after,
                    pct(
                        score.suspects_before.saturating_sub(score.suspects_after),
                        score.suspects_before
                    ),
                    score.found_after,
                    score.resolve_before,
                    score.resolve_after,
                    score.resolve_grew,
                    score.healthy_suspect_after,
                    score.healthy_flagged_after,
                    score.links_found,
                    score.links_suspect,
                    score.links,
                    score.groups,
                    score.group_draws,
                    1e3 * score.seconds / score.draws as f64,
                );
                total.healthy_flagged += score.healthy_flagged;
                total.missed += score.missed;
                total.suspects_before += score.suspects_before;
                total.suspects_after += score.suspects_after;
                total.resolve_before += score.resolve_before;
                total.resolve_after += score.resolve_after;
                total.resolve_grew += score.resolve_grew;
                total.healthy_suspect_after += score.healthy_suspect_after;
                total.healthy_flagged_after += score.healthy_flagged_after;
                if kind == Kind::Fabric {
                    total.group_draws += score.group_draws;
                    total.draws += score.draws;
                } else {
                    total.groups += score.groups;
                }
            }
        }
    }
    println!(
        "\nhealthy machines failed or warned: {}; faulty machines neither found nor suspect: {}; \
         a shared fabric fault named by a group finding in {} of {} draws; group findings \
         without one: {}; suspects resolved by a second round: {}; resolve {} -> {} after it \
         (draws where it did not shrink: {}); healthy machines suspect / failed after it: {} / {}",
        total.healthy_flagged,
        total.missed,
        total.group_draws,
        total.draws,
        total.groups,
        pct(
            total.suspects_before.saturating_sub(total.suspects_after),
            total.suspects_before
        ),
        total.resolve_before,
        total.resolve_after,
        total.resolve_grew,
        total.healthy_suspect_after,
        total.healthy_flagged_after,
    );
}
