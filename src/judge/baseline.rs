//! Baselines: per-SKU expectations learned from a fleet (`health_check baseline`), written as
//! YAML people can read and edit, and the checks a run is judged by against them (`--baseline`
//! on a run or on `compare`): one `baseline.<figure>` check per figure the baseline knows.

use super::machine::Machine;
use super::rules::{RuleSpec, Rules, Severity};
use crate::stats::{mad, median};
use crate::units::round_to;
pub use crate::wire::baseline::{Baseline, Expected, FORMAT, SkuBaseline};
use crate::wire::document::{Check, CheckId, Status};
use crate::wire::figures::{Direction, Figure};
use crate::wire::fleet::Sku;
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
    /// Learns a baseline from machines grouped by SKU (`groups` from [`super::compare::group`]):
    /// the median and MAD of every figure the rules judge.
    pub fn learn(machines: &[Machine], groups: &[(Sku, Vec<usize>)], rules: &Rules) -> Baseline {
        let mut skus = Vec::new();
        for (sku, members) in groups {
            let mut values: BTreeMap<String, (Vec<f64>, &Figure)> = BTreeMap::new();
            for &m in members {
                for fig in &machines[m].figures {
                    if rules.for_figure(&fig.name()).is_none() {
                        continue;
                    }
                    values
                        .entry(fig.key())
                        .or_insert_with(|| (Vec::new(), fig))
                        .0
                        .push(fig.value);
                }
            }
            let figures = values
                .into_iter()
                .filter_map(|(key, (v, fig))| {
                    let med = median(&v)?;
                    Some((
                        key,
                        Expected {
                            median: round_to(med, 4),
                            mad: round_to(mad(&v, med).unwrap_or(0.0), 4),
                            count: v.len(),
                            unit: fig.family.unit.to_string(),
                            direction: fig.family.direction,
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

    /// Reads a baseline file.
    pub fn from_file(path: &Path) -> Result<(Baseline, Rules), BaselineError> {
        let fail = |message: String| BaselineError {
            path: path.display().to_string(),
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
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
/// baseline knows, or one skipped `baseline` check when it does not know the SKU. `file` names
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
        let what = sku.map_or("this machine's model (no system section)".into(), |s| {
            format!("'{}'", s.label())
        });
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
            Some(judge_one(fig, e, rule.direction(e.direction), &rule.spec))
        })
        .collect()
}

fn judge_one(fig: &Figure, e: &Expected, direction: Direction, rule: &RuleSpec) -> Check {
    let (tolerance, severity) = (rule.tolerance_pct, rule.severity);
    let name = CheckId::new("baseline", &fig.name());
    let unit = &e.unit;
    let limit = match direction {
        Direction::Higher => e.median * (1.0 - tolerance / 100.0),
        Direction::Lower => e.median * (1.0 + tolerance / 100.0),
    };
    let deviation = if e.median == 0.0 {
        0.0
    } else {
        100.0 * (fig.value - e.median) / e.median.abs()
    };
    let worse = rule.flags(direction, fig.value, e.median);
    let side = if fig.value < e.median {
        "below"
    } else {
        "above"
    };
    let value = round_to(fig.value, 3);
    let expected = round_to(e.median, 3);
    let status = match (worse, severity) {
        (false, _) => Status::Pass,
        (true, Severity::Warn) => Status::Warn,
        (true, Severity::Fail) => Status::Fail,
    };
    let message = if worse {
        format!(
            "{}: {value} {unit} is {:.1}% {side} the SKU's expected {expected} {unit} (tolerance {tolerance}%, learned from {} values)",
            fig.name(),
            deviation.abs(),
            e.count
        )
    } else {
        format!(
            "{}: {value} {unit}, expected {expected} {unit} ({:+.1}%)",
            fig.name(),
            deviation
        )
    };
    Check {
        name,
        status,
        value: Some(value),
        limit: Some(round_to(limit, 3)),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::figures::{BANDWIDTH, PEAK_BANDWIDTH};

    fn fig(family: &'static crate::wire::figures::Family, labels: &[&str], v: f64) -> Figure {
        Figure {
            family,
            labels: labels.iter().map(|s| s.to_string()).collect(),
            value: v,
        }
    }

    fn sku() -> Sku {
        Sku {
            cpu_model: Some("X".into()),
            logical_cpus: Some(2),
            sockets: Some(1),
            numa_nodes: Some(1),
            mem_gib: Some(24),
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
                        Expected {
                            median: 30_000.0,
                            mad: 500.0,
                            count: 10,
                            unit: "MiB/s".into(),
                            direction: Direction::Higher,
                        },
                    ),
                    (
                        "network.bandwidth".to_string(),
                        Expected {
                            median: 9.4,
                            mad: 0.1,
                            count: 30,
                            unit: "Gbit/s".into(),
                            direction: Direction::Higher,
                        },
                    ),
                ]),
            }],
        }
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
        for part in ["memory.peak_bandwidth.all reads", "25500", "30000", "15.0%"] {
            assert!(mem.message.contains(part), "{part}: {}", mem.message);
        }
        assert_eq!(checks[1].status, Status::Pass, "{}", checks[1].message);
    }

    #[test]
    fn an_unknown_sku_is_one_skip_saying_so() {
        let other = Sku {
            logical_cpus: Some(384),
            ..sku()
        };
        let checks = judge(&[], Some(&other), &baseline(), &Rules::builtin(), "b.yaml");
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status, Status::Skip);
        assert!(checks[0].message.contains("384 CPUs") && checks[0].message.contains("b.yaml"));
    }

    #[test]
    fn the_file_round_trips_through_yaml() {
        let b = baseline();
        let text = serde_yaml::to_string(&b).unwrap();
        let back: Baseline = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, b);
    }
}
