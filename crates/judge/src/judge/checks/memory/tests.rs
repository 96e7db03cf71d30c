//! Tests of `judge/checks/memory.rs`.

use super::*;
use crate::wire::memory::{PageSizes, Repeats};
use std::collections::BTreeMap;

fn part() -> MemoryPart {
    let mut fr = BTreeMap::new();
    let row =
        |a: f64, b: f64| BTreeMap::from([("Node-0".to_string(), a), ("Node-1".to_string(), b)]);
    fr.insert("Node-0".to_string(), row(100.0, 180.0));
    fr.insert("Node-1".to_string(), row(185.0, 102.0));
    MemoryPart {
        idle_latency: crate::wire::memory::IdleLatency {
            avg_latency: None,
            patterns: BTreeMap::from([("FullRandom".to_string(), fr)]),
        },
        delay_bandwidth_latency: BTreeMap::new(),
        delay_latency_bandwidth: BTreeMap::new(),
        peak_bandwidth_mb_s: BTreeMap::new(),
        peak_read_simd_mb_s: None,
        simd_kernel: None,
        simd_kernel_trial_mb_s: BTreeMap::new(),
        memcpy_medium_mb_s: None,
        memcpy_large_mb_s: None,
        cache_latency_ns: vec![
            (16 << 10, 1.5),
            (24 << 10, 1.5),
            (96 << 10, 4.0),
            (1 << 20, 5.0),
            (4 << 20, 5.2),
        ],
        cache_sizes_bytes: BTreeMap::from([
            ("L1d".to_string(), 48 << 10),
            ("L2".to_string(), 2 << 20),
        ]),
        page_size: PageSizes {
            idle_latency: BTreeMap::new(),
            delay_latency_bandwidth: BTreeMap::new(),
            cache_latency_ns: None,
        },
        repeats: Repeats {
            count: 3,
            idle_latency: BTreeMap::new(),
            peak_bandwidth_mb_s: BTreeMap::from([
                (
                    "all reads".to_string(),
                    MinAvgMax {
                        min: 100.0,
                        avg: 105.0,
                        max: 109.0,
                    },
                ),
                (
                    "1:1 read/write".to_string(),
                    MinAvgMax {
                        min: 100.0,
                        avg: 110.0,
                        max: 125.0,
                    },
                ),
            ]),
            peak_read_simd_mb_s: None,
            memcpy_medium_mb_s: None,
            memcpy_large_mb_s: None,
        },
        region_mib: 512,
        thread_region_mib: 128,
        threads: 2,
        loaded_chain_mib: 0,
        llc_bytes: None,
        llc_total_bytes: None,
        errors: Vec::new(),
        notes: Vec::new(),
    }
}

/// Two channels of DDR5-4800: 73,242 MiB/s.
fn two_channels_ddr5_4800() -> crate::wire::system::DramInfo {
    crate::wire::system::DramInfo {
        dimms: 2,
        channels: 2,
        kind: None,
        speed_mts: 4800,
        data_width_bits: 64,
        theoretical_peak_mb_s: 73_242.0,
    }
}

#[test]
fn peak_is_judged_against_the_dimms() {
    let mut m = part();
    m.peak_bandwidth_mb_s = BTreeMap::from([("all reads".to_string(), 30_000.0)]);
    m.peak_read_simd_mb_s = Some(40_000.0);
    let t = Thresholds::default();
    assert_eq!(
        peak_vs_theoretical(&m, None, &t).unwrap().status,
        Status::Skip
    );
    let mut s = SystemPart::from(&crate::system::collect(
        &crate::system::fake::two_socket_384(),
        None,
    ));
    s.dram_error = Some("dmidecode is not installed".into());
    let c = peak_vs_theoretical(&m, Some(&s), &t).unwrap();
    assert!(c.message.contains("dmidecode is not installed"));
    s.dram = Some(two_channels_ddr5_4800());
    let c = peak_vs_theoretical(&m, Some(&s), &t).unwrap();
    assert_eq!(
        (c.status, c.value),
        (Status::Warn, Some(54.6)),
        "the best figure (vector reads) counts"
    );
    m.peak_read_simd_mb_s = Some(50_000.0);
    assert_eq!(
        peak_vs_theoretical(&m, Some(&s), &t).unwrap().status,
        Status::Pass
    );
    m.peak_read_simd_mb_s = Some(80_000.0);
    let c = peak_vs_theoretical(&m, Some(&s), &t).unwrap();
    assert_eq!(
        (c.status, c.value),
        (Status::Skip, None),
        "above the computed peak, the DIMM list is wrong, not the machine fast"
    );
    assert!(c.message.contains("misses channels"), "{}", c.message);
    m.peak_bandwidth_mb_s.clear();
    m.peak_read_simd_mb_s = None;
    assert!(
        peak_vs_theoretical(&m, Some(&s), &t).is_none(),
        "no bandwidth measured: no check"
    );
}

