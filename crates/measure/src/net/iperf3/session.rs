//! One test on the server side of the iperf3 protocol, from PARAM_EXCHANGE to IPERF_DONE: take
//! the parameters, collect the data streams (numbered in accept order), run them while watching
//! the control connection, then exchange results. Every wait has a deadline; a test that stops
//! making progress, or outlives its length, is aborted so the next client can be served.

use super::protocol::{
    COOKIE_LEN, MAX_BLOCK, MAX_PARAMS_JSON, MAX_RESULTS_JSON, MAX_STREAMS, Params, ProtocolError,
    Results, State, StreamResult, ierr, our_version, read_json, read_state, stream_id, write_json,
    write_server_error, write_state,
};
use super::shared::{Mode, Phase, ServedTest, Shared};
use super::stream::{CpuClock, DataStream, Deadline, Direction, is_timeout};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Why a served test ended before its results were exchanged (the served test's `outcome`).
#[derive(Debug, thiserror::Error)]
enum ServeError {
    /// The control channel failed.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// Not every data stream connected in time.
    #[error("only {arrived} of {wanted} data streams connected within {wait:?}")]
    StreamsMissing {
        /// Streams that connected.
        arrived: usize,
        /// Streams the parameters announced.
        wanted: usize,
        /// How long we waited.
        wait: Duration,
    },
    /// The test was ended early; the text says by whom and why.
    #[error("{0}")]
    Aborted(String),
}

/// Deadline for each control-channel wait (iperf3 3.15+ uses 10 s).
pub(super) const CONTROL_WAIT: Duration = Duration::from_secs(10);
/// Deadline for all data streams of a test to connect.
const STREAMS_WAIT: Duration = Duration::from_secs(10);
/// A test in which no byte moves for this long is aborted (iperf3's --rcv-timeout default).
const NO_PROGRESS: Duration = Duration::from_secs(120);
/// Slack after `time + omit` before a timed test is aborted (iperf3: 40 s).
const DURATION_SLACK: Duration = Duration::from_secs(40);
/// Longest test without a time limit (`-n`/`-k`) before it is aborted.
const UNTIMED_LIMIT: Duration = Duration::from_secs(3600);

/// Serves one test on `ctrl`, whose cookie was already read. `None` when it ended before the
/// parameters were accepted.
pub(super) fn run(
    shared: &Shared,
    ctrl: &TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_LEN],
) -> Option<ServedTest> {
    Session {
        shared,
        ctrl,
        peer,
        cookie,
    }
    .run()
}

/// How the data phase ended.
enum Stop {
    TestEnd,
    Abort(String),
}

/// What the data phase measured.
struct DataOutcome {
    stop: Stop,
    /// Per-stream byte counts at the end of the omit period (subtracted).
    baseline: Vec<u64>,
    /// From the start (after omit) to the end of counting.
    elapsed: Duration,
}

struct Session<'a> {
    shared: &'a Shared,
    ctrl: &'a TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_LEN],
}

