//! Baselines: per-SKU expectations learned from a fleet (`health_check baseline`), written as
//! YAML people can read and edit, and the checks a run is judged by against them (`--baseline`
//! on a run or on `compare`): one `baseline.<figure>` check per figure the baseline knows.

use super::checks::Thresholds;
use super::machine::{ClientCheck, Machine};
use super::pipeline::{Judged, Population, Sample};
use super::reference::Reference;
use super::rules::{Rule, Rules};
use crate::units::round_to;
pub use crate::wire::baseline::{Baseline, Expected, FORMAT, SkuBaseline};
use crate::wire::document::{Check, CheckId, Document, Section, Status};
use crate::wire::figures::{self, Figure, basis_difference, family_of_key};
use crate::wire::fleet::{MachineStatus, Sku};
use foldhash::fast::FixedState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A baseline loaded for `--baseline`: the file, its expectations and its rules.
#[derive(Debug, Clone)]
pub struct BaselineRef {
    /// The file as given.
    pub path: PathBuf,
    /// What it expects.
    pub baseline: Baseline,
    /// The rules it was learned with.
    pub rules: Rules,
}

/// A baseline file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--baseline '{path}': {message}")]
pub struct BaselineError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// A figure a model's machines measured that its baseline does not hold, or holds from fewer of
/// them than measured it, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct NotLearned {
    /// The model, as people read it.
    pub sku: String,
    /// The figure (per-client figures pooled, named without the client).
    pub figure: String,
    /// Why: measured under interference, or measured otherwise by some machines.
    pub why: String,
    /// Whether the baseline holds nothing of it for the model (else it was learned from the
    /// machines that measured it the common way).
    pub missing: bool,
}

/// What `baseline` learned, and what it could not.
#[derive(Debug, Clone)]
pub struct Learned {
    /// The baseline.
    pub baseline: Baseline,
    /// The figures left out, or learned from only some of the machines that measured them.
    pub not_learned: Vec<NotLearned>,
}

impl Learned {
    /// Whether the baseline holds at least one figure measured by a section (not only what the
    /// machines have, such as their CPU count): a baseline of inventory alone judges nothing a
    /// health check is for.
    pub fn learned_a_measurement(&self) -> bool {
        self.baseline.skus.iter().any(|s| {
            s.figures
                .keys()
                .any(|k| family_of_key(k).is_some_and(|f| f.section != Section::System))
        })
    }
}

/// Learns a baseline from machines grouped by model (`groups` from
/// [`super::compare::group`]): per figure the rules judge, the median and MAD of the figures
/// measured the way most machines measured them, and without interference. Machines whose
/// run failed or cannot be read teach nothing.
pub fn learn(machines: &[Machine], groups: &[(Sku, Vec<usize>)], rules: &Rules) -> Baseline {
    learn_saying_what_not(machines, groups, rules).baseline
}

