//! Our iperf3 client: drives one TCP test against a stock `iperf3 -s` or our responder and returns
//! the sender's and the receiver's byte counts and times. The receiver's goodput is the figure
//! that matters; the sender's is reported beside it, as iperf3 does.
//!
//! Time accounting follows iperf3 (`iperf_print_results`): each side's time is that of the first
//! stream (id 1), from TEST_START to its last sample; the peer's time comes from its results.

use super::protocol::{
    COOKIE_LEN, MAX_RESULTS_JSON, Params, ProtocolError, Results, State, StreamResult, make_cookie,
    random_bytes, read_json, read_state, stream_id, write_json, write_state,
};
use super::stream::{CpuClock, DataStream, Deadline, Direction, is_timeout};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// One test to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestSpec {
    /// Parallel streams.
    pub streams: u32,
    /// Whole seconds (the protocol carries integers).
    pub seconds: u32,
    /// The server sends (`-R`).
    pub reverse: bool,
    /// Block size in bytes.
    pub block: usize,
}

/// Deadlines for the waits of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Connecting the control and data connections.
    pub connect: Duration,
    /// Each control-channel wait (a state byte, a JSON message).
    pub control: Duration,
    /// How long to keep retrying a server that answers "busy"; `None` = the test's length + 5 s.
    pub busy: Option<Duration>,
}

/// Why a test failed.
#[derive(Debug, Error)]
pub enum ClientError {
    /// Nothing listens on the port.
    #[error(
        "connection refused by {0}: nothing listens there (start 'health_check -r client' or 'iperf3 -s' on it)"
    )]
    Refused(SocketAddr),
    /// Connecting did not finish in time.
    #[error("no answer from {0} within {1:?} (host down or a firewall drops the connection)")]
    ConnectTimeout(SocketAddr, Duration),
    /// Other connect failures (unreachable network, ...).
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The port was taken by another program while we started our own responder on it.
    #[error(
        "port {} on {} is taken by another program (another health_check run?) that does not \
         answer tests: run one health_check at a time on a machine, or give another --port",
        .0.port(), .0.ip()
    )]
    PortTaken(SocketAddr),
    /// The control protocol failed.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The peer's results cannot be true (a broken or hostile server): they are not used.
    #[error("the peer at {addr} reported {what}, which cannot be true; its results are not used")]
    Implausible {
        /// The peer.
        addr: SocketAddr,
        /// What it reported, against what was possible.
        what: String,
    },
}

/// No network a health check meets carries more than this (beyond 1.6 Tbit/s NICs): a rate above
/// it is a peer's fiction.
const MAX_PLAUSIBLE_GBPS: f64 = 2000.0;

/// What a test measured.
#[derive(Debug, Clone, PartialEq)]
pub struct TestReport {
    /// Bytes the sending side wrote.
    pub sender_bytes: u64,
    /// The sending side's time, seconds.
    pub sender_seconds: f64,
    /// Bytes the receiving side read while the test ran.
    pub receiver_bytes: u64,
    /// The receiving side's time, seconds.
    pub receiver_seconds: f64,
    /// TCP retransmits of the sending side, where known.
    pub retransmits: Option<u64>,
    /// Streams used.
    pub streams: u32,
    /// Whether a stop request ended the test early.
    pub interrupted: bool,
    /// The responder's `health_check <version>`, when the peer is ours (stock iperf3 says nothing).
    pub peer_version: Option<String>,
    /// This end's byte count (sent, or received in reverse) sampled every ~50 ms through the
    /// data phase, so tests run side by side can be summed over one common window.
    pub timeline: Vec<(Instant, u64)>,
}

fn gbps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds / 1e9
    } else {
        f64::NAN
    }
}

impl TestReport {
    /// Receiver goodput, Gbit/s (10^9).
    pub fn receiver_gbps(&self) -> f64 {
        gbps(self.receiver_bytes, self.receiver_seconds)
    }

    /// Sender throughput, Gbit/s.
    pub fn sender_gbps(&self) -> f64 {
        gbps(self.sender_bytes, self.sender_seconds)
    }
}

