//! A machine's past runs for health_check, in one SQLite file: written by a run, read by the
//! judge's `--history` and by `health_check history`. Above the wire.

// The floors below, under the names the code uses (`crate::units`, `crate::system`, ...).
pub use health_check_base::{command, error, os, rng, stats, trust, units};
pub use health_check_measure::{memory, net, sched, storage, system};
pub use health_check_wire::wire;

pub mod history;
