//! DCPerf's nanosleep benchmark, natively: N threads (2.5 per usable CPU) each call
//! `nanosleep(100 ns)` in a loop for a fixed time, and we count the calls. The rate shows how
//! cheaply the kernel puts threads to sleep and wakes them: the cost TaoBench pays on every
//! request. The CPU-time split over the run comes from /proc/stat (see `cpustat`).
//!
//! Each request sleeps at least the thread's timer slack (50 µs by default,
//! `/proc/self/timerslack_ns`), so one thread cannot exceed about 1 s / slack calls per second.

use crate::system::cpustat::{CpuShares, read_cpu_times, shares_between};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum SleepError {
    /// More threads than the process can start (Rust aborts when a thread cannot be set up, so
    /// this is checked first).
    #[error(
        "{wanted} threads is more than this process can start (about {capacity}, bound by \
         {limit}); lower --sleep-threads (DCPerf uses 2.5 per CPU) or raise {limit}"
    )]
    TooManyThreads {
        /// Threads asked for.
        wanted: usize,
        /// Threads the process can still start.
        capacity: u64,
        /// The limit that binds.
        limit: &'static str,
    },
    /// A thread could not be started.
    #[error(
        "could not start sleep thread {index} of {threads}: {cause} (lower --sleep-threads or \
         raise the process/thread limit)"
    )]
    Spawn {
        /// Which thread (1-based).
        index: usize,
        /// Threads asked for.
        threads: usize,
        /// Why.
        cause: std::io::Error,
    },
}

/// The sleep each call requests, as DCPerf's sleepbench.cpp does.
pub const SLEEP_REQUEST: Duration = Duration::from_nanos(100);

/// How long the window waits for every thread to run at least, when the run is shorter.
const STARTUP_PATIENCE: Duration = Duration::from_secs(10);

/// How often the coordinating thread checks for Ctrl-C while the workers run.
const POLL: Duration = Duration::from_millis(10);

/// Stack size of a worker: the loop needs almost none, and 2.5 x 384 CPUs is 960 threads.
const WORKER_STACK_BYTES: usize = 64 * 1024;

/// Validated sleep-section settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SleepConfig {
    /// Threads calling nanosleep.
    pub threads: usize,
    /// How long they run.
    pub duration: Duration,
}

impl SleepConfig {
    /// Settings for `threads` threads running `duration`.
    pub fn new(threads: usize, duration: Duration) -> Self {
        Self { threads, duration }
    }
}

/// DCPerf's thread count: 2.5 x CPUs, truncated as `bc` with scale=0 does, and at least one.
pub fn default_threads(cpus: usize) -> usize {
    (cpus * 5 / 2).max(1)
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SleepResults {
    /// nanosleep calls completed by each thread.
    pub calls_per_thread: Vec<u64>,
    /// From the moment all threads were released to the moment the last one stopped.
    pub elapsed: Duration,
    /// System-wide CPU split over the run; `None` if /proc/stat was unreadable.
    pub cpu: Option<CpuShares>,
    /// Why the CPU split is missing, when it is.
    pub cpu_error: Option<String>,
    /// The timer slack the threads ran with, ns.
    pub timer_slack_ns: Option<u64>,
    /// The sleep each call requested.
    pub sleep_request: Duration,
    /// Whether Ctrl-C/SIGTERM cut the run short (the figures cover the time that did run).
    pub interrupted: bool,
    /// From the release of the threads until every one of them was running: calls are counted
    /// only after that, over `elapsed`.
    pub startup: Duration,
    /// Threads running when the window began (all of them, unless start-up ran out of patience).
    pub started: usize,
}

impl SleepResults {
    /// Calls by all threads.
    pub fn calls_total(&self) -> u64 {
        self.calls_per_thread.iter().sum()
    }

    /// Calls per second by all threads (DCPerf's "calls per second").
    pub fn calls_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.calls_total() as f64 / secs
        } else {
            f64::NAN
        }
    }

    /// Calls per second of one thread on average (DCPerf's rule: above 15 000).
    pub fn calls_per_second_per_thread(&self) -> f64 {
        self.calls_per_second() / self.calls_per_thread.len().max(1) as f64
    }
}

/// What the coordinator and the workers share.
struct Shared {
    gate: RwLock<()>,
    /// Workers that have started their loop.
    running: AtomicUsize,
    /// Calls count only while set: from when every worker runs until the window ends.
    counting: AtomicBool,
    stop: AtomicBool,
}

fn worker(shared: &Shared) -> u64 {
    // Blocks until the coordinator releases its write lock: all threads start together.
    drop(shared.gate.read());
    shared.running.fetch_add(1, Ordering::Relaxed);
    let mut calls = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        // std's sleep is one nanosleep(2) call for a sub-second request (it loops only on EINTR).
        std::thread::sleep(SLEEP_REQUEST);
        if shared.counting.load(Ordering::Relaxed) {
            calls += 1;
        }
    }
    calls
}

