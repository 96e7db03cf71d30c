//! The network section against real peers: Debian's iperf3 in both directions, our responder,
//! namespaces with a shaped 1 Gbit/s link, and peers that refuse, vanish, stall or speak garbage.

use crate::netns::{ADDR_B, NetPair, Side};
use crate::util::{Need, assert_valid, bin_path, bin_str, exclusive, json_of, needs, run};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn server_role_against_our_client_role_in_namespaces() {
    let _cpus = exclusive();
    let Some(mut pair) = NetPair::new("server_role_against_our_client_role_in_namespaces") else {
        return;
    };
    pair.spawn(
        Side::B,
        &bin_str(),
        &["-r", "client", "--idle-timeout", "30"],
    );
    pair.wait_listening(Side::B, 5201);
    let out = pair
        .command(Side::A, &bin_str())
        .args([
            "-r",
            "server",
            "-c",
            ADDR_B,
            "--only",
            "network",
            "--profile",
            "quick",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out);
    assert_valid(&doc);
    let p = &doc["ping"][0];
    assert_eq!(
        (p["hostname"].as_str(), p["method"].as_str()),
        (Some(ADDR_B), Some("icmp"))
    );
    assert_eq!(p["received"], p["sent"]);
    let b = &doc["iperf3 bandwidth"][0];
    assert_eq!(
        b["peer"],
        format!("health_check {}", env!("CARGO_PKG_VERSION")),
        "{b}"
    );
    assert!(b["bandwidth"].as_f64().unwrap() > 0.1);
    assert!(b["reverse_gbps"].as_f64().unwrap() > 0.1);
    assert_eq!(doc["health_check"]["sections"]["network"], "ok");
}

fn iperf3_client(port: u16, extra: &[&str]) -> Value {
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-J"])
        .args(extra)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v.get("error").is_none(),
        "iperf3 {extra:?} failed: {}",
        v["error"]
    );
    v
}

fn start_responder(port: u16, extra: &[&str]) -> std::process::Child {
    let child = Command::new(bin_path())
        .args(["serve", "--port", &port.to_string()])
        .args(extra)
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_port(port);
    child
}

/// A stock `iperf3 -s` on `port`, stopped when dropped (also when an assertion fails).
struct StockIperf3Server(std::process::Child);

