//! The comparison of machines with their siblings: machines grouped by model, and in each group,
//! per figure and per way of measuring it (its basis), the reference every machine's figure is
//! judged against (the pipeline's `Population::SIBLINGS`). Figures measured under interference
//! are judged but left out of the reference, and their findings are inconclusive. Per-client
//! figures are the blame's (`blame/`); the N x N matrix is drawn here.

use super::machine::Machine;
use super::pipeline::{Judged, Population, Sample, Subject, distinct};
use super::rules::{Rule, Rules};
use super::view::View;
use crate::units::number;
use crate::wire::figures::{self, Figure, KeyParts, Spec, basis_difference, dotted};
use crate::wire::fleet::{FigureStats, Finding, GroupEntry, MachineStatus, Matrix, Scope, Sku};
use foldhash::fast::FixedState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Caches which rule judges each figure name (names repeat across a fleet).
pub struct RuleCache<'r> {
    rules: &'r Rules,
    seen: HashMap<String, Option<usize>>,
}

impl<'r> RuleCache<'r> {
    /// A cache over `rules`.
    pub fn new(rules: &'r Rules) -> Self {
        RuleCache {
            rules,
            seen: HashMap::new(),
        }
    }

    /// The rule that judges the figure called `name`.
    pub fn get(&mut self, name: String) -> Option<&'r Rule> {
        let rules = self.rules;
        let index = *self
            .seen
            .entry(name)
            .or_insert_with_key(|name| rules.index_for(name));
        index.and_then(|i| rules.get(i))
    }
}

/// Puts machines in groups by model; returns the groups' models and members. A machine whose
/// model is only partly known (DCPerf's documents) joins the one group it is compatible with;
/// a machine whose model is unknown is in no group and `alone`, as is the only machine of a
/// model. Unreadable machines and machines without figures are in no group.
pub fn group(machines: &mut [Machine]) -> Vec<(Sku, Vec<usize>)> {
    let mut by_sku: BTreeMap<Sku, Vec<usize>> = BTreeMap::new();
    let mut partial = Vec::new();
    for (i, m) in machines.iter_mut().enumerate() {
        if m.entry.status == MachineStatus::Unreadable || m.figures.is_empty() {
            continue;
        }
        match &m.entry.sku {
            Some(s) if s.complete() => by_sku.entry(s.clone()).or_default().push(i),
            Some(s) if s.cpu_model.is_some() => partial.push(i),
            _ => m.raise(
                MachineStatus::Alone,
                "model unknown: the document does not say what machine it is (no \
                 health_check.machine, system section or benchpress envelope), so it is \
                 compared with no other",
            ),
        }
    }
    for i in partial {
        let sku = machines[i].entry.sku.clone().unwrap_or_default();
        let compatible: Vec<Sku> = by_sku
            .keys()
            .filter(|k| sku.compatible(k))
            .cloned()
            .collect();
        let key = match compatible.as_slice() {
            [one] => one.clone(),
            _ => sku,
        };
        by_sku.entry(key).or_default().push(i);
    }
    let groups: Vec<(Sku, Vec<usize>)> = by_sku.into_iter().collect();
    for (g, (sku, members)) in groups.iter().enumerate() {
        for &i in members {
            machines[i].entry.group = Some(g);
        }
        if let [only] = members.as_slice() {
            machines[*only].raise(
                MachineStatus::Alone,
                format!(
                    "the only machine of its model ({}) among the inputs: nothing to compare it \
                     with",
                    sku.label()
                ),
            );
        }
    }
    groups
}

/// The figures of one key in one group, split by basis: the basis most machines used, and the
/// samples measured otherwise (never compared with the rest).
fn by_basis(figs: &[(usize, &Figure)]) -> Vec<(String, Vec<(usize, usize)>)> {
    let mut parts: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for (k, (m, f)) in figs.iter().enumerate() {
        parts.entry(&f.basis).or_default().push((*m, k));
    }
    let mut out: Vec<(String, Vec<(usize, usize)>)> =
        parts.into_iter().map(|(b, v)| (b.to_string(), v)).collect();
    // The most machines first: the group's own way of measuring.
    out.sort_by_key(|(_, v)| std::cmp::Reverse(distinct(v.iter().map(|s| s.0))));
    out
}

/// The keys of a group's figures, numbered. A figure's spec is shared by the figures a reading
/// thread read alike, so a key is found by the spec's address first (a hash of a pointer), and
/// only a spec not seen yet has its key's parts hashed: 10,000 machines x 250 figures were most
/// of a fleet's comparison when each was hashed by its name and labels.
#[derive(Default)]
struct KeyIndex<'a> {
    by_spec: HashMap<*const Spec, usize, FixedState>,
    by_parts: HashMap<KeyParts<'a>, usize, FixedState>,
    parts: Vec<KeyParts<'a>>,
}

