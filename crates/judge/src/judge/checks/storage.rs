//! Storage rules: figures below what the user expects (from a data sheet) fail; a 99.9th
//! percentile latency above 20x the median warns (a device that stalls now and then).

use super::{Thresholds, check};
use crate::wire::document::{Check, CheckId, Status};
use crate::wire::storage::{Latency, StoragePart, StorageTest};

/// Every storage rule that has its figure.
pub fn all(s: &StoragePart, t: &Thresholds) -> Vec<Check> {
    let mut out = vec![tests_ran(s)];
    if s.unwritten_reads {
        out.push(
            check(
                &CheckId::new("storage", "unwritten_reads"),
                Status::Warn,
                None,
                0.0,
                format!(
                    "random reads went over '{}', a device only read, whose blocks may never have \
                     been written: such blocks can be answered without touching the media, so the \
                     read IOPS may be too high; on a blank device, --storage-allow-write writes \
                     the region first",
                    s.path
                ),
            )
            .without_limit(),
        );
    }
    let failed = |test: StorageTest| {
        s.errors
            .iter()
            .find(|e| e.test == Some(test))
            .map(|e| e.to_string())
    };
    match (s.expect_iops, s.read_iops_4k) {
        (Some(want), Some(iops)) => out.push(expectation(
            CheckId::new("storage", "read_iops"),
            iops,
            want,
            "4 KiB random-read IOPS",
        )),
        (Some(want), None) => out.push(check(
            &CheckId::new("storage", "read_iops"),
            Status::Skip,
            None,
            want,
            format!(
                "the random-read test has no figure ({}), so --storage-expect-iops cannot be judged",
                failed(StorageTest::RandomRead).unwrap_or_else(|| "it did not run".into())
            ),
        )),
        _ => {}
    }
    if let Some(want) = s.expect_mb_s {
        match s.write_mb_s_1m {
            Some(mb_s) => out.push(expectation(
                CheckId::new("storage", "write_mb_s"),
                mb_s,
                want,
                "1 MiB sequential-write MB/s",
            )),
            None => out.push(check(
                &CheckId::new("storage", "write_mb_s"),
                Status::Skip,
                None,
                want,
                format!(
                    "the sequential-write test has no figure ({}), so --storage-expect-mb-s \
                     cannot be judged",
                    failed(StorageTest::SequentialWrite)
                        .or_else(|| s.writes_skipped.clone())
                        .unwrap_or_else(|| "writes were not allowed".into())
                ),
            )),
        }
    }
    if let Some(l) = &s.read_clat_us {
        out.push(tail(CheckId::new("storage", "read_tail_latency"), l, t));
    }
    if let Some(l) = &s.write_clat_us {
        out.push(tail(CheckId::new("storage", "write_tail_latency"), l, t));
    }
    out
}

