//! health_check: a native re-implementation of DCPerf's `health_check` benchmark.
//!
//! One binary measures a machine before anyone trusts other benchmark numbers from it: memory
//! latency and bandwidth, network latency and TCP bandwidth to peer machines (iperf3 wire
//! protocol), the cost of sleeping and waking threads, and optionally storage. It prints one JSON
//! document on stdout (the benchpress `metrics` object, `docs/contract.md`) and a summary on stderr.
//!
//! This crate holds the floors at the top (profiles, the command line, the settings and the
//! run); the root package's `main.rs` calls [`run::entry::main`], and its tests call the
//! parsers and the protocol code directly.

// Layers, each importing only from those above it in this list (docs/architecture.md). Every
// floor below is a crate of its own (crates/base, measure, wire, nhc, history, judge, render),
// so the compiler holds them to it; tests/integration/layers.rs holds the rooms inside each
// crate and this crate's floors. The floors below, under the names the code uses.
pub use health_check_base::{command, error, os, rng, stats, trust, units};
pub use health_check_measure::{memory, net, sched, storage, system};
// Wire: the document and the fleet report, as written and as read back.
pub use health_check_wire::wire;
// Node checks (NHC), the history (a machine's past runs in SQLite) and the judge (every
// verdict): each above the wire, none above another.
pub use health_check_history::history;
pub use health_check_judge::judge;
pub use health_check_nhc::nhc;
// Render: JSON, the human summaries, HTML, JUnit, Prometheus, the envelope.
pub use health_check_render::render;
// The run-length presets and every default, in one table.
pub mod profile;
// The command line and the run.
pub mod cli;
pub mod config;
pub mod run;
