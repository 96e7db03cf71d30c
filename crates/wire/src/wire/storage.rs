//! The storage section in the wire format. Throughput in MB/s = 10^6 bytes/s (fio's and data
//! sheets' unit), latency in microseconds.

use super::nullable::nullable;
use crate::storage::io::{IoResult, Pattern};
use crate::storage::target::Kind;
use crate::storage::{LARGE_BLOCK, SMALL_BLOCK, StorageConfig, StorageResults};
use crate::units::round_to;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One of the section's tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageTest {
    /// 1 MiB sequential writes.
    SequentialWrite,
    /// 4 KiB random reads.
    RandomRead,
    /// 4 KiB random writes.
    RandomWrite,
}

impl StorageTest {
    /// Every test.
    pub const ALL: [StorageTest; 3] = [
        StorageTest::SequentialWrite,
        StorageTest::RandomRead,
        StorageTest::RandomWrite,
    ];

    /// The test that ran `pattern`.
    pub fn of(pattern: Pattern) -> StorageTest {
        match pattern {
            Pattern::SequentialWrite => StorageTest::SequentialWrite,
            Pattern::RandomRead => StorageTest::RandomRead,
            Pattern::RandomWrite => StorageTest::RandomWrite,
        }
    }

    /// Its name in the document.
    pub fn label(self) -> &'static str {
        match self {
            StorageTest::SequentialWrite => "1 MiB sequential writes",
            StorageTest::RandomRead => "4 KiB random reads",
            StorageTest::RandomWrite => "4 KiB random writes",
        }
    }
}

/// A test that failed, and why. On the wire `"<test>: <why>"` (`test` is `None` only for text
/// of no known test, read from elsewhere).
#[derive(Debug, Clone, PartialEq)]
pub struct FailedTest {
    /// The test.
    pub test: Option<StorageTest>,
    /// Why it failed.
    pub why: String,
}

impl std::fmt::Display for FailedTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.test {
            Some(t) => write!(f, "{}: {}", t.label(), self.why),
            None => f.write_str(&self.why),
        }
    }
}

impl Serialize for FailedTest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FailedTest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        for test in StorageTest::ALL {
            if let Some(why) = text
                .strip_prefix(test.label())
                .and_then(|r| r.strip_prefix(": "))
            {
                return Ok(FailedTest {
                    test: Some(test),
                    why: why.to_string(),
                });
            }
        }
        Ok(FailedTest {
            test: None,
            why: text,
        })
    }
}

impl JsonSchema for FailedTest {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FailedTest".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

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
    // Each written `"<test>: <why>"`.
    /// Tests that failed, and why (the others still ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FailedTest>,
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
            errors: r
                .errors
                .iter()
                .map(|(pattern, why)| FailedTest {
                    test: Some(StorageTest::of(*pattern)),
                    why: why.clone(),
                })
                .collect(),
            expect_iops: cfg.expect_iops,
            expect_mb_s: cfg.expect_mb_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_tests_read_back_typed_and_their_labels_are_the_sections() {
        for p in Pattern::ALL {
            let t = StorageTest::of(p);
            assert_eq!(t.label(), p.label());
            let written = serde_json::to_string(&FailedTest {
                test: Some(t),
                why: "disk full: a: b".into(),
            })
            .unwrap();
            let back: FailedTest = serde_json::from_str(&written).unwrap();
            assert_eq!((back.test, back.why.as_str()), (Some(t), "disk full: a: b"));
        }
        let odd: FailedTest = serde_json::from_str("\"something else\"").unwrap();
        assert_eq!(odd.test, None);
    }
}
