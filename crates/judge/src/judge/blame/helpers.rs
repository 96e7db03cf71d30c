//! The choice of a helper for the second round: for an end of a suspect path, the machine that
//! measures it (or that it measures) next. The best is, in order: not in a pair already suspect
//! with the end, of the model of the end it stands in for, with a document of its own when it
//! is to lead, leading the fewest tests planned so far, the lowest number. A choice looked at
//! every machine of the fleet, for each end of each suspect path: quadratic in a star's
//! suspects (a star of 20,000 machines spent half a second a compare here). The machines that
//! may help are kept instead in sets ordered by load, per figure, role and pool, and per model
//! and document; a choice walks the few sets of its model's tier in order and stops at the
//! first machine it may take. `Helpers::choose_by_scan`, the scan, is the tests' reference.

use std::collections::{BTreeSet, HashMap};

/// Which machines a choice draws from, for one figure and role: shown fine and not under
/// suspicion, not under suspicion, or under suspicion (the last resort).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Pool {
    FineAndTrusted,
    Trusted,
    Suspected,
}

/// One figure and role's flags: machines shown fine in the role a helper takes, and machines
/// under suspicion in the figure.
#[derive(Clone, Copy)]
pub(super) struct Flags<'a> {
    pub fine: Option<&'a [bool]>,
    pub suspected: Option<&'a [bool]>,
}

impl Flags<'_> {
    fn admits(&self, pool: Pool, h: usize) -> bool {
        let suspected = self.suspected.is_some_and(|s| s[h]);
        match pool {
            Pool::FineAndTrusted => !suspected && self.fine.is_some_and(|f| f[h]),
            Pool::Trusted => !suspected,
            Pool::Suspected => suspected,
        }
    }
}

/// One choice: for the end at hand of a suspect path.
pub(super) struct Ask<'a> {
    /// The figure, and whether the end leads (the helper is then measured): with `pool`,
    /// which set of machines the choice draws from.
    pub key: &'a str,
    pub leads: bool,
    pub flags: Flags<'a>,
    pub pool: Pool,
    /// Only machines not yet paired with the end (`done`: those that are, ascending).
    pub fresh: bool,
    pub done: &'a [usize],
    /// The path's two ends, never a helper.
    pub ends: [usize; 2],
    /// Per machine: 1 when its pair with the end is suspect in some figure, 2 in this one (a 2
    /// is never taken); `doubted` lists the machines not 0.
    pub doubt: &'a [u8],
    pub doubted: &'a [usize],
    /// The model of the end the helper stands in for, and whether the path's machine is of
    /// unknown model (then any machine of a known model will do).
    pub model: Option<usize>,
    pub unknown_model: bool,
}

/// What is known of each machine for the choice, and the load planned so far.
pub(super) struct Helpers<'a> {
    usable: &'a [bool],
    models: &'a [Option<usize>],
    no_document: &'a [bool],
    load: Vec<usize>,
    /// Per figure, role and pool: per model and document, the usable machines in the pool by
    /// (load, number). Made at the first choice that needs them.
    sets: HashMap<(String, bool, Pool), Vec<Set>>,
}

/// The machines of one model and documentedness in one pool, by (load, number).
struct Set {
    model: Option<usize>,
    no_document: bool,
    by_load: BTreeSet<(usize, usize)>,
    /// Who is in it: its load changes are applied to it.
    member: Vec<bool>,
}

