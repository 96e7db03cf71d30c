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
