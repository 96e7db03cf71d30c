//! The `--daemon` responder's pid file, made so that nobody else can turn it against us. The
//! responder often runs as root, and the old default (`$TMPDIR/health_check-responder-PORT.pid`,
//! written through whatever stood there) let any local user plant a symlink and have root
//! overwrite the file it points at. So:
//!
//! - the default lives in a runtime directory only we can write: `/run/health_check` as root,
//!   `$XDG_RUNTIME_DIR/health_check` otherwise, else `/tmp/health_check-<uid>`
//!   (`HEALTH_CHECK_RUNTIME_DIR` overrides, for tests and packagers); an existing directory must
//!   be ours and writable by nobody else, or we refuse;
//! - the file is created with `O_CREAT|O_EXCL|O_NOFOLLOW`, so it is never opened through a link
//!   and never truncates anything; it is created before the fork, so a refusal stops the
//!   responder from starting instead of leaving a daemon nobody can find;
//! - an existing file is replaced only when it is our own stale pid file: a regular file with one
//!   link, owned by us, holding nothing or a pid whose process is gone (or is not health_check).
//!   Anything else is named and left alone.

use crate::os::euid;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Overrides the runtime directory (tests, packagers).
pub const RUNTIME_DIR_ENV: &str = "HEALTH_CHECK_RUNTIME_DIR";

/// Why a pid file could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PidFileError {
    /// An OS call failed.
    #[error("pid file '{path}': {what}: {cause}")]
    Io {
        /// The file or directory.
        path: String,
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        cause: std::io::Error,
    },
    /// What stands at the path is not ours to replace.
    #[error("pid file '{path}' {why}; remove it or give another --pid-file")]
    Refused {
        /// The file or directory.
        path: String,
        /// What it is.
        why: String,
    },
    /// A responder recorded in it still runs.
    #[error(
        "pid file '{path}' belongs to a responder that still runs (pid {pid}); stop it ('kill {pid}') or use another --port"
    )]
    Running {
        /// The file.
        path: String,
        /// The running process.
        pid: u32,
    },
}

/// The runtime directory the default pid file goes in (not created here).
pub fn runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(RUNTIME_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if euid() == 0 {
        return PathBuf::from("/run/health_check");
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("health_check"),
        None => PathBuf::from(format!("/tmp/health_check-{}", euid())),
    }
}

/// The default pid file of a responder on `port`.
pub fn default_path(port: u16) -> PathBuf {
    runtime_dir().join(format!("responder-{port}.pid"))
}