impl StockIperf3Server {
    fn start(port: u16) -> Self {
        let child = Command::new("iperf3")
            .args(["-s", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        StockIperf3Server(child)
    }
}

impl Drop for StockIperf3Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_port(port: u16) {
    for _ in 0..100 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            // That probe was a connection without a cookie; give the responder a moment.
            std::thread::sleep(Duration::from_millis(50));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on {port}");
}

fn stop(mut child: std::process::Child, signal: i32) -> (i32, Value) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "the responder did not stop on signal {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), json_of(&out))
}

#[test]
fn stock_iperf3_client_uses_our_responder_in_every_mode() {
    let _cpus = exclusive();
    if !needs(
        "stock_iperf3_client_uses_our_responder_in_every_mode",
        &[Need::Tool("iperf3", "iperf3")],
    ) {
        return;
    }
    let port = free_port();
    let responder = start_responder(port, &["--idle-timeout", "60"]);
    let normal = iperf3_client(port, &["-P", "3"]);
    assert!(
        normal["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap()
            > 1e8
    );
    let reverse = iperf3_client(port, &["-R"]);
    assert!(
        reverse["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap()
            > 1e8
    );
    let bidir = iperf3_client(port, &["--bidir", "-P", "2"]);
    assert!(
        bidir["end"]["sum_received_bidir_reverse"]["bits_per_second"]
            .as_f64()
            .unwrap()
            > 1e6
    );
    let (code, doc) = stop(responder, libc::SIGTERM);
    assert_eq!(code, 0, "SIGTERM ends the client role with exit 0");
    assert_valid(&doc);
    let r = &doc["responder"];
    assert_eq!(r["ended_by"], "SIGTERM");
    let modes: Vec<&str> = r["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["receive", "send", "bidir"]);
    assert!(
        r["tests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["outcome"] == "ok" && t["client_version"] == "3.12")
    );
    assert_eq!(r["tests"][2]["streams"], 4);
}

#[test]
fn our_client_against_stock_iperf3_server_on_loopback() {
    let _cpus = exclusive();
    if !needs(
        "our_client_against_stock_iperf3_server_on_loopback",
        &[Need::Tool("iperf3", "iperf3")],
    ) {
        return;
    }
    let port = free_port();
    let _server = StockIperf3Server::start(port);
    let out = run(&[
        "iperf",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--iperf-time",
        "1",
        "--iperf-streams",
        "2",
    ]);
    let doc = out.json();
    assert_valid(&doc);
    let b = &doc["iperf3 bandwidth"][0];
    assert_eq!(b["peer"], "iperf3");
    assert_eq!(b["streams"], 2);
    assert!(b["bandwidth"].as_f64().unwrap() > 0.1, "{b}");
    assert!(b["reverse_gbps"].as_f64().unwrap() > 0.1, "{b}");
    assert!(
        b["retransmits"].is_u64() && b["reverse_retransmits"].is_u64(),
        "{b}"
    );
}

#[test]
fn responder_survives_silent_and_garbage_connections() {
    let _cpus = exclusive();
    if !needs(
        "responder_survives_silent_and_garbage_connections",
        &[Need::Tool("iperf3", "iperf3")],
    ) {
        return;
    }
    let port = free_port();
    let responder = start_responder(port, &["--idle-timeout", "60"]);
    let pid = responder.id();
    let silent: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    for i in 0..100u32 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let junk: Vec<u8> = (0..64u32).map(|b| (b * 31 + i * 7) as u8 | 0x80).collect();
        let _ = s.write_all(&junk);
    }
    std::thread::sleep(Duration::from_millis(300));
    let normal = iperf3_client(port, &[]);
    assert!(
        normal["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap()
            > 1e8
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(
        rss_kib < 64 * 1024,
        "responder uses {rss_kib} KiB after the flood"
    );
    drop(silent);
    let (code, doc) = stop(responder, libc::SIGINT);
    assert_eq!(code, 0);
    assert_valid(&doc);
    assert_eq!(doc["responder"]["tests_served"], 1);
    assert!(doc["responder"]["dropped"].as_u64().unwrap() >= 100);
}

#[test]
fn a_second_client_gets_the_busy_answer_while_a_test_runs() {
    let _cpus = exclusive();
    if !needs(
        "a_second_client_gets_the_busy_answer_while_a_test_runs",
        &[Need::Tool("iperf3", "iperf3")],
    ) {
        return;
    }
    let port = free_port();
    let responder = start_responder(port, &["--idle-timeout", "60"]);
    let mut long = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "2"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"abcdefghijklmnopqrstuvwxyz234567abcd\0")
        .unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).unwrap();
    assert_eq!(
        b[0], 0xff,
        "ACCESS_DENIED (after a short grace for back-to-back tests)"
    );
    assert!(
        long.wait().unwrap().success(),
        "the running test is unharmed"
    );
    let (_, doc) = stop(responder, libc::SIGTERM);
    assert!(doc["responder"]["refused_busy"].as_u64().unwrap() >= 1);
}

/// Accepts connections on a loopback port and treats each with `serve`.
fn fake_peer(serve: fn(TcpStream)) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || serve(conn));
        }
    });
    port
}

fn iperf_against(port: u16) -> (Value, Duration) {
    let started = Instant::now();
    let out = run(&[
        "iperf",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--iperf-time",
        "1",
        "--iperf-timeout",
        "1",
    ]);
    assert!(out.code == 0, "a failed peer is recorded, not fatal");
    let doc = out.json();
    assert_valid(&doc);
    (doc, started.elapsed())
}

#[test]
fn garbage_and_stalling_peers_get_an_error_each() {
    let garbage = fake_peer(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        std::thread::sleep(Duration::from_secs(2));
    });
    let (doc, _) = iperf_against(garbage);
    let e = doc["iperf3 bandwidth"][0]["error"].as_str().unwrap();
    // 'H' of "HTTP/1.1" read as a control byte, named with the state it arrived in.
    assert!(
        e.contains("control byte 0x48 while we waited for PARAM_EXCHANGE")
            && e.contains("is it an iperf3 server?"),
        "{e}"
    );

    let stalling = fake_peer(|s| {
        std::thread::sleep(Duration::from_secs(5));
        drop(s);
    });
    let (doc, took) = iperf_against(stalling);
    let e = doc["iperf3 bandwidth"][0]["error"].as_str().unwrap();
    assert!(e.contains("timed out"), "{e}");
    assert!(
        took < Duration::from_secs(4),
        "the 1 s control deadline holds: {took:?}"
    );
}

