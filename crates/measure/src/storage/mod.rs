//! The storage section (opt-in): the system-vetting procedure storage vendors run with fio, done
//! natively: 1 MiB sequential writes with 4 threads (MB/s), 4 KiB random reads with 64 threads
//! (IOPS, completion latency percentiles in µs), 4 KiB random writes (IOPS), each for a fixed
//! time, through O_DIRECT and the sync engine's one call at a time per thread.
//!
//! Safe by default: in a directory it writes only its own test file (laid out with written data,
//! not fallocate, since reads of never-written extents do not reach the device), unlinked as soon
//! as it is open so nothing is left behind even after a kill; an existing file or block device is
//! only read unless `--storage-allow-write`, and a device that is mounted, in use, or holds a
//! filesystem or partition table is never written.

pub mod error;
pub mod histogram;
pub mod io;
pub mod signature;
pub mod target;

use error::{Result, StorageError};
use io::{IoResult, Pattern};
use std::path::PathBuf;
use std::time::Duration;
use target::{Kind, TargetInfo};

/// Validated storage settings.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageConfig {
    /// Directory, file or block device.
    pub path: PathBuf,
    /// Test file size for a directory; bytes of a file or device to use. `None`: the default.
    pub size_bytes: Option<u64>,
    /// Length of each test.
    pub time: Duration,
    /// May existing files and devices be written.
    pub allow_write: bool,
    /// Threads of the random tests (fio numjobs).
    pub random_threads: usize,
    /// Threads of the sequential write test.
    pub sequential_threads: usize,
    /// A data sheet's random-read IOPS, for the check.
    pub expect_iops: Option<f64>,
    /// A data sheet's sequential-write MB/s, for the check.
    pub expect_mb_s: Option<f64>,
}

/// Bytes of the random tests' calls.
pub const SMALL_BLOCK: usize = 4096;
/// Bytes of the sequential test's calls.
pub const LARGE_BLOCK: usize = 1 << 20;
/// The least free space a directory needs for a test file.
pub const MIN_FREE: u64 = 256 << 20;
/// The default test file: the smaller of 4 GiB and 10 % of the free space.
pub const DEFAULT_MAX: u64 = 4 << 30;

/// What the section measured.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageResults {
    /// The target.
    pub target: TargetInfo,
    /// Bytes used.
    pub size: u64,
    /// Whether O_DIRECT was honoured.
    pub direct: bool,
    /// 1 MiB sequential writes.
    pub sequential_write: Option<IoResult>,
    /// 4 KiB random reads.
    pub random_read: Option<IoResult>,
    /// 4 KiB random writes.
    pub random_write: Option<IoResult>,
    /// Why writes were not done, when they were not.
    pub writes_skipped: Option<String>,
    /// Warnings for people (no O_DIRECT, tmpfs...).
    pub notes: Vec<String>,
    /// Tests that failed, and why.
    pub errors: Vec<(Pattern, String)>,
    /// The seed of the offsets and of the data written.
    pub seed: u64,
    /// Bytes of written data the random reads picked from, when limited to them (an existing
    /// file's data extents, or the region laid out first).
    pub read_region: Option<u64>,
    /// Random reads over a device whose blocks may never have been written (read-only run): a
    /// device can answer those without touching its media.
    pub unwritten_reads: bool,
}

/// Random reads need at least this much written data (or all of a smaller target).
pub const MIN_READ_REGION: u64 = 64 << 20;

