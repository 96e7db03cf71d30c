//! The iperf3 control protocol, pure over `Read`/`Write`: state bytes, the 37-byte cookie, the
//! length-prefixed JSON messages, and the parameter and results messages. The facts come from
//! esnet/iperf itself (`iperf_api.h` states, `iperf.h` COOKIE_SIZE 37, `iperf_api.c`
//! JSON_write/JSON_read, send_parameters/get_parameters, send_results/get_results) and are held by
//! the interoperability tests against Debian's iperf3 in both directions.

use serde::{Deserialize, Deserializer, Serialize};
use std::io::{self, Read, Write};
use thiserror::Error;

/// iperf3's default port (`iperf.h: PORT`).
pub const DEFAULT_PORT: u16 = 5201;
/// Cookie length on the wire: 36 characters and a NUL (`iperf.h: COOKIE_SIZE`).
pub const COOKIE_LEN: usize = 37;
/// The largest parameter message a 3.18+ server accepts (`MAX_PARAMS_JSON_STRING`).
pub const MAX_PARAMS_JSON: usize = 8192;
/// Our bound on a results message (the protocol has none; a 128-stream results message is ~25 KiB).
pub const MAX_RESULTS_JSON: usize = 1 << 20;
/// Default block size for TCP (`len`).
pub const DEFAULT_BLOCK: usize = 128 * 1024;
/// Largest TCP block size iperf3 accepts.
pub const MAX_BLOCK: usize = 1024 * 1024;
/// Most parallel streams iperf3 accepts (3.18+ range check).
pub const MAX_STREAMS: u32 = 128;

/// Control-channel states (`iperf_api.h`), as the signed byte sent on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Server: all streams connected; clocks start.
    TestStart,
    /// Server: data transfer starts now.
    TestRunning,
    /// Client: the test is over.
    TestEnd,
    /// Server: send your parameters.
    ParamExchange,
    /// Server: connect the data streams.
    CreateStreams,
    /// Server: terminated by a signal mid-test.
    ServerTerminate,
    /// Client: terminated by a signal mid-test.
    ClientTerminate,
    /// Server: send your results.
    ExchangeResults,
    /// Server: results sent; finish.
    DisplayResults,
    /// Client: last byte before closing.
    IperfDone,
    /// Server: busy, or a data stream's cookie did not match.
    AccessDenied,
    /// Server: an error; two big-endian i32 (iperf error, errno) follow.
    ServerError,
}

impl State {
    /// The wire byte.
    pub fn byte(self) -> u8 {
        match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfDone => 16,
            State::AccessDenied => 0xff,
            State::ServerError => 0xfe,
        }
    }

    /// The state a wire byte stands for, if it is one a peer may send.
    pub fn from_byte(b: u8) -> Option<State> {
        Some(match b {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            16 => State::IperfDone,
            0xff => State::AccessDenied,
            0xfe => State::ServerError,
            _ => return None,
        })
    }
}

/// iperf3 error numbers we send or explain (`iperf_api.h`).
pub mod ierr {
    /// Number of parallel streams too large.
    pub const NUM_STREAMS: i32 = 6;
    /// Block size too large.
    pub const BLOCK_SIZE: i32 = 7;
    /// An option is not implemented (we use it for UDP/SCTP).
    pub const UNIMPLEMENTED: i32 = 13;
    /// Unable to receive parameters.
    pub const RECV_PARAMS: i32 = 114;
    /// Unable to receive results.
    pub const RECV_RESULTS: i32 = 117;
    /// The server has terminated.
    pub const SERVER_TERMINATED: i32 = 120;
    /// The server is busy.
    pub const ACCESS_DENIED: i32 = 121;
    /// Idle timeout for receiving data.
    pub const NO_MESSAGE: i32 = 144;
    /// Server test duration expired (3.21).
    pub const DURATION_EXPIRED: i32 = 160;

    /// iperf3's text for the error numbers a server commonly sends.
    pub fn describe(code: i32) -> &'static str {
        match code {
            NUM_STREAMS => "number of parallel streams too large",
            BLOCK_SIZE => "block size too large",
            UNIMPLEMENTED => "an option is not implemented",
            RECV_PARAMS => "the server could not read the parameters",
            RECV_RESULTS => "unable to receive results",
            SERVER_TERMINATED => "the server has terminated",
            ACCESS_DENIED => "the server is busy running a test",
            NO_MESSAGE => "idle timeout for receiving data",
            DURATION_EXPIRED => "server test duration expired",
            101 => "test initialization failed",
            102 => "unable to listen for connections",
            130 => "unable to set socket window size",
            131 => "protocol does not exist",
            _ => "server error",
        }
    }
}

