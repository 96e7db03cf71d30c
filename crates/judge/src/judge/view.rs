//! The fleet as every judge reads it, made once per judgement: which machine each name is, and
//! which machine each per-client figure measured. `compare`, `blame`, the shared findings and
//! the accounting take it from the walk (`fleet::judge`) instead of indexing the machines again.

use super::machine::Machine;
use crate::wire::figures::Figure;
use foldhash::fast::FixedState;
use std::collections::{BTreeSet, HashMap};

/// Names and paths of the machines of one judgement.
#[derive(Debug, Default)]
pub struct View {
    /// Which machine a name is: its label, host name or one of its addresses (the first
    /// machine to claim a name keeps it).
    names: HashMap<String, usize, FixedState>,
    /// Which machine a label is (labels are unique once read).
    labels: HashMap<String, usize, FixedState>,
    /// Per machine, (figure, the other machine it measured) for its per-client figures, by
    /// figure: none for figures of the machine alone, its loopback and its own names (a list
    /// of the few per-client figures, not a slot for each of 250).
    clients: Vec<Vec<(u32, u32)>>,
}

/// Names of a machine's own loopback: a test against them measures the kernel, not a path.
fn loopback(name: &str) -> bool {
    matches!(name, "localhost" | "127.0.0.1" | "::1" | "ip6-localhost") || name.starts_with("127.")
}

fn names(machines: &[Machine]) -> HashMap<String, usize, FixedState> {
    let mut index = HashMap::default();
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

/// Machines per piece of work when the paths are found on several CPUs.
const CHUNK: usize = 1024;

/// Machine `m`'s figures that measured another machine, as (figure, machine), by figure.
fn paths_of(
    m: usize,
    machine: &Machine,
    names: &HashMap<String, usize, FixedState>,
) -> Vec<(u32, u32)> {
    machine
        .figures
        .iter()
        .enumerate()
        .filter_map(|(f, fig)| {
            let c = fig
                .client()
                .filter(|c| !loopback(c))
                .and_then(|c| names.get(c).copied())
                .filter(|&c| c != m)?;
            Some((f as u32, c as u32))
        })
        .collect()
}

impl View {
    /// The view of `machines`, to which it first adds a machine for each client known only from
    /// others' measurements (a star's clients write no document).
    pub fn of(machines: &mut Vec<Machine>) -> View {
        let mut names = names(machines);
        let mut seen = BTreeSet::new();
        let mut unknown = Vec::new();
        for machine in machines.iter() {
            for c in machine.figures.iter().filter_map(Figure::client) {
                if !loopback(c) && !names.contains_key(c) && seen.insert(c) {
                    unknown.push(c.to_string());
                }
            }
        }
        for name in unknown {
            names.insert(name.clone(), machines.len());
            machines.push(Machine::measured_only(&name));
        }
        let labels = machines
            .iter()
            .enumerate()
            .map(|(i, m)| (m.entry.label.clone(), i))
            .collect();
        // Each machine's paths, on all CPUs (10,000 machines' names looked up a few hundred
        // thousand times).
        let chunks: Vec<std::ops::Range<usize>> = (0..machines.len())
            .step_by(CHUNK)
            .map(|start| start..(start + CHUNK).min(machines.len()))
            .collect();
        let (read, names_read) = (&*machines, &names);
        let clients = super::parallel::ordered_map(
            &chunks,
            || (),
            |(), range| {
                range
                    .clone()
                    .map(|m| paths_of(m, &read[m], names_read))
                    .collect::<Vec<_>>()
            },
        )
        .into_iter()
        .flatten()
        .collect();
        View {
            names,
            labels,
            clients,
        }
    }

    /// The machine a client name (a label, host name or address) is.
    pub fn named(&self, name: &str) -> Option<usize> {
        self.names.get(name).copied()
    }

    /// The machine a finding's label is.
    pub fn labelled(&self, label: &str) -> Option<usize> {
        self.labels.get(label).copied()
    }

    /// Machine `m`'s figures that measured another machine, as (figure, machine), by figure:
    /// what a walk over every figure asking [`View::client`] finds, without the walk.
    pub fn clients_of(&self, m: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.clients
            .get(m)
            .into_iter()
            .flatten()
            .map(|&(f, c)| (f as usize, c as usize))
    }

    /// The other machine figure `f` of machine `m` measured, if it measured one.
    pub fn client(&self, m: usize, f: usize) -> Option<usize> {
        let of = self.clients.get(m)?;
        let at = of.binary_search_by_key(&(f as u32), |e| e.0).ok()?;
        Some(of[at].1 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::figures::BANDWIDTH;

    fn machine(label: &str, clients: &[&str]) -> Machine {
        let mut m = Machine::measured_only(label);
        m.figures = clients
            .iter()
            .map(|c| {
                Figure::new(
                    &BANDWIDTH,
                    vec![c.to_string()],
                    9.0,
                    "profile=standard".into(),
                )
            })
            .map(Option::unwrap)
            .collect();
        m
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
    }

    /// Clients without documents become machines; loopback and a machine's own name are no
    /// path; every name of a machine finds it.
    #[test]
    fn clients_are_machines_and_loopback_is_none() {
        let mut ms = vec![
            machine("s1", &["c1", "127.0.0.1", "s1", "s2"]),
            machine("s2", &["c1"]),
        ];
        let view = View::of(&mut ms);
        assert_eq!(ms.len(), 3);
        assert_eq!(ms[2].entry.label, "c1");
        assert_eq!(
            (0..4).map(|f| view.client(0, f)).collect::<Vec<_>>(),
            [Some(2), None, None, Some(1)]
        );
        assert_eq!(view.client(1, 0), Some(2));
        for (m, machine) in ms.iter().enumerate() {
            let walked: Vec<(usize, usize)> = (0..machine.figures.len())
                .filter_map(|f| Some((f, view.client(m, f)?)))
                .collect();
            assert_eq!(view.clients_of(m).collect::<Vec<_>>(), walked, "{m}");
        }
        assert_eq!((view.named("c1"), view.labelled("s2")), (Some(2), Some(1)));
        assert_eq!(view.named("nobody"), None);
    }
}
