//! Which machine, which side of a test, or which path explains the poor measurements of one
//! figure, from all of a fleet's measurements at once.
//!
//! Each measurement is a path from a server (the machine that led the test) to a client, poor
//! or not against the reference for its pair of models. The explanations are, per machine, a
//! fault in one role (as server: slow to the clients it measures; as client: slow from the
//! servers that measure it) and, per path, a link. A role fault is accepted only on evidence the
//! rest of the fleet does not explain (voting with explaining-away, as 007 and NetBouncer
//! localise faults from all-pairs probes):
//!
//! - most of the machine's measurements in that role are poor, at least two of them, and
//! - at least two of the poor ones are with distinct peers that are *fine elsewhere*: most of a
//!   peer's other measurements, not yet explained, are not poor.
//!
//! The best supported fault (most such peers, then most poor measurements) is accepted first;
//! its measurements are then explained and no longer count for or against anyone, and the next
//! is looked for. A healthy server that measured two slow clients is thus cleared once the
//! clients (slow from other servers too) are blamed; its two poor measurements never had peers
//! that were fine elsewhere.
//!
//! When no fault has such support, one may still stand on more witnesses of a weaker kind: at
//! least three poor measurements with three distinct peers each *even* elsewhere (as many poor
//! measurements as fine ones, never mostly poor). A third of a rack's clients slow leaves every
//! server that measured them with half its tests poor; no server is fine elsewhere, so no
//! client could be blamed and every path stayed suspect through any number of second rounds.
//! The worst such client explains its measurements, its servers become fine, and the rest follow
//! on strict support. Two such witnesses are enough when one of them is fine elsewhere: a second
//! round's helper that found a client slow, beside a server left even by that client's slow
//! neighbour (the two are explained by one fault; the server would need a fault of its own and
//! the helper's path another).
//!
//! A poor measurement left over is a link when both its ends are fine elsewhere. Otherwise the
//! data cannot tell its candidates apart (a client measured by one server only: the client or
//! the path?): it is ambiguous, with the ends that are not shown fine.

use foldhash::fast::FixedState;
use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

/// The part a machine plays in a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// It led the test (wrote the figure).
    Server,
    /// It was measured.
    Client,
}

/// One measurement of a path, as inference sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Obs {
    /// The machine that measured.
    pub server: usize,
    /// The machine measured (never the server).
    pub client: usize,
    /// Worse than its reference beyond the rule.
    pub poor: bool,
    /// The end of unknown model, in a fleet of several models: a poor path to it may be its
    /// model's level, so it is evidence about the other end only when this end is fine
    /// elsewhere.
    pub only: Option<usize>,
}

impl Obs {
    /// Whether it is evidence about `m`: a fine measurement is about both ends (neither is
    /// slow along it, whatever the model of the other); a poor one with an end of unknown model
    /// only about that end.
    pub fn about(&self, m: usize) -> bool {
        !self.poor || self.only.is_none_or(|o| o == m)
    }

    /// The machine at the other end from `m`.
    pub fn peer(&self, m: usize) -> usize {
        if self.server == m {
            self.client
        } else {
            self.server
        }
    }
}

/// A fault accepted on one machine in one role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The machine.
    pub machine: usize,
    /// The role it is slow in.
    pub role: Role,
    /// The measurements it explains (its measurements in that role not explained before).
    pub obs: Vec<usize>,
    /// How many of them are poor.
    pub poor: usize,
    /// The distinct peers of its poor measurements that are fine elsewhere (or even, when
    /// `on_even_peers`).
    pub fine_peers: Vec<usize>,
    /// Accepted on peers only even elsewhere, for want of a fault with peers shown fine.
    pub on_even_peers: bool,
}

/// A poor measurement that no fault explains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unexplained {
    /// The measurement.
    pub obs: usize,
    /// How each end (server, then client) stands in its role with everyone else: the evidence
    /// that shows it fine, or does not.
    pub ends: [(usize, Role, Tally); 2],
    /// Its ends that are not shown fine elsewhere: empty for a link (both ends are fine, the
    /// path is to blame); otherwise the candidates besides the path.
    pub unverified: Vec<usize>,
}

