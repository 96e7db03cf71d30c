//! A comparison rule as written in a rules file, a baseline file and the fleet report: which
//! figures it matches, how much worse than the reference they may be, and how loud a deviation
//! is. Compiling and applying rules is the judge's (`judge::rules`).

use super::figures::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How loud a finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look.
    Warn,
    /// Outside what the machine should do.
    Fail,
}

impl Severity {
    /// The word as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

fn warn() -> Severity {
    Severity::Warn
}

/// One rule as written in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// A regular expression matched against the figure's dotted name
    /// (`memory.idle_latency.FullRandom.Node-0.Node-0`, `network.bandwidth.host2`).
    pub metrics: String,
    /// Which way is better; default: the figure's own direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// How much worse than the reference (the SKU's median) is tolerated, %.
    pub tolerance_pct: f64,
    /// `warn` or `fail`.
    #[serde(default = "warn")]
    pub severity: Severity,
    /// A noise floor: a value is flagged only when it is also at least this far from the
    /// reference, in the figure's unit (e.g. 0.05 ms of ping RTT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_difference: Option<f64>,
}
