//! The wire floor of health_check: the document a run writes, DCPerf's documents, the fleet
//! report and the baseline file, and reading them back. It knows nothing of verdicts, node checks,
//! the history or rendering: the crates above build on it.

// The floors below, under the names the code uses (`crate::units`, `crate::system`, ...).
pub use health_check_base::{command, error, os, rng, stats, trust, units};
pub use health_check_measure::{memory, net, sched, storage, system};

pub mod wire;
