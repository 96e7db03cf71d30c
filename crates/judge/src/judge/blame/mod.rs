//! Who is to blame for poor per-client figures (bandwidth both ways, ping), from every document
//! together, whatever the layout: DCPerf's star (only servers write documents), pairs, a sparse
//! or a full mesh.
//!
//! Each figure of one machine about one client is a measurement of a path between two machines.
//! It is judged against the reference for its *pair of models* and basis (paths from model A to
//! model B against paths from A to B: a slower model is not failed for being that model), taken
//! from the quiet measurements and, once faults are found, from those no fault explains. Then
//! `infer` explains the poor measurements from all of them at once: a machine slow as the
//! server, as the client, or both (`machine`), on evidence the rest of the fleet does not
//! explain; a path (`link`) when both its ends are fine elsewhere; and, where the data cannot
//! tell the candidates apart, a `suspect` finding naming them, with the measurement that would
//! settle it in the report's `resolve`. A client with no document of its own (the star's
//! clients) is a machine of the report, judged on this evidence.

mod helpers;
mod infer;
#[cfg(test)]
mod tests;

use super::compare::RuleCache;
use super::machine::Machine;
use super::parallel;
use super::pipeline::{Judged, Population, Sample, Subject, distinct};
use super::reference::Reference;
use super::rules::Rule;
use super::view::View;
use crate::units::number;
use crate::wire::figures::{BANDWIDTH, Direction, Family, Figure, REVERSE_BANDWIDTH, Spec};
use crate::wire::fleet::{DocumentKind, Finding, MachineStatus, Resolve, Scope};
use crate::wire::rule::{RuleSpec, Severity};
use foldhash::fast::FixedState;
use helpers::{Ask, Flags, Helpers, Pool};
use infer::{Fault, Obs, Role, Unexplained, infer};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// One measurement of a path.
#[derive(Debug, Clone, Copy)]
struct Measurement {
    server: usize,
    figure: usize,
    client: usize,
}

/// What the blame found.
#[derive(Debug, Default)]
pub struct Blamed {
    /// Findings about machines and links, per figure.
    pub findings: Vec<Finding>,
    /// (server, client, figure key) of every poor measurement a finding accounts for: a fault,
    /// a link, or a suspect path.
    pub explained: BTreeSet<(usize, usize, String)>,
    /// The measurements that would settle the suspects.
    pub resolve: Vec<Resolve>,
}

/// A poor path the data cannot pin down, and its candidates; or a machine of unknown model
/// found slow in a fleet of several models (`server == client`: its own document would say
/// whether it is a slower model).
struct SuspectPath {
    key: String,
    server: usize,
    client: usize,
    /// The ends not shown fine elsewhere.
    unverified: Vec<usize>,
    /// The finding's index in [`Blamed::findings`].
    finding: usize,
    /// Whether a measurement could settle it: not when its model's paths run at two levels
    /// (only the parts tell a slower NIC from faults on many machines), so `resolve` asks none.
    measurable: bool,
}

/// What judging each figure key leaves for the whole fleet: its suspect paths, and the machines
/// a measurement of it shows fine as the one that measured (`fine_servers`) and as the one
/// measured (`fine_clients`), by key.
#[derive(Default)]
struct Pending {
    suspects: Vec<SuspectPath>,
    /// By key, a flag per machine.
    fine_servers: HashMap<String, Vec<bool>>,
    fine_clients: HashMap<String, Vec<bool>>,
}

/// Finds the machines and links behind poor per-client figures, on `view`'s paths (the clients
/// without a document of their own are machines there); sets `suspect` on the candidates of
/// what it cannot pin down (the findings that blame machines raise their status in the fleet's
/// accounting).
pub fn blame(machines: &mut [Machine], view: &View, cache: &mut RuleCache) -> Blamed {
    let parts = measurements(machines, view);
    let mut out = Blamed::default();
    let mut pending = Pending::default();
    // A machine of unknown model (a star's client) is judged with the paths of the model that
    // measured it; its level alone cannot fail it (it may be a slower model): it is suspect,
    // and leading a test in a second round gives its document and model.
    let models = models(machines);
    let one_model = models.iter().flatten().collect::<BTreeSet<_>>().len() <= 1;
    let at = At {
        models: &models,
        one_model,
    };
    // Each part judged on its own, on all CPUs, and its results taken in the parts' order: as
    // one pass would leave them (a fleet of 100,000 spent a second and a half here on one CPU).
    let rules = cache.rules();
    let machines_read: &[Machine] = machines;
    let judged = parallel::ordered_map(
        &parts,
        || RuleCache::new(rules),
        |cache, ((key, _), all)| {
            let mut part = (Blamed::default(), Pending::default());
            judge_key(machines_read, key, all, cache, at, &mut part.0, &mut part.1);
            part
        },
    );
    for (part, part_pending) in judged {
        take_part(&mut out, &mut pending, part, part_pending);
    }
    drop_settled(machines, view, &mut pending.suspects, &mut out);
    // The pairs measured, for the plan: only when something is suspect (2.4 million pairs
    // of a fleet of 100,000 were the peak of its memory otherwise).
    let mut measured: Vec<(usize, usize)> = Vec::new();
    if !pending.suspects.is_empty() {
        measured = parts
            .iter()
            .flat_map(|(_, all)| all)
            .map(|x| (x.server, x.client))
            .collect();
        measured.sort_unstable();
        measured.dedup();
    }
    drop(parts);
    out.resolve = plan_resolve(machines, &models, &pending, &measured, &mut out.findings);
    record_evidence(machines, view, &out, &pending.suspects);
    out
}

