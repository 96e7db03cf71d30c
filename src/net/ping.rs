//! Round-trip time and loss to each client, all clients at once. ICMP echo over a datagram
//! ("ping") socket where `net.ipv4.ping_group_range` allows it, else a raw socket (root or
//! CAP_NET_RAW), else the time a TCP connect to the client's port takes (SYN to SYN-ACK or RST).
//! Like `ping`, the receive time is the kernel's timestamp (SO_TIMESTAMPNS), so scheduling delay
//! after the reply arrives is not counted. RTTs are in milliseconds.

#[cfg(target_os = "linux")]
#[path = "ping_icmp_linux.rs"]
mod icmp_socket;
#[cfg(not(target_os = "linux"))]
#[path = "ping_icmp_other.rs"]
mod icmp_socket;

use icmp_socket::IcmpPinger;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How to ping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PingConfig {
    /// Echo requests per client (ping -c).
    pub count: u32,
    /// Time between requests (ping -i).
    pub interval: Duration,
    /// How long to wait for the last reply.
    pub linger: Duration,
    /// The port a TCP-connect fallback connects to.
    pub tcp_port: u16,
    /// Which method to use.
    pub method: MethodChoice,
}

/// Which ping method to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodChoice {
    /// ICMP when a socket can be opened, else TCP connect.
    Auto,
    /// ICMP only.
    Icmp,
    /// TCP connect only.
    Tcp,
}

/// How RTTs were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// ICMP echo (datagram or raw socket).
    Icmp,
    /// TCP connect time to the client's port.
    TcpConnect,
}

impl Method {
    /// The name used in the document.
    pub fn name(self) -> &'static str {
        match self {
            Method::Icmp => "icmp",
            Method::TcpConnect => "tcp-connect",
        }
    }
}

/// One client's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct PingResult {
    /// How the RTTs were measured.
    pub method: Method,
    /// Requests sent.
    pub sent: u32,
    /// RTT of each answered request, ms.
    pub rtts_ms: Vec<f64>,
    /// Why no request could be sent, when none was.
    pub error: Option<String>,
}

/// Pings every address at once, one thread each; `should_stop` ends all of them early.
pub fn ping_all(
    targets: &[SocketAddr],
    cfg: &PingConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Vec<PingResult> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .enumerate()
            .map(|(i, addr)| scope.spawn(move || ping_one(*addr, i, cfg, should_stop)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| PingResult {
                    method: Method::Icmp,
                    sent: 0,
                    rtts_ms: Vec::new(),
                    error: Some("internal error in the ping thread".into()),
                })
            })
            .collect()
    })
}

/// Pings one address: ICMP when a socket can be had (and allowed by `cfg.method`), else TCP connect.
pub fn ping_one(
    addr: SocketAddr,
    index: usize,
    cfg: &PingConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> PingResult {
    let tcp = SocketAddr::new(addr.ip(), cfg.tcp_port);
    if cfg.method == MethodChoice::Tcp {
        return tcp_ping(tcp, cfg, should_stop);
    }
    match IcmpPinger::open(addr, index) {
        Ok(p) => p.run(cfg, should_stop),
        Err(_) if cfg.method == MethodChoice::Auto => tcp_ping(tcp, cfg, should_stop),
        Err(e) => PingResult {
            method: Method::Icmp,
            sent: 0,
            rtts_ms: Vec::new(),
            error: Some(format!(
                "cannot open an ICMP socket: {e} (run as root, allow it with sysctl \
                 net.ipv4.ping_group_range, or use --ping-method tcp)"
            )),
        },
    }
}

/// RTT as the time a TCP connect takes: a refused connect (RST) is an answer too.
fn tcp_ping(
    addr: SocketAddr,
    cfg: &PingConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> PingResult {
    let start = Instant::now();
    let mut rtts = Vec::new();
    let mut sent = 0;
    for seq in 0..cfg.count {
        if should_stop() {
            break;
        }
        let wait = cfg.interval.max(cfg.linger);
        let t = Instant::now();
        sent += 1;
        match TcpStream::connect_timeout(&addr, wait) {
            Ok(s) => {
                rtts.push(t.elapsed().as_secs_f64() * 1e3);
                // Reset rather than close: no TIME_WAIT pile-up, no half-open control connection.
                let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                rtts.push(t.elapsed().as_secs_f64() * 1e3);
            }
            Err(_) => {}
        }
        let next = start + cfg.interval * (seq + 1);
        while Instant::now() < next && seq + 1 < cfg.count && !should_stop() {
            std::thread::sleep(
                next.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50)),
            );
        }
    }
    PingResult {
        method: Method::TcpConnect,
        sent,
        rtts_ms: rtts,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PingConfig {
        PingConfig {
            count: 3,
            interval: Duration::from_millis(50),
            linger: Duration::from_millis(200),
            tcp_port: 9,
            method: MethodChoice::Auto,
        }
    }

    #[test]
    fn loopback_answers_every_request() {
        let r = ping_one("127.0.0.1:0".parse().unwrap(), 0, &cfg(), &|| false);
        assert_eq!(r.sent, 3);
        assert_eq!(r.rtts_ms.len(), 3, "{r:?}");
        assert!(r.rtts_ms.iter().all(|&ms| ms > 0.0 && ms < 100.0));
    }

    #[test]
    fn tcp_connect_counts_a_refusal_as_an_answer() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let r = tcp_ping(SocketAddr::from(([127, 0, 0, 1], port)), &cfg(), &|| false);
        assert_eq!(r.method, Method::TcpConnect);
        assert_eq!((r.sent, r.rtts_ms.len()), (3, 3));
    }
}
