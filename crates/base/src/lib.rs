//! The lowest floor of health_check: what every other crate may use and what uses nothing of
//! theirs (the compiler holds it to that: this crate depends on no other of the workspace).

pub mod command;
pub mod error;
pub mod os;
pub mod rng;
pub mod stats;
pub mod trust;
pub mod units;
