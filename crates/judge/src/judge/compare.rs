//! The comparison of machines with their siblings: machines grouped by model, and in each group,
//! per figure and per way of measuring it (its basis), the reference every machine's figure is
//! judged against (the pipeline's `Population::SIBLINGS`). Figures measured under interference
//! are judged but left out of the reference, and their findings are inconclusive. Per-client
//! figures are the blame's (`blame/`); the N x N matrix is drawn here.

use super::machine::Machine;
use super::parallel;
use super::pipeline::{Judged, Population, Sample, Subject, distinct};
use super::rules::{Rule, Rules};
use super::view::View;
use crate::units::number;
use crate::wire::figures::{self, Figure, KeyParts, basis_difference, dotted};
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

    /// The rules this cache looks in.
    pub fn rules(&self) -> &'r Rules {
        self.rules
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

/// One figure of a key, as the comparison reads it: whose, measured how, and its number.
#[derive(Clone, Copy)]
struct Value {
    machine: u32,
    basis: u32,
    value: f64,
}

/// A key's values in a group, as they are gathered: 12 bytes a value (a fleet's 2.5 million
/// are all held at once), the basis once when every value shares it.
#[derive(Default)]
struct KeyValues {
    machine: Vec<u32>,
    value: Vec<f64>,
    basis: Bases,
}

/// The bases of a key's values: one for all, or one each.
enum Bases {
    All(u32),
    Each(Vec<u32>),
}

impl Default for Bases {
    fn default() -> Bases {
        Bases::All(0)
    }
}

impl KeyValues {
    fn push(&mut self, v: Value, room: usize) {
        if self.value.is_empty() {
            self.machine.reserve_exact(room);
            self.value.reserve_exact(room);
            self.basis = Bases::All(v.basis);
        }
        match &mut self.basis {
            Bases::All(b) if *b == v.basis => {}
            Bases::All(b) => {
                let mut each = vec![*b; self.value.len()];
                each.push(v.basis);
                self.basis = Bases::Each(each);
            }
            Bases::Each(each) => each.push(v.basis),
        }
        self.machine.push(v.machine);
        self.value.push(v.value);
    }

    /// Adds `other`'s values after these, its bases numbered by `bases`; `room` is the whole
    /// key's count, made once. The bases end as one walk's pushes would leave them: one for
    /// all while there is one.
    fn append(&mut self, other: KeyValues, bases: &[u32], room: usize) {
        if other.value.is_empty() {
            return;
        }
        let theirs = match other.basis {
            Bases::All(b) => Bases::All(bases[b as usize]),
            Bases::Each(each) => Bases::Each(each.iter().map(|&b| bases[b as usize]).collect()),
        };
        let (mine, len) = (std::mem::take(&mut self.basis), self.value.len());
        self.basis = match (mine, theirs) {
            (_, theirs) if len == 0 => theirs,
            (Bases::All(a), Bases::All(b)) if a == b => Bases::All(a),
            (Bases::All(a), Bases::All(b)) => {
                let mut each = vec![a; len];
                each.resize(len + other.value.len(), b);
                Bases::Each(each)
            }
            (Bases::All(a), Bases::Each(theirs)) => {
                let mut each = vec![a; len];
                each.extend(theirs);
                Bases::Each(each)
            }
            (Bases::Each(mut each), Bases::All(b)) => {
                each.resize(len + other.value.len(), b);
                Bases::Each(each)
            }
            (Bases::Each(mut each), Bases::Each(theirs)) => {
                each.extend(theirs);
                Bases::Each(each)
            }
        };
        if len == 0 {
            self.machine.reserve_exact(room);
            self.value.reserve_exact(room);
        }
        self.machine.extend_from_slice(&other.machine);
        self.value.extend_from_slice(&other.value);
    }

    fn get(&self, i: usize) -> Value {
        Value {
            machine: self.machine[i],
            basis: match &self.basis {
                Bases::All(b) => *b,
                Bases::Each(each) => each[i],
            },
            value: self.value[i],
        }
    }
}

/// The values of one key in one group, split by basis: the basis most machines used, and the
/// values measured otherwise (never compared with the rest), each part in machine order.
fn by_basis(of: &KeyValues, bases: &[String]) -> Vec<(u32, Vec<Value>)> {
    let values: Vec<Value> = (0..of.value.len()).map(|i| of.get(i)).collect();
    if let Bases::All(b) = of.basis {
        return vec![(b, values)];
    }
    let mut parts: BTreeMap<&str, (u32, Vec<Value>)> = BTreeMap::new();
    for v in &values {
        let part = parts
            .entry(&bases[v.basis as usize])
            .or_insert_with(|| (v.basis, Vec::new()));
        part.1.push(*v);
    }
    let mut out: Vec<(u32, Vec<Value>)> = parts.into_values().collect();
    // The most machines first: the group's own way of measuring.
    out.sort_by_key(|(_, v)| std::cmp::Reverse(distinct(v.iter().map(|s| s.machine))));
    out
}