/// [`learn`], and the figures it could not learn (or learned from only some
/// machines), each with the reason.
pub fn learn_saying_what_not(
    machines: &[Machine],
    groups: &[(Sku, Vec<usize>)],
    rules: &Rules,
) -> Learned {
    let mut not_learned = Vec::new();
    let mut skus = Vec::new();
    for (sku, members) in groups {
        let by_key = samples_by_key(machines, members, rules);
        let sku_label = sku.label();
        let figures = by_key
            .into_iter()
            .filter_map(|(key, bases)| {
                let family = family_of_key(&key)?;
                // Made into samples a key at a time: all keys' at once were most of the peak.
                let bases: BTreeMap<&str, Vec<Sample>> =
                    bases.into_iter().map(|(b, f)| (b, f.samples())).collect();
                // A machine's samples of a key and basis follow each other (filed machine by
                // machine): its run of them counts it once.
                let measured_by =
                    |samples: &[Sample]| samples.chunk_by(|a, b| a.who == b.who).count();
                let all: usize = bases.values().map(|s| measured_by(s)).sum();
                let mut gap = |why: String, missing: bool| {
                    not_learned.push(NotLearned {
                        sku: sku_label.clone(),
                        figure: key.clone(),
                        why,
                        missing,
                    });
                };
                // The way most machines measured it, counting those the baseline learns from.
                let learned = bases
                    .iter()
                    .filter_map(|(basis, samples)| {
                        Some((*basis, Population::BASELINE.reference_counted(samples)?))
                    })
                    .max_by_key(|(_, (r, _))| r.machines);
                let Some((basis, (r, count))) = learned else {
                    gap(
                        format!(
                            "measured under interference on all {all} machine(s) that \
                             measured it: a baseline learns from quiet runs only"
                        ),
                        true,
                    );
                    return None;
                };
                let otherwise: Vec<String> = bases
                    .iter()
                    .filter(|(b, _)| **b != basis)
                    .map(|(b, s)| format!("{} as {b}", measured_by(s)))
                    .collect();
                if !otherwise.is_empty() {
                    gap(
                        format!(
                            "learned from the {} machine(s) that measured it as {basis}; \
                             measured otherwise by {} (not comparable)",
                            r.machines,
                            otherwise.join(", ")
                        ),
                        false,
                    );
                } else if r.machines < measured_by(&bases[basis]) {
                    gap(
                        format!(
                            "learned from {} of the {} machine(s) that measured it: the \
                             others' runs were under interference",
                            r.machines,
                            measured_by(&bases[basis])
                        ),
                        false,
                    );
                }
                Some((
                    key,
                    Expected {
                        median: round_to(r.median, 4),
                        mad: round_to(r.mad, 4),
                        count,
                        machines: r.machines,
                        basis: basis.to_string(),
                        unit: family.unit.to_string(),
                        direction: family.direction,
                    },
                ))
            })
            .collect();
        skus.push(SkuBaseline {
            sku: sku.clone(),
            machines: members.len(),
            figures,
        });
    }
    let baseline = Baseline {
        health_check_baseline: FORMAT,
        version: env!("CARGO_PKG_VERSION").to_string(),
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        rules: rules.specs(),
        skus,
    };
    Learned {
        baseline,
        not_learned,
    }
}

/// A key's samples under one basis as learning files them, 12 bytes each (a [`Sample`] is 24):
/// the value, and the machine with the top bit set when its run was under interference.
#[derive(Default)]
struct Filed {
    values: Vec<f64>,
    who: Vec<u32>,
}

/// The bit of [`Filed::who`] that says the run was under interference.
const INTERFERED: u32 = 1 << 31;

impl Filed {
    /// Files machine `m`'s value (a fleet of two billion machines would be needed to reach the
    /// interference bit).
    fn push(&mut self, value: f64, m: usize, interfered: bool) {
        self.values.push(value);
        self.who
            .push(m as u32 & !INTERFERED | if interfered { INTERFERED } else { 0 });
    }

    fn samples(self) -> Vec<Sample> {
        self.values
            .into_iter()
            .zip(self.who)
            .map(|(value, who)| Sample {
                value,
                who: i64::from(who & !INTERFERED),
                interfered: who & INTERFERED != 0,
                flagged: false,
            })
            .collect()
    }
}

