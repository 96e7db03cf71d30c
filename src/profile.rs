//! The run-length presets (`--profile`) and every default the command line falls back to, in one
//! table: what each section measures for how long, and the waits on peers. `config.rs` reads its
//! defaults from here and nowhere else, and the help text is generated from the same table, so
//! the two cannot disagree.
//!
//! May import: the leaves, the measurement modules' settings types and the wire's `Profile`.

use crate::judge::checks::Thresholds;
use crate::memory::{MemoryConfig, Tests};
use crate::net::iperf3::client::Timeouts;
use crate::wire::document::Profile;
use clap::builder::PossibleValue;
use std::time::Duration;

/// What a profile runs, section by section.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// One line for `--help`.
    pub summary: &'static str,
    /// nanosleep benchmark length (DCPerf: 30 s).
    pub sleep_time: Duration,
    /// Echo requests per client (DCPerf: ping -c 10).
    pub ping_count: u32,
    /// Time between echo requests (ping's default 1 s).
    pub ping_interval: Duration,
    /// Seconds of each bandwidth test direction (DCPerf: iperf3's default 10 s).
    pub iperf_seconds: u32,
    /// The memory section.
    pub memory: MemoryConfig,
    /// Length of each storage test (the vendors' procedure: 10 s).
    pub storage_time: Duration,
}

/// iperf3 streams per bandwidth test (DCPerf: `-P4`).
pub const IPERF_STREAMS: u32 = 4;
/// Threads of the 4 KiB random storage tests (fio `numjobs=64`, as the vendors' procedure).
pub const STORAGE_THREADS: u32 = 64;
/// Threads of the 1 MiB sequential-write test.
pub const STORAGE_SEQUENTIAL_THREADS: usize = 4;
/// How long a client's name may take to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
/// Waits on an iperf3 peer: connecting, and each control message.
pub const PEER_TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(3),
    control: Duration::from_secs(10),
    busy: None,
};
/// How long the client role waits for a test before it stops by itself: 15 minutes, long enough
/// for a server's whole run, short enough that a forgotten responder does not linger.
pub const IDLE_TIMEOUT: &str = "900";

/// The table.
pub fn settings(profile: Profile) -> Settings {
    let ms = Duration::from_millis;
    let s = Duration::from_secs;
    match profile {
        Profile::Quick => Settings {
            summary: "a few seconds per section",
            sleep_time: s(3),
            ping_count: 5,
            ping_interval: ms(200),
            iperf_seconds: 2,
            memory: memory(128, 64, 1, [200, 200, 40, 20, 50], false),
            storage_time: s(2),
        },
        Profile::Standard => Settings {
            summary: "DCPerf's parameters",
            sleep_time: s(30),
            ping_count: 10,
            ping_interval: s(1),
            iperf_seconds: 10,
            // mm-mem's sizes (512 MiB chain, 128 MiB per thread) with shorter, repeated
            // measurements, so the section takes under a minute on a small machine.
            memory: memory(512, 128, 3, [500, 400, 250, 50, 200], true),
            storage_time: s(10),
        },
        Profile::Thorough => Settings {
            summary: "longer runs and more repeats than standard",
            sleep_time: s(60),
            ping_count: 30,
            ping_interval: s(1),
            iperf_seconds: 30,
            // Close to mm-mem's 2 s points.
            memory: memory(1024, 128, 5, [1000, 1000, 1000, 200, 500], true),
            storage_time: s(30),
        },
    }
}

/// Memory settings: chain and per-thread MiB, repeats, and the measured milliseconds of an
/// idle-latency repeat, a bandwidth phase, a sweep point, a curve point and the warm-up.
fn memory(
    region_mib: usize,
    thread_mib: usize,
    repeats: usize,
    [idle, bandwidth, sweep, curve, warmup]: [u64; 5],
    curve_fine: bool,
) -> MemoryConfig {
    let ms = Duration::from_millis;
    MemoryConfig {
        region_bytes: region_mib << 20,
        thread_region_bytes: thread_mib << 20,
        repeats,
        idle_time: ms(idle),
        bandwidth_time: ms(bandwidth),
        sweep_time: ms(sweep),
        curve_time: ms(curve),
        warmup: ms(warmup),
        reserve_hugepages: false,
        curve_fine,
        tests: Tests::ALL,
        working_set_factor: Thresholds::default().working_set_factor,
    }
}

