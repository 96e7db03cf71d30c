//! Readers of many documents: `compare` (a fleet against itself), `baseline` (per-SKU
//! expectations learned from a fleet) and the fleet report they write.

pub mod report;
