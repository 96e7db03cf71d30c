//! One machine, one vote: documents are counted by the identity of the machine that wrote them,
//! not by file. Copies of one run (the same machine id, boot and start) count once; several
//! runs of one machine are that machine's (a failed one too: one vote, the latest run's status),
//! judged on the median of each figure over its runs;
//! two documents that claim one host name or address with different machine ids clash, and
//! neither is trusted for the other's paths (both lose that claim, and only it: a host name lost
//! names them by file, an address lost makes them no one's client at it). One machine id under two host names is a
//! cloned image's `/etc/machine-id`: each host keeps its own vote, and both are warned; runs
//! under one id and name that started in the same second in different boots are two machines (a
//! clone that kept its name), each its own vote, warned and named by file. Every
//! such case is named in the report (`identity`), so an operator sees which files were merged, dropped or doubted.

use super::Machine;
use crate::wire::figures::{Figure, Labels};
use crate::wire::fleet::{IdentityKind, IdentityNote, MachineStatus};
use foldhash::fast::FixedState;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The machines with one vote each, and what was done to get there.
pub fn one_vote(machines: Vec<Machine>) -> (Vec<Machine>, Vec<IdentityNote>) {
    let mut notes = Vec::new();
    let merged = merge_by_machine_id(machines, &mut notes);
    let pooled = pool_stateless(merged, &mut notes);
    let checked = clashes(pooled, &mut notes);
    (checked, notes)
}

/// Runs of one host that cannot have overlapped: starts this far apart at least.
const APART: u64 = 600;

/// Host names shared by machines that were never configured: never one machine's by name.
fn unnamed(host: &str) -> bool {
    matches!(
        host.to_ascii_lowercase().as_str(),
        "" | "localhost" | "localhost.localdomain" | "(none)" | "linux" | "ubuntu" | "debian"
    )
}

/// A node that makes its `/etc/machine-id` anew at each boot (a stateless node booted from the
/// network, or one re-imaged between runs) writes each boot's runs under another id. Its
/// entries share a host name and a model, each from other boots and started far apart: they
/// are one machine's runs, pooled as such and said, not a clash of impostors (which run at the
/// same time, or on other hardware).
fn pool_stateless(mut machines: Vec<Machine>, notes: &mut Vec<IdentityNote>) -> Vec<Machine> {
    let mut by_host: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in machines.iter().enumerate() {
        if m.entry.machine_id.is_none() || m.entry.status == MachineStatus::Unreadable {
            continue;
        }
        if let Some(h) = m.entry.hostname.as_deref().filter(|h| !unnamed(h)) {
            by_host.entry(h).or_default().push(i);
        }
    }
    let one_node = |at: &[usize]| {
        let ids: BTreeSet<&str> = at
            .iter()
            .filter_map(|&i| machines[i].entry.machine_id.as_deref())
            .collect();
        let boots: BTreeSet<&str> = at
            .iter()
            .filter_map(|&i| machines[i].entry.boot_id.as_deref())
            .collect();
        let model = &machines[at[0]].entry.sku;
        let mut starts: Vec<u64> = at
            .iter()
            .filter_map(|&i| machines[i].entry.started_unix)
            .collect();
        starts.sort_unstable();
        ids.len() == at.len()
            && boots.len() == at.len()
            && model.is_some()
            && at.iter().all(|&i| machines[i].entry.sku == *model)
            && starts.len() == at.len()
            && starts.windows(2).all(|w| w[1] - w[0] >= APART)
    };
    let groups: Vec<Vec<usize>> = by_host
        .into_values()
        .filter(|at| at.len() > 1 && one_node(at))
        .collect();
    if groups.is_empty() {
        return machines;
    }
    let mut taken: BTreeMap<usize, Machine> = BTreeMap::new();
    let mut pooled_at = Vec::new();
    for at in groups {
        let runs: Vec<Machine> = at
            .iter()
            .map(|&i| std::mem::replace(&mut machines[i], Machine::measured_only("")))
            .collect();
        let files: Vec<String> = runs.iter().map(|m| m.entry.source.clone()).collect();
        let host = runs[0].entry.hostname.clone().unwrap_or_default();
        let m = median_of_runs(runs);
        notes.push(IdentityNote {
            kind: IdentityKind::Runs,
            files: files.clone(),
            message: format!(
                "{} runs of host {host} under {} machine ids, each from another boot, started \
                 apart, on one model ({}): one node that makes its /etc/machine-id anew at each \
                 boot (stateless, or re-imaged), judged on each figure's median over its runs",
                files.len(),
                files.len(),
                some_of(&files)
            ),
        });
        taken.insert(at[0], m);
        pooled_at.extend(at);
    }
    let gone: BTreeSet<usize> = pooled_at.into_iter().collect();
    machines
        .into_iter()
        .enumerate()
        .filter_map(|(i, m)| match taken.remove(&i) {
            Some(pooled) => Some(pooled),
            None => (!gone.contains(&i)).then_some(m),
        })
        .collect()
}

