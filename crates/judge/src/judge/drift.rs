//! Configuration drift among siblings: in each group of machines of one model, the value most of
//! them have for each fact of their configuration (firmware, microcode, kernel and its command
//! line, settings, DIMMs, NIC firmware), and a finding for every machine that differs. A fact
//! needs three machines reporting it and a strict majority to have a norm; with a tie there is
//! none, and nothing is said. A finding's severity is `warn` unless a rule whose `metrics`
//! matches `drift.<fact>` says otherwise.

use super::machine::Machine;
use super::pipeline::fact_finding;
use super::rules::{Rules, Severity};
use crate::wire::counters::{fact_difference, fact_label};
use crate::wire::fleet::{FactDrift, Finding, Sku};
use std::collections::BTreeMap;

/// Machines reporting a fact needed before it has a norm.
pub const MIN_MACHINES: usize = 3;

/// Per fact, per value, the machines that have it.
type ByFact<'a> = BTreeMap<&'a str, BTreeMap<&'a str, Vec<usize>>>;

/// A finding for every machine whose fact differs from the majority of its group's.
pub fn findings(machines: &[Machine], groups: &[(Sku, Vec<usize>)], rules: &Rules) -> Vec<Finding> {
    let mut out = Vec::new();
    for (_, members) in groups {
        // The machines of each value of each fact, a piece of the group at a time on all CPUs
        // (twenty facts a machine: two million entries at 100,000 machines), joined in order.
        let mut by_fact: ByFact = BTreeMap::new();
        let pieces = super::parallel::over_pieces(members.len(), |range| {
            let mut piece: ByFact = BTreeMap::new();
            for &m in &members[range] {
                for (fact, value) in machines[m].facts.iter() {
                    piece
                        .entry(fact)
                        .or_default()
                        .entry(value)
                        .or_default()
                        .push(m);
                }
            }
            vec![piece]
        });
        for piece in pieces {
            for (fact, values) in piece {
                let into = by_fact.entry(fact).or_default();
                for (value, ms) in values {
                    into.entry(value).or_default().extend(ms);
                }
            }
        }
        for (fact, values) in by_fact {
            let of: usize = values.values().map(Vec::len).sum();
            let Some((majority, agree)) = values
                .iter()
                .map(|(v, ms)| (*v, ms.len()))
                .max_by_key(|(_, n)| *n)
            else {
                continue;
            };
            if of < MIN_MACHINES || agree * 2 <= of {
                continue;
            }
            let name = format!("drift.{fact}");
            let severity = rules
                .for_figure(&name)
                .map_or(Severity::Warn, |r| r.spec.severity);
            for (value, ms) in values.iter().filter(|(v, _)| **v != majority) {
                for &m in ms {
                    out.push(fact_finding(
                        &machines[m].entry.label,
                        FactDrift {
                            name: fact.to_string(),
                            value: value.to_string(),
                            majority: majority.to_string(),
                            agree,
                            of,
                        },
                        severity,
                        format!(
                            "{} differs from {agree} of {of} machines of its model: {}",
                            fact_label(fact),
                            fact_difference(fact, value, majority)
                        ),
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::compare::tests::{machine, sku};
    use crate::wire::fleet::Scope;

    fn with_facts(label: &str, facts: &[(&str, &str)]) -> Machine {
        let mut m = machine(label, Vec::new());
        m.facts = std::sync::Arc::new(
            facts
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        m
    }

    fn group_of(n: usize) -> Vec<(Sku, Vec<usize>)> {
        vec![(sku(), (0..n).collect())]
    }

    #[test]
    fn the_one_machine_in_six_with_another_command_line_is_named() {
        let mut ms: Vec<Machine> = (0..5)
            .map(|i| with_facts(&format!("h{i}"), &[("kernel.cmdline", "quiet ro")]))
            .collect();
        ms.push(with_facts(
            "odd",
            &[("kernel.cmdline", "mitigations=off quiet ro")],
        ));
        let f = findings(&ms, &group_of(6), &Rules::builtin());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].machine, "odd");
        assert_eq!(f[0].severity, Severity::Warn);
        assert_eq!(f[0].scope, Scope::Machine);
        assert_eq!(
            f[0].message,
            "kernel command line differs from 5 of 6 machines of its model: + mitigations=off"
        );
        let drift = f[0].fact.as_ref().unwrap();
        assert_eq!((drift.agree, drift.of), (5, 6));
    }

    /// Three of five is a majority: the two others are named.
    #[test]
    fn a_bare_majority_is_the_norm() {
        let ms: Vec<Machine> = ["0xa", "0xa", "0xa", "0xb", "0xc"]
            .iter()
            .enumerate()
            .map(|(i, v)| with_facts(&format!("h{i}"), &[("cpu.microcode", v)]))
            .collect();
        let f = findings(&ms, &group_of(5), &Rules::builtin());
        let named: Vec<&str> = f.iter().map(|f| f.machine.as_str()).collect();
        assert_eq!(named, ["h3", "h4"], "{f:#?}");
    }

    #[test]
    fn a_tie_or_too_few_machines_have_no_norm() {
        let ms = vec![
            with_facts("a", &[("cpu.microcode", "0xa")]),
            with_facts("b", &[("cpu.microcode", "0xb")]),
        ];
        assert!(findings(&ms, &group_of(2), &Rules::builtin()).is_empty());
        let ms = vec![
            with_facts("a", &[("cpu.microcode", "0xa")]),
            with_facts("b", &[("cpu.microcode", "0xa")]),
            with_facts("c", &[("cpu.microcode", "0xb")]),
            with_facts("d", &[("cpu.microcode", "0xb")]),
        ];
        assert!(findings(&ms, &group_of(4), &Rules::builtin()).is_empty());
        // Three of four is a norm.
        let mut ms = ms;
        std::sync::Arc::make_mut(&mut ms[3].facts).insert("cpu.microcode".into(), "0xa".into());
        let f = findings(&ms, &group_of(4), &Rules::builtin());
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].message,
            "CPU microcode differs from 3 of 4 machines of its model: 0xb (theirs: 0xa)"
        );
    }

    #[test]
    fn machines_of_other_models_are_not_siblings() {
        let ms = vec![
            with_facts("a", &[("bios.version", "1")]),
            with_facts("b", &[("bios.version", "1")]),
            with_facts("c", &[("bios.version", "2")]),
        ];
        let groups = vec![(sku(), vec![0, 1]), (sku(), vec![2])];
        assert!(findings(&ms, &groups, &Rules::builtin()).is_empty());
    }

    #[test]
    fn a_rule_can_make_drift_fail() {
        let ms = vec![
            with_facts("a", &[("bios.version", "1")]),
            with_facts("b", &[("bios.version", "1")]),
            with_facts("c", &[("bios.version", "2")]),
        ];
        let rules = Rules::parse(
            "rules:\n  - metrics: '^drift\\.bios\\.'\n    tolerance_pct: 0\n    severity: fail\n",
            "test",
        )
        .unwrap();
        let f = findings(&ms, &group_of(3), &rules);
        assert_eq!(f[0].severity, Severity::Fail);
    }
}
