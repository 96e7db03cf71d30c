//! The memory section end to end: every DCPerf key and ours filled, valid against the schema, and
//! a Ctrl-C mid-section that still gives a document.

use crate::util::{TestCgroup, assert_valid, bin_path, exclusive, run};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every figure of the whole section, DCPerf's keys and ours, in a document of the quick level.
fn assert_every_figure(doc: &serde_json::Value) {
    let m = &doc["memory"];
    for pattern in ["FullRandom", "RandomInChunk"] {
        let ns = m["idle_latency"][pattern]["Node-0"]["Node-0"].as_f64();
        assert!(ns.is_some_and(|v| v > 0.0), "{pattern}: {m}");
        let rows = m["delay_latency_bandwidth"][pattern].as_array().unwrap();
        assert_eq!(rows.len(), 24, "DCPerf's 24 delays");
        assert_eq!(rows[8][0], 104);
        assert!(m["page_size"]["idle_latency"][pattern].is_string());
    }
    for mix in [
        "all reads",
        "3:1 read/write",
        "2:1 read/write",
        "1:1 read/write",
    ] {
        assert!(
            m["peak_bandwidth_mb_s"][mix].as_f64().unwrap() > 0.0,
            "{mix}"
        );
    }
    assert!(m["peak_read_simd_mb_s"].as_f64().unwrap() > 0.0);
    assert!(m["memcpy_medium_mb_s"].as_f64().unwrap() > 0.0);
    assert!(m["memcpy_large_mb_s"].as_f64().unwrap() > 0.0);
    let curve = m["cache_latency_ns"].as_array().unwrap();
    assert_eq!(curve[0][0], 16384);
    assert_eq!(m["repeats"]["count"], 1);
    let names: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("memory.cache_step:L1d")),
        "{names:?}"
    );
}

