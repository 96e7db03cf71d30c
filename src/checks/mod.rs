//! Verdicts: pure functions from the document to checks (name, status, value, limit, message).
//! The sleepbench thresholds are DCPerf's documented ones (packages/health_check/README.md): total
//! CPU under 50 % and IRQ under 30 % during the nanosleep benchmark, and more than 15 000 calls per
//! second per thread. Per-client rules are named `rule:hostname`.

mod memory;
mod network;
mod sleep;
mod storage;
mod system;

use crate::report::schema::{Check, Document, Status};

/// Limits the rules judge against. Every field has a name for `--threshold NAME=VALUE`
/// (see [`LIMITS`]).
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
    /// memory: the best measured bandwidth below this share of the DIMMs' peak warns, %.
    pub peak_vs_theoretical_pct: f64,
    /// system: steal time during the run above this warns, %.
    pub steal_pct: f64,
    /// system: timer slack above this warns, ns.
    pub timer_slack_ns: f64,
    /// storage: p99.9 latency above this multiple of the median warns.
    pub storage_tail_ratio: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        let mut t = Thresholds {
            sleep_total_cpu_pct: 0.0,
            sleep_irq_pct: 0.0,
            sleep_calls_per_thread: 0.0,
            ping_loss_pct: 0.0,
            link_efficiency_pct: 0.0,
            reverse_asymmetry_pct: 0.0,
            repeat_spread: 0.0,
            cache_step: 0.0,
            peak_vs_theoretical_pct: 0.0,
            steal_pct: 0.0,
            timer_slack_ns: 0.0,
            storage_tail_ratio: 0.0,
        };
        for limit in LIMITS {
            *(limit.field)(&mut t) = limit.default;
        }
        t
    }
}

/// A named limit: its `--threshold` name, default, unit and meaning.
pub struct Limit {
    /// The name `--threshold` takes.
    pub name: &'static str,
    /// The default value.
    pub default: f64,
    /// Its unit.
    pub unit: &'static str,
    /// What the rule does with it.
    pub meaning: &'static str,
    field: fn(&mut Thresholds) -> &mut f64,
}

/// Every limit, in the order `checks --list` prints them.
pub const LIMITS: &[Limit] = &[
    Limit {
        name: "sleepbench.total_cpu_pct",
        default: 50.0,
        unit: "%",
        meaning: "busy CPU during the nanosleep benchmark must stay below (DCPerf)",
        field: |t| &mut t.sleep_total_cpu_pct,
    },
    Limit {
        name: "sleepbench.irq_pct",
        default: 30.0,
        unit: "%",
        meaning: "IRQ time during the nanosleep benchmark must stay below (DCPerf)",
        field: |t| &mut t.sleep_irq_pct,
    },
    Limit {
        name: "sleepbench.calls_per_thread",
        default: 15_000.0,
        unit: "calls/s",
        meaning: "nanosleep calls per second per thread must exceed (DCPerf)",
        field: |t| &mut t.sleep_calls_per_thread,
    },
    Limit {
        name: "network.ping_loss_pct",
        default: 1.0,
        unit: "%",
        meaning: "ping loss above fails; any loss warns",
        field: |t| &mut t.ping_loss_pct,
    },
    Limit {
        name: "network.link_efficiency_pct",
        default: 90.0,
        unit: "%",
        meaning: "receiver goodput below this share of the link's TCP goodput warns",
        field: |t| &mut t.link_efficiency_pct,
    },
    Limit {
        name: "network.reverse_asymmetry_pct",
        default: 20.0,
        unit: "%",
        meaning: "forward and reverse bandwidth further apart than this warns",
        field: |t| &mut t.reverse_asymmetry_pct,
    },
    Limit {
        name: "memory.repeat_spread",
        default: 1.10,
        unit: "max/min",
        meaning: "repeats of a memory figure further apart than this warn",
        field: |t| &mut t.repeat_spread,
    },
    Limit {
        name: "memory.cache_step",
        default: 1.2,
        unit: "x",
        meaning: "latency must rise at least this much across each cache size, else warn",
        field: |t| &mut t.cache_step,
    },
    Limit {
        name: "memory.peak_vs_theoretical_pct",
        default: 60.0,
        unit: "%",
        meaning: "best measured bandwidth below this share of the DIMMs' peak warns",
        field: |t| &mut t.peak_vs_theoretical_pct,
    },
    Limit {
        name: "system.steal_pct",
        default: 1.0,
        unit: "%",
        meaning: "CPU time stolen by the hypervisor during the run above this warns",
        field: |t| &mut t.steal_pct,
    },
    Limit {
        name: "storage.tail_ratio",
        default: 20.0,
        unit: "x",
        meaning: "p99.9 completion latency above this multiple of the median warns",
        field: |t| &mut t.storage_tail_ratio,
    },
    Limit {
        name: "system.timer_slack_ns",
        default: 50_000.0,
        unit: "ns",
        meaning: "timer slack above this (the kernel default) warns",
        field: |t| &mut t.timer_slack_ns,
    },
];

