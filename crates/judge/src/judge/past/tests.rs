//! Tests of `past.rs`.

use super::*;
use crate::judge::compare::tests::fig;
use crate::wire::figures::{CALLS as SLEEP_CALLS, PEAK_BANDWIDTH};

fn run(n: i64, kernel: &str) -> RunSummary {
    RunSummary {
        run: n,
        started_unix: 1_700_000_000 + n as u64 * 3600,
        machine: "m".into(),
        hostname: Some("h".into()),
        profile: "quick".into(),
        boot_id: Some("b1".into()),
        kernel: Some(kernel.into()),
        firmware: Some("1.0".into()),
        worst: Some(Status::Pass),
        seconds: 60.0,
    }
}

fn points(values: &[f64]) -> Vec<Point> {
    values
        .iter()
        .enumerate()
        .map(|(i, &value)| Point {
            run: i as i64 + 1,
            started_unix: 0,
            value,
            noisy: false,
            status: None,
            reference: None,
        })
        .collect()
}

struct Case {
    runs: Vec<RunSummary>,
    figures: BTreeMap<String, Vec<Point>>,
}

impl Case {
    fn new(name: &str, values: &[f64]) -> Case {
        let runs = (1..=values.len() as i64).map(|n| run(n, "6.1")).collect();
        let mut figures = BTreeMap::new();
        figures.insert(name.to_string(), points(values));
        Case { runs, figures }
    }

    fn judge(&self, figure: Figure, now: &RunSummary) -> Vec<Check> {
        let past = Past {
            runs: &self.runs,
            figures: &self.figures,
            window: DEFAULT_WINDOW,
            population: Population::past(false),
        };
        judge(&[figure], &past, now, &Rules::builtin())
    }
}

const PEAK: &str = "memory.peak_bandwidth.all reads";

fn peak(v: f64) -> Figure {
    fig(&PEAK_BANDWIDTH, &["all reads"], v)
}

#[test]
fn before_three_runs_the_past_is_not_judged() {
    let c = Case::new(PEAK, &[100.0, 100.0]);
    let checks = c.judge(peak(50.0), &run(3, "6.1"));
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].status, Status::Skip);
    assert!(checks[0].message.contains("2 earlier run(s)"));
}

/// A per-peer figure is judged against the machine's past with the same peer: four runs to
/// the same peer at 28 Gbit/s, a fifth at 0.48 fails; the same figure to another peer has no
/// past and is not judged.
#[test]
fn a_bandwidth_to_one_peer_is_judged_against_its_past_with_that_peer() {
    use crate::wire::figures::BANDWIDTH;
    let name = "network.bandwidth.peer1";
    let c = Case::new(name, &[28.1, 27.9, 28.0, 28.2]);
    let bad = c.judge(fig(&BANDWIDTH, &["peer1"], 0.48), &run(5, "6.1"));
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].name.to_string(), format!("history.{name}"));
    assert_eq!(bad[0].status, Status::Fail, "{}", bad[0].message);
    let other = c.judge(fig(&BANDWIDTH, &["peer2"], 0.48), &run(5, "6.1"));
    assert!(other.is_empty(), "{other:?}");
}

#[test]
fn a_run_worse_than_its_past_fails_by_the_rule_and_a_like_one_passes() {
    let c = Case::new(PEAK, &[100.0, 101.0, 99.0, 100.0]);
    let bad = c.judge(peak(80.0), &run(5, "6.1"));
    assert_eq!(bad[0].name.to_string(), format!("history.{PEAK}"));
    assert_eq!(bad[0].status, Status::Fail, "{}", bad[0].message);
    assert!(bad[0].message.contains("-20.0%"), "{}", bad[0].message);
    assert_eq!(bad[0].limit, Some(90.0));
    let good = c.judge(peak(98.0), &run(5, "6.1"));
    assert_eq!(good[0].status, Status::Pass, "{}", good[0].message);
    let better = c.judge(peak(130.0), &run(5, "6.1"));
    assert_eq!(better[0].status, Status::Pass, "better is no fault");
}

#[test]
fn noisy_runs_are_not_in_the_reference() {
    let mut c = Case::new(PEAK, &[100.0, 100.0, 100.0, 50.0, 50.0, 50.0]);
    for p in c.figures.get_mut(PEAK).unwrap().iter_mut().skip(3) {
        p.noisy = true;
    }
    // Without the noisy runs the median is 100: 80 fails.
    assert_eq!(c.judge(peak(80.0), &run(7, "6.1"))[0].status, Status::Fail);
}

/// While health_check's drain holds (the Slurm mode says so), the runs that failed stay out
/// of the reference: a degraded level cannot become the level the next run passes against.
#[test]
fn while_a_drain_holds_the_failing_runs_do_not_become_the_reference() {
    let mut values = vec![100.0; 4];
    values.extend([60.0; 8]);
    let mut c = Case::new(PEAK, &values);
    for p in c.figures.get_mut(PEAK).unwrap().iter_mut().skip(4) {
        p.status = Some(Status::Fail);
    }
    let judged = |population| {
        let past = Past {
            runs: &c.runs,
            figures: &c.figures,
            window: DEFAULT_WINDOW,
            population,
        };
        judge(&[peak(60.0)], &past, &run(13, "6.1"), &Rules::builtin()).remove(0)
    };
    // Absorbed: the last ten runs are mostly the degraded level, and 60 passes against them.
    assert_eq!(judged(Population::past(false)).status, Status::Pass);
    // Held out: judged against the level before, 60 still fails.
    let held = judged(Population::past(true));
    assert_eq!(held.status, Status::Fail, "{}", held.message);
}

