//! How much memory this process's cgroup may still take. In a container or a systemd slice with a
//! memory limit, MemAvailable overstates what we can allocate: going past the limit gets the
//! run OOM-killed. Each level from our cgroup up to the hierarchy's root may set a limit, so the
//! headroom is the smallest (limit - usage) along the way, in cgroup v2 (`memory.max`,
//! `memory.current`) or v1 (`memory.limit_in_bytes`, `memory.usage_in_bytes`). The same walk up
//! the hierarchy tells how long a CPU quota held the process back (`cpu.stat`).

use super::mounts::{Mount, parse_mountinfo};
use super::source::Source;
use std::path::{Path, PathBuf};

/// v1 reports "no limit" as a huge page-rounded number near i64::MAX.
const V1_UNLIMITED: u64 = 1 << 62;

/// Our cgroup in each hierarchy that has `v1_controller` (or the unified one): the directories
/// from our own up to the hierarchy's top, and whether it is the unified (v2) hierarchy.
fn hierarchies(src: &dyn Source, v1_controller: &str) -> Vec<(Vec<PathBuf>, bool)> {
    let Some(membership) = src.read("/proc/self/cgroup") else {
        return Vec::new();
    };
    let mounts = src
        .read("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default();
    membership
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let unified = id == "0" && controllers.is_empty();
            let v1 = controllers.split(',').any(|c| c == v1_controller);
            let mount = mounts.iter().find(|m| {
                (unified && m.fstype == "cgroup2")
                    || (v1
                        && m.fstype == "cgroup"
                        && m.options.split(',').any(|o| o == v1_controller))
            })?;
            let own = own_dir(mount, path);
            let levels = own
                .ancestors()
                .take_while(|d| d.starts_with(&mount.mount_point))
                .map(Path::to_path_buf)
                .collect();
            Some((levels, unified))
        })
        .collect()
}

fn number(src: &dyn Source, dir: &Path, file: &str) -> Option<u64> {
    src.read(dir.join(file).to_str()?)?.trim().parse().ok()
}

/// Bytes the cgroup hierarchy still lets this process allocate; `None` when no level sets a limit
/// (or cgroups cannot be read).
pub fn memory_headroom(src: &dyn Source) -> Option<u64> {
    hierarchies(src, "memory")
        .into_iter()
        .filter_map(|(levels, unified)| {
            let (limit_file, usage_file) = if unified {
                ("memory.max", "memory.current")
            } else {
                ("memory.limit_in_bytes", "memory.usage_in_bytes")
            };
            levels
                .iter()
                .filter_map(|d| {
                    let limit = number(src, d, limit_file).filter(|&l| l < V1_UNLIMITED)?;
                    Some(limit.saturating_sub(number(src, d, usage_file).unwrap_or(0)))
                })
                .min()
        })
        .min()
}

/// Microseconds our cgroup has been held back by a CPU quota since it was made: the most any
/// level from ours up reports (`throttled_usec` of v2's `cpu.stat`, `throttled_time` ns of v1's),
/// since a quota set on a parent throttles us there. `None` when no level can be read.
pub fn cpu_throttled_us(src: &dyn Source) -> Option<u64> {
    hierarchies(src, "cpu")
        .into_iter()
        .flat_map(|(levels, unified)| {
            levels.into_iter().filter_map(move |d| {
                let text = src.read(d.join("cpu.stat").to_str()?)?;
                let (key, per_us) = if unified {
                    ("throttled_usec", 1)
                } else {
                    ("throttled_time", 1000)
                };
                text.lines()
                    .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                    .map(|v| v / per_us)
            })
        })
        .max()
}

