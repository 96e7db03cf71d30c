//! The iperf3 wire protocol for TCP tests: our client (the server role's bandwidth test) and our
//! server (the client role's responder), compatible with stock iperf3 3.9-3.21 in both directions.

pub mod client;
pub mod protocol;
pub mod server;
mod session;
mod shared;
pub mod stream;