/// What can go wrong on the control channel.
#[derive(Debug, Error)]
pub enum ProtocolError {
    /// The peer answered 0xFF: busy with another test (or a stream's cookie was refused).
    #[error("the iperf3 server is busy running another test (access denied)")]
    AccessDenied,
    /// The peer sent SERVER_ERROR.
    #[error("the iperf3 server reported error {code} ({}), errno {errno}", ierr::describe(*code))]
    ServerError {
        /// iperf3 error number.
        code: i32,
        /// The server's errno.
        errno: i32,
    },
    /// The peer was stopped by a signal mid-test.
    #[error("the peer terminated the test")]
    Terminated,
    /// A read or write did not finish before its deadline.
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
    /// The peer closed the control connection.
    #[error("the peer closed the control connection while we waited for {0}")]
    Closed(&'static str),
    /// A byte that is no state the peer may send here.
    #[error(
        "the peer sent control byte {byte:#04x} while we waited for {waiting_for}, which the \
         protocol does not allow there (is it an iperf3 server?)"
    )]
    UnexpectedState {
        /// The byte.
        byte: u8,
        /// What we waited for.
        waiting_for: &'static str,
    },
    /// A message that is not what the protocol says.
    #[error("{what} could not be read as iperf3's JSON: {detail}")]
    Malformed {
        /// Which message.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// One of our own messages could not be encoded (a bug).
    #[error("could not encode a control message: {0}")]
    Encode(String),
    /// Any other socket error.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl ProtocolError {
    /// Maps an I/O error during `what` onto the protocol's terms (timeouts, EOF).
    pub fn from_io(e: io::Error, what: &'static str) -> Self {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ProtocolError::Timeout(what),
            io::ErrorKind::UnexpectedEof => ProtocolError::Closed(what),
            _ => ProtocolError::Io {
                context: what,
                source: e,
            },
        }
    }
}

/// A fresh cookie: 36 characters from iperf3's alphabet and a NUL.
pub fn make_cookie(random: &[u8; 36]) -> [u8; COOKIE_LEN] {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut cookie = [0u8; COOKIE_LEN];
    for (c, r) in cookie.iter_mut().zip(random) {
        *c = ALPHABET[(*r % 32) as usize];
    }
    cookie
}

/// 36 random bytes from the kernel (for cookies); falls back to time and pid bits.
pub fn random_bytes() -> [u8; 36] {
    let mut buf = [0u8; 36];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok();
    if !ok {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            ^ u128::from(std::process::id());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(97);
        }
    }
    buf
}

/// Writes one state byte.
pub fn write_state<W: Write>(w: &mut W, state: State) -> Result<(), ProtocolError> {
    w.write_all(&[state.byte()])
        .map_err(|e| ProtocolError::from_io(e, "sending a control state"))
}

/// Reads one state byte. Unknown bytes are an error; SERVER_ERROR reads its two integers (EOF
/// after the first counts as errno 0, a 3.9-3.18 quirk) and is returned as an error, as is
/// ACCESS_DENIED.
pub fn read_state<R: Read>(r: &mut R, waiting_for: &'static str) -> Result<State, ProtocolError> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)
        .map_err(|e| ProtocolError::from_io(e, waiting_for))?;
    match State::from_byte(b[0]) {
        Some(State::AccessDenied) => Err(ProtocolError::AccessDenied),
        Some(State::ServerError) => {
            let code =
                read_i32(r).map_err(|e| ProtocolError::from_io(e, "the server's error code"))?;
            let errno = read_i32(r).unwrap_or(0);
            Err(ProtocolError::ServerError { code, errno })
        }
        Some(s) => Ok(s),
        None => Err(ProtocolError::UnexpectedState {
            byte: b[0],
            waiting_for,
        }),
    }
}

fn read_i32<R: Read>(r: &mut R) -> io::Result<i32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(i32::from_be_bytes(b))
}

/// Sends SERVER_ERROR with an iperf3 error number and errno.
pub fn write_server_error<W: Write>(w: &mut W, code: i32, errno: i32) -> io::Result<()> {
    let mut msg = [0u8; 9];
    msg[0] = State::ServerError.byte();
    msg[1..5].copy_from_slice(&code.to_be_bytes());
    msg[5..9].copy_from_slice(&errno.to_be_bytes());
    w.write_all(&msg)
}