fn judge_window(values: &[f64], now: f64, window: usize) -> Check {
    let c = Case::new(PEAK, values);
    let past = Past {
        runs: &c.runs,
        figures: &c.figures,
        window,
        population: Population::past(false),
    };
    let now_run = run(values.len() as i64 + 1, "6.1");
    judge(&[peak(now)], &past, &now_run, &Rules::builtin()).remove(0)
}

#[test]
fn a_sustained_shift_is_flagged_though_the_run_alone_passes() {
    // A window of 3: after two runs at 89 the last three runs' median is 89, so a third run
    // at 89 alone passes; against the runs before the fall all three are 11% worse.
    let c = judge_window(&[100.0, 100.0, 100.0, 100.0, 100.0, 89.0, 89.0], 89.0, 3);
    assert!(c.message.contains("median 89"), "{}", c.message);
    assert!(!c.message.contains("beyond the tolerance"), "{}", c.message);
    assert!(c.message.contains("sustained shift"), "{}", c.message);
    assert!(c.message.contains("the 100"), "{}", c.message);
    assert!(
        !c.message.contains("when it began"),
        "nothing changed: {}",
        c.message
    );
    assert_eq!(c.status, Status::Fail);
    // Two runs at 89 are not three: the current run alone decides (and fails, 11% worse).
    let c = judge_window(&[100.0, 100.0, 100.0, 100.0, 100.0, 89.0], 89.0, 3);
    assert!(c.message.contains("beyond the tolerance"), "{}", c.message);
    assert!(!c.message.contains("sustained"), "{}", c.message);
    // Three runs before the shift are enough to show it.
    let c = judge_window(&[100.0, 100.0, 100.0, 89.0, 89.0], 89.0, 3);
    assert!(c.message.contains("sustained shift"), "{}", c.message);
    // A shift up is no fault.
    let c = judge_window(&[100.0, 100.0, 100.0, 100.0, 100.0, 120.0, 120.0], 120.0, 3);
    assert_eq!(c.status, Status::Pass, "{}", c.message);
}

#[test]
fn a_new_level_held_long_enough_becomes_the_reference() {
    // Once the runs before the last three are mostly at the new level, it is the normal.
    let c = judge_window(
        &[100.0, 100.0, 100.0, 89.0, 89.0, 89.0, 89.0, 89.0],
        89.0,
        3,
    );
    assert_eq!(c.status, Status::Pass, "{}", c.message);
}

#[test]
fn a_new_kernel_or_a_reboot_is_named() {
    let mut c = Case::new(SLEEP, &[50_000.0, 50_500.0, 49_800.0]);
    c.runs = (1..=3).map(|n| run(n, "6.1")).collect();
    let mut now = run(4, "6.6");
    now.boot_id = Some("b2".into());
    let checks = c.judge(fig(&SLEEP_CALLS, &[], 30_000.0), &now);
    assert_eq!(checks[0].status, Status::Fail, "{}", checks[0].message);
    assert!(
        checks[0]
            .message
            .contains("since the last run: kernel 6.1 -> 6.6; rebooted"),
        "{}",
        checks[0].message
    );
}

/// A shift that began with a new kernel names it, at the run where it began; a run that
/// passes says nothing of what changed.
#[test]
fn the_change_a_shift_began_with_is_named() {
    let mut c = Case::new(PEAK, &[100.0, 100.0, 100.0, 100.0, 100.0, 89.0, 89.0]);
    for r in c.runs.iter_mut().skip(5) {
        r.kernel = Some("6.6".into());
    }
    let past = Past {
        runs: &c.runs,
        figures: &c.figures,
        window: 3,
        population: Population::past(false),
    };
    let check = judge(&[peak(89.0)], &past, &run(8, "6.6"), &Rules::builtin()).remove(0);
    assert_eq!(check.status, Status::Fail, "{}", check.message);
    assert!(
        check
            .message
            .contains("(when it began, run 6: kernel 6.1 -> 6.6)"),
        "{}",
        check.message
    );
    assert!(
        !check.message.contains("since the last run"),
        "{}",
        check.message
    );

    let c = Case::new(SLEEP, &[50_000.0, 50_500.0, 49_800.0]);
    let mut now = run(4, "6.6");
    now.boot_id = Some("b2".into());
    let fine = c.judge(fig(&SLEEP_CALLS, &[], 50_100.0), &now);
    assert_eq!(fine[0].status, Status::Pass, "{}", fine[0].message);
    assert!(
        !fine[0].message.contains("since the last run"),
        "{}",
        fine[0].message
    );
}

const SLEEP: &str = "sleepbench.calls_per_second";

#[test]
fn figures_no_rule_judges_or_the_past_lacks_have_no_check() {
    let c = Case::new(PEAK, &[100.0, 100.0, 100.0]);
    let checks = c.judge(fig(&SLEEP_CALLS, &[], 1.0), &run(4, "6.1"));
    assert!(checks.is_empty());
}
