//! One verdict, made in one place. Every judge of a figure against a reference (`compare` against
//! a machine's siblings, `blame` over paths, `baseline` against a learned model, `history`
//! against the machine's own past) takes these steps, top to bottom:
//!
//! 1. **population** ([`Population`]): which values make the reference. Values measured under
//!    interference are left out (when every one was, a fleet keeps them all and its verdicts come
//!    out inconclusive); where the caller says so, values already flagged are left out too (a past
//!    whose level is under judgment must not absorb it); the machines or runs behind the values
//!    are counted, not the values;
//! 2. the [`Reference`] of those values, and the one comparison, [`Reference::judge`];
//! 3. [`Judged`]: the value, its reference, the rule and the verdict, together;
//! 4. what a reader sees: [`Judged::status`] (the rule's severity when flagged), and one builder
//!    each for a fleet's [`Finding`] ([`Judged::finding`]; a configuration fact's,
//!    [`fact_finding`], and a shortfall a group shares, [`group_finding`], have no reference)
//!    and a run's [`Check`] ([`Judged::check`]); no `Finding` is built elsewhere;
//! 5. interference: a finding carries what interfered (`inconclusive`), and
//!    [`super::noise::mark_interfered`] turns a run's check inconclusive.

use super::reference::{Reference, Verdict};
use super::rules::Rule;
use crate::units::round_to;
use crate::wire::check::{Check, CheckId, Status};
use crate::wire::figures::Direction;
use crate::wire::fleet::{FactDrift, Finding, Scope};
use crate::wire::rule::Severity;

/// One value that may make a reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The value.
    pub value: f64,
    /// Whose it is (a machine's index, a run's number): a reference counts them, not the values.
    pub who: i64,
    /// Measured under interference beyond the limits.
    pub interfered: bool,
    /// Already flagged against its own reference (a run of the past that failed).
    pub flagged: bool,
}

/// Who is in a reference: the one policy every judge states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Population {
    /// Leave out values measured under interference.
    pub quiet_only: bool,
    /// When no quiet value is left, take them all (the verdicts are then inconclusive) rather
    /// than none.
    pub all_when_none_quiet: bool,
    /// Leave out values already flagged.
    pub unflagged_only: bool,
}

impl Population {
    /// A machine's siblings in a fleet (`compare`, `blame`): the quiet ones, or all of them when
    /// every one was disturbed.
    pub const SIBLINGS: Population = Population {
        quiet_only: true,
        all_when_none_quiet: true,
        unflagged_only: false,
    };

    /// What a baseline learns from: quiet machines only.
    pub const BASELINE: Population = Population {
        quiet_only: true,
        all_when_none_quiet: false,
        unflagged_only: false,
    };

    /// A machine's past runs: the quiet ones, and, with `unflagged_only`, only those that were
    /// not flagged themselves (while a drain for this figure holds, its failing runs must not
    /// become the level the next run is judged against).
    pub fn past(unflagged_only: bool) -> Population {
        Population {
            quiet_only: true,
            all_when_none_quiet: false,
            unflagged_only,
        }
    }

    /// The samples this policy lets into a reference.
    pub fn select<'a, T>(&self, items: &'a [T], sample: impl Fn(&T) -> Sample) -> Vec<&'a T> {
        let admitted = |s: &Sample| !(self.unflagged_only && s.flagged);
        let quiet: Vec<&T> = items
            .iter()
            .filter(|t| {
                let s = sample(t);
                admitted(&s) && !(self.quiet_only && s.interfered)
            })
            .collect();
        if quiet.is_empty() && self.all_when_none_quiet {
            return items.iter().filter(|t| admitted(&sample(t))).collect();
        }
        quiet
    }

    /// The reference of the samples this policy lets in; `None` when none is.
    pub fn reference(&self, samples: &[Sample]) -> Option<Reference> {
        self.reference_counted(samples).map(|(r, _)| r)
    }

    /// [`Population::reference`] and how many values made it.
    pub fn reference_counted(&self, samples: &[Sample]) -> Option<(Reference, usize)> {
        let kept = self.select(samples, |s| *s);
        let values: Vec<f64> = kept.iter().map(|s| s.value).collect();
        let who = distinct(kept.iter().map(|s| s.who));
        Reference::of(&values, who).map(|r| (r, values.len()))
    }
}

