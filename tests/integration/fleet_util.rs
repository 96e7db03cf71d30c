//! Helpers of the readers' tests: fixtures, and `compare` run and checked against its schema.

use crate::util::run;
use health_check::fleet::report::FleetReport;
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
    V.get_or_init(|| {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("benchpress/fleet_report.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
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
