//! A machine's past as the history (`--history FILE`, SQLite) gives it back: its runs, each
//! figure's values over them, and the facts that changed between runs. The store writes and
//! reads these; the judge compares a run with them; `health_check history --format json` prints
//! a [`HistoryReport`].

use super::check::Status;
use super::figures::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    /// The run's number in the history file (rises with every run recorded).
    pub run: i64,
    /// When it started, Unix seconds.
    pub started_unix: u64,
    /// The machine: its hashed machine id, or `host:<name>` where it has none.
    pub machine: String,
    /// Host name.
    pub hostname: Option<String>,
    /// The profile it ran (`check`, `quick`, `default`, `long`).
    pub profile: String,
    /// The kernel's boot id.
    pub boot_id: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// BIOS version.
    pub firmware: Option<String>,
    /// The worst status among its checks.
    pub worst: Option<Status>,
    /// How long it took, seconds.
    pub seconds: f64,
}

/// One value of a figure in one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    /// The run.
    pub run: i64,
    /// When the run started, Unix seconds.
    pub started_unix: u64,
    /// The figure.
    pub value: f64,
    /// Measured under interference beyond the limits (left out of references).
    pub noisy: bool,
    /// The verdict of the figure's `history.` check in that run, where it had one.
    pub status: Option<Status>,
    /// The reference that check judged it against, where the run recorded one (runs recorded
    /// before 2026-12-05 did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<PastReference>,
}

/// The reference a figure of a run was judged against: the median of its earlier runs, and how
/// many of them (the window, less the runs left out).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PastReference {
    /// The median.
    pub median: f64,
    /// The earlier runs it is the median of.
    pub runs: usize,
}

/// Figures' values over runs, by dotted name, oldest first.
pub type Points = BTreeMap<String, Vec<Point>>;

/// One figure over the runs, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trend {
    /// Unit.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// How it was measured (values of another basis are not in the trend).
    pub basis: String,
    /// The values.
    pub points: Vec<Point>,
}

/// A fact of the machine's configuration that changed between two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FactChange {
    /// The fact (`cpu.microcode`).
    pub fact: String,
    /// Its value before; null where the earlier run did not record it.
    pub from: Option<String>,
    /// Its value after; null where the later run does not record it.
    pub to: Option<String>,
    /// The last run with the old value.
    pub run_before: i64,
    /// The first run with the new one.
    pub run_after: i64,
    /// When the later run started, Unix seconds.
    pub started_unix: u64,
}

/// What `health_check history FILE --format json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryReport {
    /// The history file.
    pub file: String,
    /// The runs selected, oldest first.
    pub runs: Vec<RunSummary>,
    /// Each figure's values over them, by dotted name (one machine's; with several machines
    /// selected, keyed `machine figure`).
    pub figures: BTreeMap<String, Trend>,
    /// The facts that changed between the runs selected.
    pub changes: Vec<FactChange>,
}