/// Our cgroup's directory under `mount`. A container's mount shows its own cgroup as the root, so
/// the part of `path` the mount's root already covers is dropped.
fn own_dir(mount: &Mount, path: &str) -> PathBuf {
    let path = Path::new(path);
    let relative = path.strip_prefix(&mount.root).unwrap_or(path);
    let relative = relative.strip_prefix("/").unwrap_or(relative);
    mount.mount_point.join(relative)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::source::FakeFs;

    const V2_MOUNTS: &str =
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

    #[test]
    fn v2_takes_the_tightest_level() {
        let mut fs = FakeFs::new();
        fs.insert("/proc/self/cgroup", "0::/system.slice/job.service\n")
            .insert("/proc/self/mountinfo", V2_MOUNTS)
            .insert(
                "/sys/fs/cgroup/system.slice/job.service/memory.max",
                "max\n",
            )
            .insert(
                "/sys/fs/cgroup/system.slice/job.service/memory.current",
                "100\n",
            )
            .insert("/sys/fs/cgroup/system.slice/memory.max", "8589934592\n")
            .insert("/sys/fs/cgroup/system.slice/memory.current", "1073741824\n");
        assert_eq!(memory_headroom(&fs), Some(7 << 30));
        fs.insert(
            "/sys/fs/cgroup/system.slice/job.service/memory.max",
            "1000\n",
        );
        assert_eq!(memory_headroom(&fs), Some(900));
        fs.insert(
            "/sys/fs/cgroup/system.slice/job.service/memory.current",
            "2000\n",
        );
        assert_eq!(
            memory_headroom(&fs),
            Some(0),
            "over the limit: nothing left"
        );
    }

    #[test]
    fn no_limit_anywhere_is_none() {
        let mut fs = FakeFs::new();
        fs.insert("/proc/self/cgroup", "0::/user.slice\n")
            .insert("/proc/self/mountinfo", V2_MOUNTS)
            .insert("/sys/fs/cgroup/user.slice/memory.max", "max\n");
        assert_eq!(memory_headroom(&fs), None);
        assert_eq!(memory_headroom(&FakeFs::new()), None, "nothing readable");
    }

    #[test]
    fn a_containers_view_starts_at_its_own_cgroup() {
        // The container sees its cgroup as the mount's root.
        let mut fs = FakeFs::new();
        fs.insert("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n")
            .insert(
                "/proc/self/mountinfo",
                "30 23 0:26 /kubepods/pod1/ctr /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
            )
            .insert("/sys/fs/cgroup/memory.max", "4294967296\n")
            .insert("/sys/fs/cgroup/memory.current", "1073741824\n");
        assert_eq!(memory_headroom(&fs), Some(3 << 30));
    }

    #[test]
    fn v1_memory_controller_and_its_unlimited_value() {
        let mut fs = FakeFs::new();
        fs.insert(
            "/proc/self/cgroup",
            "4:memory:/batch/job7\n3:cpuset:/\n0::/\n",
        )
        .insert(
            "/proc/self/mountinfo",
            "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
             34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n",
        )
        .insert(
            "/sys/fs/cgroup/memory/batch/job7/memory.limit_in_bytes",
            "9223372036854771712\n",
        )
        .insert(
            "/sys/fs/cgroup/memory/batch/memory.limit_in_bytes",
            "2147483648\n",
        )
        .insert(
            "/sys/fs/cgroup/memory/batch/memory.usage_in_bytes",
            "1073741824\n",
        );
        assert_eq!(memory_headroom(&fs), Some(1 << 30));
    }

    #[test]
    fn cpu_throttling_is_read_at_the_most_throttled_level() {
        let mut fs = FakeFs::new();
        fs.insert(
            "/proc/self/cgroup",
            "0::/slice/job
",
        )
        .insert("/proc/self/mountinfo", V2_MOUNTS)
        .insert(
            "/sys/fs/cgroup/slice/job/cpu.stat",
            "throttled_usec 10
",
        )
        .insert(
            "/sys/fs/cgroup/slice/cpu.stat",
            "nr_throttled 3
throttled_usec 700
",
        );
        assert_eq!(cpu_throttled_us(&fs), Some(700));
        let mut v1 = FakeFs::new();
        v1.insert(
            "/proc/self/cgroup",
            "3:cpu,cpuacct:/batch
",
        )
        .insert(
            "/proc/self/mountinfo",
            "33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
",
        )
        .insert(
            "/sys/fs/cgroup/cpu,cpuacct/batch/cpu.stat",
            "nr_periods 9
throttled_time 5000000
",
        );
        assert_eq!(cpu_throttled_us(&v1), Some(5000));
        assert_eq!(cpu_throttled_us(&FakeFs::new()), None);
    }
}