impl<'a> KeyIndex<'a> {
    /// The number of `fig`'s key.
    fn of(&mut self, fig: &'a Figure) -> usize {
        let spec = Arc::as_ptr(&fig.spec);
        if let Some(&k) = self.by_spec.get(&spec) {
            return k;
        }
        let parts = fig.key_parts();
        let next = self.parts.len();
        let k = *self.by_parts.entry(parts).or_insert(next);
        if k == next {
            self.parts.push(parts);
        }
        self.by_spec.insert(spec, k);
        k
    }

    /// The keys' dotted names, by number.
    fn names(&self) -> Vec<String> {
        self.parts
            .iter()
            .map(|&(name, labels)| dotted(name, labels))
            .collect()
    }
}

/// Compares every group on the figures that are not per client. Returns the groups' statistics
/// and the findings; sets each machine's missing and not-compared figures.
pub fn compare(
    machines: &mut [Machine],
    groups: &[(Sku, Vec<usize>)],
    cache: &mut RuleCache,
) -> (Vec<GroupEntry>, Vec<Finding>) {
    let mut entries = Vec::with_capacity(groups.len());
    let mut findings = Vec::new();
    for (sku, members) in groups {
        // Each figure's key by number; the samples of each key that is not per client.
        let mut keys = KeyIndex::default();
        let mut samples: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut own: Vec<Vec<usize>> = Vec::with_capacity(members.len());
        for &m in members {
            let figures = &machines[m].figures;
            let mut mine = Vec::with_capacity(figures.len());
            for (f, fig) in figures.iter().enumerate() {
                let k = keys.of(fig);
                if samples.len() <= k {
                    samples.resize_with(k + 1, Vec::new);
                }
                if !fig.family.per_client() {
                    samples[k].push((m, f));
                }
                mine.push(k);
            }
            own.push(mine);
        }
        let names = keys.names();
        drop(keys);
        // By name, as the report lists them.
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| names[a].cmp(&names[b]));
        let mut stats = Vec::new();
        let mut not_compared: Vec<(usize, String)> = Vec::new();
        for &k in &order {
            if samples[k].is_empty() {
                continue;
            }
            let key = &names[k];
            let figs: Vec<(usize, &Figure)> = samples[k]
                .iter()
                .map(|&(m, f)| (m, &machines[m].figures[f]))
                .collect();
            let parts = by_basis(&figs);
            let main_basis = parts.first().map(|p| p.0.clone()).unwrap_or_default();
            for (basis, part) in &parts {
                if distinct(part.iter().map(|s| s.0)) < 2 && members.len() > 1 {
                    let why = if *basis == main_basis {
                        "no other machine of its model measured it".to_string()
                    } else {
                        basis_difference(basis, &main_basis)
                    };
                    for &(m, _) in part {
                        not_compared.push((m, format!("{key}: {why}")));
                    }
                    continue;
                }
                let judged: Vec<(usize, &Figure)> = part.iter().map(|&(_, k)| figs[k]).collect();
                let (stat, found) = judge_part(machines, key, basis, &judged, cache);
                stats.extend(stat);
                findings.extend(found);
            }
        }
        for (m, why) in not_compared {
            machines[m].entry.not_compared.push(why);
        }
        mark_missing(machines, members, &own, &names, &order);
        entries.push(GroupEntry {
            sku: sku.clone(),
            label: sku.label(),
            machines: members
                .iter()
                .map(|&m| machines[m].entry.label.clone())
                .collect(),
            figures: stats,
        });
    }
    (entries, findings)
}

/// Judges one key's figures of one basis: the reference from the figures measured without
/// interference, every figure against it.
fn judge_part(
    machines: &[Machine],
    key: &str,
    basis: &str,
    figs: &[(usize, &Figure)],
    cache: &mut RuleCache,
) -> (Option<FigureStats>, Vec<Finding>) {
    let family = figs[0].1.family;
    let samples: Vec<Sample> = figs
        .iter()
        .map(|&(m, f)| Sample {
            value: f.value,
            who: m as i64,
            interfered: machines[m].interfered.contains_key(&f.family.section),
            flagged: false,
        })
        .collect();
    let Some(reference) = Population::SIBLINGS.reference(&samples) else {
        return (None, Vec::new());
    };
    let values: Vec<f64> = figs.iter().map(|(_, f)| f.value).collect();
    let stats = FigureStats {
        figure: key.to_string(),
        unit: family.unit.to_string(),
        direction: family.direction,
        count: values.len(),
        machines: distinct(figs.iter().map(|f| f.0)),
        median: reference.median,
        mad: reference.mad,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        basis: basis.to_string(),
    };
    let mut found = Vec::new();
    // These figures are not per client: each one's name is the key, and so is its rule.
    let Some(rule) = cache.get(key.to_string()) else {
        return (Some(stats), found);
    };
    for &(m, fig) in figs {
        let judged = Judged::new(fig.value, reference, rule, family.direction);
        if !judged.flagged() {
            continue;
        }
        let machine = &machines[m];
        let side = if fig.value < reference.median {
            "below"
        } else {
            "above"
        };
        let unit = family.unit;
        let off = judged
            .verdict
            .deviation_pct
            .map_or_else(String::new, |d| format!("{:.1}% ", d.abs()));
        let message = format!(
            "{key}: {} {unit} is {off}{side} the median {} {unit} of {} machines of its model \
             (tolerance {}%)",
            number(fig.value),
            number(reference.median),
            reference.machines,
            rule.spec.tolerance_pct
        );
        found.push(judged.finding(
            Subject {
                machine: machine.entry.label.clone(),
                figure: key.to_string(),
                scope: Scope::Machine,
                client: None,
                link: None,
            },
            unit,
            machine.interfered.get(&family.section).cloned(),
            message,
        ));
    }
    (Some(stats), found)
}

