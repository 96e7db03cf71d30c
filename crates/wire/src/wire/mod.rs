//! The wire: what health_check writes and reads back. The document (`document.rs` and one file
//! per section), built from the measurements' results by `From`/`from_results`; the flat list of
//! named figures every reader uses (`figures.rs`); DCPerf's own documents (`dcperf.rs`); the
//! fleet report and the baseline file (`fleet.rs`, `baseline.rs`, `rule.rs`); reading files of
//! every form (`read.rs`); merging one machine's documents (`merge.rs`).
//!
//! May import: the leaves and the measurement modules (for the conversions). Nothing above.

pub mod baseline;
pub mod check;
pub mod checked;
pub mod copies;
pub mod counters;
pub mod dcperf;
pub mod document;
pub mod figures;
pub mod fleet;
pub mod headline;
pub mod history;
pub mod identity;
pub mod memory;
pub mod merge;
pub mod network;
pub mod nullable;
pub mod part;
pub mod read;
pub mod responder;
pub mod rule;
pub mod storage;
pub mod strict;
pub mod system;
