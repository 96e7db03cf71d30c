//! A machine's memory: every run recorded in one SQLite file (`--history FILE`), its document,
//! its figures indexed by machine, figure and run, its error counters and its configuration, so
//! the next run can be judged against the machine's own past, counters can be differenced, and
//! `health_check history` can draw trends and say when a fact changed.
//!
//! SQLite is built in (no server, no system library). The file is in WAL mode with a busy
//! timeout and every run is one `BEGIN IMMEDIATE` transaction: a run killed at any moment leaves
//! the file intact with every finished run in it, and two runs writing at once both land.
//!
//! May import: the leaves and the wire. Nothing above.

mod keep;
#[cfg(target_os = "linux")]
mod store;
#[cfg(not(target_os = "linux"))]
#[path = "unsupported.rs"]
mod store;

use crate::wire::counters::ErrorCounter;
use crate::wire::document::{Document, Section};
use crate::wire::figures::Figure;
use crate::wire::history::FactChange;
use crate::wire::history::{PastReference, RunSummary};
pub use keep::{Keep, KeepError};
use std::collections::{BTreeMap, BTreeSet};
pub use store::History;

/// A run to record: the document, its figures, and the sections measured under interference
/// (their figures are kept out of later references).
pub struct Record<'a> {
    /// The document, checks included.
    pub doc: &'a Document,
    /// Its figures.
    pub figures: &'a [Figure],
    /// Sections measured under interference beyond the limits.
    pub noisy: &'a BTreeSet<Section>,
    /// The reference each figure was judged against (its `history.` check's), by name.
    pub references: &'a BTreeMap<String, PastReference>,
}

/// The last run of a machine as the next one needs it.
#[derive(Debug, Clone)]
pub struct LastRun {
    /// Its summary.
    pub summary: RunSummary,
    /// Its error counters above zero; `None` where it read none.
    pub counters: Option<Vec<ErrorCounter>>,
    /// Its configuration.
    pub facts: BTreeMap<String, String>,
}

/// Why the history cannot be used; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file could not be opened or created.
    #[error("cannot open the history '{path}': {why}")]
    Open {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// Another user could change the file: it is not used.
    #[error("refusing the history '{path}': {why}")]
    Untrusted {
        /// The file.
        path: String,
        /// What is wrong, from [`crate::trust`].
        why: String,
    },
    /// The file is not one of ours, or from a newer version.
    #[error("'{path}' is not a health_check history this version can use: {why}")]
    NotOurs {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// A read or write failed.
    #[error("the history '{path}': {why}")]
    Database {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// The run was cut short.
    #[error("{0} ended the run early; an interrupted run is not recorded")]
    Interrupted(String),
    /// The document does not say which machine it is.
    #[error(
        "the document does not say which machine it is (no machine id or host name): not recorded"
    )]
    NoMachine,
}

/// Which runs `health_check history` shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Host name or machine id; every machine when unset.
    pub host: Option<String>,
    /// Figures whose dotted name this matches; all when unset.
    pub figure: Option<regex::Regex>,
    /// Runs started at or after this Unix time.
    pub since: Option<u64>,
    /// Runs of this profile only.
    pub profile: Option<String>,
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        self.host == other.host
            && self.figure.as_ref().map(regex::Regex::as_str)
                == other.figure.as_ref().map(regex::Regex::as_str)
            && self.since == other.since
            && self.profile == other.profile
    }
}

impl Eq for Filter {}

/// The facts that differ between two runs.
pub fn fact_changes(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
    run_before: i64,
    run_after: i64,
    started_unix: u64,
) -> Vec<FactChange> {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .filter(|n| before.get(*n) != after.get(*n))
        .map(|n| FactChange {
            fact: n.clone(),
            from: before.get(n).cloned(),
            to: after.get(n).cloned(),
            run_before,
            run_after,
            started_unix,
        })
        .collect()
}
