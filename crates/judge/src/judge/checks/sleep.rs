//! sleepbench rules: DCPerf's documented thresholds (packages/health_check/README.md): busy CPU
//! under 50 % and IRQ time under 30 % during the nanosleep benchmark, and more than 15 000 calls per
//! second per thread.

use super::{Thresholds, check};
use crate::wire::document::{Check, CheckId, SleepBench, Status};

fn missing_cpu_split(name: &CheckId, limit: f64, s: &SleepBench) -> Check {
    let why = s
        .cpu_error
        .as_deref()
        .unwrap_or("no CPU split was measured");
    check(
        name,
        Status::Skip,
        None,
        limit,
        format!("cannot judge: {why}"),
    )
}

/// DCPerf: total CPU utilisation during sleepbench should be under 50 %.
pub fn total_cpu(s: &SleepBench, t: &Thresholds) -> Check {
    let name = CheckId::new("sleepbench", "total_cpu");
    let limit = t.sleep_total_cpu_pct;
    let Some(total) = s.total else {
        return missing_cpu_split(&name, limit, s);
    };
    if total < limit {
        let msg = format!("busy CPU {total:.1}% during the nanosleep benchmark is under {limit}%");
        check(&name, Status::Pass, Some(total), limit, msg)
    } else {
        let msg = format!(
            "busy CPU {total:.1}% during the nanosleep benchmark is not under {limit}%: sleeping and \
             waking threads is expensive here; look for other load, interrupt storms or deep C-states"
        );
        check(&name, Status::Fail, Some(total), limit, msg)
    }
}

/// DCPerf: IRQ time during sleepbench should be under 30 %.
pub fn irq(s: &SleepBench, t: &Thresholds) -> Check {
    let name = CheckId::new("sleepbench", "irq");
    let limit = t.sleep_irq_pct;
    let Some(irq) = s.irq_pct else {
        return missing_cpu_split(&name, limit, s);
    };
    if irq < limit {
        let msg = format!("IRQ time {irq:.1}% during the nanosleep benchmark is under {limit}%");
        check(&name, Status::Pass, Some(irq), limit, msg)
    } else {
        let msg = format!(
            "IRQ time {irq:.1}% during the nanosleep benchmark is not under {limit}%: timer and \
             device interrupts eat the CPU; check interrupt affinity (irqbalance) and NIC interrupt \
             coalescing"
        );
        check(&name, Status::Fail, Some(irq), limit, msg)
    }
}

/// DCPerf: calls per second per thread should exceed 15 000. Each call sleeps at least the timer
/// slack, which caps one thread at 1e9 / slack calls per second: the message names that bound.
pub fn calls_per_thread(s: &SleepBench, t: &Thresholds) -> Check {
    let name = CheckId::new("sleepbench", "calls_per_thread");
    let limit = t.sleep_calls_per_thread;
    let rate = s.calls_per_second_per_thread;
    if !rate.is_finite() {
        return check(
            &name,
            Status::Skip,
            None,
            limit,
            "cannot judge: no calls were timed".into(),
        );
    }
    if rate > limit {
        let msg = format!(
            "{rate:.0} nanosleep calls/s per thread ({} threads) is above {limit:.0}",
            s.threads
        );
        return check(&name, Status::Pass, Some(rate), limit, msg);
    }
    let slack = match s.timer_slack_ns {
        Some(ns) if ns > 0 => format!(
            "; the timer slack of {ns} ns caps one thread at {:.0} calls/s, so a slack above {:.0} ns \
             alone fails this rule",
            1e9 / ns as f64,
            1e9 / limit
        ),
        _ => String::new(),
    };
    let msg = format!(
        "{rate:.0} nanosleep calls/s per thread ({} threads) is not above {limit:.0}: expect \
         TaoBench-like loads to be limited by nanosleep and scheduling{slack}",
        s.threads
    );
    check(&name, Status::Fail, Some(rate), limit, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::checks::{any_failed, evaluate};
    use crate::wire::document::{Document, Part};

    fn sleep(total: Option<f64>, irq: Option<f64>, per_thread: f64) -> SleepBench {
        SleepBench {
            calls_per_second: per_thread * 5.0,
            usr_pct: Some(1.0),
            nice_pct: Some(0.0),
            sys_pct: Some(10.0),
            idle_pct: total.map(|t| 100.0 - t),
            iowait_pct: Some(0.0),
            irq_pct: irq,
            softirq_pct: Some(0.0),
            steal_pct: Some(0.0),
            guest_pct: Some(0.0),
            total,
            threads: 5,
            seconds: 30.0,
            calls_per_second_per_thread: per_thread,
            calls: 0,
            timer_slack_ns: Some(50_000),
            sleep_request_ns: 100,
            interrupted: false,
            startup_seconds: 0.0,
            note: None,
            cpu_error: None,
        }
    }

    #[test]
    fn dcperf_readme_example_fails_all_three() {
        // DCPerf README: total 88.98 %, irq 42.98 %, 8 791 999 calls/s over 960 threads.
        let s = sleep(Some(88.98), Some(42.98), 8_791_999.3 / 960.0);
        let t = Thresholds::default();
        assert_eq!(total_cpu(&s, &t).status, Status::Fail);
        assert_eq!(irq(&s, &t).status, Status::Fail);
        let c = calls_per_thread(&s, &t);
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.message
                .contains("timer slack of 50000 ns caps one thread at 20000"),
            "{}",
            c.message
        );
    }

    #[test]
    fn an_unknown_or_zero_timer_slack_names_no_bound() {
        let t = Thresholds::default();
        for slack in [Some(0), None] {
            let mut s = sleep(Some(14.2), Some(0.5), 10_000.0);
            s.timer_slack_ns = slack;
            let c = calls_per_thread(&s, &t);
            assert_eq!(c.status, Status::Fail);
            assert!(!c.message.contains("timer slack"), "{}", c.message);
            assert!(!c.message.contains("inf"), "{}", c.message);
        }
    }

    #[test]
    fn healthy_figures_pass_and_limits_are_exclusive() {
        let t = Thresholds::default();
        let s = sleep(Some(14.2), Some(0.5), 18_000.0);
        assert!(
            evaluate_one(&s, &t)
                .iter()
                .all(|c| c.status == Status::Pass)
        );
        let edge = sleep(Some(50.0), Some(30.0), 15_000.0);
        assert!(
            evaluate_one(&edge, &t)
                .iter()
                .all(|c| c.status == Status::Fail)
        );
    }

    #[test]
    fn missing_cpu_split_is_skipped_with_the_reason() {
        let mut s = sleep(None, None, 18_000.0);
        s.cpu_error = Some("/proc/stat: permission denied".into());
        let c = total_cpu(&s, &Thresholds::default());
        assert_eq!(c.status, Status::Skip);
        assert!(c.message.contains("permission denied"));
        assert_eq!(c.value, None);
    }

    #[test]
    fn absent_sections_give_no_checks() {
        assert!(evaluate(&Document::default(), &Thresholds::default()).is_empty());
    }

    fn evaluate_one(s: &SleepBench, t: &Thresholds) -> Vec<Check> {
        let doc = Document {
            sleepbench: Some(Part::Measured(s.clone())),
            ..Document::default()
        };
        let checks = evaluate(&doc, t);
        assert!(!any_failed(&checks) || checks.iter().any(|c| c.status == Status::Fail));
        checks
    }
}
