//! aarch64 kernels in inline assembly.

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

/// The vector read kernels and their names (NEON only: no SVE kernel yet).
pub fn read_wide_kernels() -> Vec<(super::RawKernel, &'static str)> {
    vec![(read_neon, "neon")]
}