impl Session<'_> {
    fn run(&self) -> Option<ServedTest> {
        let _ = self.ctrl.set_nodelay(true);
        let _ = socket2::SockRef::from(self.ctrl).set_keepalive(true);
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
            mode: mode_name(&params),
            bytes_received: 0,
            bytes_sent: 0,
            seconds: 0.0,
            outcome: "ok".into(),
        };
        if let Err(why) = self.run_test(&params, &mut test) {
            test.outcome = why.to_string();
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

    fn run_test(&self, params: &Params, test: &mut ServedTest) -> Result<(), ServeError> {
        let streams = self.accept_streams(params)?;
        test.streams = streams.len() as u32;
        apply_options(&streams, params);
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::TestStart,
        )?;
        let t0 = Instant::now();
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::TestRunning,
        )?;
        let cpu = CpuClock::start();
        let phase = self.data_phase(params, &streams, t0);
        for (i, s) in streams.iter().enumerate() {
            let bytes = s
                .bytes()
                .saturating_sub(phase.baseline.get(i).copied().unwrap_or(0));
            match s.direction {
                Direction::Send => test.bytes_sent = test.bytes_sent.saturating_add(bytes),
                Direction::Receive => {
                    test.bytes_received = test.bytes_received.saturating_add(bytes)
                }
            }
        }
        test.seconds = (phase.elapsed.as_secs_f64() * 1000.0).round() / 1000.0;
        match phase.stop {
            Stop::TestEnd => self.exchange_results(&streams, &phase, &cpu),
            Stop::Abort(why) => Err(ServeError::Aborted(why)),
        }
    }

    /// Announces CREATE_STREAMS and takes the test's data connections from the greeters. They are
    /// numbered in the order they were accepted (greeters may finish out of order), which is the
    /// order the client connected them; in bidir mode the first half carries client-to-server data.
    fn accept_streams(&self, params: &Params) -> Result<Vec<DataStream>, ServeError> {
        let per_direction = params.parallel as usize;
        let total = if params.bidirectional {
            2 * per_direction
        } else {
            per_direction
        };
        let (tx, rx): (_, Receiver<(u64, TcpStream)>) = mpsc::channel();
        *self.shared.phase() = Phase::Streams {
            cookie: self.cookie,
            tx,
        };
        let announced = write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::CreateStreams,
        );
        let until = Instant::now() + STREAMS_WAIT;
        let mut arrived = Vec::with_capacity(total);
        while announced.is_ok() && arrived.len() < total {
            let left = until.saturating_duration_since(Instant::now());
            let Ok(conn) = rx.recv_timeout(left) else {
                break;
            };
            arrived.push(conn);
        }
        *self.shared.phase() = Phase::Busy;
        announced?;
        if arrived.len() < total {
            return Err(ServeError::StreamsMissing {
                arrived: arrived.len(),
                wanted: total,
                wait: STREAMS_WAIT,
            });
        }
        arrived.sort_by_key(|(ticket, _)| *ticket);
        Ok(arrived
            .into_iter()
            .enumerate()
            .map(|(i, (_, sock))| {
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
                DataStream::new(stream_id(i), sock, direction)
            })
            .collect())
    }

    /// Runs the streams until TEST_END (or an abort); the time is taken before the threads are
    /// joined, so a paced sender finishing its sleep does not stretch it.
    fn data_phase(&self, params: &Params, streams: &[DataStream], t0: Instant) -> DataOutcome {
        let block = params.len.clamp(1, MAX_BLOCK as i64) as usize;
        let pace = params.bandwidth.filter(|&b| b > 0).map(|b| b as u64);
        let counting = AtomicBool::new(true);
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = streams
                .iter()
                .map(|s| {
                    let (counting, stop) = (&counting, &stop);
                    scope.spawn(move || s.run(block, counting, stop, pace))
                })
                .collect();
            let mut watch = Watchdog::new(params, streams.len(), t0);
            let stop_reason = loop {
                if let Some(abort) = watch.check(self, streams, &workers) {
                    break abort;
                }
                match self.poll_state() {
                    Ok(Some(State::TestEnd)) => break Stop::TestEnd,
                    Ok(Some(State::TestStart)) | Ok(None) => {}
                    Ok(Some(State::ClientTerminate)) => {
                        break Stop::Abort("the client terminated the test".into());
                    }
                    Ok(Some(s)) => {
                        break Stop::Abort(format!(
                            "unexpected state {} from the client",
                            s.byte()
                        ));
                    }
                    Err(e) => break Stop::Abort(e.to_string()),
                }
            };
            counting.store(false, Ordering::Relaxed);
            let elapsed = watch.start.elapsed();
            stop.store(true, Ordering::Relaxed);
            for s in streams {
                s.close();
            }
            DataOutcome {
                stop: stop_reason,
                baseline: watch.baseline,
                elapsed,
            }
        })
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
                .ok_or(ProtocolError::UnexpectedState {
                    byte: b[0],
                    waiting_for: "TEST_END",
                }),
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(ProtocolError::from_io(e, "TEST_END")),
        }
    }

    /// EXCHANGE_RESULTS: read the client's results first, then send ours, then DISPLAY_RESULTS,
    /// and wait (bounded) for IPERF_DONE before the caller closes.
    fn exchange_results(
        &self,
        streams: &[DataStream],
        phase: &DataOutcome,
        cpu: &CpuClock,
    ) -> Result<(), ServeError> {
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::ExchangeResults,
        )?;
        let _client: Results = read_json(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            MAX_RESULTS_JSON,
            "the client's results",
        )?;
        let ours = server_results(streams, &phase.baseline, phase.elapsed, cpu);
        write_json(&mut Deadline::new(self.ctrl, CONTROL_WAIT), &ours)?;
        write_state(
            &mut Deadline::new(self.ctrl, CONTROL_WAIT),
            State::DisplayResults,
        )?;
        match read_state(&mut Deadline::new(self.ctrl, CONTROL_WAIT), "IPERF_DONE") {
            Ok(_) | Err(ProtocolError::Closed(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// The deadlines of a running test: the omit period, the responder being stopped, the test
/// outliving its length, no byte moving, and every stream having ended.
struct Watchdog {
    start: Instant,
    omit_until: Option<Instant>,
    limit: Instant,
    baseline: Vec<u64>,
    last_total: u64,
    last_progress: Instant,
}

impl Watchdog {
    fn new(params: &Params, streams: usize, t0: Instant) -> Self {
        let omit = Duration::from_secs(params.omit.max(0) as u64);
        let time = Duration::from_secs(params.time.max(0) as u64);
        let limit = if params.time > 0 {
            omit + time + DURATION_SLACK
        } else {
            UNTIMED_LIMIT
        };
        Self {
            start: t0,
            omit_until: (!omit.is_zero()).then(|| t0 + omit),
            limit: t0 + limit,
            baseline: vec![0; streams],
            last_total: 0,
            last_progress: Instant::now(),
        }
    }

    fn check<T>(
        &mut self,
        session: &Session<'_>,
        streams: &[DataStream],
        workers: &[std::thread::ScopedJoinHandle<'_, T>],
    ) -> Option<Stop> {
        let now = Instant::now();
        if self.omit_until.is_some_and(|t| now >= t) {
            self.baseline = streams.iter().map(|s| s.bytes()).collect();
            self.start = now;
            self.omit_until = None;
        }
        if session.shared.stopping.load(Ordering::Relaxed) {
            let _ = write_state(
                &mut Deadline::new(session.ctrl, Duration::from_secs(1)),
                State::ServerTerminate,
            );
            return Some(Stop::Abort("the responder was stopped mid-test".into()));
        }
        if now >= self.limit {
            session.server_error(ierr::DURATION_EXPIRED);
            return Some(Stop::Abort(
                "the client did not end the test in time".into(),
            ));
        }
        let total = streams
            .iter()
            .fold(0u64, |a, s| a.saturating_add(s.bytes()));
        if total != self.last_total {
            self.last_total = total;
            self.last_progress = now;
        } else if now - self.last_progress >= NO_PROGRESS {
            session.server_error(ierr::NO_MESSAGE);
            return Some(Stop::Abort(format!(
                "no data moved for {} s",
                NO_PROGRESS.as_secs()
            )));
        }
        if workers.iter().all(|w| w.is_finished()) {
            // Every data connection was closed or failed; wait only briefly for TEST_END.
            self.limit = self.limit.min(now + Duration::from_secs(2));
        }
        None
    }
}

fn mode_name(p: &Params) -> Mode {
    if p.bidirectional {
        Mode::Bidir
    } else if p.reverse {
        Mode::Send
    } else {
        Mode::Receive
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
        #[cfg(target_os = "linux")]
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
            StreamResult::tcp(s.id, bytes, retransmits, elapsed)
        })
        .collect();
    let senders: Vec<&StreamResult> = entries
        .iter()
        .zip(streams)
        .filter(|(_, s)| s.direction == Direction::Send)
        .map(|(e, _)| e)
        .collect();
    let has_retransmits = match (
        senders.is_empty(),
        senders.iter().all(|e| e.retransmits >= 0),
    ) {
        (true, _) => -1,
        (false, true) => 1,
        (false, false) => 0,
    };
    Results {
        cpu_util_total: total,
        cpu_util_user: user,
        cpu_util_system: system,
        sender_has_retransmits: has_retransmits,
        congestion_used: None,
        streams: entries,
        health_check_version: Some(our_version()),
    }
}
