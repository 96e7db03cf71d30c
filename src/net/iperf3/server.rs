//! Our iperf3 server (the responder of the client role): serves one test at a time to stock
//! `iperf3 -c` clients and to our own client, answers others with ACCESS_DENIED, and bounds every
//! wait, so a silent or garbage connection never blocks the next client (the 3.12 server hangs on
//! exactly that). Memory is bounded: at most [`MAX_PENDING`] connections waiting for a cookie.
//!
//! One acceptor thread owns the listener. While a test runs, new connections get 0xFF at once,
//! except while the test's data streams are being connected, when they must carry its cookie.
//! Every other connection gets a short-lived greeter thread that reads its cookie (10 s deadline);
//! the first to finish claims the test slot. When [`MAX_PENDING`] connections already wait for
//! their cookie, the oldest is closed to make room, so a flood of silent connections cannot lock
//! out a real client for long.

use super::protocol::{
    COOKIE_LEN, MAX_BLOCK, MAX_PARAMS_JSON, MAX_RESULTS_JSON, MAX_STREAMS, Params, ProtocolError,
    Results, State, StreamResult, ierr, read_json, read_state, stream_id, write_json,
    write_server_error, write_state,
};
use super::stream::{CpuClock, DataStream, Deadline, Direction, is_timeout};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Connections allowed to wait for their cookie at once; beyond that the oldest is closed.
pub const MAX_PENDING: usize = 64;
/// Deadline for each control-channel wait (iperf3 3.15+ uses 10 s).
const CONTROL_WAIT: Duration = Duration::from_secs(10);
/// Deadline for all data streams of a test to connect.
const STREAMS_WAIT: Duration = Duration::from_secs(10);
/// A receiving test with no new data for this long is aborted (iperf3's --rcv-timeout default).
const RECEIVE_IDLE: Duration = Duration::from_secs(120);
/// Slack after `time + omit` before a timed test is aborted (iperf3: 40 s).
const DURATION_SLACK: Duration = Duration::from_secs(40);
/// Stack of a greeter thread (cookie, parameters, control loop).
const GREETER_STACK: usize = 256 * 1024;

/// Where the responder listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address to bind; `None` = all addresses, IPv4 and IPv6.
    pub bind: Option<IpAddr>,
    /// TCP port.
    pub port: u16,
}

/// One test served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedTest {
    /// The client's address.
    pub peer: String,
    /// The client's iperf3 version, as it said.
    pub client_version: Option<String>,
    /// Streams (both directions counted).
    pub streams: u32,
    /// `receive` (client sends), `send` (-R) or `bidir`.
    pub mode: &'static str,
    /// Bytes this end read while the test ran.
    pub bytes_received: u64,
    /// Bytes this end wrote.
    pub bytes_sent: u64,
    /// Test time on this end, seconds.
    pub seconds: f64,
    /// `ok`, or what went wrong.
    pub outcome: String,
}

/// What the responder did over its life.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServeLog {
    /// Tests that got past the parameter exchange.
    pub tests: Vec<ServedTest>,
    /// Connections answered "busy".
    pub refused_busy: u64,
    /// Connections dropped before a test: no cookie in time, bad parameters, too many pending.
    pub dropped: u64,
}

enum Phase {
    Idle,
    Busy,
    Streams {
        cookie: [u8; COOKIE_LEN],
        tx: Sender<TcpStream>,
    },
}

/// Called after each test (the client role prints a line for it).
type TestHook = Box<dyn Fn(&ServedTest) + Send + Sync>;

struct Shared {
    phase: Mutex<Phase>,
    on_test: Option<TestHook>,
    /// Connections waiting for their cookie, oldest first: (ticket, a handle to shut it down).
    pending: Mutex<VecDeque<(u64, TcpStream)>>,
    next_ticket: AtomicU64,
    log: Mutex<ServeLog>,
    last_test_end: Mutex<Instant>,
    stopping: AtomicBool,
}

impl Shared {
    fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn log(&self) -> MutexGuard<'_, ServeLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pending(&self) -> MutexGuard<'_, VecDeque<(u64, TcpStream)>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a connection waiting for its cookie; closes the oldest when the list is full.
    fn admit(&self, conn: &TcpStream) -> Option<u64> {
        let handle = conn.try_clone().ok()?;
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let mut pending = self.pending();
        if pending.len() >= MAX_PENDING {
            if let Some((_, oldest)) = pending.pop_front() {
                let _ = oldest.shutdown(std::net::Shutdown::Both);
            }
        }
        pending.push_back((ticket, handle));
        Some(ticket)
    }