/// Makes `dir` (mode 0700) if it is missing; an existing one must be a real directory, ours,
/// and writable by nobody else.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PidFileError> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(cause) => {
            return Err(PidFileError::Io {
                path: dir.display().to_string(),
                what: "cannot create its directory",
                cause,
            });
        }
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|cause| PidFileError::Io {
        path: dir.display().to_string(),
        what: "cannot look at its directory",
        cause,
    })?;
    let refuse = |why: String| PidFileError::Refused {
        path: dir.display().to_string(),
        why,
    };
    if !meta.file_type().is_dir() {
        return Err(refuse("is not a directory (a symbolic link?)".into()));
    }
    if meta.uid() != euid() {
        return Err(refuse(format!(
            "is a directory owned by uid {}, not by us (uid {})",
            meta.uid(),
            euid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "is a directory others can write to (mode {:o})",
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// A pid file we created, locked (`flock`) for as long as a copy of its descriptor is open:
/// the daemon keeps one for its whole life, so a file that is locked belongs to a responder that
/// is starting or running, even before its pid is written.
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
    file: File,
}

/// Holds an exclusive lock on a pid file's directory while a pid file is made in it, so two
/// responders started together cannot both find the other's new, still empty file stale (the
/// lock goes with the descriptor, closed when this is dropped). `None` where the file system
/// cannot lock a directory (NFS turns `flock` into a byte-range lock, which needs a file open
/// for writing): the pid file's own lock still tells a running responder's file from a stale one.
struct DirLock(#[allow(dead_code)] Option<File>);

fn lock_dir(path: &Path) -> Result<DirLock, PidFileError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let io = |cause| PidFileError::Io {
        path: dir.display().to_string(),
        what: "cannot lock its directory",
        cause,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map_err(io)?;
    // Held for microseconds by a responder starting; another user holding it longer must not
    // hang the start.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match crate::os::try_lock_exclusive(&file) {
            Ok(true) => return Ok(DirLock(Some(file))),
            Ok(false) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Ok(false) => {
                return Err(io(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another process holds its lock",
                )));
            }
            Err(_) => return Ok(DirLock(None)),
        }
    }
}

/// Whether another open description holds the lock of the file at `path` (ours is released
/// when the descriptor opened here closes).
fn locked_by_another(path: &Path) -> bool {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .is_ok_and(|f| matches!(crate::os::try_lock_exclusive(&f), Ok(false)))
}

impl PidFile {
    /// Creates `path` exclusively and locks it, replacing only our own stale pid file.
    pub fn create(path: &Path) -> Result<PidFile, PidFileError> {
        let _dir = lock_dir(path)?;
        for _ in 0..2 {
            match open_new(path) {
                Ok(file) => {
                    // New and made under the directory's lock: nobody else can hold it.
                    crate::os::try_lock_exclusive(&file).map_err(|cause| PidFileError::Io {
                        path: path.display().to_string(),
                        what: "cannot lock it",
                        cause,
                    })?;
                    return Ok(PidFile {
                        path: path.to_path_buf(),
                        file,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    remove_stale(path)?;
                }
                Err(cause) => {
                    return Err(PidFileError::Io {
                        path: path.display().to_string(),
                        what: "cannot create it",
                        cause,
                    });
                }
            }
        }
        Err(PidFileError::Refused {
            path: path.display().to_string(),
            why: "keeps coming back while we replace it (another process races us)".into(),
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records `pid` and closes this copy of the file (the daemon's copy keeps the lock).
    pub fn write_pid(mut self, pid: u32) -> Result<(), PidFileError> {
        self.file
            .write_all(format!("{pid}\n").as_bytes())
            .and_then(|()| self.file.sync_all())
            .map_err(|cause| PidFileError::Io {
                path: self.path.display().to_string(),
                what: "cannot write it",
                cause,
            })
    }
}

fn open_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// What a pid file holds: `None` when empty, `Some(pid)` for one decimal pid and a newline.
fn read_pid(path: &Path) -> std::io::Result<Result<Option<u32>, ()>> {
    let mut text = String::new();
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?
        .take(32)
        .read_to_string(&mut text)?;
    let t = text.trim_end_matches('\n');
    if t.is_empty() {
        return Ok(Ok(None));
    }
    Ok(t.parse::<u32>().map(Some).map_err(|_| ()))
}

/// Whether `pid` is a live health_check process (a recycled pid of another program is not).
fn is_running_responder(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let comm = stat.split_once('(')?.1.rsplit_once(')')?;
            let state = comm.1.split_whitespace().next()?;
            Some(comm.0 == "health_check" && state != "Z")
        })
        .unwrap_or(false)
}

/// Removes `path` when it is our own stale pid file; anything else is refused with the reason.
fn remove_stale(path: &Path) -> Result<(), PidFileError> {
    let shown = path.display().to_string();
    let refuse = |why: String| PidFileError::Refused {
        path: shown.clone(),
        why,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(cause) => {
            return Err(PidFileError::Io {
                path: shown.clone(),
                what: "cannot look at it",
                cause,
            });
        }
    };
    if meta.file_type().is_symlink() {
        return Err(refuse("is a symbolic link".into()));
    }
    if !meta.file_type().is_file() {
        return Err(refuse("exists and is not a regular file".into()));
    }
    if meta.uid() != euid() {
        return Err(refuse(format!(
            "exists and is owned by uid {}, not by us (uid {})",
            meta.uid(),
            euid()
        )));
    }
    if meta.nlink() != 1 {
        return Err(refuse(format!(
            "exists with {} hard links: it is not a pid file of ours",
            meta.nlink()
        )));
    }
    match read_pid(path) {
        Ok(Ok(Some(pid))) if is_running_responder(pid) => {
            return Err(PidFileError::Running { path: shown, pid });
        }
        Ok(Ok(_)) => {}
        Ok(Err(())) => return Err(refuse("exists and does not hold a pid".into())),
        Err(cause) => {
            return Err(PidFileError::Io {
                path: shown,
                what: "cannot read it",
                cause,
            });
        }
    }
    // Empty, or a pid that is gone: stale, unless a responder holds it (one starting has not
    // written its pid yet).
    if locked_by_another(path) {
        return Err(refuse(
            "is held by a responder that is starting or running (it is locked)".into(),
        ));
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(cause) => Err(PidFileError::Io {
            path: shown,
            what: "cannot remove the stale file",
            cause,
        }),
    }
}

/// Removes `path` if it still records `pid` and is ours (a daemon's last act).
pub fn remove_if_ours(path: &Path, pid: u32) {
    let ours = std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_file() && m.uid() == euid() && m.nlink() == 1)
        && matches!(read_pid(path), Ok(Ok(Some(p))) if p == pid);
    if ours {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_symlink_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me\n").unwrap();
        let link = dir.path().join("responder-5301.pid");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = PidFile::create(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
        // A dangling link is refused too (O_EXCL|O_NOFOLLOW would otherwise create its target).
        let dangling = dir.path().join("dangling.pid");
        std::os::unix::fs::symlink(dir.path().join("made-by-root"), &dangling).unwrap();
        assert!(PidFile::create(&dangling).is_err());
        assert!(!dir.path().join("made-by-root").exists());
    }

    #[test]
    fn only_our_own_stale_pid_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.pid");
        // A pid no process has (pid_max is at most 2^22).
        std::fs::write(&path, "4194305\n").unwrap();
        PidFile::create(&path).unwrap().write_pid(42).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "42\n");
        // Not a pid: somebody's file, refused and kept.
        let other = dir.path().join("notes.pid");
        std::fs::write(&other, "my notes\n").unwrap();
        assert!(
            PidFile::create(&other)
                .unwrap_err()
                .to_string()
                .contains("does not hold a pid")
        );
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "my notes\n");
        // A hard link to another file is refused.
        let linked = dir.path().join("linked.pid");
        std::fs::hard_link(&other, &linked).unwrap();
        assert!(
            PidFile::create(&linked)
                .unwrap_err()
                .to_string()
                .contains("hard links")
        );
        // A live process that is not health_check (this test) holds a recycled pid: replaced.
        let recycled = dir.path().join("recycled.pid");
        std::fs::write(&recycled, format!("{}\n", std::process::id())).unwrap();
        PidFile::create(&recycled).unwrap();
    }

    #[test]
    fn removal_checks_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.pid");
        PidFile::create(&path).unwrap().write_pid(7).unwrap();
        remove_if_ours(&path, 8);
        assert!(path.exists());
        remove_if_ours(&path, 7);
        assert!(!path.exists());
    }

    #[test]
    fn the_runtime_directory_must_be_private() {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("rt");
        ensure_private_dir(&private).unwrap();
        assert_eq!(
            std::fs::metadata(&private).unwrap().permissions().mode() & 0o777,
            0o700
        );
        ensure_private_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = ensure_private_dir(&private).unwrap_err();
        assert!(err.to_string().contains("others can write"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert!(ensure_private_dir(&link).is_err());
    }
}
