//! A crew of threads, one pinned to each given CPU, that set up their own memory (first touch on
//! their CPU) and then run the same list of phases in lockstep: every phase starts on all threads
//! at once (a barrier), each thread runs it by its own clock and records what it did. A stop
//! request skips the work of the remaining phases but not their barriers, so no thread waits
//! for one that left.

use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What one thread did in one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Units of work done (bytes for bandwidth, loads for a chase).
    pub work: f64,
    /// The thread's own time.
    pub elapsed: Duration,
}

/// Runs `phases` on one thread per CPU of `cpus`. `setup(index)` runs on the pinned thread
/// before the first phase and builds its state; `work(index, state, phase)` runs one phase.
/// Returns `samples[thread][phase]` (`None` where a phase was skipped by a stop request).
pub fn run<S, P, W, F>(
    cpus: &[usize],
    phases: &[P],
    setup: F,
    work: W,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<Vec<Option<Sample>>>, String>
where
    P: Sync,
    F: Fn(usize) -> Result<S, String> + Sync,
    W: Fn(usize, &mut S, &P) -> Sample + Sync,
{
    let barrier = Barrier::new(cpus.len());
    let results: Vec<Result<Vec<Option<Sample>>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let (barrier, setup, work) = (&barrier, &setup, &work);
                scope.spawn(move || {
                    let pinned = crate::os::pin_current_thread(cpu)
                        .map_err(|e| format!("cannot pin a thread to CPU {cpu}: {e}"));
                    let mut state = pinned.and_then(|_| setup(i));
                    let mut samples = Vec::with_capacity(phases.len());
                    // Everyone has set up (or failed) before the first phase starts.
                    barrier.wait();
                    for phase in phases {
                        barrier.wait();
                        let sample = match &mut state {
                            Ok(s) if !should_stop() => Some(work(i, s, phase)),
                            _ => None,
                        };
                        samples.push(sample);
                    }
                    state.map(|_| samples)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a measuring thread panicked".into()))
            })
            .collect()
    });
    results.into_iter().collect()
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

/// mm-mem's aggregate rate for one phase: all threads' work over the mean thread time. `None`
/// when no thread ran the phase.
pub fn aggregate_rate(samples: &[Vec<Option<Sample>>], phase: usize) -> Option<f64> {
    let ran: Vec<Sample> = samples
        .iter()
        .filter_map(|t| t.get(phase).copied().flatten())
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

    #[test]
    fn phases_run_in_lockstep_on_pinned_threads() {
        let cpus: Vec<usize> = crate::os::allowed_cpus().unwrap_or_else(|| vec![0]);
        let phases = [1.0, 2.0, 3.0];
        let out = run(
            &cpus,
            &phases,
            Ok,
            |_, _, p| timed(Duration::from_millis(5), &|| false, || *p),
            &|| false,
        )
        .unwrap();
        assert_eq!(out.len(), cpus.len());
        assert!(
            out.iter()
                .all(|t| t.len() == 3 && t.iter().all(Option::is_some))
        );
        let rate = aggregate_rate(&out, 2).unwrap();
        assert!(rate > 0.0);
    }

    #[test]
    fn a_failed_setup_is_an_error_and_nobody_hangs() {
        let cpus: Vec<usize> = crate::os::allowed_cpus().unwrap_or_else(|| vec![0]);
        let r = run(
            &cpus,
            &[0u8; 3],
            |i| {
                if i == 0 {
                    Err("no memory".to_string())
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
        assert_eq!(r.unwrap_err(), "no memory");
    }

    #[test]
    fn a_stop_request_skips_the_work() {
        let cpus = [crate::os::allowed_cpus().map_or(0, |c| c[0])];
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
}
