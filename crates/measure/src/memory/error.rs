//! What can go wrong while measuring memory. Each part that fails is recorded in the section's
//! `errors` with this message; the other parts still run.

use std::io;
use thiserror::Error;

/// A memory measurement that could not be made.
#[derive(Debug, Error)]
pub enum MemoryError {
    /// The thread could not be pinned to its CPU (taskset or a cpuset forbids it).
    #[error("cannot pin a thread to CPU {cpu}: {cause}")]
    Pin {
        /// The CPU.
        cpu: usize,
        /// Why.
        cause: io::Error,
    },
    /// The kernel refused the memory (MemAvailable, a cgroup limit, `vm.max_map_count`).
    #[error("cannot map {what}: {cause}")]
    Map {
        /// What was mapped, e.g. `512 MiB for the FullRandom chain`.
        what: String,
        /// Why.
        cause: io::Error,
    },
    /// A thread could not be started.
    #[error("cannot start a thread for CPU {cpu}: {cause}")]
    Spawn {
        /// The CPU.
        cpu: usize,
        /// Why.
        cause: io::Error,
    },
    /// A measuring thread panicked (a bug; the other parts still run).
    #[error("{0} panicked")]
    Panicked(String),
    /// A stop request arrived before the measurement finished.
    #[error("interrupted")]
    Interrupted,
    /// A chain's layout was invalid (a bug in the caller).
    #[error("{0}")]
    BadChain(String),
    /// Setting up a member of a crew failed for a reason of its own.
    #[error("{0}")]
    Setup(String),
}

impl MemoryError {
    /// A mapping error for `mib` MiB described by `purpose`.
    pub fn map(mib: usize, purpose: &str, cause: io::Error) -> Self {
        MemoryError::Map {
            what: format!("{mib} MiB {purpose}"),
            cause,
        }
    }
}

/// Results of the memory module.
pub type Result<T> = std::result::Result<T, MemoryError>;
