//! health_check: a native re-implementation of DCPerf's `health_check` benchmark.
//!
//! One binary measures a machine before anyone trusts other benchmark numbers from it: memory
//! latency and bandwidth, network latency and TCP bandwidth to peer machines (iperf3 wire
//! protocol), the cost of sleeping and waking threads, and optionally storage. It prints one JSON
//! document on stdout (the benchpress `metrics` object, `docs/contract.md`) and a summary on stderr.
//!
//! The code lives in the workspace's crates, one per floor (docs/architecture.md, "Layers"):
//! `crates/base`, `measure`, `wire`, `nhc`, `history`, `judge`, `render` and `app`. This package
//! is the binary (`main.rs`), its tests, benchmarks and the tests' fault-injection build; its
//! library re-exports every floor under the module names the tests use (`health_check::wire`,
//! `health_check::memory`, ...).

pub use health_check_app::*;
