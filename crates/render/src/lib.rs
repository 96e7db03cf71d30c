//! The render floor of health_check: the document and the fleet report as JSON, the summaries
//! on stderr, HTML pages, JUnit, Prometheus and the benchpress envelope. Above the judge.

// The floors below, under the names the code uses (`crate::units`, `crate::system`, ...).
pub use health_check_base::{command, error, os, rng, stats, trust, units};
pub use health_check_judge::judge;
pub use health_check_measure::{memory, net, sched, storage, system};
pub use health_check_wire::wire;

pub mod render;
