//! The comparison: machines grouped by SKU, and per group and figure the median, the MAD, and
//! each machine's deviation and robust z-score. A figure is flagged when it is worse than the
//! median (in its direction) by more than its rule's tolerance and, in groups of five or more
//! with a non-zero MAD, is also an outlier (|z| > 3.5). Per-client figures are pooled over
//! clients, then attributed: when every client of a machine is slow the finding names that
//! machine; when every machine that measured one client found it slow, it names the client.

use super::machine::Machine;
use super::rules::{Rule, Rules, Severity};
use crate::stats::{mad, median};
use crate::wire::figures::{self, Direction, Figure};
use crate::wire::fleet::{FigureStats, Finding, GroupEntry, MachineStatus, Matrix, Scope, Sku};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Groups of this size or more also need a robust z-score beyond [`Z_LIMIT`] to be flagged.
pub const MIN_GROUP_FOR_Z: usize = 5;
/// The robust z-score beyond which a value is an outlier (Iglewicz and Hoaglin).
pub const Z_LIMIT: f64 = 3.5;

/// Puts each machine in a group by SKU; returns the groups' SKUs and members. A machine whose SKU
/// is only partly known (DCPerf's documents) joins the one group it is compatible with, if any.
pub fn group(machines: &mut [Machine]) -> Vec<(Sku, Vec<usize>)> {
    recognise_clients(machines);
    let mut by_sku: BTreeMap<Sku, Vec<usize>> = BTreeMap::new();
    let mut partial = Vec::new();
    for (i, m) in machines.iter().enumerate() {
        if m.entry.status >= MachineStatus::Failed {
            continue;
        }
        match &m.entry.sku {
            Some(s) if s.sockets.is_some() && s.numa_nodes.is_some() => {
                by_sku.entry(s.clone()).or_default().push(i)
            }
            Some(_) => partial.push(i),
            None => by_sku.entry(Sku::default()).or_default().push(i),
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
    for (g, (_, members)) in groups.iter().enumerate() {
        for &i in members {
            machines[i].entry.group = Some(g);
        }
    }
    groups
}

/// How a value stands against its reference, when it is flagged.
#[derive(Debug, Clone, Copy)]
struct Judgment {
    median: f64,
    deviation_pct: f64,
    robust_z: Option<f64>,
    severity: Severity,
    tolerance: f64,
}

/// Judges values of one figure against their median: flagged when worse than the median in
/// `direction` by more than the tolerance and, with [`MIN_GROUP_FOR_Z`] values or more and a
/// non-zero MAD, an outlier. Returns the median and MAD, and a judgment for each flagged value.
fn judge(
    values: &[f64],
    rules: &[Option<&Rule>],
    own: Direction,
) -> (f64, f64, Vec<Option<Judgment>>) {
    let Some(med) = median(values) else {
        return (f64::NAN, f64::NAN, Vec::new());
    };
    let spread = mad(values, med).unwrap_or(0.0);
    let rounded = |v: f64| crate::units::round_to(v, 4);
    let judged = values
        .iter()
        .zip(rules)
        .map(|(&v, rule)| {
            let rule = (*rule)?;
            if !rule.spec.flags(rule.direction(own), v, med) {
                return None;
            }
            let deviation = 100.0 * (v - med) / med.abs();
            let z = (spread > 0.0).then(|| 0.6745 * (v - med) / spread);
            let small = values.len() < MIN_GROUP_FOR_Z || z.is_none();
            let outlier = small || z.is_some_and(|z| z.abs() > Z_LIMIT);
            outlier.then(|| Judgment {
                median: med,
                deviation_pct: rounded(deviation),
                robust_z: z.map(rounded),
                severity: rule.spec.severity,
                tolerance: rule.spec.tolerance_pct,
            })
        })
        .collect();
    (med, spread, judged)
}

/// Caches which rule judges each figure name (names repeat across a fleet).
struct RuleCache<'r> {
    rules: &'r Rules,
    seen: HashMap<String, Option<usize>>,
}

impl<'r> RuleCache<'r> {
    fn get(&mut self, name: String) -> Option<&'r Rule> {
        let rules = self.rules;
        let index = *self
            .seen
            .entry(name)
            .or_insert_with_key(|name| rules.index_for(name));
        index.and_then(|i| rules.get(i))
    }
}

