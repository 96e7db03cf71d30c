//! ICMP echo packets, pure: building requests and recognising replies for IPv4 (RFC 792) and
//! IPv6 (RFC 4443). Raw IPv4 sockets hand us the IP header too; datagram ("ping") sockets and
//! IPv6 sockets do not.

/// Bytes of payload after the 8-byte ICMP header: ping's default `-s 56`, so packet sizes and RTTs
/// compare with `ping`'s.
pub const PAYLOAD_LEN: usize = 56;

/// IP version of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// ICMP over IPv4.
    V4,
    /// ICMPv6.
    V6,
}

impl Family {
    fn request_type(self) -> u8 {
        match self {
            Family::V4 => 8,
            Family::V6 => 128,
        }
    }

    fn reply_type(self) -> u8 {
        match self {
            Family::V4 => 0,
            Family::V6 => 129,
        }
    }
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request with identifier `id` and sequence `seq`. The checksum is filled in for IPv4;
/// for IPv6 the kernel computes it (it needs the pseudo-header).
pub fn echo_request(family: Family, id: u16, seq: u16) -> Vec<u8> {
    let mut p = vec![0u8; 8 + PAYLOAD_LEN];
    p[0] = family.request_type();
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p[8..].iter_mut().enumerate() {
        *b = i as u8;
    }
    if family == Family::V4 {
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
    }
    p
}

/// An echo reply's identifier and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Echo {
    /// Identifier (rewritten by the kernel on datagram sockets).
    pub id: u16,
    /// Sequence number.
    pub seq: u16,
}

/// Recognises an echo reply in a received buffer; `with_ip_header` for raw IPv4 sockets. Anything
/// else (requests we see on loopback, errors, truncated packets) is `None`.
pub fn parse_echo_reply(family: Family, buf: &[u8], with_ip_header: bool) -> Option<Echo> {
    let icmp = if with_ip_header {
        let first = *buf.first()?;
        if first >> 4 != 4 {
            return None;
        }
        let ihl = usize::from(first & 0x0f) * 4;
        buf.get(ihl..)?
    } else {
        buf
    };
    if icmp.len() < 8 || icmp[0] != family.reply_type() || icmp[1] != 0 {
        return None;
    }
    Some(Echo {
        id: u16::from_be_bytes([icmp[4], icmp[5]]),
        seq: u16::from_be_bytes([icmp[6], icmp[7]]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_checksum_verifies() {
        let p = echo_request(Family::V4, 0x1234, 7);
        assert_eq!(p.len(), 64);
        assert_eq!(checksum(&p), 0, "a packet with its checksum sums to zero");
        assert_eq!((p[0], p[4], p[5], p[7]), (8, 0x12, 0x34, 7));
        assert_eq!(echo_request(Family::V6, 1, 1)[0], 128);
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2, complement 0x220d.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
        assert_eq!(checksum(&[0xff]), !0xff00);
    }

    #[test]
    fn replies_are_recognised_with_and_without_ip_header() {
        let mut reply = echo_request(Family::V4, 42, 3);
        reply[0] = 0;
        let mut ip = vec![0x45u8; 20];
        ip.extend_from_slice(&reply);
        assert_eq!(
            parse_echo_reply(Family::V4, &ip, true),
            Some(Echo { id: 42, seq: 3 })
        );
        assert_eq!(
            parse_echo_reply(Family::V4, &reply, false),
            Some(Echo { id: 42, seq: 3 })
        );
        // Our own request echoed back on loopback is not a reply.
        assert_eq!(
            parse_echo_reply(Family::V4, &echo_request(Family::V4, 42, 3), false),
            None
        );
        let mut v6 = echo_request(Family::V6, 9, 1);
        v6[0] = 129;
        assert_eq!(
            parse_echo_reply(Family::V6, &v6, false),
            Some(Echo { id: 9, seq: 1 })
        );
        assert_eq!(parse_echo_reply(Family::V4, &[0x45, 0, 0], true), None);
        assert_eq!(parse_echo_reply(Family::V4, &[], true), None);
    }
}