/// A figure key and its basis: the per-client figures judged together, paths between all
/// models together, each against its pair's.
type PartKey = (String, String);

/// Every per-client measurement on `view`'s paths, by figure key and basis, in the keys' order;
/// each part's in the order of its machines and their figures. Gathered a piece of the fleet at
/// a time on all CPUs (a fleet of 100,000 spent a quarter of a second here on one CPU).
fn measurements(machines: &[Machine], view: &View) -> Vec<(PartKey, Vec<Measurement>)> {
    let pieces = parallel::over_pieces(machines.len(), |range| {
        // A figure's part is found by its shared spec's address; only a spec not seen yet
        // looks for its key, by the key's borrowed parts (the figures of a client are a
        // spec each, of a few parts).
        let mut part_of_spec: HashMap<*const Spec, usize, FixedState> = HashMap::default();
        let mut part_of_key: HashMap<(&str, &[String], &str), usize, FixedState> =
            HashMap::default();
        let mut parts: Vec<(&Figure, Vec<Measurement>)> = Vec::new();
        for m in range {
            for (f, client) in view.clients_of(m) {
                let fig = &machines[m].figures[f];
                let p = *part_of_spec
                    .entry(Arc::as_ptr(&fig.spec))
                    .or_insert_with(|| {
                        let (name, labels) = fig.key_parts();
                        *part_of_key
                            .entry((name, labels, &*fig.basis))
                            .or_insert_with(|| {
                                parts.push((fig, Vec::new()));
                                parts.len() - 1
                            })
                    });
                parts[p].1.push(Measurement {
                    server: m,
                    figure: f,
                    client,
                });
            }
        }
        parts
            .into_iter()
            .map(|(fig, all)| ((fig.key(), fig.basis.to_string()), all))
            .collect()
    });
    // Each part made once at its full size, each piece's measurements freed as they are taken
    // (grown piece by piece, a million fleet-run documents' sixteen million measurements were
    // copied again at every doubling).
    let mut part_of_key: HashMap<&PartKey, usize> = HashMap::new();
    let mut sizes: Vec<usize> = Vec::new();
    let of_piece: Vec<usize> = pieces
        .iter()
        .map(|(key, all)| {
            let next = sizes.len();
            let p = *part_of_key.entry(key).or_insert(next);
            if p == next {
                sizes.push(0);
            }
            sizes[p] += all.len();
            p
        })
        .collect();
    drop(part_of_key);
    let mut parts: Vec<Option<(PartKey, Vec<Measurement>)>> = vec![None; sizes.len()];
    for ((key, all), p) in pieces.into_iter().zip(of_piece) {
        parts[p]
            .get_or_insert_with(|| (key, Vec::with_capacity(sizes[p])))
            .1
            .extend(all);
    }
    let mut parts: Vec<(PartKey, Vec<Measurement>)> = parts.into_iter().flatten().collect();
    // Two parts of one piece whose keys spell alike joined out of order: put back in the order
    // of the machines and their figures.
    for (_, all) in &mut parts {
        if !all.is_sorted_by_key(|x| (x.server, x.figure)) {
            all.sort_unstable_by_key(|x| (x.server, x.figure));
        }
    }
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    parts
}

/// Adds one part's judging to what the parts before it left: its findings after theirs (its
/// suspects' finding numbers moved with them), what it explains, and the machines it shows
/// fine added to theirs for the same key (a key's parts are its bases).
fn take_part(out: &mut Blamed, pending: &mut Pending, part: Blamed, part_pending: Pending) {
    let offset = out.findings.len();
    out.findings.extend(part.findings);
    out.explained.extend(part.explained);
    out.resolve.extend(part.resolve);
    pending
        .suspects
        .extend(part_pending.suspects.into_iter().map(|mut s| {
            s.finding += offset;
            s
        }));
    for (mine, theirs) in [
        (&mut pending.fine_servers, part_pending.fine_servers),
        (&mut pending.fine_clients, part_pending.fine_clients),
    ] {
        for (key, flags) in theirs {
            match mine.entry(key) {
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(flags);
                }
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    for (a, b) in e.get_mut().iter_mut().zip(flags) {
                        *a |= b;
                    }
                }
            }
        }
    }
}

/// A suspect path one of whose candidates already fails, for a finding of its own or its own
/// run, is put down to that machine: a poor measurement with a machine known to be at fault at
/// one end never makes the other end suspect (that end's other measurements judge it), and a
/// measurement to settle it would change no status. Its finding goes, so a second round never
/// asks about it.
fn drop_settled(
    machines: &[Machine],
    view: &View,
    suspects: &mut Vec<SuspectPath>,
    out: &mut Blamed,
) {
    let failed: BTreeSet<usize> = out
        .findings
        .iter()
        .filter(|f| {
            f.suspect.is_none()
                && f.inconclusive.is_none()
                && f.severity == Severity::Fail
                && !matches!(f.scope, Scope::Link | Scope::Group)
        })
        .filter_map(|f| view.labelled(&f.machine))
        .chain((0..machines.len()).filter(|&m| machines[m].entry.status >= MachineStatus::Fail))
        .collect();
    if failed.is_empty() {
        return;
    }
    let mut gone = vec![false; out.findings.len()];
    suspects.retain_mut(|s| {
        if !s.unverified.iter().any(|m| failed.contains(m)) {
            return true;
        }
        gone[s.finding] = true;
        false
    });
    let mut renumbered = Vec::with_capacity(gone.len());
    let mut next = 0;
    for &g in &gone {
        renumbered.push(next);
        next += usize::from(!g);
    }
    let mut i = 0;
    out.findings.retain(|_| {
        i += 1;
        !gone[i - 1]
    });
    for s in suspects.iter_mut() {
        s.finding = renumbered[s.finding];
    }
}

