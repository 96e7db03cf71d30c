//! Network rules: ping loss (any warns, more than 1 % fails), a bandwidth figure for every
//! client, bandwidth against the link's TCP goodput limit, and forward against reverse.

use super::{Thresholds, check, pass_or_warn};
use crate::wire::document::{BandwidthEntry, Check, CheckId, PingEntry, PingMethod, Status};

/// Ping loss: none passes, any warns, more than the limit fails. No reply at all fails.
pub fn ping_loss(p: &PingEntry, t: &Thresholds) -> Check {
    let name = CheckId::new("network", "ping_loss").on(p.hostname.as_str());
    let limit = t.ping_loss_pct;
    // A local error is this machine's, not the path's: no request was lost, so there is no
    // loss to judge (the error stays in the ping entry and its section).
    if let Some(why) = &p.error {
        return check(
            &name,
            Status::Skip,
            p.loss_pct,
            limit,
            format!(
                "'{}': no loss to judge: the requests could not be sent here: {why}",
                p.hostname
            ),
        );
    }
    let Some(loss) = p.loss_pct else {
        return check(
            &name,
            Status::Fail,
            None,
            limit,
            format!(
                "'{}' cannot be pinged: no request could be sent",
                p.hostname
            ),
        );
    };
    let (status, verdict) = if loss == 0.0 {
        (Status::Pass, "no loss".to_string())
    } else if loss <= limit {
        (
            Status::Warn,
            format!("{loss}% loss: look at the link's error counters"),
        )
    } else {
        (
            Status::Fail,
            format!("{loss}% loss is above {limit}%: the path to it drops packets"),
        )
    };
    let what = p.typical_rtt_name();
    let rtt = p
        .typical_rtt()
        .map_or_else(String::new, |ms| format!(", {ms} ms {what}"));
    let msg = format!(
        "'{}': {}/{} replies{rtt}; {verdict}",
        p.hostname, p.received, p.sent
    );
    check(&name, status, Some(loss), limit, msg)
}

/// The RTT must be an ICMP echo's to compare with `ping` and DCPerf: TCP connect time (the
/// fallback without an ICMP socket) warns.
pub fn ping_method(p: &PingEntry) -> Option<Check> {
    let name = CheckId::new("network", "ping_method").on(p.hostname.as_str());
    match p.method? {
        PingMethod::Icmp => Some(
            check(
                &name,
                Status::Pass,
                None,
                0.0,
                format!("'{}': RTT of ICMP echo, as ping measures it", p.hostname),
            )
            .without_limit(),
        ),
        PingMethod::TcpConnect => Some(
            check(
                &name,
                Status::Warn,
                None,
                0.0,
                format!(
                    "'{}': the RTT is TCP connect time, not an ICMP echo's: it is not comparable \
                     with ping's or DCPerf's figure{}",
                    p.hostname,
                    p.fallback
                        .as_deref()
                        .map_or(String::new(), |f| format!(" ({f})"))
                ),
            )
            .without_limit(),
        ),
    }
}

/// Whether a client is this machine itself (a loopback address, or `localhost`).
fn is_loopback(hostname: &str, address: Option<&str>) -> bool {
    let ip = |text: &str| {
        text.parse::<std::net::SocketAddr>()
            .map(|s| s.ip())
            .or_else(|_| text.trim_matches(['[', ']']).parse::<std::net::IpAddr>())
            .is_ok_and(|ip| ip.is_loopback())
    };
    hostname == "localhost" || ip(hostname) || address.is_some_and(ip)
}

/// Bandwidth to each client: DCPerf's TaoBench asks at least 10 Gbit/s of a machine with up to
/// 72 logical CPUs and 20 Gbit/s above (`cpus`); less fails. A loopback client is exempt: it
/// measures the kernel, not a network.
pub fn bandwidth(b: &BandwidthEntry, t: &Thresholds, cpus: Option<usize>) -> Check {
    let name = CheckId::new("network", "bandwidth").on(b.hostname.as_str());
    let (limit, size) = match cpus {
        Some(n) if n > 72 => (
            t.min_bandwidth_gbps_large,
            format!("{n} logical CPUs (more than 72)"),
        ),
        Some(n) => (
            t.min_bandwidth_gbps,
            format!("{n} logical CPUs (72 or fewer)"),
        ),
        None => (
            t.min_bandwidth_gbps,
            "a machine of unknown size".to_string(),
        ),
    };
    let Some(gbps) = b.bandwidth else {
        return match &b.error {
            Some(e) => check(
                &name,
                Status::Fail,
                None,
                limit,
                format!("'{}': no bandwidth figure: {e}", b.hostname),
            ),
            None => check(
                &name,
                Status::Skip,
                None,
                limit,
                format!("'{}': bandwidth was not measured", b.hostname),
            ),
        };
    };
    let seen = format!(
        "'{}': {gbps} Gbit/s receiver goodput with {} streams",
        b.hostname, b.streams
    );
    if is_loopback(&b.hostname, b.address.as_deref()) {
        return check(
            &name,
            Status::Pass,
            Some(gbps),
            limit,
            format!(
                "{seen}; a loopback client measures this machine's kernel, not a network, so DCPerf's {limit} Gbit/s does not apply"
            ),
        );
    }
    if gbps < limit {
        check(
            &name,
            Status::Fail,
            Some(gbps),
            limit,
            format!(
                "{seen}: below the {limit} Gbit/s DCPerf's TaoBench asks of {size}; check the \
                 NIC's link speed, the path (switch ports, cabling) and the client's load"
            ),
        )
    } else {
        check(
            &name,
            Status::Pass,
            Some(gbps),
            limit,
            format!("{seen}, at least the {limit} Gbit/s DCPerf asks of {size}"),
        )
    }
}

