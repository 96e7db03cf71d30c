//! x86_64 kernels in inline assembly (Intel syntax).

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
            "mov {p}, qword ptr [{p}]",
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
            "add {acc}, qword ptr [{p}]",
            "add {acc}, qword ptr [{p} + 32]",
            "add {p}, 64",
            ".endr",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
            options(nostack),
        );
    }
    acc
}

/// 3:1: of every 3 lines, two are read twice and the third read then written; 42 groups and a
/// 2-line tail whose second line is written.
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
pub unsafe fn three_to_one(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    // SAFETY: the caller guarantees 8 KiB at `p` are ours to read and write (42 x 192 + 128).
    unsafe {
        asm!(
            ".rept 42",
            "add {acc}, qword ptr [{p}]",
            "add {acc}, qword ptr [{p} + 32]",
            "add {acc}, qword ptr [{p} + 64]",
            "add {acc}, qword ptr [{p} + 96]",
            "add {acc}, qword ptr [{p} + 128]",
            "mov qword ptr [{p} + 160], {acc}",
            "add {p}, 192",
            ".endr",
            "add {acc}, qword ptr [{p}]",
            "add {acc}, qword ptr [{p} + 32]",
            "add {acc}, qword ptr [{p} + 64]",
            "mov qword ptr [{p} + 96], {acc}",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
            options(nostack),
        );
    }
    acc
}

/// 2:1: of every 4 lines, two are read twice and two read then written, followed by `NOPS`
/// one-byte NOPs (the loaded sweep's padding; 0 for peak bandwidth).
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
pub unsafe fn two_to_one<const NOPS: usize>(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    // SAFETY: the caller guarantees 8 KiB at `p` are ours to read and write (32 x 256).
    unsafe {
        asm!(
            ".rept 32",
            "add {acc}, qword ptr [{p}]",
            "add {acc}, qword ptr [{p} + 32]",
            "add {acc}, qword ptr [{p} + 64]",
            "add {acc}, qword ptr [{p} + 96]",
            "add {acc}, qword ptr [{p} + 128]",
            "mov qword ptr [{p} + 160], {acc}",
            "add {acc}, qword ptr [{p} + 192]",
            "mov qword ptr [{p} + 224], {acc}",
            ".rept {nops}",
            "nop",
            ".endr",
            "add {p}, 256",
            ".endr",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
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
            "add {acc}, qword ptr [{p}]",
            "mov qword ptr [{p} + 32], {acc}",
            "add {p}, 64",
            ".endr",
            acc = inout(reg) acc,
            p = inout(reg) p => _,
            options(nostack),
        );
    }
    acc
}

/// 64-byte loads of a whole block (AVX-512F).
///
/// # Safety
/// See [`super::Kernel::call`]; the CPU must support AVX-512F.
#[inline(never)]
unsafe fn read_avx512(p: *mut u8) -> u64 {
    // SAFETY: the caller guarantees the block and the CPU feature.
    unsafe {
        asm!(
            ".rept 32",
            "vmovdqu64 zmm0, zmmword ptr [{p}]",
            "vmovdqu64 zmm1, zmmword ptr [{p} + 64]",
            "vmovdqu64 zmm2, zmmword ptr [{p} + 128]",
            "vmovdqu64 zmm3, zmmword ptr [{p} + 192]",
            "add {p}, 256",
            ".endr",
            "vzeroupper",
            p = inout(reg) p => _,
            out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
            options(nostack, readonly),
        );
    }
    0
}

/// 32-byte loads of a whole block (AVX2).
///
/// # Safety
/// See [`super::Kernel::call`]; the CPU must support AVX.
#[inline(never)]
unsafe fn read_avx2(p: *mut u8) -> u64 {
    // SAFETY: the caller guarantees the block and the CPU feature.
    unsafe {
        asm!(
            ".rept 64",
            "vmovdqu ymm0, ymmword ptr [{p}]",
            "vmovdqu ymm1, ymmword ptr [{p} + 32]",
            "vmovdqu ymm2, ymmword ptr [{p} + 64]",
            "vmovdqu ymm3, ymmword ptr [{p} + 96]",
            "add {p}, 128",
            ".endr",
            "vzeroupper",
            p = inout(reg) p => _,
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
            options(nostack, readonly),
        );
    }
    0
}

/// 16-byte loads of a whole block (SSE2, always present on x86_64).
///
/// # Safety
/// See [`super::Kernel::call`].
#[inline(never)]
unsafe fn read_sse2(p: *mut u8) -> u64 {
    // SAFETY: the caller guarantees the block.
    unsafe {
        asm!(
            ".rept 128",
            "movdqu xmm0, xmmword ptr [{p}]",
            "movdqu xmm1, xmmword ptr [{p} + 16]",
            "movdqu xmm2, xmmword ptr [{p} + 32]",
            "movdqu xmm3, xmmword ptr [{p} + 48]",
            "add {p}, 64",
            ".endr",
            p = inout(reg) p => _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            options(nostack, readonly),
        );
    }
    0
}

/// Every vector read kernel this CPU runs, widest first, with its name. The widest is not
/// always the fastest (on AMD Zen 4 the AVX-512 loop reads less than the AVX2 one): the
/// bandwidth test times them all and keeps the fastest.
pub fn read_wide_kernels() -> Vec<(super::RawKernel, &'static str)> {
    let mut kernels: Vec<(super::RawKernel, &'static str)> = Vec::new();
    if std::arch::is_x86_feature_detected!("avx512f") {
        kernels.push((read_avx512, "avx512"));
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        kernels.push((read_avx2, "avx2"));
    }
    kernels.push((read_sse2, "sse2"));
    kernels
}