/// Writes a JSON message: a big-endian u32 length, then compact JSON.
pub fn write_json<W: Write, T: Serialize>(w: &mut W, value: &T) -> Result<(), ProtocolError> {
    let body = serde_json::to_vec(value).map_err(|e| ProtocolError::Encode(e.to_string()))?;
    let len = u32::try_from(body.len())
        .map_err(|_| ProtocolError::Encode("the message is longer than 4 GiB".into()))?;
    let mut msg = Vec::with_capacity(4 + body.len());
    msg.extend_from_slice(&len.to_be_bytes());
    msg.extend_from_slice(&body);
    w.write_all(&msg)
        .map_err(|e| ProtocolError::from_io(e, "sending a JSON message"))
}

/// Reads a JSON message of at most `max` bytes and decodes it.
pub fn read_json<R: Read, T: for<'de> Deserialize<'de>>(
    r: &mut R,
    max: usize,
    what: &'static str,
) -> Result<T, ProtocolError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|e| ProtocolError::from_io(e, what))?;
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > max {
        return Err(ProtocolError::Malformed {
            what,
            detail: format!("length {len} is outside 1..={max}"),
        });
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)
        .map_err(|e| ProtocolError::from_io(e, what))?;
    decode_json(&body, what)
}

/// Decodes a JSON message body (split out so fuzzing and property tests reach it directly).
pub fn decode_json<T: for<'de> Deserialize<'de>>(
    body: &[u8],
    what: &'static str,
) -> Result<T, ProtocolError> {
    serde_json::from_slice(body).map_err(|e| ProtocolError::Malformed {
        what,
        detail: e.to_string(),
    })
}

/// An integer as iperf3 prints it: signed, or (3.13 and older) a negative value printed as an
/// unsigned 64-bit number, or a float. Reads all three.
fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    if let Some(v) = n.as_i64() {
        Ok(v)
    } else if let Some(v) = n.as_u64() {
        Ok(v as i64) // wraps 18446744073709551615 back to -1, as iperf3 meant it
    } else {
        Ok(n.as_f64().unwrap_or(0.0) as i64)
    }
}

fn lenient_opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    lenient_i64(d).map(Some)
}

/// Accepts `true` or any other present value as "set" (servers up to 3.17 do the same).
fn present_flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(!matches!(
        v,
        serde_json::Value::Bool(false) | serde_json::Value::Null
    ))
}

fn skip_false(b: &bool) -> bool {
    !*b
}

/// The parameter message (client to server). Booleans are left out when false: servers up to
/// 3.17 treat a present key as set. Unknown keys are ignored on reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// TCP test.
    #[serde(
        default,
        skip_serializing_if = "skip_false",
        deserialize_with = "present_flag"
    )]
    pub tcp: bool,
    /// UDP test (we refuse it as a server).
    #[serde(
        default,
        skip_serializing_if = "skip_false",
        deserialize_with = "present_flag"
    )]
    pub udp: bool,
    /// SCTP test (we refuse it as a server).
    #[serde(
        default,
        skip_serializing_if = "skip_false",
        deserialize_with = "present_flag"
    )]
    pub sctp: bool,
    /// Warm-up seconds not counted.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub omit: i64,
    /// Test length in whole seconds (0 with byte or block limits).
    #[serde(default = "default_time", deserialize_with = "lenient_i64")]
    pub time: i64,
    /// Byte limit, 0 = none.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub num: i64,
    /// Block limit, 0 = none.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub blockcount: i64,
    /// Streams (per direction in bidir).
    #[serde(default = "default_parallel", deserialize_with = "lenient_i64")]
    pub parallel: i64,
    /// Server sends, client receives.
    #[serde(
        default,
        skip_serializing_if = "skip_false",
        deserialize_with = "present_flag"
    )]
    pub reverse: bool,
    /// Both directions at once.
    #[serde(
        default,
        skip_serializing_if = "skip_false",
        deserialize_with = "present_flag"
    )]
    pub bidirectional: bool,
    /// Socket buffer size in bytes (0 = autotuning).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_opt_i64"
    )]
    pub window: Option<i64>,
    /// Block size in bytes.
    #[serde(default = "default_len", deserialize_with = "lenient_i64")]
    pub len: i64,
    /// Target bits per second per stream (0 = unlimited).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_opt_i64"
    )]
    pub bandwidth: Option<i64>,
    /// Congestion control for the server's data sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// The client's iperf3 version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
}

