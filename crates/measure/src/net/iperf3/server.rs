//! Our iperf3 server (the responder of the client role): serves one test at a time to stock
//! `iperf3 -c` clients and to our own client, answers others with ACCESS_DENIED, and bounds every
//! wait, so a silent or garbage connection never blocks the next client (the 3.12 server hangs on
//! exactly that). Memory is bounded: at most [`MAX_PENDING`] connections waiting for a cookie.
//!
//! One acceptor thread owns the listener and gives every connection a short-lived greeter
//! thread that reads its cookie (10 s deadline). A connection with the running test's cookie,
//! while its data streams are being connected, joins that test; otherwise the first to present a
//! cookie while no test runs claims the slot, and others get 0xFF (busy) after a 0.5 s grace that
//! lets a client's back-to-back tests through. When [`MAX_PENDING`] connections already wait for
//! their cookie, the oldest is closed to make room, so a flood of silent connections cannot lock
//! out a real client for long.

use super::protocol::{COOKIE_LEN, State};
use super::session::{self, CONTROL_WAIT};
pub use super::shared::{Mode, ServeLog, ServedTest};
use super::shared::{Phase, Shared};
use super::stream::Deadline;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Connections allowed to wait for their cookie at once; beyond that the oldest is closed.
pub const MAX_PENDING: usize = 64;
/// How long a connection that finds a test running waits for it to end before "busy".
const BUSY_GRACE: Duration = Duration::from_millis(500);
/// Stack of a greeter thread, which also runs the test's control loop and decodes peer JSON.
const GREETER_STACK: usize = 1024 * 1024;

/// Where the responder listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address to bind; `None` = all addresses, IPv4 and IPv6.
    pub bind: Option<IpAddr>,
    /// TCP port.
    pub port: u16,
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
            shared: Arc::new(Shared::new()),
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
                Err(e) => {
                    // Out of descriptors, the connection waits in the backlog; say so to whoever
                    // judges the failure that follows.
                    let _ = crate::os::note_io_error(e);
                    return;
                }
            }
        }
    }

    fn dispatch(&self, conn: TcpStream, peer: SocketAddr) {
        let _ = conn.set_nonblocking(false);
        let Some(ticket) = self.shared.admit(&conn, MAX_PENDING) else {
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
    // A client that starts its next test right after the last one may arrive while that test is
    // still winding down: give the slot a moment to free up before answering "busy".
    let until = Instant::now() + BUSY_GRACE;
    loop {
        let mut phase = shared.phase();
        match &*phase {
            Phase::Streams { cookie: want, tx } if *want == cookie => {
                let _ = tx.send((ticket, conn));
                return;
            }
            Phase::Idle => {
                *phase = Phase::Busy;
                break;
            }
            Phase::Streams { .. } | Phase::Busy => {}
        }
        drop(phase);
        if Instant::now() >= until {
            refuse(&conn);
            shared.log().refused_busy += 1;
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let served = session::run(shared, &conn, peer, cookie);
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

/// Bytes moved by the responder over its life (for the client role's document).
pub fn total_bytes(log: &ServeLog) -> (u64, u64) {
    let received = log.tests.iter().map(|t| t.bytes_received).sum();
    let sent = log.tests.iter().map(|t| t.bytes_sent).sum();
    (received, sent)
}