/// A duration as people write it: `3 s`, `200 ms`.
fn shown(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// `standard's value (quick: ..., thorough: ...)` for one setting, for an option's help.
pub fn per_profile(value: impl Fn(&Settings) -> String) -> String {
    let standard = value(&settings(Profile::Standard));
    let others: Vec<String> = Profile::ALL
        .iter()
        .filter(|&&p| p != Profile::Standard)
        .map(|&p| format!("{}: {}", p.name(), value(&settings(p))))
        .collect();
    format!("{standard} ({})", others.join(", "))
}

/// Help text of the options whose defaults depend on the profile.
pub mod help {
    use super::{per_profile, shown};

    /// `--sleep-time`.
    pub fn sleep_time() -> String {
        format!(
            "How long the nanosleep benchmark runs: seconds, or with a unit (`500ms`, `1m`); \
             default {}",
            per_profile(|s| shown(s.sleep_time))
        )
    }

    /// `--ping-count`.
    pub fn ping_count() -> String {
        format!(
            "Echo requests per client (ping -c); default {}",
            per_profile(|s| s.ping_count.to_string())
        )
    }

    /// `--ping-interval`.
    pub fn ping_interval() -> String {
        format!(
            "Time between echo requests: seconds, or with a unit (`200ms`); default {}",
            per_profile(|s| shown(s.ping_interval))
        )
    }

    /// `--iperf-time`.
    pub fn iperf_time() -> String {
        format!(
            "Seconds per bandwidth test direction (whole seconds, as iperf3 -t); default {}",
            per_profile(|s| format!("{} s", s.iperf_seconds))
        )
    }

    /// `--memory-size`.
    pub fn memory_size() -> String {
        format!(
            "Size of the idle-latency chain in MiB (mm-mem: 512); default {}",
            per_profile(|s| (s.memory.region_bytes >> 20).to_string())
        )
    }

    /// `--memory-repeats`.
    pub fn memory_repeats() -> String {
        format!(
            "Measurements per memory figure (min/avg/max are reported); default {}",
            per_profile(|s| s.memory.repeats.to_string())
        )
    }

    /// `--storage-time`.
    pub fn storage_time() -> String {
        format!(
            "Length of each storage test: seconds, or with a unit; default {}",
            per_profile(|s| shown(s.storage_time))
        )
    }
}

impl clap::ValueEnum for Profile {
    fn value_variants<'a>() -> &'a [Self] {
        &Profile::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let s = settings(*self);
        Some(PossibleValue::new(self.name()).help(format!(
            "{} ({} sleep, {} x {} pings, {} s bandwidth tests)",
            s.summary,
            shown(s.sleep_time),
            s.ping_count,
            shown(s.ping_interval),
            s.iperf_seconds
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_is_dcperfs_and_help_comes_from_the_table() {
        let s = settings(Profile::Standard);
        assert_eq!(s.sleep_time, Duration::from_secs(30));
        assert_eq!((s.ping_count, s.iperf_seconds), (10, 10));
        assert_eq!(s.memory.region_bytes, 512 << 20);
        assert_eq!(
            help::sleep_time(),
            "How long the nanosleep benchmark runs: seconds, or with a unit (`500ms`, `1m`); \
             default 30 s (quick: 3 s, thorough: 60 s)"
        );
        let pv = clap::ValueEnum::to_possible_value(&Profile::Quick).unwrap();
        assert_eq!(pv.get_name(), "quick");
        assert!(pv.get_help().unwrap().to_string().contains("3 s sleep"));
    }
}