/// Lists the keys a group's machines have that this machine lacks: `own[i]` holds the key
/// numbers of `members[i]`'s figures, `names` the keys' names, `order` the numbers by name.
fn mark_missing(
    machines: &mut [Machine],
    members: &[usize],
    own: &[Vec<usize>],
    names: &[String],
    order: &[usize],
) {
    // Which member last had each key: no set per machine.
    let mut had = vec![usize::MAX; names.len()];
    for (i, (&m, mine)) in members.iter().zip(own).enumerate() {
        if machines[m].figures.is_empty() {
            continue;
        }
        for &k in mine {
            had[k] = i;
        }
        machines[m].entry.missing_figures = order
            .iter()
            .filter(|&&k| had[k] != i)
            .map(|&k| names[k].clone())
            .collect();
    }
}

/// A server's aggregate bandwidth (all its clients at once) is compared only with servers whose
/// clients are alike: as many, of the same models. Its basis gains the clients' models (`unknown`
/// for a client without a document), so four clients of a slower model never make a server
/// look slow beside servers of four fast ones.
pub fn aggregates_by_client_models(machines: &mut [Machine], view: &View) {
    let model = |name: &str| -> String {
        view.named(name)
            .and_then(|c| machines[c].entry.sku.as_ref())
            .map_or("unknown".to_string(), |s| s.label())
    };
    let bases: Vec<Option<String>> = machines
        .iter()
        .map(|m| {
            if m.aggregate_clients.is_empty() {
                return None;
            }
            let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
            for c in &m.aggregate_clients {
                *counts.entry(model(c)).or_default() += 1;
            }
            let models: Vec<String> = counts
                .into_iter()
                .map(|(model, n)| format!("{n} x {model}"))
                .collect();
            Some(format!("client models: {}", models.join("; ")))
        })
        .collect();
    for (m, models) in machines.iter_mut().zip(bases) {
        let Some(models) = models else { continue };
        for f in m
            .figures
            .iter_mut()
            .filter(|f| std::ptr::eq(f.family, &crate::wire::figures::AGGREGATE))
        {
            *f = f.with_basis(format!("{}, {models}", f.basis).into());
        }
    }
}

/// The most machines a matrix is given for: N x N cells grow fast (10,000 machines of a star whose
/// clients are among them made a 1 GB report of empty cells), and a bigger one cannot be read;
/// the findings name slow paths at any size.
pub const MATRIX_MAX_MACHINES: usize = 256;

/// The N x N figures between the machines of the inputs, when clients are among them and they
/// are at most [`MATRIX_MAX_MACHINES`].
pub fn matrix(machines: &[Machine], view: &View) -> Option<Matrix> {
    let mut pairs: BTreeSet<usize> = BTreeSet::new();
    let mut cells: Vec<(usize, usize, &'static figures::Family, f64)> = Vec::new();
    for (i, m) in machines.iter().enumerate() {
        for (f, fig) in m.figures.iter().enumerate() {
            let Some(j) = view.client(i, f) else {
                continue;
            };
            pairs.insert(i);
            pairs.insert(j);
            cells.push((i, j, fig.family, fig.value));
        }
    }
    if pairs.len() < 2 || pairs.len() > MATRIX_MAX_MACHINES {
        return None;
    }
    let order: Vec<usize> = pairs.into_iter().collect();
    let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    let n = order.len();
    let mut bandwidth = vec![vec![None; n]; n];
    let mut latency = vec![vec![None; n]; n];
    // Measured directions first; the reverse test and RTT's symmetry fill the other cell.
    for &(i, j, family, v) in &cells {
        let (a, b) = (pos[&i], pos[&j]);
        if std::ptr::eq(family, &figures::BANDWIDTH) {
            bandwidth[a][b] = Some(v);
        } else if std::ptr::eq(family, &figures::PING_LATENCY) {
            latency[a][b] = Some(v);
        }
    }
    for &(i, j, family, v) in &cells {
        let (a, b) = (pos[&i], pos[&j]);
        if std::ptr::eq(family, &figures::REVERSE_BANDWIDTH) && bandwidth[b][a].is_none() {
            bandwidth[b][a] = Some(v);
        } else if std::ptr::eq(family, &figures::PING_LATENCY) && latency[b][a].is_none() {
            latency[b][a] = Some(v);
        }
    }
    Some(Matrix {
        machines: order
            .iter()
            .map(|&i| machines[i].entry.label.clone())
            .collect(),
        bandwidth_gbps: bandwidth,
        latency_ms: latency,
    })
}

#[cfg(test)]
pub(crate) mod tests;
