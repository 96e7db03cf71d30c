//! The I/O loops, fio's sync engine by hand: each thread issues one blocking pread/pwrite at a
//! time (iodepth 1) on the shared file, through O_DIRECT where the filesystem honours it, from a
//! page-aligned buffer, and times every call into a latency histogram.

use super::error::{Result, StorageError};
use super::histogram::Histogram;
use crate::rng::Rng;
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
    /// Seeds the offsets and the data written: new each run, recorded in the document, so a
    /// deduplicating or compressing back end never sees the same data twice.
    pub seed: u64,
    /// Where random reads may land, when not everywhere: the written data of an existing file
    /// (holes are answered without touching the device).
    pub readable: Option<Extents>,
}

/// Byte ranges holding written data, for random reads to pick from uniformly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extents {
    /// (first byte, bytes), in order.
    spans: Vec<(u64, u64)>,
    /// Bytes in all spans.
    pub bytes: u64,
}

impl Extents {
    /// The spans, block-aligned inwards so no read straddles a hole.
    pub fn new(spans: &[(u64, u64)], block: u64) -> Extents {
        let spans: Vec<(u64, u64)> = spans
            .iter()
            .filter_map(|&(start, len)| {
                let first = start.div_ceil(block) * block;
                let end = (start + len) / block * block;
                (end > first).then_some((first, end - first))
            })
            .collect();
        let bytes = spans.iter().map(|s| s.1).sum();
        Extents { spans, bytes }
    }

    /// The `n`th block (of `block` bytes, counted over the spans) as a byte offset.
    fn offset(&self, mut n: u64, block: u64) -> u64 {
        for &(start, len) in &self.spans {
            let blocks = len / block;
            if n < blocks {
                return start + n * block;
            }
            n -= blocks;
        }
        0
    }
}

/// The written ranges of `file` within `size` bytes (SEEK_DATA / SEEK_HOLE); `None` where the
/// filesystem cannot tell (then all of it counts as written).
pub fn written_extents(file: &File, size: u64) -> Option<Vec<(u64, u64)>> {
    #[cfg(target_os = "linux")]
    {
        use nix::unistd::{Whence, lseek};
        let end = i64::try_from(size).ok()?;
        let mut spans = Vec::new();
        let mut at = 0i64;
        while at < end {
            let data = match lseek(file, at, Whence::SeekData) {
                Ok(d) => d,
                Err(nix::errno::Errno::ENXIO) => break,
                Err(_) => return None,
            };
            if data >= end {
                break;
            }
            let hole = lseek(file, data, Whence::SeekHole).ok()?.min(end);
            spans.push((data as u64, (hole - data) as u64));
            at = hole;
        }
        Some(spans)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, size);
        None
    }
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
    Ok(Target {
        file,
        direct,
        size,
        seed: 0,
        readable: None,
    })
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
    /// Every test, in the order the section runs them.
    pub const ALL: [Pattern; 3] = [
        Pattern::SequentialWrite,
        Pattern::RandomRead,
        Pattern::RandomWrite,
    ];

    /// The block size the section tests it with.
    pub fn block(self) -> usize {
        match self {
            Pattern::SequentialWrite => super::LARGE_BLOCK,
            Pattern::RandomRead | Pattern::RandomWrite => super::SMALL_BLOCK,
        }
    }

    /// The test's name with its block size, for people: `4 KiB random reads`.
    pub fn label(self) -> String {
        format!(
            "{} {}",
            crate::units::format_binary_size(self.block() as u64),
            self.name()
        )
    }

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

/// A zeroed buffer that starts on a 4 KiB boundary, as O_DIRECT needs: a vector one page
/// larger than asked, used from its first aligned byte (no unsafe code, no mmap).
struct AlignedBuf {
    bytes: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    const ALIGN: usize = 4096;

    fn zeroed(len: usize) -> AlignedBuf {
        let bytes = vec![0u8; len + Self::ALIGN];
        let start = bytes.as_ptr().align_offset(Self::ALIGN);
        AlignedBuf { bytes, start, len }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + self.len]
    }
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
    // Each I/O thread gets its own descriptor table, as each of fio's job processes has: a
    // call on a descriptor of a table only one thread uses takes no reference on the file,
    // where a shared table costs an atomic on the one file every call, its cache line bounced
    // between every CPU the threads run on (a cost that grows with the CPUs). Best effort.
    #[cfg(target_os = "linux")]
    let _ = nix::sched::unshare(nix::sched::CloneFlags::CLONE_FILES);
    let mut buf = AlignedBuf::zeroed(block.max(4096));
    let mut rng = Rng::new(target.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    for chunk in buf.as_mut_slice().chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_ne_bytes()[..chunk.len()]);
    }
    let blocks = target.size / block as u64;
    let readable = target
        .readable
        .as_ref()
        .filter(|_| pattern == Pattern::RandomRead);
    let read_blocks = readable.map_or(blocks, |r| r.bytes / block as u64);
    if read_blocks == 0 {
        return Err(StorageError::Refused(
            "no written data to read: every block is a hole".into(),
        ));
    }
    let mut latency = Histogram::default();
    let (mut ops, mut next) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        let offset = match pattern {
            Pattern::SequentialWrite => (share.0 + next % share.1.max(1)) * block as u64,
            Pattern::RandomRead => {
                let n = rng.below(read_blocks as usize) as u64;
                readable.map_or(n * block as u64, |r| r.offset(n, block as u64))
            }
            Pattern::RandomWrite => rng.below(blocks as usize) as u64 * block as u64,
        };
        if pattern != Pattern::RandomRead {
            // Fresh random bytes in every 4 KiB of every write: no block repeats, so a
            // deduplicating back end has nothing to fold and a compressing one nothing to shrink.
            let data = buf.as_mut_slice();
            for at in (0..block).step_by(4096) {
                data[at..at + 8].copy_from_slice(&rng.next_u64().to_ne_bytes());
            }
        }
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
    fn extent_offsets_stay_inside_the_written_spans() {
        let e = Extents::new(&[(100, 8192), (1 << 20, 8192)], 4096);
        assert_eq!(e.bytes, 4096 + 8192);
        assert_eq!(e.offset(0, 4096), 4096);
        assert_eq!(e.offset(1, 4096), 1 << 20);
        assert_eq!(e.offset(2, 4096), (1 << 20) + 4096);
    }

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
