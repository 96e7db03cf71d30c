//! What `--storage PATH` names and whether we may write to it. A directory gets a test file of
//! our own (created exclusively and unlinked at once, so nothing is left even after a kill). An
//! existing file or a block device is only read unless `--storage-allow-write`; a block device
//! that is mounted, used as swap, held by another driver (LVM, RAID), partitioned, or carries a
//! partition table or filesystem signature is never written, flag or not, and while it is written
//! it is held with O_EXCL so nothing can claim it meanwhile.

use super::error::{Result, StorageError};
use super::signature;
use crate::system::mounts::{Mount, mount_of, parse_mountinfo, unescape};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What kind of target `PATH` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory: we make our own test file in it.
    Directory,
    /// An existing regular file.
    File,
    /// A block device.
    Device,
}

/// The target, inspected.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetInfo {
    /// What PATH is.
    pub kind: Kind,
    /// Filesystem type (for files and directories).
    pub fstype: Option<String>,
    /// The block device behind it (`vda`, `nvme0n1p2`).
    pub device: Option<String>,
    /// Whether that device is rotational (a spinning disk).
    pub rotational: Option<bool>,
    /// Why writing is refused, when it is.
    pub no_write: Option<String>,
}

fn sys_block(dev: (u32, u32)) -> PathBuf {
    PathBuf::from(format!("/sys/dev/block/{}:{}", dev.0, dev.1))
}

fn device_name(dev: (u32, u32)) -> Option<String> {
    std::fs::read_link(sys_block(dev))
        .ok()?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
}

fn rotational(dev: (u32, u32)) -> Option<bool> {
    let dir = sys_block(dev);
    // A partition's queue settings live in its parent disk's directory.
    let queue = [
        dir.join("queue/rotational"),
        dir.join("../queue/rotational"),
    ];
    queue
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.trim() == "1")
}

fn split_dev(rdev: u64) -> (u32, u32) {
    crate::os::major_minor(rdev)
}

/// Inspects `path`. `allow_write` only matters for existing files and devices.
pub fn inspect(path: &Path, allow_write: bool) -> Result<TargetInfo> {
    let meta = std::fs::metadata(path)
        .map_err(|e| StorageError::io(format!("--storage '{}'", path.display()), e))?;
    let mounts =
        parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default());
    if meta.file_type().is_block_device() {
        let dev = split_dev(meta.rdev());
        return Ok(TargetInfo {
            kind: Kind::Device,
            fstype: None,
            device: device_name(dev),
            rotational: rotational(dev),
            no_write: device_write_refusal(path, dev, &mounts, allow_write),
        });
    }
    let kind = if meta.is_dir() {
        Kind::Directory
    } else if meta.is_file() {
        Kind::File
    } else {
        return Err(StorageError::Refused(format!(
            "--storage '{}' is neither a directory, a regular file nor a block device",
            path.display()
        )));
    };
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dev = split_dev(meta.dev());
    let no_write = match (kind, allow_write) {
        (Kind::File, false) => Some(
            "it is an existing file; add --storage-allow-write to let the write tests overwrite it"
                .to_string(),
        ),
        _ => None,
    };
    Ok(TargetInfo {
        kind,
        fstype: mount_of(&canonical, &mounts).map(|m| m.fstype.clone()),
        device: device_name(dev),
        rotational: rotational(dev),
        no_write,
    })
}

/// Why a block device must not be written, if it must not.
fn device_write_refusal(
    path: &Path,
    dev: (u32, u32),
    mounts: &[Mount],
    allow_write: bool,
) -> Option<String> {
    if !allow_write {
        return Some(
            "it is a block device; add --storage-allow-write to let the write tests overwrite it"
                .into(),
        );
    }
    if let Some(m) = mounts.iter().find(|m| names_device(m, path, dev)) {
        return Some(format!(
            "it is mounted on {} ({})",
            m.mount_point.display(),
            m.fstype
        ));
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    if swap_devices(&swaps)
        .iter()
        .any(|s| same_device(Path::new(s), path, dev))
    {
        return Some("it is in use as swap".into());
    }
    let sys = sys_block(dev);
    if std::fs::read_dir(sys.join("holders")).is_ok_and(|mut d| d.next().is_some()) {
        return Some("another driver holds it (LVM, RAID or device-mapper)".into());
    }
    let partitioned = std::fs::read_dir(&sys)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.path().join("partition").exists())
        })
        .unwrap_or(false);
    if partitioned {
        return Some("it has partitions".into());
    }
    let mut head = vec![0u8; signature::PROBE_BYTES];
    let read = std::fs::File::open(path).and_then(|f| {
        use std::os::unix::fs::FileExt;
        f.read_at(&mut head, 0)
    });
    match read {
        Ok(n) => signature::detect(&head[..n]).map(|what| format!("it holds {what}")),
        Err(e) => Some(format!(
            "its first bytes cannot be read to check for a filesystem: {e}"
        )),
    }
}

