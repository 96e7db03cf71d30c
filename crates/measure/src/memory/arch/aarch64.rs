//! aarch64 kernels in inline assembly.

use crate::memory::buffer::BLOCK;
use std::arch::asm;

/// 256 dependent loads: `p = *p`.
///
/// # Safety
/// `p` must point into a chain whose every slot holds the address of another slot of the same
/// live, readable memory.
#[inline(never)]
pub unsafe fn chase(p: *const u8) -> *const u8 {
    let mut p = p;
    // SAFETY: the caller guarantees every address followed is a readable slot of the chain.
    unsafe {
        asm!(
            ".rept 256",
            "ldr {p}, [{p}]",
            ".endr",
            p = inout(reg) p,
            options(nostack, readonly, preserves_flags),
        );
    }
    p
}

/// All reads: two loads per 64-byte line, 128 lines.
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
pub unsafe fn all_reads(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    // SAFETY: the caller guarantees 8 KiB at `p` are ours to read.
    unsafe {
        asm!(
            ".rept 128",
            "ldr {t}, [{p}]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #32]",
            "add {acc}, {acc}, {t}",
            "add {p}, {p}, #64",
            ".endr",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
            t = out(reg) _,
            options(nostack),
        );
    }
    acc
}

/// 3:1: 42 groups of 3 lines (the third written) and a 2-line tail whose second line is written.
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
pub unsafe fn three_to_one(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    // SAFETY: the caller guarantees 8 KiB at `p` are ours to read and write.
    unsafe {
        asm!(
            ".rept 42",
            "ldr {t}, [{p}]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #32]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #64]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #96]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #128]",
            "add {acc}, {acc}, {t}",
            "str {acc}, [{p}, #160]",
            "add {p}, {p}, #192",
            ".endr",
            "ldr {t}, [{p}]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #32]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #64]",
            "add {acc}, {acc}, {t}",
            "str {acc}, [{p}, #96]",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
            t = out(reg) _,
            options(nostack),
        );
    }
    acc
}

/// 2:1 with `NOPS` NOPs after each 4-line group.
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
pub unsafe fn two_to_one<const NOPS: usize>(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    // SAFETY: the caller guarantees 8 KiB at `p` are ours to read and write.
    unsafe {
        asm!(
            ".rept 32",
            "ldr {t}, [{p}]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #32]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #64]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #96]",
            "add {acc}, {acc}, {t}",
            "ldr {t}, [{p}, #128]",
            "add {acc}, {acc}, {t}",
            "str {acc}, [{p}, #160]",
            "ldr {t}, [{p}, #192]",
            "add {acc}, {acc}, {t}",
            "str {acc}, [{p}, #224]",
            ".rept {nops}",
            "nop",
            ".endr",
            "add {p}, {p}, #256",
            ".endr",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
            t = out(reg) _,
            nops = const NOPS,
            options(nostack),
        );
    }
    acc
}

/// 1:1: every line read at +0 and written at +32.
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
pub unsafe fn one_to_one(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    // SAFETY: the caller guarantees 8 KiB at `p` are ours to read and write.
    unsafe {
        asm!(
            ".rept 128",
            "ldr {t}, [{p}]",
            "add {acc}, {acc}, {t}",
            "str {acc}, [{p}, #32]",
            "add {p}, {p}, #64",
            ".endr",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
            t = out(reg) _,
            options(nostack),
        );
    }
    acc
}

/// 64 bytes per instruction with NEON `ld1` of four registers.
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
unsafe fn read_neon(p: *mut u8) -> u64 {
    // SAFETY: the caller guarantees the block.
    unsafe {
        asm!(
            ".rept 128",
            "ld1 {{v0.2d, v1.2d, v2.2d, v3.2d}}, [{p}], #64",
            ".endr",
            p = inout(reg) p => _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            options(nostack, readonly),
        );
    }
    0
}

/// SVE loads of a whole block, eight vectors per step at the thread's vector length (any
/// multiple of 16 bytes: a step that would pass the end gives way to predicated single loads).
/// Returns the bytes stepped over (8 KiB rounded up to the vector length), which the tests check.
///
/// Registers: the loads write z0-z7 and the predicates p0-p1, declared as v0-v7 and p0-p1 (the
/// bits of z0-z7 above v0-v7 are the caller's to save under the procedure-call standard, and
/// the compiler keeps nothing in them on a target without SVE).
///
/// # Safety
/// See [`super::Kernel::call`]; the CPU must support SVE.
#[inline(never)]
unsafe fn read_sve(p: *mut u8) -> u64 {
    let start = p as usize;
    let end = start + BLOCK;
    let stepped: usize;
    // SAFETY: the caller guarantees the block and the CPU feature; every load is predicated to
    // the block's bytes.
    unsafe {
        asm!(
            ".arch_extension sve",
            "ptrue p0.b",
            "rdvl {step}, #8",
            "2:",
            "sub {left}, {end}, {p}",
            "cmp {left}, {step}",
            "b.lo 3f",
            "ld1b {{z0.b}}, p0/z, [{p}]",
            "ld1b {{z1.b}}, p0/z, [{p}, #1, mul vl]",
            "ld1b {{z2.b}}, p0/z, [{p}, #2, mul vl]",
            "ld1b {{z3.b}}, p0/z, [{p}, #3, mul vl]",
            "ld1b {{z4.b}}, p0/z, [{p}, #4, mul vl]",
            "ld1b {{z5.b}}, p0/z, [{p}, #5, mul vl]",
            "ld1b {{z6.b}}, p0/z, [{p}, #6, mul vl]",
            "ld1b {{z7.b}}, p0/z, [{p}, #7, mul vl]",
            "add {p}, {p}, {step}",
            "b 2b",
            "3:",
            "whilelo p1.b, {p}, {end}",
            "b.none 4f",
            "ld1b {{z0.b}}, p1/z, [{p}]",
            "incb {p}",
            "b 3b",
            "4:",
            p = inout(reg) start => stepped,
            end = in(reg) end,
            step = out(reg) _,
            left = out(reg) _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("p0") _, out("p1") _,
            options(nostack, readonly),
        );
    }
    (stepped - start) as u64
}

