//! The network section: ping latency and loss to each client (all at once), then TCP bandwidth
//! with the iperf3 wire protocol to each client in turn, forward and reverse, then to all clients
//! at once. A client that fails gets its own error and the run goes on; lookups, pings and the
//! reachability probe run in parallel, so N dead clients cost those deadlines once.
//!
//! A loopback client with nothing listening on the port gets an in-process responder, so
//! `health_check -r server -c localhost` works on a lone machine.

pub mod error;
pub mod icmp;
pub mod iperf3;
pub mod link;
pub mod listening;
pub mod ping;
pub mod resolve;
pub mod window;

use error::NetError;
use iperf3::client::{ClientError, TestReport, TestSpec, Timeouts, run_test};
use iperf3::protocol::DEFAULT_BLOCK;
use iperf3::server::{Responder, ServerConfig};
use link::Link;
use ping::{PingConfig, PingResult};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the network section does.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkConfig {
    /// Client host names as given.
    pub clients: Vec<String>,
    /// iperf3 port on the clients.
    pub port: u16,
    /// Ping settings; `None` skips ping.
    pub ping: Option<PingConfig>,
    /// Bandwidth settings; `None` skips the bandwidth tests.
    pub bandwidth: Option<BandwidthConfig>,
    /// Deadline for name lookups.
    pub resolve_timeout: Duration,
    /// Connect and control-channel deadlines.
    pub timeouts: Timeouts,
}

/// Bandwidth-test settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BandwidthConfig {
    /// Parallel TCP streams (iperf3 -P).
    pub streams: u32,
    /// Seconds per direction (iperf3 -t).
    pub seconds: u32,
    /// Seconds of the reverse test (iperf3 -R); 0 skips it.
    pub reverse_seconds: u32,
    /// With several clients, also measure all at once.
    pub aggregate: bool,
}

/// A bandwidth test's outcome, from the server role's side.
pub type TestOutcome = Result<TestReport, NetError>;

/// Everything measured for one client.
#[derive(Debug)]
pub struct HostResult {
    /// The name exactly as given.
    pub hostname: String,
    /// The address used, or why there is none.
    pub address: Result<SocketAddr, NetError>,
    /// Ping samples.
    pub ping: Option<PingResult>,
    /// This end sends to the client (iperf3's normal direction).
    pub forward: Option<TestOutcome>,
    /// The client sends to this end.
    pub reverse: Option<TestOutcome>,
    /// The egress interface towards the client.
    pub link: Option<Link>,
    /// Who answered: `iperf3`, or `health_check <version>` (embedded or remote).
    pub peer: Option<String>,
}

/// All clients at once.
#[derive(Debug)]
pub struct Aggregate {
    /// The clients that took part.
    pub clients: Vec<String>,
    /// Each client's outcome.
    pub outcomes: Vec<TestOutcome>,
    /// The working tests' bytes in the window where all of them ran (in the order of the
    /// clients whose test worked), or why there is none.
    pub window: Result<window::CommonWindow, window::WindowError>,
}

/// The section's results.
#[derive(Debug)]
pub struct NetworkResults {
    /// One entry per client, in the order given.
    pub hosts: Vec<HostResult>,
    /// All at once, when there were several reachable clients.
    pub aggregate: Option<Aggregate>,
    /// Set when a stop request cut the section short.
    pub interrupted: bool,
}

/// Runs the section. `progress` receives one line per step for stderr.
pub fn measure(
    cfg: &NetworkConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
    progress: &dyn Fn(&str),
) -> NetworkResults {
    let addresses = resolve::resolve_all(&cfg.clients, cfg.port, cfg.resolve_timeout);
    let mut hosts: Vec<HostResult> = cfg
        .clients
        .iter()
        .zip(addresses)
        .map(|(h, a)| HostResult {
            hostname: h.clone(),
            link: a.as_ref().ok().and_then(|a| link::egress_link(a.ip())),
            address: a,
            ping: None,
            forward: None,
            reverse: None,
            peer: None,
        })
        .collect();
    if let Some(ping_cfg) = &cfg.ping {
        progress(&format!(
            "ping: {} client(s), {} requests each",
            hosts.len(),
            ping_cfg.count
        ));
        ping_hosts(&mut hosts, ping_cfg, should_stop);
    }
    let mut aggregate = None;
    if let Some(bw) = &cfg.bandwidth {
        let embedded = Embedded::default();
        std::thread::scope(|scope| {
            let tester = Tester {
                bw,
                cfg,
                embedded: &embedded,
                scope,
                should_stop,
                progress,
            };
            bandwidth_per_host(&mut hosts, &tester);
            if bw.aggregate && !should_stop() {
                aggregate = all_at_once(&hosts, bw, cfg, should_stop, progress);
            }
            embedded.stop.store(true, Ordering::Relaxed);
        });
    }
    NetworkResults {
        hosts,
        aggregate,
        interrupted: should_stop(),
    }
}

