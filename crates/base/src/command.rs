//! External commands with a deadline (`scontrol`, `sinfo`, `dmidecode`): the output is read while
//! the command runs, so an answer larger than a pipe's buffer (`sinfo` of 10,000 nodes) never
//! blocks it; the command runs in its own process group, so at the deadline the group is killed,
//! grandchildren that hold its output included; and bytes are kept as bytes, decoded only by the
//! caller (one odd byte must not blank an answer). Unix only: the fallback says so.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

/// What a command printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Its standard output, as bytes.
    pub stdout: Vec<u8>,
    /// Its standard error, as bytes.
    pub stderr: Vec<u8>,
    /// Its exit code, or 128 + the signal's number when a signal ended it (as a shell says).
    pub code: Option<i32>,
    /// Whether it printed more than was kept ([`run_capped`]): the rest was read and dropped.
    pub truncated: bool,
}

impl Output {
    /// Whether it exited 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Standard output as text, an undecodable byte shown as U+FFFD.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text, trimmed.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_string()
    }
}

/// Why a command gave no output.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// It could not be started (missing, not executable).
    #[error("cannot run '{shown}': {cause}")]
    Spawn {
        /// The command line, for people.
        shown: String,
        /// Why.
        cause: std::io::Error,
    },
    /// It did not end within its deadline; its process group was killed.
    #[error("'{shown}' did not answer within {} s", .limit.as_secs_f64())]
    Timeout {
        /// The command line, for people.
        shown: String,
        /// The deadline it had.
        limit: Duration,
    },
}

/// Runs `program` with `args` (no shell, stdin from /dev/null) and returns what it printed, or
/// why not: it could not start, or it ran past `limit` (then it and everything it started in its
/// process group are killed).
pub fn run<A: AsRef<OsStr>>(
    program: &Path,
    args: &[A],
    limit: Duration,
) -> Result<Output, CommandError> {
    run_capped(program, args, limit, usize::MAX)
}

/// [`run`], keeping at most `cap` bytes of each of standard output and error (the rest is read
/// and dropped, so the command never blocks on a full pipe, and `truncated` says so).
pub fn run_capped<A: AsRef<OsStr>>(
    program: &Path,
    args: &[A],
    limit: Duration,
    cap: usize,
) -> Result<Output, CommandError> {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let shown = format!("{} {}", program.display(), words.join(" "))
        .trim()
        .to_string();
    imp::run(program, args, limit, cap).map_err(|e| match e {
        imp::Failure::Spawn(cause) => CommandError::Spawn { shown, cause },
        imp::Failure::Timeout => CommandError::Timeout { shown, limit },
    })
}

#[cfg(unix)]
mod imp {
    use super::Output;
    use std::ffi::OsStr;
    use std::io::Read;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    pub enum Failure {
        Spawn(std::io::Error),
        Timeout,
    }

    /// Reads a pipe to its end on a thread, keeping its first `cap` bytes; they arrive on the
    /// channel with whether more came.
    fn drain(mut pipe: impl Read + Send + 'static, cap: usize) -> mpsc::Receiver<(Vec<u8>, bool)> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut chunk = [0u8; 64 * 1024];
            let mut cut = false;
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = cap.saturating_sub(kept.len());
                        kept.extend_from_slice(&chunk[..n.min(room)]);
                        cut |= n > room;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send((kept, cut));
        });
        rx
    }

    pub fn run<A: AsRef<OsStr>>(
        program: &Path,
        args: &[A],
        limit: Duration,
        cap: usize,
    ) -> Result<Output, Failure> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(Failure::Spawn)?;
        let group = child.id() as i32;
        let out = child.stdout.take().map(|p| drain(p, cap));
        let err = child.stderr.take().map(|p| drain(p, cap));
        // A limit too far to add to now (`-t 18446744073709551615`) is no limit at all.
        let deadline = Instant::now()
            .checked_add(limit)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400));
        let kill_group = || {
            // SAFETY: kill(2) with a negative pid signals the process group we created for the
            // child; it has no memory-safety preconditions.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        };
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    kill_group();
                    let _ = child.wait();
                    return Err(Failure::Timeout);
                }
            }
        };
        // The command ended; what it left behind in its group (a grandchild holding the pipes)
        // gets what remains of the deadline to finish, then is killed with the group.
        let collect =
            |rx: Option<mpsc::Receiver<(Vec<u8>, bool)>>| -> Result<(Vec<u8>, bool), Failure> {
                let Some(rx) = rx else {
                    return Ok((Vec::new(), false));
                };
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(bytes) => Ok(bytes),
                    Err(_) => {
                        kill_group();
                        Err(Failure::Timeout)
                    }
                }
            };
        let (stdout, cut_out) = collect(out)?;
        let (stderr, cut_err) = collect(err)?;
        Ok(Output {
            stdout,
            stderr,
            code: status.code().or_else(|| status.signal().map(|s| 128 + s)),
            truncated: cut_out || cut_err,
        })
    }
}

#[cfg(not(unix))]
mod imp {
    use super::Output;
    use std::path::Path;
    use std::time::Duration;

    pub enum Failure {
        Spawn(std::io::Error),
        #[allow(dead_code)]
        Timeout,
    }

    pub fn run<A: AsRef<std::ffi::OsStr>>(
        _program: &Path,
        _args: &[A],
        _limit: Duration,
        _cap: usize,
    ) -> Result<Output, Failure> {
        Err(Failure::Spawn(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "running commands with a deadline is supported on Unix only",
        )))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(script: &str, limit: Duration) -> Result<Output, CommandError> {
        run(Path::new("/bin/sh"), &["-c", script], limit)
    }

    #[test]
    fn an_answer_larger_than_a_pipe_is_read_whole() {
        // 1 MiB on stdout and 256 KiB on stderr: both pipes would fill (64 KiB) if read after.
        let out = sh(
            "head -c 1048576 /dev/zero; head -c 262144 /dev/zero >&2",
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(out.success());
        assert_eq!((out.stdout.len(), out.stderr.len()), (1 << 20, 1 << 18));
    }

    #[test]
    fn a_command_that_hangs_is_cut_at_its_deadline_with_its_grandchildren() {
        let started = Instant::now();
        let e = sh("sleep 30", Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, CommandError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("did not answer within 0.3 s"), "{e}");
        // The child exits at once, its grandchild holds stdout open for 30 s.
        let e = sh("sleep 30 & echo started", Duration::from_millis(500)).unwrap_err();
        assert!(matches!(e, CommandError::Timeout { .. }), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn bytes_stay_bytes_and_exit_codes_are_kept() {
        let out = sh(
            "printf 'Reason=caf\\374\\n'; exit 3",
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(out.code, Some(3));
        assert!(!out.success());
        assert_eq!(out.stdout, b"Reason=caf\xfc\n");
        assert_eq!(out.stdout_text(), "Reason=caf\u{fffd}\n");
        match run(
            Path::new("/nonexistent/scontrol"),
            &["ping"],
            Duration::from_secs(1),
        ) {
            Err(e) => {
                assert!(matches!(e, CommandError::Spawn { .. }));
                assert!(e.to_string().contains("/nonexistent/scontrol ping"), "{e}");
            }
            // Under qemu-user (the aarch64 tests) a failed exec is the child's exit 127.
            Ok(out) => assert_eq!(out.code, Some(127)),
        }
    }
}
