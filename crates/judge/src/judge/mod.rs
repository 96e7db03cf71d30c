//! The judge: every verdict health_check gives. A run's own checks (`checks/`: DCPerf's limits
//! and ours), the rules that say how far a figure may stray (`rules.rs`), the one comparison of
//! a figure with its reference (`reference.rs`), the steps every verdict against a reference takes
//! (`pipeline.rs`: population, reference, judged, status and finding, interference), and the
//! fleet's readers built on them: machines and their models (`machine.rs`), `compare`, `blame`,
//! `baseline`, a shortfall a whole model group shares (`shared.rs`), a run against the machine's
//! past (`past.rs`), and `fleet.rs`, which runs them over one `view.rs` of the fleet (names and paths,
//! made once).
//!
//! May import: the leaves, the measurement modules' plain types, and the wire. Nothing above.

pub mod account;
pub mod baseline;
pub mod blame;
pub mod checks;
pub mod compare;
pub mod drift;
pub mod fleet;
pub mod health;
pub mod limits;
pub mod machine;
pub mod noise;
pub mod parallel;
pub mod past;
pub mod pipeline;
pub mod reference;
pub mod rules;
pub mod shared;
pub mod view;
pub mod yaml_guard;
