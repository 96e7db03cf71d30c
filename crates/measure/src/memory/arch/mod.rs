//! The measured loops, one implementation per architecture behind the same signatures: the
//! 256-load pointer chase, mm-mem's read/write mix kernels over one 8 KiB block (with the loaded
//! sweep's NOP padding), and a wide-vector read kernel.
//!
//! Why the compiler cannot drop or reorder the measured accesses: on x86_64 and aarch64 every
//! measured load and store is inside an `asm!` block, which the compiler treats as opaque (it
//! may not delete, merge, vectorise or move the instructions inside, and without `nomem` it
//! assumes the block reads and writes memory). The generated code was checked with objdump: each
//! kernel is the straight-line sequence written here. The generic fallback uses volatile
//! accesses, which the compiler must emit one for one and in order.
//!
//! Every kernel is `#[inline(never)]`: LLVM sizes inline assembly by its lines, not by what
//! `.rept` expands to, so a kernel inlined into a loop would put the loop's short conditional
//! branches (aarch64 `tbz`, ±32 KiB) out of range. One call per 8 KiB block or 256 loads costs
//! nothing measurable.

#[cfg(target_arch = "aarch64")]
#[path = "aarch64.rs"]
mod imp;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[path = "generic.rs"]
mod imp;
#[cfg(target_arch = "x86_64")]
#[path = "x86_64.rs"]
mod imp;

pub use imp::chase;

/// Dependent loads per `chase` call.
pub const CHASE_LOADS: usize = 256;

/// The raw signature of a kernel over one 8 KiB block: reads (and writes) it, returns a checksum.
type RawKernel = unsafe fn(*mut u8) -> u64;

/// A kernel over one 8 KiB block that this module vouches for: only the functions here build
/// one, and only for instructions this CPU has (the vector kernel is checked at run time).
#[derive(Clone, Copy)]
pub struct Kernel(RawKernel);

impl Kernel {
    /// Runs the kernel on one block and returns its checksum.
    ///
    /// # Safety
    /// `p` must be valid for reads and writes of 8 KiB and not accessed concurrently.
    pub unsafe fn call(self, p: *mut u8) -> u64 {
        // SAFETY: forwarded caller guarantee; the kernel's instructions exist on this CPU.
        unsafe { (self.0)(p) }
    }
}

/// mm-mem's read/write mixes: per 64-byte line, "read" is an 8-byte load and "write" an 8-byte
/// store of the running sum at +32 after the load at +0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// Two loads per line.
    AllReads,
    /// Of every 3 lines, 2 read-only and 1 read and written.
    ThreeToOne,
    /// Of every 4 lines, 2 read-only and 2 read and written.
    TwoToOne,
    /// Every line read and written.
    OneToOne,
}

impl Mix {
    /// All four, in mm-mem's order.
    pub const ALL: [Mix; 4] = [Mix::AllReads, Mix::ThreeToOne, Mix::TwoToOne, Mix::OneToOne];

    /// mm-mem's label (the JSON key).
    pub fn label(self) -> &'static str {
        match self {
            Mix::AllReads => "all reads",
            Mix::ThreeToOne => "3:1 read/write",
            Mix::TwoToOne => "2:1 read/write",
            Mix::OneToOne => "1:1 read/write",
        }
    }

    /// Bytes counted per byte of address range walked: 1 + the share of lines written back.
    pub fn traffic_factor(self) -> f64 {
        match self {
            Mix::AllReads => 1.0,
            Mix::ThreeToOne => 1.0 + 1.0 / 3.0,
            Mix::TwoToOne => 1.5,
            Mix::OneToOne => 2.0,
        }
    }
}

/// The peak-bandwidth kernel for a mix (no padding).
pub fn mix_kernel(mix: Mix) -> Kernel {
    Kernel(match mix {
        Mix::AllReads => imp::all_reads,
        Mix::ThreeToOne => imp::three_to_one,
        Mix::TwoToOne => imp::two_to_one::<0>,
        Mix::OneToOne => imp::one_to_one,
    })
}

/// Every vector read kernel this CPU runs (at least one), widest first, with its name.
pub fn read_wide_kernels() -> Vec<(Kernel, &'static str)> {
    imp::read_wide_kernels()
        .into_iter()
        .map(|(k, name)| (Kernel(k), name))
        .collect()
}