#[test]
fn a_peer_that_refuses_is_named_as_refusing() {
    // Another host's port nobody listens on (loopback would get the in-process responder): its
    // kernel refuses at once, and the error says so.
    let test = "a_peer_that_refuses_is_named_as_refusing";
    let Some(pair) = NetPair::new(test) else {
        return;
    };
    let started = Instant::now();
    let out = pair
        .command(Side::A, &bin_str())
        .args([
            "iperf",
            "10.0.0.2",
            "--port",
            "5299",
            "--iperf-time",
            "1",
            "--iperf-timeout",
            "1",
        ])
        .output()
        .unwrap();
    let doc = json_of(&out);
    let entry = &doc["iperf3 bandwidth"][0];
    let e = entry["error"].as_str().unwrap_or_else(|| panic!("{entry}"));
    assert!(e.to_lowercase().contains("refused"), "{e}");
    assert!(entry["bandwidth"].is_null(), "{entry}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn unreachable_clients_cost_the_deadlines_once() {
    let _cpus = exclusive();
    let Some(pair) = NetPair::new("unreachable_clients_cost_the_deadlines_once") else {
        return;
    };
    let started = Instant::now();
    let out = pair
        .command(Side::A, &bin_str())
        .args([
            "-r",
            "server",
            "-c",
            "10.0.0.77,10.0.0.78,10.0.0.79,10.0.0.2,nosuch.invalid",
            "--only",
            "network",
            "--profile",
            "quick",
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out);
    assert_valid(&doc);
    let entries = doc["iperf3 bandwidth"].as_array().unwrap();
    assert_eq!(entries.len(), 5);
    for e in entries {
        assert!(e["error"].as_str().is_some(), "{e}");
    }
    assert!(
        entries[3]["error"].as_str().unwrap().contains("refused"),
        "{}",
        entries[3]
    );
    let pings = doc["ping"].as_array().unwrap();
    assert_eq!(
        pings[3]["loss_pct"], 0.0,
        "10.0.0.2 answers ping although nothing listens"
    );
    assert_eq!(pings[0]["loss_pct"], 100.0);
    // Three dead hosts, each with a 3 s connect deadline: paid once, in parallel.
    assert!(took < Duration::from_secs(9), "took {took:?}");
}

#[test]
fn ping_methods_datagram_raw_and_tcp() {
    let Some(pair) = NetPair::new("ping_methods_datagram_raw_and_tcp") else {
        return;
    };
    let ping = |method: &str| {
        let out = pair
            .command(Side::A, &bin_str())
            .args([
                "ping",
                ADDR_B,
                "--ping-count",
                "3",
                "--ping-interval",
                "0.05",
                "--ping-method",
                method,
            ])
            .output()
            .unwrap();
        let doc = json_of(&out);
        assert_valid(&doc);
        doc["ping"][0].clone()
    };
    // Root without ping_group_range: a raw socket.
    let raw = ping("icmp");
    assert_eq!(
        (raw["method"].as_str(), raw["received"].as_u64()),
        (Some("icmp"), Some(3))
    );
    // The sysctl is per namespace: enable datagram ICMP sockets in A.
    pair.sysctl(Side::A, "net.ipv4.ping_group_range=0 2147483647");
    let dgram = ping("icmp");
    assert_eq!(dgram["received"], 3);
    // TCP connect to a closed port: the RST is the answer.
    let tcp = ping("tcp");
    assert_eq!(
        (tcp["method"].as_str(), tcp["received"].as_u64()),
        (Some("tcp-connect"), Some(3))
    );
}

#[test]
fn daemon_returns_at_once_and_serves_until_killed() {
    let _cpus = exclusive();
    if !needs(
        "daemon_returns_at_once_and_serves_until_killed",
        &[Need::Tool("iperf3", "iperf3")],
    ) {
        return;
    }
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("r.pid");
    let started = Instant::now();
    let out = Command::new(bin_path())
        .args([
            "-r",
            "client",
            "--daemon",
            "--port",
            &port.to_string(),
            "--idle-timeout",
            "30",
        ])
        .arg("--pid-file")
        .arg(&pid_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "--daemon must not hold the caller"
    );
    assert!(out.status.success());
    let doc = json_of(&out);
    assert_valid(&doc);
    let pid = doc["responder"]["daemon_pid"].as_u64().unwrap() as i32;
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap().trim(),
        pid.to_string()
    );
    wait_port(port);
    let r = iperf3_client(port, &[]);
    assert!(
        r["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap()
            > 1e8
    );
    // SAFETY: kill(2) on the daemon we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    for _ in 0..100 {
        if !pid_file.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !pid_file.exists(),
        "the daemon removes its pid file when it ends"
    );
}

#[test]
fn a_port_already_served_by_iperf3_is_fine() {
    if !needs(
        "a_port_already_served_by_iperf3_is_fine",
        &[Need::Tool("iperf3", "iperf3")],
    ) {
        return;
    }
    let port = free_port();
    let _server = StockIperf3Server::start(port);
    let out = run(&[
        "-r",
        "client",
        "--port",
        &port.to_string(),
        "--idle-timeout",
        "5",
    ]);
    assert_eq!(Some(out.code), Some(0), "{}", out.stderr);
    let doc = out.json();
    assert_valid(&doc);
    assert!(
        doc["responder"]["note"]
            .as_str()
            .unwrap()
            .contains("already served by a working iperf3 server")
    );
}

#[test]
fn a_port_held_by_something_else_is_an_error_that_says_what_to_do() {
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = run(&["-r", "client", "--port", &port.to_string()]);
    assert_eq!(Some(out.code), Some(1));
    let doc = out.json();
    assert_valid(&doc);
    assert!(
        doc["responder"]["ended_by"]
            .as_str()
            .unwrap()
            .contains("--port")
    );
}

#[test]
fn idle_timeout_ends_the_client_role_with_its_document() {
    let port = free_port();
    let started = Instant::now();
    let out = run(&[
        "-r",
        "client",
        "--port",
        &port.to_string(),
        "--idle-timeout",
        "0.5",
    ]);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(Some(out.code), Some(0));
    let doc = out.json();
    assert_valid(&doc);
    assert!(
        doc["responder"]["ended_by"]
            .as_str()
            .unwrap()
            .starts_with("idle timeout")
    );
    assert_eq!(doc["health_check"]["role"], "client");
}

#[test]
fn sigint_during_a_bandwidth_test_keeps_what_was_measured() {
    let _cpus = exclusive();
    let port = free_port().to_string();
    let child = Command::new(bin_path())
        .args([
            "-r",
            "server",
            "-c",
            "localhost",
            "--only",
            "network",
            "--iperf-time",
            "30",
            "--ping-count",
            "1",
        ])
        .args(["--port", &port])
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let sent = Instant::now();
    let (code, doc) = stop(child, libc::SIGINT);
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(code, 130);
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["sections"]["network"], "interrupted");
    let b = &doc["iperf3 bandwidth"][0];
    assert_eq!(b["interrupted"], true, "{b}");
    assert!(
        b["bandwidth"].as_f64().unwrap() > 0.0,
        "the shortened test still has a figure: {b}"
    );
}

