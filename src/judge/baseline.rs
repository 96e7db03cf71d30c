//! Baselines: per-SKU expectations learned from a fleet (`health_check baseline`), written as
//! YAML people can read and edit, and the checks a run is judged by against them (`--baseline`
//! on a run or on `compare`): one `baseline.<figure>` check per figure the baseline knows.

use super::machine::Machine;
use super::pipeline::{Judged, Population, Sample};
use super::reference::Reference;
use super::rules::{Rule, Rules};
use crate::units::round_to;
pub use crate::wire::baseline::{Baseline, Expected, FORMAT, SkuBaseline};
use crate::wire::document::{Check, CheckId, Status};
use crate::wire::figures::{Figure, basis_difference, family_of_key};
use crate::wire::fleet::{MachineStatus, Sku};
use std::collections::BTreeMap;
use std::path::Path;

/// A baseline file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--baseline '{path}': {message}")]
pub struct BaselineError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl Baseline {
    /// Learns a baseline from machines grouped by model (`groups` from
    /// [`super::compare::group`]): per figure the rules judge, the median and MAD of the figures
    /// measured the way most machines measured them, and without interference. Machines whose
    /// run failed or cannot be read teach nothing.
    pub fn learn(machines: &[Machine], groups: &[(Sku, Vec<usize>)], rules: &Rules) -> Baseline {
        let mut skus = Vec::new();
        for (sku, members) in groups {
            let mut by_key: BTreeMap<String, BTreeMap<&str, Vec<Sample>>> = BTreeMap::new();
            for &m in members {
                let machine = &machines[m];
                if machine.entry.status >= MachineStatus::Failed {
                    continue;
                }
                for fig in &machine.figures {
                    if rules.for_figure(&fig.name()).is_none() {
                        continue;
                    }
                    by_key
                        .entry(fig.key())
                        .or_default()
                        .entry(&fig.basis)
                        .or_default()
                        .push(Sample {
                            value: fig.value,
                            who: m as i64,
                            interfered: machine.interfered.contains_key(&fig.family.section),
                            flagged: false,
                        });
                }
            }
            let figures = by_key
                .into_iter()
                .filter_map(|(key, bases)| {
                    let family = family_of_key(&key)?;
                    // The way most machines measured it, counting those the baseline learns from.
                    let (basis, (r, count)) = bases
                        .into_iter()
                        .filter_map(|(basis, samples)| {
                            Some((basis, Population::BASELINE.reference_counted(&samples)?))
                        })
                        .max_by_key(|(_, (r, _))| r.machines)?;
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
        Baseline {
            health_check_baseline: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            rules: rules.specs(),
            skus,
        }
    }

    /// Reads a baseline file: the format this version writes, rules that compile, and every
    /// expectation a number a figure can have.
    pub fn from_file(path: &Path) -> Result<(Baseline, Rules), BaselineError> {
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

    /// The expectations for `sku`: the same model, or the one compatible model.
    pub fn for_sku(&self, sku: &Sku) -> Option<&SkuBaseline> {
        self.skus.iter().find(|s| &s.sku == sku).or_else(|| {
            let mut compatible = self.skus.iter().filter(|s| sku.compatible(&s.sku));
            match (compatible.next(), compatible.next()) {
                (Some(one), None) => Some(one),
                _ => None,
            }
        })
    }
}

/// Judges a machine's figures against the baseline: one `baseline.<figure>` check per figure the
/// baseline knows, or one skipped `baseline` check when it does not know the model. `file` names
/// the baseline in messages.
pub fn judge(
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
mod tests {
    use super::*;
    use crate::judge::compare::tests::{fig, fig_as, sku};
    use crate::wire::figures::{BANDWIDTH, Direction, PEAK_BANDWIDTH, SLEEP_IRQ};
    use std::collections::BTreeMap;

    fn expected(median: f64, mad: f64, machines: usize, unit: &str, d: Direction) -> Expected {
        Expected {
            median,
            mad,
            count: machines,
            machines,
            basis: "profile=standard".into(),
            unit: unit.into(),
            direction: d,
        }
    }

    fn baseline() -> Baseline {
        Baseline {
            health_check_baseline: FORMAT,
            version: "t".into(),
            created_unix: 0,
            rules: Rules::builtin().specs(),
            skus: vec![SkuBaseline {
                sku: sku(),
                machines: 10,
                figures: BTreeMap::from([
                    (
                        "memory.peak_bandwidth.all reads".to_string(),
                        expected(30_000.0, 500.0, 10, "MiB/s", Direction::Higher),
                    ),
                    (
                        "network.bandwidth".to_string(),
                        expected(9.4, 0.1, 10, "Gbit/s", Direction::Higher),
                    ),
                    (
                        "sleepbench.irq_pct".to_string(),
                        expected(0.0, 0.0, 10, "%", Direction::Lower),
                    ),
                ]),
            }],
        }
    }

    /// Failed runs, runs with interference and figures measured otherwise than most teach
    /// nothing: the expectation is the healthy, quiet majority's.
    #[test]
    fn a_baseline_learns_only_from_healthy_quiet_runs_measured_alike() {
        use crate::judge::compare::tests::machine;
        use crate::wire::document::Section;
        use crate::wire::fleet::MachineStatus;
        let peak = |v: f64| vec![fig(&PEAK_BANDWIDTH, &["all reads"], v)];
        let mut machines: Vec<Machine> = [30_000.0, 30_500.0, 29_500.0, 31_000.0]
            .iter()
            .enumerate()
            .map(|(i, &v)| machine(&format!("m{i}"), peak(v)))
            .collect();
        let mut failed = machine("failed", peak(1.0));
        failed.raise(MachineStatus::Failed, "its run failed");
        let mut busy = machine("busy", peak(2.0));
        busy.interfered
            .insert(Section::Memory, "30 % of the CPU stolen".into());
        let quick = machine(
            "quick",
            vec![fig_as(
                &PEAK_BANDWIDTH,
                &["all reads"],
                3.0,
                "profile=quick".into(),
            )],
        );
        machines.extend([failed, busy, quick]);
        let groups = vec![(sku(), (0..machines.len()).collect())];
        let b = Baseline::learn(&machines, &groups, &Rules::builtin());
        assert_eq!(b.skus.len(), 1);
        assert_eq!(b.skus[0].machines, 7);
        let e = &b.skus[0].figures["memory.peak_bandwidth.all reads"];
        assert_eq!((e.median, e.count, e.machines), (30_250.0, 4, 4));
        assert_eq!(e.mad, 500.0);
        assert_eq!(e.basis, "profile=standard");
        assert_eq!((e.unit.as_str(), e.direction), ("MiB/s", Direction::Higher));
    }

    #[test]
    fn fifteen_percent_less_memory_bandwidth_fails_and_names_everything() {
        let rules = Rules::builtin();
        let figures = [
            fig(&PEAK_BANDWIDTH, &["all reads"], 25_500.0),
            fig(&BANDWIDTH, &["c1"], 9.3),
        ];
        let checks = judge(&figures, Some(&sku()), &baseline(), &rules, "b.yaml");
        assert_eq!(checks.len(), 2);
        let mem = &checks[0];
        assert_eq!(mem.name, "baseline.memory.peak_bandwidth.all reads");
        assert_eq!(mem.status, Status::Fail);
        assert_eq!(mem.limit, Some(27_000.0));
        for part in [
            "memory.peak_bandwidth.all reads",
            "25500",
            "30000",
            "-15.0%",
        ] {
            assert!(mem.message.contains(part), "{part}: {}", mem.message);
        }
        assert_eq!(checks[1].status, Status::Pass, "{}", checks[1].message);
    }

    #[test]
    fn a_zero_median_is_judged_by_the_noise_floor_and_says_so() {
        // IRQ 40 % where the model's machines show 0 %: the rule's 5-point floor is the limit.
        let rules = Rules::builtin();
        let checks = judge(
            &[fig(&SLEEP_IRQ, &[], 40.0)],
            Some(&sku()),
            &baseline(),
            &rules,
            "b",
        );
        assert_eq!(checks[0].status, Status::Warn, "{}", checks[0].message);
        assert_eq!((checks[0].value, checks[0].limit), (Some(40.0), Some(5.0)));
        let calm = judge(
            &[fig(&SLEEP_IRQ, &[], 3.0)],
            Some(&sku()),
            &baseline(),
            &rules,
            "b",
        );
        assert_eq!(calm[0].status, Status::Pass);
    }

    #[test]
    fn a_figure_measured_otherwise_is_skipped_with_what_differs() {
        let quick: crate::wire::figures::Basis = std::sync::Arc::from("profile=quick");
        let checks = judge(
            &[fig_as(&PEAK_BANDWIDTH, &["all reads"], 10.0, quick)],
            Some(&sku()),
            &baseline(),
            &Rules::builtin(),
            "b",
        );
        assert_eq!(checks[0].status, Status::Skip);
        assert!(
            checks[0]
                .message
                .contains("measured with profile=quick where the baseline used profile=standard"),
            "{}",
            checks[0].message
        );
    }

    /// A document that knows less of its model (no socket count) takes the one baseline model it
    /// may be; with two such models it takes neither.
    #[test]
    fn a_model_known_in_part_takes_the_one_compatible_baseline_only() {
        let partial = Sku {
            sockets: None,
            ..sku()
        };
        let b = baseline();
        assert_eq!(b.for_sku(&partial).map(|s| &s.sku), Some(&sku()));
        let mut two = baseline();
        let mut second = two.skus[0].clone();
        second.sku.sockets = Some(2);
        two.skus.push(second);
        assert!(
            two.for_sku(&partial).is_none(),
            "two models fit: neither is taken"
        );
        assert_eq!(two.for_sku(&sku()).map(|s| &s.sku), Some(&sku()));
    }

    #[test]
    fn an_unknown_sku_is_one_skip_saying_so() {
        let other = Sku {
            sockets: Some(2),
            ..sku()
        };
        let checks = judge(&[], Some(&other), &baseline(), &Rules::builtin(), "b.yaml");
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status, Status::Skip);
        assert!(checks[0].message.contains("2 sockets") && checks[0].message.contains("b.yaml"));
    }

    #[test]
    fn the_file_round_trips_and_impossible_expectations_are_refused() {
        let b = baseline();
        let text = serde_yaml::to_string(&b).unwrap();
        let back: Baseline = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, b);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.yaml");
        std::fs::write(&path, &text).unwrap();
        assert!(Baseline::from_file(&path).is_ok());
        std::fs::write(&path, text.replace("median: 9.4", "median: -9.4")).unwrap();
        let e = Baseline::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("network.bandwidth") && e.contains("-9.4"), "{e}");
        std::fs::write(&path, text.replace("median: 9.4", "median: .nan")).unwrap();
        assert!(Baseline::from_file(&path).is_err());
    }
}
