//! DCPerf's nanosleep benchmark, natively: N threads (2.5 per usable CPU) each call
//! `nanosleep(100 ns)` in a loop for a fixed time, and we count the calls. The rate shows how
//! cheaply the kernel puts threads to sleep and wakes them: the cost TaoBench pays on every
//! request. The CPU-time split over the run comes from /proc/stat (see `cpustat`).
//!
//! Each request sleeps at least the thread's timer slack (50 µs by default,
//! `/proc/self/timerslack_ns`), so one thread cannot exceed about 1 s / slack calls per second.

use super::cpustat::{CpuShares, read_cpu_times, shares_between};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The sleep each call requests, as DCPerf's sleepbench.cpp does.
pub const SLEEP_REQUEST: Duration = Duration::from_nanos(100);

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

fn worker(gate: &RwLock<()>, stop: &AtomicBool) -> u64 {
    // Blocks until the coordinator releases its write lock: all threads start together.
    drop(gate.read());
    let mut calls = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // std's sleep is one nanosleep(2) call for a sub-second request (it loops only on EINTR).
        std::thread::sleep(SLEEP_REQUEST);
        calls += 1;
    }
    calls
}

/// Runs the benchmark. `should_stop` is polled every 10 ms (Ctrl-C); returning true ends the run
/// early with the figures so far.
pub fn measure(
    config: &SleepConfig,
    should_stop: &dyn Fn() -> bool,
) -> anyhow::Result<SleepResults> {
    let stop = AtomicBool::new(false);
    let threads = config.threads.max(1);
    let gate = RwLock::new(());
    let timer_slack_ns = std::fs::read_to_string("/proc/self/timerslack_ns")
        .ok()
        .and_then(|t| t.trim().parse().ok());
    std::thread::scope(|scope| {
        let held = gate
            .write()
            .map_err(|_| anyhow::anyhow!("sleep start gate poisoned"))?;
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let spawned = std::thread::Builder::new()
                .name(format!("sleep-{i}"))
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, || worker(&gate, &stop));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Let the threads already started see `stop` and end, then report.
                    stop.store(true, Ordering::Relaxed);
                    drop(held);
                    return Err(anyhow::anyhow!(
                        "could not start sleep thread {} of {threads}: {e} (lower --sleep-threads \
                         or raise the process/thread limit)",
                        i + 1
                    ));
                }
            }
        }
        let before = read_cpu_times();
        drop(held);
        let start = Instant::now();
        let mut interrupted = false;
        while start.elapsed() < config.duration {
            if should_stop() {
                interrupted = true;
                break;
            }
            std::thread::sleep(POLL.min(config.duration.saturating_sub(start.elapsed())));
        }
        stop.store(true, Ordering::Relaxed);
        let calls_per_thread: Vec<u64> =
            handles.into_iter().map(|h| h.join().unwrap_or(0)).collect();
        let elapsed = start.elapsed();
        let after = read_cpu_times();
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
}
