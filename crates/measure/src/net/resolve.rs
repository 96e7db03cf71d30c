//! Host names to addresses, all at once and with a deadline: getaddrinfo has no timeout of its
//! own, so each lookup runs in its own thread and an answer that comes too late is an error.

use super::error::NetError;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Resolves every host (an IP literal, bracketed or not, or a name) for `port`. The first address
/// the resolver returns is used, so /etc/gai.conf decides between IPv4 and IPv6.
pub fn resolve_all(
    hosts: &[String],
    port: u16,
    deadline: Duration,
) -> Vec<Result<SocketAddr, NetError>> {
    let (tx, rx) = mpsc::channel();
    for (i, host) in hosts.iter().enumerate() {
        let (worker_tx, host) = (tx.clone(), host.clone());
        let spawned = std::thread::Builder::new()
            .name("resolve".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _ = worker_tx.send((i, resolve(&host, port)));
            });
        if spawned.is_err() {
            let _ = tx.send((i, Err(NetError::Thread("resolver"))));
        }
    }
    drop(tx);
    let mut out: Vec<Option<Result<SocketAddr, NetError>>> =
        std::iter::repeat_with(|| None).take(hosts.len()).collect();
    let until = Instant::now() + deadline;
    while out.iter().any(Option::is_none) {
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok((i, r)) => out[i] = Some(r),
            Err(_) => break,
        }
    }
    out.into_iter()
        .map(|r| r.unwrap_or(Err(NetError::LookupTimeout(deadline))))
        .collect()
}

/// Resolves one host for `port`.
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, NetError> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    match (host, port).to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| NetError::NoAddress(host.to_string())),
        Err(cause) => Err(NetError::Resolve {
            host: host.to_string(),
            cause,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_localhost_resolve() {
        assert_eq!(
            resolve("127.0.0.1", 5201).unwrap(),
            "127.0.0.1:5201".parse().unwrap()
        );
        assert_eq!(resolve("[::1]", 7).unwrap(), "[::1]:7".parse().unwrap());
        assert!(resolve("localhost", 1).unwrap().ip().is_loopback());
    }

    #[test]
    fn bad_names_are_errors_that_name_the_host() {
        let r = resolve_all(
            &["x;rm".to_string(), "127.0.0.1".to_string()],
            1,
            Duration::from_secs(10),
        );
        let e = r[0].as_ref().unwrap_err();
        assert!(e.to_string().contains("'x;rm'"), "{e}");
        assert!(r[1].is_ok());
    }
}