    fn release(&self, ticket: u64) {
        self.pending().retain(|(t, _)| *t != ticket);
    }
}

/// A bound responder.
pub struct Responder {
    listener: TcpListener,
    shared: Arc<Shared>,
}

/// Why `serve` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The stop callback said so (a signal, or the embedding section finished).
    Stopped,
    /// No test for the idle timeout.
    Idle,
}

impl Responder {
    /// Binds the port: `[::]` dual-stack (falling back to 0.0.0.0 without IPv6) or `cfg.bind`.
    pub fn bind(cfg: &ServerConfig) -> std::io::Result<Responder> {
        let listener = match cfg.bind {
            Some(ip) => listen(SocketAddr::new(ip, cfg.port), false)?,
            None => listen(
                SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), cfg.port),
                true,
            )
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::AddrInUse {
                    Err(e)
                } else {
                    listen(SocketAddr::from(([0, 0, 0, 0], cfg.port)), false)
                }
            })?,
        };
        listener.set_nonblocking(true)?;
        Ok(Responder {
            listener,
            shared: Arc::new(Shared {
                phase: Mutex::new(Phase::Idle),
                on_test: None,
                pending: Mutex::new(VecDeque::new()),
                next_ticket: AtomicU64::new(0),
                log: Mutex::new(ServeLog::default()),
                last_test_end: Mutex::new(Instant::now()),
                stopping: AtomicBool::new(false),
            }),
        })
    }

    /// Calls `hook` after every test (before any thread runs: call it right after `bind`).
    pub fn on_test(mut self, hook: impl Fn(&ServedTest) + Send + Sync + 'static) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.on_test = Some(Box::new(hook));
        }
        self
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `should_stop` returns true or no test has run for `idle` (None = forever).
    /// A test still running when asked to stop is ended with SERVER_TERMINATE.
    pub fn serve(
        &self,
        should_stop: &(dyn Fn() -> bool + Sync),
        idle: Option<Duration>,
    ) -> (Ended, ServeLog) {
        let ended = loop {
            if should_stop() {
                break Ended::Stopped;
            }
            let idle_now = matches!(*self.shared.phase(), Phase::Idle);
            let quiet = self
                .shared
                .last_test_end
                .lock()
                .map(|t| t.elapsed())
                .unwrap_or_default();
            if idle_now && idle.is_some_and(|limit| quiet >= limit) {
                break Ended::Idle;
            }
            if wait_readable(&self.listener, Duration::from_millis(100)) {
                self.accept_ready();
            }
        };
        self.shared.stopping.store(true, Ordering::Relaxed);
        // Let a running test notice `stopping` and end (it polls every 250 ms).
        let until = Instant::now() + Duration::from_secs(2);
        while !matches!(*self.shared.phase(), Phase::Idle) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        (ended, self.shared.log().clone())
    }

    fn accept_ready(&self) {
        loop {
            match self.listener.accept() {
                Ok((conn, peer)) => self.dispatch(conn, peer),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => return,
            }
        }
    }

    fn dispatch(&self, conn: TcpStream, peer: SocketAddr) {
        let _ = conn.set_nonblocking(false);
        if matches!(*self.shared.phase(), Phase::Busy) {
            refuse(&conn);
            self.shared.log().refused_busy += 1;
            return;
        }
        let Some(ticket) = self.shared.admit(&conn) else {
            self.shared.log().dropped += 1;
            return;
        };
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("iperf3-greeter".into())
            .stack_size(GREETER_STACK)
            .spawn(move || greet(&shared, conn, peer, ticket));
        if spawned.is_err() {
            self.shared.release(ticket);
            self.shared.log().dropped += 1;
        }
    }
}

fn listen(addr: SocketAddr, dual_stack: bool) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if dual_stack {
        socket.set_only_v6(false)?;
    }
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(128)?;
    Ok(socket.into())
}

fn wait_readable(listener: &TcpListener, timeout: Duration) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    matches!(poll(&mut fds, PollTimeout::from(ms)), Ok(n) if n > 0)
}

/// Answers "busy" without reading anything, as iperf3 does.
fn refuse(conn: &TcpStream) {
    let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = (&mut &*conn).write_all(&[State::AccessDenied.byte()]);
}