/// The keys and bases of a group's figures, numbered. A figure's spec is shared by the figures
/// a reading thread read alike, so its key and basis are found by the spec's address (a hash
/// of a pointer), and only a spec not seen yet has its key's parts hashed: 10,000 machines x
/// 250 figures were most of a fleet's comparison when each was hashed by its name and labels.
#[derive(Default)]
struct KeyIndex<'a> {
    by_spec: HashMap<usize, (usize, u32), FixedState>,
    by_parts: HashMap<KeyParts<'a>, usize, FixedState>,
    keys: Vec<(KeyParts<'a>, &'static figures::Family)>,
    by_basis: HashMap<&'a str, u32, FixedState>,
    bases: Vec<&'a str>,
}

impl<'a> KeyIndex<'a> {
    /// The numbers of `fig`'s key and basis.
    fn of(&mut self, fig: &'a Figure) -> (usize, u32) {
        let spec = spec_address(fig);
        if let Some(&found) = self.by_spec.get(&spec) {
            return found;
        }
        let k = self.key_number(fig.key_parts(), fig.family);
        let b = self.basis_number(&fig.basis);
        self.by_spec.insert(spec, (k, b));
        (k, b)
    }

    /// The number of the key `parts` (of `family`): the next one when it is new.
    fn key_number(&mut self, parts: KeyParts<'a>, family: &'static figures::Family) -> usize {
        let next = self.keys.len();
        let k = *self.by_parts.entry(parts).or_insert(next);
        if k == next {
            self.keys.push((parts, family));
        }
        k
    }

    /// The number of `basis`: the next one when it is new.
    fn basis_number(&mut self, basis: &'a str) -> u32 {
        let next = self.bases.len() as u32;
        let b = *self.by_basis.entry(basis).or_insert(next);
        if b == next {
            self.bases.push(basis);
        }
        b
    }
}

/// Where a figure's spec is: the key of the group's indexes (a number, not a pointer, so the
/// keys can be read by the threads that judge them).
fn spec_address(fig: &Figure) -> usize {
    Arc::as_ptr(&fig.spec) as usize
}

/// A group's figures gathered: keys and bases numbered in the order the members first have
/// them, each key's values in member order (not per client), and how many keys each member has.
struct Gathered<'a> {
    index: KeyIndex<'a>,
    values: Vec<KeyValues>,
    keys_had: Vec<usize>,
}

/// Members per part below which a group is gathered in one walk (a thread costs more).
const MEMBERS_PER_PART: usize = 2048;

/// How many parts to gather a group of `members` in: one per CPU, each of a useful size.
fn gather_parts(members: usize) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    cpus.min(members / MEMBERS_PER_PART).max(1)
}

/// Gathers the members' figures in `parts` consecutive runs of members, each on its own
/// thread, then joins them as one walk would have left them (a fleet of 100,000 spent most of
/// a second in this walk on one CPU).
fn gather<'a>(machines: &'a [Machine], members: &[usize], parts: usize) -> Gathered<'a> {
    if parts <= 1 || members.len() < 2 {
        return gather_part(machines, members);
    }
    let size = members.len().div_ceil(parts);
    let gathered: Vec<Gathered<'a>> = std::thread::scope(|s| {
        let handles: Vec<_> = members
            .chunks(size)
            .map(|run| s.spawn(move || gather_part(machines, run)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    join_parts(gathered)
}

/// One walk over `members`' figures, machine by machine: each value filed under its key (not
/// a visit to every machine per key: 2.5 million scattered reads at 10,000 machines).
fn gather_part<'a>(machines: &'a [Machine], members: &[usize]) -> Gathered<'a> {
    let mut index = KeyIndex::default();
    let mut values: Vec<KeyValues> = Vec::new();
    // The member that last had each key: `keys_had` counts each member's keys once, so that
    // only a member with fewer than the group's is looked at again for what it lacks.
    let mut had: Vec<usize> = Vec::new();
    let mut keys_had = vec![0usize; members.len()];
    for (i, &m) in members.iter().enumerate() {
        for fig in &machines[m].figures {
            let (k, basis) = index.of(fig);
            if values.len() <= k {
                values.resize_with(k + 1, KeyValues::default);
                had.resize(k + 1, usize::MAX);
            }
            if had[k] != i {
                had[k] = i;
                keys_had[i] += 1;
            }
            if !fig.family.per_client() {
                let v = Value {
                    machine: m as u32,
                    basis,
                    value: fig.value,
                };
                values[k].push(v, members.len());
            }
        }
    }
    values.resize_with(index.keys.len(), KeyValues::default);
    Gathered {
        index,
        values,
        keys_had,
    }
}

