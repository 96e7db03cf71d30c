//! health_check: a native re-implementation of DCPerf's `health_check` benchmark.
//!
//! One binary measures a machine before anyone trusts other benchmark numbers from it: memory
//! latency and bandwidth, network latency and TCP bandwidth to peer machines (iperf3 wire
//! protocol), the cost of sleeping and waking threads, and optionally storage. It prints one JSON
//! document on stdout (the benchpress `metrics` object, `docs/contract.md`) and a summary on stderr.
//!
//! This crate holds the floors above the measurement (the wire, node checks, history, judge,
//! render, profiles, the command line and the run); the root package's `main.rs` calls
//! [`run::entry::main`], and its tests call the parsers and the protocol code directly.

// Layers, each importing only from those above it in this list (docs/architecture.md). The two
// lowest are crates of their own (crates/base, crates/measure), so the compiler holds them to it;
// tests/integration/layers.rs holds the floors of this crate, and the rooms inside each crate.
// Leaves, and the measurement (the machine, then the sections), under the names the code uses.
pub use health_check_base::{command, error, os, rng, stats, trust, units};
pub use health_check_measure::{memory, net, sched, storage, system};
// Wire: the document and the fleet report, as written and as read back.
pub mod nhc;
pub mod wire;
// History: a machine's past runs in SQLite, read and written as wire types.
pub mod history;
// Judge: every verdict.
pub mod judge;
// Render: JSON, the human summaries, HTML, JUnit, Prometheus, the envelope.
pub mod render;
// The run-length presets and every default, in one table.
pub mod profile;
// The command line and the run.
pub mod cli;
pub mod config;
pub mod run;
