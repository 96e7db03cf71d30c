//! ICMP echo outside Linux is not implemented: pinging falls back to TCP connect time.

use super::{PingConfig, PingResult};
use std::net::SocketAddr;

/// No ICMP socket here.
pub struct IcmpPinger;

impl IcmpPinger {
    /// Always unsupported outside Linux (as "protocol not supported", so auto mode falls back).
    pub fn open(_target: SocketAddr, _index: usize) -> std::io::Result<IcmpPinger> {
        Err(std::io::Error::from_raw_os_error(libc::EPROTONOSUPPORT))
    }

    /// Never called: `open` fails.
    pub fn run(&self, _cfg: &PingConfig, _should_stop: &(dyn Fn() -> bool + Sync)) -> PingResult {
        PingResult {
            method: super::Method::Icmp,
            sent: 0,
            warm_up: 0,
            rtts_ms: Vec::new(),
            error: Some("ICMP ping is implemented on Linux only".into()),
            fallback: None,
        }
    }
}