/// A `--threshold` setting that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    /// No limit has that name.
    #[error("'{0}' is not a threshold; 'health_check checks --list' shows them")]
    Unknown(String),
    /// Not `NAME=VALUE`.
    #[error("'{0}' is not NAME=VALUE")]
    Malformed(String),
    /// The value is not a finite number.
    #[error("'{value}' is not a number in '{setting}'")]
    NotANumber {
        /// The value as typed.
        value: String,
        /// The whole setting.
        setting: String,
    },
}

impl Thresholds {
    /// Sets the limit called `name`.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), ThresholdError> {
        let limit = LIMITS
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| ThresholdError::Unknown(name.into()))?;
        if !value.is_finite() {
            return Err(ThresholdError::NotANumber {
                value: value.to_string(),
                setting: name.into(),
            });
        }
        *(limit.field)(self) = value;
        Ok(())
    }

    /// Applies `NAME=VALUE` settings.
    pub fn with_overrides(settings: &[String]) -> Result<Thresholds, ThresholdError> {
        let mut t = Thresholds::default();
        for s in settings {
            let (name, value) = s
                .split_once('=')
                .ok_or_else(|| ThresholdError::Malformed(s.clone()))?;
            let value: f64 = value
                .trim()
                .parse()
                .map_err(|_| ThresholdError::NotANumber {
                    value: value.into(),
                    setting: s.clone(),
                })?;
            t.set(name.trim(), value)?;
        }
        Ok(t)
    }
}

/// The limits as a table for people (`health_check checks --list`).
pub fn limits_table() -> String {
    let mut out = String::from("threshold                          default   unit     rule\n");
    for l in LIMITS {
        out.push_str(&format!(
            "{:<34} {:<9} {:<8} {}\n",
            l.name, l.default, l.unit, l.meaning
        ));
    }
    out
}

/// Every rule that applies to the sections present in `doc`.
pub fn evaluate(doc: &Document, t: &Thresholds) -> Vec<Check> {
    let mut checks = Vec::new();
    for p in doc.ping.iter().flatten() {
        checks.push(network::ping_loss(p, t));
    }
    for b in doc.iperf3_bandwidth.iter().flatten() {
        checks.push(network::bandwidth_reached(b));
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
    let system = doc.system.as_ref().and_then(|p| p.measured());
    if let Some(s) = system {
        checks.extend(system::all(s, t));
    }
    if let Some(st) = doc.storage.as_ref().and_then(|p| p.measured()) {
        checks.extend(storage::all(st, t));
    }
    if let Some(m) = doc.memory.as_ref().and_then(|p| p.measured()) {
        checks.extend(memory::peak_vs_theoretical(m, system, t));
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

impl Check {
    /// The same check with no limit (for figures judged by presence, not size).
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

    #[test]
    fn overrides_set_by_name_and_reject_unknown_names() {
        let t = Thresholds::with_overrides(&[
            "sleepbench.calls_per_thread=10000".into(),
            " memory.repeat_spread = 1.2".into(),
        ])
        .unwrap();
        assert_eq!(t.sleep_calls_per_thread, 10_000.0);
        assert_eq!(t.repeat_spread, 1.2);
        assert_eq!(t.sleep_irq_pct, 30.0);
        assert!(
            Thresholds::with_overrides(&["nope=1".into()])
                .unwrap_err()
                .to_string()
                .contains("checks --list")
        );
        assert!(Thresholds::with_overrides(&["sleepbench.irq_pct".into()]).is_err());
        assert!(Thresholds::with_overrides(&["sleepbench.irq_pct=x".into()]).is_err());
        assert!(Thresholds::with_overrides(&["sleepbench.irq_pct=inf".into()]).is_err());
    }

    #[test]
    fn every_limit_is_listed_with_its_default() {
        let table = limits_table();
        for l in LIMITS {
            assert!(table.contains(l.name));
        }
        let t = Thresholds::default();
        assert_eq!(t.sleep_total_cpu_pct, 50.0);
        assert_eq!(t.timer_slack_ns, 50_000.0);
        assert_eq!(t.storage_tail_ratio, 20.0);
        // Every field has a limit entry: none keeps the placeholder zero.
        let debug = format!("{t:?}");
        assert!(
            !debug.contains(": 0.0"),
            "a threshold has no LIMITS entry: {debug}"
        );
    }
}
