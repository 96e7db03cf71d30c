//! Whether a file only this user (and root) can change: the history a node is drained on, the
//! Slurm streaks and lock. Another local user who can write the file, or the directory it is in,
//! could forge past runs, plant a lock that stops every run, or read what root records there.
//!
//! The rule is the one the Ansible role holds its work directory to, applied to the directory as
//! it really is (symbolic links on the way resolved: `/home -> /var/home` is fine, and the file
//! is then opened by that real path, so a link changed later cannot redirect it): the directory
//! holding the file is owned by us and writable by no group or other user; every directory above
//! it is owned by root or us and writable by no one else unless it is sticky (like /tmp, where
//! others can add entries but not rename or remove ours). The file itself, when it exists, is a
//! regular file (not a link) with one link, owned by us, that no group or other user can write.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a path cannot be trusted, for people: what is wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Untrusted(pub String);

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The directory `dir` as it really is: absolute, every link resolved.
fn real(dir: &Path) -> Result<PathBuf, Untrusted> {
    std::fs::canonicalize(dir)
        .map_err(|e| Untrusted(format!("cannot look at '{}': {e}", dir.display())))
}

fn owner(uid: u32) -> String {
    if uid == 0 {
        "root".into()
    } else {
        format!("uid {uid}")
    }
}

/// Checks that only we and root can change the directory `dir` (as it really is) and everything
/// above it; returns its real path, to open files by.
pub fn check_dir(dir: &Path) -> Result<PathBuf, Untrusted> {
    let me = euid();
    let dir = real(dir)?;
    let mut chain: Vec<&Path> = dir.ancestors().collect();
    chain.reverse();
    for d in chain {
        let meta = std::fs::symlink_metadata(d)
            .map_err(|e| Untrusted(format!("cannot look at '{}': {e}", d.display())))?;
        let what = if d == dir {
            format!("the directory '{}'", d.display())
        } else {
            format!("'{}' (above '{}')", d.display(), dir.display())
        };
        if !meta.is_dir() {
            return Err(Untrusted(format!("{what} is not a directory")));
        }
        let mode = meta.mode() & 0o7777;
        if d == dir {
            if meta.uid() != me {
                return Err(Untrusted(format!(
                    "{what} is owned by {}, not by us ({}): another user could replace what is in it",
                    owner(meta.uid()),
                    owner(me)
                )));
            }
            if mode & 0o022 != 0 {
                return Err(Untrusted(format!(
                    "{what} is writable by group or others (mode {mode:04o}): another user could \
                     replace what is in it; use a directory only we can write"
                )));
            }
        } else {
            if meta.uid() != me && meta.uid() != 0 {
                return Err(Untrusted(format!(
                    "{what} is owned by {}, neither root nor us ({}): its owner could swap the directory",
                    owner(meta.uid()),
                    owner(me)
                )));
            }
            if mode & 0o022 != 0 && mode & 0o1000 == 0 {
                return Err(Untrusted(format!(
                    "{what} is writable by group or others and not sticky (mode {mode:04o}): \
                     another user could swap the directory"
                )));
            }
        }
    }
    Ok(dir)
}

/// Checks `file`: its directory (which must exist) as [`check_dir`] says, and the file, when it
/// exists, a regular file with one link, owned by us and writable by nobody else. Returns the
/// file's real path, to open it by.
pub fn check_file(file: &Path) -> Result<PathBuf, Untrusted> {
    let name = file
        .file_name()
        .ok_or_else(|| Untrusted(format!("'{}' names no file", file.display())))?;
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let real = check_dir(dir)?.join(name);
    check_existing_file(&real)?;
    Ok(real)
}

