//! Mounts, from /proc/self/mountinfo (proc(5)): which filesystem holds a path (storage) and where
//! the cgroup hierarchies are (memory limits).

use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Device numbers of the mounted filesystem.
    pub dev: (u32, u32),
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type.
    pub fstype: String,
    /// What is mounted (a device path, or a name like `tmpfs`).
    pub source: String,
    /// The directory of the filesystem that is mounted (`/` unless a bind mount or a container's
    /// cgroup view).
    pub root: PathBuf,
    /// Superblock options (a cgroup v1 mount lists its controllers here).
    pub options: String,
}

/// Undoes the octal escapes the kernel writes for spaces, tabs, newlines and backslashes.
pub fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// Parses /proc/self/mountinfo (proc(5)).
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let (major, minor) = fields.get(2)?.split_once(':')?;
            let dash = fields.iter().position(|f| *f == "-")?;
            Some(Mount {
                dev: (major.parse().ok()?, minor.parse().ok()?),
                mount_point: PathBuf::from(unescape(fields.get(4)?)),
                fstype: fields.get(dash + 1)?.to_string(),
                source: unescape(fields.get(dash + 2)?),
                root: PathBuf::from(unescape(fields.get(3)?)),
                options: fields.get(dash + 3).unwrap_or(&"").to_string(),
            })
        })
        .collect()
}

/// The mount holding `path` (the longest mount point that is a prefix of it).
pub fn mount_of<'a>(path: &Path, mounts: &'a [Mount]) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
        27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
        40 27 0:35 / /tmp/my\\040dir rw - tmpfs tmpfs rw,size=1024k\n\
        41 27 259:2 / /data rw shared:5 master:2 - xfs /dev/nvme0n1p2 rw\n";

    #[test]
    fn mountinfo_lines_parse_with_optional_fields_and_escapes() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 4);
        assert_eq!(m[1].dev, (254, 0));
        assert_eq!(m[2].mount_point, PathBuf::from("/tmp/my dir"));
        assert_eq!(m[3].fstype, "xfs");
        assert_eq!(m[3].source, "/dev/nvme0n1p2");
    }

    #[test]
    fn the_longest_mount_point_wins() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(mount_of(Path::new("/data/x"), &m).unwrap().fstype, "xfs");
        assert_eq!(
            mount_of(Path::new("/tmp/my dir/f"), &m).unwrap().fstype,
            "tmpfs"
        );
        assert_eq!(mount_of(Path::new("/home"), &m).unwrap().fstype, "ext4");
        assert_eq!(
            mount_of(Path::new("/database"), &m).unwrap().fstype,
            "ext4",
            "/data is not a prefix of /database"
        );
    }
}
