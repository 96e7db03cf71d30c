//! A run against the machine's own past (`--history`): each figure a rule judges, against the
//! median and MAD of the machine's last runs of the same profile measured the same way (the one
//! [`Reference`] judge `compare` and `baseline` use, with runs in place of machines), and a
//! change-point test that catches a sustained shift the rolling reference has already absorbed:
//! the last [`SHIFT_RUNS`] runs all worse than the runs before them beyond the tolerance. A
//! reboot, a new kernel or new firmware since the run before is named in the message: it is the
//! usual cause.

use super::pipeline::{Judged, Population, Sample, status};
use super::reference::Reference;
use super::rules::Rules;
use crate::units::number;
use crate::wire::check::{Check, CheckId, Status};
use crate::wire::figures::Figure;
use crate::wire::history::{PastReference, Point, RunSummary};
use std::collections::BTreeMap;

/// Earlier runs of the same profile needed before a run is judged against them.
pub const MIN_EARLIER_RUNS: usize = 3;
/// Runs in a sustained shift: this many in a row, the current one included.
pub const SHIFT_RUNS: usize = 3;
/// Runs in the reference unless `--history-window` says otherwise.
pub const DEFAULT_WINDOW: usize = 10;

/// What the history holds about the machine before this run.
#[derive(Debug, Clone, Copy)]
pub struct Past<'a> {
    /// Earlier runs of this profile, oldest first (at least the last `window` + 2).
    pub runs: &'a [RunSummary],
    /// Each figure's earlier values measured the same way (same profile and basis), oldest first.
    pub figures: &'a BTreeMap<String, Vec<Point>>,
    /// How many runs the reference takes.
    pub window: usize,
    /// Which runs may make it (noisy runs never do; flagged ones not while the caller says so).
    pub population: Population,
}

/// One `history.<figure>` check per figure a rule judges and the past knows (or one skipped
/// `history` check while fewer than [`MIN_EARLIER_RUNS`] runs are recorded). `now` is this run.
pub fn judge(figures: &[Figure], past: &Past, now: &RunSummary, rules: &Rules) -> Vec<Check> {
    if past.runs.len() < MIN_EARLIER_RUNS {
        return vec![Check {
            name: CheckId::new("history", ""),
            status: Status::Skip,
            value: Some(past.runs.len() as f64),
            limit: None,
            message: format!(
                "{} earlier run(s) of the {} profile recorded: the machine is judged against its \
                 past from {MIN_EARLIER_RUNS} on",
                past.runs.len(),
                now.profile
            ),
        }];
    }
    let since_last = past
        .runs
        .last()
        .map(|last| changes_between(last, now))
        .unwrap_or_default();
    figures
        .iter()
        .filter_map(|fig| {
            let name = fig.name();
            let rule = rules.for_figure(&name)?;
            let earlier = admitted(past.figures.get(&name)?, past.population);
            judge_one(fig, &earlier, past, rule, &since_last)
        })
        .collect()
}

/// The runs of a figure's past `population` lets into its reference, oldest first.
fn admitted(points: &[Point], population: Population) -> Vec<&Point> {
    population.select(points, |p| Sample {
        value: p.value,
        who: p.run,
        interfered: p.noisy,
        flagged: matches!(p.status, Some(Status::Warn | Status::Fail)),
    })
}

/// The reference of the last `window` admitted runs (at least [`MIN_EARLIER_RUNS`]).
fn recent(earlier: &[&Point], window: usize) -> Option<Reference> {
    if earlier.len() < MIN_EARLIER_RUNS {
        return None;
    }
    let window = window.max(MIN_EARLIER_RUNS);
    let values: Vec<f64> = earlier[earlier.len().saturating_sub(window)..]
        .iter()
        .map(|p| p.value)
        .collect();
    Reference::of(&values, values.len())
}

/// The reference a run after `past` (a figure's values, oldest first) is judged against, for
/// histories recorded before each run kept its own (the pages then draw it with the defaults).
pub fn reference(past: &[Point], window: usize, population: Population) -> Option<Reference> {
    recent(&admitted(past, population), window.max(MIN_EARLIER_RUNS))
}