/// Connects within `timeout`, waiting in 100 ms slices so Ctrl-C ends the wait at once.
pub fn connect_interruptible(addr: SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_nonblocking(true)?;
    match sock.connect(&addr.into()) {
        Ok(()) => {}
        Err(e)
            if e.raw_os_error() == Some(libc::EINPROGRESS)
                || e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    let until = Instant::now() + timeout;
    loop {
        if crate::os::interrupted().is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted",
            ));
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connect timed out",
            ));
        }
        let ms = u16::try_from(left.min(Duration::from_millis(100)).as_millis()).unwrap_or(100);
        let mut fds = [PollFd::new(sock.as_fd(), PollFlags::POLLOUT)];
        if matches!(poll(&mut fds, PollTimeout::from(ms.max(1))), Ok(n) if n > 0) {
            if let Some(e) = sock.take_error()? {
                return Err(e);
            }
            sock.set_nonblocking(false)?;
            return Ok(sock.into());
        }
    }
}

/// Connects with `timeout`, trying again for 1 s while the connection is refused or reset as it
/// is made: a stock server closes and reopens its listener between tests (refused while it is
/// closed; reset when our connection was in the old listener's backlog).
pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ClientError> {
    connect_with(addr, timeout, Duration::from_secs(1), || {
        connect_interruptible(addr, timeout)
    })
}

/// [`connect`]'s policy over `attempt`, trying again for `window`.
fn connect_with(
    addr: SocketAddr,
    timeout: Duration,
    window: Duration,
    mut attempt: impl FnMut() -> std::io::Result<TcpStream>,
) -> Result<TcpStream, ClientError> {
    use std::io::ErrorKind::{ConnectionRefused, ConnectionReset};
    let until = Instant::now() + window;
    loop {
        match attempt() {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(e.kind(), ConnectionRefused | ConnectionReset)
                    && Instant::now() < until =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) if e.kind() == ConnectionRefused => return Err(ClientError::Refused(addr)),
            Err(e) if is_timeout(&e) => return Err(ClientError::ConnectTimeout(addr, timeout)),
            Err(e) => {
                return Err(ClientError::Connect {
                    addr,
                    source: crate::os::note_io_error(e),
                });
            }
        }
    }
}

