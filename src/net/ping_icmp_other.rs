//! ICMP echo outside Linux is not implemented: pinging falls back to TCP connect time.

use super::{PingConfig, PingResult};
use std::net::SocketAddr;

/// No ICMP socket here.
pub struct IcmpPinger;

impl IcmpPinger {
    /// Always unsupported outside Linux.
    pub fn open(_target: SocketAddr, _index: usize) -> std::io::Result<IcmpPinger> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "ICMP ping is implemented on Linux only",
        ))
    }

    /// Never called: `open` fails.
    pub fn run(&self, _cfg: &PingConfig, _should_stop: &(dyn Fn() -> bool + Sync)) -> PingResult {
        PingResult {
            method: super::Method::Icmp,
            sent: 0,
            rtts_ms: Vec::new(),
            error: Some("ICMP ping is implemented on Linux only".into()),
        }
    }
}