/// Reads a connection's cookie, then hands it to the running test (a data stream), claims the
/// test slot (a control connection), or refuses it.
fn greet(shared: &Shared, conn: TcpStream, peer: SocketAddr, ticket: u64) {
    let mut cookie = [0u8; COOKIE_LEN];
    let got = Deadline::new(&conn, CONTROL_WAIT).read_exact(&mut cookie);
    shared.release(ticket);
    if got.is_err() {
        shared.log().dropped += 1;
        return;
    }
    let mut phase = shared.phase();
    match &*phase {
        Phase::Streams { cookie: want, tx } => {
            if *want == cookie {
                let _ = tx.send(conn);
            } else {
                refuse(&conn);
                drop(phase);
                shared.log().refused_busy += 1;
            }
        }
        Phase::Busy => {
            refuse(&conn);
            drop(phase);
            shared.log().refused_busy += 1;
        }
        Phase::Idle => {
            *phase = Phase::Busy;
            drop(phase);
            let served = Session::new(shared, &conn, peer, cookie).run();
            let _ = conn.shutdown(std::net::Shutdown::Both);
            if let (Some(test), Some(hook)) = (&served, &shared.on_test) {
                hook(test);
            }
            let mut log = shared.log();
            match served {
                Some(test) => log.tests.push(test),
                None => log.dropped += 1,
            }
            drop(log);
            if let Ok(mut t) = shared.last_test_end.lock() {
                *t = Instant::now();
            }
            *shared.phase() = Phase::Idle;
        }
    }
}

/// How a test's control loop ended.
enum Stop {
    TestEnd,
    Abort(String),
}

struct Session<'a> {
    shared: &'a Shared,
    ctrl: &'a TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_LEN],
}

impl<'a> Session<'a> {
    fn new(
        shared: &'a Shared,
        ctrl: &'a TcpStream,
        peer: SocketAddr,
        cookie: [u8; COOKIE_LEN],
    ) -> Self {
        Self {
            shared,
            ctrl,
            peer,
            cookie,
        }
    }

