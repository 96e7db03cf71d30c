//! Where the system section reads /proc and /sys text from: the running host, or an in-memory
//! tree that tests fill with fixtures (a 384-CPU, two-socket machine among them). The collectors
//! take `&dyn Source`, so everything above the file reads runs unchanged on fakes.

#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeMap;

/// A read-only view of the files the system section looks at, addressed by absolute path.
pub trait Source {
    /// The file's text, or `None` when it is missing or unreadable.
    fn read(&self, path: &str) -> Option<String>;
    /// The names of the entries directly inside `dir` (not full paths), sorted; empty if none.
    fn list(&self, dir: &str) -> Vec<String>;
    /// Where `path` really is, its symbolic links followed (`/sys/bus/pci/devices/X` is a link
    /// into the device tree, whose path names every bridge above the device); `None` if missing.
    fn resolve(&self, path: &str) -> Option<String>;
}

/// The running host's files.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostFs;

impl Source for HostFs {
    /// Only a regular file is read (every /proc and /sys attribute is one): a FIFO or a device
    /// put where a counter should be would block the run, past its deadline and its signals.
    fn read(&self, path: &str) -> Option<String> {
        use std::io::Read;
        #[cfg(unix)]
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
                .ok()?
        };
        #[cfg(not(unix))]
        let file = std::fs::File::open(path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut text = String::new();
        // Regular files ignore O_NONBLOCK: this reads to the end.
        (&file).read_to_string(&mut text).ok()?;
        Some(text)
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    fn resolve(&self, path: &str) -> Option<String> {
        std::fs::canonicalize(path)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
}

/// An in-memory file tree for tests: a map from absolute path to text. Directories exist
/// implicitly.
#[cfg(any(test, feature = "fakes"))]
#[derive(Debug, Default, Clone)]
pub struct FakeFs {
    files: BTreeMap<String, String>,
    links: BTreeMap<String, String>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeFs {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) one file.
    pub fn insert(&mut self, path: impl Into<String>, text: impl Into<String>) -> &mut Self {
        self.files.insert(path.into(), text.into());
        self
    }

    /// Makes `path` a symbolic link to `target` (one level, as sysfs's are).
    pub fn link(&mut self, path: impl Into<String>, target: impl Into<String>) -> &mut Self {
        self.links.insert(path.into(), target.into());
        self
    }
}

#[cfg(any(test, feature = "fakes"))]
impl Source for FakeFs {
    fn read(&self, path: &str) -> Option<String> {
        self.files.get(path).cloned()
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let mut names: Vec<String> = self
            .files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| p[prefix.len()..].split('/').next().map(str::to_string))
            .collect();
        names.dedup();
        names
    }

    fn resolve(&self, path: &str) -> Option<String> {
        self.links.get(path).cloned().or_else(|| {
            let dir = format!("{path}/");
            let exists = self.files.contains_key(path)
                || self
                    .files
                    .range(dir.clone()..)
                    .next()
                    .is_some_and(|(p, _)| p.starts_with(&dir));
            exists.then(|| path.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_fifo_where_a_counter_should_be_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ue_count");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(HostFs.read(fifo.to_str().unwrap()), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let file = dir.path().join("ce_count");
        std::fs::write(&file, "7\n").unwrap();
        assert_eq!(HostFs.read(file.to_str().unwrap()).as_deref(), Some("7\n"));
        assert_eq!(
            HostFs.read("/proc/self/stat").map(|t| t.is_empty()),
            Some(false)
        );
    }

    #[test]
    fn fake_lists_direct_children_once() {
        let mut fs = FakeFs::new();
        fs.insert("/sys/a/x/1", "1")
            .insert("/sys/a/x/2", "2")
            .insert("/sys/a/y", "3")
            .insert("/sys/ab", "4");
        assert_eq!(fs.list("/sys/a"), vec!["x", "y"]);
        assert_eq!(fs.list("/sys/a/"), vec!["x", "y"]);
        assert_eq!(fs.read("/sys/a/y").as_deref(), Some("3"));
        assert!(fs.list("/nope").is_empty());
    }
}