/// What inference found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inference {
    /// Faults, in the order they were accepted.
    pub faults: Vec<Fault>,
    /// Per measurement, the fault that explains it.
    pub explained_by: Vec<Option<usize>>,
    /// Poor measurements no fault explains: links, and ambiguous ones.
    pub unexplained: Vec<Unexplained>,
}

/// Counts of measurements not yet explained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Measurements.
    pub n: u32,
    /// Of which poor.
    pub poor: u32,
}

impl Tally {
    fn add(&mut self, poor: bool, by: i32) {
        self.n = self.n.wrapping_add_signed(by);
        if poor {
            self.poor = self.poor.wrapping_add_signed(by);
        }
    }

    /// Fine: measured, and most of it not poor.
    pub fn fine(&self) -> bool {
        self.n > 0 && 2 * self.poor < self.n
    }

    /// Even: measured, and exactly as many poor measurements as fine ones.
    fn even(&self) -> bool {
        self.n > 0 && 2 * self.poor == self.n
    }
}

/// A machine in one role: the key of the tallies.
type Side = (usize, Role);

/// The live (not explained) measurements about each machine in each role, in all and per peer.
struct Live<'a> {
    obs: &'a [Obs],
    explained_by: Vec<Option<usize>>,
    tallies: Tallies,
}

/// Counts of live measurements per side (a slot each: machine x role), and per side and peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Tallies {
    side: Vec<Tally>,
    /// By [`Tallies::pair_key`]: 16 bytes an entry (a fleet's blame holds two per
    /// measurement).
    pair: HashMap<u64, Tally, FixedState>,
}

impl Tallies {
    /// The slot of `side`.
    fn slot((machine, role): Side) -> usize {
        2 * machine + usize::from(role == Role::Client)
    }

    /// A side and a peer in one word: the side's slot and the peer, 32 bits each (a fleet of
    /// two billion machines would be needed to overflow it).
    fn pair_key(side: Side, peer: usize) -> u64 {
        ((Self::slot(side) as u64) << 32) | (peer as u64 & 0xffff_ffff)
    }

    /// `side`'s live measurements with anyone but `peer`.
    fn elsewhere(&self, side: Side, peer: usize) -> Tally {
        let all = self.side.get(Self::slot(side)).copied().unwrap_or_default();
        let between = self
            .pair
            .get(&Self::pair_key(side, peer))
            .copied()
            .unwrap_or_default();
        Tally {
            n: all.n - between.n,
            poor: all.poor - between.poor,
        }
    }
}

impl Role {
    fn other(self) -> Role {
        match self {
            Role::Server => Role::Client,
            Role::Client => Role::Server,
        }
    }

    /// The role `m` plays in `x`.
    fn of(m: usize, x: &Obs) -> Role {
        if x.server == m {
            Role::Server
        } else {
            Role::Client
        }
    }
}

