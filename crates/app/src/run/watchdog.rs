//! `--deadline`: the run stops itself rather than be killed by whoever runs it (slurmd kills its
//! HealthCheckProgram at 60 s, NPD its plugin at the rule's timeout, systemd the unit at
//! `TimeoutStartSec`) and leave nothing behind.
//!
//! At the deadline every measurement loop is asked to stop (`os::stop_for_deadline`): the
//! section running fails, naming the deadline, the sections after it are skipped, and the
//! document is written; the run counts as failing. Once the measurements are over
//! ([`measured`]), what follows is bounded by its own deadlines (each Slurm call's) and is never
//! cut. A measurement that does not return (a
//! process stuck in the kernel on a sick node polls no flag) cannot be waited for: [`GRACE`]
//! later, what the mode registered with [`on_overrun`] runs (the Slurm mode counts the failing
//! run and acts on it; the others print a document naming the section that hung), and the
//! process exits.

use crate::os;
use crate::wire::document::Section;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long after the deadline a run that has not ended is abandoned.
pub const GRACE: Duration = Duration::from_secs(4);

/// The section measuring now, for the message of a run abandoned in it.
static RUNNING: Mutex<Option<Section>> = Mutex::new(None);

/// Set once the measurements are over: what follows (writing, Slurm's calls) is bounded by its
/// own deadlines, and a deadline passing then stops nothing.
static MEASURED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What to do when the run is abandoned: given the section it hung in, it says so and returns
/// the exit code.
type LastWords = Box<dyn Fn(Option<Section>) -> u8 + Send + Sync>;

static LAST_WORDS: OnceLock<LastWords> = OnceLock::new();

/// Records the section measuring now (`None` between sections).
pub fn running(section: Option<Section>) {
    if let Ok(mut s) = RUNNING.lock() {
        *s = section;
    }
}

/// Says the measurements are over: the watch ends.
pub fn measured() {
    MEASURED.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn over() -> bool {
    MEASURED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Registers what an abandoned run does before it exits (the first registration stands).
pub fn on_overrun(last_words: LastWords) {
    let _ = LAST_WORDS.set(last_words);
}

/// Starts the watch: at `deadline` the run is asked to stop; [`GRACE`] later, if it has not
/// ended, it is abandoned.
pub fn start(deadline: Duration) {
    start_from(deadline, std::time::Instant::now());
}

/// [`start`], the deadline counted from `began` (slurmd counts its program's time from its
/// start, before the first call to the controller).
pub fn start_from(deadline: Duration, began: std::time::Instant) {
    std::thread::spawn(move || {
        std::thread::sleep(deadline.saturating_sub(began.elapsed()));
        if over() {
            return;
        }
        os::stop_for_deadline();
        eprintln!(
            "health_check: the --deadline of {} s has passed: stopping the run",
            deadline.as_secs_f64()
        );
        std::thread::sleep(GRACE);
        if over() {
            return;
        }
        let section = RUNNING.lock().ok().and_then(|s| *s);
        eprintln!(
            "health_check: error: {} did not stop {} s after the --deadline: the run is abandoned",
            section.map_or("the run", |s| s.name()),
            GRACE.as_secs()
        );
        let code = LAST_WORDS
            .get()
            .map_or(os::Interrupt::Deadline.exit_code(), |f| f(section));
        std::process::exit(i32::from(code));
    });
}

/// The outcome of a section the deadline stopped.
pub fn overran(deadline: Option<Duration>) -> String {
    match deadline {
        Some(d) => format!("stopped at the --deadline of {} s", d.as_secs_f64()),
        None => "stopped at the --deadline".into(),
    }
}
