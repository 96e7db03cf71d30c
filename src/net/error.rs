//! Why a client has no figure: its name, the connection, or the test. Each message says what
//! failed and, where it can, what to do; the client's entry in the document carries it.

use super::iperf3::client::ClientError;
use std::time::Duration;
use thiserror::Error;

/// A client's lookup or test that failed.
#[derive(Debug, Error)]
pub enum NetError {
    /// The resolver failed.
    #[error("cannot resolve '{host}': {cause}")]
    Resolve {
        /// The name as given.
        host: String,
        /// The resolver's answer.
        cause: std::io::Error,
    },
    /// The name resolved to nothing.
    #[error("'{0}' has no address")]
    NoAddress(String),
    /// The resolver did not answer in time.
    #[error("name lookup took longer than {0:?} (check DNS)")]
    LookupTimeout(Duration),
    /// A helper thread could not be started (the process is out of threads or memory).
    #[error("could not start a {0} thread")]
    Thread(&'static str),
    /// The bandwidth test failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A test thread panicked (a bug).
    #[error("internal error in the test thread")]
    Panicked,
}
