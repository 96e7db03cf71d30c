//! ICMP echo on Linux: a datagram ("ping") socket where `net.ipv4.ping_group_range` allows it,
//! else a raw socket, with kernel receive timestamps (SO_TIMESTAMPNS) as `ping` uses.

use super::{Method, PingConfig, PingResult};
use crate::net::icmp::{self, Family};
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt,
};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The warm-up request's sequence number: never a counted one's (`--ping-count` stops below it).
const WARM_UP_SEQ: u16 = u16::MAX;

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

pub struct IcmpPinger {
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
    /// Opens a socket for pinging `target`; `index` makes the identifier unique per target.
    pub fn open(target: SocketAddr, index: usize) -> std::io::Result<IcmpPinger> {
        let (domain, proto, family) = match target {
            SocketAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4, Family::V4),
            SocketAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6, Family::V6),
        };
        let (socket, raw) = match Socket::new(domain, Type::DGRAM, Some(proto)) {
            Ok(s) => (s, false),
            Err(_) => (Socket::new(domain, Type::RAW, Some(proto))?, true),
        };
        // Kernel receive times keep our scheduling out of the RTT, as ping's do. Where the
        // option is missing (ENOPROTOOPT under qemu-user), replies are timed when read instead.
        match setsockopt(&socket, sockopt::ReceiveTimestampns, &true) {
            Ok(()) | Err(nix::errno::Errno::ENOPROTOOPT) => {}
            Err(e) => return Err(e.into()),
        }
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

    /// Sends `cfg.count` requests and collects the replies.
    pub fn run(&self, cfg: &PingConfig, should_stop: &(dyn Fn() -> bool + Sync)) -> PingResult {
        let mut sent_at: Vec<Option<SystemTime>> = Vec::new();
        let mut rtts = Replies::default();
        let dest = SockAddr::from(SocketAddr::new(self.target.ip(), 0));
        let mut warm_up = 0;
        if cfg.warm_up && !should_stop() {
            let packet = icmp::echo_request(self.family, self.id, WARM_UP_SEQ);
            // A request that cannot leave fails again below, counted there.
            if self.socket.send_to(&packet, &dest).is_ok() {
                warm_up = 1;
                let until = Instant::now() + cfg.interval;
                while let Some((echo, _)) = self.next_reply(until, should_stop) {
                    if echo.seq == WARM_UP_SEQ {
                        break;
                    }
                }
            }
        }
        let start = Instant::now();
        let mut error = None;
        let mut unsent = 0;
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
                    unsent += 1;
                    error.get_or_insert(e);
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
        // Requests that never left are not lost: the error says why they were not sent.
        let error = error.map(|e| {
            super::local_message(
                &format!(
                    "{unsent} of {} echo request(s) could not be sent",
                    sent + unsent
                ),
                &e,
            )
        });
        PingResult {
            method: Method::Icmp,
            sent,
            warm_up,
            rtts_ms: rtts.rtts_ms,
            error,
            fallback: None,
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
        let sent = sent_at.iter().flatten().count();
        // After the last request, stop as soon as every request has its reply.
        while !(last && rtts.rtts_ms.len() >= sent) {
            let Some((echo, received)) = self.next_reply(until, should_stop) else {
                return;
            };
            if let Some(Some(sent)) = sent_at.get(usize::from(echo.seq)) {
                if let Ok(rtt) = received.duration_since(*sent) {
                    rtts.record(echo.seq, rtt.as_secs_f64() * 1e3);
                }
            }
        }
    }

    /// The next echo reply from the target to our identifier, with the kernel's receive time;
    /// `None` at `until` or when told to stop.
    fn next_reply(
        &self,
        until: Instant,
        should_stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<(icmp::Echo, SystemTime)> {
        let mut buf = [0u8; 1500];
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || should_stop() {
                return None;
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
            return Some((echo, received));
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
