//! Why a client has no figure: its name, the connection, or the test. Each message says what
//! failed and, where it can, what to do; the client's entry in the document carries it.

use super::iperf3::client::ClientError;
use std::time::Duration;

impl NetError {
    /// `self`, named a local failure when the process ran out of descriptors since `before`
    /// ([`crate::os::fd_exhaustions`]).
    pub fn local_if_out_of_descriptors(self, before: u64) -> NetError {
        if crate::os::fd_exhaustions() > before {
            NetError::OutOfDescriptors {
                limit: crate::os::fd_limit().map_or("?".into(), |l| l.to_string()),
                cause: Box::new(self),
            }
        } else {
            self
        }
    }
}
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
    /// The process ran out of file descriptors while the test ran: the failure is local.
    #[error(
        "this process ran out of file descriptors during the test (ulimit -n is {limit}): the \
         failure is here, not the peer's; raise 'ulimit -n' ({cause})"
    )]
    OutOfDescriptors {
        /// The soft limit.
        limit: String,
        /// What failed.
        cause: Box<NetError>,
    },
    /// A test thread panicked (a bug).
    #[error("internal error in the test thread")]
    Panicked,
}
