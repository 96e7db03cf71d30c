//! The measuring floor of health_check: the machine as it is (`system`) and the sections that
//! measure it (memory, network, scheduling, storage). It knows nothing of documents, verdicts or
//! the command line: the crates above turn its results into those.

// The floor below, under the names the code uses (`crate::os`, `crate::units`, ...).
pub use health_check_base::{command, error, os, rng, stats, trust, units};

// `system` first: the sections may read it.
pub mod memory;
pub mod net;
pub mod sched;
pub mod storage;
pub mod system;