/// Each machine's model: its group, or for a machine in none whose model is known (a document
/// without figures of its own, such as a pairs follower's), the group of that model, or a model
/// of its own. `None`: unknown (a star's client that wrote nothing).
fn models(machines: &[Machine]) -> Vec<Option<usize>> {
    let mut ids: HashMap<&crate::wire::fleet::Sku, usize> = HashMap::new();
    for m in machines {
        if let (Some(g), Some(sku)) = (m.entry.group, &m.entry.sku) {
            ids.entry(sku).or_insert(g);
        }
    }
    let mut next = machines
        .iter()
        .filter_map(|m| m.entry.group)
        .max()
        .map_or(0, |g| g + 1);
    machines
        .iter()
        .map(|m| {
            m.entry.group.or_else(|| {
                let sku = m.entry.sku.as_ref().filter(|s| s.complete())?;
                Some(*ids.entry(sku).or_insert_with(|| {
                    next += 1;
                    next - 1
                }))
            })
        })
        .collect()
}

/// The models, for one figure key's judging.
#[derive(Clone, Copy)]
struct At<'a> {
    models: &'a [Option<usize>],
    /// The documents name one model at most.
    one_model: bool,
}

/// The measurement's figure.
fn figure<'a>(machines: &'a [Machine], x: &Measurement) -> &'a Figure {
    &machines[x.server].figures[x.figure]
}

/// The pair of models a measurement is between: (the server's group, the client's). A machine
/// whose model is unknown (a star's client wrote no document) is taken to be of the other end's
/// model: its measurements are judged with that model's paths rather than apart, where a few of
/// them would make their own reference.
type Bucket = (Option<usize>, Option<usize>);

fn bucket(models: &[Option<usize>], x: &Measurement) -> Bucket {
    let (s, c) = (models[x.server], models[x.client]);
    (s.or(c), c.or(s))
}

