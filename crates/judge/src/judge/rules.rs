//! Which figures `compare` and `baseline` judge, how much worse than the reference they may be,
//! and how loud a deviation is: rules in YAML, matched in order against each figure's dotted name
//! (the first match wins). Built-in defaults are compiled in; `compare --print-rules` prints them
//! as a file to start from, and `--rules FILE` replaces them.

pub use super::yaml_guard::read_yaml_text;
use crate::wire::figures::{Direction, Judging};
pub use crate::wire::rule::{RuleSpec, Severity};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A rules file: `rules:` and the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    rules: Vec<RuleSpec>,
}

/// A rule, compiled.
#[derive(Debug, Clone)]
pub struct Rule {
    /// As written.
    pub spec: RuleSpec,
    regex: Regex,
}

impl Rule {
    /// The direction for a figure whose own direction is `own`.
    pub fn direction(&self, own: Direction) -> Direction {
        self.spec.direction.unwrap_or(own)
    }
}

/// The rules in force, in order.
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
    /// `built-in` or the file they came from.
    pub source: String,
}

/// The built-in rules, as the file `--print-rules` prints: one rule per family of figures the
/// family table (`wire::figures::FAMILIES`) says is judged, in its order, with its tolerance,
/// severity and noise floor. A figure is declared once, there.
pub fn default_rules() -> String {
    let mut text = String::from(
        "# health_check compare/baseline rules. Each figure is judged by the first rule whose 'metrics'
# regex matches its dotted name (see 'health_check compare --help'); figures no rule matches are
# not judged. tolerance_pct: how much worse than the SKU's median (or the baseline) is tolerated;
# severity: warn or fail; direction: higher or lower is better (default: the figure's own);
# min_difference: a noise floor in the figure's unit (smaller differences are never flagged).
# With 5 or more machines in a group, a figure is flagged only when it is also an outlier
# (robust z-score beyond 3.5); with fewer, the tolerance alone decides.
rules:
",
    );
    for family in crate::wire::figures::FAMILIES {
        let Judging::Rule {
            tolerance_pct,
            fails,
            min_difference,
            only,
        } = family.judged
        else {
            continue;
        };
        let name = family.name.replace('.', "\\.");
        let metrics = if only.is_empty() {
            format!("^{name}(\\.|$)")
        } else {
            format!("^{name}\\.{only}$")
        };
        text.push_str(&format!(
            "  - metrics: '{metrics}'\n    tolerance_pct: {tolerance_pct}\n    severity: {}\n",
            if fails { "fail" } else { "warn" }
        ));
        if let Some(floor) = min_difference {
            text.push_str(&format!("    min_difference: {floor}\n"));
        }
    }
    text
}

/// A rules file that cannot be used: the message names the file and the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct RulesError {
    /// `'FILE', line N` (or the file alone).
    pub place: String,
    /// What is wrong.
    pub message: String,
}

impl Rules {
    /// The built-in rules.
    pub fn builtin() -> Rules {
        Rules::parse(&default_rules(), "built-in").expect("the built-in rules parse")
    }

    /// Reads a rules file.
    pub fn from_file(path: &Path) -> Result<Rules, RulesError> {
        let text = read_yaml_text(path).map_err(|message| RulesError {
            place: format!("'{}'", path.display()),
            message,
        })?;
        Rules::parse(&text, &path.display().to_string())
    }

    /// Parses rules from YAML text; `source` names it in messages.
    pub fn parse(text: &str, source: &str) -> Result<Rules, RulesError> {
        let file: RulesFile = serde_yaml::from_str(text).map_err(|e| RulesError {
            place: match e.location() {
                Some(l) => format!("'{source}', line {}", l.line()),
                None => format!("'{source}'"),
            },
            message: e.to_string(),
        })?;
        let lines = entry_lines(text);
        let mut rules = Vec::with_capacity(file.rules.len());
        for (i, spec) in file.rules.into_iter().enumerate() {
            let place = match lines.get(i) {
                Some(line) => format!("'{source}', line {line}"),
                None => format!("'{source}', rule {}", i + 1),
            };
            let regex = Regex::new(&spec.metrics).map_err(|e| RulesError {
                place: place.clone(),
                message: format!("'metrics' is not a regular expression: {e}"),
            })?;
            if spec
                .min_difference
                .is_some_and(|d| !d.is_finite() || d < 0.0)
            {
                return Err(RulesError {
                    place,
                    message: "'min_difference' must be 0 or more".into(),
                });
            }
            if !spec.tolerance_pct.is_finite() || spec.tolerance_pct < 0.0 {
                return Err(RulesError {
                    place,
                    message: format!(
                        "'tolerance_pct' must be 0 or more, not {}",
                        spec.tolerance_pct
                    ),
                });
            }
            rules.push(Rule { spec, regex });
        }
        if rules.is_empty() {
            return Err(RulesError {
                place: format!("'{source}'"),
                message: "no rules: nothing would be judged".into(),
            });
        }
        Ok(Rules {
            rules,
            source: source.to_string(),
        })
    }

