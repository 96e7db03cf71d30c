//! Errors that callers branch on. Everything else travels as `anyhow::Error` with context.

use thiserror::Error;

/// A command-line value that parsed but makes no sense. Exit status 2; the message names the flag.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid value for '{flag}': {message}")]
pub struct ConfigError {
    /// The flag as the user typed it, e.g. `--sleep-threads`.
    pub flag: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl ConfigError {
    /// A new error for `flag`.
    pub fn new(flag: &'static str, message: impl Into<String>) -> Self {
        Self {
            flag,
            message: message.into(),
        }
    }
}