/// Ping RTT (the median; older documents' average): DCPerf's TaoBench wants 0.1 to 0.15 ms
/// between server and clients; above the limit warns.
pub fn ping_rtt(p: &PingEntry, t: &Thresholds) -> Check {
    let name = CheckId::new("network", "ping_rtt").on(p.hostname.as_str());
    let limit = t.ping_rtt_ms;
    let what = p.typical_rtt_name();
    let Some(ms) = p.typical_rtt() else {
        return check(
            &name,
            Status::Skip,
            None,
            limit,
            format!("'{}': no RTT was measured", p.hostname),
        );
    };
    if ms > limit {
        check(
            &name,
            Status::Warn,
            Some(ms),
            limit,
            format!(
                "'{}': {ms} ms {what} RTT, above the {limit} ms DCPerf's TaoBench wants between \
                 server and clients: put them in the same rack or network segment",
                p.hostname
            ),
        )
    } else {
        check(
            &name,
            Status::Pass,
            Some(ms),
            limit,
            format!("'{}': {ms} ms {what} RTT", p.hostname),
        )
    }
}

/// Bandwidth against what the egress link can carry as TCP payload.
pub fn link_efficiency(b: &BandwidthEntry, t: &Thresholds) -> Check {
    let name = CheckId::new("network", "link_efficiency").on(b.hostname.as_str());
    let limit = t.link_efficiency_pct;
    let Some(pct) = b.link_efficiency_pct else {
        let iface = b.interface.as_deref().unwrap_or("unknown");
        return check(
            &name,
            Status::Skip,
            None,
            limit,
            format!(
                "'{}': interface '{iface}' has no wire speed (loopback, or a virtual device such as \
                 a veth or bridge, whose reported speed is nominal), so efficiency cannot be judged",
                b.hostname
            ),
        );
    };
    let speed = b.link_speed_gbps.unwrap_or(0.0);
    pass_or_warn(
        &name,
        pct,
        limit,
        format!(
            "'{}': {pct}% of the {speed} Gbit/s link's TCP goodput",
            b.hostname
        ),
        format!(
            "'{}': only {pct}% of the {speed} Gbit/s link's TCP goodput (under {limit}%): check \
             the peer's load, NIC offloads and interrupt placement, and the cabling/switch port",
            b.hostname
        ),
    )
}

