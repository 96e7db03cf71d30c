//! Helpers of the readers' tests: fixtures, and `compare` run and checked against its schema.

use crate::util::{run, schema_validator};
use health_check::wire::fleet::FleetReport;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn fleet_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| schema_validator("fleet_report.schema.json"))
}

/// Runs compare; returns the exit code, the report read back through its wire types, stderr.
pub fn compare(args: &[&str]) -> (i32, FleetReport, String) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    let r = run(&all);
    let value: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("no fleet report ({e}): {}\n{}", r.stdout, r.stderr));
    let errors: Vec<String> = fleet_validator()
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the fleet report violates its schema: {errors:#?}"
    );
    (r.code, serde_json::from_value(value).unwrap(), r.stderr)
}
