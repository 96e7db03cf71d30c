//! Whether anything listens on a local TCP port, read from the kernel's socket tables
//! (/proc/net/tcp and tcp6 of this network namespace) without connecting: a probe connection
//! would make a stock `iperf3 -s` log an error for a test that never came.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The kernel's code for a listening socket.
const LISTEN: &str = "0A";

/// `Some(true)` when a socket listens on `addr` (or on the wildcard address at its port),
/// `None` when the tables cannot be read (not Linux, no /proc).
pub fn is_listening(addr: SocketAddr) -> Option<bool> {
    let mut readable = false;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        readable = true;
        if listeners(&text).any(|l| covers(l, addr)) {
            return Some(true);
        }
    }
    readable.then_some(false)
}

/// Whether a listener on `listener` accepts connections to `addr`.
fn covers(listener: SocketAddr, addr: SocketAddr) -> bool {
    listener.port() == addr.port()
        && (listener.ip().is_unspecified()
            || listener.ip().to_canonical() == addr.ip().to_canonical())
}

/// The local addresses of the listening sockets in one table.
fn listeners(table: &str) -> impl Iterator<Item = SocketAddr> + '_ {
    table.lines().skip(1).filter_map(|line| {
        let mut fields = line.split_whitespace();
        let local = fields.nth(1)?;
        let state = fields.nth(1)?;
        if state != LISTEN {
            return None;
        }
        let (ip, port) = local.split_once(':')?;
        Some(SocketAddr::new(
            parse_ip(ip)?,
            u16::from_str_radix(port, 16).ok()?,
        ))
    })
}

/// The kernel prints each 32-bit word of the address as a number in host byte order.
fn parse_ip(hex: &str) -> Option<IpAddr> {
    let word = |i: usize| {
        u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16)
            .ok()
            .map(u32::to_ne_bytes)
    };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex4(ip: Ipv4Addr) -> String {
        format!("{:08X}", u32::from_ne_bytes(ip.octets()))
    }

    fn table(rows: &[(String, u16, &str)]) -> String {
        let mut t = "  sl  local_address rem_address   st tx_queue rx_queue\n".to_string();
        for (i, (ip, port, st)) in rows.iter().enumerate() {
            t += &format!("{i:4}: {ip}:{port:04X} 00000000:0000 {st} 00000000:00000000\n");
        }
        t
    }

    #[test]
    fn finds_listeners_by_address_and_wildcard() {
        let lo = hex4(Ipv4Addr::LOCALHOST);
        let any = hex4(Ipv4Addr::UNSPECIFIED);
        let t = table(&[
            (lo.clone(), 5201, LISTEN),
            (any, 22, LISTEN),
            (lo, 8080, "01"), // established, not listening
        ]);
        let found: Vec<SocketAddr> = listeners(&t).collect();
        assert_eq!(found.len(), 2);
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(found.iter().any(|l| covers(*l, at("127.0.0.1:5201"))));
        assert!(!found.iter().any(|l| covers(*l, at("127.0.0.2:5201"))));
        assert!(found.iter().any(|l| covers(*l, at("127.0.0.2:22"))));
        assert!(!found.iter().any(|l| covers(*l, at("127.0.0.1:8080"))));
    }

    #[test]
    fn reads_ipv6_words() {
        let mut hex = String::new();
        for w in Ipv6Addr::LOCALHOST.octets().chunks(4) {
            hex += &format!("{:08X}", u32::from_ne_bytes(w.try_into().unwrap()));
        }
        assert_eq!(parse_ip(&hex), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(parse_ip("zz"), None);
    }

    #[test]
    fn sees_a_real_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        if let Some(found) = is_listening(addr) {
            assert!(found);
            drop(l);
            assert_eq!(is_listening(addr), Some(false));
        } else {
            crate::os::skip_or_fail("sees_a_real_listener", "/proc/net/tcp is not readable here");
        }
    }
}