/// A measurement between two machines: (the machine that measured, the client as named).
type Pair = (usize, String);

/// A flagged per-client value: one measurement between a machine and a client.
#[derive(Debug, Clone)]
struct PairFlag {
    server: usize,
    figure: usize,
    judgment: Judgment,
}

/// A machine blamed for its per-client figures: the measurements it took part in (as the one
/// that measured, or as the client) are poor, and its siblings' are not.
#[derive(Debug, Clone)]
struct Blame {
    machine: usize,
    key: String,
    family: &'static figures::Family,
    value: f64,
    /// The measurements behind it.
    pairs: Vec<Pair>,
    /// Whether it measured any of them itself (else others measured it).
    measured_itself: bool,
    judgment: Judgment,
}

/// Compares every group. Returns the groups' statistics and the findings, worst first; sets each
/// machine's missing figures and status.
pub fn compare(
    machines: &mut [Machine],
    groups: &[(Sku, Vec<usize>)],
    rules: &Rules,
) -> (Vec<GroupEntry>, Vec<Finding>) {
    let mut cache = RuleCache {
        rules,
        seen: HashMap::new(),
    };
    let mut entries = Vec::with_capacity(groups.len());
    let mut findings = Vec::new();
    let mut pair_flags = Vec::new();
    for (sku, members) in groups {
        let mut by_key: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
        for &m in members {
            for (f, fig) in machines[m].figures.iter().enumerate() {
                by_key.entry(fig.key()).or_default().push((m, f));
            }
        }
        let mut stats = Vec::with_capacity(by_key.len());
        for (key, samples) in &by_key {
            let figs: Vec<&Figure> = samples
                .iter()
                .map(|&(m, f)| &machines[m].figures[f])
                .collect();
            let family = figs[0].family;
            let values: Vec<f64> = figs.iter().map(|f| f.value).collect();
            let rules_of: Vec<Option<&Rule>> = figs.iter().map(|f| cache.get(f.name())).collect();
            let (med, spread, judged) = judge(&values, &rules_of, family.direction);
            stats.push(FigureStats {
                figure: key.clone(),
                unit: family.unit.to_string(),
                direction: family.direction,
                count: values.len(),
                median: med,
                mad: spread,
                min: values.iter().copied().fold(f64::INFINITY, f64::min),
                max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            });
            for (&(m, f), j) in samples.iter().zip(judged) {
                let Some(j) = j else { continue };
                if family.per_client() {
                    pair_flags.push(PairFlag {
                        server: m,
                        figure: f,
                        judgment: j,
                    });
                } else {
                    findings.push(figure_finding(&machines[m], &machines[m].figures[f], &j));
                }
            }
        }
        mark_missing(machines, members, &by_key);
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
    let blames = blame_machines(machines, &mut cache);
    findings.extend(attribute(machines, pair_flags, blames));
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(
                b.deviation_pct
                    .unwrap_or(0.0)
                    .abs()
                    .total_cmp(&a.deviation_pct.unwrap_or(0.0).abs()),
            )
            .then(a.machine.cmp(&b.machine))
    });
    let by_label: HashMap<String, usize> = machines
        .iter()
        .enumerate()
        .map(|(i, m)| (m.entry.label.clone(), i))
        .collect();
    for f in &findings {
        if let Some(m) = by_label.get(&f.machine).map(|&i| &mut machines[i]) {
            let status = match f.severity {
                Severity::Fail => MachineStatus::Fail,
                Severity::Warn => MachineStatus::Warn,
            };
            if m.entry.status < MachineStatus::Failed {
                m.entry.status = m.entry.status.max(status);
            }
        }
    }
    (entries, findings)
}