/// Runs the section. `progress` gets one line per test. A test that fails is reported in
/// `errors` and the others still run; `Err` only when the target cannot be used at all.
pub fn run(
    cfg: &StorageConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
    progress: &dyn Fn(&str),
) -> Result<StorageResults> {
    let (info, mut target) = prepare(cfg)?;
    target.seed = crate::os::random_u64();
    let writable = info.no_write.is_none();
    // Our own file and a blank device we may write are laid out first, so reads hit written
    // blocks; an existing file is read where it holds data; a device only read may hold none.
    let lay_out = info.kind == Kind::Directory || (info.kind == Kind::Device && writable);
    let mut out = StorageResults {
        target: info.clone(),
        size: target.size,
        direct: target.direct,
        sequential_write: None,
        random_read: None,
        random_write: None,
        writes_skipped: info
            .no_write
            .as_ref()
            .map(|why| format!("no writes: {why}")),
        notes: notes_for(&info, &target),
        errors: Vec::new(),
        seed: target.seed,
        read_region: lay_out.then_some(target.size),
        unwritten_reads: info.kind == Kind::Device && !writable,
    };
    if out.unwritten_reads {
        out.notes.push(
            "the device is only read, and blocks never written may be answered without touching \
             the media (thin provisioning, an SSD's unmapped blocks): random-read IOPS may read \
             high; on a blank device, --storage-allow-write writes the region first"
                .into(),
        );
    }
    if lay_out {
        progress(&format!(
            "storage: laying out {} MiB before the tests",
            target.size >> 20
        ));
        io::run(
            &target,
            Pattern::SequentialWrite,
            LARGE_BLOCK,
            cfg.sequential_threads,
            None,
            should_stop,
        )
        .map_err(|e| match e {
            StorageError::Io { what, cause } => {
                StorageError::io(format!("laying out the test region: {what}"), cause)
            }
            other => StorageError::Refused(format!("laying out the test region: {other}")),
        })?;
    }
    let random = cfg.random_threads;
    let tests = [
        (
            writable,
            Pattern::SequentialWrite,
            LARGE_BLOCK,
            cfg.sequential_threads,
        ),
        (true, Pattern::RandomRead, SMALL_BLOCK, random),
        (writable, Pattern::RandomWrite, SMALL_BLOCK, random),
    ];
    for (wanted, pattern, block, threads) in tests {
        if !wanted || should_stop() {
            continue;
        }
        let what = pattern.label();
        if pattern == Pattern::RandomRead && info.kind == Kind::File {
            match readable_region(&cfg.path, &target) {
                Ok(region) => {
                    out.read_region = Some(region.bytes);
                    target.readable = Some(region);
                }
                Err(why) => {
                    out.errors.push((pattern, why.to_string()));
                    continue;
                }
            }
        }
        progress(&format!("storage: {what}, {threads} threads"));
        match io::run(
            &target,
            pattern,
            block,
            threads,
            Some(cfg.time),
            should_stop,
        ) {
            Ok(r) => *out.slot(pattern) = Some(r),
            Err(e) => out.errors.push((pattern, e.to_string())),
        }
    }
    Ok(out)
}

/// Where random reads of an existing file may land: its written data. Holes read as zeros from no
/// device, so too little written data is an error that says so.
fn readable_region(path: &std::path::Path, target: &io::Target) -> Result<io::Extents> {
    let Some(spans) = io::written_extents(&target.file, target.size) else {
        // The filesystem cannot tell holes from data: all of it counts as written.
        return Ok(io::Extents::new(&[(0, target.size)], SMALL_BLOCK as u64));
    };
    let region = io::Extents::new(&spans, SMALL_BLOCK as u64);
    let least = MIN_READ_REGION.min(target.size);
    if region.bytes < least {
        return Err(StorageError::Refused(format!(
            "only {} MiB of the {} MiB of '{}' hold written data (the rest are holes, read from no \
             device); random reads need {} MiB: give a file with more written data",
            region.bytes >> 20,
            target.size >> 20,
            path.display(),
            least >> 20
        )));
    }
    Ok(region)
}

/// Inspects the target and opens it: our own unlinked test file in a directory, else the file
/// or device itself.
fn prepare(cfg: &StorageConfig) -> Result<(TargetInfo, io::Target)> {
    let mut info = target::inspect(&cfg.path, cfg.allow_write)?;
    let target = match info.kind {
        Kind::Directory => {
            let size = directory_size(cfg)?;
            let file = target::create_test_file(&cfg.path)?;
            file.set_len(size)
                .map_err(|e| StorageError::io("cannot size the test file", e))?;
            io::from_file(file, Some(size))?
        }
        Kind::File | Kind::Device => open_existing(cfg, &mut info)?,
    };
    Ok((info, target))
}

/// Warnings about what the figures mean on this target.
fn notes_for(info: &TargetInfo, target: &io::Target) -> Vec<String> {
    let mut notes = Vec::new();
    if !target.direct {
        notes.push("the filesystem does not take O_DIRECT: figures include the page cache".into());
    }
    if matches!(info.fstype.as_deref(), Some("tmpfs" | "ramfs")) {
        notes.push("the target is in memory (tmpfs): this measures memory, not a device".into());
    }
    notes
}

impl StorageResults {
    /// Where a test's result goes.
    fn slot(&mut self, pattern: Pattern) -> &mut Option<IoResult> {
        match pattern {
            Pattern::SequentialWrite => &mut self.sequential_write,
            Pattern::RandomRead => &mut self.random_read,
            Pattern::RandomWrite => &mut self.random_write,
        }
    }
}

