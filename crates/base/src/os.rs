//! The single home for the operating-system calls the sections share: the Ctrl-C / SIGTERM flag
//! that every measurement loop polls, the CPUs this process may run on, and thread pinning.
//!
//! Linux is the target; on other systems the same functions exist and report "unsupported" or a
//! neutral answer, so the crate still builds there.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that asked us to stop (SIGINT or SIGTERM), [`DEADLINE`], or 0 while nothing has.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// What [`STOP_SIGNAL`] holds when the run's `--deadline` passed.
const DEADLINE: i32 = -1;

/// A request to stop, with the exit code the process should end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// SIGINT (Ctrl-C): exit code 130.
    Int,
    /// SIGTERM: exit code 143.
    Term,
    /// The run's `--deadline` passed: exit code 124, as timeout(1) says.
    Deadline,
}

impl Interrupt {
    /// The conventional shell exit code for this signal (128 + signal number; 124 for a
    /// deadline).
    pub fn exit_code(self) -> u8 {
        match self {
            Interrupt::Int => 130,
            Interrupt::Term => 143,
            Interrupt::Deadline => 124,
        }
    }

    /// The signal's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Interrupt::Int => "SIGINT",
            Interrupt::Term => "SIGTERM",
            Interrupt::Deadline => "the --deadline",
        }
    }
}

/// Whether SIGINT or SIGTERM has arrived since [`install_stop_handlers`], or the deadline passed
/// ([`stop_for_deadline`]). Cheap enough for hot loops that check it every few milliseconds.
pub fn interrupted() -> Option<Interrupt> {
    match STOP_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        DEADLINE => Some(Interrupt::Deadline),
        s if s == libc::SIGTERM => Some(Interrupt::Term),
        _ => Some(Interrupt::Int),
    }
}

/// Asks every measurement loop to stop because the run's deadline passed (a signal that came
/// first keeps its name).
pub fn stop_for_deadline() {
    let _ = STOP_SIGNAL.compare_exchange(0, DEADLINE, Ordering::Relaxed, Ordering::Relaxed);
}

/// The number of CPUs this process may run on (what `nproc` prints): the affinity mask, which
/// respects taskset and cpusets, falling back to the online count.
pub fn available_cpus() -> usize {
    allowed_cpus().map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |cpus| cpus.len().max(1),
    )
}

/// What the kernel says of its clock discipline (`adjtimex(2)` read with no change asked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockState {
    /// The kernel holds the clock synchronised: `STA_UNSYNC` clear and the call not
    /// `TIME_ERROR` (an NTP or PTP daemon disciplines it).
    pub synchronised: bool,
    /// The daemon's estimated error, microseconds.
    pub estimated_error_us: i64,
    /// The largest error the kernel allows it, microseconds (grows while nobody disciplines it).
    pub max_error_us: i64,
}

/// The clock's discipline, or `None` where the kernel cannot say (outside Linux, or the call
/// refused).
pub fn clock_state() -> Option<ClockState> {
    imp::clock_state()
}

#[cfg(target_os = "linux")]
mod imp {
    use super::STOP_SIGNAL;
    use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    use nix::unistd::Pid;
    use std::sync::atomic::Ordering;

    extern "C" fn on_stop_signal(sig: libc::c_int) {
        // Only an atomic store: async-signal-safe.
        STOP_SIGNAL.store(sig, Ordering::Relaxed);
    }

    /// Installs the SIGINT/SIGTERM handlers. `SA_RESETHAND` restores the default action after the
    /// first delivery, so a second Ctrl-C kills a run that does not stop quickly enough.
    pub fn install_stop_handlers() -> std::io::Result<()> {
        let action = SigAction::new(
            SigHandler::Handler(on_stop_signal),
            SaFlags::SA_RESETHAND | SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        for sig in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: the handler only stores into an atomic, which is async-signal-safe, and it
            // replaces no handler that Rust's runtime relies on.
            unsafe { sigaction(sig, &action) }.map_err(std::io::Error::from)?;
        }
        Ok(())
    }