/// Whether mount `m` is of the device `path` (numbers `dev`). Filesystems on a device report its
/// numbers; the source may also name it through a symlink (/dev/mapper, /dev/disk/by-uuid).
fn names_device(m: &Mount, path: &Path, dev: (u32, u32)) -> bool {
    m.dev == dev || same_device(Path::new(&m.source), path, dev)
}

/// Whether `other` is the device `path` (numbers `dev`), following symlinks.
fn same_device(other: &Path, path: &Path, dev: (u32, u32)) -> bool {
    if !other.is_absolute() {
        return false;
    }
    if let Ok(meta) = std::fs::metadata(other) {
        if meta.file_type().is_block_device() && split_dev(meta.rdev()) == dev {
            return true;
        }
    }
    match (std::fs::canonicalize(other), std::fs::canonicalize(path)) {
        (Ok(a), Ok(b)) => a == b,
        _ => other == path,
    }
}

/// The paths in /proc/swaps (first column, after the header).
pub fn swap_devices(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(unescape)
        .collect()
}

/// Free bytes of the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> Result<u64> {
    let s = nix::sys::statvfs::statvfs(dir)
        .map_err(|e| StorageError::io(format!("statvfs '{}'", dir.display()), e.into()))?;
    Ok(s.blocks_available() as u64 * s.fragment_size() as u64)
}

/// Creates our test file in `dir` (exclusively: an existing file is never reused) and unlinks it
/// at once, so it vanishes when the descriptor closes, even if the process is killed.
pub fn create_test_file(dir: &Path) -> Result<std::fs::File> {
    let path = dir.join(format!("health_check-storage-{}.tmp", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| {
            StorageError::io(
                format!("cannot create the test file '{}'", path.display()),
                e,
            )
        })?;
    std::fs::remove_file(&path).map_err(|e| {
        StorageError::io(
            format!(
                "cannot unlink the test file '{}' (remove it by hand)",
                path.display()
            ),
            e,
        )
    })?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_devices_are_listed() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
            /dev/vdb2                               partition\t8388604\t\t0\t\t-2\n\
            /swap\\040file                            file\t\t1048572\t\t0\t\t-3\n";
        assert_eq!(swap_devices(text), vec!["/dev/vdb2", "/swap file"]);
        assert!(swap_devices("").is_empty());
    }

    #[test]
    fn mount_sources_match_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, b"").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let m = Mount {
            dev: (0, 99),
            mount_point: PathBuf::from("/mnt"),
            fstype: "ext4".into(),
            source: link.to_string_lossy().into_owned(),
            root: PathBuf::from("/"),
            options: "rw".into(),
        };
        assert!(names_device(&m, &real, (7, 0)));
        assert!(!names_device(&m, &dir.path().join("other"), (7, 0)));
        let tmpfs = Mount {
            source: "tmpfs".into(),
            ..m.clone()
        };
        assert!(!names_device(&tmpfs, Path::new("tmpfs"), (7, 0)));
        assert!(names_device(&tmpfs, &real, (0, 99)), "same numbers");
    }

    #[test]
    fn test_files_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let file = create_test_file(dir.path()).unwrap();
        file.set_len(1 << 20).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "unlinked while still open"
        );
        let name = format!("health_check-storage-{}.tmp", std::process::id());
        std::fs::write(dir.path().join(&name), b"theirs").unwrap();
        assert!(
            create_test_file(dir.path()).is_err(),
            "never reuses an existing file"
        );
        assert_eq!(std::fs::read(dir.path().join(name)).unwrap(), b"theirs");
    }

    #[test]
    fn existing_files_are_read_only_without_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data");
        std::fs::write(&file, b"x").unwrap();
        assert!(inspect(&file, false).unwrap().no_write.is_some());
        assert!(inspect(&file, true).unwrap().no_write.is_none());
        assert_eq!(inspect(dir.path(), false).unwrap().kind, Kind::Directory);
        assert!(
            inspect(Path::new("/dev/null"), true).is_err(),
            "a character device is not a target"
        );
        assert!(
            inspect(Path::new("/nonexistent"), false)
                .unwrap_err()
                .to_string()
                .contains("--storage '/nonexistent'")
        );
    }
}