impl<'a> Live<'a> {
    fn new(obs: &'a [Obs]) -> Live<'a> {
        let machines = obs.iter().map(|x| x.server.max(x.client) + 1).max();
        let mut live = Live {
            obs,
            explained_by: vec![None; obs.len()],
            tallies: Tallies {
                side: vec![Tally::default(); 2 * machines.unwrap_or(0)],
                pair: HashMap::with_capacity_and_hasher(2 * obs.len(), FixedState::default()),
            },
        };
        for x in obs {
            live.count(x, 1);
        }
        live
    }

    fn count(&mut self, x: &Obs, by: i32) {
        for (side, peer) in [
            ((x.server, Role::Server), x.client),
            ((x.client, Role::Client), x.server),
        ] {
            if x.about(side.0) {
                self.tallies.side[Tallies::slot(side)].add(x.poor, by);
                self.tallies
                    .pair
                    .entry(Tallies::pair_key(side, peer))
                    .or_default()
                    .add(x.poor, by);
            }
        }
    }

    fn explain(&mut self, id: usize, fault: usize) {
        if self.explained_by[id].is_none() {
            self.explained_by[id] = Some(fault);
            self.count(&self.obs[id], -1);
        }
    }

    /// Whether the peer of `m` in measurement `i` is fine elsewhere in its role (or, with
    /// `even`, at least even there); or, when this is all it did in that role (a second round's
    /// helper leads one test), in its other role.
    fn peer_fine(&self, i: usize, m: usize, even: bool) -> bool {
        let x = &self.obs[i];
        let peer = x.peer(m);
        let role = Role::of(peer, x);
        let ok = |t: Tally| t.fine() || (even && t.even());
        let here = self.tallies.elsewhere((peer, role), m);
        ok(here) || (here.n == 0 && ok(self.tallies.elsewhere((peer, role.other()), m)))
    }

    /// Whether measurement `i` is evidence about its end `m`.
    fn speaks_of(&self, i: usize, m: usize) -> bool {
        self.obs[i].about(m) || self.peer_fine(i, m, false)
    }

    /// `m`'s live measurements in `ids` (its measurements in one role) with anyone but `peer`
    /// that speak of it: whether they show it fine in that role. A poor one with a machine
    /// found `faulty` (in either role) is put down to that machine: a helper measured once by
    /// a machine with a fault of its own is not made suspect by it.
    fn shown(&self, ids: &[usize], m: usize, peer: usize, faulty: &[bool]) -> Tally {
        let mut t = Tally::default();
        for &i in ids {
            let x = &self.obs[i];
            let other = x.peer(m);
            if self.explained_by[i].is_none()
                && other != peer
                && !(x.poor && faulty[other])
                && self.speaks_of(i, m)
            {
                t.add(x.poor, 1);
            }
        }
        t
    }
}

/// Each machine's measurements, per role.
fn by_role(obs: &[Obs], machines: usize) -> Vec<[Vec<usize>; 2]> {
    let mut out = vec![[Vec::new(), Vec::new()]; machines];
    for (i, x) in obs.iter().enumerate() {
        out[x.server][0].push(i);
        out[x.client][1].push(i);
    }
    out
}

/// Poor measurements, and distinct peers even elsewhere, a fault on even peers needs.
const EVEN_WITNESSES: usize = 3;

/// The fault of `m` in `role` the live measurements support, if any. A machine already found
/// faulty in its other role needs less: one poor measurement or more, most of them, every one
/// with a peer fine elsewhere (a half mesh measures some machines once in a role). With `even`,
/// the weaker support of the module's text: peers even elsewhere count, and it takes
/// `EVEN_WITNESSES` of them, or two with one fine elsewhere, faulty or not.
fn supported(
    live: &Live,
    ids: &[usize],
    m: usize,
    role: Role,
    faulty: bool,
    even: bool,
) -> Option<Fault> {
    let mine: Vec<usize> = ids
        .iter()
        .copied()
        .filter(|&i| live.explained_by[i].is_none() && live.speaks_of(i, m))
        .collect();
    let poor: Vec<usize> = mine.iter().copied().filter(|&i| live.obs[i].poor).collect();
    let least = if faulty && !even { 1 } else { 2 };
    if poor.len() < least || 2 * poor.len() <= mine.len() {
        return None;
    }
    let mut peers: Vec<usize> = poor.iter().map(|&i| live.obs[i].peer(m)).collect();
    peers.sort_unstable();
    peers.dedup();
    let all_peers = peers.len();
    let mut fine_peers: Vec<usize> = poor
        .iter()
        .filter(|&&i| live.peer_fine(i, m, even))
        .map(|&i| live.obs[i].peer(m))
        .collect();
    fine_peers.sort_unstable();
    fine_peers.dedup();
    let enough = if even {
        // Three witnesses at least even elsewhere, or two with one of them fine elsewhere.
        fine_peers.len() >= EVEN_WITNESSES
            || (fine_peers.len() >= 2 && poor.iter().any(|&i| live.peer_fine(i, m, false)))
    } else if faulty {
        fine_peers.len() == all_peers
    } else {
        fine_peers.len() >= 2
    };
    enough.then_some(Fault {
        machine: m,
        role,
        poor: poor.len(),
        obs: mine,
        fine_peers,
        on_even_peers: even,
    })
}

/// A supported fault's rank: most peers, then most poor measurements; of equals, the first
/// machine, and its server role before its client role.
type Rank = (usize, usize, Reverse<(usize, usize)>);

fn rank(f: &Fault, role: usize) -> Rank {
    (f.fine_peers.len(), f.poor, Reverse((f.machine, role)))
}

/// Every machine's supported faults in each role, on peers fine elsewhere and on even ones, kept
/// current as faults are accepted. An accepted fault changes the tallies of its measurements'
/// ends only, so only the support of those ends and their peers can change: the best fault is
/// found again without looking at every machine (a fleet of 100,000 machines, 2,000 of them
/// slow, was judged in quadratic time).
struct Candidates {
    /// `[on fine peers, on even peers][machine][role]`.
    found: [Vec<[Option<Fault>; 2]>; 2],
    ranked: [BTreeSet<Rank>; 2],
}

impl Candidates {
    fn new(live: &Live, roles: &[[Vec<usize>; 2]], faulty: &[bool]) -> Candidates {
        let mut c = Candidates {
            found: [
                vec![[None, None]; roles.len()],
                vec![[None, None]; roles.len()],
            ],
            ranked: [BTreeSet::new(), BTreeSet::new()],
        };
        for m in 0..roles.len() {
            c.update(live, roles, faulty, m);
        }
        c
    }

