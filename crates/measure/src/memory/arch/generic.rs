//! Portable fallback for other architectures: volatile accesses, which the compiler must emit one
//! for one and in order. The loaded sweep's padding is a counted loop here, so its delays do not
//! match mm-mem's NOP counts; x86_64 and aarch64 use the assembly kernels.

use std::ptr::{read_volatile, write_volatile};

/// 256 dependent loads.
///
/// # Safety
/// `p` must point into a chain whose every slot holds the address of another slot.
pub unsafe fn chase(p: *const u8) -> *const u8 {
    let mut p = p;
    for _ in 0..256 {
        // SAFETY: the caller guarantees `p` is a readable, aligned slot holding the next address.
        p = unsafe { read_volatile(p.cast::<*const u8>()) };
    }
    p
}

/// The first `lines` cache lines of the block at `p`: one read each, then a write where `write`
/// says so, else a second read.
///
/// # Safety
/// `p` must be valid for reads and writes of `lines` x 64 bytes (at most the 8 KiB block).
unsafe fn lines(p: *mut u8, lines: usize, write: impl Fn(usize) -> bool) -> u64 {
    let mut acc = 0u64;
    let words = p.cast::<u64>();
    for line in 0..lines {
        // SAFETY: line < 128 keeps every access inside the caller's 8 KiB block.
        unsafe {
            acc = acc.wrapping_add(read_volatile(words.add(line * 8)));
            if write(line) {
                write_volatile(words.add(line * 8 + 4), acc);
            } else {
                acc = acc.wrapping_add(read_volatile(words.add(line * 8 + 4)));
            }
        }
    }
    acc
}

/// All reads.
///
/// # Safety
/// See [`super::Kernel::call`].
pub unsafe fn all_reads(p: *mut u8) -> u64 {
    // SAFETY: forwarded caller guarantee.
    unsafe { lines(p, 128, |_| false) }
}

/// 3:1.
///
/// # Safety
/// See [`super::Kernel::call`].
pub unsafe fn three_to_one(p: *mut u8) -> u64 {
    // SAFETY: forwarded caller guarantee.
    unsafe { lines(p, 128, |l| l % 3 == 2 || l == 127) }
}

/// 2:1 with `NOPS` iterations of padding per group.
///
/// # Safety
/// See [`super::Kernel::call`].
pub unsafe fn two_to_one<const NOPS: usize>(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    for group in 0..32 {
        // SAFETY: each group stays inside the caller's 8 KiB block.
        acc = acc.wrapping_add(unsafe { lines(p.add(group * 256), 4, |l| l >= 2) });
        for _ in 0..NOPS {
            std::hint::black_box(());
        }
    }
    acc
}

/// 1:1.
///
/// # Safety
/// See [`super::Kernel::call`].
pub unsafe fn one_to_one(p: *mut u8) -> u64 {
    // SAFETY: forwarded caller guarantee.
    unsafe { lines(p, 128, |_| true) }
}

/// Reads the 8 KiB block at `p` one word at a time.
///
/// # Safety
/// See [`super::Kernel::call`].
unsafe fn read_words(p: *mut u8) -> u64 {
    let mut acc = 0u64;
    for i in 0..1024 {
        // SAFETY: 1024 words = the caller's 8 KiB block.
        acc = acc.wrapping_add(unsafe { read_volatile(p.cast::<u64>().add(i)) });
    }
    acc
}

/// The read kernels and their names (no vectors here).
pub fn read_wide_kernels() -> Vec<(super::RawKernel, &'static str)> {
    vec![(read_words, "scalar")]
}
