//! Verdicts: pure functions from the document to checks (name, status, value, limit, message).
//! The sleepbench thresholds are DCPerf's documented ones (packages/health_check/README.md): total
//! CPU under 50 % and IRQ under 30 % during the nanosleep benchmark, and more than 15 000 calls per
//! second per thread. Per-client rules are named `rule:hostname`.

mod memory;

use crate::report::schema::{BandwidthEntry, Check, Document, PingEntry, SleepBench, Status};

/// Limits the rules judge against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// sleepbench: busy CPU (100 - idle) must stay below this, %.
    pub sleep_total_cpu_pct: f64,
    /// sleepbench: hardware-interrupt time must stay below this, %.
    pub sleep_irq_pct: f64,
    /// sleepbench: each thread must manage more calls per second than this.
    pub sleep_calls_per_thread: f64,
    /// ping: any loss warns; loss above this fails, %.
    pub ping_loss_pct: f64,
    /// bandwidth below this share of the link's TCP goodput limit warns, %.
    pub link_efficiency_pct: f64,
    /// forward and reverse bandwidth differing by more than this warns, % of the larger.
    pub reverse_asymmetry_pct: f64,
    /// memory: repeats whose max/min exceeds this warn.
    pub repeat_spread: f64,
    /// memory: latency must rise by at least this factor across each cache size.
    pub cache_step: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            sleep_total_cpu_pct: 50.0,
            sleep_irq_pct: 30.0,
            sleep_calls_per_thread: 15_000.0,
            ping_loss_pct: 1.0,
            link_efficiency_pct: 90.0,
            reverse_asymmetry_pct: 20.0,
            repeat_spread: 1.10,
            cache_step: 1.2,
        }
    }
}

/// Every rule that applies to the sections present in `doc`.
pub fn evaluate(doc: &Document, t: &Thresholds) -> Vec<Check> {
    let mut checks = Vec::new();
    for p in doc.ping.iter().flatten() {
        checks.push(ping_loss(p, t));
    }
    for b in doc.iperf3_bandwidth.iter().flatten() {
        checks.push(bandwidth_reached(b));
        if b.bandwidth.is_some() {
            checks.push(link_efficiency(b, t));
        }
        if b.bandwidth.is_some() && (b.reverse_gbps.is_some() || b.reverse_error.is_some()) {
            checks.push(reverse_symmetry(b, t));
        }
    }
    if let Some(s) = doc.sleepbench.as_ref().and_then(|p| p.measured()) {
        checks.push(sleep_total_cpu(s, t));
        checks.push(sleep_irq(s, t));
        checks.push(sleep_calls_per_thread(s, t));
    }
    if let Some(m) = doc.memory.as_ref().and_then(|p| p.measured()) {
        checks.extend(memory::numa_ratios(m));
        checks.extend(memory::repeat_spreads(m, t));
        checks.extend(memory::cache_steps(m, t));
    }
    checks
}

fn check(name: &str, status: Status, value: Option<f64>, limit: f64, message: String) -> Check {
    Check {
        name: name.to_string(),
        status,
        value,
        limit: Some(limit),
        message,
    }
}

