//! DCPerf's `-r client` (and `health_check serve`): answers a server's network tests with our
//! iperf3 responder until it has been idle for `--idle-timeout` or is signalled, then prints its
//! own document (what it served) and exits 0. `--daemon` detaches at once, so benchpress (or ssh)
//! is never left waiting on our stdout. When the port is already served by a working iperf3
//! server, that server is just as good: we say so and exit 0.

use super::pidfile::{self, PidFile};
use super::{Exit, Outcome, RunInfoBuilder};
use crate::config::{Config, ResponderConfig};
use crate::net::iperf3::protocol::{COOKIE_LEN, State, make_cookie, random_bytes};
use crate::net::iperf3::server::{
    Ended, Responder, ServeLog, ServedTest, ServerConfig, total_bytes,
};
use crate::os;
use crate::wire::document::Document;
use crate::wire::responder::{ResponderReport, ServedTestEntry};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// Runs the client role and returns the exit code.
pub fn run(config: &Config, options_from_env: Option<String>) -> Exit {
    let started = RunInfoBuilder::start();
    let rc = &config.responder;
    let responder = match Responder::bind(&ServerConfig {
        bind: rc.bind,
        port: rc.port,
    }) {
        Ok(r) => r.on_test(log_test),
        Err(e) => return not_started(config, e, started, options_from_env),
    };
    let listening = responder.local_addr().map(|a| a.to_string()).ok();
    let mut report = empty_report(listening.clone());
    let mut daemon_pid_file = None;
    if rc.daemon {
        // Made before the fork: a pid file we may not write stops the start, instead of leaving
        // a daemon nobody can find.
        let pid_file = match pidfile_for(rc) {
            Ok(f) => f,
            Err(e) => {
                report.ended_by = format!("not started: {e}");
                eprintln!("health_check: error: {e}");
                finish(config, report, started, options_from_env);
                return Exit::NotWritten;
            }
        };
        let path = pid_file.path().to_path_buf();
        match os::daemonize() {
            Ok(Some(pid)) => {
                report.ended_by = "daemonized".into();
                report.daemon_pid = Some(pid);
                report.pid_file = Some(path.display().to_string());
                if let Err(e) = pid_file.write_pid(pid) {
                    report.note = Some(format!("{e}; stop it with 'kill {pid}'"));
                }
                eprintln!(
                    "health_check: responder detached as pid {pid}, listening on {} (pid file '{}')",
                    listening.as_deref().unwrap_or("?"),
                    path.display()
                );
                return finish(config, report, started, options_from_env);
            }
            Ok(None) => {
                // The child: the parent writes the pid; this copy of the descriptor stays open
                // for the daemon's life, holding the file's lock.
                daemon_pid_file = Some((path, pid_file));
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                report.ended_by = format!("could not detach: {e}");
                finish(config, report, started, options_from_env);
                return Exit::NotWritten;
            }
        }
    }
    eprintln!(
        "health_check: serving iperf3 tests on {} ({}); Ctrl-C ends it",
        listening.as_deref().unwrap_or("?"),
        rc.idle_timeout.map_or_else(
            || "until signalled".to_string(),
            |t| format!("stops after {} s without a test", t.as_secs_f64())
        )
    );
    let (ended, log) = responder.serve(&|| os::interrupted().is_some(), rc.idle_timeout);
    if let Some((path, _held)) = &daemon_pid_file {
        pidfile::remove_if_ours(path, std::process::id());
    }
    report = fill_report(report, &log);
    report.ended_by = match ended {
        Ended::Idle => format!(
            "idle timeout ({} s without a test)",
            rc.idle_timeout.map_or(0.0, |t| t.as_secs_f64())
        ),
        Ended::Stopped => os::interrupted()
            .map_or("stopped", |i| i.name())
            .to_string(),
    };
    finish(config, report, started, options_from_env)
}