/// Forward and reverse bandwidth should be alike; a large gap points at one side's NIC or path.
pub fn reverse_symmetry(b: &BandwidthEntry, t: &Thresholds) -> Check {
    let name = CheckId::new("network", "reverse_symmetry").on(b.hostname.as_str());
    let limit = t.reverse_asymmetry_pct;
    let (Some(fwd), Some(rev)) = (b.bandwidth, b.reverse_gbps) else {
        let why = b
            .reverse_error
            .as_deref()
            .unwrap_or("the reverse test has no figure");
        return check(
            &name,
            Status::Warn,
            None,
            limit,
            format!("'{}': reverse test failed: {why}", b.hostname),
        );
    };
    let larger = fwd.max(rev);
    let diff = if larger > 0.0 {
        100.0 * (fwd - rev).abs() / larger
    } else {
        0.0
    };
    let diff = crate::units::round_to(diff, 1);
    let msg = format!(
        "'{}': {fwd} Gbit/s out, {rev} Gbit/s in ({diff}% apart)",
        b.hostname
    );
    if diff > limit {
        check(
            &name,
            Status::Warn,
            Some(diff),
            limit,
            format!("{msg}: more than {limit}%; one direction is held back"),
        )
    } else {
        check(&name, Status::Pass, Some(diff), limit, msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::network::{bandwidth_error_entry, ping_error_entry};

    fn ping(sent: u32, received: u32) -> PingEntry {
        let mut p = ping_error_entry("h1", "");
        p.error = None;
        p.sent = sent;
        p.received = received;
        p.loss_pct = Some(100.0 * f64::from(sent - received) / f64::from(sent));
        p.latency = Some(0.1);
        p
    }

    fn bw(fwd: Option<f64>, rev: Option<f64>, eff: Option<f64>) -> BandwidthEntry {
        let mut b = bandwidth_error_entry("h1", "", 4);
        b.error = None;
        b.bandwidth = fwd;
        b.reverse_gbps = rev;
        b.link_efficiency_pct = eff;
        b.link_speed_gbps = eff.map(|_| 25.0);
        b.interface = Some("eth0".into());
        b
    }

    /// Each limit is the last value that passes: DCPerf's wording is "at least", "under".
    #[test]
    fn a_figure_at_its_limit_passes() {
        let t = Thresholds::default();
        let at = bw(Some(t.min_bandwidth_gbps), None, None);
        assert_eq!(bandwidth(&at, &t, Some(8)).status, Status::Pass);
        let mut p = ping(10, 10);
        p.latency = Some(t.ping_rtt_ms);
        assert_eq!(ping_rtt(&p, &t).status, Status::Pass);
        // 10 and 10 * (1 - limit/100) Gbit/s are exactly the limit apart.
        let rev = 10.0 * (1.0 - t.reverse_asymmetry_pct / 100.0);
        let apart = bw(Some(10.0), Some(rev), None);
        assert_eq!(reverse_symmetry(&apart, &t).status, Status::Pass);
    }

    /// The RTT's method is judged whenever it is known: ICMP passes, TCP connect time warns.
    #[test]
    fn the_rtts_method_is_named() {
        let mut p = ping(3, 3);
        p.method = Some(PingMethod::Icmp);
        assert_eq!(ping_method(&p).map(|c| c.status), Some(Status::Pass));
        p.method = Some(PingMethod::TcpConnect);
        assert_eq!(ping_method(&p).map(|c| c.status), Some(Status::Warn));
        p.method = None;
        assert!(ping_method(&p).is_none());
    }

    #[test]
    fn ping_loss_passes_warns_and_fails() {
        let t = Thresholds::default();
        assert_eq!(ping_loss(&ping(100, 100), &t).status, Status::Pass);
        assert_eq!(
            ping_loss(&ping(100, 99), &t).status,
            Status::Warn,
            "1 % is not above the limit"
        );
        assert_eq!(ping_loss(&ping(100, 98), &t).status, Status::Fail);
        // An error before any request was sent is no loss: not judged here (the entry and the
        // bandwidth check carry it).
        let dns = ping_error_entry("nosuch", "cannot resolve 'nosuch'");
        let c = ping_loss(&dns, &t);
        assert_eq!(c.status, Status::Skip);
        assert!(c.message.contains("cannot resolve"));
        assert_eq!(c.name, "network.ping_loss:nosuch");
    }

    #[test]
    fn bandwidth_must_meet_dcperfs_requirement() {
        let t = Thresholds::default();
        let small = Some(72);
        assert_eq!(
            bandwidth(&bw(Some(10.5), None, None), &t, small).status,
            Status::Pass
        );
        let c = bandwidth(&bw(Some(9.4), None, None), &t, small);
        assert_eq!((c.status, c.limit), (Status::Fail, Some(10.0)));
        let c = bandwidth(&bw(Some(15.0), None, None), &t, Some(384));
        assert_eq!((c.status, c.limit), (Status::Fail, Some(20.0)));
        assert!(c.message.contains("384 logical CPUs"), "{}", c.message);
        let mut lo = bw(Some(0.5), None, None);
        lo.hostname = "127.0.0.1".into();
        assert_eq!(
            bandwidth(&lo, &t, small).status,
            Status::Pass,
            "loopback is exempt"
        );
        lo.hostname = "me".into();
        lo.address = Some("[::1]:5201".into());
        assert_eq!(bandwidth(&lo, &t, small).status, Status::Pass);
        let failed = bandwidth_error_entry("h2", "connection refused by 10.0.0.2:5201", 4);
        let c = bandwidth(&failed, &t, small);
        assert_eq!(c.status, Status::Fail);
        assert!(c.message.contains("refused"));
    }

    #[test]
    fn ping_rtt_above_dcperfs_range_warns() {
        let t = Thresholds::default();
        let mut p = ping(10, 10);
        p.latency = Some(0.12);
        assert_eq!(ping_rtt(&p, &t).status, Status::Pass);
        p.latency = Some(0.4);
        let c = ping_rtt(&p, &t);
        assert_eq!((c.status, c.limit), (Status::Warn, Some(0.15)));
    }

    #[test]
    fn efficiency_below_ninety_percent_warns() {
        let t = Thresholds::default();
        assert_eq!(
            link_efficiency(&bw(Some(23.0), None, Some(97.0)), &t).status,
            Status::Pass
        );
        let c = link_efficiency(&bw(Some(12.0), None, Some(50.6)), &t);
        assert_eq!(c.status, Status::Warn);
        assert!(c.message.contains("25 Gbit/s"));
        assert_eq!(
            link_efficiency(&bw(Some(12.0), None, None), &t).status,
            Status::Skip
        );
    }

    #[test]
    fn reverse_more_than_twenty_percent_apart_warns() {
        let t = Thresholds::default();
        assert_eq!(
            reverse_symmetry(&bw(Some(10.0), Some(9.0), None), &t).status,
            Status::Pass
        );
        let c = reverse_symmetry(&bw(Some(10.0), Some(7.0), None), &t);
        assert_eq!((c.status, c.value), (Status::Warn, Some(30.0)));
        let mut b = bw(Some(10.0), None, None);
        b.reverse_error = Some("timed out".into());
        assert_eq!(reverse_symmetry(&b, &t).status, Status::Warn);
    }
}
