//! The history is kept on Linux only (where health_check measures); elsewhere opening one says
//! so and nothing else is reachable.

use super::{Filter, HistoryError, Keep, LastRun, Record};
use crate::wire::counters::{Acknowledgement, ErrorCounter};
use crate::wire::document::Document;
use crate::wire::figures::Figure;
use crate::wire::history::{FactChange, Points, RunSummary, Trend};
use std::collections::BTreeMap;
use std::path::Path;

/// No history outside Linux.
pub struct History(std::convert::Infallible);

type Result<T> = std::result::Result<T, HistoryError>;

fn unsupported(path: &Path) -> HistoryError {
    HistoryError::Open {
        path: path.display().to_string(),
        why: "the history is kept on Linux only".into(),
    }
}

impl History {
    /// Unsupported here.
    pub fn open(path: &Path) -> Result<History> {
        Err(unsupported(path))
    }
    /// Unsupported here.
    pub fn open_existing(path: &Path) -> Result<History> {
        Err(unsupported(path))
    }
    /// Unreachable.
    pub fn path(&self) -> &Path {
        match self.0 {}
    }
    /// The machine a document is about.
    pub fn machine_of(_doc: &Document) -> Option<String> {
        None
    }
    /// Unreachable.
    pub fn last_run(&self, _machine: &str) -> Result<Option<LastRun>> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn last_run_of_boot(&self, _boot_id: &str) -> Result<Option<LastRun>> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn acknowledge(
        &mut self,
        _machine: &str,
        _boot_id: &str,
        _counters: &[ErrorCounter],
        _ack: &Acknowledgement,
    ) -> Result<()> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn acknowledgements(
        &self,
        _machine: &str,
        _boot_id: &str,
    ) -> Result<BTreeMap<(String, String, String), Acknowledgement>> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn past(
        &self,
        _machine: &str,
        _profile: &str,
        _figures: &[Figure],
        _runs: usize,
    ) -> Result<(Vec<RunSummary>, Points)> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn append(&mut self, _rec: &Record, _keep: Keep) -> Result<i64> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn runs(&self, _filter: &Filter) -> Result<Vec<RunSummary>> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn trends(&self, _filter: &Filter) -> Result<BTreeMap<String, Trend>> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn changes(&self, _filter: &Filter) -> Result<Vec<FactChange>> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn documents(&self, _filter: &Filter) -> Result<Vec<(RunSummary, Document)>> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn check_integrity(&self) -> Result<()> {
        match self.0 {}
    }
    /// Unreachable.
    pub fn size_bytes(&self) -> u64 {
        match self.0 {}
    }
}
