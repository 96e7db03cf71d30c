//! The judge: every verdict health_check gives. A run's own checks (`checks/`: DCPerf's limits
//! and ours), the rules that say how far a figure may stray (`rules.rs`), the one comparison of
//! a figure with its reference (`reference.rs`), and the fleet's readers built on them: machines
//! and their models (`machine.rs`), `compare`, `baseline`, and `fleet.rs`, which runs them.
//!
//! May import: the leaves, the measurement modules' plain types, and the wire. Nothing above.

pub mod baseline;
pub mod blame;
pub mod checks;
pub mod compare;
pub mod drift;
pub mod fleet;
pub mod health;
pub mod history;
pub mod machine;
pub mod noise;
pub mod reference;
pub mod rules;
pub mod yaml_guard;