fn default_time() -> i64 {
    10
}
fn default_parallel() -> i64 {
    1
}
fn default_len() -> i64 {
    DEFAULT_BLOCK as i64
}

impl Params {
    /// A TCP test as our client sends it.
    pub fn tcp_test(streams: u32, seconds: u32, reverse: bool) -> Params {
        Params {
            tcp: true,
            udp: false,
            sctp: false,
            omit: 0,
            time: i64::from(seconds),
            num: 0,
            blockcount: 0,
            parallel: i64::from(streams),
            reverse,
            bidirectional: false,
            window: None,
            len: DEFAULT_BLOCK as i64,
            bandwidth: None,
            congestion: None,
            client_version: Some(format!("health_check-{}", env!("CARGO_PKG_VERSION"))),
        }
    }
}

/// One stream's entry in a results message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    /// Stream id (1, 3, 4, ...).
    #[serde(deserialize_with = "lenient_i64")]
    pub id: i64,
    /// Bytes sent (sender) or read while running (receiver), after omit.
    #[serde(deserialize_with = "lenient_i64")]
    pub bytes: i64,
    /// TCP retransmits of a sender with TCP_INFO, else -1.
    #[serde(deserialize_with = "lenient_i64")]
    pub retransmits: i64,
    /// UDP jitter (0 for TCP).
    pub jitter: f64,
    /// UDP lost packets (0 for TCP).
    #[serde(deserialize_with = "lenient_i64")]
    pub errors: i64,
    /// 3.14+: UDP omitted errors (0).
    #[serde(default, deserialize_with = "lenient_i64")]
    pub omitted_errors: i64,
    /// UDP packets (0 for TCP).
    #[serde(deserialize_with = "lenient_i64")]
    pub packets: i64,
    /// 3.14+: omitted packets (0).
    #[serde(default, deserialize_with = "lenient_i64")]
    pub omitted_packets: i64,
    /// Always 0.
    #[serde(default)]
    pub start_time: f64,
    /// Seconds from the stream's start to its last sample.
    #[serde(default)]
    pub end_time: f64,
}

impl StreamResult {
    /// A TCP stream's entry: `bytes` moved over `elapsed`; `retransmits` -1 where unknown (a
    /// receiver, or no TCP_INFO). The UDP fields are zero, as iperf3 writes them for TCP.
    pub fn tcp(id: i64, bytes: u64, retransmits: i64, elapsed: std::time::Duration) -> Self {
        StreamResult {
            id,
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
    }
}

/// The results message, the same in both directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// CPU use over the test, % of one core.
    pub cpu_util_total: f64,
    /// User part.
    pub cpu_util_user: f64,
    /// System part.
    pub cpu_util_system: f64,
    /// -1 pure receiver; 1 retransmits available; 0 not available.
    #[serde(deserialize_with = "lenient_i64")]
    pub sender_has_retransmits: i64,
    /// Congestion control used on the data sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// Per-stream figures.
    pub streams: Vec<StreamResult>,
    /// Our responder names itself here (`health_check <version>`); stock iperf3 ignores unknown
    /// keys and sends none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_version: Option<String>,
}

/// How our responder names itself in its results.
pub fn our_version() -> String {
    format!("health_check {}", env!("CARGO_PKG_VERSION"))
}