#[test]
fn all_clients_at_once_share_one_window_and_never_beat_the_link() {
    let _cpus = exclusive();
    let Some(mut pair) =
        NetPair::new("all_clients_at_once_share_one_window_and_never_beat_the_link")
    else {
        return;
    };
    // Two clients behind one 200 Mbit/s egress: whatever their tests' start times, the sum
    // over a common window cannot exceed the link.
    const ADDR_C: &str = "10.0.0.3";
    let status = pair
        .command(Side::B, "ip")
        .args(["addr", "add", &format!("{ADDR_C}/24"), "dev", "hcb"])
        .status()
        .unwrap();
    assert!(status.success());
    pair.shape(Side::A, "200mbit");
    for addr in [ADDR_B, ADDR_C] {
        pair.spawn(
            Side::B,
            &bin_str(),
            &["-r", "client", "--bind", addr, "--idle-timeout", "60"],
        );
    }
    pair.wait_listening(Side::B, 5201);
    std::thread::sleep(Duration::from_millis(200));
    let out = pair
        .command(Side::A, &bin_str())
        .args([
            "-r",
            "server",
            "-c",
            &format!("{ADDR_B},{ADDR_C}"),
            "--only",
            "network",
            "--profile",
            "quick",
            "--iperf-time",
            "4",
            "--no-reverse",
        ])
        .output()
        .unwrap();
    let doc = json_of(&out);
    assert_valid(&doc);
    let agg = &doc["network_aggregate"];
    let sum = agg["bandwidth"]
        .as_f64()
        .unwrap_or_else(|| panic!("no aggregate: {agg}"));
    let window = agg["window_seconds"].as_f64().unwrap();
    assert!(window > 2.0 && window <= 3.6, "{agg}");
    assert!(sum > 0.12 && sum <= 0.2 * 1.03, "{agg}");
    let shares: Vec<f64> = agg["per_client_gbps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(shares.len(), 2);
    assert!((shares.iter().sum::<f64>() - sum).abs() < 0.002, "{agg}");
}
