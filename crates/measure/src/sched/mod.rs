//! The scheduling section: DCPerf's multi-threaded nanosleep benchmark (the CPU-time split from
//! /proc/stat that goes with it is `system::cpustat`).

pub mod sleepbench;
