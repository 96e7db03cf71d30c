//! Turning the document into text: JSON for stdout and `--output` (ASCII only, one line unless
//! stdout is a terminal), the benchpress envelope, and the human summary for stderr.
//!
//! ASCII-only output matters under benchpress: it splits stdout with Python's `str.splitlines()`,
//! which also breaks lines at U+0085, U+2028 and U+2029; escaped, those cannot cut the document.

pub mod envelope;
pub mod export;
pub mod fleet_table;
pub mod html;
pub mod junit;
pub mod npd;
pub mod progress;
pub mod prometheus;
pub mod summary;
pub mod text;
pub mod trends;

use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Serialises `value` as JSON, pretty when asked, with every non-ASCII character escaped.
pub fn render<T: Serialize>(value: &T, pretty: bool) -> Result<String, serde_json::Error> {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }?;
    Ok(ascii_escape(text))
}

/// Escapes non-ASCII characters as `\uXXXX` (surrogate pairs above U+FFFF). serde_json only emits
/// non-ASCII inside strings, so escaping the whole text keeps it valid JSON with the same value.
pub fn ascii_escape(json: String) -> String {
    if json.is_ascii() {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    out
}

/// Why `--output` could not be written. The path is in every message.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// An OS call failed.
    #[error("writing --output '{path}': {what}: {cause}")]
    Io {
        /// The target.
        path: String,
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        cause: std::io::Error,
    },
    /// The target is something a document must not go to.
    #[error("--output '{path}' {why}")]
    Refused {
        /// The target.
        path: String,
        /// What it is and what to do.
        why: &'static str,
    },
}

fn io_error<'a>(
    path: &'a Path,
    what: &'static str,
) -> impl FnOnce(std::io::Error) -> OutputError + 'a {
    move |cause| OutputError::Io {
        path: path.display().to_string(),
        what,
        cause,
    }
}

/// Writes `text` (and a final newline) to `path` so that no reader and no attacker can get in
/// the way:
/// - a regular file (or none yet) is replaced atomically: the text goes to a temporary file with
///   a random name, created exclusively (never through a symlink) with mode 0600 in the target's
///   directory, is flushed to disk, takes the old file's mode (or the umask's), and is renamed
///   over the target, so a collector never reads half a document and a planted symlink is
///   replaced, never written through;
/// - a FIFO or character device (`/dev/null`, `/dev/stdout`) is written into directly and stays
///   what it is, when it is ours or root's (another user's would hand them the document); a
///   FIFO nobody reads is an error, not a hang;
/// - a block device, socket or directory is refused.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), OutputError> {
    use std::os::unix::fs::FileTypeExt;
    let refused = |why| OutputError::Refused {
        path: path.display().to_string(),
        why,
    };
    // What the path names once symlinks are followed: a symlink to a regular file is replaced;
    // a device or FIFO is written into only when named itself (a planted symlink to a device
    // must not make root write into it).
    let through_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match std::fs::metadata(path) {
        Ok(meta) => {
            let kind = meta.file_type();
            if kind.is_dir() {
                return Err(refused("is a directory: give a file name"));
            }
            if kind.is_block_device() {
                return Err(refused(
                    "is a block device: a document would overwrite its data; give a file name",
                ));
            }
            if kind.is_socket() {
                return Err(refused("is a socket: give a file name"));
            }
            if kind.is_fifo() || kind.is_char_device() {
                if through_link && !is_standard_stream(path) {
                    return Err(refused(
                        "is a symbolic link to a device or FIFO: name the device itself",
                    ));
                }
                // One another user made (a FIFO planted in /tmp under the name root writes to,
                // their terminal) would hand them the document.
                use std::os::unix::fs::MetadataExt;
                let mine = meta.uid() == crate::os::euid() || meta.uid() == 0;
                if !mine && !is_standard_stream(path) {
                    return Err(refused(
                        "is a FIFO or device another user owns: they would read the document; \
                         give a file name",
                    ));
                }
                return write_in_place(path, text);
            }
            // A regular file of ours keeps its mode (less set-id bits and world write); one
            // another user planted, or a symlink, gets the umask's.
            let own = std::fs::symlink_metadata(path).ok().filter(|m| {
                use std::os::unix::fs::MetadataExt;
                m.file_type().is_file() && m.uid() == crate::os::euid()
            });
            replace(
                path,
                text,
                own.map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o775),
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => replace(path, text, None),
        Err(e) => Err(io_error(path, "cannot look at it")(e)),
    }
}

/// Replaces the regular file `path` (or creates it) atomically with `text`, mode 0600 whatever
/// the umask: state only its owner may change (`trust` refuses a file others can write).
pub fn write_private(path: &Path, text: &str) -> Result<(), OutputError> {
    replace(path, text, Some(0o600))
}

/// `/dev/stdout`, `/dev/stderr` and `/dev/fd/N`: symlinks by nature, naming our own streams.
fn is_standard_stream(path: &Path) -> bool {
    path.starts_with("/dev/fd")
        || path == Path::new("/dev/stdout")
        || path == Path::new("/dev/stderr")
}

/// Writes into a FIFO or character device as it is.
fn write_in_place(path: &Path, text: &str) -> Result<(), OutputError> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO that nobody reads fails at once (ENXIO) instead of hanging.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => OutputError::Refused {
                path: path.display().to_string(),
                why: "is a FIFO that no process reads",
            },
            _ => io_error(path, "cannot open it")(e),
        })?;
    crate::os::set_blocking(&file).map_err(io_error(path, "cannot make it blocking"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .map_err(io_error(path, "cannot write it"))
}

/// Replaces a regular file (or creates it) through a temporary file and a rename.
fn replace(path: &Path, text: &str, old_mode: Option<u32>) -> Result<(), OutputError> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or(OutputError::Refused {
        path: path.display().to_string(),
        why: "names no file",
    })?;
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io_error(path, "cannot create a temporary file beside it"))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.write_all(b"\n"))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(io_error(path, "cannot write the temporary file"))?;
    let mode = old_mode.unwrap_or_else(|| 0o666 & !crate::os::umask());
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(io_error(path, "cannot set its mode"))?;
    tmp.persist(path)
        .map_err(|e| io_error(path, "cannot rename the temporary file over it")(e.error))?;
    // The rename itself must survive a crash too.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_is_escaped_and_round_trips() {
        let value = serde_json::json!({"host": "h\u{2028}ö😀", "n": f64::NAN});
        let text = render(&value, false).unwrap();
        assert!(text.is_ascii());
        assert!(text.contains("\\u2028"));
        assert!(text.contains("\\ud83d\\ude00"));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["host"], "h\u{2028}ö😀");
        assert!(back["n"].is_null());
    }

    #[test]
    fn atomic_write_replaces_the_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, "{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let missing = dir.path().join("no/such/dir/out.json");
        let err = write_atomically(&missing, "{}").unwrap_err();
        assert!(err.to_string().contains("--output"));
    }
}