/// The reference of each pair of models, from the quiet measurements not `excluded` (all of the
/// pair's when every one is excluded).
fn references(
    machines: &[Machine],
    at: At,
    all: &[Measurement],
    excluded: &[bool],
    family: &Family,
    direction: Direction,
    spec: &RuleSpec,
) -> (HashMap<Bucket, Reference>, HashMap<Bucket, f64>) {
    let mut split = HashMap::new();
    let mut by: HashMap<Bucket, Vec<usize>> = HashMap::new();
    for (i, x) in all.iter().enumerate() {
        by.entry(bucket(at.models, x)).or_default().push(i);
    }
    let models = at.models;
    // Ends per pair of models: a pair between two models measured with few machines on a side
    // makes no level of its own (below).
    let ends: HashMap<Bucket, (usize, usize)> = by
        .iter()
        .map(|(&b, ids)| {
            let ends = |end: fn(&Measurement) -> usize| distinct(ids.iter().map(|&i| end(&all[i])));
            (b, (ends(|x| x.server), ends(|x| x.client)))
        })
        .collect();
    let mut refs: HashMap<Bucket, Reference> = by
        .into_iter()
        .filter_map(|(b, ids)| {
            let kept: Vec<usize> = ids.iter().copied().filter(|&i| !excluded[i]).collect();
            let ids = if kept.is_empty() { ids } else { kept };
            // Among several models, paths whose two models are known make the pair's level when
            // there are enough of them (two servers, three clients): an end of unknown model
            // may be of a slower one.
            let known: Vec<usize> = ids
                .iter()
                .copied()
                .filter(|&i| models[all[i].server].is_some() && models[all[i].client].is_some())
                .collect();
            let count =
                |end: fn(&Measurement) -> usize| distinct(known.iter().map(|&i| end(&all[i])));
            let enough = count(|x| x.server) >= 2 && count(|x| x.client) >= 3;
            let ids = if !at.one_model && enough { known } else { ids };
            let quiet = Population::SIBLINGS.select(&ids, |&i| Sample {
                value: figure(machines, &all[i]).value,
                who: all[i].server as i64,
                interfered: machines[all[i].server]
                    .interfered
                    .contains_key(&family.section),
                flagged: false,
            });
            // Each end's values, placed by a count per end (a map of 10,000 machines' lists
            // was most of this, and a sort of their pairs half of what was left).
            let mut starts = vec![0usize; machines.len() + 1];
            for &&i in &quiet {
                starts[all[i].server + 1] += 1;
                starts[all[i].client + 1] += 1;
            }
            for e in 1..starts.len() {
                starts[e] += starts[e - 1];
            }
            let mut next = starts.clone();
            let mut by_end = vec![0.0; 2 * quiet.len()];
            for &&i in &quiet {
                let v = figure(machines, &all[i]).value;
                for end in [all[i].server, all[i].client] {
                    by_end[next[end]] = v;
                    next[end] += 1;
                }
            }
            let typical: Vec<f64> = starts
                .windows(2)
                .filter_map(|w| crate::stats::median(&by_end[w[0]..w[1]]))
                .collect();
            // Faults pull both medians and widen both spreads: the machines' medians mix slow
            // and fast paths (a server of one slow client and one fast has their mean), and a
            // few slow machines of a mesh touch most of its measurements. The better median
            // and the narrower spread are the healthy paths'; later rounds leave the
            // explained measurements out.
            let values: Vec<f64> = quiet
                .iter()
                .map(|&&i| figure(machines, &all[i]).value)
                .collect();
            let (by_machine, by_value) = (
                crate::stats::median(&typical)?,
                crate::stats::median(&values)?,
            );
            // Ends of unknown model among several models mix levels: the pair's level is then
            // the better quarter of the machines' (an end well below it is a slower model or a
            // fault, which only a document or a second round tells apart: suspect), and their
            // spread is no noise, so the tolerance alone judges.
            let mixed = !at.one_model
                && quiet
                    .iter()
                    .any(|&&i| models[all[i].server].is_none() || models[all[i].client].is_none());
            let better = if direction.is_worse(0.0, 1.0) {
                0.75
            } else {
                0.25
            };
            let upper = crate::stats::quantile(&typical, better)?;
            let median = if mixed {
                upper
            } else if direction.is_worse(by_machine, by_value) {
                by_value
            } else {
                by_machine
            };
            // Two levels within one pair of models, the worse as common as the better (the
            // median sits at it, and so do at least three machines and half of them, while a
            // quarter are better by more than the rule allows): a slower part (a NIC) or faults on
            // half the fleet. The better level judges, and what it finds is suspect, not failed
            // (`split` keeps the worse level).
            // Worse than the better level by the rule (tolerance and noise floor alike).
            let level = Reference {
                median: upper,
                mad: 0.0,
                machines: typical.len(),
            };
            let below = |v: f64| level.judge(v, direction, spec).flagged;
            let low = typical.iter().filter(|&&v| below(v)).count();
            // Throughput only: its levels are the parts' (a NIC's speed), where a latency's
            // spread on a busy host is noise that would look like two levels.
            let two_levels = !mixed
                && direction == Direction::Higher
                && below(median)
                && low >= 3
                && 2 * low >= typical.len();
            if two_levels {
                split.insert(b, median);
            }
            let median = if two_levels { upper } else { median };
            let spread = |v: &[f64]| crate::stats::mad(v, median).unwrap_or(0.0);
            let spread = |v: &[f64]| if mixed || two_levels { 0.0 } else { spread(v) };
            Some((
                b,
                Reference {
                    median,
                    mad: spread(&typical).min(spread(&values)),
                    // One typical value per end: the machines behind the reference.
                    machines: typical.len(),
                },
            ))
        })
        .collect();
    // A path runs no better than its slower end: between two models, the worse of the two
    // models' own levels bounds the pair's. The pair's measurements make its level only when
    // they are many and do not fall below that bound: a second round's documents are written
    // by the clients found slow, so the paths that name a client's model are at first only
    // the slow ones, and as their own level they would all read fine.
    for (b, &(servers, clients)) in &ends {
        let (Some(s), Some(c)) = *b else { continue };
        if s == c {
            continue;
        }
        let (Some(x), Some(y)) = (refs.get(&(Some(s), Some(s))), refs.get(&(Some(c), Some(c))))
        else {
            continue;
        };
        let bound = if direction.is_worse(x.median, y.median) {
            *x
        } else {
            *y
        };
        let own = refs.get(b).copied();
        let below = own.is_none_or(|own| bound.judge(own.median, direction, spec).flagged);
        if below || servers < 2 || clients < 3 {
            refs.insert(*b, bound);
        }
    }
    (refs, split)
}

