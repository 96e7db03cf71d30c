//! Helpers: run the binary, validate documents against the repo's JSON Schema.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The built `health_check` binary.
pub fn bin() -> Command {
    without_our_environment(Command::cargo_bin("health_check").unwrap())
}

/// `cmd` without the variables a developer's shell may set for health_check (options, history).
fn without_our_environment(mut cmd: Command) -> Command {
    cmd.env_remove("HEALTH_CHECK_OPTS")
        .env_remove("HEALTH_CHECK_HISTORY");
    cmd
}

/// Path of the built binary, for std::process users.
pub fn bin_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("health_check")
}

/// Path of the tests' build with fault injection (`examples/health_check_with_faults.rs`): the
/// binary's body plus `HEALTH_CHECK_INJECT_PANIC`/`_HANG`. Built beside the binary by the
/// suite's `cargo test ... --example health_check_with_faults`.
pub fn faulty_bin_path() -> PathBuf {
    let path = bin_path()
        .parent()
        .expect("the binary's directory")
        .join("examples/health_check_with_faults");
    assert!(
        path.is_file(),
        "{} is not built: run the tests with `--example health_check_with_faults` (scripts/test.sh does)",
        path.display()
    );
    path
}

/// [`bin`] for the build with fault injection.
pub fn faulty_bin() -> Command {
    without_our_environment(Command::new(faulty_bin_path()))
}