/// DCPerf's delay labels for the loaded-latency sweep.
pub const DELAYS: [u32; 24] = [
    1, 8, 32, 48, 64, 80, 88, 96, 104, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768,
    1024, 1536, 2048,
];

/// NOPs after each 4-line group of the 2:1 generator for a delay label: 3 x the label, except
/// that mm-mem's pre-generated "104" kernel pads 3 x 120 (its 104-NOP building block is made of
/// 64 + 48 + 8). We copy the quirk so our sweep lines up with DCPerf's.
pub fn nops_per_group(delay: u32) -> usize {
    3 * if delay == 104 { 120 } else { delay as usize }
}

/// The 2:1 generator kernel for a delay label of [`DELAYS`], padded as mm-mem pads it.
pub fn loaded_kernel(delay: u32) -> Option<Kernel> {
    let k: RawKernel = match delay {
        1 => imp::two_to_one::<3>,
        8 => imp::two_to_one::<24>,
        32 => imp::two_to_one::<96>,
        48 => imp::two_to_one::<144>,
        64 => imp::two_to_one::<192>,
        80 => imp::two_to_one::<240>,
        88 => imp::two_to_one::<264>,
        96 => imp::two_to_one::<288>,
        104 => imp::two_to_one::<360>,
        112 => imp::two_to_one::<336>,
        128 => imp::two_to_one::<384>,
        160 => imp::two_to_one::<480>,
        192 => imp::two_to_one::<576>,
        224 => imp::two_to_one::<672>,
        256 => imp::two_to_one::<768>,
        320 => imp::two_to_one::<960>,
        384 => imp::two_to_one::<1152>,
        448 => imp::two_to_one::<1344>,
        512 => imp::two_to_one::<1536>,
        640 => imp::two_to_one::<1920>,
        768 => imp::two_to_one::<2304>,
        1024 => imp::two_to_one::<3072>,
        1536 => imp::two_to_one::<4608>,
        2048 => imp::two_to_one::<6144>,
        _ => return None,
    };
    Some(Kernel(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_delay_has_a_kernel_padded_as_its_label_says() {
        for d in DELAYS {
            assert!(loaded_kernel(d).is_some(), "{d}");
        }
        assert!(loaded_kernel(2).is_none());
        assert_eq!(nops_per_group(8), 24);
        assert_eq!(nops_per_group(104), 360);
        assert_eq!(nops_per_group(112), 336);
    }

    /// A block whose lines hold 1 at +0 and 0 at +32, so a written +32 word shows.
    fn block() -> Vec<u64> {
        (0..1024).map(|i| u64::from(i % 8 == 0)).collect()
    }

    fn written_lines(block: &[u64]) -> usize {
        block.chunks(8).filter(|line| line[4] != 0).count()
    }

    fn run(kernel: Kernel, block: &mut [u64]) -> u64 {
        assert_eq!(block.len(), 1024);
        // SAFETY: `block` is 8 KiB, aligned for u64, and used by nothing else.
        unsafe { kernel.call(block.as_mut_ptr().cast()) }
    }

    #[test]
    fn kernels_read_and_write_what_the_mix_says() {
        let mut b = block();
        assert_eq!(
            run(mix_kernel(Mix::AllReads), &mut b),
            128,
            "one 1 per line, 128 lines"
        );
        assert_eq!(written_lines(&b), 0);
        let mut b = block();
        run(mix_kernel(Mix::OneToOne), &mut b);
        assert_eq!(written_lines(&b), 128, "every line written");
        let mut b = block();
        run(loaded_kernel(2048).unwrap(), &mut b);
        assert_eq!(written_lines(&b), 64, "2:1 writes two lines of every four");
        let mut b = block();
        run(mix_kernel(Mix::TwoToOne), &mut b);
        assert_eq!(written_lines(&b), 64);
        let mut b = block();
        run(mix_kernel(Mix::ThreeToOne), &mut b);
        assert_eq!(
            written_lines(&b),
            43,
            "42 groups of three plus the tail's written line"
        );
        let kernels = read_wide_kernels();
        assert!(!kernels.is_empty(), "at least one read kernel");
        for (kernel, name) in kernels {
            let mut b = block();
            run(kernel, &mut b);
            assert_eq!(written_lines(&b), 0, "{name} only reads");
        }
    }
}
