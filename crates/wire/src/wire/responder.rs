//! The client role's report in the wire format: what the responder served.

use super::nullable::nullable;
use crate::net::iperf3::server::ServedTest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The client role's report: what it served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ResponderReport {
    /// Where it listened (`[::]:5201`).
    #[schemars(required, transform = nullable)]
    pub listening: Option<String>,
    /// Why it stopped: `idle timeout`, `SIGINT`, `SIGTERM`, `daemonized`, or why it never started.
    pub ended_by: String,
    /// Tests served.
    pub tests_served: usize,
    /// Bytes read from clients.
    pub bytes_received: u64,
    /// Bytes sent to clients.
    pub bytes_sent: u64,
    /// Connections answered "busy".
    pub refused_busy: u64,
    /// Connections dropped before a test (no cookie in time, bad parameters).
    pub dropped: u64,
    /// Each test.
    pub tests: Vec<ServedTestEntry>,
    /// The detached process, with --daemon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_pid: Option<u32>,
    /// Its pid file, with --daemon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid_file: Option<String>,
    /// Something worth knowing, e.g. that another iperf3 server already serves the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Which way the data went in a served test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServeMode {
    /// The client sent, this end received.
    Receive,
    /// This end sent (`iperf3 -R`).
    Send,
    /// Both at once (`--bidir`).
    Bidir,
}

/// One test served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ServedTestEntry {
    /// The client's address.
    pub peer: String,
    /// The client's iperf3 version, as it said.
    #[schemars(required, transform = nullable)]
    pub client_version: Option<String>,
    /// Streams (both directions counted).
    pub streams: u32,
    /// Which way the data went.
    pub mode: ServeMode,
    /// Bytes this end read while the test ran.
    pub bytes_received: u64,
    /// Bytes this end wrote.
    pub bytes_sent: u64,
    /// Test time on this end, seconds.
    pub seconds: f64,
    /// `ok`, or what went wrong.
    pub outcome: String,
}

impl From<&ServedTest> for ServedTestEntry {
    fn from(t: &ServedTest) -> Self {
        use crate::net::iperf3::server::Mode;
        ServedTestEntry {
            peer: t.peer.clone(),
            client_version: t.client_version.clone(),
            streams: t.streams,
            mode: match t.mode {
                Mode::Receive => ServeMode::Receive,
                Mode::Send => ServeMode::Send,
                Mode::Bidir => ServeMode::Bidir,
            },
            bytes_received: t.bytes_received,
            bytes_sent: t.bytes_sent,
            seconds: t.seconds,
            outcome: t.outcome.clone(),
        }
    }
}
