//! Memory regions for the memory section: anonymous mappings with a chosen page size (hugetlb
//! 1 GiB or 2 MiB, transparent huge pages, or plain 4 KiB pages), optionally bound to one NUMA
//! node with mbind(2) before the first touch, and first-touched by the thread that calls `touch`.
//! Also the pointer chains the latency kernels walk. All of the section's unsafe memory code
//! lives here and in `arch/`.
//!
//! Safety model: a [`Region`] owns its mapping and hands out only slices. A [`Chain`] owns its
//! region and every pointer stored in it points to a slot of that region (checked when linking),
//! so walking it from a [`Position`] of the same chain never leaves the mapping.

use super::arch;
use super::error::MemoryError;
use std::io;
use std::ptr::NonNull;

/// Bytes a bandwidth kernel handles per call.
pub const BLOCK: usize = 8 * 1024;
const TWO_MIB: usize = 2 << 20;

/// Which pages back a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// Whatever the system's THP mode gives (mm-mem's bandwidth regions).
    Default,
    /// 4 KiB pages: THP refused with MADV_NOHUGEPAGE.
    Small,
    /// Transparent huge pages requested with MADV_HUGEPAGE (2 MiB-aligned).
    Thp,
    /// hugetlb pages of 1 GiB.
    Huge1G,
    /// hugetlb pages of 2 MiB.
    Huge2M,
}

/// An anonymous private mapping.
pub struct Region {
    map: NonNull<u8>,
    map_len: usize,
    /// Offset of the usable start inside the mapping (alignment for THP).
    offset: usize,
    len: usize,
    pages: Pages,
}

// SAFETY: a Region is plain memory owned by one value; moving it to another thread moves the
// ownership, and shared references only hand out `&[u8]`.
unsafe impl Send for Region {}
// SAFETY: `&Region` gives read-only slices; all writes need `&mut Region`.
unsafe impl Sync for Region {}