/// How many different items: a sort, or none when they come sorted (a fleet's samples come in
/// machine order), never a tree of 10,000 machines per figure.
pub fn distinct<T: Ord>(items: impl Iterator<Item = T>) -> usize {
    let mut v: Vec<T> = items.collect();
    if !v.is_sorted() {
        v.sort_unstable();
    }
    v.dedup();
    v.len()
}

/// The status a verdict gives: pass, or the rule's severity when flagged.
pub fn status(flagged: bool, severity: Severity) -> Status {
    match (flagged, severity) {
        (false, _) => Status::Pass,
        (true, Severity::Warn) => Status::Warn,
        (true, Severity::Fail) => Status::Fail,
    }
}

/// A value judged against its reference by its rule.
#[derive(Debug, Clone, Copy)]
pub struct Judged<'r> {
    /// The value.
    pub value: f64,
    /// What it was judged against.
    pub reference: Reference,
    /// The rule.
    pub rule: &'r Rule,
    /// Which way is better, the rule's word over the figure's.
    pub direction: Direction,
    /// The comparison's outcome.
    pub verdict: Verdict,
}

/// What a finding is about.
#[derive(Debug, Clone)]
pub struct Subject {
    /// The machine it blames (by label); for a link, its first end.
    pub machine: String,
    /// The figure's dotted name (`network.bandwidth.*` for all of a machine's clients).
    pub figure: String,
    /// What it blames.
    pub scope: Scope,
    /// The client, for a per-client figure about one client.
    pub client: Option<String>,
    /// The two ends, for a link.
    pub link: Option<Vec<String>>,
}