/// A run's identity: boot and start.
type Run = (Option<String>, Option<u64>);

/// A figure's place among a machine's runs: family, labels and basis.
type FigureKey = (String, Labels, String);

fn run_of(m: &Machine) -> Run {
    (m.entry.boot_id.clone(), m.entry.started_unix)
}

fn merge_by_machine_id(machines: Vec<Machine>, notes: &mut Vec<IdentityNote>) -> Vec<Machine> {
    // Room for every machine at once: growing a vector of 10,000 machines held the old and the
    // new at the peak.
    let mut out: Vec<Machine> = Vec::with_capacity(machines.len());
    // (Machine id, host name) -> index in `out`, and the runs it holds (run identity -> file).
    // The host name is part of the key: two hosts with one machine id are a cloned image's.
    type Key = (String, Option<String>);
    let mut by_id: BTreeMap<Key, (usize, Vec<(Run, String)>)> = BTreeMap::new();
    let mut runs_of: BTreeMap<usize, Vec<Machine>> = BTreeMap::new();
    // Entries that cannot be one machine's runs though they claim its id and name: (the first
    // entry of that identity, the other entry).
    let mut twins: Vec<(usize, usize)> = Vec::new();
    for m in machines {
        let id = m
            .entry
            .machine_id
            .clone()
            .filter(|_| m.entry.status != MachineStatus::Unreadable);
        let Some(id) = id else {
            out.push(m);
            continue;
        };
        let key = (id.clone(), m.entry.hostname.clone());
        let Some((at, runs)) = by_id.get_mut(&key) else {
            by_id.insert(key, (out.len(), vec![(run_of(&m), m.entry.source.clone())]));
            out.push(m);
            continue;
        };
        let run = run_of(&m);
        if let Some((_, first)) = runs.iter().find(|(r, _)| *r == run) {
            notes.push(IdentityNote {
                kind: IdentityKind::Duplicate,
                files: vec![first.clone(), m.entry.source.clone()],
                message: format!(
                    "{} is a copy of the run in {first} (machine {id}, the same boot and start): \
                     counted once",
                    m.entry.source
                ),
            });
            continue;
        }
        // Two boots starting a run in the same second are two machines: a clone that kept its
        // host name with its /etc/machine-id, or many hosts all named `localhost`.
        let twin = run.0.is_some()
            && run.1.is_some()
            && runs
                .iter()
                .any(|(r, _)| r.1 == run.1 && r.0.is_some() && r.0 != run.0);
        if twin {
            // Kept among the runs seen, so that a copy of the twin's run counts once.
            runs.push((run, m.entry.source.clone()));
            twins.push((*at, out.len()));
            out.push(m);
            continue;
        }
        // Every readable run of one machine is that machine's: a failed one too, so that the
        // machine still has one vote (the latest run's status is the machine's, the failed
        // run's reasons are kept).
        runs.push((run, m.entry.source.clone()));
        runs_of.entry(*at).or_default().push(m);
    }
    for (at, others) in runs_of {
        let first = std::mem::replace(&mut out[at], Machine::measured_only(""));
        let mut all = vec![first];
        all.extend(others);
        let files: Vec<String> = all.iter().map(|m| m.entry.source.clone()).collect();
        let id = all[0].entry.machine_id.clone().unwrap_or_default();
        out[at] = median_of_runs(all);
        notes.push(IdentityNote {
            kind: IdentityKind::Runs,
            files: files.clone(),
            message: format!(
                "{} runs of machine {id} ({}): one machine, judged on each figure's median over \
                 its runs",
                files.len(),
                some_of(&files)
            ),
        });
    }
    // Machine ids seen under several host names (after pooling: a warning raised on a run that
    // was then pooled would be lost with it).
    let mut cloned: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for ((id, _), (at, _)) in &by_id {
        cloned.entry(id.clone()).or_default().push(*at);
    }
    cloned.retain(|_, at| at.len() > 1);
    for (id, at) in cloned {
        let files: Vec<String> = at.iter().map(|&i| out[i].entry.source.clone()).collect();
        let names: Vec<String> = at
            .iter()
            .filter_map(|&i| out[i].entry.hostname.clone())
            .collect();
        let message = format!(
            "{} share machine id {id} under {} host names ({}): a cloned image's \
             /etc/machine-id? Each counts as its own machine; give each its own id \
             (systemd-machine-id-setup)",
            some_of(&files),
            names.len(),
            some_of(&names)
        );
        for &i in &at {
            out[i].raise(MachineStatus::Warn, format!("identity clash: {message}"));
        }
        notes.push(IdentityNote {
            kind: IdentityKind::Clash,
            files,
            message,
        });
    }
    // Twins: one vote each, neither trusted for the name they share (a path naming it could be
    // either's), both warned, one note per identity.
    let mut by_first: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (first, other) in twins {
        by_first.entry(first).or_default().push(other);
    }
    for (first, others) in by_first {
        let all: Vec<usize> = std::iter::once(first).chain(others).collect();
        let files: Vec<String> = all.iter().map(|&i| out[i].entry.source.clone()).collect();
        let id = out[first].entry.machine_id.clone().unwrap_or_default();
        let name = out[first].entry.hostname.clone().unwrap_or_default();
        let message = format!(
            "{} claim machine id {id} and host name {name}, but their runs started in the same \
             second in different boots: {} machines, not one (a clone that kept its name and \
             /etc/machine-id?). Each counts as its own machine, named by file; give each its \
             own name and id (systemd-machine-id-setup)",
            some_of(&files),
            all.len()
        );
        for &i in &all {
            let m = &mut out[i];
            m.disputed.extend(m.entry.hostname.take());
            m.disputed.append(&mut m.addresses);
            m.raise(MachineStatus::Warn, format!("identity clash: {message}"));
        }
        notes.push(IdentityNote {
            kind: IdentityKind::Clash,
            files,
            message,
        });
    }
    out
}