/// Judges every measurement of one figure key against its pair's reference, and explains the
/// poor ones. The references are taken again without what a fault or a link explains, until
/// they hold still.
fn judge_key(
    machines: &[Machine],
    key: &str,
    all: &[Measurement],
    cache: &mut RuleCache,
    at: At,
    out: &mut Blamed,
    pending: &mut Pending,
) {
    let family = figure(machines, &all[0]).family;
    let Some(rule) = cache.get(format!("{key}.*")) else {
        return;
    };
    let direction = rule.direction(family.direction);
    // Among several models, a machine of unknown model is judged as the model of whoever
    // measures it: it is one node per such model, so that what one model's machines found of
    // it is never taken as evidence about another's.
    let mut node_of: HashMap<(usize, Option<usize>), usize> = HashMap::new();
    let mut machine_of: Vec<usize> = (0..machines.len()).collect();
    let mut node = |m: usize, other: usize| -> usize {
        if at.one_model || at.models[m].is_some() {
            return m;
        }
        *node_of.entry((m, at.models[other])).or_insert_with(|| {
            machine_of.push(m);
            machine_of.len() - 1
        })
    };
    let nodes: Vec<(usize, usize)> = all
        .iter()
        .map(|x| (node(x.server, x.client), node(x.client, x.server)))
        .collect();
    let mut excluded = vec![false; all.len()];
    let mut rounds = 0;
    let mut two_levels: Option<HashMap<Bucket, f64>> = None;
    let (refs, obs, inference) = loop {
        let (refs, split) = references(machines, at, all, &excluded, family, direction, &rule.spec);
        // The split is seen before any measurement is explained away.
        two_levels.get_or_insert(split);
        let obs: Vec<Obs> = all
            .iter()
            .zip(&nodes)
            .map(|(x, &(s, c))| Obs {
                server: s,
                client: c,
                only: match (at.models[x.server], at.models[x.client]) {
                    _ if at.one_model => None,
                    (Some(_), None) => Some(c),
                    (None, Some(_)) => Some(s),
                    _ => None,
                },
                poor: refs.get(&bucket(at.models, x)).is_some_and(|r| {
                    r.judge(figure(machines, x).value, direction, &rule.spec)
                        .flagged
                }),
            })
            .collect();
        let inference = infer(&obs, machine_of.len()).on_machines(&machine_of);
        let mut next: Vec<bool> = inference.explained_by.iter().map(Option::is_some).collect();
        for u in inference
            .unexplained
            .iter()
            .filter(|u| u.unverified.is_empty())
        {
            next[u.obs] = true;
        }
        rounds += 1;
        if next == excluded || rounds == 4 {
            break (refs, obs, inference);
        }
        excluded = next;
    };
    let n = machines.len();
    let servers = pending
        .fine_servers
        .entry(key.to_string())
        .or_insert_with(|| vec![false; n]);
    let clients = pending
        .fine_clients
        .entry(key.to_string())
        .or_insert_with(|| vec![false; n]);
    for (x, _) in all.iter().zip(&obs).filter(|(_, o)| !o.poor) {
        servers[x.server] = true;
        clients[x.client] = true;
    }
    if !obs.iter().any(|o| o.poor) {
        return;
    }
    let suspects = &mut pending.suspects;
    let ctx = Context {
        machines,
        models: at.models,
        key,
        family,
        rule,
        all,
        refs: &refs,
    };
    // A machine slow in both roles is slow as a machine: one finding.
    let mut by_machine: BTreeMap<usize, Vec<&Fault>> = BTreeMap::new();
    for f in &inference.faults {
        by_machine.entry(f.machine).or_default().push(f);
    }
    let split = two_levels.unwrap_or_default();
    for (m, faults) in by_machine {
        let mut finding = ctx.fault_finding(m, &faults);
        let worse_level = faults
            .iter()
            .flat_map(|f| f.obs.iter())
            .filter(|&&i| obs[i].poor)
            .find_map(|&i| split.get(&bucket(at.models, &all[i])).copied());
        let why = match (at.models[m], worse_level) {
            (None, _) => Some(
                "; but its model is unknown (no document of its own): a slower model looks the \
                 same; suspect, not failed"
                    .to_string(),
            ),
            (Some(_), Some(worse)) => Some(format!(
                "; but its model's paths run at two levels here, {} and {} {}, the worse as \
                 common as the better: a slower part (a NIC) or faults on many machines, which \
                 only the parts tell apart; suspect, not failed",
                number(worse),
                number(finding.median.unwrap_or(f64::NAN)),
                finding.unit
            )),
            (Some(_), None) => None,
        };
        if let Some(why) = why {
            finding.message.push_str(&why);
            finding.suspect = Some(vec![machines[m].entry.label.clone()]);
            suspects.push(SuspectPath {
                key: key.to_string(),
                server: m,
                client: m,
                unverified: vec![m],
                finding: out.findings.len(),
                // An unknown model's own document settles it; two levels only the parts do.
                measurable: at.models[m].is_none() || worse_level.is_none(),
            });
        }
        out.findings.push(finding);
        for f in faults {
            for &i in f.obs.iter().filter(|&&i| obs[i].poor) {
                out.explained
                    .insert((all[i].server, all[i].client, key.to_string()));
            }
        }
    }
    // A machine every measurement of which is poor and explained by a fault of the machine at
    // its other end is hidden behind that fault: nothing shows it fine (a star's client measured
    // only by a slow server). It is suspect, and the second round measures it with another.
    let at_fault: BTreeSet<usize> = inference.faults.iter().map(|f| f.machine).collect();
    // Per machine: its measurements, and those poor and explained by the other end's fault.
    let mut seen: Vec<(u32, Vec<(usize, usize)>)> = vec![(0, Vec::new()); machines.len()];
    for (i, x) in all.iter().enumerate() {
        let by = inference.explained_by[i].map(|f| inference.faults[f].machine);
        for (end, other) in [(x.server, x.client), (x.client, x.server)] {
            let e = &mut seen[end];
            e.0 += 1;
            if obs[i].poor && by == Some(other) {
                e.1.push((i, other));
            }
        }
    }
    for (m, (n, behind)) in seen.into_iter().enumerate() {
        if n == 0 || at_fault.contains(&m) || behind.len() as u32 != n {
            continue;
        }
        let culprits: BTreeSet<usize> = behind.iter().map(|&(_, c)| c).collect();
        let culprits: Vec<usize> = culprits.into_iter().collect();
        let (i, _) = behind[0];
        let x = &all[i];
        suspects.push(SuspectPath {
            key: key.to_string(),
            server: x.server,
            client: x.client,
            unverified: vec![m],
            finding: out.findings.len(),
            measurable: true,
        });
        out.findings
            .push(ctx.hidden_finding(i, m, &culprits, behind.len()));
    }
    for u in &inference.unexplained {
        let x = &all[u.obs];
        out.explained.insert((x.server, x.client, key.to_string()));
        if u.unverified.is_empty() {
            out.findings.push(ctx.link_finding(u));
        } else {
            suspects.push(SuspectPath {
                key: key.to_string(),
                server: x.server,
                client: x.client,
                unverified: u.unverified.clone(),
                finding: out.findings.len(),
                measurable: true,
            });
            out.findings.push(ctx.suspect_finding(u));
        }
    }
}

