//! Each measuring section's settings: the profile's defaults with the flags' overrides, checked.

use super::ResponderConfig;
use crate::cli::{MemoryArgs, NetArgs, ResponderArgs, SleepArgs};
use crate::error::ConfigError;
use crate::memory::MemoryConfig;
use crate::net::ping::PingConfig;
use crate::net::{BandwidthConfig, NetworkConfig};
use crate::profile::{self, IPERF_STREAMS, PEER_TIMEOUTS, RESOLVE_TIMEOUT, STORAGE_THREADS};
use crate::sched::sleepbench::{SleepConfig, default_threads};
use crate::units::parse_duration;
use crate::wire::document::Profile;
use std::net::IpAddr;
use std::time::Duration;

pub(super) fn memory_config(
    args: &MemoryArgs,
    profile: Profile,
) -> Result<MemoryConfig, ConfigError> {
    let mut m = profile::settings(profile).memory;
    if let Some(mib) = args.memory_size {
        // 256 GiB: beyond every LLC by far; larger only costs minutes of page faults.
        let mib = int_in(Some(mib), "--memory-size", 1..=256 << 10, 0)?;
        m.region_bytes = (mib as usize) << 20;
    }
    m.repeats = int_in(
        args.memory_repeats,
        "--memory-repeats",
        1..=100,
        m.repeats as u32,
    )? as usize;
    m.reserve_hugepages = args.memory_reserve_hugepages;
    if !args.memory_tests.is_empty() {
        use crate::cli::MemoryTest as T;
        let has = |t: T| args.memory_tests.contains(&t);
        m.tests = crate::memory::Tests {
            idle: has(T::Idle),
            peak: has(T::Peak),
            memcpy: has(T::Memcpy),
            loaded: has(T::Loaded),
            curve: has(T::Curve),
        };
    }
    Ok(m)
}

/// Storage settings from the command line and the profile (standard: 10 s per test, as the
/// vendors' procedure; quick: 2 s).
pub(super) fn storage_config(
    path: &std::path::Path,
    args: &crate::cli::StorageArgs,
    profile: Profile,
) -> Result<crate::storage::StorageConfig, ConfigError> {
    let time = match &args.storage_time {
        Some(t) => {
            parse_duration(t).map_err(|m| ConfigError::new("--storage-time", m.to_string()))?
        }
        None => profile::settings(profile).storage_time,
    };
    let size = match args.storage_size {
        None => None,
        Some(mib) => Some(u64::from(int_in(Some(mib), "--storage-size", 1..=1 << 30, 0)?) << 20),
    };
    let threads = int_in(
        args.storage_threads,
        "--storage-threads",
        1..=4096,
        STORAGE_THREADS,
    )? as usize;
    for (flag, v) in [
        ("--storage-expect-iops", args.storage_expect_iops),
        ("--storage-expect-mb-s", args.storage_expect_mb_s),
    ] {
        if v.is_some_and(|v| !v.is_finite() || v <= 0.0) {
            return Err(ConfigError::new(flag, "give a positive number"));
        }
    }
    Ok(crate::storage::StorageConfig {
        path: path.to_path_buf(),
        size_bytes: size,
        time,
        allow_write: args.storage_allow_write,
        random_threads: threads,
        sequential_threads: profile::STORAGE_SEQUENTIAL_THREADS,
        expect_iops: args.storage_expect_iops,
        expect_mb_s: args.storage_expect_mb_s,
    })
}

/// A whole number from a flag, within `range`.
pub(super) fn int_in(
    value: Option<i64>,
    flag: &'static str,
    range: std::ops::RangeInclusive<i64>,
    default: u32,
) -> Result<u32, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) if range.contains(&v) => Ok(v as u32),
        Some(v) => Err(ConfigError::new(
            flag,
            format!("'{v}' is outside {}..={}", range.start(), range.end()),
        )),
    }
}

pub(super) fn network_config(
    net: &NetArgs,
    profile: Profile,
    port: u16,
) -> Result<NetworkConfig, ConfigError> {
    let interval = match &net.ping_interval {
        Some(t) => {
            parse_duration(t).map_err(|m| ConfigError::new("--ping-interval", m.to_string()))?
        }
        None => profile::settings(profile).ping_interval,
    };
    if interval < Duration::from_millis(10) {
        return Err(ConfigError::new(
            "--ping-interval",
            "give at least 10ms between requests",
        ));
    }
    // Below 65,535: a reply names its request by a 16-bit sequence number, so a run's requests
    // must not reuse one (and the warm-up request has the last).
    let count = int_in(
        net.ping_count,
        "--ping-count",
        1..=65_000,
        profile::settings(profile).ping_count,
    )?;
    let seconds = int_in(
        net.iperf_time,
        "--iperf-time",
        1..=86_400,
        profile::settings(profile).iperf_seconds,
    )?;
    let streams = int_in(net.iperf_streams, "--iperf-streams", 1..=128, IPERF_STREAMS)?;
    let mut timeouts = PEER_TIMEOUTS;
    if let Some(t) = &net.iperf_timeout {
        let wait =
            parse_duration(t).map_err(|m| ConfigError::new("--iperf-timeout", m.to_string()))?;
        timeouts.control = wait;
        timeouts.connect = wait.min(timeouts.connect);
    }
    Ok(NetworkConfig {
        clients: Vec::new(),
        port,
        ping: Some(PingConfig {
            count,
            warm_up: true,
            interval,
            linger: interval.max(Duration::from_secs(1)),
            tcp_port: port,
            method: net.ping_method.into(),
        }),
        bandwidth: Some(BandwidthConfig {
            streams,
            seconds,
            // As long as the forward test, or `reverse_symmetry` compares unequal windows.
            reverse_seconds: if net.no_reverse { 0 } else { seconds },
            aggregate: true,
        }),
        resolve_timeout: RESOLVE_TIMEOUT,
        timeouts,
    })
}

pub(super) fn responder_config(
    args: &ResponderArgs,
    port: u16,
) -> Result<ResponderConfig, ConfigError> {
    let bind = match &args.bind {
        None => None,
        Some(b) => Some(
            b.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .map_err(|_| ConfigError::new("--bind", format!("'{b}' is not an IP address")))?,
        ),
    };
    let idle_timeout = match args.idle_timeout.trim() {
        "0" => None,
        t => {
            Some(parse_duration(t).map_err(|m| ConfigError::new("--idle-timeout", m.to_string()))?)
        }
    };
    let pid_file = args.pid_file.clone();
    Ok(ResponderConfig {
        bind,
        port,
        idle_timeout,
        daemon: args.daemon,
        pid_file,
    })
}

pub(super) fn sleep_config(
    args: &SleepArgs,
    profile: Profile,
    usable_cpus: usize,
) -> Result<SleepConfig, ConfigError> {
    let duration = match &args.sleep_time {
        Some(t) => {
            parse_duration(t).map_err(|m| ConfigError::new("--sleep-time", m.to_string()))?
        }
        None => profile::settings(profile).sleep_time,
    };
    let threads = match args.sleep_threads {
        Some(0) => {
            return Err(ConfigError::new(
                "--sleep-threads",
                "'0': give at least 1 thread",
            ));
        }
        Some(n) if n > 100_000 => {
            return Err(ConfigError::new(
                "--sleep-threads",
                format!(
                    "'{n}' threads is more than this benchmark can start; DCPerf uses 2.5 per CPU"
                ),
            ));
        }
        Some(n) => n,
        None => default_threads(usable_cpus),
    };
    Ok(SleepConfig::new(threads, duration))
}