/// Runs the benchmark. `should_stop` is polled every 10 ms (Ctrl-C); returning true ends the run
/// early with the figures so far. Calls are counted over the window in which every thread runs:
/// starting thousands of threads takes time of its own, and a thread still starting would make the
/// window's figure look better than it is.
pub fn measure(
    config: &SleepConfig,
    should_stop: &dyn Fn() -> bool,
) -> Result<SleepResults, SleepError> {
    let threads = config.threads.max(1);
    if let Some((capacity, limit)) = crate::os::thread_capacity() {
        if threads as u64 > capacity {
            return Err(SleepError::TooManyThreads {
                wanted: threads,
                capacity,
                limit,
            });
        }
    }
    let shared = Shared {
        gate: RwLock::new(()),
        running: AtomicUsize::new(0),
        counting: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    };
    let timer_slack_ns = std::fs::read_to_string("/proc/self/timerslack_ns")
        .ok()
        .and_then(|t| t.trim().parse().ok());
    std::thread::scope(|scope| {
        let held = shared.gate.write().unwrap_or_else(|p| p.into_inner());
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let spawned = std::thread::Builder::new()
                .name(format!("sleep-{i}"))
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, || worker(&shared));
            match spawned {
                Ok(h) => handles.push(h),
                Err(cause) => {
                    // Let the threads already started see `stop` and end, then report.
                    shared.stop.store(true, Ordering::Relaxed);
                    drop(held);
                    return Err(SleepError::Spawn {
                        index: i + 1,
                        threads,
                        cause,
                    });
                }
            }
        }
        drop(held);
        let released = Instant::now();
        // Thousands of threads on a few CPUs can take seconds to all run once; past this, the
        // window starts anyway and the figures say how many had started.
        let patience = (config.duration * 2).max(STARTUP_PATIENCE);
        let mut interrupted = false;
        while shared.running.load(Ordering::Relaxed) < threads && released.elapsed() < patience {
            if should_stop() {
                interrupted = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let started = shared.running.load(Ordering::Relaxed).min(threads);
        let before = read_cpu_times();
        shared.counting.store(true, Ordering::Relaxed);
        let start = Instant::now();
        let startup = start - released;
        while !interrupted && start.elapsed() < config.duration {
            if should_stop() {
                interrupted = true;
                break;
            }
            std::thread::sleep(POLL.min(config.duration.saturating_sub(start.elapsed())));
        }
        shared.counting.store(false, Ordering::Relaxed);
        let elapsed = start.elapsed();
        let after = read_cpu_times();
        shared.stop.store(true, Ordering::Relaxed);
        let calls_per_thread: Vec<u64> =
            handles.into_iter().map(|h| h.join().unwrap_or(0)).collect();
        let (cpu, cpu_error) = match (before, after) {
            (Ok(b), Ok(a)) => match shares_between(&b, &a) {
                Some(s) => (Some(s), None),
                None => (None, Some("no CPU ticks elapsed in /proc/stat".to_string())),
            },
            (Err(e), _) | (_, Err(e)) => (None, Some(format!("/proc/stat: {e}"))),
        };
        Ok(SleepResults {
            calls_per_thread,
            elapsed,
            cpu,
            cpu_error,
            timer_slack_ns,
            sleep_request: SLEEP_REQUEST,
            interrupted,
            startup,
            started,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_count_truncates_like_bc() {
        assert_eq!(default_threads(1), 2);
        assert_eq!(default_threads(2), 5);
        assert_eq!(default_threads(3), 7);
        assert_eq!(default_threads(384), 960);
        assert_eq!(default_threads(0), 1);
    }

    #[test]
    fn a_short_run_counts_calls_and_cpu() {
        let r = measure(&SleepConfig::new(2, Duration::from_millis(200)), &|| false).unwrap();
        assert_eq!(r.calls_per_thread.len(), 2);
        assert!(r.calls_per_thread.iter().all(|&c| c > 0));
        assert!(r.elapsed >= Duration::from_millis(200));
        assert!(!r.interrupted);
        assert!(r.calls_per_second() > 0.0);
        let per_thread = r.calls_per_second_per_thread();
        assert!((per_thread * 2.0 - r.calls_per_second()).abs() < 1e-6);
    }

    #[test]
    fn a_stop_request_ends_the_run_early() {
        let started = Instant::now();
        let r = measure(&SleepConfig::new(1, Duration::from_secs(30)), &|| {
            started.elapsed() > Duration::from_millis(100)
        })
        .unwrap();
        assert!(r.interrupted);
        assert!(r.elapsed < Duration::from_secs(5));
    }

    #[test]
    fn more_threads_than_the_process_can_hold_is_an_error_not_an_abort() {
        let Some((capacity, limit)) = crate::os::thread_capacity() else {
            crate::os::skip_or_fail(
                "more_threads_than_the_process_can_hold_is_an_error_not_an_abort",
                "this process's thread limit cannot be read",
            );
            return;
        };
        let wanted = capacity as usize + 1000;
        let e = measure(
            &SleepConfig::new(wanted, Duration::from_millis(10)),
            &|| false,
        )
        .unwrap_err();
        assert!(matches!(e, SleepError::TooManyThreads { .. }));
        assert!(e.to_string().contains(limit), "{e}");
    }
}