fn log_test(t: &ServedTest) {
    eprintln!(
        "health_check: served {} ({}, {} streams, {:.1} s, {} bytes in, {} bytes out): {}",
        t.peer,
        t.mode.name(),
        t.streams,
        t.seconds,
        t.bytes_received,
        t.bytes_sent,
        t.outcome
    );
}

fn empty_report(listening: Option<String>) -> ResponderReport {
    ResponderReport {
        listening,
        ..ResponderReport::default()
    }
}

fn fill_report(mut r: ResponderReport, log: &ServeLog) -> ResponderReport {
    let (received, sent) = total_bytes(log);
    r.tests_served = log.tests.len();
    r.bytes_received = received;
    r.bytes_sent = sent;
    r.refused_busy = log.refused_busy;
    r.dropped = log.dropped;
    r.tests = log.tests.iter().map(ServedTestEntry::from).collect();
    r
}

/// The port could not be bound: fine if a working iperf3 server holds it, an error otherwise.
fn not_started(
    config: &Config,
    e: std::io::Error,
    started: RunInfoBuilder,
    env: Option<String>,
) -> Exit {
    let rc = &config.responder;
    let mut report = empty_report(None);
    if e.kind() == std::io::ErrorKind::AddrInUse {
        if let Some(addr) = working_iperf3_server(rc) {
            report.ended_by = "port already served".into();
            report.listening = Some(addr.to_string());
            report.note = Some(format!(
                "port {} is already served by a working iperf3 server at {addr}; it answers the \
                 server role's tests just as well, so this responder did not start",
                rc.port
            ));
            eprintln!(
                "health_check: {}",
                report.note.as_deref().unwrap_or_default()
            );
            return finish(config, report, started, env);
        }
        report.ended_by = format!(
            "port {} is in use by a program that does not answer as an iperf3 server; stop it or \
             choose another port with --port (and the same --port on the server role)",
            rc.port
        );
    } else {
        report.ended_by = format!("cannot listen on port {}: {e}", rc.port);
    }
    eprintln!("health_check: error: {}", report.ended_by);
    finish(config, report, started, env);
    Exit::NotWritten
}

/// Asks whoever holds the port whether it speaks iperf3: after our cookie, an iperf3 server
/// answers PARAM_EXCHANGE (idle) or ACCESS_DENIED (busy).
fn working_iperf3_server(rc: &ResponderConfig) -> Option<SocketAddr> {
    let candidates: Vec<IpAddr> = match rc.bind {
        Some(ip) if !ip.is_unspecified() => vec![ip],
        _ => vec![
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ],
    };
    candidates
        .into_iter()
        .map(|ip| SocketAddr::new(ip, rc.port))
        .find(|addr| {
            let Ok(mut s) = TcpStream::connect_timeout(addr, Duration::from_secs(1)) else {
                return false;
            };
            let cookie: [u8; COOKIE_LEN] = make_cookie(&random_bytes());
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut b = [0u8; 1];
            s.write_all(&cookie).is_ok()
                && s.read_exact(&mut b).is_ok()
                && (b[0] == State::ParamExchange.byte() || b[0] == State::AccessDenied.byte())
        })
}

/// The pid file `--daemon` records itself in: `--pid-file`, or the private runtime directory's.
fn pidfile_for(rc: &ResponderConfig) -> Result<PidFile, pidfile::PidFileError> {
    match &rc.pid_file {
        Some(path) => PidFile::create(path),
        None => {
            pidfile::ensure_private_dir(&pidfile::runtime_dir())?;
            PidFile::create(&pidfile::default_path(rc.port))
        }
    }
}

/// Prints the client role's document.
fn finish(
    config: &Config,
    report: ResponderReport,
    started: RunInfoBuilder,
    options_from_env: Option<String>,
) -> Exit {
    let system = crate::system::collect_host();
    let doc = Document {
        responder: Some(report),
        health_check: started.finish(config, Vec::new(), options_from_env, None, &system),
        ..Document::default()
    };
    let outcome = Outcome {
        doc,
        system,
        interrupted: None,
    };
    super::deliver(config, &outcome)
}
