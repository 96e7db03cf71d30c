//! Every limit a run's own checks judge against, with its `--threshold` name, default, unit and
//! meaning, in one table ([`LIMITS`]) that `health_check checks --list` prints. The checks
//! (`checks/`) and the interference marking (`noise.rs`) read them; they import nothing of
//! either.

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
    /// ping: a median RTT above this warns, ms (TaoBench asks 0.1 to 0.15 ms).
    pub ping_rtt_ms: f64,
    /// bandwidth to each client below this fails on machines with up to 72 logical CPUs, Gbit/s.
    pub min_bandwidth_gbps: f64,
    /// bandwidth to each client below this fails on machines with more than 72 CPUs, Gbit/s.
    pub min_bandwidth_gbps_large: f64,
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
    /// memory: working sets are grown to this multiple of the last-level cache, and under it warn
    /// (cache figures).
    pub working_set_factor: f64,
    /// memory: remote over local idle latency above this fails (to a node with CPUs).
    pub numa_ratio: f64,
    /// memory: remote over local idle latency above this fails (to a memory-only node: CXL, HBM).
    pub numa_ratio_memory_only: f64,
    /// system: steal time during the run above this warns, %.
    pub steal_pct: f64,
    /// system: timer slack above this warns, ns.
    pub timer_slack_ns: f64,
    /// system: a clock error the time daemon estimates above this warns, ms.
    pub clock_error_ms: f64,
    /// storage: p99.9 latency above this multiple of the median warns.
    pub storage_tail_ratio: f64,
    /// Steal time in a section's window above this makes its figures inconclusive, %.
    pub interference_steal_pct: f64,
    /// Other processes' CPU time in a section's window above this makes its figures
    /// inconclusive, % of all CPU time.
    pub interference_other_cpu_pct: f64,
    /// Time a CPU quota held the run back above this makes its figures inconclusive, %.
    pub interference_throttled_pct: f64,
    /// Thermal-throttle events in a section's window above this make its figures inconclusive.
    pub interference_thermal_events: f64,
    /// error counters: corrected memory errors per hour above this warn.
    pub errors_memory_corrected_per_hour: f64,
    /// error counters: uncorrected memory errors above this fail.
    pub errors_memory_uncorrected: f64,
    /// error counters: correctable PCIe errors per hour above this warn.
    pub errors_pcie_correctable_per_hour: f64,
    /// error counters: uncorrectable PCIe errors above this warn (non-fatal) or fail (fatal).
    pub errors_pcie_uncorrectable: f64,
    /// error counters: NIC link losses above this warn.
    pub errors_nic_carrier_downs: f64,
    /// error counters: NIC receive CRC errors per hour above this warn.
    pub errors_nic_crc_per_hour: f64,
    /// error counters: NIC drops for lack of buffers per hour above this warn.
    pub errors_nic_missed_per_hour: f64,
    /// error counters: thermal-throttle events per hour above this warn.
    pub errors_thermal_per_hour: f64,
    /// error counters: machine-check exceptions since boot above this fail.
    pub errors_machine_checks: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        let mut t = Thresholds {
            sleep_total_cpu_pct: f64::NAN,
            sleep_irq_pct: f64::NAN,
            sleep_calls_per_thread: f64::NAN,
            ping_loss_pct: f64::NAN,
            ping_rtt_ms: f64::NAN,
            min_bandwidth_gbps: f64::NAN,
            min_bandwidth_gbps_large: f64::NAN,
            link_efficiency_pct: f64::NAN,
            reverse_asymmetry_pct: f64::NAN,
            repeat_spread: f64::NAN,
            cache_step: f64::NAN,
            peak_vs_theoretical_pct: f64::NAN,
            numa_ratio: f64::NAN,
            working_set_factor: f64::NAN,
            numa_ratio_memory_only: f64::NAN,
            steal_pct: f64::NAN,
            timer_slack_ns: f64::NAN,
            clock_error_ms: f64::NAN,
            storage_tail_ratio: f64::NAN,
            interference_steal_pct: f64::NAN,
            interference_other_cpu_pct: f64::NAN,
            interference_throttled_pct: f64::NAN,
            interference_thermal_events: f64::NAN,
            errors_memory_corrected_per_hour: f64::NAN,
            errors_memory_uncorrected: f64::NAN,
            errors_pcie_correctable_per_hour: f64::NAN,
            errors_pcie_uncorrectable: f64::NAN,
            errors_nic_carrier_downs: f64::NAN,
            errors_nic_crc_per_hour: f64::NAN,
            errors_nic_missed_per_hour: f64::NAN,
            errors_thermal_per_hour: f64::NAN,
            errors_machine_checks: f64::NAN,
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
        name: "network.ping_rtt_ms",
        default: 0.15,
        unit: "ms",
        meaning: "average ping RTT above warns (DCPerf's TaoBench: 0.1 to 0.15 ms)",
        field: |t| &mut t.ping_rtt_ms,
    },
    Limit {
        name: "network.min_bandwidth_gbps",
        default: 10.0,
        unit: "Gbit/s",
        meaning: "bandwidth to each client below fails, up to 72 logical CPUs (DCPerf's TaoBench)",
        field: |t| &mut t.min_bandwidth_gbps,
    },
    Limit {
        name: "network.min_bandwidth_gbps_large",
        default: 20.0,
        unit: "Gbit/s",
        meaning: "bandwidth to each client below fails, above 72 logical CPUs (DCPerf's TaoBench)",
        field: |t| &mut t.min_bandwidth_gbps_large,
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
        name: "memory.working_set_factor",
        default: 4.0,
        unit: "x",
        meaning: "working sets are grown to this multiple of the last-level cache, and under it warn (they measure the cache)",
        field: |t| &mut t.working_set_factor,
    },
    Limit {
        name: "memory.numa_ratio",
        default: 3.0,
        unit: "x",
        meaning: "remote over local idle latency above fails (nodes with CPUs)",
        field: |t| &mut t.numa_ratio,
    },
    Limit {
        name: "memory.numa_ratio_memory_only",
        default: 4.0,
        unit: "x",
        meaning: "remote over local idle latency above fails (memory-only nodes: CXL, HBM)",
        field: |t| &mut t.numa_ratio_memory_only,
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
    Limit {
        name: "system.clock_error_ms",
        default: 100.0,
        unit: "ms",
        meaning: "the clock's error its NTP or PTP daemon estimates above this warns (an \
                  unsynchronised clock warns whatever the figure)",
        field: |t| &mut t.clock_error_ms,
    },
    Limit {
        name: "interference.steal_pct",
        default: 5.0,
        unit: "%",
        meaning: "steal time in a section's window above: its slow figures are inconclusive",
        field: |t| &mut t.interference_steal_pct,
    },
    Limit {
        name: "interference.other_cpu_pct",
        default: 10.0,
        unit: "%",
        meaning: "other processes' CPU time in a section's window above: its slow figures are inconclusive",
        field: |t| &mut t.interference_other_cpu_pct,
    },
    Limit {
        name: "interference.throttled_pct",
        default: 1.0,
        unit: "%",
        meaning: "time a cgroup CPU quota held the run back above: its slow figures are inconclusive",
        field: |t| &mut t.interference_throttled_pct,
    },
    Limit {
        name: "interference.thermal_events",
        default: 0.0,
        unit: "events",
        meaning: "thermal-throttle events in a section's window above: its slow figures are inconclusive",
        field: |t| &mut t.interference_thermal_events,
    },
    Limit {
        name: "errors.memory_corrected_per_hour",
        default: 1.0,
        unit: "/h",
        meaning: "corrected memory errors (EDAC) per hour above warn, per DIMM or controller",
        field: |t| &mut t.errors_memory_corrected_per_hour,
    },
    Limit {
        name: "errors.memory_uncorrected",
        default: 0.0,
        unit: "errors",
        meaning: "uncorrected memory errors (EDAC) since boot above fail, every run until acknowledged",
        field: |t| &mut t.errors_memory_uncorrected,
    },
    Limit {
        name: "errors.pcie_correctable_per_hour",
        default: 10.0,
        unit: "/h",
        meaning: "correctable PCIe errors (AER) per hour above warn, per device",
        field: |t| &mut t.errors_pcie_correctable_per_hour,
    },
    Limit {
        name: "errors.pcie_uncorrectable",
        default: 0.0,
        unit: "errors",
        meaning: "uncorrectable PCIe errors (AER) since boot above: non-fatal warn, fatal fail, every run until acknowledged",
        field: |t| &mut t.errors_pcie_uncorrectable,
    },
    Limit {
        name: "errors.nic_carrier_downs",
        default: 0.0,
        unit: "losses",
        meaning: "link losses of a NIC above warn (since boot the first is its coming up)",
        field: |t| &mut t.errors_nic_carrier_downs,
    },
    Limit {
        name: "errors.nic_crc_per_hour",
        default: 1.0,
        unit: "/h",
        meaning: "receive CRC errors of a NIC per hour above warn",
        field: |t| &mut t.errors_nic_crc_per_hour,
    },
    Limit {
        name: "errors.nic_missed_per_hour",
        default: 10_000.0,
        unit: "/h",
        meaning: "packets a NIC dropped for lack of buffers per hour above warn",
        field: |t| &mut t.errors_nic_missed_per_hour,
    },
    Limit {
        name: "errors.thermal_per_hour",
        default: 60.0,
        unit: "/h",
        meaning: "thermal-throttle events per package per hour above warn",
        field: |t| &mut t.errors_thermal_per_hour,
    },
    Limit {
        name: "errors.machine_checks",
        default: 0.0,
        unit: "events",
        meaning: "machine-check exceptions since boot above fail, every run until acknowledged",
        field: |t| &mut t.errors_machine_checks,
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