/// The reference each figure of this run is judged against by [`judge`], by name: what the
/// history records with the run, so its pages draw the reference of the verdict, whatever
/// window and population the run was judged with.
pub fn references(
    figures: &[Figure],
    past: &Past,
    rules: &Rules,
) -> BTreeMap<String, PastReference> {
    if past.runs.len() < MIN_EARLIER_RUNS {
        return BTreeMap::new();
    }
    figures
        .iter()
        .filter_map(|fig| {
            let name = fig.name();
            rules.for_figure(&name)?;
            let earlier = admitted(past.figures.get(&name)?, past.population);
            let r = recent(&earlier, past.window.max(MIN_EARLIER_RUNS))?;
            Some((
                name,
                PastReference {
                    median: r.median,
                    runs: r.machines,
                },
            ))
        })
        .collect()
}

fn judge_one(
    fig: &Figure,
    earlier: &[&Point],
    past: &Past,
    rule: &super::rules::Rule,
    since_last: &[String],
) -> Option<Check> {
    let window = past.window.max(MIN_EARLIER_RUNS);
    let reference = recent(earlier, window)?;
    let direction = rule.direction(fig.family.direction);
    let judged = Judged::new(fig.value, reference, rule, fig.family.direction);
    let verdict = judged.verdict;
    let shift = sustained_shift(fig.value, earlier, window, direction, rule);
    let unit = fig.family.unit;
    let name = fig.name();
    let off = verdict
        .deviation_pct
        .map_or_else(String::new, |d| format!(" ({d:+.1}%)"));
    let mut message = format!(
        "{name}: {} {unit} against the median {} {unit} of this machine's last {} runs{off}",
        number(fig.value),
        number(reference.median),
        reference.machines
    );
    if verdict.flagged {
        message.push_str(&format!(
            ": beyond the tolerance of {}% (limit {} {unit})",
            rule.spec.tolerance_pct,
            number(verdict.limit)
        ));
    }
    if let Some((before, at)) = &shift {
        message.push_str(&format!(
            "; a sustained shift: the last {SHIFT_RUNS} runs are all worse than the {} {unit} \
             of the runs before them",
            number(*before)
        ));
        let started = past
            .runs
            .iter()
            .position(|r| r.run == *at)
            .filter(|&i| i > 0)
            .map(|i| changes_between(&past.runs[i - 1], &past.runs[i]))
            .unwrap_or_default();
        if !started.is_empty() {
            message.push_str(&format!(
                " (when it began, run {at}: {})",
                started.join("; ")
            ));
        }
    }
    let flagged = verdict.flagged || shift.is_some();
    if flagged && !since_last.is_empty() {
        message.push_str(&format!(" (since the last run: {})", since_last.join("; ")));
    }
    Some(judged.check(
        CheckId::new("history", &name),
        status(flagged, rule.spec.severity),
        message,
    ))
}

/// The reference median before a shift and the run where the shift began, when `value` and
/// the [`SHIFT_RUNS`] - 1 runs before it are all flagged against the `window` runs before them.
fn sustained_shift(
    value: f64,
    earlier: &[&Point],
    window: usize,
    direction: crate::wire::figures::Direction,
    rule: &super::rules::Rule,
) -> Option<(f64, i64)> {
    let in_shift = SHIFT_RUNS - 1;
    if earlier.len() < in_shift + MIN_EARLIER_RUNS {
        return None;
    }
    let (before, shifted) = earlier.split_at(earlier.len() - in_shift);
    let before: Vec<f64> = before[before.len().saturating_sub(window)..]
        .iter()
        .map(|p| p.value)
        .collect();
    let reference = Reference::of(&before, before.len())?;
    let all_worse = shifted
        .iter()
        .map(|p| p.value)
        .chain(std::iter::once(value))
        .all(|v| reference.judge(v, direction, &rule.spec).flagged);
    all_worse.then(|| (reference.median, shifted[0].run))
}

/// What changed between two runs that usually explains a change in a figure: a reboot, the
/// kernel, the firmware.
pub fn changes_between(before: &RunSummary, after: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    let changed = |a: &Option<String>, b: &Option<String>| a.is_some() && b.is_some() && a != b;
    if changed(&before.kernel, &after.kernel) {
        out.push(format!(
            "kernel {} -> {}",
            before.kernel.as_deref().unwrap_or_default(),
            after.kernel.as_deref().unwrap_or_default()
        ));
    }
    if changed(&before.firmware, &after.firmware) {
        out.push(format!(
            "BIOS {} -> {}",
            before.firmware.as_deref().unwrap_or_default(),
            after.firmware.as_deref().unwrap_or_default()
        ));
    }
    if changed(&before.boot_id, &after.boot_id) {
        out.push("rebooted".to_string());
    }
    out
}

#[cfg(test)]
mod tests;