/// One per-client measurement of one key: who measured, which figure, and the client's machine
/// when the client is one of the inputs.
#[derive(Debug, Clone, Copy)]
struct Measurement {
    server: usize,
    figure: usize,
    client: Option<usize>,
}

impl Measurement {
    fn involves(&self, m: usize) -> bool {
        self.server == m || self.client == Some(m)
    }
}

/// A machine, its median over the measurements it took part in, and those measurements.
type Side<'a> = (usize, f64, Vec<&'a Measurement>);

/// Finds the machines behind poor per-client figures. Each machine's value is the median of every
/// measurement it took part in, as the one that measured or as the client; these are judged
/// within its model's group. The worst machine flagged is blamed, the measurements it took part
/// in are set aside as explained, and the rest are judged again, until no machine stands out. A
/// slow host in a mesh thus takes the blame alone, and its partners are not blamed for the tests
/// they ran with it.
fn blame_machines(machines: &[Machine], cache: &mut RuleCache) -> Vec<Blame> {
    let index = client_index(machines);
    let mut by_key: BTreeMap<String, Vec<Measurement>> = BTreeMap::new();
    for (m, machine) in machines.iter().enumerate() {
        for (f, fig) in machine.figures.iter().enumerate() {
            let Some(client) = fig.client() else { continue };
            let client = index.get(client).copied().filter(|&c| c != m);
            by_key.entry(fig.key()).or_default().push(Measurement {
                server: m,
                figure: f,
                client,
            });
        }
    }
    let mut blames = Vec::new();
    for (key, all) in by_key {
        let family = machines[all[0].server].figures[all[0].figure].family;
        let rule = cache.get(format!("{key}.*"));
        let mut left = all;
        let mut blamed: BTreeSet<usize> = BTreeSet::new();
        loop {
            // Every machine's median over the measurements still unexplained, per group.
            let mut per_group: BTreeMap<usize, Vec<Side>> = BTreeMap::new();
            let endpoints: BTreeSet<usize> = left
                .iter()
                .flat_map(|x| std::iter::once(x.server).chain(x.client))
                .filter(|m| !blamed.contains(m))
                .collect();
            for m in endpoints {
                let Some(g) = machines[m].entry.group else {
                    continue;
                };
                let mine: Vec<&Measurement> = left.iter().filter(|x| x.involves(m)).collect();
                let values: Vec<f64> = mine
                    .iter()
                    .map(|x| machines[x.server].figures[x.figure].value)
                    .collect();
                if let Some(v) = median(&values) {
                    per_group.entry(g).or_default().push((m, v, mine));
                }
            }
            let mut worst: Option<Blame> = None;
            for sides in per_group.values() {
                let values: Vec<f64> = sides.iter().map(|s| s.1).collect();
                let (_, _, judged) = judge(&values, &vec![rule; values.len()], family.direction);
                for ((m, v, mine), j) in sides.iter().zip(judged) {
                    // One measurement alone cannot tell its two ends apart.
                    let Some(j) = j.filter(|_| mine.len() >= 2) else {
                        continue;
                    };
                    if worst
                        .as_ref()
                        .is_some_and(|w| w.judgment.deviation_pct.abs() >= j.deviation_pct.abs())
                    {
                        continue;
                    }
                    worst = Some(Blame {
                        machine: *m,
                        key: key.clone(),
                        family,
                        value: *v,
                        pairs: mine
                            .iter()
                            .map(|x| {
                                let fig = &machines[x.server].figures[x.figure];
                                (x.server, fig.client().unwrap_or_default().to_string())
                            })
                            .collect(),
                        measured_itself: mine.iter().any(|x| x.server == *m),
                        judgment: j,
                    });
                }
            }
            let Some(b) = worst else { break };
            blamed.insert(b.machine);
            left.retain(|x| !x.involves(b.machine));
            blames.push(b);
        }
    }
    blames
}