#[test]
fn numa_ratios_cover_the_off_diagonal_and_fail_above_the_limit() {
    let t = Thresholds::default();
    let c = numa_ratios(&part(), None, &t);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].name, "memory.numa_ratio:Node-0>Node-1");
    assert_eq!((c[0].value, c[0].status), (Some(1.8), Status::Pass));
    assert_eq!(c[1].value, Some(1.81));
    let mut slow = part();
    let row = slow
        .idle_latency
        .patterns
        .get_mut("FullRandom")
        .and_then(|m| m.get_mut("Node-0"))
        .unwrap();
    let local = row["Node-0"];
    row.insert("Node-1".into(), local * 3.5);
    let c = numa_ratios(&slow, None, &t);
    assert_eq!((c[0].status, c[0].limit), (Status::Fail, Some(3.0)));
    assert!(c[0].message.contains("memory channel"), "{}", c[0].message);
    // Node 1 without CPUs (CXL): its own, higher limit.
    let mut sys = SystemPart::from(&crate::system::collect(
        &crate::system::fake::two_socket_384(),
        None,
    ));
    sys.numa_nodes[1].cpu_count = 0;
    let c = numa_ratios(&slow, Some(&sys), &t);
    assert_eq!((c[0].status, c[0].limit), (Status::Pass, Some(4.0)));
}

#[test]
fn full_random_chains_off_hugetlb_pages_warn() {
    let mut m = part();
    assert!(
        full_random_pages(&m).is_empty(),
        "no FullRandom chain, no check"
    );
    m.page_size
        .idle_latency
        .insert("FullRandom".into(), "1G".into());
    m.page_size
        .delay_latency_bandwidth
        .insert("FullRandom".into(), "2M (THP)".into());
    let c = full_random_pages(&m);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].status, Status::Pass);
    assert_eq!(c[1].status, Status::Warn);
    assert!(
        c[1].message.contains("--memory-reserve-hugepages"),
        "{}",
        c[1].message
    );
    for page in ["4K", "mixed", "4K+2M (THP 40%)"] {
        m.page_size
            .idle_latency
            .insert("FullRandom".into(), page.into());
        assert_eq!(full_random_pages(&m)[0].status, Status::Warn, "{page}");
    }
}

#[test]
fn spreads_over_ten_percent_warn() {
    let c = repeat_spreads(&part(), &Thresholds::default());
    let by = |n: &str| {
        c.iter()
            .find(|c| c.name.to_string().ends_with(n))
            .unwrap()
            .status
    };
    assert_eq!(by("peak all reads"), Status::Pass);
    assert_eq!(by("peak 1:1 read/write"), Status::Warn);
}

#[test]
fn cache_steps_compare_both_sides_of_each_size() {
    let c = cache_steps(&part(), &Thresholds::default());
    let l1 = c
        .iter()
        .find(|c| c.name == "memory.cache_step:L1d")
        .unwrap();
    assert_eq!((l1.status, l1.value), (Status::Pass, Some(2.67)));
    let l2 = c.iter().find(|c| c.name == "memory.cache_step:L2").unwrap();
    assert_eq!(l2.status, Status::Warn, "{}", l2.message);
}

/// Each rule's figure exactly at its limit is still fine: the peak at 100 % of the DIMMs'
/// (judged, not "the DIMM list misses channels"), a remote/local ratio at the limit, a
/// repeat spread at the limit.
#[test]
fn a_figure_at_its_limit_passes() {
    let t = Thresholds::default();
    let mut m = part();
    m.peak_read_simd_mb_s = Some(73_242.0);
    let mut s = SystemPart::from(&crate::system::collect(
        &crate::system::fake::two_socket_384(),
        None,
    ));
    s.dram = Some(two_channels_ddr5_4800());
    let c = peak_vs_theoretical(&m, Some(&s), &t).unwrap();
    assert_eq!(
        (c.status, c.value),
        (Status::Pass, Some(100.0)),
        "{}",
        c.message
    );

    let row = m
        .idle_latency
        .patterns
        .get_mut("FullRandom")
        .and_then(|m| m.get_mut("Node-0"))
        .unwrap();
    row.insert("Node-0".into(), 100.0);
    row.insert("Node-1".into(), 100.0 * t.numa_ratio);
    let c = numa_ratios(&m, None, &t);
    assert_eq!(
        (c[0].status, c[0].value),
        (Status::Pass, Some(t.numa_ratio))
    );

    let at = MinAvgMax {
        min: 100.0,
        avg: 105.0,
        max: 100.0 * t.repeat_spread,
    };
    let c = spread_check("peak all reads", &at, "MiB/s", &t).unwrap();
    assert_eq!((c.status, c.value), (Status::Pass, Some(t.repeat_spread)));
}