    /// The rule that judges the figure called `name`, if any.
    pub fn for_figure(&self, name: &str) -> Option<&Rule> {
        self.index_for(name).and_then(|i| self.rules.get(i))
    }

    /// The position of the rule that judges the figure called `name` (for callers that cache it).
    pub fn index_for(&self, name: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.regex.is_match(name))
    }

    /// The rule at `index`.
    pub fn get(&self, index: usize) -> Option<&Rule> {
        self.rules.get(index)
    }

    /// The rules as written.
    pub fn specs(&self) -> Vec<RuleSpec> {
        self.rules.iter().map(|r| r.spec.clone()).collect()
    }

    /// Rules from their specs (a baseline file carries the rules it was learned with).
    pub fn from_specs(specs: Vec<RuleSpec>, source: &str) -> Result<Rules, RulesError> {
        let text = serde_yaml::to_string(&RulesFile { rules: specs }).map_err(|e| RulesError {
            place: format!("'{source}'"),
            message: e.to_string(),
        })?;
        Rules::parse(&text, source)
    }
}

/// The line (1-based) where each list entry starts: every line whose first non-blank character
/// is `-` begins one, since rules hold no lists of their own.
fn entry_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("- ") || l.trim() == "-")
        .map(|(i, _)| i + 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_rules_judge_the_main_figures() {
        let r = Rules::builtin();
        let tol = |name: &str| r.for_figure(name).map(|r| r.spec.tolerance_pct);
        assert_eq!(
            tol("memory.idle_latency.FullRandom.Node-0.Node-0"),
            Some(10.0)
        );
        assert_eq!(tol("memory.peak_bandwidth.all reads"), Some(10.0));
        assert_eq!(tol("network.bandwidth.10.0.0.2"), Some(20.0));
        assert_eq!(tol("sleepbench.calls_per_second"), Some(15.0));
        assert_eq!(tol("ping.loss_pct.host"), None, "loss is the checks' job");
        assert_eq!(tol("network.retransmits.host"), None);
    }

    #[test]
    fn bad_files_name_the_line() {
        let bad_regex = "rules:\n  - metrics: '^a'\n    tolerance_pct: 5\n  - metrics: '('\n    tolerance_pct: 5\n";
        let e = Rules::parse(bad_regex, "r.yaml").unwrap_err();
        assert_eq!(e.place, "'r.yaml', line 4");
        assert!(e.message.contains("regular expression"), "{e}");
        let unknown_key = "rules:\n  - metrics: a\n    tolerance: 5\n";
        let e = Rules::parse(unknown_key, "r.yaml").unwrap_err();
        assert!(e.place.contains("line"), "{e}");
        assert!(e.message.contains("tolerance"), "{e}");
        let negative = "rules:\n  - metrics: a\n    tolerance_pct: -1\n";
        assert!(
            Rules::parse(negative, "r.yaml")
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
        let floor = |d: &str| {
            let text =
                format!("rules:\n  - metrics: a\n    tolerance_pct: 1\n    min_difference: {d}\n");
            Rules::parse(&text, "r.yaml").map_err(|e| e.to_string())
        };
        for bad in ["-1", "-0.001", ".nan", ".inf"] {
            let e = floor(bad).unwrap_err();
            assert!(
                e.contains("'min_difference' must be 0 or more"),
                "{bad}: {e}"
            );
        }
        assert!(floor("0").is_ok() && floor("0.5").is_ok());
        let bad_severity = "rules:\n  - metrics: a\n    tolerance_pct: 1\n    severity: loud\n";
        assert!(Rules::parse(bad_severity, "r.yaml").is_err());
        assert!(Rules::parse("rules: []\n", "r.yaml").is_err());
    }

    #[test]
    fn the_first_matching_rule_wins_and_specs_round_trip() {
        let text = "rules:\n  - metrics: '^network\\.bandwidth\\.slow-host$'\n    tolerance_pct: 50\n    direction: higher\n  - metrics: '^network\\.'\n    tolerance_pct: 5\n    severity: fail\n";
        let r = Rules::parse(text, "t").unwrap();
        assert_eq!(
            r.for_figure("network.bandwidth.slow-host")
                .unwrap()
                .spec
                .tolerance_pct,
            50.0
        );
        let rule = r.for_figure("network.bandwidth.other").unwrap();
        assert_eq!(
            (rule.spec.tolerance_pct, rule.spec.severity),
            (5.0, Severity::Fail)
        );
        let again = Rules::from_specs(r.specs(), "t").unwrap();
        assert_eq!(again.specs(), r.specs());
    }
}
