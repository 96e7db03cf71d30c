//! The link a client is reached over: the egress interface (a route lookup: connect a UDP socket,
//! which sends nothing, and read the local address it picked), its speed from
//! `/sys/class/net/<if>/speed` (Mbit/s) and MTU, and the most TCP goodput that link can carry.

use crate::system::parse::parse_int;
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// The egress interface towards a client.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Interface name.
    pub interface: String,
    /// Negotiated speed, Gbit/s; `None` for loopback and virtual devices that report none.
    pub speed_gbps: Option<f64>,
    /// MTU in bytes.
    pub mtu: Option<u32>,
    /// Backed by a device (a NIC): its speed is a wire's. A virtual device (veth, bridge, tun)
    /// reports a nominal speed (veth: 10 Gbit/s) that bounds nothing.
    pub physical: bool,
}

/// Finds the interface the kernel would use to reach `target`.
pub fn egress_link(target: IpAddr) -> Option<Link> {
    let local = local_address_towards(target)?;
    let interface = interface_with_address(local)?;
    let sys = |f: &str| std::fs::read_to_string(format!("/sys/class/net/{interface}/{f}")).ok();
    Some(Link {
        speed_gbps: sys("speed")
            .and_then(|t| parse_int(&t))
            .filter(|&mbps| mbps > 0)
            .map(|mbps| mbps as f64 / 1000.0),
        mtu: sys("mtu").and_then(|t| t.trim().parse().ok()),
        physical: std::path::Path::new(&format!("/sys/class/net/{interface}/device")).exists(),
        interface,
    })
}

fn local_address_towards(target: IpAddr) -> Option<IpAddr> {
    let bind: SocketAddr = match target {
        IpAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        IpAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect(SocketAddr::new(target, 9)).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

fn interface_with_address(local: IpAddr) -> Option<String> {
    nix::ifaddrs::getifaddrs().ok()?.find_map(|ifa| {
        let addr = ifa.address?;
        let ip = addr
            .as_sockaddr_in()
            .map(|s| IpAddr::V4(s.ip()))
            .or_else(|| addr.as_sockaddr_in6().map(|s| IpAddr::V6(s.ip())))?;
        (ip == local).then_some(ifa.interface_name)
    })
}

/// The most TCP payload an Ethernet link of `speed_gbps` carries, Gbit/s: each frame of MTU bytes
/// holds MTU - IP header - 20 (TCP) - 12 (timestamps option) bytes of payload and costs
/// MTU + 38 bytes of wire time (14 header, 4 FCS, 8 preamble, 12 inter-frame gap).
pub fn tcp_goodput_limit_gbps(speed_gbps: f64, mtu: u32, ipv6: bool) -> f64 {
    let ip_header = if ipv6 { 40.0 } else { 20.0 };
    let mtu = f64::from(mtu);
    speed_gbps * (mtu - ip_header - 32.0) / (mtu + 38.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodput_limits_of_common_links() {
        // 1 GbE at MTU 1500: 1448 / 1538 of the line rate.
        assert!((tcp_goodput_limit_gbps(1.0, 1500, false) - 0.941_482).abs() < 1e-5);
        // Jumbo frames lose less to headers.
        assert!(tcp_goodput_limit_gbps(100.0, 9000, false) > 99.0);
        assert!(tcp_goodput_limit_gbps(1.0, 1500, true) < tcp_goodput_limit_gbps(1.0, 1500, false));
    }

    #[test]
    fn loopback_is_found_and_has_no_speed() {
        let link = egress_link("127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(link.interface, "lo");
        assert_eq!(link.speed_gbps, None);
        assert_eq!(link.mtu, Some(65536));
        assert!(!link.physical);
    }
}