impl Region {
    /// Maps `len` bytes with `pages`, bound to `node` when given. Nothing is touched yet.
    pub fn map(len: usize, pages: Pages, node: Option<usize>) -> io::Result<Region> {
        let hugetlb = |log2| {
            crate::os::hugetlb_mmap_flags(log2).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    "hugetlb pages are not available here",
                )
            })
        };
        let (align, flags) = match pages {
            Pages::Huge1G => (1 << 30, hugetlb(30)?),
            Pages::Huge2M => (TWO_MIB, hugetlb(21)?),
            Pages::Thp => (TWO_MIB, 0),
            Pages::Default | Pages::Small => (4096, 0),
        };
        let huge = flags != 0;
        let len = len.max(BLOCK).div_ceil(BLOCK) * BLOCK;
        // hugetlb mappings must be whole pages; THP wants 2 MiB alignment, so map extra.
        let map_len = if huge {
            len.div_ceil(align) * align
        } else if pages == Pages::Thp {
            len + TWO_MIB
        } else {
            len
        };
        // SAFETY: an anonymous private mapping at an address the kernel picks; no existing memory
        // is affected. The result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        let offset = if pages == Pages::Thp {
            (TWO_MIB - (map.as_ptr() as usize % TWO_MIB)) % TWO_MIB
        } else {
            0
        };
        let region = Region {
            map,
            map_len,
            offset,
            len,
            pages,
        };
        let advice = match pages {
            Pages::Small => crate::os::thp_advice(false),
            Pages::Thp => crate::os::thp_advice(true),
            _ => None,
        };
        if let Some(advice) = advice {
            // SAFETY: advice on our own whole mapping; it changes no contents.
            unsafe { libc::madvise(region.map.as_ptr().cast(), region.map_len, advice) };
        }
        if let Some(node) = node {
            region.bind(node)?;
        }
        Ok(region)
    }

    /// Binds the whole mapping to `node` (MPOL_BIND), so first-touch faults allocate there.
    fn bind(&self, node: usize) -> io::Result<()> {
        // SAFETY: the whole mapping is ours, and nothing has touched it yet.
        unsafe { crate::os::bind_to_node(self.map.as_ptr(), self.map_len, node) }
    }

    /// Maps `len` bytes with the largest pages to be had for a latency chain: hugetlb 1 GiB when
    /// the pool (of `node`, or the system) has enough free pages, then hugetlb 2 MiB, then THP.
    pub fn map_huge(len: usize, node: Option<usize>) -> io::Result<Region> {
        Self::map_huge_from(len, node, &|size_kib| free_hugepages(size_kib, node))
    }

    /// [`Region::map_huge`] with the free pages of each pool (by page size in KiB) from `free`.
    fn map_huge_from(
        len: usize,
        node: Option<usize>,
        free: &dyn Fn(u64) -> u64,
    ) -> io::Result<Region> {
        for (pages, size_kib) in [(Pages::Huge1G, 1 << 20), (Pages::Huge2M, 2048)] {
            let needed = (len as u64).div_ceil(size_kib * 1024);
            if free(size_kib) >= needed {
                if let Ok(r) = Region::map(len, pages, node) {
                    return Ok(r);
                }
            }
        }
        Region::map(len, Pages::Thp, node)
    }

    /// Usable bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no usable bytes (never true: regions hold at least one block).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn start(&self) -> *mut u8 {
        // SAFETY: offset < map_len, so the result stays inside the mapping.
        unsafe { self.map.as_ptr().add(self.offset) }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: [start, start+len) lies inside our live mapping, readable, and initialised
        // (anonymous memory reads as zeros).
        unsafe { std::slice::from_raw_parts(self.start(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.start(), self.len) }
    }

    /// Writes one byte per 4 KiB page so every page is allocated now, by the calling (pinned)
    /// thread; an untouched anonymous page would read as the shared zero page.
    pub fn touch(&mut self) {
        self.touch_until(&|| false);
    }

    /// [`Region::touch`], checking `should_stop` every 64 MiB (a first touch of a large region
    /// can take seconds in a VM). Returns false when stopped before the end.
    pub fn touch_until(&mut self, should_stop: &dyn Fn() -> bool) -> bool {
        for chunk in self.as_mut_slice().chunks_mut(64 << 20) {
            if should_stop() {
                return false;
            }
            for page in chunk.chunks_mut(4096) {
                page[0] = 1;
            }
        }
        true
    }

    /// The page size actually backing the region: hugetlb sizes are certain; otherwise
    /// /proc/self/smaps says how much of it THP backs.
    pub fn page_size(&self) -> String {
        match self.pages {
            Pages::Huge1G => "1G".into(),
            Pages::Huge2M => "2M".into(),
            _ => match std::fs::read_to_string("/proc/self/smaps")
                .ok()
                .and_then(|t| smaps_thp(&t, self.start() as usize))
            {
                Some((rss, huge)) if rss > 0 && huge * 10 >= rss * 9 => "2M (THP)".into(),
                Some((rss, huge)) if rss > 0 && huge > 0 => {
                    format!("4K+2M (THP {}%)", huge * 100 / rss)
                }
                _ => "4K".into(),
            },
        }
    }

    /// Runs a bandwidth kernel over `blocks` consecutive 8 KiB blocks from `first`, wrapping.
    /// Returns the kernel's checksum (fed to `black_box` by callers).
    pub fn run_blocks(&mut self, kernel: arch::Kernel, first: usize, blocks: usize) -> u64 {
        let total = self.len / BLOCK;
        let base = self.start();
        let mut sum = 0u64;
        for i in 0..blocks {
            let b = (first + i) % total;
            // SAFETY: block `b` < total lies inside the region, and `&mut self` excludes other
            // access; kernels touch exactly BLOCK bytes from the pointer.
            sum = sum.wrapping_add(unsafe { kernel.call(base.add(b * BLOCK)) });
        }
        sum
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping we created; no slice outlives `self`.
        unsafe { libc::munmap(self.map.as_ptr().cast(), self.map_len) };
    }
}

/// Free hugetlb pages of `size_kib`, on `node` when given.
pub fn free_hugepages(size_kib: u64, node: Option<usize>) -> u64 {
    let path = match node {
        Some(n) => format!(
            "/sys/devices/system/node/node{n}/hugepages/hugepages-{size_kib}kB/free_hugepages"
        ),
        None => format!("/sys/kernel/mm/hugepages/hugepages-{size_kib}kB/free_hugepages"),
    };
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

/// (Rss, AnonHugePages) in KiB of the smaps entry containing `addr`.
pub fn smaps_thp(smaps: &str, addr: usize) -> Option<(u64, u64)> {
    let mut inside = false;
    let (mut rss, mut huge) = (None, None);
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
            if inside {
                break;
            }
            let lo = usize::from_str_radix(a, 16).ok()?;
            let hi = usize::from_str_radix(b, 16).unwrap_or(0);
            inside = lo <= addr && addr < hi;
            continue;
        }
        if inside {
            let value = || {
                line.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
            };
            if line.starts_with("Rss:") {
                rss = value();
            } else if line.starts_with("AnonHugePages:") {
                huge = value();
            }
        }
    }
    Some((rss?, huge.unwrap_or(0)))
}

/// A pointer chain: every `stride`-th slot of a region holds the address of the next slot in a
/// cycle. The latency kernels follow it (`p = *p`), so each load depends on the previous one.
pub struct Chain {
    region: Region,
    head: usize,
    loads_per_lap: usize,
    id: u64,
}

/// Numbers chains, so a position of a dropped chain never passes for one of a new chain that the
/// kernel happened to map at the same address.
static NEXT_CHAIN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where a walk stands on a chain (an address inside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    ptr: usize,
    chain: u64,
}