    /// CPUs in this process's affinity mask, in ascending order.
    pub fn allowed_cpus() -> Option<Vec<usize>> {
        let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
        Some(
            (0..CpuSet::count())
                .filter(|&c| set.is_set(c).unwrap_or(false))
                .collect(),
        )
    }

    /// Pins the calling thread to one CPU.
    pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
        let mut set = CpuSet::new();
        set.set(cpu).map_err(std::io::Error::from)?;
        sched_setaffinity(Pid::from_raw(0), &set).map_err(std::io::Error::from)
    }

    /// mmap flags for anonymous hugetlb pages of 2^`log2_size` bytes.
    pub fn hugetlb_mmap_flags(log2_size: u32) -> Option<i32> {
        // MAP_HUGE_SHIFT (26) from mmap(2): the page size's log2 goes in the bits above it.
        Some(libc::MAP_HUGETLB | ((log2_size as i32) << 26))
    }

    /// The madvise(2) advice that asks for (or refuses) transparent huge pages.
    pub fn thp_advice(want: bool) -> Option<i32> {
        Some(if want {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        })
    }

    /// Binds the pages of `[addr, addr + len)` to NUMA node `node` (MPOL_BIND) before they are
    /// first touched.
    ///
    /// # Safety
    /// The range must be a mapping the caller owns (its policy changes for every user of it).
    pub unsafe fn bind_to_node(addr: *mut u8, len: usize, node: usize) -> std::io::Result<()> {
        const MASK_WORDS: usize = 16; // 1024 nodes
        if node >= MASK_WORDS * 64 {
            return Err(std::io::Error::other(format!("node {node} is beyond 1024")));
        }
        let mut mask = [0u64; MASK_WORDS];
        mask[node / 64] |= 1 << (node % 64);
        // SAFETY: mbind reads `mask` (MASK_WORDS words, maxnode bits) and only sets the NUMA
        // policy of the caller's range; without MPOL_MF_MOVE it moves and frees nothing.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                addr,
                len,
                libc::MPOL_BIND,
                mask.as_ptr(),
                (MASK_WORDS * 64 + 1) as libc::c_ulong,
                0u32,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Turns on O_DIRECT for an open file. `Ok(false)`: the filesystem does not take it (EINVAL),
    /// so I/O goes through the page cache.
    pub fn enable_direct_io(file: &std::fs::File) -> std::io::Result<bool> {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        let flags = fcntl(file, FcntlArg::F_GETFL)?;
        let with_direct = OFlag::from_bits_retain(flags) | OFlag::O_DIRECT;
        match fcntl(file, FcntlArg::F_SETFL(with_direct)) {
            Ok(_) => Ok(true),
            Err(nix::errno::Errno::EINVAL) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// open(2) flags that claim a block device exclusively: the open fails with EBUSY while it is
    /// mounted, used as swap or held by another driver.
    pub fn exclusive_device_flags() -> i32 {
        libc::O_EXCL
    }

    /// Major and minor numbers of a device number.
    pub fn major_minor(dev: u64) -> (u32, u32) {
        (
            nix::sys::stat::major(dev) as u32,
            nix::sys::stat::minor(dev) as u32,
        )
    }

    /// Detaches from the terminal: forks, and in the child starts a new session and points
    /// stdin/stdout/stderr at /dev/null, so no caller (benchpress, ssh) waits on our pipes.
    /// Returns the child's pid in the parent and `None` in the child. Call it before starting any
    /// thread: only the calling thread survives a fork.
    pub fn daemonize() -> std::io::Result<Option<u32>> {
        use nix::unistd::{ForkResult, dup2_stderr, dup2_stdin, dup2_stdout, fork, setsid};
        // SAFETY: called while the process is single-threaded (documented precondition), so the
        // child cannot inherit a lock held by another thread.
        match unsafe { fork() }.map_err(std::io::Error::from)? {
            ForkResult::Parent { child } => Ok(Some(child.as_raw() as u32)),
            ForkResult::Child => {
                setsid().map_err(std::io::Error::from)?;
                let null = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/null")?;
                dup2_stdin(&null).map_err(std::io::Error::from)?;
                dup2_stdout(&null).map_err(std::io::Error::from)?;
                dup2_stderr(&null).map_err(std::io::Error::from)?;
                Ok(None)
            }
        }
    }

    /// Retransmitted segments of a TCP socket over its life (`tcpi_total_retrans` of TCP_INFO).
    pub fn tcp_total_retransmits(fd: std::os::fd::BorrowedFd<'_>) -> Option<u64> {
        use std::os::fd::AsRawFd;
        let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: `info` is a writable buffer of `len` bytes that outlives the call, and the
        // kernel writes at most `len` bytes; `fd` is a valid open socket for the borrow.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                info.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return None;
        }
        // SAFETY: zero-initialised and (partly) filled by the kernel; every field is an integer,
        // so any byte pattern is a valid value.
        let info = unsafe { info.assume_init() };
        Some(u64::from(info.tcpi_total_retrans))
    }

    /// A network interface's driver, its version and the device's firmware version, from the
    /// `ETHTOOL_GDRVINFO` ioctl (what `ethtool -i` prints). `None` where the interface has no
    /// such driver or the call fails.
    pub fn nic_driver_info(interface: &str) -> Option<super::DriverInfo> {
        use std::os::fd::AsRawFd;
        const ETHTOOL_GDRVINFO: u32 = 0x0000_0003;
        const SIOCETHTOOL: libc::c_ulong = 0x8946;
        /// `struct ethtool_drvinfo` of linux/ethtool.h.
        #[repr(C)]
        struct DrvInfo {
            cmd: u32,
            driver: [u8; 32],
            version: [u8; 32],
            fw_version: [u8; 32],
            bus_info: [u8; 32],
            erom_version: [u8; 32],
            reserved2: [u8; 12],
            n_priv_flags: u32,
            n_stats: u32,
            testinfo_len: u32,
            eedump_len: u32,
            regdump_len: u32,
        }
        let name = interface.as_bytes();
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(&0) {
            return None;
        }
        let socket = std::net::UdpSocket::bind("0.0.0.0:0")
            .or_else(|_| std::net::UdpSocket::bind("[::]:0"))
            .ok()?;
        // SAFETY: all-zero bytes are a valid DrvInfo (integers and byte arrays only).
        let mut info: DrvInfo = unsafe { std::mem::zeroed() };
        info.cmd = ETHTOOL_GDRVINFO;
        // SAFETY: all-zero bytes are a valid ifreq (a name array and a union of plain data).
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name) {
            *dst = *src as libc::c_char;
        }
        req.ifr_ifru.ifru_data = (&mut info as *mut DrvInfo).cast();
        // SAFETY: `req` names the interface (NUL-terminated, within IFNAMSIZ) and points at
        // `info`, a buffer of the layout ETHTOOL_GDRVINFO fills; both outlive the call, and the
        // socket is open for its duration.
        let rc = unsafe { libc::ioctl(socket.as_raw_fd(), SIOCETHTOOL as _, &mut req) };
        if rc != 0 {
            return None;
        }
        let text = |b: &[u8]| {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).trim().to_string()
        };
        Some(super::DriverInfo {
            driver: text(&info.driver),
            version: text(&info.version),
            firmware: text(&info.fw_version),
            bus: text(&info.bus_info),
        })
    }

    /// `adjtimex` with no mode bits: reads, changes nothing, needs no privilege.
    pub fn clock_state() -> Option<super::ClockState> {
        // SAFETY: an all-zero timex is a valid argument (modes 0: read only).
        let mut tx: libc::timex = unsafe { std::mem::zeroed() };
        // SAFETY: `tx` is a live, writable timex for the call's duration.
        let state = unsafe { libc::adjtimex(&mut tx) };
        if state < 0 {
            return None;
        }
        // `c_long` is `i64` here and `i32` on 32-bit targets: the conversion is for those.
        #[allow(clippy::useless_conversion)]
        Some(super::ClockState {
            synchronised: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
            estimated_error_us: i64::from(tx.esterror),
            max_error_us: i64::from(tx.maxerror),
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    /// The clock's discipline is read on Linux only.
    pub fn clock_state() -> Option<super::ClockState> {
        None
    }

    /// Signals are handled on Linux only; elsewhere Ctrl-C ends the process at once.
    pub fn install_stop_handlers() -> std::io::Result<()> {
        Ok(())
    }

    /// The affinity mask is not read outside Linux.
    pub fn allowed_cpus() -> Option<Vec<usize>> {
        None
    }

    /// Pinning is unsupported outside Linux.
    pub fn pin_current_thread(_cpu: usize) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "thread pinning is supported on Linux only",
        ))
    }

    /// hugetlb pages are Linux's.
    pub fn hugetlb_mmap_flags(_log2_size: u32) -> Option<i32> {
        None
    }

    /// No THP advice outside Linux.
    pub fn thp_advice(_want: bool) -> Option<i32> {
        None
    }

    /// NUMA binding is implemented on Linux only.
    ///
    /// # Safety
    /// Nothing is done; the signature matches Linux's.
    pub unsafe fn bind_to_node(_addr: *mut u8, _len: usize, _node: usize) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "NUMA binding is supported on Linux only",
        ))
    }

    /// O_DIRECT is Linux's: I/O goes through the cache elsewhere.
    pub fn enable_direct_io(_file: &std::fs::File) -> std::io::Result<bool> {
        Ok(false)
    }

    /// Exclusive opens of block devices are Linux's.
    pub fn exclusive_device_flags() -> i32 {
        0
    }

    /// Major and minor numbers (BSD layout).
    pub fn major_minor(dev: u64) -> (u32, u32) {
        (((dev >> 24) & 0xff) as u32, (dev & 0xff_ffff) as u32)
    }

    /// Daemon mode is supported on Linux only.
    pub fn daemonize() -> std::io::Result<Option<u32>> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "--daemon is supported on Linux only",
        ))
    }

    /// TCP_INFO is read on Linux only.
    pub fn tcp_total_retransmits(_fd: std::os::fd::BorrowedFd<'_>) -> Option<u64> {
        None
    }

    /// ethtool is Linux's.
    pub fn nic_driver_info(_interface: &str) -> Option<super::DriverInfo> {
        None
    }
}