/// Runs one test, retrying while the server answers "busy" (it serves one test at a time, and a
/// stock server needs a moment to reset after each test) for up to `timeouts.busy`, with jittered
/// backoff so several servers sharing a client do not retry in lockstep. A connection the server
/// resets or closes before the test began is retried the same way: a stock server that has just
/// finished a test accepts the next connection into the old listener's backlog and then resets
/// it as it reopens (nothing was measured yet, so nothing is lost).
pub fn run_test(
    addr: SocketAddr,
    spec: &TestSpec,
    timeouts: &Timeouts,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<TestReport, ClientError> {
    let busy = timeouts
        .busy
        .unwrap_or(Duration::from_secs(u64::from(spec.seconds) + 5));
    let give_up = Instant::now() + busy;
    let mut attempt = 0u32;
    let mut resets = 0u32;
    loop {
        match run_test_once(addr, spec, timeouts, should_stop) {
            Err(ClientError::Protocol(e))
                if retry_before_the_test(&e, &mut resets)
                    && Instant::now() < give_up
                    && !should_stop() =>
            {
                attempt += 1;
                let jitter = u64::from(random_bytes()[0]) * 2; // 0..510 ms
                let backoff = Duration::from_millis((100 * u64::from(attempt.min(5))) + jitter);
                std::thread::sleep(backoff.min(give_up.saturating_duration_since(Instant::now())));
            }
            other => return other,
        }
    }
}

/// Resets and closes during the hello retried at most this many times: a peer that always does
/// that is not an iperf3 server between tests, and its error is due at once.
const HELLO_RESETS: u32 = 3;

/// Whether to try `e` again: a busy server, always (until the busy deadline); a reset or close
/// while we said hello, [`HELLO_RESETS`] times.
fn retry_before_the_test(e: &ProtocolError, resets: &mut u32) -> bool {
    if matches!(e, ProtocolError::AccessDenied) {
        return true;
    }
    if before_the_test(e) && *resets < HELLO_RESETS {
        *resets += 1;
        return true;
    }
    false
}

/// Whether the server reset or closed the control connection while we said hello, before the
/// test began.
fn before_the_test(e: &ProtocolError) -> bool {
    const HELLO: [&str; 2] = ["sending the cookie", "PARAM_EXCHANGE"];
    match e {
        ProtocolError::Closed(what) => HELLO.contains(what),
        ProtocolError::Io { context, source } => {
            HELLO.contains(context)
                && matches!(
                    source.kind(),
                    std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::ConnectionAborted
                )
        }
        _ => false,
    }
}

/// Runs one test against `addr`. `should_stop` ends the data phase early (the figures then cover
/// the shorter time and `interrupted` is set).
fn run_test_once(
    addr: SocketAddr,
    spec: &TestSpec,
    timeouts: &Timeouts,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<TestReport, ClientError> {
    let ctrl = connect(addr, timeouts.connect)?;
    let _ = ctrl.set_nodelay(true);
    let cookie = make_cookie(&random_bytes());
    Deadline::new(&ctrl, timeouts.control)
        .write_all(&cookie)
        .map_err(|e| ProtocolError::from_io(e, "sending the cookie"))?;
    expect(&ctrl, timeouts, State::ParamExchange, "PARAM_EXCHANGE")?;
    let mut params = Params::tcp_test(spec.streams, spec.seconds, spec.reverse);
    params.len = spec.block as i64;
    write_json(&mut Deadline::new(&ctrl, timeouts.control), &params)?;
    expect(&ctrl, timeouts, State::CreateStreams, "CREATE_STREAMS")?;
    let direction = if spec.reverse {
        Direction::Receive
    } else {
        Direction::Send
    };
    let streams = open_streams(addr, &cookie, spec, direction, timeouts)?;
    expect(&ctrl, timeouts, State::TestStart, "TEST_START")?;
    let t0 = Instant::now();
    expect(&ctrl, timeouts, State::TestRunning, "TEST_RUNNING")?;
    let cpu = CpuClock::start();
    let phase = run_data_phase(&ctrl, &streams, spec, t0, timeouts, should_stop)?;
    let (elapsed, interrupted) = (phase.elapsed, phase.interrupted);
    let local = local_results(&streams, &phase.bytes, direction, elapsed, &cpu);
    let timeline = phase.timeline;
    expect(&ctrl, timeouts, State::ExchangeResults, "EXCHANGE_RESULTS")?;
    write_json(&mut Deadline::new(&ctrl, timeouts.control), &local)?;
    let remote: Results = read_json(
        &mut Deadline::new(&ctrl, timeouts.control),
        MAX_RESULTS_JSON,
        "the server's results",
    )?;
    expect(&ctrl, timeouts, State::DisplayResults, "DISPLAY_RESULTS")?;
    for s in &streams {
        s.close();
    }
    let _ = write_state(
        &mut Deadline::new(&ctrl, timeouts.control),
        State::IperfDone,
    );
    report(addr, spec, &local, &remote, elapsed, interrupted).map(|r| TestReport { timeline, ..r })
}

fn expect(
    ctrl: &TcpStream,
    t: &Timeouts,
    want: State,
    name: &'static str,
) -> Result<(), ProtocolError> {
    match read_state(&mut Deadline::new(ctrl, t.control), name)? {
        s if s == want => Ok(()),
        State::ServerTerminate => Err(ProtocolError::Terminated),
        s => Err(ProtocolError::UnexpectedState {
            byte: s.byte(),
            waiting_for: name,
        }),
    }
}

/// Connects the data streams one after another (the server numbers them by accept order).
fn open_streams(
    addr: SocketAddr,
    cookie: &[u8; COOKIE_LEN],
    spec: &TestSpec,
    direction: Direction,
    t: &Timeouts,
) -> Result<Vec<DataStream>, ClientError> {
    (0..spec.streams as usize)
        .map(|i| {
            let sock = connect(addr, t.connect)?;
            Deadline::new(&sock, t.control)
                .write_all(cookie)
                .map_err(|e| ProtocolError::from_io(e, "sending a data stream's cookie"))?;
            Ok(DataStream::new(stream_id(i), sock, direction))
        })
        .collect()
}

/// What the data phase measured.
struct DataPhase {
    /// Time of the test on this end (stream 1's, as iperf3 reports).
    elapsed: Duration,
    /// Whether a stop request cut it short.
    interrupted: bool,
    /// Each stream's bytes at the moment the test ended.
    bytes: Vec<u64>,
    /// All streams' bytes sampled through the phase.
    timeline: Vec<(Instant, u64)>,
}

/// Moves data for the test's length (or until stopped), then at once sends TEST_END: the server
/// stops its clock when TEST_END arrives, so it must not wait for our threads to wind down. A
/// byte from the server mid-test (busy, error, terminate) aborts the test.
fn run_data_phase(
    ctrl: &TcpStream,
    streams: &[DataStream],
    spec: &TestSpec,
    t0: Instant,
    timeouts: &Timeouts,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<DataPhase, ProtocolError> {
    let counting = AtomicBool::new(true);
    let stop = AtomicBool::new(false);
    let length = Duration::from_secs(u64::from(spec.seconds));
    std::thread::scope(|scope| {
        for s in streams {
            let (counting, stop) = (&counting, &stop);
            scope.spawn(move || s.run(spec.block, counting, stop, None));
        }
        let mut timeline = Vec::with_capacity(length.as_millis() as usize / 50 + 8);
        let total = || streams.iter().map(|s| s.bytes()).sum::<u64>();
        let outcome = watch_control(ctrl, t0, length, should_stop, &mut || {
            timeline.push((Instant::now(), total()));
        });
        counting.store(false, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        let elapsed = t0.elapsed();
        let bytes: Vec<u64> = streams.iter().map(|s| s.bytes()).collect();
        timeline.push((Instant::now(), bytes.iter().sum()));
        // Wake senders blocked in write(2); what they queued still drains to the server.
        for s in streams.iter().filter(|s| s.direction == Direction::Send) {
            let _ = s.socket.shutdown(std::net::Shutdown::Write);
        }
        let interrupted = outcome?;
        write_state(&mut Deadline::new(ctrl, timeouts.control), State::TestEnd)?;
        Ok(DataPhase {
            elapsed,
            interrupted,
            bytes,
            timeline,
        })
    })
}

/// Waits until the test's end, watching the control connection for the server's messages and
/// calling `sample` at every poll.
fn watch_control(
    ctrl: &TcpStream,
    t0: Instant,
    length: Duration,
    should_stop: &(dyn Fn() -> bool + Sync),
    sample: &mut dyn FnMut(),
) -> Result<bool, ProtocolError> {
    let poll = Duration::from_millis(50);
    loop {
        sample();
        let left = length.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return Ok(false);
        }
        if should_stop() {
            return Ok(true);
        }
        ctrl.set_read_timeout(Some(left.min(poll)))
            .map_err(|e| ProtocolError::from_io(e, "the test to end"))?;
        let mut b = [0u8; 1];
        match (&mut &*ctrl).read(&mut b) {
            Ok(0) => return Err(ProtocolError::Closed("the test to end")),
            Ok(_) => {
                let mut rest =
                    std::io::Cursor::new(b).chain(Deadline::new(ctrl, Duration::from_secs(2)));
                return Err(match read_state(&mut rest, "the test to end") {
                    Ok(State::ServerTerminate) => ProtocolError::Terminated,
                    Ok(s) => ProtocolError::UnexpectedState {
                        byte: s.byte(),
                        waiting_for: "the test to end",
                    },
                    Err(e) => e,
                });
            }
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ProtocolError::from_io(e, "the test to end")),
        }
    }
}

/// Our side's results message.
fn local_results(
    streams: &[DataStream],
    bytes: &[u64],
    direction: Direction,
    elapsed: Duration,
    cpu: &CpuClock,
) -> Results {
    let (total, user, system) = cpu.percent();
    let sending = direction == Direction::Send;
    let streams = streams
        .iter()
        .zip(bytes)
        .map(|(s, &b)| {
            let retransmits = if sending {
                crate::os::tcp_total_retransmits(s.socket.as_fd()).map_or(-1, |r| r as i64)
            } else {
                -1
            };
            StreamResult::tcp(s.id, b, retransmits, elapsed)
        })
        .collect::<Vec<_>>();
    let has_retrans = if !sending {
        -1
    } else if streams.iter().all(|s| s.retransmits >= 0) {
        1
    } else {
        0
    };
    Results {
        cpu_util_total: total,
        cpu_util_user: user,
        cpu_util_system: system,
        sender_has_retransmits: has_retrans,
        congestion_used: None,
        streams,
        health_check_version: None,
    }
}

/// Sums non-negative counts without overflowing on a peer's absurd figures.
fn saturating_total(values: impl Iterator<Item = i64>) -> u64 {
    values.fold(0u64, |acc, v| acc.saturating_add(v.max(0) as u64))
}

fn sum_bytes(results: &Results) -> u64 {
    saturating_total(results.streams.iter().map(|s| s.bytes))
}

/// The first stream's time as the peer reports it (iperf3 uses stream 1's time for the sums).
fn first_stream_seconds(results: &Results) -> Option<f64> {
    results
        .streams
        .iter()
        .find(|s| s.id == 1)
        .map(|s| s.end_time - s.start_time)
        .filter(|t| *t > 0.0)
}

/// The peer's figures, checked against what the test allowed: its time must be near ours, its
/// byte counts within what was sent and what any link can carry, its sums without overflow.
fn report(
    addr: SocketAddr,
    spec: &TestSpec,
    local: &Results,
    remote: &Results,
    elapsed: Duration,
    interrupted: bool,
) -> Result<TestReport, ClientError> {
    let implausible = |what: String| ClientError::Implausible { addr, what };
    let local_secs = elapsed.as_secs_f64();
    let remote_secs = match first_stream_seconds(remote) {
        None => local_secs,
        Some(t) if t.is_finite() && t >= local_secs * 0.5 - 0.5 && t <= local_secs * 2.0 + 2.0 => t,
        Some(t) => {
            return Err(implausible(format!(
                "a test time of {t:e} s for a test that lasted {local_secs:.3} s here"
            )));
        }
    };
    let (sender, receiver) = if spec.reverse {
        (remote, local)
    } else {
        (local, remote)
    };
    let (sender_seconds, receiver_seconds) = if spec.reverse {
        (remote_secs, local_secs)
    } else {
        (local_secs, remote_secs)
    };
    let retransmits = match sender.sender_has_retransmits {
        1 => Some(
            sender
                .streams
                .iter()
                .try_fold(0u64, |acc, s| acc.checked_add(s.retransmits.max(0) as u64))
                .ok_or_else(|| implausible("retransmit counts whose sum overflows".into()))?,
        ),
        _ => None,
    };
    let (sender_bytes, receiver_bytes) = (sum_bytes(sender), sum_bytes(receiver));
    for (bytes, secs, side) in [
        (sender_bytes, sender_seconds, "sent"),
        (receiver_bytes, receiver_seconds, "received"),
    ] {
        let rate = gbps(bytes, secs);
        if bytes == u64::MAX || !rate.is_finite() || rate > MAX_PLAUSIBLE_GBPS {
            return Err(implausible(format!(
                "{bytes} bytes {side} in {secs:.3} s ({rate:e} Gbit/s, beyond any link)"
            )));
        }
    }
    // What the receiver read cannot exceed what the sender wrote, a write in flight per stream
    // aside (counted by the sender when the call returns, after the test's end).
    let slack = super::stream::write_size(spec.block) as u64 * u64::from(spec.streams) + (1 << 20);
    if receiver_bytes > sender_bytes.saturating_add(slack) {
        return Err(implausible(format!(
            "{receiver_bytes} bytes received of {sender_bytes} sent"
        )));
    }
    if retransmits.is_some_and(|r| r > sender_bytes) {
        return Err(implausible(format!(
            "more retransmitted segments than bytes sent ({sender_bytes})"
        )));
    }
    Ok(TestReport {
        sender_bytes,
        sender_seconds,
        receiver_bytes,
        receiver_seconds,
        retransmits,
        streams: spec.streams,
        interrupted,
        peer_version: remote.health_check_version.clone(),
        timeline: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::iperf3::protocol::{DEFAULT_BLOCK, StreamResult};

    #[test]
    fn a_connection_refused_or_reset_as_it_is_made_is_tried_again_within_the_window() {
        use std::io::{Error, ErrorKind};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = Duration::from_secs(1);
        let window = Duration::from_millis(300);
        // A stock server reopening its listener: refused, then reset, then it answers.
        let mut script = vec![ErrorKind::ConnectionRefused, ErrorKind::ConnectionReset].into_iter();
        let s = connect_with(addr, t, window, || match script.next() {
            Some(kind) => Err(Error::from(kind)),
            None => TcpStream::connect(addr),
        });
        assert!(s.is_ok(), "{s:?}");
        // Still refused when the window ends: nothing listens there.
        let refused = connect_with(addr, t, window, || {
            Err(Error::from(ErrorKind::ConnectionRefused))
        });
        assert!(
            matches!(refused, Err(ClientError::Refused(a)) if a == addr),
            "{refused:?}"
        );
        // Still reset: the error says so.
        let reset = connect_with(addr, t, window, || {
            Err(Error::from(ErrorKind::ConnectionReset))
        });
        assert!(
            matches!(&reset, Err(ClientError::Connect { source, .. }) if source.kind() == ErrorKind::ConnectionReset),
            "{reset:?}"
        );
        // Anything else is due at once.
        let mut calls = 0;
        let unreachable = connect_with(addr, t, window, || {
            calls += 1;
            Err(Error::from(ErrorKind::NetworkUnreachable))
        });
        assert!(
            matches!(unreachable, Err(ClientError::Connect { .. })),
            "{unreachable:?}"
        );
        assert_eq!(calls, 1);
    }

    #[test]
    fn a_reset_while_saying_hello_is_tried_again_a_few_times_and_nothing_later_is() {
        let reset = || ProtocolError::Io {
            context: "sending the cookie",
            source: std::io::Error::from(std::io::ErrorKind::ConnectionReset),
        };
        let mut resets = 0;
        for _ in 0..HELLO_RESETS {
            assert!(retry_before_the_test(&reset(), &mut resets));
        }
        assert!(
            !retry_before_the_test(&reset(), &mut resets),
            "then the error"
        );
        let mut none = 0;
        assert!(retry_before_the_test(
            &ProtocolError::Closed("PARAM_EXCHANGE"),
            &mut none
        ));
        // Busy is retried whatever came before; a reset once the test runs never is.
        assert!(retry_before_the_test(
            &ProtocolError::AccessDenied,
            &mut resets
        ));
        let mid_test = ProtocolError::Io {
            context: "TEST_START",
            source: std::io::Error::from(std::io::ErrorKind::ConnectionReset),
        };
        assert!(!retry_before_the_test(&mid_test, &mut 0));
        assert!(!retry_before_the_test(
            &ProtocolError::Timeout("PARAM_EXCHANGE"),
            &mut 0
        ));
    }

    fn results(bytes: u64, seconds: f64, retransmits: i64) -> Results {
        let mut s = StreamResult::tcp(1, bytes, retransmits, Duration::from_secs_f64(seconds));
        s.end_time = seconds;
        Results {
            cpu_util_total: 0.0,
            cpu_util_user: 0.0,
            cpu_util_system: 0.0,
            sender_has_retransmits: 1,
            congestion_used: None,
            streams: vec![s],
            health_check_version: None,
        }
    }

    fn spec() -> TestSpec {
        TestSpec {
            streams: 1,
            seconds: 10,
            reverse: false,
            block: DEFAULT_BLOCK,
        }
    }

    const ADDR: &str = "10.0.0.2:5201";

    fn judge(local: Results, remote: Results) -> Result<TestReport, ClientError> {
        report(
            ADDR.parse().unwrap(),
            &spec(),
            &local,
            &remote,
            Duration::from_secs(10),
            false,
        )
    }

    #[test]
    fn a_believable_peer_is_taken_at_its_word() {
        let r = judge(
            results(12_000_000_000, 10.0, 3),
            results(11_900_000_000, 10.0, -1),
        )
        .unwrap();
        assert!((r.receiver_gbps() - 9.52).abs() < 0.01);
        assert_eq!(r.retransmits, Some(3));
    }

    #[test]
    fn impossible_peer_figures_are_an_error_naming_the_peer() {
        let cases = [
            // end_time 1e-300 would give 8e291 Gbit/s.
            (
                results(1_000_000, 10.0, 0),
                results(1_000_000, 1e-300, -1),
                "test time",
            ),
            // 9e18 bytes would give infinity.
            (
                results(9_000_000_000_000_000_000, 10.0, 0),
                results(9_000_000_000_000_000_000, 10.0, -1),
                "beyond any link",
            ),
            // More received than sent.
            (
                results(1_000_000, 10.0, 0),
                results(50_000_000_000, 10.0, -1),
                "received of",
            ),
        ];
        for (local, remote, what) in cases {
            let e = judge(local, remote).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(ADDR) && text.contains(what), "{text}");
        }
        // Retransmits that would overflow the sum.
        let mut local = results(1_000_000, 10.0, i64::MAX);
        local.streams.push(local.streams[0].clone());
        local.streams.push(local.streams[0].clone());
        let e = judge(local, results(1_000_000, 10.0, -1)).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }
}