/// `--threshold memory.working_set_factor=F` sizes the working sets as it judges them: at 0 the
/// chain is the size asked for (a host that backs fresh memory slowly need not touch 4x its
/// cache for a run that is not about memory), at 1 one last-level cache in whole 2 MiB pages.
#[test]
fn the_working_set_threshold_sizes_the_chain() {
    let _cpus = exclusive();
    for (factor, grown) in [("0", false), ("1", true)] {
        let r = run(&[
            "memory",
            "--profile",
            "check",
            "--memory-size",
            "16",
            "--memory-tests",
            "idle",
            "--threshold",
            &format!("memory.working_set_factor={factor}"),
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let doc = r.json();
        let m = &doc["memory"];
        let llc = m["llc_bytes"].as_u64().unwrap_or(0);
        let want = if grown { llc.div_ceil(2 << 20) * 2 } else { 0 };
        assert_eq!(
            m["region_mib"].as_u64(),
            Some(want.max(16)),
            "{factor}: {m}"
        );
    }
}

#[test]
fn repeats_are_reported_as_min_avg_max() {
    let _cpus = exclusive();
    // Two tests are enough to show the repeats (the whole section is the test above's): 12 s
    // instead of 36 here.
    let r = run(&[
        "memory",
        "--profile",
        "quick",
        "--memory-size",
        "16",
        "--memory-tests",
        "idle,peak",
        "--memory-repeats",
        "2",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_valid(&doc);
    // The 16 MiB asked for, grown to 4x one last-level cache in whole 2 MiB pages when that
    // is more (a chain within the cache would time the cache).
    let m = &doc["memory"];
    let llc = m["llc_bytes"].as_u64().unwrap_or(0);
    let beyond_llc_mib = (4 * llc).div_ceil(2 << 20) * 2;
    assert_eq!(
        m["region_mib"].as_u64(),
        Some(beyond_llc_mib.max(16)),
        "{m}"
    );
    let rep = &doc["memory"]["repeats"];
    assert_eq!(rep["count"], 2);
    let s = &rep["idle_latency"]["FullRandom"]["Node-0"]["Node-0"];
    let (min, avg, max) = (
        s["min"].as_f64().unwrap(),
        s["avg"].as_f64().unwrap(),
        s["max"].as_f64().unwrap(),
    );
    assert!(min <= avg && avg <= max);
    assert_eq!(
        doc["memory"]["idle_latency"]["FullRandom"]["Node-0"]["Node-0"]
            .as_f64()
            .unwrap(),
        avg
    );
    assert!(doc["checks"].as_array().unwrap().iter().any(|c| {
        c["name"]
            .as_str()
            .unwrap()
            .starts_with("memory.repeat_spread:")
    }));
}

#[test]
fn bad_memory_values_name_the_flag() {
    for (args, flag) in [
        (vec!["memory", "--memory-size", "0"], "--memory-size"),
        (vec!["memory", "--memory-repeats", "0"], "--memory-repeats"),
        (vec!["memory", "--memory-size", "-5"], "--memory-size"),
        (vec!["memory", "--memory-size", "262145"], "--memory-size"),
    ] {
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}");
        assert!(r.stderr.contains(flag), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn sigint_mid_memory_keeps_what_was_measured() {
    use std::io::BufRead;
    let _cpus = exclusive();
    // The quick level's idle latency, then its peak bandwidth (seconds long: the signal lands
    // in it); the standard level's whole section took 21 s to reach the same point.
    let mut child = Command::new(bin_path())
        .args(["memory", "--profile", "quick", "--memory-size", "16"])
        .args(["--memory-tests", "idle,peak"])
        .env_remove("HEALTH_CHECK_OPTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once idle latency is done: the progress line of the next step says so.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut seen = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("memory: peak bandwidth") {
                let _ = tx.send(());
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        seen
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the memory section reached its peak-bandwidth step");
    let sent = Instant::now();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = reader.join().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    assert_eq!(doc["health_check"]["sections"]["memory"], "interrupted");
    // The idle latency was measured before the signal.
    assert!(
        doc["memory"]["idle_latency"]["RandomInChunk"]["Node-0"]["Node-0"]
            .as_f64()
            .is_some(),
        "{}",
        doc["memory"]
    );
}

#[test]
fn a_cgroup_memory_limit_shrinks_the_regions_instead_of_oom() {
    let _cpus = exclusive();
    let test = "a_cgroup_memory_limit_shrinks_the_regions_instead_of_oom";
    let Some(cgroup) = TestCgroup::memory(test, 600 << 20) else {
        return;
    };
    let out = cgroup
        .command(&[
            "memory",
            "--profile",
            "quick",
            "--memory-size",
            "512",
            "--memory-tests",
            "idle,peak",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&doc);
    let m = &doc["memory"];
    let region = m["region_mib"].as_u64().unwrap();
    assert!(
        (16..=150).contains(&region),
        "a quarter of 600 MiB at most: {region}"
    );
    assert!(m["thread_region_mib"].as_u64().unwrap() <= 150);
    assert!(
        m["notes"].to_string().contains("memory available"),
        "{}",
        m["notes"]
    );
    assert!(
        m["idle_latency"]["FullRandom"]["Node-0"]["Node-0"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(cgroup.limit_hits(), 0, "the run stayed under the limit");
}

/// The whole standard section, and each test alone, inside a cgroup of 256 MiB (cgroup v1 and
/// v2 where the machine has them): a document every time, the limit never hit.
fn fits_256_mib(test: &str) {
    let _cpus = exclusive();
    // Unconfined, the quick level's memory section takes about 340 MiB here (the standard
    // level's, 540 MiB, the same way and three times as long): each run below has to shrink.
    // Each test alone (it may size itself differently when it is the only one), then the whole
    // section as a server run gives it.
    let runs: [&[&str]; 6] = [
        &["memory", "--profile", "quick", "--memory-tests", "idle"],
        &["memory", "--profile", "quick", "--memory-tests", "peak"],
        &["memory", "--profile", "quick", "--memory-tests", "memcpy"],
        &[
            "memory",
            "--profile",
            "quick",
            "--memory-tests",
            "loaded",
            "--memory-size",
            "64",
        ],
        &["memory", "--profile", "quick", "--memory-tests", "curve"],
        &[
            "-r",
            "server",
            "-c",
            "",
            "--only",
            "system,memory",
            "--profile",
            "quick",
        ],
    ];
    for (i, args) in runs.into_iter().enumerate() {
        let whole_section = i == runs.len() - 1;
        let Some(cgroup) = TestCgroup::memory(test, 256 << 20) else {
            // No cgroup to confine it (said above): the whole section, unconfined, still has to
            // fill every figure.
            let r = run(runs[runs.len() - 1]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            let doc = r.json();
            assert_valid(&doc);
            assert_every_figure(&doc);
            return;
        };
        let out = cgroup.command(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?} in 256 MiB: {stderr}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: no document ({e}): {stderr}"));
        assert_valid(&doc);
        assert_eq!(
            doc["health_check"]["sections"]["memory"], "ok",
            "{args:?}: {stderr}"
        );
        assert!(
            doc["memory"]["errors"].is_null(),
            "{args:?}: {}",
            doc["memory"]["errors"]
        );
        assert_eq!(cgroup.limit_hits(), 0, "{args:?} hit the 256 MiB limit");
        // The section's every figure, from the whole section's run (shrunk to fit, as a small
        // container's would be): one run for both, the longest of the memory tests.
        if whole_section {
            assert_every_figure(&doc);
        }
    }
}

/// Each memory test, and the whole section, fits 256 MiB and fills every figure. In the cgroup
/// version this machine mounts the memory controller in (v1 here, v2 on most
/// current distributions); the other version's files are read by the same code in the unit
/// tests of `crates/measure/src/system/cgroup.rs`, on constructed cgroupfs trees.
#[test]
fn the_memory_section_fits_a_256_mib_cgroup() {
    fits_256_mib("the_memory_section_fits_a_256_mib_cgroup");
}