/// What the findings of one figure key are written from.
struct Context<'a> {
    machines: &'a [Machine],
    models: &'a [Option<usize>],
    key: &'a str,
    family: &'static Family,
    rule: &'a Rule,
    all: &'a [Measurement],
    refs: &'a HashMap<Bucket, Reference>,
}

/// Up to three labels, then how many more.
fn some_of(machines: &[Machine], ids: &[usize]) -> String {
    let mut names: Vec<&str> = ids
        .iter()
        .take(3)
        .map(|&m| machines[m].entry.label.as_str())
        .collect();
    let more = ids.len().saturating_sub(3);
    let more = format!("and {more} more");
    if ids.len() > 3 {
        names.push(&more);
    }
    names.join(", ")
}

impl Context<'_> {
    fn label(&self, m: usize) -> &str {
        &self.machines[m].entry.label
    }

    fn model(&self, group: Option<usize>, m: usize) -> String {
        match (group, &self.machines[m].entry.sku) {
            (Some(_), Some(sku)) => sku.label(),
            _ => "a machine of unknown model".to_string(),
        }
    }

    /// The pair of models of `b`, for people, with a machine of each side.
    fn pair(&self, b: Bucket, x: &Measurement) -> String {
        let (from, to) = (self.model(b.0, x.server), self.model(b.1, x.client));
        if b.0.is_some() && b.0 == b.1 {
            format!("for paths between machines of its model ({from})")
        } else {
            format!("for paths from {from} to {to}")
        }
    }

    /// The reference most of `ids` were judged against, their median value there, and the
    /// pair of models in words.
    fn standing(&self, ids: &[usize]) -> Option<(f64, Reference, String)> {
        let mut by: BTreeMap<Bucket, Vec<usize>> = BTreeMap::new();
        for &i in ids {
            by.entry(bucket(self.models, &self.all[i]))
                .or_default()
                .push(i);
        }
        let (b, mine) = by.into_iter().max_by_key(|(_, v)| v.len())?;
        let values: Vec<f64> = mine
            .iter()
            .map(|&i| figure(self.machines, &self.all[i]).value)
            .collect();
        let value = crate::stats::median(&values)?;
        let reference = *self.refs.get(&b)?;
        Some((value, reference, self.pair(b, &self.all[mine[0]])))
    }

    /// What a role means for this figure: who sends in a bandwidth test.
    fn side(&self, role: Role) -> &'static str {
        let sends = match role {
            Role::Server => std::ptr::eq(self.family, &BANDWIDTH),
            Role::Client => std::ptr::eq(self.family, &REVERSE_BANDWIDTH),
        };
        let receives = match role {
            Role::Server => std::ptr::eq(self.family, &REVERSE_BANDWIDTH),
            Role::Client => std::ptr::eq(self.family, &BANDWIDTH),
        };
        match (sends, receives) {
            (true, _) => " (it sends in these tests)",
            (_, true) => " (it receives in these tests)",
            _ => "",
        }
    }

    fn fault_finding(&self, m: usize, faults: &[&Fault]) -> Finding {
        let ids: Vec<usize> = faults.iter().flat_map(|f| f.obs.iter().copied()).collect();
        let poor: usize = faults.iter().map(|f| f.poor).sum();
        let mut fine: Vec<usize> = faults
            .iter()
            .flat_map(|f| f.fine_peers.iter().copied())
            .collect();
        fine.sort_unstable();
        fine.dedup();
        let n = ids.len();
        let roles: BTreeSet<Role> = faults.iter().map(|f| f.role).collect();
        let (scope, evidence) = match roles.into_iter().collect::<Vec<_>>()[..] {
            [Role::Server] => (
                Scope::Server,
                format!(
                    "{poor} of the {n} measurements it led are poor{}",
                    self.side(Role::Server)
                ),
            ),
            [Role::Client] => (
                Scope::Client,
                format!(
                    "{poor} of the {n} measurements of it are poor{}",
                    self.side(Role::Client)
                ),
            ),
            _ => (
                Scope::Machine,
                format!("{poor} of the {n} measurements through it are poor, both ways"),
            ),
        };
        let (value, reference, pair) = self
            .standing(&ids)
            .expect("a fault explains measurements with a reference");
        let unit = self.family.unit;
        // Peers only even elsewhere (as many poor as fine) where none was shown fine: said so.
        let peers = if faults.iter().any(|f| f.on_even_peers) {
            "that are never mostly poor with others"
        } else {
            "that do well with others"
        };
        let message = format!(
            "{key}: {evidence}, with {f} distinct machines {peers} ({names}): \
             median {v} {unit} against {r} {unit} {pair} (tolerance {t}%); the cause is on this \
             machine's side: look at its NIC, driver settings, cable and switch port",
            key = self.key,
            f = fine.len(),
            names = some_of(self.machines, &fine),
            v = number(value),
            r = number(reference.median),
            t = self.rule.spec.tolerance_pct,
        );
        Judged::new(value, reference, self.rule, self.family.direction).finding(
            Subject {
                machine: self.label(m).to_string(),
                figure: format!("{}.*", self.key),
                scope,
                client: None,
                link: None,
            },
            unit,
            self.machines[m]
                .interfered
                .get(&self.family.section)
                .cloned(),
            message,
        )
    }

    /// How an end stands in its role with everyone else, in words.
    fn others(&self, (end, role, t): (usize, Role, infer::Tally)) -> String {
        let who = self.label(end);
        let what = match role {
            Role::Server => "test(s) it led",
            Role::Client => "measurement(s) of it",
        };
        match (t.n, t.poor) {
            (0, _) => format!("{who} has no other {what}"),
            (n, 0) => format!("{who}'s {n} other {what} are fine"),
            (n, p) => format!("{p} of {who}'s {n} other {what} are poor too"),
        }
    }

    /// The finding of one poor measurement: its value against its pair's reference.
    fn path_finding(&self, obs: usize, evidence: String) -> Finding {
        let x = &self.all[obs];
        let fig = figure(self.machines, x);
        let b = bucket(self.models, x);
        let reference = self.refs[&b];
        let (a, c) = (self.label(x.server), self.label(x.client));
        let unit = fig.family.unit;
        let message = format!(
            "{} {a} -> {c}: {} {unit} against {} {unit} {} (tolerance {}%): {evidence}",
            self.key,
            number(fig.value),
            number(reference.median),
            self.pair(b, x),
            self.rule.spec.tolerance_pct
        );
        Judged::new(fig.value, reference, self.rule, fig.family.direction).finding(
            Subject {
                machine: a.to_string(),
                figure: fig.name(),
                scope: Scope::Link,
                client: fig.client().map(str::to_string),
                link: Some(vec![a.to_string(), c.to_string()]),
            },
            unit,
            self.machines[x.server]
                .interfered
                .get(&fig.family.section)
                .cloned(),
            message,
        )
    }

    fn link_finding(&self, u: &Unexplained) -> Finding {
        let x = &self.all[u.obs];
        let (a, c) = (self.label(x.server), self.label(x.client));
        self.path_finding(
            u.obs,
            format!(
                "poor only between {a} and {c}: {} and {}; look at the path between them \
                 (cables, switch ports, routing, a congested uplink)",
                self.others(u.ends[0]),
                self.others(u.ends[1])
            ),
        )
    }

    fn suspect_finding(&self, u: &Unexplained) -> Finding {
        let mut candidates: Vec<String> = u
            .unverified
            .iter()
            .map(|&m| self.label(m).to_string())
            .collect();
        let mut names = candidates.clone();
        names.push("the path between them".into());
        let why: Vec<String> = u.ends.iter().map(|&e| self.others(e)).collect();
        let mut f = self.path_finding(
            u.obs,
            format!(
                "the data cannot tell {} apart ({}); suspect, not failed",
                names.join(", "),
                why.join("; ")
            ),
        );
        candidates.sort();
        f.suspect = Some(candidates);
        f
    }

    /// The finding of machine `hidden`, whose `n` measurements are all poor and explained by
    /// faults of the `culprits` at their other ends (measurement `obs` one of them).
    fn hidden_finding(&self, obs: usize, hidden: usize, culprits: &[usize], n: usize) -> Finding {
        let h = self.label(hidden);
        let mut f = self.path_finding(
            obs,
            format!(
                "{h}'s {n} measurement(s) are all poor and all with machines at fault ({}), \
                 whose faults explain them: nothing shows {h} fine or slow; suspect, not failed",
                some_of(self.machines, culprits)
            ),
        );
        f.suspect = Some(vec![h.to_string()]);
        f
    }
}

