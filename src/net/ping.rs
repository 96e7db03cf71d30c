//! Round-trip time and loss to each client, all clients at once. ICMP echo over a datagram
//! ("ping") socket where `net.ipv4.ping_group_range` allows it, else a raw socket (root or
//! CAP_NET_RAW), else the time a TCP connect to the client's port takes (SYN to SYN-ACK or RST).
//! Like `ping`, the receive time is the kernel's timestamp (SO_TIMESTAMPNS), so scheduling delay
//! after the reply arrives is not counted. RTTs are in milliseconds.

use super::icmp::{self, Family};
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt,
};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::IoSliceMut;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// RTTs by sequence number; a duplicate reply is ignored.
#[derive(Default)]
struct Replies {
    answered: Vec<bool>,
    rtts_ms: Vec<f64>,
}

impl Replies {
    fn record(&mut self, seq: u16, rtt_ms: f64) {
        let i = usize::from(seq);
        if self.answered.len() <= i {
            self.answered.resize(i + 1, false);
        }
        if !self.answered[i] {
            self.answered[i] = true;
            self.rtts_ms.push(rtt_ms);
        }
    }
}

struct IcmpPinger {
    socket: Socket,
    family: Family,
    /// Raw IPv4 sockets deliver the IP header too.
    with_ip_header: bool,
    /// Datagram sockets rewrite the identifier, so it is not checked there.
    check_id: bool,
    id: u16,
    target: SocketAddr,
}

impl IcmpPinger {
    fn open(target: SocketAddr, index: usize) -> std::io::Result<IcmpPinger> {
        let (domain, proto, family) = match target {
            SocketAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4, Family::V4),
            SocketAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6, Family::V6),
        };
        let (socket, raw) = match Socket::new(domain, Type::DGRAM, Some(proto)) {
            Ok(s) => (s, false),
            Err(_) => (Socket::new(domain, Type::RAW, Some(proto))?, true),
        };
        setsockopt(&socket, sockopt::ReceiveTimestampns, &true)?;
        let id = (std::process::id() as u16) ^ (index as u16).wrapping_mul(0x9e37);
        Ok(IcmpPinger {
            socket,
            family,
            with_ip_header: raw && family == Family::V4,
            check_id: raw,
            id,
            target,
        })
    }

    fn run(&self, cfg: &PingConfig, should_stop: &(dyn Fn() -> bool + Sync)) -> PingResult {
        let mut sent_at: Vec<Option<SystemTime>> = Vec::new();
        let mut rtts = Replies::default();
        let start = Instant::now();
        let dest = SockAddr::from(SocketAddr::new(self.target.ip(), 0));
        let mut error = None;
        for seq in 0..cfg.count {
            if should_stop() {
                break;
            }
            let packet = icmp::echo_request(self.family, self.id, seq as u16);
            let now = SystemTime::now();
            match self.socket.send_to(&packet, &dest) {
                Ok(_) => sent_at.push(Some(now)),
                Err(e) => {
                    sent_at.push(None);
                    error.get_or_insert_with(|| format!("sending an echo request failed: {e}"));
                }
            }
            let last = seq + 1 == cfg.count;
            let next = if last {
                Instant::now() + cfg.linger
            } else {
                start + cfg.interval * (seq + 1)
            };
            self.receive_until(next, &sent_at, &mut rtts, last, should_stop);
        }
        let sent = sent_at.iter().filter(|s| s.is_some()).count() as u32;
        PingResult {
            method: Method::Icmp,
            sent,
            rtts_ms: rtts.rtts_ms,
            error: if sent == 0 { error } else { None },
        }
    }

    /// Collects replies until `until` (after the `last` request: until all are answered), one RTT
    /// per sequence number (duplicates ignored).
    fn receive_until(
        &self,
        until: Instant,
        sent_at: &[Option<SystemTime>],
        rtts: &mut Replies,
        last: bool,
        should_stop: &(dyn Fn() -> bool + Sync),
    ) {
        let mut buf = [0u8; 1500];
        let sent = sent_at.iter().flatten().count();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            // After the last request, stop as soon as every request has its reply.
            if left.is_zero() || should_stop() || (last && rtts.rtts_ms.len() >= sent) {
                return;
            }
            let _ = self
                .socket
                .set_read_timeout(Some(left.min(Duration::from_millis(100))));
            let Some((n, from, received)) = self.recv(&mut buf) else {
                continue;
            };
            if from.is_some_and(|f| f != self.target.ip()) {
                continue;
            }
            let Some(echo) = icmp::parse_echo_reply(self.family, &buf[..n], self.with_ip_header)
            else {
                continue;
            };
            if self.check_id && echo.id != self.id {
                continue;
            }
            if let Some(Some(sent)) = sent_at.get(usize::from(echo.seq)) {
                if let Ok(rtt) = received.duration_since(*sent) {
                    rtts.record(echo.seq, rtt.as_secs_f64() * 1e3);
                }
            }
        }
    }

    /// One datagram with its sender and the kernel's receive time.
    fn recv(&self, buf: &mut [u8]) -> Option<(usize, Option<std::net::IpAddr>, SystemTime)> {
        let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
        let mut iov = [IoSliceMut::new(buf)];
        let msg = recvmsg::<SockaddrStorage>(
            self.socket.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::empty(),
        )
        .ok()?;
        let mut received = SystemTime::now();
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::ScmTimestampns(ts) = c {
                    received = UNIX_EPOCH + Duration::new(ts.tv_sec() as u64, ts.tv_nsec() as u32);
                }
            }
        }
        let from = msg.address.and_then(|a| {
            a.as_sockaddr_in()
                .map(|s| std::net::IpAddr::V4(s.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|s| std::net::IpAddr::V6(s.ip())))
        });
        Some((msg.bytes, from, received))
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