/// A machine whose document holds no figure of its own, measured as a client by others (a
/// pair's follower in a fleet run), is not a failed run: its figures are in their documents.
fn recognise_clients(machines: &mut [Machine]) {
    let index = client_index(machines);
    let mut measured_by: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for (m, machine) in machines.iter().enumerate() {
        for c in machine.figures.iter().filter_map(Figure::client) {
            if let Some(&c) = index.get(c).filter(|&&c| c != m) {
                measured_by
                    .entry(c)
                    .or_default()
                    .insert(machine.entry.label.clone());
            }
        }
    }
    for (c, by) in measured_by {
        let m = &mut machines[c];
        if m.figures.is_empty()
            && m.entry.status == MachineStatus::Failed
            && m.entry.kind == crate::wire::fleet::DocumentKind::HealthCheck
        {
            m.entry.status = MachineStatus::Ok;
            m.entry.reasons = vec![format!(
                "no figures of its own: it was measured as a client by {}",
                by.into_iter().collect::<Vec<_>>().join(", ")
            )];
        }
    }
}

/// Lists the keys a group's machines have that this machine lacks.
fn mark_missing(
    machines: &mut [Machine],
    members: &[usize],
    by_key: &BTreeMap<String, Vec<(usize, usize)>>,
) {
    for &m in members {
        if machines[m].figures.is_empty() {
            continue;
        }
        let own: std::collections::HashSet<String> =
            machines[m].figures.iter().map(Figure::key).collect();
        machines[m].entry.missing_figures = by_key
            .keys()
            .filter(|k| !own.contains(*k))
            .cloned()
            .collect();
    }
}

/// Which machine a client name is: by label, host name or address.
fn client_index(machines: &[Machine]) -> HashMap<String, usize> {
    let mut index = HashMap::new();
    for (i, m) in machines.iter().enumerate() {
        index.entry(m.entry.label.clone()).or_insert(i);
        if let Some(h) = &m.entry.hostname {
            index.entry(h.clone()).or_insert(i);
        }
        for a in &m.addresses {
            index.entry(a.clone()).or_insert(i);
        }
    }
    index
}

/// Turns flags into findings: a blamed machine's finding covers the measurements it took part
/// in; a poor measurement no blame explains is reported with both ends named.
fn attribute(machines: &[Machine], pair_flags: Vec<PairFlag>, blames: Vec<Blame>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut covered: BTreeSet<(usize, String, String)> = BTreeSet::new();
    for b in &blames {
        findings.push(blame_finding(machines, b));
        for (server, client) in &b.pairs {
            covered.insert((*server, client.clone(), b.key.clone()));
        }
    }
    for p in &pair_flags {
        let fig = &machines[p.server].figures[p.figure];
        let pair = (
            p.server,
            fig.client().unwrap_or_default().to_string(),
            fig.key(),
        );
        if covered.insert(pair) {
            findings.push(figure_finding(&machines[p.server], fig, &p.judgment));
        }
    }
    findings
}

fn describe(value: f64, unit: &str) -> String {
    format!("{} {unit}", crate::units::number(value))
}

fn figure_finding(m: &Machine, fig: &Figure, j: &Judgment) -> Finding {
    let unit = fig.family.unit;
    let side = if fig.value < j.median {
        "below"
    } else {
        "above"
    };
    let about = match fig.client() {
        Some(c) => format!(
            "{} to '{c}' (either end, or the path between, may be the cause)",
            fig.key()
        ),
        None => fig.name(),
    };
    Finding {
        machine: m.entry.label.clone(),
        figure: fig.name(),
        client: fig.client().map(str::to_string),
        scope: Scope::Figure,
        value: fig.value,
        median: j.median,
        unit: unit.to_string(),
        deviation_pct: Some(j.deviation_pct),
        robust_z: j.robust_z,
        severity: j.severity,
        message: format!(
            "{about}: {} is {:.1}% {side} the group's median {} (tolerance {}%)",
            describe(fig.value, unit),
            j.deviation_pct.abs(),
            describe(j.median, unit),
            j.tolerance
        ),
    }
}