/// The measurements that would tell each suspect path's candidates apart: an unverified client
/// measured from another machine, an unverified server measuring another machine. The other
/// machine is one not under suspicion, of the model of the end it stands in for where one is,
/// spread so no machine leads many; each suspect finding is told which.
fn plan_resolve(
    machines: &[Machine],
    models: &[Option<usize>],
    pending: &Pending,
    measured: &[(usize, usize)],
    findings: &mut [Finding],
) -> Vec<Resolve> {
    let n = machines.len();
    let suspects = &pending.suspects;
    // Each choice is answered from flat tables and the helpers' sets (`helpers.rs`), not a
    // scan of the fleet per end of each suspect path (quadratic in a star's suspects).
    // Suspicion is per figure: a host whose ping was noisy may settle a bandwidth question.
    let mut under_suspicion: HashMap<&str, Vec<bool>> = HashMap::new();
    for s in suspects {
        let marks = under_suspicion
            .entry(s.key.as_str())
            .or_insert_with(|| vec![false; n]);
        for &m in &s.unverified {
            marks[m] = true;
        }
    }
    let (fine_servers, fine_clients) = (&pending.fine_servers, &pending.fine_clients);
    // A suspect path measured again is one more sample of what is in doubt, never a witness;
    // and a second round measures every figure of the pairs it names, so a pair suspect in
    // another figure is the last choice (a throughput shortfall measured again is one more
    // poor vote against both ends). Per machine, the suspect pairs it is in, with their keys.
    let mut suspect_pairs: Vec<Vec<(usize, usize, &str)>> = vec![Vec::new(); n];
    for s in suspects {
        for m in [s.server, s.client] {
            suspect_pairs[m].push((s.server, s.client, s.key.as_str()));
        }
    }
    // The pairs measured, per machine that led and per machine measured (each list ascending:
    // the set is walked in order).
    let mut led: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut measured_by: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(server, client) in measured {
        led[server].push(client);
        measured_by[client].push(server);
    }
    let blamed: BTreeSet<&str> = findings
        .iter()
        .filter(|f| f.scope != Scope::Link && f.suspect.is_none())
        .map(|f| f.machine.as_str())
        .collect();
    let usable: Vec<bool> = machines
        .iter()
        .map(|m| {
            let e = &m.entry;
            !matches!(e.status, MachineStatus::Unreadable | MachineStatus::Failed)
                && !blamed.contains(e.label.as_str())
        })
        .collect();
    let no_document: Vec<bool> = machines
        .iter()
        .map(|m| m.entry.kind == DocumentKind::None)
        .collect();
    let mut helpers = Helpers::new(&usable, models, &no_document);
    // Per helper of the end at hand: 1 when its pair with the end is suspect in some figure, 2
    // when in the figure at hand too (reset after each end).
    let mut doubt = vec![0u8; n];
    let mut plan: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut settles: Vec<(usize, String)> = Vec::new();
    for s in suspects.iter().filter(|s| s.measurable) {
        let mut settle = Vec::new();
        let unknown_model = s.server == s.client;
        for &e in &s.unverified {
            let leads = e == s.server;
            let stand_in_for = if leads { s.client } else { s.server };
            // The pairs of `e` suspect, by its other end in the role a helper would take.
            let mut doubted_helpers = Vec::new();
            for &(server, client, key) in &suspect_pairs[e] {
                let h = if leads && server == e {
                    client
                } else if !leads && client == e {
                    server
                } else {
                    continue;
                };
                doubt[h] = doubt[h].max(if key == s.key { 2 } else { 1 });
                doubted_helpers.push(h);
            }
            // A pair measured already adds one sample, not a new witness: taken only when no
            // new pair is left (a star's one server has measured every client). Best a machine
            // shown fine in the role it takes (measured fine as a client when the suspect
            // leads, fine leading a test when it measures the suspect), then one not under
            // suspicion, then any.
            let flags = Flags {
                fine: if leads { fine_clients } else { fine_servers }
                    .get(s.key.as_str())
                    .map(Vec::as_slice),
                suspected: under_suspicion.get(s.key.as_str()).map(Vec::as_slice),
            };
            let mut helper = None;
            'pools: for pool in [Pool::FineAndTrusted, Pool::Trusted, Pool::Suspected] {
                for fresh in [true, false] {
                    helper = helpers.choose(&Ask {
                        key: &s.key,
                        leads,
                        flags,
                        pool,
                        fresh,
                        done: if leads { &led[e] } else { &measured_by[e] },
                        ends: [s.server, s.client],
                        doubt: &doubt,
                        doubted: &doubted_helpers,
                        model: models[stand_in_for],
                        unknown_model,
                    });
                    if helper.is_some() {
                        break 'pools;
                    }
                }
            }
            for h in doubted_helpers {
                doubt[h] = 0;
            }
            let Some(h) = helper else { continue };
            helpers.chose(h);
            let (from, to) = if leads { (e, h) } else { (h, e) };
            let (from, to) = (
                machines[from].entry.label.clone(),
                machines[to].entry.label.clone(),
            );
            let el = &machines[e].entry.label;
            let why = if unknown_model {
                format!(
                    "{}: {el} is slow and its model unknown: its own document tells a slower \
                     model from a slow machine",
                    s.key
                )
            } else {
                format!(
                    "{} {} -> {} is poor: {el} is to blame if {from} -> {to} is poor too",
                    s.key, machines[s.server].entry.label, machines[s.client].entry.label
                )
            };
            settle.push(format!("measure {to} from {from}"));
            plan.entry((from, to)).or_default().push(why);
        }
        let line = if settle.is_empty() {
            "; no other machine to measure with: add one to the fleet".to_string()
        } else {
            format!(
                "; to settle it, {} (compare's resolve)",
                settle.join(" and ")
            )
        };
        settles.push((s.finding, line));
    }
    for (i, line) in settles {
        findings[i].message.push_str(&line);
    }
    plan.into_iter()
        .map(|((from, to), why)| Resolve {
            from,
            to,
            why: why.join("; "),
        })
        .collect()
}