/// The samples of the group's figures that a rule judges, per key and basis, each in member
/// order; machines whose run failed give none. A figure's rule, key and basis are found once
/// per shared spec (by its address) and the samples filed by number: spelled and looked up
/// per figure, with the rules matched against each name, they were most of learning from
/// 100,000 documents.
fn samples_by_key<'a>(
    machines: &'a [Machine],
    members: &[usize],
    rules: &Rules,
) -> BTreeMap<String, BTreeMap<&'a str, Filed>> {
    // Per spec: where its samples go (a key's number and its basis's), or nowhere when no rule
    // judges the figure.
    let mut place_of: HashMap<*const figures::Spec, Option<(usize, usize)>, FixedState> =
        HashMap::default();
    let mut key_number: HashMap<String, usize> = HashMap::new();
    let mut keys: Vec<(String, Vec<(&'a str, Filed)>)> = Vec::new();
    for &m in members {
        let machine = &machines[m];
        if machine.entry.status >= MachineStatus::Failed {
            continue;
        }
        for fig in &machine.figures {
            let place = *place_of.entry(Arc::as_ptr(&fig.spec)).or_insert_with(|| {
                rules.for_figure(&fig.name())?;
                let next = keys.len();
                let k = *key_number.entry(fig.key()).or_insert_with_key(|key| {
                    keys.push((key.clone(), Vec::new()));
                    next
                });
                let bases = &mut keys[k].1;
                let b = match bases.iter().position(|(b, _)| *b == &*fig.basis) {
                    Some(b) => b,
                    None => {
                        bases.push((&fig.basis, Filed::default()));
                        bases.len() - 1
                    }
                };
                Some((k, b))
            });
            let Some((k, b)) = place else { continue };
            let interfered = machine.interfered.contains_key(&fig.family.section);
            keys[k].1[b].1.push(fig.value, m, interfered);
        }
    }
    keys.into_iter()
        .map(|(key, bases)| (key, bases.into_iter().collect()))
        .collect()
}

/// Reads a baseline file: the format this version writes, rules that compile, and every
/// expectation a number a figure can have.
pub fn read(path: &Path) -> Result<(Baseline, Rules), BaselineError> {
    let fail = |message: String| BaselineError {
        path: path.display().to_string(),
        message,
    };
    let text = super::rules::read_yaml_text(path).map_err(fail)?;
    let b: Baseline = serde_yaml::from_str(&text).map_err(|e| {
        let line = e
            .location()
            .map_or(String::new(), |l| format!("line {}: ", l.line()));
        fail(format!("{line}{e}"))
    })?;
    if b.health_check_baseline != FORMAT {
        return Err(fail(format!(
            "format {} is not the {FORMAT} this version reads; learn it again with 'health_check baseline'",
            b.health_check_baseline
        )));
    }
    for s in &b.skus {
        for (figure, e) in &s.figures {
            let bad = |v: f64| !v.is_finite() || v < 0.0;
            if bad(e.median) || bad(e.mad) {
                return Err(fail(format!(
                    "'{figure}' of '{}' expects median {} and MAD {}: a figure's median and \
                     spread are finite and not negative; learn the baseline again",
                    s.sku.label(),
                    e.median,
                    e.mad
                )));
            }
        }
    }
    let rules = Rules::from_specs(b.rules.clone(), &path.display().to_string())
        .map_err(|e| fail(e.message))?;
    Ok((b, rules))
}

/// A machine's baseline checks, the one assembly a run, a merged document and a fleet's machine
/// share: its `figures` against what `b` expects of its model (`sku`, named by `Sku::of` from
/// the machine's identity, as compare groups it), and inconclusive where load can move a figure
/// of a section `interfered` names.
pub fn checks(
    figures: &[Figure],
    sku: Option<&Sku>,
    interfered: &BTreeMap<Section, String>,
    b: &BaselineRef,
) -> Vec<Check> {
    let mut checks = judge(
        figures,
        sku,
        &b.baseline,
        &b.rules,
        &b.path.display().to_string(),
    );
    super::noise::mark_interfered(&mut checks, interfered);
    checks
}

/// [`checks`] of one document (a run's, or a merged one): its figures, the model its identity
/// names, and its sections measured under interference beyond `t`.
pub fn checks_of_document(doc: &Document, b: &BaselineRef, t: &Thresholds) -> Vec<Check> {
    let sku = doc.identity().as_ref().map(Sku::of);
    let interfered = super::noise::interfered_sections(&doc.health_check.interference, t);
    checks(
        &figures::of_document(doc).figures,
        sku.as_ref(),
        &interfered,
        b,
    )
}

/// Judges every machine with figures by the baseline. A check about one path joins the
/// machine's path checks (a finding or a group may explain it; `account::account` decides); of the
/// others, a failed check fails the machine, a warned one warns it, an inconclusive one makes it
/// inconclusive.
pub fn apply(machines: &mut [Machine], b: &BaselineRef) {
    for m in machines.iter_mut().filter(|m| !m.figures.is_empty()) {
        let checks = checks(&m.figures, m.entry.sku.as_ref(), &m.interfered, b);
        let status_of = |c: &crate::wire::check::Check| match c.status {
            Status::Fail => MachineStatus::Fail,
            Status::Warn => MachineStatus::Warn,
            Status::Inconclusive => MachineStatus::Inconclusive,
            Status::Pass | Status::Skip => MachineStatus::Ok,
        };
        let paths: Vec<ClientCheck> = checks.iter().filter_map(ClientCheck::of_baseline).collect();
        let about_paths: BTreeSet<String> = paths.iter().map(|p| p.check.to_string()).collect();
        let own = |c: &&crate::wire::check::Check| !about_paths.contains(&c.name.to_string());
        let others = checks
            .iter()
            .filter(own)
            .filter(|c| status_of(c) > MachineStatus::Ok)
            .count();
        if let Some(worst) = checks.iter().filter(own).max_by_key(|c| status_of(c)) {
            let status = status_of(worst);
            if status > MachineStatus::Ok {
                m.raise(
                    status,
                    format!(
                        "baseline check {} {}: {} ({others} baseline check(s) not passed)",
                        worst.name,
                        worst.status.as_str(),
                        worst.message
                    ),
                );
            }
        }
        m.client_checks.extend(paths);
        m.entry.baseline_checks = checks;
    }
}

/// Judges a machine's figures against the baseline: one `baseline.<figure>` check per figure the
/// baseline knows, or one skipped `baseline` check when it does not know the model. `file` names
/// the baseline in messages.
fn judge(
    figures: &[Figure],
    sku: Option<&Sku>,
    baseline: &Baseline,
    rules: &Rules,
    file: &str,
) -> Vec<Check> {
    let known = sku.and_then(|s| baseline.for_sku(s));
    let Some(expected) = known else {
        let what = sku.map_or(
            "this machine's model (the document does not say what machine it is)".into(),
            |s| format!("'{}'", s.label()),
        );
        return vec![Check {
            name: CheckId::new("baseline", ""),
            status: Status::Skip,
            value: None,
            limit: None,
            message: format!(
                "{what} is not in the baseline '{file}': learn one for it with 'health_check baseline'"
            ),
        }];
    };
    figures
        .iter()
        .filter_map(|fig| {
            let e = expected.figures.get(&fig.key())?;
            let rule = rules.for_figure(&fig.name())?;
            Some(judge_one(fig, e, rule))
        })
        .collect()
}

fn judge_one(fig: &Figure, e: &Expected, rule: &Rule) -> Check {
    let name = CheckId::new("baseline", &fig.name());
    let unit = &e.unit;
    let value = round_to(fig.value, 3);
    if *fig.basis != *e.basis {
        return Check {
            name,
            status: Status::Skip,
            value: Some(value),
            limit: None,
            message: format!(
                "{}: not compared with the baseline: {}",
                fig.name(),
                basis_difference(&fig.basis, &e.basis).replace("its group", "the baseline")
            ),
        };
    }
    let reference = Reference {
        median: e.median,
        mad: e.mad,
        machines: e.machines,
    };
    let judged = Judged::new(fig.value, reference, rule, e.direction);
    let v = judged.verdict;
    let expected = round_to(e.median, 3);
    let off = v.deviation_pct.map_or_else(
        || format!("{} {unit}", round_to(fig.value - e.median, 3)),
        |d| format!("{d:+.1}%"),
    );
    let message = if v.flagged {
        format!(
            "{}: {value} {unit} against the model's expected {expected} {unit} ({off}; limit {} \
             {unit}, tolerance {}%, learned from {} machines)",
            fig.name(),
            round_to(v.limit, 3),
            rule.spec.tolerance_pct,
            e.machines
        )
    } else {
        format!(
            "{}: {value} {unit}, expected {expected} {unit} ({off})",
            fig.name()
        )
    };
    judged.check(name, judged.status(), message)
}

#[cfg(test)]
mod tests;
