//! Data-stream loops shared by both ends of a test, and deadline-bounded control I/O. Each stream
//! runs in its own thread (as iperf3 3.16+ does): a sender writes at least `len` bytes a call
//! ([`write_size`]), a receiver takes up to `len` bytes a call and counts them only while the
//! test is running. Receivers poll the stop flag every
//! 100 ms; senders are woken by shutting the connection down ([`DataStream::close`]), which every
//! caller does when the test ends.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a data-socket read or write may block before the loop re-checks its stop flag.
pub const POLL: Duration = Duration::from_millis(100);

/// The smallest write a sender makes. iperf3 writes one block (128 KiB) per call; on loopback
/// with 2 CPUs, 256 KiB per call moved 16-18 % more than 128 KiB (and more than 512 KiB or 1 MiB)
/// against the same stock receiver (docs/performance.md): fewer calls, fewer wake-ups of the
/// receiver. The block stays what the peer is told and what a receiver reads at a time.
const MIN_WRITE: usize = 256 * 1024;

/// The bytes a sender hands the kernel per write for a test of `block`-byte blocks: also what
/// one stream can have in flight when the test ends.
pub fn write_size(block: usize) -> usize {
    block.max(MIN_WRITE)
}

/// Which way a stream's data flows, seen from this end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// This end writes.
    Send,
    /// This end reads.
    Receive,
}

/// One data connection of a test.
#[derive(Debug)]
pub struct DataStream {
    /// iperf3 stream id (1, 3, 4, ...).
    pub id: i64,
    /// The connection.
    pub socket: TcpStream,
    /// Which way data flows from this end.
    pub direction: Direction,
    /// Bytes written or (while counting) read so far.
    pub bytes: AtomicU64,
}

impl DataStream {
    /// A stream with its counter at zero.
    pub fn new(id: i64, socket: TcpStream, direction: Direction) -> Self {
        Self {
            id,
            socket,
            direction,
            bytes: AtomicU64::new(0),
        }
    }

    /// Bytes counted so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Runs this stream's loop until `stop` is set (senders: and the connection is shut down).
    /// Receivers count only while `counting`.
    /// `pace_bps` limits a sender to that many bits per second (iperf3 `-b`).
    pub fn run(
        &self,
        block: usize,
        counting: &AtomicBool,
        stop: &AtomicBool,
        pace_bps: Option<u64>,
    ) {
        // Senders block in write(2) without a timeout and are woken by `close` (shutdown): a send
        // timeout (SO_SNDTIMEO) left the link idle for up to 100 ms at a time, costing up to 4 %
        // of a shaped 1 Gbit/s link's goodput. Receivers poll their stop flag every 100 ms.
        let timeouts = self
            .socket
            .set_write_timeout(None)
            .and_then(|_| self.socket.set_read_timeout(Some(POLL)));
        if timeouts.is_err() {
            return;
        }
        match self.direction {
            Direction::Send => self.send_loop(block, stop, pace_bps),
            Direction::Receive => self.recv_loop(block, counting, stop),
        }
    }

