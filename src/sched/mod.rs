//! The scheduling section: DCPerf's multi-threaded nanosleep benchmark and the CPU-time split
//! from /proc/stat that goes with it.

pub mod cpustat;
pub mod sleepbench;