impl Chain {
    /// Links the slots of `region` in the order given (slot indices; the cycle closes from the
    /// last back to the first). Every index must be a slot of the region.
    pub fn link(mut region: Region, order: &[u32], stride: usize) -> Result<Chain, MemoryError> {
        let slots = region.len() / stride.max(1);
        if stride < 8 || stride % 8 != 0 || order.is_empty() {
            return Err(MemoryError::BadChain(
                "a chain needs a stride that is a multiple of 8 bytes, and one slot".into(),
            ));
        }
        if let Some(bad) = order.iter().find(|&&s| s as usize >= slots) {
            return Err(MemoryError::BadChain(format!(
                "slot {bad} is outside the region's {slots} slots"
            )));
        }
        let base = region.start() as usize;
        let bytes = region.as_mut_slice();
        for (i, &slot) in order.iter().enumerate() {
            let next = order[(i + 1) % order.len()] as usize;
            let at = slot as usize * stride;
            bytes[at..at + 8].copy_from_slice(&(base + next * stride).to_ne_bytes());
        }
        Ok(Chain {
            head: base + order[0] as usize * stride,
            loads_per_lap: order.len(),
            region,
            id: NEXT_CHAIN.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The first slot.
    pub fn head(&self) -> Position {
        Position {
            ptr: self.head,
            chain: self.id,
        }
    }

    /// Loads in one lap of the cycle.
    pub fn loads_per_lap(&self) -> usize {
        self.loads_per_lap
    }

    /// The region's page size label.
    pub fn page_size(&self) -> String {
        self.region.page_size()
    }

    /// Gives the region back (to link another chain into it). Its stale pointers still point
    /// into the region, so any later chain over it stays within the mapping.
    pub fn into_region(self) -> Region {
        self.region
    }

    /// Follows the chain for `calls` x [`arch::CHASE_LOADS`] dependent loads from `pos`, which it
    /// advances.
    pub fn walk(&self, pos: &mut Position, calls: usize) {
        assert_eq!(
            pos.chain, self.id,
            "a position walks only the chain it came from"
        );
        let mut p = pos.ptr as *const u8;
        for _ in 0..calls {
            // SAFETY: `p` is a slot address of this chain (from `head` or a previous walk), and
            // every slot holds the address of another slot of the same live region (`link`).
            p = unsafe { arch::chase(p) };
        }
        pos.ptr = p as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_map_touch_and_report_pages() {
        let mut r = Region::map(1 << 20, Pages::Small, None).unwrap();
        assert_eq!(r.len(), 1 << 20);
        r.touch();
        assert_eq!(r.as_slice()[4096], 1);
        assert_eq!(r.page_size(), "4K");
        let t = Region::map(3 << 20, Pages::Thp, None).unwrap();
        assert_eq!(
            t.start() as usize % TWO_MIB,
            0,
            "THP regions are 2 MiB aligned"
        );
    }

    #[test]
    fn huge_falls_back_when_no_pool_is_free() {
        // Every pool empty: transparent huge pages (or 4K where THP is off), never hugetlb.
        let mut r = Region::map_huge_from(4 << 20, None, &|_| 0).unwrap();
        assert_eq!(r.pages, Pages::Thp);
        r.touch();
        let page = r.page_size();
        assert!(page.contains("THP") || page == "4K", "{page}");
        // A pool with room is used when its pages can be had; when the kernel refuses them
        // (none really free here), the fallback still gives a usable region.
        let r = Region::map_huge_from(4 << 20, None, &|kib| u64::from(kib == 2048) * 2).unwrap();
        assert!(matches!(r.pages, Pages::Huge2M | Pages::Thp));
    }

    #[test]
    fn chains_cycle_through_every_slot() {
        let region = Region::map(64 * 1024, Pages::Default, None).unwrap();
        let order: Vec<u32> = vec![0, 5, 2, 7, 1, 3, 6, 4];
        let chain = Chain::link(region, &order, 128).unwrap();
        let mut pos = chain.head();
        let start = pos;
        chain.walk(&mut pos, 1); // 256 loads = 32 laps of 8
        assert_eq!(pos, start);
        assert!(
            Chain::link(
                Region::map(8192, Pages::Default, None).unwrap(),
                &[0, 64],
                128
            )
            .is_err()
        );
    }

    #[test]
    fn smaps_entries_are_found_by_address() {
        let text = "7f0000000000-7f0000200000 rw-p 00000000 00:00 0\nSize: 2048 kB\nRss: 2048 kB\n\
                    AnonHugePages: 2048 kB\n7f0000200000-7f0000300000 rw-p 00000000 00:00 0\nRss: 1024 kB\n\
                    AnonHugePages: 0 kB\n";
        assert_eq!(smaps_thp(text, 0x7f0000100000), Some((2048, 2048)));
        assert_eq!(smaps_thp(text, 0x7f0000280000), Some((1024, 0)));
        assert_eq!(smaps_thp(text, 0x1000), None);
    }
}
