//! Progress on stderr while sections run. On a terminal: one bar per section with its name, the
//! current step and the time left (redrawn in place). Otherwise: one plain line per section and
//! per step, no control characters, so logs (benchpress keeps every stderr line) stay readable.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// The progress display of one section.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Starts showing `section`; `expected` sizes the bar (a spinner when unknown).
    pub fn start(section: &'static str, detail: &str, expected: Option<Duration>) -> Progress {
        if !std::io::stderr().is_terminal() {
            eprintln!("health_check: {section}{detail}");
            return Progress { bar: None };
        }
        let bar = match expected {
            Some(d) if !d.is_zero() => {
                let bar = ProgressBar::with_draw_target(
                    Some(d.as_millis() as u64),
                    ProgressDrawTarget::stderr(),
                );
                bar.set_style(
                    ProgressStyle::with_template("{prefix:>8} [{bar:30}] {msg} ({eta} left)")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                bar
            }
            _ => {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{prefix:>8} {spinner} {msg} ({elapsed})")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar
            }
        };
        bar.set_prefix(section);
        bar.set_message(
            detail
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .to_string(),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        if expected.is_some() {
            // The bar tracks the time spent against the time expected.
            let ticker = bar.clone();
            let started = std::time::Instant::now();
            std::thread::spawn(move || {
                while !ticker.is_finished() {
                    let len = ticker.length().unwrap_or(0);
                    ticker.set_position((started.elapsed().as_millis() as u64).min(len));
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
        }
        Progress { bar: Some(bar) }
    }

    /// Reports a step within the section.
    pub fn step(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(line.to_string()),
            None => eprintln!("health_check: {line}"),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