/// Every planned test must have run: one that failed (a full disk, an I/O error) fails this check
/// with its error; the figures of the others stand.
fn tests_ran(s: &StoragePart) -> Check {
    if s.errors.is_empty() {
        check(
            &CheckId::new("storage", "tests"),
            Status::Pass,
            Some(0.0),
            0.0,
            "every planned storage test ran".into(),
        )
    } else {
        check(
            &CheckId::new("storage", "tests"),
            Status::Fail,
            Some(s.errors.len() as f64),
            0.0,
            format!(
                "{} storage test(s) failed: {}",
                s.errors.len(),
                s.errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )
    }
}

fn expectation(name: CheckId, got: f64, want: f64, what: &str) -> Check {
    if got >= want {
        check(
            &name,
            Status::Pass,
            Some(got),
            want,
            format!("{what} {got} meets the expected {want}"),
        )
    } else {
        check(
            &name,
            Status::Fail,
            Some(got),
            want,
            format!(
                "{what} {got} is below the expected {want}: check the device's firmware, PCIe link, \
             queue settings and filesystem, and that nothing else used it"
            ),
        )
    }
}

fn tail(name: CheckId, l: &Latency, t: &Thresholds) -> Check {
    let limit = t.storage_tail_ratio;
    let ratio = crate::units::round_to(l.p999 / l.p50.max(0.001), 1);
    let detail = format!("p99.9 {} µs is {ratio}x the median {} µs", l.p999, l.p50);
    if ratio > limit {
        check(
            &name,
            Status::Warn,
            Some(ratio),
            limit,
            format!(
                "{detail}: the device stalls now and then (garbage collection, thermal throttling, \
             a shared device); look at its SMART/NVMe log"
            ),
        )
    } else {
        check(&name, Status::Pass, Some(ratio), limit, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::storage::TargetKind;

    fn part() -> StoragePart {
        StoragePart {
            path: "/data".into(),
            kind: TargetKind::Directory,
            fstype: Some("xfs".into()),
            device: Some("nvme0n1".into()),
            rotational: Some(false),
            size_mib: 4096,
            direct: true,
            read_iops_4k: Some(500_000.0),
            read_clat_us: Some(Latency {
                p50: 100.0,
                p99: 300.0,
                p999: 900.0,
                max: 5000.0,
            }),
            write_mb_s_1m: Some(2000.0),
            write_iops_4k: Some(300_000.0),
            write_clat_us: Some(Latency {
                p50: 20.0,
                p99: 100.0,
                p999: 800.0,
                max: 9000.0,
            }),
            random_threads: 64,
            sequential_threads: 4,
            random_block_bytes: 4096,
            sequential_block_bytes: 1 << 20,
            seconds: 10.0,
            seed: 1,
            read_region_mib: Some(64),
            unwritten_reads: false,
            writes_skipped: None,
            notes: Vec::new(),
            errors: Vec::new(),
            expect_iops: Some(600_000.0),
            expect_mb_s: Some(1500.0),
        }
    }

    #[test]
    fn expectations_and_tails() {
        let c = all(&part(), &Thresholds::default());
        let by = |n: &str| c.iter().find(|c| c.name == n).unwrap().status;
        assert_eq!(
            by("storage.read_iops"),
            Status::Fail,
            "500k < the expected 600k"
        );
        assert_eq!(by("storage.write_mb_s"), Status::Pass);
        assert_eq!(by("storage.read_tail_latency"), Status::Pass, "9x");
        assert_eq!(by("storage.write_tail_latency"), Status::Warn, "40x");
    }

    #[test]
    fn no_expectation_no_check_and_no_writes_is_said() {
        let mut p = part();
        p.expect_iops = None;
        p.write_mb_s_1m = None;
        p.writes_skipped = Some("no writes: it is a block device".into());
        let c = all(&p, &Thresholds::default());
        assert!(c.iter().all(|c| c.name != "storage.read_iops"));
        let w = c.iter().find(|c| c.name == "storage.write_mb_s").unwrap();
        assert_eq!(w.status, Status::Skip);
        assert!(w.message.contains("block device"));
    }

    #[test]
    fn an_expectation_without_its_figure_is_skipped_with_that_tests_error() {
        use crate::wire::storage::FailedTest;
        let mut p = part();
        p.read_iops_4k = None;
        p.write_mb_s_1m = None;
        p.errors = vec![
            FailedTest {
                test: Some(StorageTest::SequentialWrite),
                why: "No space left on device".into(),
            },
            FailedTest {
                test: Some(StorageTest::RandomRead),
                why: "Input/output error".into(),
            },
        ];
        let c = all(&p, &Thresholds::default());
        let by = |n: &str| c.iter().find(|c| c.name == n).unwrap();
        let r = by("storage.read_iops");
        assert_eq!(r.status, Status::Skip);
        assert!(r.message.contains("Input/output error"), "{}", r.message);
        assert!(!r.message.contains("No space"), "{}", r.message);
        let w = by("storage.write_mb_s");
        assert_eq!(w.status, Status::Skip);
        assert!(w.message.contains("No space left"), "{}", w.message);
        assert_eq!(by("storage.tests").status, Status::Fail);
    }

    #[test]
    fn a_tail_at_its_limit_passes() {
        let t = Thresholds::default();
        let at = Latency {
            p50: 10.0,
            p99: 100.0,
            p999: 10.0 * t.storage_tail_ratio,
            max: 1000.0,
        };
        let c = tail(CheckId::new("storage", "read_tail_latency"), &at, &t);
        assert_eq!(c.status, Status::Pass, "{}", c.message);
        let above = Latency {
            p999: 10.0 * t.storage_tail_ratio + 1.0,
            ..at
        };
        let c = tail(CheckId::new("storage", "read_tail_latency"), &above, &t);
        assert_eq!(c.status, Status::Warn, "{}", c.message);
    }
}
