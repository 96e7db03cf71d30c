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
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How to ping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PingConfig {
    /// Echo requests per client that count (ping -c).
    pub count: u32,
    /// Send one request first and wait up to `interval` for its answer, counting neither: the
    /// first packet to a peer pays for neighbour discovery and cold caches on the path, a cost
    /// the figures would otherwise carry as a slow first RTT.
    pub warm_up: bool,
    /// Time between requests (ping -i).
    pub interval: Duration,
    /// How long to wait for the last reply.
    pub linger: Duration,
    /// The port a TCP-connect fallback connects to.
    pub tcp_port: u16,
    /// Which method to use.
    pub method: MethodChoice,
}

/// Which ping method to use (`--ping-method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodChoice {
    /// ICMP echo (datagram socket, else raw socket), falling back to TCP connect.
    Auto,
    /// ICMP echo only; an error when no ICMP socket can be opened.
    Icmp,
    /// TCP connect time to the client's port (for paths that drop ICMP).
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
    /// Requests sent and counted.
    pub sent: u32,
    /// Requests sent before the counted ones (see [`PingConfig::warm_up`]).
    pub warm_up: u32,
    /// RTT of each answered request, ms.
    pub rtts_ms: Vec<f64>,
    /// A local error (no file descriptor, no buffer, a local firewall, no route): requests it
    /// stopped were not sent, so they are not counted as lost.
    pub error: Option<String>,
    /// Why ICMP was not used, when TCP connect time was measured instead.
    pub fallback: Option<String>,
}

/// Whether an OS error is this machine's own (resources, permissions, routing) rather than the
/// network's: such a request never left, and its failure says nothing about the path.
pub fn is_local_error(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EMFILE
                | libc::ENFILE
                | libc::ENOBUFS
                | libc::ENOMEM
                | libc::EPERM
                | libc::EACCES
                | libc::ENETUNREACH
                | libc::EADDRNOTAVAIL
        )
    )
}

/// Whether an ICMP socket failed only for want of permission (then TCP connect time is the
/// fallback); anything else is a local error to report.
fn icmp_not_permitted(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPERM | libc::EACCES | libc::EPROTONOSUPPORT | libc::EAFNOSUPPORT)
    )
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
                    warm_up: 0,
                    rtts_ms: Vec::new(),
                    error: Some("internal error in the ping thread".into()),
                    fallback: None,
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
        Err(e) if cfg.method == MethodChoice::Auto && icmp_not_permitted(&e) => {
            let mut r = tcp_ping(tcp, cfg, should_stop);
            r.fallback = Some(format!(
                "no ICMP socket ({e}: run as root or widen net.ipv4.ping_group_range); \
                 measured TCP connect time to port {} instead",
                cfg.tcp_port
            ));
            r
        }
        Err(e) if icmp_not_permitted(&e) => PingResult {
            method: Method::Icmp,
            sent: 0,
            warm_up: 0,
            rtts_ms: Vec::new(),
            error: Some(format!(
                "cannot open an ICMP socket: {e} (run as root, allow it with sysctl \
                 net.ipv4.ping_group_range, or use --ping-method tcp)"
            )),
            fallback: None,
        },
        Err(e) => PingResult {
            method: Method::Icmp,
            sent: 0,
            warm_up: 0,
            rtts_ms: Vec::new(),
            error: Some(local_message("cannot open an ICMP socket", &e)),
            fallback: None,
        },
    }
}

/// A local error for people: what failed, the OS's words, and what to do.
pub fn local_message(what: &str, e: &std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => " (out of file descriptors: raise 'ulimit -n')",
        Some(libc::ENOBUFS | libc::ENOMEM) => " (the kernel is out of buffers or memory)",
        Some(libc::EPERM | libc::EACCES) => " (a local firewall rule or a missing privilege)",
        Some(libc::ENETUNREACH) => " (this machine has no route to the client)",
        Some(libc::EADDRNOTAVAIL) => " (no local address or port is free)",
        _ => "",
    };
    format!("{what}: {e}{hint}; this is this machine's error, not the network's")
}

/// RTT as the time a TCP connect takes: a refused connect (RST) is an answer too. The timer
/// starts once the socket exists, so only the handshake is timed. A local error ends the probes
/// and is reported; only probes that left count as sent.
fn tcp_ping(
    addr: SocketAddr,
    cfg: &PingConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> PingResult {
    use socket2::{Domain, Socket, Type};
    let mut rtts = Vec::new();
    let mut sent = 0;
    let mut error = None;
    let mut warm_up = 0;
    if cfg.warm_up && !should_stop() {
        // Answered or not, not counted; a local error shows again on the first counted probe.
        if let Ok(socket) = Socket::new(Domain::for_address(addr), Type::STREAM, None) {
            warm_up = 1;
            if socket.connect_timeout(&addr.into(), cfg.interval).is_ok() {
                let _ = socket.set_linger(Some(Duration::ZERO));
            }
        }
    }
    let start = Instant::now();
    for seq in 0..cfg.count {
        if should_stop() {
            break;
        }
        let wait = cfg.interval.max(cfg.linger);
        let socket = match Socket::new(Domain::for_address(addr), Type::STREAM, None) {
            Ok(s) => s,
            Err(e) => {
                error = Some(local_message("cannot open a TCP socket", &e));
                break;
            }
        };
        let t = Instant::now();
        match socket.connect_timeout(&addr.into(), wait) {
            Ok(()) => {
                sent += 1;
                rtts.push(t.elapsed().as_secs_f64() * 1e3);
                // Reset rather than close: no TIME_WAIT pile-up, no half-open control connection.
                let _ = socket.set_linger(Some(Duration::ZERO));
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                sent += 1;
                rtts.push(t.elapsed().as_secs_f64() * 1e3);
            }
            Err(e) if is_local_error(&e) => {
                error = Some(local_message("connecting", &e));
                break;
            }
            // No answer in time, or the host is unreachable: this probe is lost.
            Err(_) => sent += 1,
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
        warm_up,
        rtts_ms: rtts,
        error,
        fallback: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PingConfig {
        PingConfig {
            count: 3,
            warm_up: true,
            interval: Duration::from_millis(50),
            linger: Duration::from_millis(200),
            tcp_port: 9,
            method: MethodChoice::Auto,
        }
    }

    #[test]
    fn loopback_answers_every_request() {
        let r = ping_one("127.0.0.1:0".parse().unwrap(), 0, &cfg(), &|| false);
        assert_eq!((r.sent, r.warm_up), (3, 1), "{r:?}");
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
        assert_eq!((r.sent, r.rtts_ms.len(), r.warm_up), (3, 3, 1));
    }

    #[test]
    fn local_errors_are_told_apart_from_the_network() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        assert!(is_local_error(&emfile));
        assert!(local_message("connecting", &emfile).contains("ulimit -n"));
        assert!(is_local_error(&std::io::Error::from_raw_os_error(
            libc::ENETUNREACH
        )));
        assert!(!is_local_error(&std::io::Error::from_raw_os_error(
            libc::ETIMEDOUT
        )));
        assert!(!is_local_error(&std::io::Error::from_raw_os_error(
            libc::EHOSTUNREACH
        )));
        assert!(icmp_not_permitted(&std::io::Error::from_raw_os_error(
            libc::EACCES
        )));
        assert!(!icmp_not_permitted(&emfile));
    }
}