    fn send_loop(&self, block: usize, stop: &AtomicBool, pace_bps: Option<u64>) {
        let buf = payload(write_size(block));
        let started = Instant::now();
        let mut sock = &self.socket;
        let mut offset = 0;
        while !stop.load(Ordering::Relaxed) {
            match sock.write(&buf[offset..]) {
                Ok(0) => return,
                Ok(n) => {
                    self.bytes.fetch_add(n as u64, Ordering::Relaxed);
                    offset = (offset + n) % buf.len();
                }
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
            if let Some(rate) = pace_bps.filter(|&r| r > 0) {
                let due = Duration::from_secs_f64(self.bytes() as f64 * 8.0 / rate as f64);
                let ahead = due.saturating_sub(started.elapsed());
                if !ahead.is_zero() {
                    std::thread::sleep(ahead.min(POLL));
                }
            }
        }
    }

    fn recv_loop(&self, block: usize, counting: &AtomicBool, stop: &AtomicBool) {
        let mut buf = vec![0u8; block.max(1)];
        while !stop.load(Ordering::Relaxed) {
            match discard(&self.socket, &mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if counting.load(Ordering::Relaxed) {
                        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
        }
    }

    /// Shuts the connection down both ways, waking a loop blocked in the kernel.
    pub fn close(&self) {
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// A block of pseudo-random bytes (xorshift), so compressing links cannot inflate the figures.
fn payload(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(std::process::id());
    (0..len.max(1))
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Reads what the socket has (up to `buf`'s length) and returns how much. On Linux the bytes
/// are dropped in the kernel (recv with MSG_TRUNC on TCP), not copied into `buf`: a receiver
/// counts bytes and looks at none, and the copy would cost the receiving host CPU the link
/// figure should not depend on.
fn discard(socket: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::socket::{MsgFlags, recv};
        use std::os::fd::AsRawFd;
        recv(socket.as_raw_fd(), buf, MsgFlags::MSG_TRUNC).map_err(io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    (&mut &*socket).read(buf)
}

/// Whether an I/O error is a socket timeout.
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// How long control I/O may still take once SIGINT/SIGTERM has arrived.
pub const AFTER_INTERRUPT: Duration = Duration::from_secs(1);

/// Reads and writes on a control connection that give up at a fixed instant: every call waits
/// in slices of at most 200 ms up to the time left, so a peer that trickles bytes cannot stretch
/// the wait, and a Ctrl-C cuts what is left to [`AFTER_INTERRUPT`].
pub struct Deadline<'a> {
    socket: &'a TcpStream,
    until: Instant,
}

impl<'a> Deadline<'a> {
    /// I/O on `socket` that must finish within `limit` from now.
    pub fn new(socket: &'a TcpStream, limit: Duration) -> Self {
        Self {
            socket,
            until: Instant::now() + limit,
        }
    }

    /// The next wait: the time left, at most 200 ms; an error once the deadline has passed.
    fn slice(&mut self) -> io::Result<Duration> {
        let now = Instant::now();
        if crate::os::interrupted().is_some() {
            self.until = self.until.min(now + AFTER_INTERRUPT);
        }
        let left = self.until.saturating_duration_since(now);
        if left.is_zero() {
            Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
        } else {
            Ok(left.min(Duration::from_millis(200)))
        }
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.socket.set_read_timeout(Some(self.slice()?))?;
            match (&mut &*self.socket).read(buf) {
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            self.socket.set_write_timeout(Some(self.slice()?))?;
            match (&mut &*self.socket).write(buf) {
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// CPU time of this process, for the results' `cpu_util_*` fields.
#[derive(Debug, Clone, Copy)]
pub struct CpuClock {
    wall: Instant,
    user: Duration,
    system: Duration,
}

impl CpuClock {
    /// Starts measuring.
    pub fn start() -> Self {
        let (user, system) = process_cpu();
        Self {
            wall: Instant::now(),
            user,
            system,
        }
    }

    /// (total, user, system) CPU use since `start`, in % of one core.
    pub fn percent(&self) -> (f64, f64, f64) {
        let (user, system) = process_cpu();
        let wall = self.wall.elapsed().as_secs_f64().max(1e-9);
        let u = 100.0 * user.saturating_sub(self.user).as_secs_f64() / wall;
        let s = 100.0 * system.saturating_sub(self.system).as_secs_f64() / wall;
        (u + s, u, s)
    }
}

fn process_cpu() -> (Duration, Duration) {
    use nix::sys::resource::{UsageWho, getrusage};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(r) => {
            let d = |t: nix::sys::time::TimeVal| {
                Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
            };
            (d(r.user_time()), d(r.system_time()))
        }
        Err(_) => (Duration::ZERO, Duration::ZERO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_stream_pair_moves_and_counts_bytes() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let tx = DataStream::new(1, client, Direction::Send);
        let rx = DataStream::new(1, server, Direction::Receive);
        let counting = AtomicBool::new(true);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| tx.run(16 * 1024, &counting, &stop, Some(80_000_000)));
            s.spawn(|| rx.run(16 * 1024, &counting, &stop, None));
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
            tx.close();
        });
        assert!(rx.bytes() > 0);
        assert!(rx.bytes() <= tx.bytes());
        // Paced at 80 Mbit/s = 10 MB/s for ~0.2 s.
        assert!(
            tx.bytes() < 4_000_000,
            "pacing holds the sender back: {}",
            tx.bytes()
        );
    }

    #[test]
    fn a_receiver_counts_every_byte_it_drops() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let sent = payload(3 * 1024 * 1024 + 17);
        let writer = std::thread::spawn(move || {
            client.write_all(&sent).unwrap();
            sent.len()
        });
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0;
        loop {
            match discard(&server, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    assert!(n <= buf.len(), "a call takes at most its length: {n}");
                    total += n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(total, writer.join().unwrap());
    }

    #[test]
    fn a_sender_writes_at_least_a_block_and_its_minimum() {
        assert_eq!(write_size(128 * 1024), MIN_WRITE);
        assert_eq!(write_size(8 * 1024), MIN_WRITE);
        assert_eq!(write_size(4 << 20), 4 << 20);
    }

    #[test]
    fn deadline_reads_give_up() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _server = listener.accept().unwrap();
        let started = Instant::now();
        let mut b = [0u8; 1];
        let e = Deadline::new(&client, Duration::from_millis(150))
            .read_exact(&mut b)
            .unwrap_err();
        assert!(is_timeout(&e), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn payload_is_not_constant() {
        let p = payload(4096);
        assert!(p.iter().any(|&b| b != p[0]));
    }
}
