//! health_check: a native re-implementation of DCPerf's `health_check` benchmark.
//!
//! One binary measures a machine before anyone trusts other benchmark numbers from it: memory
//! latency and bandwidth, network latency and TCP bandwidth to peer machines (iperf3 wire
//! protocol), the cost of sleeping and waking threads, and optionally storage. It prints one JSON
//! document on stdout (the benchpress `metrics` object, `docs/contract.md`) and a summary on stderr.
//!
//! The crate is a library so that integration tests can call the parsers and the protocol code
//! directly; `main.rs` only parses the command line and calls [`run::run`].

pub mod checks;
pub mod cli;
pub mod config;
pub mod error;
pub mod fleet;
pub mod memory;
pub mod net;
pub mod os;
pub mod report;
pub mod run;
pub mod sched;
pub mod stats;
pub mod storage;
pub mod system;
pub mod units;
