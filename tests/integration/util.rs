//! Helpers: run the binary, validate documents against the repo's JSON Schema.

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The built `health_check` binary.
pub fn bin() -> Command {
    let mut cmd = Command::cargo_bin("health_check").unwrap();
    cmd.env_remove("HEALTH_CHECK_OPTS");
    cmd
}

/// Path of the built binary, for std::process users.
pub fn bin_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("health_check")
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

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benchpress/health_check.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
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

/// Serialises the tests that load every CPU (memory, loopback bandwidth, 64-thread storage) with
/// those whose figures or deadlines need the CPUs (the shaped link, Ctrl-C timing): on a 2-CPU
/// machine they would disturb each other.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
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
    eprintln!("skipped {line}");
    false
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