/// Checks an existing `file` (a missing one passes): a regular file with one link, owned by us,
/// writable by nobody else.
pub fn check_existing_file(file: &Path) -> Result<(), Untrusted> {
    let meta = match std::fs::symlink_metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Untrusted(format!(
                "cannot look at '{}': {e}",
                file.display()
            )));
        }
    };
    let shown = file.display();
    if meta.file_type().is_symlink() {
        return Err(Untrusted(format!("'{shown}' is a symbolic link")));
    }
    if !meta.is_file() {
        return Err(Untrusted(format!("'{shown}' is not a regular file")));
    }
    let me = euid();
    if meta.uid() != me {
        return Err(Untrusted(format!(
            "'{shown}' is owned by {}, not by us ({}): its owner could forge what it holds; \
             remove it or give another path",
            owner(meta.uid()),
            owner(me)
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(Untrusted(format!(
            "'{shown}' is writable by group or others (mode {mode:04o}): another user could \
             forge what it holds; chmod go-w it"
        )));
    }
    if meta.nlink() != 1 {
        return Err(Untrusted(format!(
            "'{shown}' has {} hard links: another name for it may be writable by others",
            meta.nlink()
        )));
    }
    Ok(())
}

/// A file that steers root (nhc.conf), read once: its bytes, its real path, and whether only
/// root can change it.
#[derive(Debug)]
pub struct RootFile {
    /// What it holds.
    pub bytes: Vec<u8>,
    /// Its real path (links resolved).
    pub real: PathBuf,
    /// Whether only root can change it: `Err` says why not.
    pub root_only: Result<(), Untrusted>,
}

/// Reads `path` once for root: the path resolved, then opened without following a last link
/// and without blocking (a FIFO or a device is refused before anything is read), checked on the
/// descriptor (a regular file of at most `limit` bytes) and read from it. It is root's alone
/// when it and every directory above it are owned by root and writable by no group or other
/// user (OpenSSH's StrictModes rule; a sticky directory such as /tmp may be on the way when the
/// entry in it is root's, since no one else can then rename it), and when the path still names
/// the file read.
pub fn read_root_file(path: &Path, limit: u64) -> Result<RootFile, Untrusted> {
    use std::io::Read;
    let shown = path.display();
    let real = std::fs::canonicalize(path)
        .map_err(|e| Untrusted(format!("cannot read '{shown}': {e}")))?;
    let (file, meta) = match open_inert(&real, false) {
        Ok(opened) => opened,
        Err(Opened::NotRegular) => {
            return Err(Untrusted(format!(
                "'{shown}' is not a regular file (a pipe, a device or a directory): not read"
            )));
        }
        Err(Opened::Io(e)) => return Err(Untrusted(format!("cannot read '{shown}': {e}"))),
    };
    // A file of the kernel's (a process's environment under /proc is root's, 0400, and holds
    // what that process's user gave it) is no configuration, whoever owns it.
    if let Some(kind) = kernel_file_system(&file) {
        return Err(Untrusted(format!(
            "'{shown}' is a file of {kind}, not a configuration: not read"
        )));
    }
    if meta.len() > limit {
        return Err(Untrusted(format!(
            "'{shown}' is {} bytes, more than the {limit} a configuration may be",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Untrusted(format!("cannot read '{shown}': {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(Untrusted(format!(
            "'{shown}' grew past the {limit} bytes a configuration may be while it was read"
        )));
    }
    let root_only = links_root_only(path).and_then(|()| root_only(&real, &meta));
    Ok(RootFile {
        bytes,
        real,
        root_only,
    })
}

/// Why [`open_inert`] opened nothing.
#[derive(Debug)]
pub enum Opened {
    /// Not a regular file: a device, a pipe, a socket or a directory (not opened for reading,
    /// so nothing of it acted: opening some devices does, a watchdog's arms it).
    NotRegular,
    /// The system's answer.
    Io(std::io::Error),
}

/// Opens `path` for reading only if it is a regular file, deciding on the file itself before
/// it is opened for reading: it is first opened as a place (`O_PATH`, which reads nothing and
/// makes no device act), looked at, and then that very file is opened through
/// `/proc/self/fd` (no name is looked up twice, so nothing can be swapped in between).
/// `follow` follows a last symbolic link (NHC's redirections do); never blocks.
pub fn open_inert(path: &Path, follow: bool) -> Result<(std::fs::File, std::fs::Metadata), Opened> {
    use std::os::unix::fs::OpenOptionsExt;
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    #[cfg(target_os = "linux")]
    let (meta, file) = {
        use std::os::fd::AsRawFd;
        let place = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | nofollow | libc::O_CLOEXEC)
            .open(path)
            .map_err(Opened::Io)?;
        let meta = place.metadata().map_err(Opened::Io)?;
        if !meta.is_file() {
            return Err(Opened::NotRegular);
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(format!("/proc/self/fd/{}", place.as_raw_fd()))
            .map_err(Opened::Io)?;
        (meta, file)
    };
    // Elsewhere no `O_PATH`: the name is looked at, then opened (a swap in between is caught
    // below, after the open).
    #[cfg(not(target_os = "linux"))]
    let (meta, file) = {
        let meta = if follow {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        }
        .map_err(Opened::Io)?;
        if !meta.is_file() {
            return Err(Opened::NotRegular);
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nofollow | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(Opened::Io)?;
        (meta, file)
    };
    let opened = file.metadata().map_err(Opened::Io)?;
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Err(Opened::Io(std::io::Error::other(
            "the file changed as it was opened",
        )));
    }
    Ok((file, opened))
}

/// The kernel's own file system `file` is on (/proc, /sys), if any.
#[cfg(not(target_os = "linux"))]
fn kernel_file_system(_: &std::fs::File) -> Option<&'static str> {
    None
}

/// The kernel's own file system `file` is on (/proc, /sys), if any.
#[cfg(target_os = "linux")]
fn kernel_file_system(file: &std::fs::File) -> Option<&'static str> {
    use std::os::fd::AsRawFd;
    const PROC: i64 = 0x9fa0;
    const SYSFS: i64 = 0x6265_6572;
    // SAFETY: an out-parameter the call fills; the descriptor is open.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a valid pointer.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &raw mut st) } != 0 {
        return None;
    }
    match st.f_type as i64 {
        PROC => Some("/proc"),
        SYSFS => Some("/sys"),
        _ => None,
    }
}

/// Whether the path as given, not only as it resolves, is root's alone: every symbolic link on
/// the way is root's and sits in a directory only root can change (sticky ones such as /tmp
/// when the link is root's). A link another user made, or could replace, decides what root
/// reads; [`root_only`] judges the file it led to.
fn links_root_only(path: &Path) -> Result<(), Untrusted> {
    let start = if path.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir().map_err(|e| Untrusted(format!("cannot look at '.': {e}")))?
    };
    // (what is left to walk, hops taken)
    let mut todo: Vec<std::ffi::OsString> = path
        .components()
        .rev()
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    let mut at = start;
    let mut hops = 0;
    while let Some(part) = todo.pop() {
        if part == "/" {
            at = PathBuf::from("/");
            continue;
        }
        if part == "." {
            continue;
        }
        if part == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&part);
        let meta = std::fs::symlink_metadata(&next)
            .map_err(|e| Untrusted(format!("cannot look at '{}': {e}", next.display())))?;
        if meta.file_type().is_symlink() {
            hops += 1;
            if hops > 40 {
                return Err(Untrusted(format!(
                    "'{}' leads through too many symbolic links",
                    path.display()
                )));
            }
            let dir = std::fs::symlink_metadata(&at)
                .map_err(|e| Untrusted(format!("cannot look at '{}': {e}", at.display())))?;
            let dmode = dir.mode() & 0o7777;
            if meta.uid() != 0 {
                return Err(Untrusted(format!(
                    "'{}' is a symbolic link owned by {}, not by root: its owner chooses what \
                     it names",
                    next.display(),
                    owner(meta.uid())
                )));
            }
            if dir.uid() != 0 || (dmode & 0o022 != 0 && dmode & 0o1000 == 0) {
                return Err(Untrusted(format!(
                    "'{}' is a symbolic link in '{}', which others can change (owner {}, mode \
                     {dmode:04o}): another user could make it name another file",
                    next.display(),
                    at.display(),
                    owner(dir.uid())
                )));
            }
            let target = std::fs::read_link(&next)
                .map_err(|e| Untrusted(format!("cannot look at '{}': {e}", next.display())))?;
            todo.extend(
                target
                    .components()
                    .rev()
                    .map(|c| c.as_os_str().to_os_string()),
            );
            continue;
        }
        at = next;
    }
    Ok(())
}

