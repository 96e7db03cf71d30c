//! What a check line decides ([`Verdict`]), why it could not ([`LineError`]), and the
//! variables it reads ([`Settings`]): shared by the modules of checks, so none of them imports
//! another.

use std::collections::BTreeMap;

/// The variables as they stand when a check runs (the file's settings from the lines before
/// it, NHC's defaults, the host's names), by name. Names and values are bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    vars: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Settings {
    /// Settings from name = value pairs.
    pub fn from_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Settings {
        Settings {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.as_ref().to_vec(), v.as_ref().to_vec()))
                .collect(),
        }
    }

    /// The value of `name`, `None` when unset.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.vars.get(name.as_bytes()).map(Vec::as_slice)
    }

    /// The value of `name`, or `default` when unset.
    pub fn get_or<'a>(&'a self, name: &str, default: &'a [u8]) -> &'a [u8] {
        self.get(name).unwrap_or(default)
    }

    /// Every variable.
    pub fn vars(&self) -> &BTreeMap<Vec<u8>, Vec<u8>> {
        &self.vars
    }

    /// Every variable, to change.
    pub fn vars_mut(&mut self) -> &mut BTreeMap<Vec<u8>, Vec<u8>> {
        &mut self.vars
    }
}

/// Why a line gave no verdict of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// NHC fails the line with this message (its `die`, or "Check ... returned 1").
    Fails(String),
    /// Bash abandons the line (an arithmetic error inside one of NHC's check functions): its
    /// `eval` returns 1, which NHC fails as "Check ... returned 1" (and ignores under `-a`).
    Abandons(String),
    /// NHC's bash leaves the whole run here, without a verdict (`${X:?}`): nothing after it
    /// runs and nothing is marked.
    Stops(String),
}

impl From<String> for LineError {
    fn from(message: String) -> LineError {
        LineError::Fails(message)
    }
}

impl From<&str> for LineError {
    fn from(message: &str) -> LineError {
        LineError::Fails(message.to_string())
    }
}

/// One verdict of a check line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What it is about (a mount point, a file, a process), if not the machine.
    pub subject: Option<Vec<u8>>,
    /// NHC's verdict: `None` passed; the failure message as NHC gives it otherwise.
    pub failure: Option<String>,
    /// Said beside a pass (a non-fatal failure, something NHC would have done).
    pub note: Option<String>,
    /// Why it could not be judged here (a tool that is not installed, a resource manager that
    /// did not answer): neither a pass nor a failure.
    pub skip: Option<String>,
}

impl Verdict {
    /// A verdict about the machine as a whole (no subject).
    pub fn of_machine(
        failure: Option<String>,
        note: Option<String>,
        skip: Option<String>,
    ) -> Verdict {
        Verdict {
            subject: None,
            failure,
            note,
            skip,
        }
    }

    /// A pass about `subject`.
    pub fn pass(subject: Option<Vec<u8>>) -> Verdict {
        Verdict {
            subject,
            failure: None,
            note: None,
            skip: None,
        }
    }

    /// A failure about `subject`, with NHC's message.
    pub fn fail(subject: Option<Vec<u8>>, message: String) -> Verdict {
        Verdict {
            subject,
            failure: Some(message),
            note: None,
            skip: None,
        }
    }

    /// A failure when `failure` is some, else a pass.
    pub fn judged(subject: Option<Vec<u8>>, failure: Option<String>) -> Verdict {
        Verdict {
            subject,
            failure,
            note: None,
            skip: None,
        }
    }
}
