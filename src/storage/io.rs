//! The I/O loops, fio's sync engine by hand: each thread issues one blocking pread/pwrite at a
//! time (iodepth 1) on the shared file, through O_DIRECT where the filesystem honours it, from a
//! page-aligned buffer, and times every call into a latency histogram.

use super::error::{Result, StorageError};
use super::histogram::Histogram;
use crate::memory::buffer::{Pages, Region};
use crate::memory::chase::Rng;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// An open target.
pub struct Target {
    /// The file or device.
    pub file: File,
    /// Whether O_DIRECT is in effect.
    pub direct: bool,
    /// Usable bytes (a whole number of MiB).
    pub size: u64,
}

/// Opens an existing file or device for reading (and writing when `write`; a device written is
/// claimed exclusively, so the open fails while anything else uses it). `size` limits the bytes
/// used (None: the whole file or device). A device in use answers [`StorageError::Busy`].
pub fn open(path: &Path, write: bool, device: bool, size: Option<u64>) -> Result<Target> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(write);
    if write && device {
        opts.custom_flags(crate::os::exclusive_device_flags());
    }
    let file = opts.open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::EBUSY) if write => StorageError::Busy,
        _ => StorageError::io(format!("cannot open '{}'", path.display()), e),
    })?;
    from_file(file, size).map_err(|e| match e {
        StorageError::Io { what, cause } => {
            StorageError::io(format!("'{}': {what}", path.display()), cause)
        }
        other => other,
    })
}

/// Takes an open file as the target, turning on O_DIRECT where the filesystem takes it.
pub fn from_file(file: File, size: Option<u64>) -> Result<Target> {
    let direct = crate::os::enable_direct_io(&file)
        .map_err(|e| StorageError::io("cannot set O_DIRECT", e))?;
    let length = {
        use std::io::{Seek, SeekFrom};
        (&file)
            .seek(SeekFrom::End(0))
            .map_err(|e| StorageError::io("cannot find its size", e))?
    };
    let size = size.map_or(length, |s| s.min(length)) / (1 << 20) * (1 << 20);
    Ok(Target { file, direct, size })
}

/// What an I/O loop does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Each thread writes its own share of the file in order, wrapping.
    SequentialWrite,
    /// Random block-aligned reads anywhere in the file.
    RandomRead,
    /// Random block-aligned writes anywhere in the file.
    RandomWrite,
}

impl Pattern {
    /// The test's name for people.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::SequentialWrite => "sequential writes",
            Pattern::RandomRead => "random reads",
            Pattern::RandomWrite => "random writes",
        }
    }
}

/// What a test did, all threads together.
#[derive(Debug, Clone, PartialEq)]
pub struct IoResult {
    /// I/O calls completed.
    pub ops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// The longest thread time.
    pub elapsed: Duration,
    /// Completion latency of every call, ns.
    pub latency: Histogram,
}

impl IoResult {
    /// Operations per second.
    pub fn iops(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// MB/s (10^6 bytes per second, as fio and data sheets count).
    pub fn mb_s(&self) -> f64 {
        self.bytes as f64 / self.elapsed.as_secs_f64().max(1e-9) / 1e6
    }
}

/// Runs `pattern` with `block`-byte calls on `threads` threads for `duration` (or, with `None`,
/// one pass over each thread's share: the layout). A stop request ends it early.
pub fn run(
    target: &Target,
    pattern: Pattern,
    block: usize,
    threads: usize,
    duration: Option<Duration>,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<IoResult> {
    let blocks = target.size / block as u64;
    if blocks == 0 {
        return Err(StorageError::Refused(format!(
            "the target is smaller than one {block}-byte block"
        )));
    }
    let threads = threads.clamp(1, blocks as usize);
    let results: Vec<Result<(u64, Duration, Histogram)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                s.spawn(move || {
                    let share = (blocks / threads as u64 * i as u64, blocks / threads as u64);
                    worker(target, pattern, block, i, share, duration, should_stop)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(StorageError::Panicked)))
            .collect()
    });
    let mut total = IoResult {
        ops: 0,
        bytes: 0,
        elapsed: Duration::ZERO,
        latency: Histogram::default(),
    };
    for r in results {
        let (ops, elapsed, latency) = r?;
        total.ops += ops;
        total.bytes += ops * block as u64;
        total.elapsed = total.elapsed.max(elapsed);
        total.latency.merge(&latency);
    }
    Ok(total)
}

/// One thread's loop. `share` = (first block, blocks) of its own region for sequential writes.
fn worker(
    target: &Target,
    pattern: Pattern,
    block: usize,
    index: usize,
    share: (u64, u64),
    duration: Option<Duration>,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<(u64, Duration, Histogram)> {
    let mut buf = Region::map(block.max(4096), Pages::Default, None)
        .map_err(|e| StorageError::io("I/O buffer", e))?;
    let mut rng = Rng::new(0x5eed ^ index as u64);
    for chunk in buf.as_mut_slice().chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_ne_bytes()[..chunk.len()]);
    }
    let blocks = target.size / block as u64;
    let mut latency = Histogram::default();
    let (mut ops, mut next) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        let offset = match pattern {
            Pattern::SequentialWrite => (share.0 + next % share.1.max(1)) * block as u64,
            Pattern::RandomRead | Pattern::RandomWrite => {
                rng.below(blocks as usize) as u64 * block as u64
            }
        };
        let t = Instant::now();
        let io = match pattern {
            Pattern::RandomRead => target
                .file
                .read_exact_at(&mut buf.as_mut_slice()[..block], offset),
            _ => target.file.write_all_at(&buf.as_slice()[..block], offset),
        };
        io.map_err(|e| StorageError::io(format!("{pattern:?} at byte {offset}"), e))?;
        latency.record(t.elapsed().as_nanos() as u64);
        ops += 1;
        next += 1;
        let done = match duration {
            Some(d) => start.elapsed() >= d,
            None => next >= share.1,
        };
        // One atomic load per call: a stop lands within one I/O even on a slow disk.
        if done || should_stop() {
            return Ok((ops, start.elapsed(), latency));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_file_is_laid_out_then_read_and_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 4 << 20]).unwrap();
        let t = open(&path, true, false, None).unwrap();
        assert_eq!(t.size, 4 << 20);
        let layout = run(&t, Pattern::SequentialWrite, 1 << 20, 4, None, &|| false).unwrap();
        assert_eq!(
            layout.ops, 4,
            "one pass: each of 4 threads writes its 1 MiB once"
        );
        let reads = run(
            &t,
            Pattern::RandomRead,
            4096,
            4,
            Some(Duration::from_millis(50)),
            &|| false,
        )
        .unwrap();
        assert!(reads.ops > 0 && reads.iops() > 0.0);
        assert_eq!(reads.latency.count(), reads.ops);
        let writes = run(
            &t,
            Pattern::RandomWrite,
            4096,
            2,
            Some(Duration::from_millis(50)),
            &|| false,
        )
        .unwrap();
        assert!(writes.mb_s() > 0.0);
    }
}
