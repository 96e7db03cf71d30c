//! The baseline file (`health_check baseline -o FILE`): per-model expectations as YAML people
//! can read and edit. Learning one and judging a run by it are the judge's (`judge::baseline`).

use super::figures::Direction;
use super::fleet::Sku;
use super::rule::RuleSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The format version this build writes and reads (2: models without memory and CPU count,
/// which became figures; the machines and basis of each expectation).
pub const FORMAT: u32 = 2;

/// A baseline file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Format version ([`FORMAT`]).
    pub health_check_baseline: u32,
    /// health_check's version that learned it.
    pub version: String,
    /// When, seconds since the Unix epoch.
    pub created_unix: u64,
    /// The rules its figures are judged by.
    pub rules: Vec<RuleSpec>,
    /// Per model.
    pub skus: Vec<SkuBaseline>,
}

/// What one model is expected to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkuBaseline {
    /// The model.
    pub sku: Sku,
    /// Machines it was learned from.
    pub machines: usize,
    /// Per figure (per-client figures pooled over clients, named without the client).
    pub figures: BTreeMap<String, Expected>,
}

/// One figure's expectation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The median of the fleet.
    pub median: f64,
    /// Median absolute deviation.
    pub mad: f64,
    /// Values it was learned from.
    pub count: usize,
    /// Machines they came from (the outlier test counts machines, not values).
    pub machines: usize,
    /// How the figures were measured (`profile=standard, ...`): a run's figure is judged only
    /// when it was measured alike.
    pub basis: String,
    /// Unit.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
}

impl Baseline {
    /// The expectations for `sku`: the same model, or the one compatible model.
    pub fn for_sku(&self, sku: &Sku) -> Option<&SkuBaseline> {
        self.skus.iter().find(|s| &s.sku == sku).or_else(|| {
            let mut compatible = self.skus.iter().filter(|s| sku.compatible(&s.sku));
            match (compatible.next(), compatible.next()) {
                (Some(one), None) => Some(one),
                _ => None,
            }
        })
    }
}
