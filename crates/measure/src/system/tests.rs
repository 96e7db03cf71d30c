//! Tests of `mod.rs`.

use super::*;

#[test]
fn collects_the_384_cpu_fixture() {
    let s = collect(&fake::two_socket_384(), None);
    assert_eq!(s.logical_cpus, 384);
    assert_eq!(s.usable_cpus, 384);
    assert_eq!(
        s.cpu_model.as_deref(),
        Some("AMD EPYC 9654 96-Core Processor")
    );
    assert_eq!(s.hostname.as_deref(), Some("fake-384"));
    assert_eq!(s.os_id.as_deref(), Some("centos"));
    assert_eq!(s.os_name.as_deref(), Some("CentOS Stream 9"));
    assert_eq!(s.mem_total_kib, Some(2 * 792_723_456));
    assert_eq!(s.swap_used_kib, Some(0));
    assert_eq!(s.thp.as_deref(), Some("always"));
    assert_eq!(s.thp_defrag.as_deref(), Some("madvise"));
    assert_eq!(s.governor.as_deref(), Some("performance"));
    assert_eq!(s.numa_balancing, Some(true));
    assert_eq!(s.nic_links.len(), 1);
    assert_eq!(s.nic_links[0].speed_mbps, Some(100_000));
    assert_eq!(s.pcie_links_degraded.len(), 2);
    assert_eq!(s.cpu_times.unwrap().user, 1000);
}

#[test]
fn cache_summary_matches_dcperf_readme_example() {
    // DCPerf's README shows this 384-CPU machine's lscpu metadata.
    let s = collect(&fake::two_socket_384(), None);
    let m = s.lscpu_cache_summary();
    assert_eq!(m["L1d cache"], "6 MiB (192 instances)");
    assert_eq!(m["L1i cache"], "6 MiB (192 instances)");
    assert_eq!(m["L2 cache"], "192 MiB (192 instances)");
    assert_eq!(m["L3 cache"], "768 MiB (24 instances)");
}

#[test]
fn mixed_governors_are_listed() {
    let mut m = BTreeMap::new();
    m.insert("performance".to_string(), 380);
    m.insert("powersave".to_string(), 4);
    assert_eq!(
        summarize_governors(&m).as_deref(),
        Some("performance(380), powersave(4)")
    );
    assert_eq!(summarize_governors(&BTreeMap::new()), None);
}

#[test]
fn empty_tree_gives_neutral_values() {
    let s = collect(&source::FakeFs::new(), Some(2));
    assert_eq!(s.logical_cpus, 0);
    assert_eq!(s.usable_cpus, 2);
    assert!(s.cpu_model.is_none());
    assert!(s.caches.is_empty());
    assert!(s.governor.is_none());
}

#[test]
fn run_deltas_count_new_throttle_events_and_steal() {
    let start = collect(&fake::two_socket_384(), None);
    let mut end = start.clone();
    end.thermal_throttle = Some(devices::ThrottleCounts {
        core_events: 5,
        package_events: 2,
    });
    let mut start_t = start.clone();
    start_t.thermal_throttle = Some(devices::ThrottleCounts {
        core_events: 1,
        package_events: 2,
    });
    let mut times = end.cpu_times.unwrap();
    times.idle += 900;
    times.steal += 100;
    end.cpu_times = Some(times);
    let d = run_deltas(&start_t, &end, 10.0);
    assert_eq!(d.throttle_events, Some(4));
    assert_eq!(d.steal_pct, Some(10.0));
    assert_eq!(run_deltas(&start, &start, 1.0).throttle_events, None);
}

#[test]
fn host_collection_works_here() {
    let s = collect_host();
    assert!(s.logical_cpus >= 1);
    assert!(s.mem_total_kib.is_some());
}