impl<'r> Judged<'r> {
    /// Judges `value` against `reference` by `rule`, for a figure better in `own` direction.
    pub fn new(value: f64, reference: Reference, rule: &'r Rule, own: Direction) -> Judged<'r> {
        let direction = rule.direction(own);
        Judged {
            value,
            reference,
            rule,
            direction,
            verdict: reference.judge(value, direction, &rule.spec),
        }
    }

    /// Whether it is worse than the reference beyond the rule.
    pub fn flagged(&self) -> bool {
        self.verdict.flagged
    }

    /// Pass, or the rule's severity.
    pub fn status(&self) -> Status {
        status(self.verdict.flagged, self.rule.spec.severity)
    }

    /// The fleet report's finding about `subject`, in `unit`, with `message`; `interfered` says
    /// what disturbed the measurement, if anything.
    pub fn finding(
        &self,
        subject: Subject,
        unit: &str,
        interfered: Option<String>,
        message: String,
    ) -> Finding {
        Finding {
            machine: subject.machine,
            figure: subject.figure,
            client: subject.client,
            scope: subject.scope,
            link: subject.link,
            members: None,
            value: Some(self.value),
            median: Some(self.reference.median),
            fact: None,
            unit: unit.to_string(),
            deviation_pct: self.verdict.deviation_pct.map(|d| round_to(d, 4)),
            robust_z: self.verdict.robust_z.map(|z| round_to(z, 4)),
            severity: self.rule.spec.severity,
            inconclusive: interfered,
            suspect: None,
            headline: String::new(),
            message,
        }
    }

    /// A run's check `name` with `status` (this verdict's, or one the caller widened, such as a
    /// sustained shift) and `message`.
    pub fn check(&self, name: CheckId, status: Status, message: String) -> Check {
        Check {
            name,
            status,
            value: Some(round_to(self.value, 3)),
            limit: Some(round_to(self.verdict.limit, 3)),
            message,
        }
    }
}

/// A fact of one machine's configuration that differs from its siblings' (`drift.<fact>`):
/// a finding with no figure to compare, only the fact.
pub fn fact_finding(
    machine: &str,
    fact: FactDrift,
    severity: Severity,
    message: String,
) -> Finding {
    Finding {
        machine: machine.to_string(),
        figure: format!("drift.{}", fact.name),
        client: None,
        scope: Scope::Machine,
        link: None,
        members: None,
        value: None,
        median: None,
        fact: Some(fact),
        unit: String::new(),
        deviation_pct: None,
        robust_z: None,
        severity,
        inconclusive: None,
        suspect: None,
        headline: String::new(),
        message,
    }
}

/// A shortfall a whole model group shares (`members`, by label): the median of their checked
/// values (`value`) against the median of their limits (`limit`), in `unit`. It fails none of
/// them.
pub fn group_finding(
    group: &str,
    figure: &str,
    members: Vec<String>,
    (value, limit): (Option<f64>, Option<f64>),
    unit: &str,
    severity: Severity,
    message: String,
) -> Finding {
    Finding {
        machine: group.to_string(),
        figure: figure.to_string(),
        client: None,
        scope: Scope::Group,
        link: None,
        members: Some(members),
        value: value.map(|v| round_to(v, 4)),
        median: limit.map(|l| round_to(l, 4)),
        fact: None,
        unit: unit.to_string(),
        deviation_pct: match (value, limit) {
            (Some(v), Some(l)) if l != 0.0 => Some(round_to(100.0 * (v - l) / l, 4)),
            _ => None,
        },
        robust_z: None,
        severity,
        inconclusive: None,
        suspect: None,
        headline: String::new(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::rules::Rules;

    fn sample(value: f64, who: i64, interfered: bool, flagged: bool) -> Sample {
        Sample {
            value,
            who,
            interfered,
            flagged,
        }
    }

    /// Each policy, with the case that tells it from the others.
    #[test]
    fn each_population_lets_in_what_it_says() {
        let samples = [
            sample(100.0, 1, false, false),
            sample(102.0, 1, false, false),
            sample(50.0, 2, true, false),
            sample(60.0, 3, false, true),
        ];
        let reference = |p: Population| p.reference(&samples).unwrap();
        // Siblings and a baseline leave the disturbed value out; machines are counted once.
        let r = reference(Population::SIBLINGS);
        assert_eq!((r.median, r.machines), (100.0, 2));
        assert_eq!(reference(Population::BASELINE), r);
        // A past under judgment leaves its flagged runs out as well.
        let r = reference(Population::past(true));
        assert_eq!((r.median, r.machines), (101.0, 1));
        assert_eq!(reference(Population::past(false)).median, 100.0);
        // Everything disturbed: a fleet keeps it all, a baseline and a past learn nothing.
        let disturbed = [sample(10.0, 1, true, false), sample(20.0, 2, true, false)];
        assert_eq!(
            Population::SIBLINGS.reference(&disturbed).unwrap().median,
            15.0
        );
        assert_eq!(Population::BASELINE.reference(&disturbed), None);
        assert_eq!(Population::past(false).reference(&disturbed), None);
        // Flagged values stay out even when all are disturbed.
        let flagged = [sample(10.0, 1, true, true), sample(20.0, 2, true, false)];
        assert_eq!(
            Population::SIBLINGS.reference(&flagged).unwrap().median,
            15.0
        );
        let past_all = Population {
            all_when_none_quiet: true,
            ..Population::past(true)
        };
        assert_eq!(past_all.reference(&flagged).unwrap().median, 20.0);
    }

    #[test]
    fn a_verdict_gives_its_status_finding_and_check() {
        let rules = Rules::builtin();
        let rule = rules.for_figure("network.bandwidth.h2").unwrap();
        let reference = Reference::of(&[10.0, 10.0, 10.0], 3).unwrap();
        let slow = Judged::new(5.0, reference, rule, Direction::Higher);
        assert!(slow.flagged());
        assert_eq!(slow.status(), status(true, rule.spec.severity));
        let f = slow.finding(
            Subject {
                machine: "h1".into(),
                figure: "network.bandwidth.h2".into(),
                scope: Scope::Link,
                client: Some("h2".into()),
                link: Some(vec!["h1".into(), "h2".into()]),
            },
            "Gbit/s",
            Some("steal".into()),
            "m".into(),
        );
        assert_eq!(
            (
                f.value,
                f.median,
                f.deviation_pct,
                f.inconclusive.as_deref()
            ),
            (Some(5.0), Some(10.0), Some(-50.0), Some("steal"))
        );
        let c = slow.check(CheckId::new("history", "x"), Status::Warn, "m".into());
        assert_eq!(
            (c.status, c.value, c.limit),
            (Status::Warn, Some(5.0), Some(8.0))
        );
        let fine = Judged::new(9.5, reference, rule, Direction::Higher);
        assert_eq!(fine.status(), Status::Pass);
        assert_eq!(status(true, Severity::Warn), Status::Warn);
        assert_eq!(status(false, Severity::Fail), Status::Pass);
    }
}