/// A finished run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as the one JSON document it must be.
    pub fn json(&self) -> Value {
        assert_eq!(
            self.stdout.lines().count(),
            1,
            "stdout must be exactly one line of JSON, got:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

/// Runs the binary with `args` and collects everything.
pub fn run(args: &[&str]) -> Run {
    let out = bin().args(args).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A validator for one of the committed schemas (`benchpress/<file>`).
pub fn schema_validator(file: &str) -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("benchpress")
        .join(file);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| schema_validator("health_check.schema.json"))
}

/// Schema errors of `doc`, as readable lines (empty when valid).
pub fn schema_errors(doc: &Value) -> Vec<String> {
    validator()
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Fails the test with every schema error of `doc`.
pub fn assert_valid(doc: &Value) {
    let errors = schema_errors(doc);
    assert!(
        errors.is_empty(),
        "document violates the schema:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

/// This 2-CPU VM fails DCPerf's absolute limits (calls per thread, busy CPU, 10 Gbit/s): tests
/// about comparison lift them.
pub const VM_LIMITS: [&str; 6] = [
    "--threshold",
    "sleepbench.calls_per_thread=100",
    "--threshold",
    "sleepbench.total_cpu_pct=101",
    "--threshold",
    "network.min_bandwidth_gbps=0.01",
];

/// Lifts every interference limit: for tests of something else (exit codes, the history) that
/// run beside other tests, whose load, or the VM's steal time, would otherwise make their slow
/// figures rightly inconclusive.
pub const NO_INTERFERENCE_LIMITS: [&str; 4] = [
    "--threshold=interference.other_cpu_pct=100",
    "--threshold=interference.steal_pct=100",
    "--threshold=interference.throttled_pct=100",
    "--threshold=interference.thermal_events=1000000",
];

/// Serialises the tests that load every CPU (memory, loopback bandwidth, 64-thread storage) with
/// those whose figures or deadlines need the CPUs (the shaped link, Ctrl-C timing): on a 2-CPU
/// machine they would disturb each other.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serialises the tests that start processes as the test users (uids 12345 and 12346): NHC's
/// user checks judge every process of a non-system user, another test's included.
pub fn local_users() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ends a child started as the leader of its own process group (`process_group(0)`) with every
/// process of its group, and waits until the last is reaped: a grandchild left running, or a
/// zombie not yet reaped, is still a user's process to the next test of the local users.
pub fn end_group(child: &mut std::process::Child) {
    let group = -(child.id() as i32);
    // SAFETY: kill(2) with a negative pid signals that process group only.
    unsafe {
        libc::kill(group, libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    // SAFETY: signal 0 only asks whether the group still has a member.
    while unsafe { libc::kill(group, 0) } == 0 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Set (to anything but `0` or empty) by CI: a test whose prerequisite is missing fails instead of
/// skipping, so CI runs every test or says why not.
pub const REQUIRE_ALL_ENV: &str = "HEALTH_CHECK_TEST_REQUIRE_ALL";

/// Something a test needs from the machine.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// Root (namespaces, `tc`, raw sockets, loop devices, cgroups).
    Root,
    /// A program, and the Debian package that installs it.
    Tool(&'static str, &'static str),
}

fn missing(need: Need) -> Option<String> {
    match need {
        // SAFETY: geteuid has no preconditions and cannot fail.
        Need::Root => (unsafe { libc::geteuid() } != 0).then(|| "root".to_string()),
        Need::Tool(tool, package) => which::which(tool)
            .is_err()
            .then(|| format!("'{tool}' (apt-get install {package})")),
    }
}

/// Whether `test` can run here. When something is missing it prints one line naming it and
/// returns false (the caller returns: the test is skipped), unless [`REQUIRE_ALL_ENV`] is set, in
/// which case the test fails with the same line.
pub fn needs(test: &str, needs: &[Need]) -> bool {
    let missing: Vec<String> = needs.iter().filter_map(|&n| missing(n)).collect();
    if missing.is_empty() {
        return true;
    }
    let line = format!("{test}: needs {}", missing.join(", "));
    let strict = std::env::var(REQUIRE_ALL_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(!strict, "{line} ({REQUIRE_ALL_ENV} is set)");
    skip_line(&line);
    false
}

/// Says why a test is skipped on the terminal itself: the harness captures `eprintln!` and shows
/// it only for failures, so a skip would pass silently.
pub fn skip_line(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped {line}");
}

/// Parses a finished process's stdout as the JSON document, or fails with its stderr.
pub fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON document ({e}); stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The binary's path as a string, for `Command::new` in namespaces.
pub fn bin_str() -> String {
    bin_path().to_string_lossy().into_owned()
}

/// A child cgroup of this process's own, made for one test and removed when dropped: a memory
/// limit, or a CPU quota. cgroup v1 where the controller is mounted there, else v2.
pub struct TestCgroup {
    /// Its directory.
    pub dir: PathBuf,
    /// Whether it is a cgroup v1 hierarchy.
    pub v1: bool,
}

impl TestCgroup {
    /// A cgroup whose memory is limited to `bytes`, in the cgroup version the machine mounts the
    /// controller in; `None` (the test skips, or fails in CI) without root or a memory
    /// controller.
    pub fn memory(test: &str, bytes: u64) -> Option<TestCgroup> {
        let cg = Self::create(test, "memory")?;
        let file = if cg.v1 {
            "memory.limit_in_bytes"
        } else {
            "memory.max"
        };
        cg.write(file, &bytes.to_string())?;
        Some(cg)
    }

    /// A cgroup whose tasks get `percent` % of one CPU (CFS quota).
    #[allow(dead_code)] // tests/fleet_degraded.rs
    pub fn cpu(test: &str, percent: u32) -> Option<TestCgroup> {
        let cg = Self::create(test, "cpu")?;
        let quota = 1000 * percent;
        if cg.v1 {
            cg.write("cpu.cfs_period_us", "100000")?;
            cg.write("cpu.cfs_quota_us", &quota.to_string())?;
        } else {
            cg.write("cpu.max", &format!("{quota} 100000"))?;
        }
        Some(cg)
    }

    fn create(test: &str, controller: &str) -> Option<TestCgroup> {
        if !needs(test, &[Need::Root]) {
            return None;
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let v1_path = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            names
                .split(',')
                .any(|n| n == controller)
                .then(|| path.to_string())
        });
        let (base, v1) = match v1_path {
            Some(p) => (format!("/sys/fs/cgroup/{controller}{p}"), true),
            None => {
                let Some(p) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
                    return unavailable(
                        test,
                        &format!("no cgroup hierarchy has the '{controller}' controller here"),
                    );
                };
                let p = p.to_string();
                let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
                    .into_iter()
                    .find(|r| {
                        std::fs::read_to_string(format!("{r}/cgroup.controllers"))
                            .is_ok_and(|c| c.split_whitespace().any(|n| n == controller))
                    });
                let Some(root) = root else {
                    return unavailable(
                        test,
                        &format!(
                            "no cgroup v2 hierarchy has the '{controller}' controller here (it is \
                             bound to cgroup v1)"
                        ),
                    );
                };
                let base = format!("{root}{p}");
                // v2: the parent must hand the controller down.
                let _ = std::fs::write(
                    format!("{base}/cgroup.subtree_control"),
                    format!("+{controller}"),
                );
                (base, false)
            }
        };
        let dir = Path::new(&base).join(format!("hc-test-{}-{test}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => Some(TestCgroup { dir, v1 }),
            Err(e) => unavailable(test, &format!("cannot make a cgroup under {base}: {e}")),
        }
    }

    fn write(&self, file: &str, value: &str) -> Option<()> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| panic!("cannot write {value} to {}/{file}: {e}", self.dir.display()))
            .ok()
    }

    /// The binary with `args`, started inside this cgroup.
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new("sh");
        cmd.args([
            "-c",
            r#"echo $$ > "$1/cgroup.procs" && shift 2 && exec "$0" "$@""#,
        ])
        .arg(bin_path())
        .arg(&self.dir)
        .arg("--")
        .args(args)
        .env_remove("HEALTH_CHECK_OPTS");
        cmd
    }

    /// Times the memory limit was hit (v1 failcnt; v2 the "max" event count).
    pub fn limit_hits(&self) -> u64 {
        let (file, key) = if self.v1 {
            ("memory.failcnt", None)
        } else {
            ("memory.events", Some("max "))
        };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        let value = match key {
            None => text.trim(),
            Some(k) => text.lines().find_map(|l| l.strip_prefix(k)).unwrap_or("0"),
        };
        value.trim().parse().unwrap_or(u64::MAX)
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // The test's processes have exited; the directory goes once it is empty.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// A prerequisite the machine cannot offer (not one an install would fix): the test skips with
/// one line, or fails with it where [`REQUIRE_ALL_ENV`] is set.
pub fn unavailable<T>(test: &str, why: &str) -> Option<T> {
    let line = format!("{test}: {why}");
    let strict = std::env::var(REQUIRE_ALL_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(!strict, "{line} ({REQUIRE_ALL_ENV} is set)");
    skip_line(&line);
    None
}