/// How far in the future a run may say it started and still be believed (clocks skew a
/// little; a run from next year had a wrong clock).
const FUTURE_SKEW: u64 = 600;

/// One machine of several runs: the latest run's entry, each figure the median of the runs
/// that measured it alike (same labels and basis). A run that says it started in the future
/// (its clock was wrong) is not taken as the latest, or it would speak for the machine for
/// ever.
fn median_of_runs(mut runs: Vec<Machine>) -> Machine {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(u64::MAX, |d| d.as_secs());
    let future = |m: &Machine| {
        m.entry
            .started_unix
            .is_some_and(|t| t > now.saturating_add(FUTURE_SKEW))
    };
    let odd_clocks: Vec<String> = runs
        .iter()
        .filter(|m| future(m))
        .map(|m| m.entry.source.clone())
        .collect();
    runs.sort_by_key(|m| (!future(m), m.entry.started_unix));
    let n = runs.len();
    let mut values: BTreeMap<FigureKey, (Figure, Vec<f64>)> = BTreeMap::new();
    for m in &runs {
        for f in &m.figures {
            let key = (
                f.family.name.to_string(),
                f.labels.clone(),
                f.basis.to_string(),
            );
            values
                .entry(key)
                .or_insert_with(|| (f.clone(), Vec::new()))
                .1
                .push(f.value);
        }
    }
    let mut latest = runs.pop().expect("one run at least");
    let sources: Vec<String> = runs.iter().map(|m| m.entry.source.clone()).collect();
    for m in runs {
        // An earlier run that failed is said; the latest run's status is the machine's.
        if m.entry.status == MachineStatus::Failed {
            latest.entry.reasons.push(format!(
                "an earlier run ({}) failed: {}",
                m.entry.source,
                m.entry.reasons.join("; ")
            ));
        }
        latest.addresses.extend(m.addresses);
        for (section, why) in m.interfered {
            latest.interfered.entry(section).or_insert(why);
        }
    }
    latest.addresses.sort();
    latest.addresses.dedup();
    latest.figures = values
        .into_values()
        .map(|(mut f, v)| {
            f.value = crate::stats::median(&v).unwrap_or(f.value);
            f
        })
        .collect();
    latest.entry.figures = latest.figures.len();
    latest.entry.reasons.push(format!(
        "one of {n} runs of this machine (also {}): each figure is the median of its runs",
        some_of(&sources)
    ));
    if !odd_clocks.is_empty() && !odd_clocks.contains(&latest.entry.source) {
        latest.entry.reasons.push(format!(
            "{} started in the future by the machine's clock (a wrong clock?): not taken as \
             its latest run",
            some_of(&odd_clocks)
        ));
    }
    latest
}