fn ping_hosts(hosts: &mut [HostResult], cfg: &PingConfig, should_stop: &(dyn Fn() -> bool + Sync)) {
    let targets: Vec<(usize, SocketAddr)> = hosts
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.address.as_ref().ok().map(|a| (i, *a)))
        .collect();
    let addrs: Vec<SocketAddr> = targets.iter().map(|(_, a)| *a).collect();
    let results = ping::ping_all(&addrs, cfg, should_stop);
    for ((i, _), r) in targets.into_iter().zip(results) {
        hosts[i].ping = Some(r);
    }
}

/// In-process responders started for loopback clients, and the flag that stops them.
#[derive(Default)]
struct Embedded {
    stop: AtomicBool,
    started: std::sync::Mutex<Vec<SocketAddr>>,
}

fn is_refused(e: &ClientError) -> bool {
    matches!(e, ClientError::Refused(_))
}

/// Checks every client's port at once, so N unreachable clients cost one connect deadline. Only
/// worth its extra connection with several clients.
fn probe_all(hosts: &[HostResult], timeout: Duration) -> Vec<Option<ClientError>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| {
                let addr = h.address.as_ref().ok().copied();
                scope.spawn(move || addr.and_then(|a| iperf3::client::connect(a, timeout).err()))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(None))
            .collect()
    })
}

/// Where a host's tests run: the section's settings and the embedded responders.
struct Tester<'a, 'scope, 'env> {
    bw: &'a BandwidthConfig,
    cfg: &'a NetworkConfig,
    embedded: &'env Embedded,
    scope: &'scope std::thread::Scope<'scope, 'env>,
    should_stop: &'a (dyn Fn() -> bool + Sync),
    progress: &'a dyn Fn(&str),
}

fn bandwidth_per_host<'scope, 'env>(hosts: &mut [HostResult], t: &Tester<'_, 'scope, 'env>) {
    let probes = if hosts.len() > 1 {
        probe_all(hosts, t.cfg.timeouts.connect)
    } else {
        hosts.iter().map(|_| None).collect()
    };
    for (host, probe) in hosts.iter_mut().zip(probes) {
        let Ok(&addr) = host.address.as_ref() else {
            continue;
        };
        if (t.should_stop)() {
            break;
        }
        match probe.filter(|e| !(is_refused(e) && addr.ip().is_loopback())) {
            Some(e) => host.forward = Some(Err(e.into())),
            None => test_host(host, addr, t),
        }
    }
}

/// Forward test (starting an embedded responder for a silent loopback client), then reverse.
fn test_host<'scope, 'env>(host: &mut HostResult, addr: SocketAddr, t: &Tester<'_, 'scope, 'env>) {
    let spec = |reverse: bool| TestSpec {
        streams: t.bw.streams,
        seconds: if reverse {
            t.bw.reverse_seconds
        } else {
            t.bw.seconds
        },
        reverse,
        block: DEFAULT_BLOCK,
    };
    (t.progress)(&format!(
        "iperf3: {} ({} streams, {} s)",
        host.hostname, t.bw.streams, t.bw.seconds
    ));
    let fd_trouble = crate::os::fd_exhaustions();
    // A loopback port nobody listens on needs no connect retries (1 s) to tell.
    let mut forward = if addr.ip().is_loopback() && listening::is_listening(addr) == Some(false) {
        Err(ClientError::Refused(addr))
    } else {
        run_test(addr, &spec(false), &t.cfg.timeouts, t.should_stop)
    };
    if matches!(&forward, Err(e) if is_refused(e)) && addr.ip().is_loopback() {
        forward = match start_embedded(addr, t.embedded, t.scope) {
            Ok(()) => {
                (t.progress)(&format!(
                    "iperf3: nothing listens on {addr}; started an in-process responder for '{}'",
                    host.hostname
                ));
                run_test(addr, &spec(false), &t.cfg.timeouts, t.should_stop)
            }
            // Someone took the port since the first try (another run starting its own
            // responder): it may answer now; if not, say who is in the way.
            Err(taken @ ClientError::PortTaken(_)) => {
                run_test(addr, &spec(false), &t.cfg.timeouts, t.should_stop).map_err(|_| taken)
            }
            Err(e) => Err(e),
        };
    }
    let is_embedded = t
        .embedded
        .started
        .lock()
        .map(|s| s.contains(&addr))
        .unwrap_or(false);
    let forward = forward.and_then(|r| within_link(r, addr, host.link.as_ref()));
    host.peer = forward.as_ref().ok().map(|r| peer_name(r, is_embedded));
    let forward_ok = forward.is_ok();
    host.forward =
        Some(forward.map_err(|e| NetError::from(e).local_if_out_of_descriptors(fd_trouble)));
    if t.bw.reverse_seconds > 0 && forward_ok && !(t.should_stop)() {
        (t.progress)(&format!(
            "iperf3: {} reverse ({} s)",
            host.hostname, t.bw.reverse_seconds
        ));
        let reverse = run_test(addr, &spec(true), &t.cfg.timeouts, t.should_stop)
            .and_then(|r| within_link(r, addr, host.link.as_ref()));
        host.reverse =
            Some(reverse.map_err(|e| NetError::from(e).local_if_out_of_descriptors(fd_trouble)));
    }
}