    /// Runs one test; `None` when it ended before the parameters were accepted.
    fn run(&self) -> Option<ServedTest> {
        let _ = self.ctrl.set_nodelay(true);
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::ParamExchange,
        )
        .ok()?;
        let params: Params = match read_json(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            MAX_PARAMS_JSON,
            "parameters",
        ) {
            Ok(p) => p,
            Err(e) => {
                if matches!(e, ProtocolError::Malformed { .. }) {
                    self.server_error(ierr::RECV_PARAMS);
                }
                return None;
            }
        };
        if let Err(code) = validate(&params) {
            self.server_error(code);
            return None;
        }
        let mut test = ServedTest {
            peer: SocketAddr::new(self.peer.ip().to_canonical(), self.peer.port()).to_string(),
            client_version: params.client_version.clone(),
            streams: 0,
            mode: if params.bidirectional {
                "bidir"
            } else if params.reverse {
                "send"
            } else {
                "receive"
            },
            bytes_received: 0,
            bytes_sent: 0,
            seconds: 0.0,
            outcome: "ok".into(),
        };
        if let Err(why) = self.run_test(&params, &mut test) {
            test.outcome = why;
        }
        Some(test)
    }

    fn server_error(&self, code: i32) {
        let _ = write_server_error(
            &mut Deadline::new(self.ctrl, Duration::from_secs(1)),
            code,
            0,
        );
    }

    fn run_test(&self, params: &Params, test: &mut ServedTest) -> Result<(), String> {
        let streams = self.accept_streams(params)?;
        test.streams = streams.len() as u32;
        let block = params.len.clamp(1, MAX_BLOCK as i64) as usize;
        apply_options(&streams, params);
        let counting = AtomicBool::new(true);
        let stop = AtomicBool::new(false);
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::TestStart,
        )
        .map_err(|e| e.to_string())?;
        let mut t0 = Instant::now();
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::TestRunning,
        )
        .map_err(|e| e.to_string())?;
        let cpu = CpuClock::start();
        let pace = params.bandwidth.filter(|&b| b > 0).map(|b| b as u64);
        let (ended, baseline) = std::thread::scope(|scope| {
            for s in &streams {
                let (counting, stop) = (&counting, &stop);
                scope.spawn(move || s.run(block, counting, stop, pace));
            }
            let outcome = self.control_loop(params, &streams, &mut t0);
            counting.store(false, Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
            for s in &streams {
                s.close();
            }
            outcome
        });
        let elapsed = t0.elapsed();
        let baseline_of = |i: usize| baseline.get(i).copied().unwrap_or(0);
        for (i, s) in streams.iter().enumerate() {
            let bytes = s.bytes().saturating_sub(baseline_of(i));
            match s.direction {
                Direction::Send => test.bytes_sent += bytes,
                Direction::Receive => test.bytes_received += bytes,
            }
        }
        test.seconds = (elapsed.as_secs_f64() * 1000.0).round() / 1000.0;
        match ended {
            Stop::TestEnd => self.exchange_results(&streams, &baseline, elapsed, &cpu),
            Stop::Abort(why) => Err(why),
        }
    }

    /// Announces CREATE_STREAMS and takes the test's data connections as the acceptor hands them
    /// over, numbered in arrival order. In bidir mode the first half carries client-to-server data.
    fn accept_streams(&self, params: &Params) -> Result<Vec<DataStream>, String> {
        let per_direction = params.parallel as usize;
        let total = if params.bidirectional {
            2 * per_direction
        } else {
            per_direction
        };
        let (tx, rx): (Sender<TcpStream>, Receiver<TcpStream>) = mpsc::channel();
        *self.shared.phase() = Phase::Streams {
            cookie: self.cookie,
            tx,
        };
        let announced = write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::CreateStreams,
        );
        let until = Instant::now() + STREAMS_WAIT;
        let mut streams = Vec::with_capacity(total);
        while announced.is_ok() && streams.len() < total {
            let left = until.saturating_duration_since(Instant::now());
            let Ok(sock) = rx.recv_timeout(left) else {
                break;
            };
            let i = streams.len();
            let direction = if params.bidirectional {
                if i < per_direction {
                    Direction::Receive
                } else {
                    Direction::Send
                }
            } else if params.reverse {
                Direction::Send
            } else {
                Direction::Receive
            };
            streams.push(DataStream::new(stream_id(i), sock, direction));
        }
        *self.shared.phase() = Phase::Busy;
        announced.map_err(|e| e.to_string())?;
        if streams.len() < total {
            return Err(format!(
                "only {} of {total} data streams connected within {STREAMS_WAIT:?}",
                streams.len()
            ));
        }
        Ok(streams)
    }

    /// Waits for TEST_END while the streams run, enforcing the deadlines. Returns how it ended and
    /// the per-stream byte counts at the end of the omit period (subtracted later).
    fn control_loop(
        &self,
        params: &Params,
        streams: &[DataStream],
        t0: &mut Instant,
    ) -> (Stop, Vec<u64>) {
        let omit = Duration::from_secs(params.omit.max(0) as u64);
        let time = Duration::from_secs(params.time.max(0) as u64);
        let guard = (params.time > 0).then(|| *t0 + omit + time + DURATION_SLACK);
        let receiving = streams.iter().any(|s| s.direction == Direction::Receive);
        let mut baseline = vec![0u64; streams.len()];
        let mut omitted = omit.is_zero();
        let mut last_bytes = 0u64;
        let mut last_progress = Instant::now();
        loop {
            if !omitted && t0.elapsed() >= omit {
                baseline = streams.iter().map(|s| s.bytes()).collect();
                *t0 = Instant::now();
                omitted = true;
            }
            if self.shared.stopping.load(Ordering::Relaxed) {
                let _ = write_state(
                    &mut Deadline::new(self.ctrl, Duration::from_secs(1)),
                    State::ServerTerminate,
                );
                return (
                    Stop::Abort("the responder was stopped mid-test".into()),
                    baseline,
                );
            }
            if guard.is_some_and(|g| Instant::now() >= g) {
                self.server_error(ierr::DURATION_EXPIRED);
                return (
                    Stop::Abort("the client did not end the test in time".into()),
                    baseline,
                );
            }
            let total: u64 = streams.iter().map(|s| s.bytes()).sum();
            if total != last_bytes {
                last_bytes = total;
                last_progress = Instant::now();
            } else if receiving && last_progress.elapsed() >= RECEIVE_IDLE {
                self.server_error(ierr::NO_MESSAGE);
                return (Stop::Abort("no data received for 120 s".into()), baseline);
            }
            match self.poll_state() {
                Ok(Some(State::TestEnd)) => return (Stop::TestEnd, baseline),
                Ok(Some(State::TestStart)) | Ok(None) => continue,
                Ok(Some(State::ClientTerminate)) => {
                    return (
                        Stop::Abort("the client terminated the test".into()),
                        baseline,
                    );
                }
                Ok(Some(s)) => {
                    return (
                        Stop::Abort(format!("unexpected state {} from the client", s.byte())),
                        baseline,
                    );
                }
                Err(e) => return (Stop::Abort(e.to_string()), baseline),
            }
        }
    }

    /// One state byte if it arrives within 250 ms.
    fn poll_state(&self) -> Result<Option<State>, ProtocolError> {
        self.ctrl
            .set_read_timeout(Some(Duration::from_millis(250)))
            .map_err(|e| ProtocolError::from_io(e, "TEST_END"))?;
        let mut b = [0u8; 1];
        match (&mut &*self.ctrl).read(&mut b) {
            Ok(0) => Err(ProtocolError::Closed("TEST_END")),
            Ok(_) => State::from_byte(b[0])
                .map(Some)
                .ok_or(ProtocolError::UnexpectedState(b[0])),
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(ProtocolError::from_io(e, "TEST_END")),
        }
    }

    /// EXCHANGE_RESULTS: read the client's results first, then send ours, then DISPLAY_RESULTS,
    /// and wait (bounded) for IPERF_DONE before the caller closes.
    fn exchange_results(
        &self,
        streams: &[DataStream],
        baseline: &[u64],
        elapsed: Duration,
        cpu: &CpuClock,
    ) -> Result<(), String> {
        let io = |e: ProtocolError| e.to_string();
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::ExchangeResults,
        )
        .map_err(io)?;
        let _client: Results = read_json(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            MAX_RESULTS_JSON,
            "the client's results",
        )
        .map_err(io)?;
        let ours = server_results(streams, baseline, elapsed, cpu);
        write_json(&mut Deadline::new(self.ctrl, CONTROL_WAIT), &ours).map_err(io)?;
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::DisplayResults,
        )
        .map_err(io)?;
        match read_state(&mut Deadline::new(self.ctrl, CONTROL_WAIT), "IPERF_DONE") {
            Ok(_) | Err(ProtocolError::Closed(_)) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Parameters we cannot serve, as the iperf3 error number to answer with.
fn validate(p: &Params) -> Result<(), i32> {
    if p.udp || p.sctp {
        return Err(ierr::UNIMPLEMENTED);
    }
    if p.parallel < 1 || p.parallel > i64::from(MAX_STREAMS) {
        return Err(ierr::NUM_STREAMS);
    }
    if p.len < 1 || p.len > MAX_BLOCK as i64 {
        return Err(ierr::BLOCK_SIZE);
    }
    if p.time < 0 || p.omit < 0 || p.omit > 600 || p.time > 86_400 {
        return Err(ierr::RECV_PARAMS);
    }
    Ok(())
}

/// Applies the client's socket options to the data connections (best effort, as iperf3 warns).
fn apply_options(streams: &[DataStream], p: &Params) {
    for s in streams {
        let sock = socket2::SockRef::from(&s.socket);
        if let Some(w) = p.window.filter(|&w| w > 0) {
            let _ = sock.set_send_buffer_size(w as usize);
            let _ = sock.set_recv_buffer_size(w as usize);
        }
        if let Some(cc) = &p.congestion {
            let _ = sock.set_tcp_congestion(cc.as_bytes());
        }
    }
}

fn server_results(
    streams: &[DataStream],
    baseline: &[u64],
    elapsed: Duration,
    cpu: &CpuClock,
) -> Results {
    let (total, user, system) = cpu.percent();
    let any_sender = streams.iter().any(|s| s.direction == Direction::Send);
    let entries: Vec<StreamResult> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let bytes = s
                .bytes()
                .saturating_sub(baseline.get(i).copied().unwrap_or(0));
            let retransmits = match s.direction {
                Direction::Send => {
                    crate::os::tcp_total_retransmits(s.socket.as_fd()).map_or(-1, |r| r as i64)
                }
                Direction::Receive => -1,
            };
            StreamResult {
                id: s.id,
                bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
                retransmits,
                jitter: 0.0,
                errors: 0,
                omitted_errors: 0,
                packets: 0,
                omitted_packets: 0,
                start_time: 0.0,
                end_time: elapsed.as_secs_f64(),
            }
        })
        .collect();
    let has_retransmits = if !any_sender {
        -1
    } else if entries.iter().filter(|e| e.retransmits >= 0).count() > 0 {
        1
    } else {
        0
    };
    Results {
        cpu_util_total: total,
        cpu_util_user: user,
        cpu_util_system: system,
        sender_has_retransmits: has_retransmits,
        congestion_used: None,
        streams: entries,
        health_check_version: Some(super::protocol::our_version()),
    }
}

/// Bytes moved by the responder over its life (for the client role's document).
pub fn total_bytes(log: &ServeLog) -> (u64, u64) {
    let received = log.tests.iter().map(|t| t.bytes_received).sum();
    let sent = log.tests.iter().map(|t| t.bytes_sent).sum();
    (received, sent)
}