/// A network interface's driver and firmware, as `ethtool -i` prints them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DriverInfo {
    /// The kernel driver (`mlx5_core`, `ice`, `virtio_net`, `veth`).
    pub driver: String,
    /// The driver's version (often the kernel's).
    pub version: String,
    /// The device's firmware version; empty where it has none.
    pub firmware: String,
    /// The bus address (`0000:3b:00.0`); empty for virtual interfaces.
    pub bus: String,
}

/// Times this process found itself out of file descriptors (EMFILE, ENFILE).
static FD_EXHAUSTION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Records `e` if it says the process (or system) ran out of file descriptors; returns it.
pub fn note_io_error(e: std::io::Error) -> std::io::Error {
    if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
        FD_EXHAUSTION.fetch_add(1, Ordering::Relaxed);
    }
    e
}

/// How often the process has run out of file descriptors so far (compare before and after a
/// step to know whether a failure was local).
pub fn fd_exhaustions() -> u64 {
    FD_EXHAUSTION.load(Ordering::Relaxed)
}

/// The soft limit on open file descriptors (`ulimit -n`).
pub fn fd_limit() -> Option<u64> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(soft, _)| soft)
}

/// A random number from the kernel; the time and process id where /dev/urandom is unreadable.
pub fn random_u64() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)) {
        Ok(()) => u64::from_ne_bytes(b),
        Err(_) => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            t ^ u64::from(std::process::id()).rotate_left(32)
        }
    }
}