/// Documents of different machines (by machine id) that claim one host name, or one address a
/// measurement names as its client: each loses the claim, and is warned. An address no path
/// names decides nothing (a bridge's or a NAT's, on every host alike), so sharing it is no clash.
/// Claims are gathered in maps, so the work grows with the fleet, not with its square.
fn clashes(mut machines: Vec<Machine>, notes: &mut Vec<IdentityNote>) -> Vec<Machine> {
    // Borrowed, and only where a document says its machine id: a fleet's clients are a name
    // in each of a few hundred thousand figures.
    let clients: HashSet<&str, FixedState> =
        if machines.iter().any(|m| m.entry.machine_id.is_some()) {
            machines
                .iter()
                .flat_map(|m| m.figures.iter().filter_map(Figure::client))
                .collect()
        } else {
            HashSet::default()
        };
    // Claim (a host name, else an address) -> the machines (index) making it; only documents
    // that say their machine id count.
    let mut claims: BTreeMap<(bool, String), Vec<usize>> = BTreeMap::new();
    for (i, m) in machines.iter().enumerate() {
        if m.entry.machine_id.is_none() {
            continue;
        }
        if let Some(h) = &m.entry.hostname {
            claims.entry((true, h.clone())).or_default().push(i);
        }
        for a in m.addresses.iter().filter(|a| clients.contains(a.as_str())) {
            claims.entry((false, a.clone())).or_default().push(i);
        }
    }
    // Machine -> the claims it loses, and why.
    let mut clashing: BTreeMap<usize, Vec<(bool, String, String)>> = BTreeMap::new();
    for ((host, value), who) in claims {
        let claim = if host {
            format!("host name {value}")
        } else {
            format!("address {value}")
        };
        let ids: BTreeSet<&str> = who
            .iter()
            .filter_map(|&i| machines[i].entry.machine_id.as_deref())
            .collect();
        if ids.len() < 2 {
            continue;
        }
        let files: Vec<String> = who
            .iter()
            .map(|&i| machines[i].entry.source.clone())
            .collect();
        let message = format!(
            "{} claim {claim} as {} machines: none is trusted for the others' paths (each is \
             named by file, and their addresses make them no one's client)",
            some_of(&files),
            ids.len()
        );
        for &i in &who {
            clashing
                .entry(i)
                .or_default()
                .push((host, value.clone(), message.clone()));
        }
        notes.push(IdentityNote {
            kind: IdentityKind::Clash,
            files,
            message,
        });
    }
    // Each loses only what is disputed: an address another machine holds now (a DHCP lease
    // moved) leaves its host name and its other addresses its own.
    for (i, lost) in clashing {
        let m = &mut machines[i];
        for (host, value, why) in lost {
            if host {
                m.disputed.extend(m.entry.hostname.take());
            } else {
                m.addresses.retain(|a| *a != value);
                m.disputed.push(value);
            }
            m.raise(MachineStatus::Warn, format!("identity clash: {why}"));
        }
    }
    machines
}

/// Files for a sentence: all of a few, the first of many (the report lists every one).
fn some_of(files: &[String]) -> String {
    const SHOWN: usize = 4;
    if files.len() <= SHOWN {
        return files.join(" and ");
    }
    format!(
        "{} and {} more",
        files[..SHOWN].join(", "),
        files.len() - SHOWN
    )
}

#[cfg(test)]
mod tests;
