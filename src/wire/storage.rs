//! The storage section in the wire format. Throughput in MB/s = 10^6 bytes/s (fio's and data
//! sheets' unit), latency in microseconds.

use super::document::nullable;
use crate::storage::io::IoResult;
use crate::storage::target::Kind;
use crate::storage::{LARGE_BLOCK, SMALL_BLOCK, StorageConfig, StorageResults};
use crate::units::round_to;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the storage target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A directory: our own test file in it.
    Directory,
    /// An existing regular file.
    File,
    /// A block device.
    Device,
}

impl From<Kind> for TargetKind {
    fn from(k: Kind) -> Self {
        match k {
            Kind::Directory => TargetKind::Directory,
            Kind::File => TargetKind::File,
            Kind::Device => TargetKind::Device,
        }
    }
}

/// Completion latency percentiles, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Slowest call.
    pub max: f64,
}

/// The storage section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StoragePart {
    /// The target as given.
    pub path: String,
    /// `directory` (our own test file), `file` or `device`.
    pub kind: TargetKind,
    /// Filesystem type.
    #[schemars(required, transform = nullable)]
    pub fstype: Option<String>,
    /// The block device behind it.
    #[schemars(required, transform = nullable)]
    pub device: Option<String>,
    /// Whether that device spins.
    #[schemars(required, transform = nullable)]
    pub rotational: Option<bool>,
    /// Bytes used, MiB.
    pub size_mib: u64,
    /// Whether O_DIRECT was honoured (false: figures include the page cache).
    pub direct: bool,
    /// 4 KiB random reads per second.
    #[schemars(required, transform = nullable)]
    pub read_iops_4k: Option<f64>,
    /// Their completion latency, µs.
    #[schemars(required, transform = nullable)]
    pub read_clat_us: Option<Latency>,
    /// 1 MiB sequential writes, MB/s.
    #[schemars(required, transform = nullable)]
    pub write_mb_s_1m: Option<f64>,
    /// 4 KiB random writes per second.
    #[schemars(required, transform = nullable)]
    pub write_iops_4k: Option<f64>,
    /// Their completion latency, µs.
    #[schemars(required, transform = nullable)]
    pub write_clat_us: Option<Latency>,
    /// Threads of the random tests.
    pub random_threads: usize,
    /// Threads of the sequential write test.
    pub sequential_threads: usize,
    /// Bytes per random call.
    pub random_block_bytes: usize,
    /// Bytes per sequential call.
    pub sequential_block_bytes: usize,
    /// Length of each test, seconds.
    pub seconds: f64,
    /// The seed of this run's offsets and written data (new each run).
    #[serde(default)]
    pub seed: u64,
    /// Written data the random reads picked from, MiB: the region laid out first, or an existing
    /// file's data extents; null when reads went anywhere on a device only read.
    #[serde(default)]
    pub read_region_mib: Option<u64>,
    /// Set when random reads went over a device whose blocks may never have been written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unwritten_reads: bool,
    /// Why the write tests did not run, when they did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_skipped: Option<String>,
    /// Warnings (no O_DIRECT, in-memory filesystem).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Tests that failed, and why (the others still ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The user's expectations, for the checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_iops: Option<f64>,
    /// The user's expectations, for the checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_mb_s: Option<f64>,
}

fn latency(r: &IoResult) -> Option<Latency> {
    let us = |p: f64| r.latency.percentile(p).map(|ns| round_to(ns / 1000.0, 1));
    Some(Latency {
        p50: us(50.0)?,
        p99: us(99.0)?,
        p999: us(99.9)?,
        max: round_to(r.latency.max() as f64 / 1000.0, 1),
    })
}

impl StoragePart {
    /// Builds the section.
    pub fn from_results(r: &StorageResults, cfg: &StorageConfig) -> Self {
        StoragePart {
            path: cfg.path.display().to_string(),
            kind: r.target.kind.into(),
            fstype: r.target.fstype.clone(),
            device: r.target.device.clone(),
            rotational: r.target.rotational,
            size_mib: r.size >> 20,
            direct: r.direct,
            read_iops_4k: r.random_read.as_ref().map(|x| round_to(x.iops(), 0)),
            read_clat_us: r.random_read.as_ref().and_then(latency),
            write_mb_s_1m: r.sequential_write.as_ref().map(|x| round_to(x.mb_s(), 1)),
            write_iops_4k: r.random_write.as_ref().map(|x| round_to(x.iops(), 0)),
            write_clat_us: r.random_write.as_ref().and_then(latency),
            random_threads: cfg.random_threads,
            sequential_threads: cfg.sequential_threads,
            random_block_bytes: SMALL_BLOCK,
            sequential_block_bytes: LARGE_BLOCK,
            seconds: round_to(cfg.time.as_secs_f64(), 3),
            seed: r.seed,
            read_region_mib: r.read_region.map(|b| b >> 20),
            unwritten_reads: r.unwritten_reads,
            writes_skipped: r.writes_skipped.clone(),
            notes: r.notes.clone(),
            errors: r.errors.clone(),
            expect_iops: cfg.expect_iops,
            expect_mb_s: cfg.expect_mb_s,
        }
    }
}