impl<'a> Helpers<'a> {
    pub fn new(
        usable: &'a [bool],
        models: &'a [Option<usize>],
        no_document: &'a [bool],
    ) -> Helpers<'a> {
        Helpers {
            usable,
            models,
            no_document,
            load: vec![0; usable.len()],
            sets: HashMap::new(),
        }
    }

    /// `h` was chosen: one more test planned with it.
    pub fn chose(&mut self, h: usize) {
        let before = self.load[h];
        self.load[h] += 1;
        for set in self.sets.values_mut().flatten().filter(|s| s.member[h]) {
            set.by_load.remove(&(before, h));
            set.by_load.insert((before + 1, h));
        }
    }

    /// Whether `h` is another model than the choice wants: the ordering's second place.
    fn other_model(&self, ask: &Ask, h: usize) -> bool {
        self.models[h] != ask.model && !(ask.unknown_model && self.models[h].is_some())
    }

    /// Whether `h` may be taken at all, its doubt apart.
    fn allowed(&self, ask: &Ask, h: usize) -> bool {
        !ask.ends.contains(&h)
            && self.usable[h]
            && ask.flags.admits(ask.pool, h)
            && (!ask.fresh || ask.done.binary_search(&h).is_err())
    }

    /// The ordering of candidates: the smaller the better.
    fn rank(&self, ask: &Ask, h: usize) -> (bool, bool, bool, usize, usize) {
        (
            ask.doubt[h] == 1,
            self.other_model(ask, h),
            !ask.leads && self.no_document[h],
            self.load[h],
            h,
        )
    }

    /// The best machine for `ask`, as `Helpers::choose_by_scan` finds it.
    pub fn choose(&mut self, ask: &Ask) -> Option<usize> {
        // A doubted machine (1) comes after every other: the others first, from the sets.
        let undoubted = self.best_undoubted(ask);
        if undoubted.is_some() {
            return undoubted;
        }
        ask.doubted
            .iter()
            .copied()
            .filter(|&h| ask.doubt[h] == 1 && self.allowed(ask, h))
            .min_by_key(|&h| self.rank(ask, h))
    }

    /// The best machine not doubted: per tier (its model, then its document where it is to
    /// lead), the first allowed machine of each of the tier's sets, the least loaded of them.
    fn best_undoubted(&mut self, ask: &Ask) -> Option<usize> {
        self.make_sets(ask);
        let sets = &self.sets[&(ask.key.to_string(), ask.leads, ask.pool)];
        let tier = |s: &Set| {
            let other = s.model != ask.model && !(ask.unknown_model && s.model.is_some());
            (other, !ask.leads && s.no_document)
        };
        let mut tiers: Vec<(bool, bool)> = sets.iter().map(tier).collect();
        tiers.sort_unstable();
        tiers.dedup();
        for t in tiers {
            let best = sets
                .iter()
                .filter(|s| tier(s) == t)
                .filter_map(|s| {
                    s.by_load
                        .iter()
                        .find(|&&(_, h)| ask.doubt[h] == 0 && self.allowed(ask, h))
                        .copied()
                })
                .min();
            if let Some((_, h)) = best {
                return Some(h);
            }
        }
        None
    }

    fn make_sets(&mut self, ask: &Ask) {
        let at = (ask.key.to_string(), ask.leads, ask.pool);
        if self.sets.contains_key(&at) {
            return;
        }
        let mut sets: Vec<Set> = Vec::new();
        for h in 0..self.usable.len() {
            if !self.usable[h] || !ask.flags.admits(ask.pool, h) {
                continue;
            }
            let (model, no_document) = (self.models[h], self.no_document[h]);
            let i = match sets
                .iter()
                .position(|s| s.model == model && s.no_document == no_document)
            {
                Some(i) => i,
                None => {
                    sets.push(Set {
                        model,
                        no_document,
                        by_load: BTreeSet::new(),
                        member: vec![false; self.usable.len()],
                    });
                    sets.len() - 1
                }
            };
            sets[i].by_load.insert((self.load[h], h));
            sets[i].member[h] = true;
        }
        self.sets.insert(at, sets);
    }

    /// The best machine for `ask` by a look at every machine: what [`Helpers::choose`] must
    /// find (the tests hold them equal).
    #[cfg(test)]
    pub fn choose_by_scan(&self, ask: &Ask) -> Option<usize> {
        (0..self.usable.len())
            .filter(|&h| ask.doubt[h] < 2 && self.allowed(ask, h))
            .min_by_key(|&h| self.rank(ask, h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Random fleets (models known and not, machines without documents or not usable, flags
    /// fine and suspect per figure and role) and random choices among them, each followed by
    /// the load it adds: the sets choose what a look at every machine chooses, every time.
    #[test]
    fn the_sets_choose_what_the_scan_chooses() {
        let mut rng = Rng::new(41);
        let mut choices = 0;
        for _ in 0..300 {
            let n = 2 + rng.below(40);
            let usable: Vec<bool> = (0..n).map(|_| rng.below(6) != 0).collect();
            let models: Vec<Option<usize>> = (0..n)
                .map(|_| match rng.below(4) {
                    0 => None,
                    m => Some(m % 3),
                })
                .collect();
            let no_document: Vec<bool> = (0..n).map(|_| rng.below(4) == 0).collect();
            // Per figure: shown fine leading, shown fine measured, under suspicion (each
            // perhaps absent); fixed for the fleet, as in a judgement.
            let marks: Vec<Option<Vec<bool>>> = (0..6)
                .map(|_| (rng.below(5) != 0).then(|| (0..n).map(|_| rng.below(3) == 0).collect()))
                .collect();
            let mut helpers = Helpers::new(&usable, &models, &no_document);
            for _ in 0..30 {
                let (key, leads) = (["a", "b"][rng.below(2)], rng.below(2) == 0);
                let at = 3 * usize::from(key == "b");
                let flags = Flags {
                    fine: marks[at + usize::from(leads)].as_deref(),
                    suspected: marks[at + 2].as_deref(),
                };
                let mut done: Vec<usize> = (0..n).filter(|_| rng.below(3) == 0).collect();
                done.dedup();
                let mut doubt = vec![0u8; n];
                let doubted: Vec<usize> = (0..rng.below(4)).map(|_| rng.below(n)).collect();
                for &h in &doubted {
                    doubt[h] = doubt[h].max(1 + rng.below(2) as u8);
                }
                let ask = Ask {
                    key,
                    leads,
                    flags,
                    pool: [Pool::FineAndTrusted, Pool::Trusted, Pool::Suspected][rng.below(3)],
                    fresh: rng.below(2) == 0,
                    done: &done,
                    ends: [rng.below(n), rng.below(n)],
                    doubt: &doubt,
                    doubted: &doubted,
                    model: models[rng.below(n)],
                    unknown_model: rng.below(4) == 0,
                };
                let scanned = helpers.choose_by_scan(&ask);
                let chosen = helpers.choose(&ask);
                assert_eq!(chosen, scanned);
                if let Some(h) = chosen {
                    helpers.chose(h);
                    choices += 1;
                }
            }
        }
        assert!(choices > 1000, "{choices}");
    }
}