/// Memory mappings a new thread takes: its stack and guard page, and the signal stack Rust's
/// runtime gives it with its own guard page (measured: 4; one spare).
const MAPS_PER_THREAD: u64 = 5;

/// About how many more threads this process can start before the kernel refuses one, and the
/// limit that binds (`vm.max_map_count`, `kernel.threads-max`); `None` where unknown. Rust aborts
/// the process when a thread's signal stack cannot be mapped, so callers check this first.
pub fn thread_capacity() -> Option<(u64, &'static str)> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let num = |p: &str| read(p).and_then(|t| t.trim().parse::<u64>().ok());
    let by_maps = num("/proc/sys/vm/max_map_count").and_then(|max| {
        let used = read("/proc/self/maps")?.lines().count() as u64;
        // Room for the allocations the rest of the run makes.
        Some(max.saturating_sub(used + 1024) / MAPS_PER_THREAD)
    });
    let by_threads = num("/proc/sys/kernel/threads-max").and_then(|max| {
        let running = read("/proc/loadavg")?
            .split_whitespace()
            .nth(3)?
            .split_once('/')?
            .1
            .parse::<u64>()
            .ok()?;
        Some(max.saturating_sub(running + 64))
    });
    match (by_maps, by_threads) {
        (Some(m), Some(t)) if t < m => Some((t, "kernel.threads-max")),
        (Some(m), _) => Some((m, "vm.max_map_count")),
        (None, Some(t)) => Some((t, "kernel.threads-max")),
        (None, None) => None,
    }
}

