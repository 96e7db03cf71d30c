//! One window shared by tests that ran side by side. Tests started together still begin and end
//! at different moments (a busy client is retried for up to 2 s), so summing each test's own
//! rate would add rates from different times. Instead every test's byte count is read in the
//! window where all of them ran, after a settling time for TCP's slow start and the send buffers
//! to fill.

use std::time::{Duration, Instant};
use thiserror::Error;

/// Time after the last test started before the window opens.
pub const SETTLE: Duration = Duration::from_millis(500);

/// Bytes moved by each test within the common window.
#[derive(Debug, Clone, PartialEq)]
pub struct CommonWindow {
    /// The window's length, seconds.
    pub seconds: f64,
    /// Each test's bytes in the window, in the order given.
    pub bytes: Vec<u64>,
}

impl CommonWindow {
    /// Each test's rate in the window, Gbit/s (10^9).
    pub fn gbps(&self) -> Vec<f64> {
        self.bytes
            .iter()
            .map(|&b| b as f64 * 8.0 / self.seconds / 1e9)
            .collect()
    }
}

/// Why no common window could be read.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum WindowError {
    /// No test worked.
    #[error("no test worked, so there is no window to read")]
    NoTests,
    /// A test's timeline holds fewer than two samples.
    #[error("a test recorded no progress to place in time")]
    NoProgress,
    /// The tests overlapped too briefly.
    #[error(
        "the tests ran together for only {together:.1} s after {settle:.1} s to settle (at least \
         {needed:.1} s needed), so no figure is given for all at once"
    )]
    TooShort {
        /// Seconds all tests ran at once.
        together: f64,
        /// Seconds left out for ramp-up.
        settle: f64,
        /// Seconds the window must last.
        needed: f64,
    },
}

/// The window in which every timeline (byte counts sampled over time, in time order) was
/// running, opened `settle` after the last start. It must last at least `min_length`; otherwise
/// the reason is returned, for the document.
pub fn common_window(
    timelines: &[&[(Instant, u64)]],
    settle: Duration,
    min_length: Duration,
) -> Result<CommonWindow, WindowError> {
    let mut spans = Vec::with_capacity(timelines.len());
    for t in timelines {
        match (t.first(), t.last()) {
            (Some(first), Some(last)) if last.0 > first.0 => spans.push((first.0, last.0)),
            _ => return Err(WindowError::NoProgress),
        }
    }
    let (Some(start), Some(end)) = (
        spans.iter().map(|s| s.0).max(),
        spans.iter().map(|s| s.1).min(),
    ) else {
        return Err(WindowError::NoTests);
    };
    let start = start + settle;
    let length = end.saturating_duration_since(start);
    if length < min_length || length.is_zero() {
        return Err(WindowError::TooShort {
            together: end.saturating_duration_since(start - settle).as_secs_f64(),
            settle: settle.as_secs_f64(),
            needed: min_length.as_secs_f64(),
        });
    }
    Ok(CommonWindow {
        seconds: length.as_secs_f64(),
        bytes: timelines
            .iter()
            .map(|t| bytes_at(t, end).saturating_sub(bytes_at(t, start)))
            .collect(),
    })
}

/// The count at `at`, interpolated between the samples around it.
fn bytes_at(timeline: &[(Instant, u64)], at: Instant) -> u64 {
    let after = timeline.partition_point(|(t, _)| *t <= at);
    match (
        after.checked_sub(1).map(|i| timeline[i]),
        timeline.get(after),
    ) {
        (Some((t0, b0)), Some(&(t1, b1))) => {
            let span = (t1 - t0).as_secs_f64();
            let part = (at - t0).as_secs_f64() / span;
            b0 + (b1.saturating_sub(b0) as f64 * part) as u64
        }
        (Some((_, b)), None) => b,
        (None, _) => timeline.first().map_or(0, |s| s.1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A steady sender: `rate` bytes per second from `start` (seconds after `t0`) for `secs`.
    fn steady(t0: Instant, start: f64, secs: f64, rate: f64) -> Vec<(Instant, u64)> {
        let steps = (secs / 0.05) as usize;
        (0..=steps)
            .map(|i| {
                let t = i as f64 * 0.05;
                (t0 + Duration::from_secs_f64(start + t), (t * rate) as u64)
            })
            .collect()
    }

    #[test]
    fn staggered_tests_are_read_only_where_all_ran() {
        let t0 = Instant::now();
        // One test starts 2 s late (a busy retry); both run 10 s at 1 GB/s.
        let a = steady(t0, 0.0, 10.0, 1e9);
        let b = steady(t0, 2.0, 10.0, 1e9);
        let w = common_window(&[&a, &b], SETTLE, Duration::from_secs(1)).unwrap();
        assert!((w.seconds - 7.5).abs() < 1e-6, "{w:?}");
        for g in w.gbps() {
            assert!((g - 8.0).abs() < 0.01, "{g}");
        }
    }

    #[test]
    fn a_burst_outside_the_window_is_not_counted() {
        let t0 = Instant::now();
        // The early test sent 5 GB in its first second, before the other one started.
        let mut a = steady(t0, 0.0, 10.0, 1e9);
        for s in a.iter_mut().skip(1) {
            s.1 += 5_000_000_000;
        }
        let b = steady(t0, 1.0, 9.0, 1e9);
        let w = common_window(&[&a, &b], SETTLE, Duration::from_secs(1)).unwrap();
        assert!((w.gbps()[0] - 8.0).abs() < 0.01, "{w:?}");
    }

    #[test]
    fn tests_that_barely_overlap_give_no_figure() {
        let t0 = Instant::now();
        let a = steady(t0, 0.0, 5.0, 1e9);
        let b = steady(t0, 4.0, 5.0, 1e9);
        let e = common_window(&[&a, &b], SETTLE, Duration::from_secs(2)).unwrap_err();
        assert!(e.to_string().contains("only 1.0 s"), "{e}");
        assert_eq!(
            common_window(&[&a, &[]], SETTLE, Duration::ZERO),
            Err(WindowError::NoProgress)
        );
        assert_eq!(
            common_window(&[], SETTLE, Duration::ZERO),
            Err(WindowError::NoTests)
        );
    }

    #[test]
    fn counts_between_samples_are_interpolated() {
        let t0 = Instant::now();
        let t = [(t0, 0), (t0 + Duration::from_secs(2), 200)];
        assert_eq!(bytes_at(&t, t0 + Duration::from_secs(1)), 100);
        assert_eq!(bytes_at(&t, t0 + Duration::from_secs(3)), 200);
        assert_eq!(bytes_at(&t, t0), 0);
    }
}
