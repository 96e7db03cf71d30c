//! The link a client is reached over: the egress interface (a route lookup: connect a UDP socket,
//! which sends nothing, and read the local address it picked), its speed from
//! `/sys/class/net/<if>/speed` (Mbit/s) and MTU, and the most TCP goodput that link can carry.

use crate::system::parse::parse_int;
use crate::system::source::{HostFs, Source};
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// The egress interface towards a client.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Interface name.
    pub interface: String,
    /// The wire's negotiated speed, Gbit/s (see [`wire_speed_gbps`]); `None` for loopback and
    /// other virtual devices.
    pub speed_gbps: Option<f64>,
    /// MTU in bytes.
    pub mtu: Option<u32>,
}

/// Finds the interface the kernel would use to reach `target`.
pub fn egress_link(target: IpAddr) -> Option<Link> {
    let local = local_address_towards(target)?;
    let interface = interface_with_address(local)?;
    Some(Link {
        speed_gbps: wire_speed_gbps(&HostFs, &interface),
        mtu: HostFs
            .read(&format!("/sys/class/net/{interface}/mtu"))
            .and_then(|t| t.trim().parse().ok()),
        interface,
    })
}

/// The interface's speed when it is a wire's, Gbit/s: a NIC's (a `device` in sysfs, paravirtual
/// ones included), or that of a bond, VLAN or team, whose speed the kernel takes from the NICs
/// beneath. Other virtual devices report a nominal figure that bounds nothing (a veth says
/// 10 Gbit/s and carries 30 between two namespaces; a tun says 10 Mbit/s): `None`.
pub fn wire_speed_gbps(src: &dyn Source, interface: &str) -> Option<f64> {
    let base = format!("/sys/class/net/{interface}");
    let over_nics = src
        .read(&format!("{base}/uevent"))
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("DEVTYPE="))
                .map(|d| matches!(d.trim(), "bond" | "vlan" | "team"))
        })
        .unwrap_or(false);
    if !over_nics && src.list(&format!("{base}/device")).is_empty() {
        return None;
    }
    src.read(&format!("{base}/speed"))
        .and_then(|t| parse_int(&t))
        .filter(|&mbps| mbps > 0)
        .map(|mbps| mbps as f64 / 1000.0)
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
    }

    #[test]
    fn only_a_wire_has_a_speed() {
        use crate::system::source::FakeFs;
        let mut fs = FakeFs::new();
        let net = "/sys/class/net";
        fs.insert(format!("{net}/eth0/speed"), "25000\n")
            .insert(format!("{net}/eth0/device/vendor"), "0x15b3\n")
            .insert(format!("{net}/eth0/uevent"), "INTERFACE=eth0\nIFINDEX=2\n")
            .insert(format!("{net}/bond0/speed"), "50000\n")
            .insert(
                format!("{net}/bond0/uevent"),
                "DEVTYPE=bond\nINTERFACE=bond0\n",
            )
            .insert(format!("{net}/eth0.7/speed"), "25000\n")
            .insert(
                format!("{net}/eth0.7/uevent"),
                "DEVTYPE=vlan\nINTERFACE=eth0.7\n",
            )
            .insert(format!("{net}/veth0/speed"), "10000\n")
            .insert(
                format!("{net}/veth0/uevent"),
                "INTERFACE=veth0\nIFINDEX=9\n",
            )
            .insert(format!("{net}/br0/speed"), "10000\n")
            .insert(
                format!("{net}/br0/uevent"),
                "DEVTYPE=bridge\nINTERFACE=br0\n",
            )
            .insert(format!("{net}/eth1/speed"), "-1\n")
            .insert(format!("{net}/eth1/device/vendor"), "0x8086\n");
        assert_eq!(wire_speed_gbps(&fs, "eth0"), Some(25.0));
        assert_eq!(wire_speed_gbps(&fs, "bond0"), Some(50.0));
        assert_eq!(wire_speed_gbps(&fs, "eth0.7"), Some(25.0));
        assert_eq!(
            wire_speed_gbps(&fs, "veth0"),
            None,
            "a veth's 10 Gbit/s is nominal"
        );
        assert_eq!(wire_speed_gbps(&fs, "br0"), None);
        assert_eq!(wire_speed_gbps(&fs, "eth1"), None, "no link: -1");
        assert_eq!(wire_speed_gbps(&fs, "missing"), None);
    }
}
