//! Our jobs/ files must hold DCPerf's exact health_check entries (`docs/benchpress.md`): the
//! binary is driven by DCPerf's own YAML, so ours must not drift from it.

use serde_yaml::Value;
use std::path::PathBuf;

fn load(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("jobs")
        .join(name);
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn job_entry_is_dcperfs() {
    let expected: Value = serde_yaml::from_str(
        "- benchmark: health_check\n  name: health_check\n  description: Default run for health_check\n  \
         roles:\n    server:\n      args: ['-r server', '-c {clients}']\n      vars: ['clients']\n    \
         client:\n      args: ['-r client']\n",
    )
    .unwrap();
    assert_eq!(load("health_check.yml"), expected);
}

#[test]
fn benchmark_entry_is_dcperfs() {
    let expected: Value = serde_yaml::from_str(
        "health_check:\n  parser: health_check\n  \
         install_script: ./packages/health_check/install_health_check.sh\n  \
         cleanup_script: ./packages/health_check/cleanup_health_check.sh\n  \
         path: ./benchmarks/health_check/run.sh\n  metrics: []\n",
    )
    .unwrap();
    assert_eq!(load("benchmarks.yml"), expected);
}
