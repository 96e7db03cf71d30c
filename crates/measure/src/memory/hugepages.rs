//! `--memory-reserve-hugepages`: grows the hugetlb pool of each measured node so the latency
//! chains can use huge pages, and gives the pages back when the section ends, also on Ctrl-C, an
//! error or a panic (the guard's Drop). Without the flag nothing in the system is changed.

use std::path::{Path, PathBuf};

/// Pool counts to restore.
pub struct Reservation {
    restore: Vec<(PathBuf, u64)>,
    /// What was reserved or why not, for the document.
    pub notes: Vec<String>,
}

fn read_count(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

impl Reservation {
    /// Makes sure each node in `nodes` has `bytes` of free huge pages (1 GiB pages where the
    /// kernel has them, else 2 MiB), raising `nr_hugepages` under `root` (normally "/").
    pub fn reserve(root: &Path, nodes: &[usize], bytes: u64) -> Reservation {
        let mut nodes = nodes.to_vec();
        nodes.sort_unstable();
        nodes.dedup();
        let mut r = Reservation {
            restore: Vec::new(),
            notes: Vec::new(),
        };
        let size_kib: u64 = if root
            .join("sys/kernel/mm/hugepages/hugepages-1048576kB")
            .exists()
        {
            1 << 20
        } else {
            2048
        };
        let need = bytes.div_ceil(size_kib * 1024);
        for node in nodes {
            let dir = root.join(format!(
                "sys/devices/system/node/node{node}/hugepages/hugepages-{size_kib}kB"
            ));
            let (Some(total), Some(free)) = (
                read_count(&dir.join("nr_hugepages")),
                read_count(&dir.join("free_hugepages")),
            ) else {
                r.notes.push(format!(
                    "node {node}: no {size_kib} kB huge-page pool to reserve from"
                ));
                continue;
            };
            if free >= need {
                continue;
            }
            let path = dir.join("nr_hugepages");
            let wanted = total + (need - free);
            match std::fs::write(&path, format!("{wanted}\n")) {
                Ok(()) => {
                    r.restore.push((path.clone(), total));
                    let got = read_count(&path).unwrap_or(total);
                    r.notes.push(format!(
                        "node {node}: reserved {} of {} more {size_kib} kB huge pages (given back afterwards)",
                        got.saturating_sub(total),
                        wanted - total
                    ));
                }
                Err(e) => r.notes.push(format!(
                    "node {node}: cannot reserve huge pages: {e} (needs root; chains use THP instead)"
                )),
            }
        }
        r
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // Newest first, so a path raised twice ends at its original count.
        for (path, count) in self.restore.drain(..).rev() {
            let _ = std::fs::write(&path, format!("{count}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(root: &Path, node: usize, total: u64, free: u64) -> PathBuf {
        let dir = root.join(format!(
            "sys/devices/system/node/node{node}/hugepages/hugepages-1048576kB"
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(root.join("sys/kernel/mm/hugepages/hugepages-1048576kB")).unwrap();
        std::fs::write(dir.join("nr_hugepages"), format!("{total}\n")).unwrap();
        std::fs::write(dir.join("free_hugepages"), format!("{free}\n")).unwrap();
        dir.join("nr_hugepages")
    }

    #[test]
    fn reserves_what_is_missing_and_restores_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let n0 = pool(tmp.path(), 0, 4, 1);
        let n1 = pool(tmp.path(), 1, 2, 2);
        {
            let r = Reservation::reserve(tmp.path(), &[0, 1, 2, 0, 1], 2 << 30);
            assert_eq!(
                std::fs::read_to_string(&n0).unwrap().trim(),
                "5",
                "one more page on node 0"
            );
            assert_eq!(
                std::fs::read_to_string(&n1).unwrap().trim(),
                "2",
                "node 1 had enough free"
            );
            assert!(
                r.notes.iter().any(|n| n.starts_with("node 2: no")),
                "{:?}",
                r.notes
            );
        }
        assert_eq!(
            std::fs::read_to_string(&n0).unwrap().trim(),
            "4",
            "restored"
        );
    }
}