/// Whether only root can change the file opened at `real` (its descriptor's `meta`).
fn root_only(real: &Path, meta: &std::fs::Metadata) -> Result<(), Untrusted> {
    let shown = real.display();
    let mode = meta.mode() & 0o7777;
    if meta.uid() != 0 {
        return Err(Untrusted(format!(
            "'{shown}' is owned by {}, not by root",
            owner(meta.uid())
        )));
    }
    if mode & 0o022 != 0 {
        return Err(Untrusted(format!(
            "'{shown}' is writable by group or others (mode {mode:04o})"
        )));
    }
    let mut below: &Path = real;
    for dir in real.ancestors().skip(1) {
        let d = std::fs::symlink_metadata(dir)
            .map_err(|e| Untrusted(format!("cannot look at '{}': {e}", dir.display())))?;
        let dmode = d.mode() & 0o7777;
        if d.uid() != 0 {
            return Err(Untrusted(format!(
                "'{}' (above '{shown}') is owned by {}, not by root",
                dir.display(),
                owner(d.uid())
            )));
        }
        if dmode & 0o022 != 0 {
            let entry_is_roots = std::fs::symlink_metadata(below).is_ok_and(|m| m.uid() == 0);
            if dmode & 0o1000 == 0 || !entry_is_roots {
                return Err(Untrusted(format!(
                    "'{}' (above '{shown}') is writable by group or others (mode {dmode:04o}): \
                     another user could put another file in its place",
                    dir.display()
                )));
            }
        }
        below = dir;
    }
    // The path still names what was read: nothing was renamed into place meanwhile.
    let now = std::fs::symlink_metadata(real)
        .map_err(|e| Untrusted(format!("cannot look at '{shown}': {e}")))?;
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
        return Err(Untrusted(format!(
            "'{shown}' was replaced while it was read"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_directory_and_our_file_are_trusted() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o700);
        let file = dir.path().join("history.sqlite");
        let real = std::fs::canonicalize(dir.path())
            .unwrap()
            .join("history.sqlite");
        assert_eq!(check_file(&file), Ok(real.clone()), "a file not made yet");
        std::fs::write(&file, "x").unwrap();
        chmod(&file, 0o600);
        assert_eq!(check_file(&file), Ok(real.clone()));
        // Readable by others is their business; writable is not.
        chmod(&file, 0o644);
        assert_eq!(check_file(&file), Ok(real));
        chmod(&file, 0o666);
        let e = check_file(&file).unwrap_err();
        assert!(
            e.0.contains("writable by group or others (mode 0666)"),
            "{e}"
        );
    }

    #[test]
    fn a_directory_others_can_write_or_a_link_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        chmod(&shared, 0o777);
        let e = check_file(&shared.join("h.sqlite")).unwrap_err();
        assert!(e.0.contains("the directory"), "{e}");
        assert!(e.0.contains("mode 0777"), "{e}");
        // Sticky and world-writable (like /tmp) is fine above, not as the file's own directory.
        chmod(&shared, 0o1777);
        assert!(check_file(&shared.join("h.sqlite")).is_err());
        let inner = shared.join("mine");
        std::fs::create_dir(&inner).unwrap();
        chmod(&inner, 0o700);
        assert!(check_file(&inner.join("h.sqlite")).is_ok());
        // Not sticky above: refused.
        chmod(&shared, 0o777);
        let e = check_file(&inner.join("h.sqlite")).unwrap_err();
        assert!(e.0.contains("above"), "{e}");
        // A link on the way is followed and the real path checked (and given back to open):
        // through a link, the shared directory above is still seen.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&inner, &link).unwrap();
        let e = check_file(&link.join("h.sqlite")).unwrap_err();
        assert!(e.0.contains("above"), "{e}");
        chmod(&shared, 0o700);
        let real = check_file(&link.join("h.sqlite")).unwrap();
        assert_eq!(
            real,
            std::fs::canonicalize(&inner).unwrap().join("h.sqlite")
        );
        // The file itself may not be a link.
        let file_link = inner.join("h.sqlite");
        std::os::unix::fs::symlink("/etc/passwd", &file_link).unwrap();
        let e = check_file(&file_link).unwrap_err();
        assert!(e.0.contains("symbolic link"), "{e}");
    }

    /// Why the file at `path` is not root's alone (it must not be).
    fn why_not_roots(path: &Path) -> String {
        read_root_file(path, 1 << 20)
            .unwrap()
            .root_only
            .unwrap_err()
            .0
    }

    #[test]
    fn a_file_that_steers_root_is_read_once_and_judged_on_what_was_opened() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("nhc.conf");
        std::fs::write(&file, "* || check_ps_loadavg 100\n").unwrap();
        chmod(&file, 0o644);
        let read = read_root_file(&file, 1 << 20).unwrap();
        assert_eq!(read.bytes, b"* || check_ps_loadavg 100\n");
        if euid() == 0 {
            // Root's file in a root-owned directory in /tmp (sticky): root's alone.
            chmod(dir.path(), 0o755);
            assert_eq!(read_root_file(&file, 1 << 20).unwrap().root_only, Ok(()));
            chmod(&file, 0o664);
            let e = why_not_roots(&file);
            assert!(e.contains("writable by group or others"), "{e}");
            chmod(&file, 0o644);
            chmod(dir.path(), 0o777);
            let e = why_not_roots(&file);
            assert!(e.contains("another user could put another file"), "{e}");
        } else {
            let e = why_not_roots(&file);
            assert!(e.contains("not by root"), "{e}");
        }
        // Too large, a FIFO, a directory: refused before anything is read (a FIFO never blocks).
        assert!(
            read_root_file(&file, 4)
                .unwrap_err()
                .0
                .contains("more than")
        );
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(
            read_root_file(&fifo, 1 << 20)
                .unwrap_err()
                .0
                .contains("not a regular file")
        );
        assert!(read_root_file(dir.path(), 1 << 20).is_err());
        assert!(read_root_file(Path::new("/dev/zero"), 1 << 20).is_err());
    }

    /// A link another user made, or one in a directory others can change, decides what root
    /// reads: the file it names is not root's alone, however root's that file is. A file of
    /// /proc (a process's environment is root's, 0400, and holds its user's bytes) is no
    /// configuration at all; a device is never opened (opening a watchdog's arms it).
    #[test]
    fn a_link_someone_else_controls_or_a_kernel_file_never_steers_root() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let file = dir.path().join("nhc.conf");
        std::fs::write(&file, "* || check_ps_loadavg 100\n").unwrap();
        chmod(&file, 0o644);
        let link = dir.path().join("link.conf");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        if euid() == 0 {
            // Root's link in a directory only root can change: the file's verdict stands.
            assert_eq!(read_root_file(&link, 1 << 20).unwrap().root_only, Ok(()));
            // The same link made by another user.
            std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
            let e = why_not_roots(&link);
            assert!(e.contains("symbolic link owned by uid 65534"), "{e}");
            // Root's link, in a directory others can write.
            let shared = tempfile::tempdir().unwrap();
            chmod(shared.path(), 0o777);
            let there = shared.path().join("nhc.conf");
            std::os::unix::fs::symlink(&file, &there).unwrap();
            let e = why_not_roots(&there);
            assert!(e.contains("which others can change"), "{e}");
        } else {
            let e = why_not_roots(&link);
            assert!(e.contains("symbolic link owned by"), "{e}");
        }
        let environ = dir.path().join("environ.conf");
        std::os::unix::fs::symlink("/proc/self/environ", &environ).unwrap();
        let e = read_root_file(&environ, 1 << 20).unwrap_err();
        assert!(e.0.contains("a file of /proc"), "{e}");
        let device = dir.path().join("device.conf");
        std::os::unix::fs::symlink("/dev/null", &device).unwrap();
        let e = read_root_file(&device, 1 << 20).unwrap_err();
        assert!(e.0.contains("not a regular file"), "{e}");
        assert!(matches!(open_inert(&device, true), Err(Opened::NotRegular)));
        assert!(open_inert(&link, true).is_ok());
        assert!(matches!(open_inert(&link, false), Err(Opened::NotRegular)));
    }

    #[test]
    fn a_file_with_another_name_is_not() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o700);
        let file = dir.path().join("h.sqlite");
        std::fs::write(&file, "x").unwrap();
        chmod(&file, 0o600);
        std::fs::hard_link(&file, dir.path().join("other")).unwrap();
        let e = check_file(&file).unwrap_err();
        assert!(e.0.contains("2 hard links"), "{e}");
    }
}