/// Says on every machine what others' measurements found: the ends of a poor link are told so
/// (it fails neither); the candidates of a suspect path become `suspect` (or `inconclusive`
/// when the measurement was disturbed); a machine with no document of its own is judged on
/// others' measurements.
fn record_evidence(machines: &mut [Machine], view: &View, out: &Blamed, suspects: &[SuspectPath]) {
    for f in out.findings.iter().filter(|f| f.suspect.is_none()) {
        if let Some(ends) = &f.link {
            for end in ends {
                if let Some(m) = view.labelled(end) {
                    machines[m].entry.reasons.push(format!(
                        "one end of a poor path ({} <-> {}): see the link finding",
                        ends[0], ends[1]
                    ));
                }
            }
        }
    }
    for s in suspects {
        let f = &out.findings[s.finding];
        let status = if f.inconclusive.is_some() {
            MachineStatus::Inconclusive
        } else {
            MachineStatus::Suspect
        };
        for &m in &s.unverified {
            machines[m].raise(status, crate::wire::headline::of(f));
        }
    }
    // The machines a finding names, once: asked of every machine without a document, a walk
    // over the findings each was quadratic (a million documents' fleet spent minutes here).
    let mut named: std::collections::HashSet<&str, FixedState> = Default::default();
    for f in &out.findings {
        if f.link.is_none() {
            named.insert(&f.machine);
        }
        named.extend(f.suspect.iter().flatten().map(String::as_str));
    }
    for m in machines
        .iter_mut()
        .filter(|m| m.entry.kind == DocumentKind::None)
    {
        if !named.contains(m.entry.label.as_str()) {
            m.entry.reasons.push(
                "no document of its own: judged on the measurements others took of it".into(),
            );
        }
    }
}
