//! The judge floor of health_check: every verdict, from a run's own checks to a fleet's
//! comparison, blame and baseline. Above the wire; it knows nothing of rendering or the command
//! line.

// The floors below, under the names the code uses (`crate::units`, `crate::system`, ...).
pub use health_check_base::{command, error, os, rng, stats, trust, units};
pub use health_check_measure::{memory, net, sched, storage, system};
pub use health_check_wire::wire;

pub mod judge;