/// Parts gathered from consecutive runs of members, joined in their order: keys and bases new
/// to the parts before are numbered as they come, each key's values follow each other part by
/// part (a key's values made once at their full size, each part's freed as it is taken). The
/// parts' figures by spec are not joined: nothing after the walk looks a figure up by its spec
/// (a fleet of 100,000 has 800,000 specs, most of them of one client each).
fn join_parts(parts: Vec<Gathered<'_>>) -> Gathered<'_> {
    let mut index = KeyIndex::default();
    let mut numbers: Vec<(Vec<usize>, Vec<u32>)> = Vec::with_capacity(parts.len());
    for part in &parts {
        let keys: Vec<usize> = part
            .index
            .keys
            .iter()
            .map(|&(key, family)| index.key_number(key, family))
            .collect();
        let bases: Vec<u32> = part
            .index
            .bases
            .iter()
            .map(|basis| index.basis_number(basis))
            .collect();
        numbers.push((keys, bases));
    }
    // Per key of the whole, where it is in each part.
    let mut found = vec![vec![None; parts.len()]; index.keys.len()];
    for (p, (keys, _)) in numbers.iter().enumerate() {
        for (local, &k) in keys.iter().enumerate() {
            found[k][p] = Some(local);
        }
    }
    let keys_had = parts
        .iter()
        .flat_map(|p| p.keys_had.iter().copied())
        .collect();
    let mut taken: Vec<Vec<KeyValues>> = parts.into_iter().map(|p| p.values).collect();
    let values = found
        .iter()
        .map(|at| {
            let room = at
                .iter()
                .enumerate()
                .filter_map(|(p, l)| l.map(|l| taken[p][l].value.len()))
                .sum();
            let mut joined = KeyValues::default();
            for (p, l) in at.iter().enumerate() {
                if let Some(l) = *l {
                    joined.append(std::mem::take(&mut taken[p][l]), &numbers[p].1, room);
                }
            }
            joined
        })
        .collect();
    Gathered {
        index,
        values,
        keys_had,
    }
}

/// What a group's key index leaves once the figures are read: no borrow of them (the machines
/// are written to next).
struct Keys {
    names: Vec<String>,
    families: Vec<&'static figures::Family>,
    bases: Vec<String>,
    /// Each key's parts (its family's name, its labels but the client), by number.
    parts: Vec<(&'static str, Vec<String>)>,
}

impl From<KeyIndex<'_>> for Keys {
    fn from(index: KeyIndex<'_>) -> Keys {
        Keys {
            names: index
                .keys
                .iter()
                .map(|&((name, labels), _)| dotted(name, labels))
                .collect(),
            families: index.keys.iter().map(|&(_, family)| family).collect(),
            bases: index.bases.iter().map(|b| b.to_string()).collect(),
            parts: index
                .keys
                .iter()
                .map(|&((name, labels), _)| (name, labels.to_vec()))
                .collect(),
        }
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
        let Gathered {
            index,
            values,
            keys_had,
        } = gather(machines, members, gather_parts(members.len()));
        let keys = Keys::from(index);
        // By name, as the report lists them.
        let mut order: Vec<usize> = (0..keys.names.len()).collect();
        order.sort_by(|&a, &b| keys.names[a].cmp(&keys.names[b]));
        // Each key judged on its own, on all CPUs, its results taken in the keys' order.
        let machines_read: &[Machine] = machines;
        let rules = cache.rules;
        let judged = parallel::ordered_map(
            &order,
            || RuleCache::new(rules),
            |cache, &k| judge_key(machines_read, members.len(), &keys, k, &values[k], cache),
        );
        let mut stats = Vec::new();
        let mut not_compared: Vec<(usize, String)> = Vec::new();
        for (stat, found, left_out) in judged {
            stats.extend(stat);
            findings.extend(found);
            not_compared.extend(left_out);
        }
        drop(values);
        for (m, why) in not_compared {
            machines[m].entry.not_compared.push(why);
        }
        mark_missing(machines, members, &keys_had, &keys, &order);
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

/// One key's values in a group judged: per basis, its statistics and findings, or the machines
/// it is not compared on and why.
fn judge_key(
    machines: &[Machine],
    members: usize,
    keys: &Keys,
    k: usize,
    values: &KeyValues,
    cache: &mut RuleCache,
) -> (Vec<FigureStats>, Vec<Finding>, Vec<(usize, String)>) {
    let (mut stats, mut findings, mut not_compared) = (Vec::new(), Vec::new(), Vec::new());
    if values.value.is_empty() {
        return (stats, findings, not_compared);
    }
    let key = &keys.names[k];
    let parts = by_basis(values, &keys.bases);
    let main_basis = parts.first().map_or(0, |p| p.0);
    for (basis, part) in &parts {
        let basis_text = &keys.bases[*basis as usize];
        if distinct(part.iter().map(|v| v.machine)) < 2 && members > 1 {
            let why = if *basis == main_basis {
                "no other machine of its model measured it".to_string()
            } else {
                basis_difference(basis_text, &keys.bases[main_basis as usize])
            };
            for v in part {
                not_compared.push((v.machine as usize, format!("{key}: {why}")));
            }
            continue;
        }
        let of = Part {
            key,
            family: keys.families[k],
            basis: basis_text,
            values: part,
        };
        let (stat, found) = judge_part(machines, &of, cache);
        stats.extend(stat);
        findings.extend(found);
    }
    (stats, findings, not_compared)
}

/// One key's values of one basis in a group.
struct Part<'a> {
    key: &'a str,
    family: &'static figures::Family,
    basis: &'a str,
    values: &'a [Value],
}

/// Judges one key's figures of one basis: the reference from the figures measured without
/// interference, every figure against it.
fn judge_part(
    machines: &[Machine],
    part: &Part,
    cache: &mut RuleCache,
) -> (Option<FigureStats>, Vec<Finding>) {
    let Part {
        key,
        family,
        basis,
        values,
    } = *part;
    let samples: Vec<Sample> = values
        .iter()
        .map(|v| {
            let machine = &machines[v.machine as usize];
            Sample {
                value: v.value,
                who: i64::from(v.machine),
                interfered: !machine.interfered.is_empty()
                    && machine.interfered.contains_key(&family.section),
                flagged: false,
            }
        })
        .collect();
    let Some(reference) = Population::SIBLINGS.reference(&samples) else {
        return (None, Vec::new());
    };
    let stats = FigureStats {
        figure: key.to_string(),
        unit: family.unit.to_string(),
        direction: family.direction,
        count: values.len(),
        machines: distinct(values.iter().map(|v| v.machine)),
        median: reference.median,
        mad: reference.mad,
        min: values.iter().map(|v| v.value).fold(f64::INFINITY, f64::min),
        max: values
            .iter()
            .map(|v| v.value)
            .fold(f64::NEG_INFINITY, f64::max),
        basis: basis.to_string(),
    };
    let mut found = Vec::new();
    // These figures are not per client: each one's name is the key, and so is its rule.
    let Some(rule) = cache.get(key.to_string()) else {
        return (Some(stats), found);
    };
    for v in values {
        let judged = Judged::new(v.value, reference, rule, family.direction);
        if !judged.flagged() {
            continue;
        }
        let machine = &machines[v.machine as usize];
        let side = if v.value < reference.median {
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
            number(v.value),
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

/// Lists the keys a group's machines have that this machine lacks (`keys_had`: how many keys
/// each member has; `order`: the keys' numbers by name).
fn mark_missing(
    machines: &mut [Machine],
    members: &[usize],
    keys_had: &[usize],
    keys: &Keys,
    order: &[usize],
) {
    // Which member last had each key: no set per machine.
    let mut had = vec![usize::MAX; keys.names.len()];
    let number: HashMap<KeyParts, usize, FixedState> = keys
        .parts
        .iter()
        .enumerate()
        .map(|(k, (name, labels))| ((*name, labels.as_slice()), k))
        .collect();
    for (i, &m) in members.iter().enumerate() {
        // A member with every key lacks none (most of a fleet): not walked again.
        if machines[m].figures.is_empty() || keys_had[i] == keys.names.len() {
            continue;
        }
        for fig in &machines[m].figures {
            if let Some(&k) = number.get(&fig.key_parts()) {
                had[k] = i;
            }
        }
        machines[m].entry.missing_figures = order
            .iter()
            .filter(|&&k| had[k] != i)
            .map(|&k| keys.names[k].clone())
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
    let models_of = |m: &Machine| -> Option<String> {
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
    };
    let read: &[Machine] = machines;
    let bases: Vec<Option<String>> = parallel::over_pieces(read.len(), |range| {
        read[range].iter().map(models_of).collect()
    });
    parallel::for_each_mut(machines, |m, machine| {
        let Some(models) = &bases[m] else { return };
        for f in machine
            .figures
            .iter_mut()
            .filter(|f| std::ptr::eq(f.family, &crate::wire::figures::AGGREGATE))
        {
            *f = f.with_basis(figures::basis(&format!("{}, {models}", f.basis)));
        }
    });
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
        for (f, j) in view.clients_of(i) {
            let fig = &m.figures[f];
            pairs.insert(i);
            pairs.insert(j);
            cells.push((i, j, fig.family, fig.value));
        }
        // Too many already: no matrix (a fleet's cells were a copy of every path).
        if pairs.len() > MATRIX_MAX_MACHINES {
            return None;
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
