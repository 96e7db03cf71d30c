//! Verdicts: pure functions from the document to checks (name, status, value, limit, message).
//! The sleepbench thresholds are DCPerf's documented ones (packages/health_check/README.md): total
//! CPU under 50 % and IRQ under 30 % during the nanosleep benchmark, and more than 15 000 calls per
//! second per thread. Per-client rules are named `rule:hostname`.

mod errors;
mod memory;
mod network;
mod sleep;
mod storage;
mod system;

use crate::wire::document::{Check, CheckId, Document, Status};

pub use super::limits::{LIMITS, Limit, ThresholdError, Thresholds, limits_table};

/// Every rule that applies to the sections present in `doc`.
pub fn evaluate(doc: &Document, t: &Thresholds) -> Vec<Check> {
    let mut checks = Vec::new();
    let system = doc.system();
    let cpus = system.map(|s| s.logical_cpus);
    for p in doc.ping.iter().flatten() {
        checks.push(network::ping_loss(p, t));
        if p.latency.is_some() {
            checks.push(network::ping_rtt(p, t));
        }
        checks.extend(network::ping_method(p));
    }
    for b in doc.iperf3_bandwidth.iter().flatten() {
        checks.push(network::bandwidth(b, t, cpus));
        if b.bandwidth.is_some() {
            checks.push(network::link_efficiency(b, t));
        }
        if b.bandwidth.is_some() && (b.reverse_gbps.is_some() || b.reverse_error.is_some()) {
            checks.push(network::reverse_symmetry(b, t));
        }
    }
    if let Some(s) = doc.sleepbench.as_ref().and_then(|p| p.measured()) {
        checks.push(sleep::total_cpu(s, t));
        checks.push(sleep::irq(s, t));
        checks.push(sleep::calls_per_thread(s, t));
    }
    if let Some(s) = system {
        checks.extend(system::all(s, t));
        if let Some(c) = &s.error_counters {
            checks.extend(errors::all(c, t));
        }
    }
    if let Some(st) = doc.storage.as_ref().and_then(|p| p.measured()) {
        checks.extend(storage::all(st, t));
    }
    if let Some(m) = doc.memory.as_ref().and_then(|p| p.measured()) {
        checks.extend(memory::peak_vs_theoretical(m, system, t));
        checks.extend(memory::numa_ratios(m, system, t));
        checks.extend(memory::working_sets(m, t));
        checks.extend(memory::full_random_pages(m));
        checks.extend(memory::repeat_spreads(m, t));
        checks.extend(memory::cache_steps(m, t));
    }
    super::noise::mark_inconclusive(&mut checks, &doc.health_check.interference, t);
    checks
}

fn check(name: &CheckId, status: Status, value: Option<f64>, limit: f64, message: String) -> Check {
    Check {
        name: name.clone(),
        status,
        value,
        limit: Some(limit),
        message,
    }
}

/// `pass` when `value` reaches `limit`, else `warn` with the advice that says what to look at.
fn pass_or_warn(name: &CheckId, value: f64, limit: f64, passing: String, failing: String) -> Check {
    if value >= limit {
        check(name, Status::Pass, Some(value), limit, passing)
    } else {
        check(name, Status::Warn, Some(value), limit, failing)
    }
}

/// Whether any check failed (for `--strict`).
pub fn any_failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.status == Status::Fail)
}

#[cfg(test)]
mod tests;
