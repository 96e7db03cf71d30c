//! The fleet as every judge reads it, made once per judgement: which machine each name is, and
//! which machine each per-client figure measured. `compare`, `blame`, the shared findings and
//! the accounting take it from the walk (`fleet::judge`) instead of indexing the machines again.

use super::machine::Machine;
use foldhash::fast::FixedState;
use std::collections::HashMap;

/// Names and paths of the machines of one judgement.
#[derive(Debug, Default)]
pub struct View {
    /// Which machine a name is: its label, host name or one of its addresses (the first
    /// machine to claim a name keeps it).
    names: Names,
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

/// Which machine each name is.
type Names = HashMap<String, usize, FixedState>;

/// The place of a name several machines claimed (`Machine::disputed`): nobody's, and no
/// machine is made for it either.
const DISPUTED: usize = usize::MAX;

fn names(machines: &[Machine]) -> Names {
    let count = machines
        .iter()
        .map(|m| 1 + usize::from(m.entry.hostname.is_some()) + m.addresses.len())
        .sum();
    let mut index = HashMap::with_capacity_and_hasher(count, FixedState::default());
    for (i, m) in machines.iter().enumerate() {
        index.entry(m.entry.label.clone()).or_insert(i);
        if let Some(h) = &m.entry.hostname {
            index.entry(h.clone()).or_insert(i);
        }
        for a in &m.addresses {
            index.entry(a.clone()).or_insert(i);
        }
    }
    for m in machines {
        for d in &m.disputed {
            index.entry(d.clone()).or_insert(DISPUTED);
        }
    }
    index
}

/// A machine's paths, (figure, the machine measured), by figure; a client that no machine is
/// named for is at `u32::MAX`, and its place among the paths is beside.
struct Paths {
    paths: Vec<(u32, u32)>,
    unknown: Vec<usize>,
}

/// Machine `m`'s figures that measured another machine.
fn paths_of(m: usize, machine: &Machine, names: &Names) -> Paths {
    let mut paths = Vec::new();
    let mut unknown = Vec::new();
    for (f, fig) in machine.figures.iter().enumerate() {
        let Some(client) = fig.client().filter(|c| !loopback(c)) else {
            continue;
        };
        match names.get(client) {
            Some(&c) if c == m || c == DISPUTED => {}
            Some(&c) => paths.push((f as u32, c as u32)),
            None => {
                unknown.push(paths.len());
                paths.push((f as u32, u32::MAX));
            }
        }
    }
    Paths { paths, unknown }
}

impl View {
    /// The view of `machines`, to which it first adds a machine for each client known only from
    /// others' measurements (a star's clients write no document).
    pub fn of(machines: &mut Vec<Machine>) -> View {
        let mut names = names(machines);
        // Each machine's paths, on all CPUs (100,000 machines' client names are looked up
        // millions of times); a name no machine has is told after, in one pass.
        let (read, names_read) = (&*machines, &names);
        let found = super::parallel::over_pieces(machines.len(), |range| {
            range.map(|m| paths_of(m, &read[m], names_read)).collect()
        });
        // A client known only from others' measurements becomes a machine, in the order a
        // walk over the machines and their figures meets it.
        // A client of several machines is one name copied once (a million fleet-run documents
        // name four million clients).
        let mut clients = Vec::with_capacity(machines.len());
        for (m, Paths { mut paths, unknown }) in found.into_iter().enumerate() {
            for at in unknown {
                let figure = &machines[m].figures[paths[at].0 as usize];
                let name = figure.client().unwrap_or_default();
                let c = match names.get(name) {
                    Some(&c) => c,
                    None => {
                        let name = name.to_string();
                        machines.push(Machine::measured_only(&name));
                        names.insert(name, machines.len() - 1);
                        machines.len() - 1
                    }
                };
                paths[at].1 = c as u32;
            }
            clients.push(paths);
        }
        let labels = machines
            .iter()
            .enumerate()
            .map(|(i, m)| (m.entry.label.clone(), i))
            .collect();
        View {
            names,
            labels,
            clients,
        }
    }

    /// The machine a client name (a label, host name or address) is; none for a name several
    /// machines claimed.
    pub fn named(&self, name: &str) -> Option<usize> {
        self.names.get(name).copied().filter(|&m| m != DISPUTED)
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
    use crate::wire::figures::{BANDWIDTH, Figure};

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