/// The id of the k-th stream (0-based): 1, 3, 4, 5, ... (2 is never used).
pub fn stream_id(index: usize) -> i64 {
    if index == 0 { 1 } else { index as i64 + 2 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn state_bytes_round_trip() {
        for b in 0..=255u8 {
            if let Some(s) = State::from_byte(b) {
                assert_eq!(s.byte(), b);
            }
        }
        assert_eq!(State::from_byte(3), None, "RESULT_REQUEST is never sent");
    }

    #[test]
    fn cookies_use_iperfs_alphabet_and_end_in_nul() {
        let c = make_cookie(&[255; 36]);
        assert_eq!(c.len(), 37);
        assert_eq!(c[36], 0);
        assert!(
            c[..36]
                .iter()
                .all(|b| b"abcdefghijklmnopqrstuvwxyz234567".contains(b))
        );
    }

    #[test]
    fn stream_ids_skip_two() {
        let ids: Vec<i64> = (0..5).map(stream_id).collect();
        assert_eq!(ids, [1, 3, 4, 5, 6]);
    }

    #[test]
    fn stock_312_parameters_parse() {
        let p: Params = decode_json(
            br#"{"tcp":true,"omit":1,"time":1,"num":0,"blockcount":0,"nodelay":true,"parallel":2,"reverse":true,"window":262144,"len":65536,"bandwidth":2000000000,"pacing_timer":1000,"title":"mytitle","extra_data":"xyz","congestion":"cubic","client_version":"3.12"}"#,
            "parameters",
        )
        .unwrap();
        assert!(p.tcp && p.reverse && !p.bidirectional);
        assert_eq!((p.parallel, p.time, p.len), (2, 1, 65536));
        assert_eq!(p.window, Some(262_144));
        assert_eq!(p.congestion.as_deref(), Some("cubic"));
    }

    #[test]
    fn false_booleans_are_left_out_and_old_servers_presence_rule_is_read() {
        let text = serde_json::to_string(&Params::tcp_test(4, 10, false)).unwrap();
        assert!(!text.contains("reverse") && !text.contains("udp"));
        assert!(text.contains(r#""tcp":true"#) && text.contains(r#""parallel":4"#));
        let p: Params =
            decode_json(br#"{"tcp":1,"reverse":false,"bidirectional":1}"#, "p").unwrap();
        assert!(p.tcp && !p.reverse && p.bidirectional);
        assert_eq!(
            (p.time, p.parallel, p.len),
            (10, 1, 131_072),
            "defaults when missing"
        );
    }

    #[test]
    fn unsigned_minus_one_from_old_iperf_reads_as_minus_one() {
        let r: Results = decode_json(
            br#"{"cpu_util_total":27.93,"cpu_util_user":1.05,"cpu_util_system":26.88,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":1085276054,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.002118}]}"#,
            "results",
        )
        .unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.streams[0].bytes, 1_085_276_054);
        assert_eq!(r.streams[0].omitted_errors, 0);
    }

    #[test]
    fn json_framing_round_trips_and_bounds_lengths() {
        let mut buf = Vec::new();
        write_json(&mut buf, &Params::tcp_test(1, 2, true)).unwrap();
        assert_eq!(
            u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize,
            buf.len() - 4
        );
        let back: Params = read_json(&mut Cursor::new(&buf), MAX_PARAMS_JSON, "p").unwrap();
        assert!(back.reverse);
        let huge = [0xff, 0xff, 0xff, 0xff];
        let e = read_json::<_, Params>(&mut Cursor::new(&huge), MAX_PARAMS_JSON, "p").unwrap_err();
        assert!(matches!(e, ProtocolError::Malformed { .. }));
        let zero = [0, 0, 0, 0];
        assert!(read_json::<_, Params>(&mut Cursor::new(&zero), 10, "p").is_err());
        let short = [0, 0, 0, 9, b'{'];
        assert!(matches!(
            read_json::<_, Params>(&mut Cursor::new(&short), 10, "p").unwrap_err(),
            ProtocolError::Closed(_)
        ));
    }

    #[test]
    fn server_error_and_busy_are_errors_with_their_codes() {
        let mut msg = Vec::new();
        write_server_error(&mut msg, ierr::UNIMPLEMENTED, 0).unwrap();
        match read_state(&mut Cursor::new(&msg), "x") {
            Err(ProtocolError::ServerError { code, errno }) => assert_eq!((code, errno), (13, 0)),
            other => panic!("{other:?}"),
        }
        // 3.9-3.18 auth-failure quirk: only the first integer, then EOF.
        let quirk = [0xfe, 0, 0, 0, 121];
        assert!(matches!(
            read_state(&mut Cursor::new(&quirk), "x"),
            Err(ProtocolError::ServerError {
                code: 121,
                errno: 0
            })
        ));
        assert!(matches!(
            read_state(&mut Cursor::new(&[0xff]), "x"),
            Err(ProtocolError::AccessDenied)
        ));
        assert!(matches!(
            read_state(&mut Cursor::new(&[0x33]), "x"),
            Err(ProtocolError::UnexpectedState { byte: 0x33, .. })
        ));
        let e = read_state(&mut Cursor::new(&[0x63]), "TEST_START").unwrap_err();
        assert!(
            e.to_string().contains("0x63")
                && e.to_string().contains("while we waited for TEST_START"),
            "{e}"
        );
        assert!(matches!(
            read_state(&mut Cursor::new(&[0x63]), "x"),
            Err(ProtocolError::UnexpectedState { byte: 0x63, .. })
        ));
        assert!(matches!(
            read_state(&mut Cursor::new(&[]), "x"),
            Err(ProtocolError::Closed(_))
        ));
    }
}