/// Spreads are judged from two repeats on; one run has none.
#[test]
fn spreads_need_two_repeats() {
    let t = Thresholds::default();
    let mut m = part();
    m.repeats.count = 2;
    assert_eq!(repeat_spreads(&m, &t).len(), 2);
    m.repeats.count = 1;
    assert!(repeat_spreads(&m, &t).is_empty());
}

/// Each working set against the cache it must outgrow: the idle chain and the loaded chain
/// against one instance of the last-level cache, the bandwidth tests' regions (all threads)
/// against all of it; only the tests that ran are judged.
#[test]
fn working_sets_are_measured_against_the_cache_they_must_outgrow() {
    let t = Thresholds::default();
    assert_eq!(t.working_set_factor, 4.0);
    let mut m = part();
    assert!(working_sets(&m, &t).is_empty(), "no cache size known");
    m.llc_bytes = Some(32 << 20);
    m.llc_total_bytes = Some(64 << 20);
    m.threads = 3;
    let names = |c: &[Check]| c.iter().map(|c| c.name.to_string()).collect::<Vec<_>>();
    // The idle chain only: 512 MiB against a 32 MiB instance.
    let c = working_sets(&m, &t);
    assert_eq!(names(&c), ["memory.working_set:idle_latency"]);
    assert_eq!((c[0].status, c[0].value), (Status::Pass, Some(16.0)));
    assert!(
        c[0].message
            .contains("used 512 MiB, 16x one instance of the 32 MiB last-level cache"),
        "{}",
        c[0].message
    );
    // Bandwidth, from either figure: 128 MiB x 3 threads against all 64 MiB.
    for peak in [true, false] {
        let mut b = m.clone();
        if peak {
            b.peak_bandwidth_mb_s = BTreeMap::from([("all reads".to_string(), 1.0)]);
        } else {
            b.memcpy_large_mb_s = Some(1.0);
        }
        let c = working_sets(&b, &t);
        let bw = c
            .iter()
            .find(|c| c.name == "memory.working_set:bandwidth")
            .unwrap_or_else(|| panic!("peak {peak}: {:?}", names(&c)));
        assert_eq!((bw.status, bw.value), (Status::Pass, Some(6.0)));
        assert!(
            bw.message.contains("used 384 MiB, 6x all of the 64 MiB"),
            "{}",
            bw.message
        );
    }
    // The loaded chain: only with a sweep and a chain of its own; 64 MiB is 2x, under 4x.
    let mut l = m.clone();
    l.delay_latency_bandwidth = BTreeMap::from([("FullRandom".to_string(), Vec::new())]);
    assert_eq!(
        names(&working_sets(&l, &t)).len(),
        1,
        "a sweep without its chain size"
    );
    l.loaded_chain_mib = 64;
    let c = working_sets(&l, &t);
    let ll = c
        .iter()
        .find(|c| c.name == "memory.working_set:loaded_latency")
        .unwrap();
    assert_eq!((ll.status, ll.value), (Status::Warn, Some(2.0)));
    assert!(
        ll.message.contains(
            "used 64 MiB, only 2x one instance of the 32 MiB last-level cache (under 4x)"
        ) && ll.message.contains("too small for 128 MiB"),
        "{}",
        ll.message
    );
    l.delay_latency_bandwidth.clear();
    assert_eq!(
        names(&working_sets(&l, &t)).len(),
        1,
        "a chain size without its sweep"
    );
}

/// The step is taken from the smallest working set at least twice the cache, not just above it.
#[test]
fn a_cache_step_is_read_at_twice_the_cache() {
    let mut m = part();
    m.cache_latency_ns.insert(2, (64 << 10, 1.6));
    let c = cache_steps(&m, &Thresholds::default());
    let l1 = c
        .iter()
        .find(|c| c.name == "memory.cache_step:L1d")
        .unwrap();
    assert_eq!(
        (l1.status, l1.value),
        (Status::Pass, Some(2.67)),
        "{}",
        l1.message
    );
    assert!(l1.message.contains("4 ns at 96 KiB"), "{}", l1.message);
}