    /// Finds `m`'s supported faults again.
    fn update(&mut self, live: &Live, roles: &[[Vec<usize>; 2]], faulty: &[bool], m: usize) {
        for (r, role) in [Role::Server, Role::Client].into_iter().enumerate() {
            for (k, even) in [false, true].into_iter().enumerate() {
                if let Some(old) = self.found[k][m][r].take() {
                    self.ranked[k].remove(&rank(&old, r));
                }
                let new = supported(live, &roles[m][r], m, role, faulty[m], even);
                if let Some(f) = &new {
                    self.ranked[k].insert(rank(f, r));
                }
                self.found[k][m][r] = new;
            }
        }
    }

    /// The best fault on peers fine elsewhere or, when there is none, on even ones.
    fn best(&self) -> Option<Fault> {
        self.ranked
            .iter()
            .zip(&self.found)
            .find_map(|(ranked, found)| {
                let &(_, _, Reverse((m, r))) = ranked.last()?;
                found[m][r].clone()
            })
    }
}

/// Explains the poor measurements among `obs`, made between `machines` machines.
pub fn infer(obs: &[Obs], machines: usize) -> Inference {
    let roles = by_role(obs, machines);
    let mut live = Live::new(obs);
    let mut faults: Vec<Fault> = Vec::new();
    let mut faulty = vec![false; machines];
    let mut candidates = Candidates::new(&live, &roles, &faulty);
    let mut near = vec![false; machines];
    while let Some(fault) = candidates.best() {
        faulty[fault.machine] = true;
        for &i in &fault.obs {
            live.explain(i, faults.len());
        }
        // The ends of what it explains (it among them), and their peers.
        let mut ends: Vec<usize> = fault
            .obs
            .iter()
            .flat_map(|&i| [obs[i].server, obs[i].client])
            .chain([fault.machine])
            .collect();
        ends.sort_unstable();
        ends.dedup();
        let mut touched = Vec::new();
        for &e in &ends {
            let peers = roles[e].iter().flatten().map(|&i| obs[i].peer(e));
            for n in peers.chain([e]) {
                if !near[n] {
                    near[n] = true;
                    touched.push(n);
                }
            }
        }
        for n in touched {
            near[n] = false;
            candidates.update(&live, &roles, &faulty, n);
        }
        faults.push(fault);
    }
    let unexplained = obs
        .iter()
        .enumerate()
        .filter(|(i, x)| x.poor && live.explained_by[*i].is_none())
        .map(|(i, x)| {
            let stand = |end: usize, other: usize| {
                let role = Role::of(end, x);
                (
                    end,
                    role,
                    live.shown(&roles[end][role as usize], end, other, &faulty),
                )
            };
            let ends = [stand(x.server, x.client), stand(x.client, x.server)];
            Unexplained {
                obs: i,
                unverified: ends.iter().filter(|e| !e.2.fine()).map(|e| e.0).collect(),
                ends,
            }
        })
        .collect();
    Inference {
        faults,
        explained_by: live.explained_by,
        unexplained,
    }
}

impl Inference {
    /// The inference about nodes, told about machines: `machine_of[node]` is the machine a node
    /// stands for (several nodes may stand for one).
    pub fn on_machines(mut self, machine_of: &[usize]) -> Inference {
        let to = |n: usize| machine_of[n];
        for f in &mut self.faults {
            f.machine = to(f.machine);
            for p in &mut f.fine_peers {
                *p = to(*p);
            }
            f.fine_peers.sort_unstable();
            f.fine_peers.dedup();
        }
        for u in &mut self.unexplained {
            for m in &mut u.unverified {
                *m = to(*m);
            }
            for e in &mut u.ends {
                e.0 = to(e.0);
            }
        }
        self
    }
}

/// The best fault the live measurements support, by a scan of every machine: what
/// [`Candidates::best`] must choose (tests hold them equal).
#[cfg(test)]
fn best_fault(
    live: &Live,
    roles: &[[Vec<usize>; 2]],
    faulty: &[bool],
    even: bool,
) -> Option<Fault> {
    let mut best: Option<Fault> = None;
    for (m, ids) in roles.iter().enumerate() {
        for (r, role) in [Role::Server, Role::Client].into_iter().enumerate() {
            let Some(f) = supported(live, &ids[r], m, role, faulty[m], even) else {
                continue;
            };
            let better = best
                .as_ref()
                .is_none_or(|b| (f.fine_peers.len(), f.poor) > (b.fine_peers.len(), b.poor));
            if better {
                best = Some(f);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The faults a scan of every machine accepts, one after another.
    fn faults_by_scan(obs: &[Obs], machines: usize) -> Vec<Fault> {
        let roles = by_role(obs, machines);
        let mut live = Live::new(obs);
        let mut faults = Vec::new();
        let mut faulty = vec![false; machines];
        while let Some(fault) = best_fault(&live, &roles, &faulty, false)
            .or_else(|| best_fault(&live, &roles, &faulty, true))
        {
            faulty[fault.machine] = true;
            for &i in &fault.obs {
                live.explain(i, faults.len());
            }
            faults.push(fault);
        }
        faults
    }

    /// Random fleets: each machine leads tests to a few others; some machines are slow as
    /// servers, as clients or both, some paths slow, some ends of unknown model, and a few
    /// measurements poor for no reason (noise).
    #[test]
    fn kept_candidates_accept_the_faults_a_scan_of_every_machine_would() {
        let mut rng = Rng::new(41);
        let mut accepted = 0;
        for draw in 0..400 {
            let machines = 3 + rng.below(40);
            let slow_server: Vec<bool> = (0..machines).map(|_| rng.below(8) == 0).collect();
            let slow_client: Vec<bool> = (0..machines).map(|_| rng.below(8) == 0).collect();
            let unknown: Vec<bool> = (0..machines).map(|_| rng.below(6) == 0).collect();
            let mut obs = Vec::new();
            for (server, &slow_leader) in slow_server.iter().enumerate() {
                for _ in 0..1 + rng.below(5) {
                    let client = rng.below(machines);
                    if client == server {
                        continue;
                    }
                    let poor = slow_leader || slow_client[client] || rng.below(15) == 0;
                    obs.push(Obs {
                        server,
                        client,
                        poor,
                        only: unknown[client].then_some(client),
                    });
                }
            }
            let kept = infer(&obs, machines).faults;
            assert_eq!(kept, faults_by_scan(&obs, machines), "draw {draw}: {obs:?}");
            accepted += kept.len();
        }
        assert!(accepted > 100, "the draws accept faults: {accepted}");
    }
}