/// Opens an existing file or device, for writing when `info` allows it. A device that turns out to
/// be in use is still read; its writes are skipped with the reason.
fn open_existing(cfg: &StorageConfig, info: &mut TargetInfo) -> Result<io::Target> {
    let device = info.kind == Kind::Device;
    let writable = info.no_write.is_none();
    // A device written is laid out first: by default only the first 4 GiB of it.
    let size = match (device && writable, cfg.size_bytes) {
        (true, None) => Some(DEFAULT_MAX),
        (_, size) => size,
    };
    match io::open(&cfg.path, writable, device, size) {
        Err(busy @ StorageError::Busy) => {
            info.no_write = Some(busy.to_string());
            io::open(&cfg.path, false, device, cfg.size_bytes)
        }
        other => other,
    }
}

/// The test file's size in a directory: as asked, else the smaller of 4 GiB and 10 % of the free
/// space; refused below 256 MiB free or when it would not fit.
fn directory_size(cfg: &StorageConfig) -> Result<u64> {
    let free = target::free_bytes(&cfg.path)?;
    if free < MIN_FREE {
        return Err(StorageError::Refused(format!(
            "--storage '{}' has only {} MiB free; the test needs at least {} MiB",
            cfg.path.display(),
            free >> 20,
            MIN_FREE >> 20
        )));
    }
    let size = cfg
        .size_bytes
        .unwrap_or_else(|| DEFAULT_MAX.min(free / 10))
        .max(1 << 20);
    if size > free.saturating_sub(MIN_FREE / 2) {
        return Err(StorageError::Refused(format!(
            "--storage-size {} MiB does not fit in the {} MiB free on '{}'",
            size >> 20,
            free >> 20,
            cfg.path.display()
        )));
    }
    Ok(size / (1 << 20) * (1 << 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(path: PathBuf, allow_write: bool) -> StorageConfig {
        StorageConfig {
            path,
            size_bytes: None,
            time: Duration::from_millis(50),
            allow_write,
            random_threads: 2,
            sequential_threads: 2,
            expect_iops: None,
            expect_mb_s: None,
        }
    }

    #[test]
    fn each_failing_test_is_reported_and_the_others_run() {
        let dir = tempfile::tempdir().unwrap();
        // Under 1 MiB: no whole 1 MiB of it to use, so every test fails on its own.
        let tiny = dir.path().join("tiny");
        std::fs::write(&tiny, vec![1u8; 512 << 10]).unwrap();
        let r = run(&config(tiny, true), &|| false, &|_| {}).unwrap();
        assert_eq!(r.errors.len(), 3, "{:?}", r.errors);
        assert_eq!(r.errors[0].0, Pattern::SequentialWrite);
        assert_eq!(r.errors[1].0, Pattern::RandomRead);
        assert!(r.random_read.is_none());

        let file = dir.path().join("data");
        std::fs::write(&file, vec![1u8; 2 << 20]).unwrap();
        let r = run(&config(file, false), &|| false, &|_| {}).unwrap();
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert!(r.random_read.is_some() && r.sequential_write.is_none());
        assert!(r.writes_skipped.unwrap().contains("--storage-allow-write"));
        assert_eq!(r.read_region, Some(2 << 20), "all of it is written");
    }

    #[test]
    fn reads_of_an_existing_file_land_on_its_data_only() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        // 256 MiB with 8 MiB written: too little to read.
        let sparse = dir.path().join("sparse");
        let f = std::fs::File::create(&sparse).unwrap();
        f.set_len(256 << 20).unwrap();
        f.write_all_at(&vec![7u8; 8 << 20], 100 << 20).unwrap();
        drop(f);
        let r = run(&config(sparse.clone(), false), &|| false, &|_| {}).unwrap();
        assert!(r.random_read.is_none());
        assert!(
            r.errors[0].1.contains("hold written data"),
            "{:?}",
            r.errors
        );
        // 96 MiB written in two places of 512 MiB: reads pick from those 96 MiB only.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&sparse)
            .unwrap();
        f.set_len(512 << 20).unwrap();
        f.write_all_at(&vec![7u8; 88 << 20], 300 << 20).unwrap();
        drop(f);
        let r = run(&config(sparse, false), &|| false, &|_| {}).unwrap();
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.read_region, Some(96 << 20));
        assert!(r.random_read.is_some());
    }

    #[test]
    fn extents_map_blocks_inside_the_data() {
        let e = io::Extents::new(&[(100, 8192), (1 << 20, 4096)], 4096);
        // The first span shrinks to whole blocks: 4096..8192 (one block), then 1 MiB (one block).
        assert_eq!(e.bytes, 8192);
    }

    #[test]
    fn every_run_has_its_own_seed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data");
        std::fs::write(&file, vec![1u8; 2 << 20]).unwrap();
        let a = run(&config(file.clone(), false), &|| false, &|_| {}).unwrap();
        let b = run(&config(file, false), &|| false, &|_| {}).unwrap();
        assert_ne!(a.seed, b.seed);
    }
}