/// The SVE vector length of this thread, in bytes.
///
/// # Safety
/// The CPU must support SVE.
unsafe fn sve_bytes() -> usize {
    let bytes: usize;
    // SAFETY: `rdvl` only reads the vector length; the caller guarantees SVE.
    unsafe {
        asm!(
            ".arch_extension sve",
            "rdvl {b}, #1",
            b = out(reg) bytes,
            options(nostack, nomem, preserves_flags),
        );
    }
    bytes
}

/// The SVE kernel's name for a vector length (bytes), as the x86 kernels name their width.
fn sve_name(bytes: usize) -> &'static str {
    match bytes {
        16 => "sve128",
        32 => "sve256",
        64 => "sve512",
        128 => "sve1024",
        256 => "sve2048",
        _ => "sve",
    }
}

/// The vector read kernels this CPU runs, widest first (SVE where present, then NEON), with
/// their names. SVE at 128 bits is no wider than NEON and not always faster (its loads are
/// predicated, NEON's `ld1` takes four registers at once): the bandwidth test times both.
pub fn read_wide_kernels() -> Vec<(super::RawKernel, &'static str)> {
    let mut kernels: Vec<(super::RawKernel, &'static str)> = Vec::new();
    if std::arch::is_aarch64_feature_detected!("sve") {
        // SAFETY: SVE is present.
        kernels.push((read_sve, sve_name(unsafe { sve_bytes() })));
    }
    kernels.push((read_neon, "neon"));
    kernels
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8 KiB between two pages nobody may touch: a load outside the block faults.
    struct Fenced {
        base: *mut u8,
        len: usize,
        page: usize,
    }

    impl Fenced {
        fn new() -> Self {
            // SAFETY: sysconf reads a constant of the system.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
            let len = 2 * page + BLOCK.next_multiple_of(page);
            // SAFETY: a fresh private mapping, checked below.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(base, libc::MAP_FAILED);
            let base = base.cast::<u8>();
            // SAFETY: the pages between the two fences are ours.
            let open = unsafe {
                libc::mprotect(
                    base.add(page).cast(),
                    len - 2 * page,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            assert_eq!(open, 0);
            Fenced { base, len, page }
        }

        /// The block that ends where the upper fence starts.
        fn block(&self) -> *mut u8 {
            // SAFETY: inside the mapping.
            unsafe { self.base.add(self.len - self.page - BLOCK) }
        }
    }

    impl Drop for Fenced {
        fn drop(&mut self) {
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.base.cast(), self.len) };
        }
    }

    #[test]
    fn the_sve_kernel_reads_the_block_and_no_further_at_every_vector_length() {
        if !std::arch::is_aarch64_feature_detected!("sve") {
            println!("skipped: this CPU has no SVE");
            return;
        }
        let names: Vec<_> = read_wide_kernels().iter().map(|k| k.1).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[0].starts_with("sve"), "{names:?}");
        let fenced = Fenced::new();
        // PR_SVE_SET_VL: this thread's vector length; the kernel must step to the block's end
        // at each, the lengths that do not divide 8 KiB included (SVE's first version allowed
        // any multiple of 16 bytes).
        const PR_SVE_SET_VL: libc::c_int = 50;
        let mut seen = Vec::new();
        for want in [16usize, 32, 48, 64, 80, 128, 176, 256] {
            // SAFETY: sets this thread's vector length only.
            let got = unsafe { libc::prctl(PR_SVE_SET_VL, want as libc::c_ulong, 0, 0, 0) };
            if got < 0 {
                continue;
            }
            // SAFETY: SVE is present.
            let bytes = unsafe { sve_bytes() };
            assert_eq!(bytes, (got & 0xffff) as usize, "{want}");
            // SAFETY: the block is 8 KiB of ours, fenced on both sides.
            let stepped = unsafe { read_sve(fenced.block()) } as usize;
            assert_eq!(
                stepped,
                BLOCK.next_multiple_of(bytes),
                "vector length {bytes}"
            );
            seen.push(bytes);
        }
        assert!(!seen.is_empty(), "no vector length could be set");
        println!("vector lengths tried: {seen:?}");
    }

    #[test]
    fn the_neon_kernel_stays_in_the_block() {
        let fenced = Fenced::new();
        // SAFETY: the block is 8 KiB of ours, fenced on both sides.
        unsafe { read_neon(fenced.block()) };
    }
}
