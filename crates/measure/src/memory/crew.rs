//! A crew of threads, one pinned to each given CPU, that set up their own memory (first touch on
//! their CPU) and then run the same list of phases in lockstep: every phase starts on all threads
//! at once, each thread runs it by its own clock and records what it did.
//!
//! Nothing can leave the others waiting: a thread that cannot be started, fails its setup or
//! panics leaves the gate (the others stop waiting for it), any setup failure or stop request
//! skips the remaining work, and the first setup error is what the crew returns.

use super::error::{MemoryError, Result};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// What one thread did in one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Units of work done (bytes for bandwidth, loads for a chase).
    pub work: f64,
    /// The thread's own time.
    pub elapsed: Duration,
}

/// A reusable barrier whose members can leave: `wait` returns once every member still in the
/// crew has arrived.
struct Gate {
    state: Mutex<GateState>,
    turned: Condvar,
}

struct GateState {
    members: usize,
    arrived: usize,
    round: u64,
}

impl Gate {
    fn new(members: usize) -> Self {
        Gate {
            state: Mutex::new(GateState {
                members,
                arrived: 0,
                round: 0,
            }),
            turned: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the gate when the last member arrives.
    fn open_if_full(&self, s: &mut GateState) {
        if s.members > 0 && s.arrived >= s.members {
            s.arrived = 0;
            s.round += 1;
            self.turned.notify_all();
        }
    }

    fn wait(&self) {
        let mut s = self.lock();
        let round = s.round;
        s.arrived += 1;
        self.open_if_full(&mut s);
        while s.round == round {
            s = self.turned.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// A member leaves for good (it failed); the others no longer wait for it.
    fn leave(&self) {
        let mut s = self.lock();
        s.members = s.members.saturating_sub(1);
        self.open_if_full(&mut s);
    }
}

/// Runs `phases` on one thread per CPU of `cpus`. `setup(index)` runs on the pinned thread
/// before the first phase and builds its state; `work(index, state, phase)` runs one phase.
/// Returns `samples[thread][phase]` (`None` where a phase was skipped by a stop request), or the
/// first thread's failure.
pub fn run<S, P, W, F>(
    cpus: &[usize],
    phases: &[P],
    setup: F,
    work: W,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<Vec<Option<Sample>>>>
where
    P: Sync,
    F: Fn(usize) -> Result<S> + Sync,
    W: Fn(usize, &mut S, &P) -> Sample + Sync,
{
    let gate = Gate::new(cpus.len());
    let failed = AtomicBool::new(false);
    let results: Vec<Result<Vec<Option<Sample>>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let (gate, failed, setup, work) = (&gate, &failed, &setup, &work);
                let spawned = std::thread::Builder::new()
                    .name(format!("crew-{i}"))
                    .spawn_scoped(scope, move || {
                        let outcome = catch_unwind(AssertUnwindSafe(|| {
                            member(i, cpu, phases, gate, failed, setup, work, should_stop)
                        }));
                        outcome.unwrap_or_else(|_| {
                            failed.store(true, Ordering::Relaxed);
                            gate.leave();
                            Err(MemoryError::Panicked(format!(
                                "the measuring thread on CPU {cpu}"
                            )))
                        })
                    });
                spawned.map_err(|cause| {
                    failed.store(true, Ordering::Relaxed);
                    gate.leave();
                    MemoryError::Spawn { cpu, cause }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(MemoryError::Panicked("a measuring thread".into()))),
                Err(e) => Err(e),
            })
            .collect()
    });
    results.into_iter().collect()
}

/// One member's life: pin, set up, then every phase (work skipped after a failure or a stop).
#[allow(clippy::too_many_arguments)]
fn member<S, P, W, F>(
    i: usize,
    cpu: usize,
    phases: &[P],
    gate: &Gate,
    failed: &AtomicBool,
    setup: &F,
    work: &W,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<Option<Sample>>>
where
    F: Fn(usize) -> Result<S>,
    W: Fn(usize, &mut S, &P) -> Sample,
{
    let state = crate::os::pin_current_thread(cpu)
        .map_err(|cause| MemoryError::Pin { cpu, cause })
        .and_then(|_| setup(i));
    let mut state = match state {
        Ok(s) => s,
        Err(e) => {
            failed.store(true, Ordering::Relaxed);
            gate.leave();
            return Err(e);
        }
    };
    // Everyone has set up (or left) before the first phase starts.
    gate.wait();
    let mut samples = Vec::with_capacity(phases.len());
    for phase in phases {
        gate.wait();
        let skip = should_stop() || failed.load(Ordering::Relaxed);
        samples.push((!skip).then(|| work(i, &mut state, phase)));
    }
    Ok(samples)
}

/// Runs `step` (which returns the work it did) until `duration` has passed on this thread's
/// clock or a stop is requested; the clock is read once per step.
pub fn timed(
    duration: Duration,
    should_stop: &(dyn Fn() -> bool + Sync),
    mut step: impl FnMut() -> f64,
) -> Sample {
    let start = Instant::now();
    let mut work = 0.0;
    loop {
        work += step();
        let elapsed = start.elapsed();
        if elapsed >= duration || should_stop() {
            return Sample { work, elapsed };
        }
    }
}

/// mm-mem's aggregate rate for one phase: all threads' work over the mean thread time. Samples
/// shorter than `min_elapsed` (a phase a stop request cut short) do not count; `None` when no
/// thread completed the phase.
pub fn aggregate_rate(
    samples: &[Vec<Option<Sample>>],
    phase: usize,
    min_elapsed: Duration,
) -> Option<f64> {
    let ran: Vec<Sample> = samples
        .iter()
        .filter_map(|t| t.get(phase).copied().flatten())
        .filter(|s| s.elapsed >= min_elapsed)
        .collect();
    if ran.is_empty() {
        return None;
    }
    let work: f64 = ran.iter().map(|s| s.work).sum();
    let mean_secs = ran.iter().map(|s| s.elapsed.as_secs_f64()).sum::<f64>() / ran.len() as f64;
    (mean_secs > 0.0).then(|| work / mean_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus() -> Vec<usize> {
        crate::os::allowed_cpus().unwrap_or_else(|| vec![0])
    }

    #[test]
    fn phases_run_in_lockstep_on_pinned_threads() {
        let cpus = cpus();
        let phases = [1.0, 2.0, 3.0];
        // Each thread notes, per phase, when it began and ended and the CPU it ran on:
        // (thread, phase, began, ended, cpu).
        type Seen = (usize, usize, Instant, Instant, Option<usize>);
        let seen: Mutex<Vec<Seen>> = Mutex::new(Vec::new());
        let out = run(
            &cpus,
            &phases,
            Ok,
            |i, _, p| {
                let began = Instant::now();
                // SAFETY: sched_getcpu has no preconditions; -1 means it is unsupported.
                let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok();
                let sample = timed(Duration::from_millis(5), &|| false, || *p);
                let phase = phases.iter().position(|q| q == p).unwrap_or(usize::MAX);
                seen.lock().unwrap_or_else(|e| e.into_inner()).push((
                    i,
                    phase,
                    began,
                    Instant::now(),
                    cpu,
                ));
                sample
            },
            &|| false,
        )
        .unwrap();
        assert_eq!(out.len(), cpus.len());
        assert!(
            out.iter()
                .all(|t| t.len() == 3 && t.iter().all(Option::is_some))
        );
        let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
        assert_eq!(seen.len(), cpus.len() * phases.len());
        // Pinned: every thread ran on its own CPU, in every phase.
        for (i, _, _, _, cpu) in &seen {
            if let Some(cpu) = cpu {
                assert_eq!(*cpu, cpus[*i], "thread {i} ran on CPU {cpu}");
            }
        }
        // Lockstep: no thread began phase k+1 before every thread had ended phase k.
        for k in 0..phases.len() - 1 {
            let last_end = seen.iter().filter(|s| s.1 == k).map(|s| s.3).max().unwrap();
            let first_next = seen
                .iter()
                .filter(|s| s.1 == k + 1)
                .map(|s| s.2)
                .min()
                .unwrap();
            assert!(
                first_next >= last_end,
                "phase {} began before phase {k} ended",
                k + 1
            );
        }
        // The work each phase asked for is what each thread reports.
        for thread in &out {
            for (sample, p) in thread.iter().zip(phases) {
                let s = sample.as_ref().unwrap();
                assert_eq!(s.work % p, 0.0, "{} is not a multiple of {p}", s.work);
            }
        }
        assert!(aggregate_rate(&out, 2, Duration::ZERO).unwrap() > 0.0);
        assert!(
            aggregate_rate(&out, 2, Duration::from_secs(1)).is_none(),
            "short samples do not count"
        );
    }

    #[test]
    fn a_failed_setup_is_an_error_and_nobody_hangs() {
        let r = run(
            &cpus(),
            &[0u8; 3],
            |i| {
                if i == 0 {
                    Err(MemoryError::Setup("no memory".into()))
                } else {
                    Ok(())
                }
            },
            |_, _, _| Sample {
                work: 1.0,
                elapsed: Duration::from_millis(1),
            },
            &|| false,
        );
        assert_eq!(r.unwrap_err().to_string(), "no memory");
    }

    #[test]
    fn a_panic_in_one_thread_is_an_error_and_nobody_hangs() {
        let r = run(
            &cpus(),
            &[0u8; 3],
            Ok,
            |i, _, _| {
                assert!(i != 0, "thread 0 fails mid-phase");
                Sample {
                    work: 1.0,
                    elapsed: Duration::from_millis(1),
                }
            },
            &|| false,
        );
        assert!(r.unwrap_err().to_string().contains("panicked"));
    }

    #[test]
    fn a_stop_request_skips_the_work() {
        let cpus = [cpus()[0]];
        let out = run(
            &cpus,
            &[0u8; 2],
            |_| Ok(()),
            |_, _, _| unreachable!(),
            &|| true,
        )
        .unwrap();
        assert_eq!(out[0], vec![None, None]);
    }

    #[test]
    fn members_can_leave_the_gate() {
        // A member blocked at the gate is released when the only other member leaves for good.
        let gate = std::sync::Arc::new(Gate::new(2));
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::sync::Arc::clone(&gate);
        std::thread::spawn(move || {
            waiter.wait();
            let _ = tx.send(());
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            rx.try_recv().is_err(),
            "the gate held while a member was missing"
        );
        gate.leave();
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("the waiting member was released when the other left");
    }
}
