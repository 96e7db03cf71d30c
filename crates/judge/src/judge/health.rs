//! One run's overall verdict, for the systems that act on it (Slurm, node-problem-detector):
//! failing (a check failed, or a section failed), inconclusive (nothing failed, but a speed
//! check was measured under interference or a section was cut short), or healthy. Warnings and
//! skips are neither: they are for people to read.

use crate::wire::document::{Document, SectionOutcome, Status};

/// The verdict, with what it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Nothing failed and nothing was inconclusive.
    Healthy,
    /// The first failing check or failed section (`sleepbench.calls_per_thread`, `memory`), and
    /// how many failed in all.
    Failing {
        /// The first that failed: a check's name, or a section's.
        what: String,
        /// A check (`true`) or a section that failed to run.
        check: bool,
        /// How many checks and sections failed.
        count: usize,
    },
    /// Nothing failed, but the first of these could not be judged.
    Inconclusive {
        /// The check measured under interference, or the section cut short.
        what: String,
    },
}

impl Health {
    /// The verdict as a number, the same for everything that acts on it: 0 healthy, 1 failing
    /// (Slurm counts it toward a drain, node-problem-detector sets its condition, the Prometheus
    /// gauge `health_check_health` reads 1), 2 inconclusive (nothing acts; NPD's Unknown).
    pub fn code(&self) -> u8 {
        match self {
            Health::Healthy => 0,
            Health::Failing { .. } => 1,
            Health::Inconclusive { .. } => 2,
        }
    }
}

/// The verdict of one document: the one roll-up Slurm, node-problem-detector and Prometheus
/// act on.
pub fn of(doc: &Document) -> Health {
    let failed_sections: Vec<String> = doc
        .health_check
        .sections
        .0
        .iter()
        .filter(|(_, o)| matches!(o, SectionOutcome::Failed(_)))
        .map(|(s, _)| s.name().to_string())
        .collect();
    let failed_checks: Vec<String> = doc
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.name.to_string())
        .collect();
    let count = failed_sections.len() + failed_checks.len();
    if let Some(first) = failed_checks.first() {
        return Health::Failing {
            what: first.clone(),
            check: true,
            count,
        };
    }
    if let Some(first) = failed_sections.first() {
        return Health::Failing {
            what: first.clone(),
            check: false,
            count,
        };
    }
    // A section the deadline left no time for measured nothing: the run says nothing of it,
    // so the run is not healthy (`--deadline 0.001` skips every section).
    let unmeasured = |o: &SectionOutcome| match o {
        SectionOutcome::Interrupted => true,
        SectionOutcome::Skipped(why) => why == crate::wire::document::DEADLINE_PASSED,
        _ => false,
    };
    let inconclusive = doc
        .checks
        .iter()
        .find(|c| c.status == Status::Inconclusive)
        .map(|c| c.name.to_string())
        .or_else(|| {
            doc.health_check
                .sections
                .0
                .iter()
                .find(|(_, o)| unmeasured(o))
                .map(|(s, o)| match o {
                    SectionOutcome::Skipped(why) => format!("{}: {why} before it ran", s.name()),
                    _ => s.name().to_string(),
                })
        });
    match inconclusive {
        Some(what) => Health::Inconclusive { what },
        None => Health::Healthy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::document::{Check, CheckId, Section, SectionStatuses};

    fn doc(checks: &[(&str, Status)], sections: &[(Section, SectionOutcome)]) -> Document {
        let mut d = Document {
            checks: checks
                .iter()
                .map(|(n, s)| Check {
                    name: CheckId::parse(n),
                    status: *s,
                    value: None,
                    limit: None,
                    message: String::new(),
                })
                .collect(),
            ..Document::default()
        };
        d.health_check.sections = SectionStatuses(sections.to_vec());
        d
    }

    /// A run whose deadline left no time for a section measured nothing of it: not healthy.
    #[test]
    fn a_section_the_deadline_left_out_makes_the_run_inconclusive() {
        let skipped = doc(
            &[],
            &[(
                Section::System,
                SectionOutcome::Skipped(crate::wire::document::DEADLINE_PASSED.into()),
            )],
        );
        assert_eq!(
            of(&skipped),
            Health::Inconclusive {
                what: "system: the --deadline passed before it ran".into()
            }
        );
        // Left out by the plan: says nothing of health.
        let planned = doc(
            &[],
            &[(
                Section::Memory,
                SectionOutcome::Skipped("not in --only".into()),
            )],
        );
        assert_eq!(of(&planned), Health::Healthy);
    }

    #[test]
    fn fail_outranks_inconclusive_outranks_healthy() {
        let ok = (Section::Sleep, SectionOutcome::Ok);
        assert_eq!(
            of(&doc(&[("a.b", Status::Warn)], std::slice::from_ref(&ok))),
            Health::Healthy
        );
        assert_eq!(
            of(&doc(
                &[("a.b", Status::Inconclusive), ("c.d", Status::Pass)],
                std::slice::from_ref(&ok)
            )),
            Health::Inconclusive { what: "a.b".into() }
        );
        let failing = doc(
            &[("a.b", Status::Inconclusive), ("c.d", Status::Fail)],
            &[(Section::Memory, SectionOutcome::Failed("x".into()))],
        );
        assert_eq!(
            of(&failing),
            Health::Failing {
                what: "c.d".into(),
                check: true,
                count: 2
            }
        );
        let section = doc(
            &[],
            &[(Section::Memory, SectionOutcome::Failed("x".into()))],
        );
        assert!(matches!(of(&section), Health::Failing { check: false, .. }));
    }
}
