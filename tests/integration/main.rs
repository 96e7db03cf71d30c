//! Integration tests: the real binary, run the way people and benchpress run it.
//!
//! Modules:
//! - `util`: running the binary, the JSON Schema validator.
//! - `cli`: flags, usage errors, exit codes, --output, --envelope, --strict.
//! - `argv`: benchpress's whitespace-split client lists (`docs/benchpress.md`), table-driven.
//! - `json_contract`: every document validates against the schema and reads back into test types.
//! - `fleet`: compare and baseline over every document form and real runs (`fleet_util`: helpers;
//!   runs degraded by real means are in tests/fleet_degraded.rs, alone in its binary).
//! - `fleet_verdicts`: verdicts a fleet can act on, on documents built from real runs (issue 17).
//! - `hostile`: inputs a hostile tester tried (issue 14), each fixed and held here.
//! - `hostile_fleet`: the hostile fleet's attacks (issue 21).
//! - `nhc_hostile`: the NHC layer on odd bytes, a local user racing root, endless inputs
//!   (issue 38).
//! - `interrupt`: SIGINT/SIGTERM mid-run still give a valid document.
//! - `jobs_yaml`: our jobs/ files hold DCPerf's exact entries.
//! - `layers`: every `crate::` import points down the layers of docs/architecture.md.
//! - `memory`: the memory section end to end.
//! - `netns`: two-host test networks in namespaces (helper).
//! - `network`: ping and iperf3 against real peers, hostile peers, the client role (the shaped
//!   1 Gbit/s link is in tests/accuracy.rs, alone in its binary with the other accuracy tests).
//! - `history`: `--history`, error counters between runs, `health_check history`.
//! - `storage`: the storage section's safety rules and figures.
//! - `verdicts`: thresholds, the rule list, system findings, panics and interrupted runs.
//! - `protocol_props`: property tests over the iperf3 control-message decoder.
//! - `slurm_actions`: `health_check slurm` against a stand-in controller (issue 32).
//! - `slurm_scale`: a 10,000-node partition, many nodes failing at once, the cap held (issue 29).
//! - `wrong_action`: a busy machine, a lasting error, a history only its owner steers (issue 32).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod argv;
mod cli;
mod fleet;
mod fleet_util;
mod fleet_verdicts;
mod history;
mod hostile;
mod hostile_fleet;
mod interrupt;
mod jobs_yaml;
mod json_contract;
mod layers;
mod memory;
mod netns;
mod network;
mod nhc;
mod nhc_hostile;
mod protocol_props;
mod slurm_actions;
mod slurm_scale;
mod storage;
mod util;
mod verdicts;
mod wrong_action;