fn blame_finding(machines: &[Machine], b: &Blame) -> Finding {
    let unit = b.family.unit;
    let j = &b.judgment;
    let (scope, who) = if b.measured_itself {
        (
            Scope::Server,
            format!("its {} measurements show {} poor", b.pairs.len(), b.key),
        )
    } else {
        (
            Scope::Client,
            format!(
                "the {} machines that measured it found {} poor",
                b.pairs.len(),
                b.key
            ),
        )
    };
    Finding {
        machine: machines[b.machine].entry.label.clone(),
        figure: format!("{}.*", b.key),
        client: None,
        scope,
        value: b.value,
        median: j.median,
        unit: unit.to_string(),
        deviation_pct: Some(j.deviation_pct),
        robust_z: j.robust_z,
        severity: j.severity,
        message: format!(
            "{who} (median {} against {} for its model, {:.1}% off, tolerance {}%), while the \
             machines it was measured with do well elsewhere: the cause is on this machine's \
             side; look at its NIC, driver settings, cable and switch port",
            describe(b.value, unit),
            describe(j.median, unit),
            j.deviation_pct.abs(),
            j.tolerance
        ),
    }
}

/// The N x N figures between the machines of the inputs, when clients are among them.
pub fn matrix(machines: &[Machine]) -> Option<Matrix> {
    let clients = client_index(machines);
    let mut pairs: BTreeSet<usize> = BTreeSet::new();
    let mut cells: Vec<(usize, usize, &'static figures::Family, f64)> = Vec::new();
    for (i, m) in machines.iter().enumerate() {
        for fig in &m.figures {
            let Some(&j) = fig.client().and_then(|c| clients.get(c)) else {
                continue;
            };
            if i == j {
                continue;
            }
            pairs.insert(i);
            pairs.insert(j);
            cells.push((i, j, fig.family, fig.value));
        }
    }
    if pairs.len() < 2 {
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
mod tests {
    use super::*;
    use crate::wire::figures::{
        BANDWIDTH, Family, Figure, IDLE_LATENCY, PEAK_BANDWIDTH, REVERSE_BANDWIDTH,
    };
    use crate::wire::fleet::{DocumentKind, MachineEntry};

    fn fig(family: &'static Family, labels: &[&str], value: f64) -> Figure {
        Figure {
            family,
            labels: labels.iter().map(|s| s.to_string()).collect(),
            value,
        }
    }

    fn machine(label: &str, figures: Vec<Figure>) -> Machine {
        Machine {
            entry: MachineEntry {
                label: label.into(),
                source: format!("{label}.json"),
                hostname: Some(label.into()),
                kind: DocumentKind::HealthCheck,
                sku: Some(Sku {
                    cpu_model: Some("M".into()),
                    logical_cpus: Some(8),
                    sockets: Some(1),
                    numa_nodes: Some(1),
                    mem_gib: Some(64),
                }),
                group: None,
                status: MachineStatus::Ok,
                reasons: vec![],
                figures: figures.len(),
                missing_figures: vec![],
                checks_failed: vec![],
                baseline_checks: vec![],
                started_unix: None,
            },
            figures,
            addresses: vec![],
            document: None,
        }
    }

    fn run(machines: &mut [Machine]) -> Vec<Finding> {
        let groups = group(machines);
        compare(machines, &groups, &Rules::builtin()).1
    }

    fn peak(v: f64) -> Vec<Figure> {
        vec![fig(&PEAK_BANDWIDTH, &["all reads"], v)]
    }

    #[test]
    fn an_outlier_in_a_large_group_is_flagged_with_its_z_score() {
        let mut ms: Vec<Machine> = [
            30000.0, 30500.0, 29500.0, 31000.0, 29800.0, 30200.0, 15000.0,
        ]
        .iter()
        .enumerate()
        .map(|(i, &v)| machine(&format!("m{i}"), peak(v)))
        .collect();
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].machine, "m6");
        assert_eq!(f[0].figure, "memory.peak_bandwidth.all reads");
        assert_eq!(f[0].median, 30000.0);
        assert_eq!(f[0].deviation_pct, Some(-50.0));
        let z = f[0].robust_z.unwrap();
        assert!((z - 0.6745 * -15000.0 / 500.0).abs() < 0.01, "{z}");
        assert_eq!(f[0].severity, Severity::Fail);
        assert_eq!(ms[6].entry.status, MachineStatus::Fail);
        assert_eq!(ms[0].entry.status, MachineStatus::Ok);
    }

    #[test]
    fn a_deviation_within_the_noise_of_a_large_group_is_not_flagged() {
        // 12 % below the median is past the 10 % tolerance, but this fleet is noisy (|z| < 3.5).
        let mut ms: Vec<Machine> = [30000.0, 34000.0, 26000.0, 33000.0, 27000.0, 26400.0]
            .iter()
            .enumerate()
            .map(|(i, &v)| machine(&format!("m{i}"), peak(v)))
            .collect();
        assert!(run(&mut ms).is_empty());
    }

    #[test]
    fn small_groups_and_zero_mad_go_by_the_tolerance_alone() {
        let mut ms = vec![
            machine("a", peak(30000.0)),
            machine("b", peak(30000.0)),
            machine("c", peak(26000.0)),
        ];
        let f = run(&mut ms);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].machine.as_str(), f[0].robust_z), ("c", None));
        let mut ms: Vec<Machine> = (0..6)
            .map(|i| {
                machine(
                    &format!("m{i}"),
                    peak(if i == 5 { 26000.0 } else { 30000.0 }),
                )
            })
            .collect();
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "MAD is 0: the tolerance decides");
        assert_eq!(f[0].machine, "m5");
    }

    #[test]
    fn only_the_worse_direction_is_flagged() {
        let lat = |v: f64| vec![fig(&IDLE_LATENCY, &["FullRandom", "Node-0", "Node-0"], v)];
        let mut ms = vec![
            machine("a", lat(100.0)),
            machine("b", lat(100.0)),
            machine("fast", lat(50.0)),
            machine("slow", lat(130.0)),
        ];
        let f = run(&mut ms);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].machine, "slow");
        assert_eq!(f[0].deviation_pct, Some(30.0));
    }

    #[test]
    fn every_client_slow_names_the_server_and_a_client_slow_everywhere_names_the_client() {
        let bw = |pairs: &[(&str, f64)]| -> Vec<Figure> {
            pairs
                .iter()
                .map(|(c, v)| fig(&BANDWIDTH, &[c], *v))
                .collect()
        };
        // A star: s1 measures c1..c3 slowly, s2 and s3 measure them fine.
        let mut ms = vec![
            machine("s1", bw(&[("c1", 2.0), ("c2", 2.1), ("c3", 1.9)])),
            machine("s2", bw(&[("c1", 9.4), ("c2", 9.3), ("c3", 9.5)])),
            machine("s3", bw(&[("c1", 9.4), ("c2", 9.4), ("c3", 9.2)])),
        ];
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!((f[0].machine.as_str(), f[0].scope), ("s1", Scope::Server));
        assert_eq!(f[0].figure, "network.bandwidth.*");
        // A mesh of four where x is slow both ways: every finding names x.
        let names = ["a", "b", "c", "x"];
        let mut ms: Vec<Machine> = names
            .iter()
            .map(|&me| {
                let figures = names
                    .iter()
                    .filter(|&&other| other != me)
                    .flat_map(|&other| {
                        let v = if me == "x" || other == "x" {
                            0.19
                        } else {
                            0.95
                        };
                        [
                            fig(&BANDWIDTH, &[other], v),
                            fig(&REVERSE_BANDWIDTH, &[other], v),
                        ]
                    })
                    .collect();
                machine(me, figures)
            })
            .collect();
        let f = run(&mut ms);
        assert!(!f.is_empty());
        assert!(f.iter().all(|f| f.machine == "x"), "{f:#?}");
        assert!(f.iter().all(|f| f.scope == Scope::Server), "{f:#?}");
        let m = matrix(&ms).unwrap();
        assert_eq!(m.machines, names);
        for (i, row) in m.bandwidth_gbps.iter().enumerate() {
            for (j, cell) in row.iter().enumerate() {
                assert_eq!(cell.is_some(), i != j, "{i},{j}");
            }
        }
        assert_eq!(m.bandwidth_gbps[3][0], Some(0.19));
    }

    /// A mesh where each pair is measured once, by the first of the two in `names` order.
    fn mesh(names: &[&str], slow: &[&str]) -> Vec<Machine> {
        names
            .iter()
            .enumerate()
            .map(|(i, &me)| {
                let figures = names[i + 1..]
                    .iter()
                    .map(|&other| {
                        let v = if slow.contains(&me) || slow.contains(&other) {
                            0.19
                        } else {
                            0.95
                        };
                        fig(&BANDWIDTH, &[other], v)
                    })
                    .collect();
                machine(me, figures)
            })
            .collect()
    }

    #[test]
    fn in_a_mesh_only_the_slow_hosts_are_blamed() {
        for slow in [&["c"][..], &["a"], &["d"], &["b", "e"]] {
            let mut ms = mesh(&["a", "b", "c", "d", "e", "f"], slow);
            let f = run(&mut ms);
            let blamed: BTreeSet<&str> = f.iter().map(|f| f.machine.as_str()).collect();
            assert_eq!(blamed, slow.iter().copied().collect(), "{f:#?}");
        }
    }

    #[test]
    fn one_measurement_alone_names_both_ends_and_a_follower_is_not_failed() {
        // Pairs: a measures b, c measures d (slow); b and d have no figures of their own.
        let mut ms = vec![
            machine("a", vec![fig(&BANDWIDTH, &["b"], 0.95)]),
            machine("b", vec![]),
            machine("c", vec![fig(&BANDWIDTH, &["d"], 0.19)]),
            machine("d", vec![]),
            machine("e", vec![fig(&BANDWIDTH, &["f"], 0.94)]),
            machine("f", vec![]),
        ];
        for m in [1, 3, 5] {
            ms[m].entry.status = MachineStatus::Failed;
            ms[m].entry.reasons = vec!["the document holds no figure".into()];
        }
        let f = run(&mut ms);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(
            (f[0].scope, f[0].client.as_deref()),
            (Scope::Figure, Some("d"))
        );
        assert!(f[0].message.contains("either end"));
        assert_eq!(
            ms[1].entry.status,
            MachineStatus::Ok,
            "{:?}",
            ms[1].entry.reasons
        );
        assert!(ms[1].entry.reasons[0].contains("measured as a client by a"));
    }

    #[test]
    fn machines_of_other_models_and_missing_figures() {
        let mut big = machine("big", peak(90000.0));
        big.entry.sku.as_mut().unwrap().logical_cpus = Some(384);
        let mut failed = machine("b", vec![]);
        failed.entry.status = MachineStatus::Failed;
        let mut ms = vec![
            machine("a", peak(30000.0)),
            failed,
            big,
            machine("c", vec![fig(&BANDWIDTH, &["x"], 9.0)]),
        ];
        let f = run(&mut ms);
        assert!(f.is_empty(), "different models are not compared: {f:#?}");
        assert_ne!(ms[0].entry.group, ms[2].entry.group);
        assert_eq!(ms[1].entry.group, None, "no figures: in no group");
        assert_eq!(
            ms[3].entry.missing_figures,
            ["memory.peak_bandwidth.all reads"]
        );
    }
}
