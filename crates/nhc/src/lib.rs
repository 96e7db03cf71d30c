//! NHC's node checks for health_check: an operator's nhc.conf read as NHC 1.4.3 reads it (bash's
//! words) and its checks run natively, as checks of the document. Above the wire, beside the
//! history and the judge.

// The floors below, under the names the code uses (`crate::units`, `crate::system`, ...).
pub use health_check_base::{command, error, os, rng, stats, trust, units};
pub use health_check_measure::{memory, net, sched, storage, system};
pub use health_check_wire::wire;

pub mod nhc;