/// A goodput above the egress link's speed cannot be true: the peer's figures are refused.
fn within_link(
    r: TestReport,
    addr: SocketAddr,
    link: Option<&Link>,
) -> Result<TestReport, ClientError> {
    match beyond_link(r.receiver_gbps().max(r.sender_gbps()), link) {
        Some(what) => Err(ClientError::Implausible { addr, what }),
        None => Ok(r),
    }
}

/// Says how `gbps` exceeds the link's wire speed (5 % allowed for clock skew); loopback and
/// virtual devices have none (see [`link::wire_speed_gbps`]).
fn beyond_link(gbps: f64, link: Option<&Link>) -> Option<String> {
    let link = link?;
    let speed = link.speed_gbps?;
    (gbps > speed * 1.05).then(|| {
        format!(
            "{gbps:.3} Gbit/s over a {speed} Gbit/s link ({})",
            link.interface
        )
    })
}

fn peer_name(r: &TestReport, embedded: bool) -> String {
    match (&r.peer_version, embedded) {
        (Some(v), true) => format!("{v} (embedded)"),
        (Some(v), false) => v.clone(),
        (None, _) => "iperf3".to_string(),
    }
}

fn start_embedded<'scope, 'env>(
    addr: SocketAddr,
    embedded: &'env Embedded,
    scope: &'scope std::thread::Scope<'scope, 'env>,
) -> Result<(), ClientError> {
    let responder = Responder::bind(&ServerConfig {
        bind: Some(addr.ip()),
        port: addr.port(),
    })
    .map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => ClientError::PortTaken(addr),
        _ => ClientError::Connect { addr, source: e },
    })?;
    if let Ok(mut s) = embedded.started.lock() {
        s.push(addr);
    }
    scope.spawn(move || {
        let stop = || embedded.stop.load(Ordering::Relaxed);
        responder.serve(&stop, None)
    });
    Ok(())
}

/// Forward tests to every client that passed its own, all at the same time.
fn all_at_once(
    hosts: &[HostResult],
    bw: &BandwidthConfig,
    cfg: &NetworkConfig,
    should_stop: &(dyn Fn() -> bool + Sync),
    progress: &dyn Fn(&str),
) -> Option<Aggregate> {
    // One test per distinct address: two names for one host would only take turns.
    let mut ready: Vec<(&str, SocketAddr)> = Vec::new();
    for h in hosts.iter().filter(|h| matches!(h.forward, Some(Ok(_)))) {
        if let Ok(&a) = h.address.as_ref() {
            if !ready.iter().any(|(_, seen)| *seen == a) {
                ready.push((h.hostname.as_str(), a));
            }
        }
    }
    if ready.len() < 2 {
        return None;
    }
    progress(&format!(
        "iperf3: all {} clients at once ({} s)",
        ready.len(),
        bw.seconds
    ));
    let spec = TestSpec {
        streams: bw.streams,
        seconds: bw.seconds,
        reverse: false,
        block: DEFAULT_BLOCK,
    };
    // Only a short wait for a busy client, or the tests would run one after another.
    let timeouts = Timeouts {
        busy: Some(Duration::from_secs(2)),
        ..cfg.timeouts
    };
    let timeouts = &timeouts;
    let outcomes: Vec<TestOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = ready
            .iter()
            .map(|(_, addr)| scope.spawn(move || run_test(*addr, &spec, timeouts, should_stop)))
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r.map_err(NetError::from),
                Err(_) => Err(NetError::Panicked),
            })
            .collect()
    });
    let timelines: Vec<&[_]> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok().map(|r| r.timeline.as_slice()))
        .collect();
    let min_length = Duration::from_secs(u64::from(bw.seconds)).max(Duration::from_secs(2)) / 2;
    let window = window::common_window(&timelines, window::SETTLE, min_length);
    Some(Aggregate {
        clients: ready.iter().map(|(h, _)| h.to_string()).collect(),
        outcomes,
        window,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(speed_gbps: Option<f64>) -> Link {
        Link {
            interface: "eth0".into(),
            speed_gbps,
            mtu: Some(1500),
        }
    }

    #[test]
    fn only_a_wire_speed_bounds_the_goodput() {
        let what = beyond_link(30.8, Some(&link(Some(10.0)))).unwrap();
        assert!(
            what.contains("30.800 Gbit/s over a 10 Gbit/s link (eth0)"),
            "{what}"
        );
        assert_eq!(
            beyond_link(10.4, Some(&link(Some(10.0)))),
            None,
            "5 % for clock skew"
        );
        assert_eq!(
            beyond_link(30.8, Some(&link(None))),
            None,
            "a veth: no wire speed"
        );
        assert_eq!(beyond_link(30.8, None), None);
    }
}
