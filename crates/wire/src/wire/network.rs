//! The network section's results in the wire format: DCPerf's `ping` and `"iperf3 bandwidth"`
//! lists (one entry per client, named exactly as given) and our `network_aggregate`.

use super::document::{AggregateEntry, BandwidthEntry, Gbps, Ms, PingEntry, PingMethod};
use crate::net::iperf3::client::TestReport;
use crate::net::link::tcp_goodput_limit_gbps;
use crate::net::ping::{Method, PingResult};
use crate::net::{Aggregate, HostResult, NetworkResults};
use crate::stats::{mdev, median, min_avg_max};
use crate::units::round_to;

/// A ping entry for a client that could not be pinged at all.
pub fn ping_error_entry(host: &str, why: &str) -> PingEntry {
    PingEntry {
        hostname: host.to_string(),
        latency: None,
        unit: Ms::Word,
        median: None,
        min: None,
        max: None,
        mdev: None,
        sent: 0,
        warm_up: 0,
        received: 0,
        loss_pct: None,
        method: None,
        address: None,
        fallback: None,
        error: Some(why.to_string()),
    }
}

/// A bandwidth entry for a client that could not be tested at all.
pub fn bandwidth_error_entry(host: &str, why: &str, streams: u32) -> BandwidthEntry {
    BandwidthEntry {
        hostname: host.to_string(),
        bandwidth: None,
        unit: Gbps::Word,
        sender_gbps: None,
        retransmits: None,
        streams: streams.max(1),
        seconds: None,
        reverse_gbps: None,
        reverse_sender_gbps: None,
        reverse_retransmits: None,
        link_speed_gbps: None,
        link_efficiency_pct: None,
        interface: None,
        mtu: None,
        peer: None,
        address: None,
        interrupted: false,
        error: Some(why.to_string()),
        reverse_error: None,
    }
}

/// Ping entries, one per client.
pub fn ping_entries(results: &NetworkResults) -> Vec<PingEntry> {
    results.hosts.iter().map(ping_entry).collect()
}

fn ping_entry(h: &HostResult) -> PingEntry {
    let ms = |v: f64| round_to(v, 3);
    let mut entry = ping_error_entry(&h.hostname, "");
    entry.address = h.address.as_ref().ok().map(|a| a.ip().to_string());
    entry.error = h.address.as_ref().err().map(ToString::to_string);
    let Some(p) = &h.ping else {
        return entry;
    };
    fill_ping(&mut entry, p, ms);
    entry
}

fn fill_ping(entry: &mut PingEntry, p: &PingResult, ms: impl Fn(f64) -> f64) {
    entry.method = Some(match p.method {
        Method::Icmp => PingMethod::Icmp,
        Method::TcpConnect => PingMethod::TcpConnect,
    });
    entry.sent = p.sent;
    entry.warm_up = p.warm_up;
    entry.received = p.rtts_ms.len() as u32;
    if p.sent > 0 {
        let lost = p.sent.saturating_sub(entry.received);
        entry.loss_pct = Some(round_to(100.0 * f64::from(lost) / f64::from(p.sent), 2));
    }
    if let Some((min, avg, max)) = min_avg_max(&p.rtts_ms) {
        entry.min = Some(ms(min));
        entry.latency = Some(ms(avg));
        entry.max = Some(ms(max));
        entry.mdev = mdev(&p.rtts_ms).map(&ms);
        entry.median = median(&p.rtts_ms).map(&ms);
    }
    if let Some(e) = &p.error {
        entry.error = Some(e.clone());
    }
    entry.fallback = p.fallback.clone();
}

/// Bandwidth entries, one per client.
pub fn bandwidth_entries(results: &NetworkResults, streams: u32) -> Vec<BandwidthEntry> {
    results
        .hosts
        .iter()
        .map(|h| bandwidth_entry(h, streams))
        .collect()
}

fn gbps(v: f64) -> Option<f64> {
    v.is_finite().then(|| round_to(v, 3))
}

fn bandwidth_entry(h: &HostResult, streams: u32) -> BandwidthEntry {
    let mut e = bandwidth_error_entry(&h.hostname, "", streams);
    e.error = None;
    e.link_speed_gbps = h.link.as_ref().and_then(|l| l.speed_gbps);
    e.interface = h.link.as_ref().map(|l| l.interface.clone());
    e.mtu = h.link.as_ref().and_then(|l| l.mtu);
    e.peer = h.peer.clone();
    e.address = h.address.as_ref().ok().map(|a| a.to_string());
    match (&h.address, &h.forward) {
        (Err(why), _) => e.error = Some(why.to_string()),
        (Ok(_), None) => {}
        (Ok(_), Some(Err(why))) => e.error = Some(why.to_string()),
        (Ok(addr), Some(Ok(r))) => {
            fill_forward(&mut e, r);
            if let (Some(speed), Some(mtu), Some(bw)) = (e.link_speed_gbps, e.mtu, e.bandwidth) {
                let limit = tcp_goodput_limit_gbps(speed, mtu, addr.is_ipv6());
                e.link_efficiency_pct = Some(round_to(100.0 * bw / limit, 1));
            }
        }
    }
    match &h.reverse {
        Some(Ok(r)) => {
            e.reverse_gbps = gbps(r.receiver_gbps());
            e.reverse_sender_gbps = gbps(r.sender_gbps());
            e.reverse_retransmits = r.retransmits;
            e.interrupted |= r.interrupted;
        }
        Some(Err(why)) => e.reverse_error = Some(why.to_string()),
        None => {}
    }
    e
}

fn fill_forward(e: &mut BandwidthEntry, r: &TestReport) {
    e.bandwidth = gbps(r.receiver_gbps());
    e.sender_gbps = gbps(r.sender_gbps());
    e.retransmits = r.retransmits;
    e.seconds = Some(round_to(r.receiver_seconds, 3));
    e.interrupted = r.interrupted;
}

/// The all-at-once figure: every working client's bytes in the window where all of them ran.
pub fn aggregate_entry(agg: &Aggregate, streams: u32) -> AggregateEntry {
    let errors: Vec<String> = agg
        .clients
        .iter()
        .zip(&agg.outcomes)
        .filter_map(|(c, o)| o.as_ref().err().map(|e| format!("{c}: {e}")))
        .collect();
    let (per_client, bandwidth, window_seconds, note) = match &agg.window {
        Ok(w) => {
            let mut rates = w.gbps().into_iter();
            let per_client: Vec<Option<f64>> = agg
                .outcomes
                .iter()
                .map(|o| o.as_ref().ok().and_then(|_| rates.next()).and_then(gbps))
                .collect();
            let sum: f64 = per_client.iter().flatten().sum();
            let any = per_client.iter().any(Option::is_some);
            (
                per_client,
                any.then(|| round_to(sum, 3)),
                Some(round_to(w.seconds, 3)),
                None,
            )
        }
        Err(why) => (
            agg.outcomes.iter().map(|_| None).collect(),
            None,
            None,
            Some(why.to_string()),
        ),
    };
    AggregateEntry {
        bandwidth,
        unit: Gbps::Word,
        clients: agg.clients.clone(),
        per_client_gbps: per_client,
        streams,
        window_seconds,
        note,
        errors,
    }
}
