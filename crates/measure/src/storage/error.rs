//! What can go wrong with the storage target or one of its tests.

use std::io;
use thiserror::Error;

/// A storage target that cannot be used, or a test that failed on it.
#[derive(Debug, Error)]
pub enum StorageError {
    /// An operating-system call failed; `what` says which and on what.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done, e.g. `cannot open '/dev/vdb'`.
        what: String,
        /// Why.
        cause: io::Error,
    },
    /// A device asked for writing is held by something else (mounted, swap, a driver).
    #[error("it is in use (mounted, swap, or held by another driver)")]
    Busy,
    /// The target is not usable as asked; the message says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// An I/O thread panicked (a bug; the other tests still run).
    #[error("an I/O thread panicked")]
    Panicked,
}

impl StorageError {
    /// An error of an operating-system call described by `what`.
    pub fn io(what: impl Into<String>, cause: io::Error) -> Self {
        StorageError::Io {
            what: what.into(),
            cause,
        }
    }
}

/// Results of the storage module.
pub type Result<T> = std::result::Result<T, StorageError>;