fn missing_cpu_split(name: &str, limit: f64, s: &SleepBench) -> Check {
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
pub fn sleep_total_cpu(s: &SleepBench, t: &Thresholds) -> Check {
    let name = "sleepbench.total_cpu";
    let limit = t.sleep_total_cpu_pct;
    let Some(total) = s.total else {
        return missing_cpu_split(name, limit, s);
    };
    if total < limit {
        let msg = format!("busy CPU {total:.1}% during the nanosleep benchmark is under {limit}%");
        check(name, Status::Pass, Some(total), limit, msg)
    } else {
        let msg = format!(
            "busy CPU {total:.1}% during the nanosleep benchmark is not under {limit}%: sleeping and \
             waking threads is expensive here; look for other load, interrupt storms or deep C-states"
        );
        check(name, Status::Fail, Some(total), limit, msg)
    }
}

/// DCPerf: IRQ time during sleepbench should be under 30 %.
pub fn sleep_irq(s: &SleepBench, t: &Thresholds) -> Check {
    let name = "sleepbench.irq";
    let limit = t.sleep_irq_pct;
    let Some(irq) = s.irq_pct else {
        return missing_cpu_split(name, limit, s);
    };
    if irq < limit {
        let msg = format!("IRQ time {irq:.1}% during the nanosleep benchmark is under {limit}%");
        check(name, Status::Pass, Some(irq), limit, msg)
    } else {
        let msg = format!(
            "IRQ time {irq:.1}% during the nanosleep benchmark is not under {limit}%: timer and \
             device interrupts eat the CPU; check interrupt affinity (irqbalance) and NIC interrupt \
             coalescing"
        );
        check(name, Status::Fail, Some(irq), limit, msg)
    }
}

/// DCPerf: calls per second per thread should exceed 15 000. Each call sleeps at least the timer
/// slack, which caps one thread at 1e9 / slack calls per second: the message names that bound.
pub fn sleep_calls_per_thread(s: &SleepBench, t: &Thresholds) -> Check {
    let name = "sleepbench.calls_per_thread";
    let limit = t.sleep_calls_per_thread;
    let rate = s.calls_per_second_per_thread;
    if !rate.is_finite() {
        return check(
            name,
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
        return check(name, Status::Pass, Some(rate), limit, msg);
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
    check(name, Status::Fail, Some(rate), limit, msg)
}

/// Ping loss: none passes, any warns, more than the limit fails. No reply at all fails.
pub fn ping_loss(p: &PingEntry, t: &Thresholds) -> Check {
    let name = format!("network.ping_loss:{}", p.hostname);
    let limit = t.ping_loss_pct;
    let Some(loss) = p.loss_pct else {
        let why = p.error.as_deref().unwrap_or("no request could be sent");
        return check(
            &name,
            Status::Fail,
            None,
            limit,
            format!("'{}' cannot be pinged: {why}", p.hostname),
        );
    };
    let (status, verdict) = if loss == 0.0 {
        (Status::Pass, "no loss".to_string())
    } else if loss <= limit {
        (
            Status::Warn,
            format!("{loss}% loss: look at the link's error counters"),
        )
    } else {
        (
            Status::Fail,
            format!("{loss}% loss is above {limit}%: the path to it drops packets"),
        )
    };
    let rtt = p
        .latency
        .map_or_else(String::new, |ms| format!(", {ms} ms average"));
    let msg = format!(
        "'{}': {}/{} replies{rtt}; {verdict}",
        p.hostname, p.received, p.sent
    );
    check(&name, status, Some(loss), limit, msg)
}

/// The forward bandwidth test must have produced a figure.
pub fn bandwidth_reached(b: &BandwidthEntry) -> Check {
    let name = format!("network.bandwidth:{}", b.hostname);
    match (b.bandwidth, &b.error) {
        (Some(gbps), _) => check(
            &name,
            Status::Pass,
            Some(gbps),
            0.0,
            format!(
                "'{}': {gbps} Gbit/s receiver goodput with {} streams",
                b.hostname, b.streams
            ),
        ),
        (None, Some(e)) => check(
            &name,
            Status::Fail,
            None,
            0.0,
            format!("'{}': no bandwidth figure: {e}", b.hostname),
        ),
        (None, None) => check(
            &name,
            Status::Skip,
            None,
            0.0,
            format!("'{}': bandwidth was not measured", b.hostname),
        ),
    }
    .without_limit()
}

/// Bandwidth against what the egress link can carry as TCP payload.
pub fn link_efficiency(b: &BandwidthEntry, t: &Thresholds) -> Check {
    let name = format!("network.link_efficiency:{}", b.hostname);
    let limit = t.link_efficiency_pct;
    let Some(pct) = b.link_efficiency_pct else {
        let iface = b.interface.as_deref().unwrap_or("unknown");
        return check(
            &name,
            Status::Skip,
            None,
            limit,
            format!(
                "'{}': interface '{iface}' reports no link speed, so efficiency cannot be judged",
                b.hostname
            ),
        );
    };
    let speed = b.link_speed_gbps.unwrap_or(0.0);
    if pct >= limit {
        check(
            &name,
            Status::Pass,
            Some(pct),
            limit,
            format!(
                "'{}': {pct}% of the {speed} Gbit/s link's TCP goodput",
                b.hostname
            ),
        )
    } else {
        check(
            &name,
            Status::Warn,
            Some(pct),
            limit,
            format!(
                "'{}': only {pct}% of the {speed} Gbit/s link's TCP goodput (under {limit}%): check the \
             peer's load, NIC offloads and interrupt placement, and the cabling/switch port",
                b.hostname
            ),
        )
    }
}

/// Forward and reverse bandwidth should be alike; a large gap points at one side's NIC or path.
pub fn reverse_symmetry(b: &BandwidthEntry, t: &Thresholds) -> Check {
    let name = format!("network.reverse_symmetry:{}", b.hostname);
    let limit = t.reverse_asymmetry_pct;
    let (Some(fwd), Some(rev)) = (b.bandwidth, b.reverse_gbps) else {
        let why = b
            .reverse_error
            .as_deref()
            .unwrap_or("the reverse test has no figure");
        return check(
            &name,
            Status::Warn,
            None,
            limit,
            format!("'{}': reverse test failed: {why}", b.hostname),
        );
    };
    let larger = fwd.max(rev);
    let diff = if larger > 0.0 {
        100.0 * (fwd - rev).abs() / larger
    } else {
        0.0
    };
    let diff = crate::units::round_to(diff, 1);
    let msg = format!(
        "'{}': {fwd} Gbit/s out, {rev} Gbit/s in ({diff}% apart)",
        b.hostname
    );
    if diff > limit {
        check(
            &name,
            Status::Warn,
            Some(diff),
            limit,
            format!("{msg}: more than {limit}%; one direction is held back"),
        )
    } else {
        check(&name, Status::Pass, Some(diff), limit, msg)
    }
}

impl Check {
    fn without_limit(mut self) -> Self {
        self.limit = None;
        self
    }
}

/// Whether any check failed (for `--strict`).
pub fn any_failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.status == Status::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::schema::Part;

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
            cpu_error: None,
        }
    }

    #[test]
    fn dcperf_readme_example_fails_all_three() {
        // DCPerf README: total 88.98 %, irq 42.98 %, 8 791 999 calls/s over 960 threads.
        let s = sleep(Some(88.98), Some(42.98), 8_791_999.3 / 960.0);
        let t = Thresholds::default();
        assert_eq!(sleep_total_cpu(&s, &t).status, Status::Fail);
        assert_eq!(sleep_irq(&s, &t).status, Status::Fail);
        let c = sleep_calls_per_thread(&s, &t);
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.message
                .contains("timer slack of 50000 ns caps one thread at 20000"),
            "{}",
            c.message
        );
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
        let c = sleep_total_cpu(&s, &Thresholds::default());
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