/// The process's file-creation mask: from /proc/self/status on Linux, else by setting it to
/// 022 and back at once (process-wide for that instant).
pub fn umask() -> u32 {
    let from_proc = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        });
    from_proc.unwrap_or_else(|| {
        use nix::sys::stat::{Mode, umask};
        let old = umask(Mode::from_bits_truncate(0o022));
        umask(old);
        // mode_t is u32 on Linux, u16 on macOS.
        #[allow(clippy::useless_conversion)]
        u32::from(old.bits())
    })
}

/// Clears O_NONBLOCK on an open file (opened non-blocking only so the open could not hang).
pub fn set_blocking(file: &std::fs::File) -> std::io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(file, FcntlArg::F_GETFL)?);
    fcntl(file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    Ok(())
}

pub use imp::{
    allowed_cpus, bind_to_node, daemonize, enable_direct_io, exclusive_device_flags,
    hugetlb_mmap_flags, install_stop_handlers, major_minor, nic_driver_info, pin_current_thread,
    tcp_total_retransmits, thp_advice,
};

/// For the library's own tests: a prerequisite this machine lacks. One line on the terminal
/// (past the harness's capture) and the test returns, unless `HEALTH_CHECK_TEST_REQUIRE_ALL` is
/// set (CI), where it fails instead: CI runs every test or says why not.
pub fn skip_or_fail(test: &str, why: &str) {
    use std::io::Write;
    let strict =
        std::env::var("HEALTH_CHECK_TEST_REQUIRE_ALL").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !strict,
        "{test}: {why} (HEALTH_CHECK_TEST_REQUIRE_ALL is set)"
    );
    let _ = writeln!(std::io::stderr(), "skipped {test}: {why}");
}

/// Keeps the C library's large allocations mapped on their own for the rest of the process
/// (at and above 128 KiB, its starting threshold, which it otherwise raises to the largest
/// block freed so far). A fleet's readers fill large buffers on several threads and free them
/// once joined; from a thread's own heap freed memory does not go back to the system, and a
/// fleet of 100,000 documents held 140 MiB more at its peak (docs/performance.md). Glibc only;
/// elsewhere nothing.
pub fn large_allocations_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tuning value of the allocator; any value is valid.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Takes an exclusive `flock` on `file` without waiting: `Ok(true)` when taken, `Ok(false)`
/// when another open description holds it. The lock belongs to the open file description, not
/// to this descriptor: it holds while any copy (a forked child's) stays open, and nothing here
/// lifts it on drop.
pub fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor `file` owns for the call; no memory is passed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(e)
    }
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(Interrupt::Int.exit_code(), 130);
        assert_eq!(Interrupt::Term.exit_code(), 143);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn available_cpus_follows_the_affinity_mask() {
        let allowed = allowed_cpus().expect("Linux reports the affinity mask");
        assert_eq!(available_cpus(), allowed.len());
        // Pinned to one CPU (as taskset would), the count is one, whatever the machine has.
        let first = allowed[0];
        let pinned = std::thread::spawn(move || {
            pin_current_thread(first).unwrap();
            (available_cpus(), allowed_cpus())
        })
        .join()
        .unwrap();
        assert_eq!(pinned, (1, Some(vec![first])));
    }
}
