//! The state a responder shares between its acceptor, its greeters and the running test, and
//! the record of what it served. `server` (accepting) and `session` (one test) both use it; neither
//! uses the other's internals.

use super::protocol::COOKIE_LEN;
use std::collections::VecDeque;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// Which way the data of a served test went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The client sent, we received.
    Receive,
    /// We sent (`-R`).
    Send,
    /// Both (`--bidir`).
    Bidir,
}

impl Mode {
    /// The mode's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Receive => "receive",
            Mode::Send => "send",
            Mode::Bidir => "bidir",
        }
    }
}

/// One test served.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedTest {
    /// The client's address.
    pub peer: String,
    /// The client's iperf3 version, as it said.
    pub client_version: Option<String>,
    /// Streams (both directions counted).
    pub streams: u32,
    /// Which way the data went.
    pub mode: Mode,
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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeLog {
    /// Tests that got past the parameter exchange.
    pub tests: Vec<ServedTest>,
    /// Connections answered "busy".
    pub refused_busy: u64,
    /// Connections dropped before a test: no cookie in time, bad parameters, too many pending.
    pub dropped: u64,
}

/// What the responder is doing, as the acceptor and the greeters see it.
pub enum Phase {
    /// No test: the next connection with a cookie starts one.
    Idle,
    /// A test runs: new connections are refused.
    Busy,
    /// A test is connecting its data streams: connections with its cookie are handed over, with
    /// their accept ticket so the test can number them in accept order.
    Streams {
        /// The running test's cookie.
        cookie: [u8; COOKIE_LEN],
        /// Where the test takes its streams.
        tx: Sender<(u64, TcpStream)>,
    },
}

/// Called after each test (the client role prints a line for it).
type TestHook = Box<dyn Fn(&ServedTest) + Send + Sync>;

/// State shared by the acceptor, the greeters and the running test.
pub struct Shared {
    phase: Mutex<Phase>,
    pub(super) on_test: Option<TestHook>,
    /// Connections waiting for their cookie, oldest first: (ticket, a handle to shut it down).
    pending: Mutex<VecDeque<(u64, TcpStream)>>,
    next_ticket: AtomicU64,
    log: Mutex<ServeLog>,
    pub(super) last_test_end: Mutex<Instant>,
    /// Set when `serve` returns: a running test ends with SERVER_TERMINATE.
    pub(super) stopping: AtomicBool,
}

impl Shared {
    pub(super) fn new() -> Self {
        Shared {
            phase: Mutex::new(Phase::Idle),
            on_test: None,
            pending: Mutex::new(VecDeque::new()),
            next_ticket: AtomicU64::new(0),
            log: Mutex::new(ServeLog::default()),
            last_test_end: Mutex::new(Instant::now()),
            stopping: AtomicBool::new(false),
        }
    }

    pub(super) fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn log(&self) -> MutexGuard<'_, ServeLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pending(&self) -> MutexGuard<'_, VecDeque<(u64, TcpStream)>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a connection waiting for its cookie; closes the oldest when `max_pending` wait.
    pub(super) fn admit(&self, conn: &TcpStream, max_pending: usize) -> Option<u64> {
        let handle = conn.try_clone().map_err(crate::os::note_io_error).ok()?;
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let mut pending = self.pending();
        if pending.len() >= max_pending {
            if let Some((_, oldest)) = pending.pop_front() {
                let _ = oldest.shutdown(std::net::Shutdown::Both);
            }
        }
        pending.push_back((ticket, handle));
        Some(ticket)
    }

    pub(super) fn release(&self, ticket: u64) {
        self.pending().retain(|(t, _)| *t != ticket);
    }
}
