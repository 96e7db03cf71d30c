//! Tests of `judge/checks/mod.rs`.

use super::*;

#[test]
fn overrides_set_by_name_and_reject_unknown_names() {
    let t = Thresholds::with_overrides(&[
        "sleepbench.calls_per_thread=10000".into(),
        " memory.repeat_spread = 1.2".into(),
    ])
    .unwrap();
    assert_eq!(t.sleep_calls_per_thread, 10_000.0);
    assert_eq!(t.repeat_spread, 1.2);
    assert_eq!(t.sleep_irq_pct, 30.0);
    assert!(
        Thresholds::with_overrides(&["nope=1".into()])
            .unwrap_err()
            .to_string()
            .contains("checks --list")
    );
    assert!(Thresholds::with_overrides(&["sleepbench.irq_pct".into()]).is_err());
    assert!(Thresholds::with_overrides(&["sleepbench.irq_pct=x".into()]).is_err());
    assert!(Thresholds::with_overrides(&["sleepbench.irq_pct=inf".into()]).is_err());
}

/// A real document (tests/fixtures/document.json) with `patch` applied to its JSON.
fn patched(patch: impl Fn(&mut serde_json::Value)) -> Document {
    let mut v: serde_json::Value = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/document.json"
    )))
    .unwrap();
    patch(&mut v);
    serde_json::from_value(v).expect("the patched fixture is still a document")
}

/// The fixture with the figures it fails on this small VM put right, so every rule passes
/// (or has nothing to judge) before a test breaks the one figure it is about.
fn healthy(patch: impl Fn(&mut serde_json::Value)) -> Document {
    patched(|v| {
        v["sleepbench"]["calls_per_second_per_thread"] = serde_json::json!(20_000.0);
        for p in v["memory"]["cache_latency_ns"].as_array_mut().unwrap() {
            if p[0].as_u64().unwrap() < 32 << 20 {
                p[1] = serde_json::json!(p[1].as_f64().unwrap().min(40.0));
            }
        }
        patch(v)
    })
}

fn status_of(checks: &[Check], name: &str) -> Option<Status> {
    checks.iter().find(|c| c.name == name).map(|c| c.status)
}

/// One case per limit: the rule it drives, a setting that shows it, the figure it judges at
/// a good and at a bad value, and the verdicts before and after.
struct Case {
    check: &'static str,
    setup: fn(&mut serde_json::Value),
    figure: fn(&mut serde_json::Value, f64),
    good: f64,
    bad: f64,
    before: Status,
    after: Status,
    judged_by_this_limit: bool,
}

fn case(limit: &str) -> Case {
    use serde_json::json;
    let none: fn(&mut serde_json::Value) = |_| {};
    let peer: fn(&mut serde_json::Value) = |v| {
        v["iperf3 bandwidth"][0]["hostname"] = json!("peer");
        v["iperf3 bandwidth"][0]["address"] = json!("10.0.0.2:5201");
    };
    let c = |check, setup, figure, good, bad, after| Case {
        check,
        setup,
        figure,
        good,
        bad,
        before: Status::Pass,
        after,
        judged_by_this_limit: true,
    };
    match limit {
        "sleepbench.total_cpu_pct" => c(
            "sleepbench.total_cpu",
            none,
            |v, x| v["sleepbench"]["total"] = json!(x),
            10.0,
            75.0,
            Status::Fail,
        ),
        "sleepbench.irq_pct" => c(
            "sleepbench.irq",
            none,
            |v, x| v["sleepbench"]["irq%"] = json!(x),
            1.0,
            45.0,
            Status::Fail,
        ),
        "sleepbench.calls_per_thread" => c(
            "sleepbench.calls_per_thread",
            none,
            |v, x| v["sleepbench"]["calls_per_second_per_thread"] = json!(x),
            20_000.0,
            900.0,
            Status::Fail,
        ),
        "network.ping_loss_pct" => c(
            "network.ping_loss:localhost",
            none,
            |v, x| v["ping"][0]["loss_pct"] = json!(x),
            0.0,
            20.0,
            Status::Fail,
        ),
        "network.ping_rtt_ms" => c(
            "network.ping_rtt:localhost",
            none,
            |v, x| v["ping"][0]["latency"] = json!(x),
            0.05,
            0.9,
            Status::Warn,
        ),
        // Both directions, so that the forward-reverse symmetry holds.
        "network.min_bandwidth_gbps" => c(
            "network.bandwidth:peer",
            peer,
            |v, x| {
                v["iperf3 bandwidth"][0]["bandwidth"] = json!(x);
                v["iperf3 bandwidth"][0]["reverse_gbps"] = json!(x);
            },
            30.0,
            2.0,
            Status::Fail,
        ),
        // 15 Gbit/s passes the small machines' 10 and fails the large machines' 20.
        "network.min_bandwidth_gbps_large" => c(
            "network.bandwidth:peer",
            |v| {
                v["iperf3 bandwidth"][0]["hostname"] = json!("peer");
                v["iperf3 bandwidth"][0]["address"] = json!("10.0.0.2:5201");
                v["iperf3 bandwidth"][0]["bandwidth"] = json!(15.0);
                v["iperf3 bandwidth"][0]["reverse_gbps"] = json!(15.0);
            },
            |v, x| v["system"]["logical_cpus"] = json!(x as u64),
            8.0,
            384.0,
            Status::Fail,
        ),
        "network.link_efficiency_pct" => c(
            "network.link_efficiency:localhost",
            |v| v["iperf3 bandwidth"][0]["link_speed_gbps"] = json!(25.0),
            |v, x| v["iperf3 bandwidth"][0]["link_efficiency_pct"] = json!(x),
            95.0,
            40.0,
            Status::Warn,
        ),
        "network.reverse_asymmetry_pct" => c(
            "network.reverse_symmetry:localhost",
            |v| v["iperf3 bandwidth"][0]["bandwidth"] = json!(10.0),
            |v, x| v["iperf3 bandwidth"][0]["reverse_gbps"] = json!(x),
            9.5,
            4.0,
            Status::Warn,
        ),
        "memory.repeat_spread" => c(
            "memory.repeat_spread:memcpy_large",
            |v| v["memory"]["repeats"]["count"] = json!(3),
            |v, x| {
                v["memory"]["repeats"]["memcpy_large_mb_s"] =
                    json!({"min": x, "avg": 1950.0, "max": 2000.0})
            },
            1950.0,
            1000.0,
            Status::Warn,
        ),
        "memory.cache_step" => c(
            "memory.cache_step:L3",
            none,
            |v, x| v["memory"]["cache_latency_ns"][10][1] = json!(x),
            40.0,
            150.0,
            Status::Warn,
        ),
        "memory.peak_vs_theoretical_pct" => c(
            "memory.peak_vs_theoretical",
            none,
            |v, x| {
                v["system"]["dram"] = json!({"dimms": 8, "channels": 8, "kind": "DDR5",
            "speed_mts": 4800, "data_width_bits": 64, "theoretical_peak_mb_s": x})
            },
            30_000.0,
            292_968.0,
            Status::Warn,
        ),
        "memory.working_set_factor" => c(
            "memory.working_set:idle_latency",
            |v| {
                v["memory"]["llc_bytes"] = json!(32u64 << 20);
                v["memory"]["llc_total_bytes"] = json!(32u64 << 20);
            },
            |v, x| v["memory"]["region_mib"] = json!(x as u64),
            512.0,
            64.0,
            Status::Warn,
        ),
        "memory.numa_ratio" | "memory.numa_ratio_memory_only" => Case {
            judged_by_this_limit: true,
            ..c(
                "memory.numa_ratio:Node-0>Node-1",
                if limit.ends_with("memory_only") {
                    |v: &mut serde_json::Value| two_nodes(v, true)
                } else {
                    |v: &mut serde_json::Value| two_nodes(v, false)
                },
                |v, x| v["memory"]["idle_latency"]["FullRandom"]["Node-0"]["Node-1"] = json!(x),
                150.0,
                1000.0,
                Status::Fail,
            )
        },
        "system.steal_pct" => c(
            "system.steal",
            none,
            |v, x| v["system"]["during_run"]["steal_pct"] = json!(x),
            0.0,
            12.0,
            Status::Warn,
        ),
        "system.timer_slack_ns" => c(
            "system.timer_slack",
            none,
            |v, x| v["system"]["timer_slack_ns"] = json!(x as u64),
            50_000.0,
            1_000_000.0,
            Status::Warn,
        ),
        "system.clock_error_ms" => c(
            "system.clock",
            |v| {
                v["system"]["clock"] =
                    json!({"synchronised": true, "estimated_error_ms": 1.0, "max_error_ms": 2.0});
            },
            |v, x| v["system"]["clock"]["estimated_error_ms"] = json!(x),
            1.0,
            500.0,
            Status::Warn,
        ),
        "storage.tail_ratio" => c(
            "storage.read_tail_latency",
            none,
            |v, x| v["storage"]["read_clat_us"]["p999"] = json!(x),
            5_000.0,
            100_000.0,
            Status::Warn,
        ),
        // The interference limits turn a failing speed figure inconclusive.
        "interference.other_cpu_pct" => Case {
            before: Status::Fail,
            judged_by_this_limit: false,
            ..c(
                "sleepbench.calls_per_thread",
                none,
                slow_sleep,
                2.0,
                60.0,
                Status::Inconclusive,
            )
        },
        "interference.steal_pct" => Case {
            before: Status::Fail,
            judged_by_this_limit: false,
            ..c(
                "sleepbench.calls_per_thread",
                none,
                |v, x| {
                    slow_sleep(v, 0.0);
                    v["health_check"]["interference"]["sleep"]["steal_pct"] = json!(x);
                },
                1.0,
                30.0,
                Status::Inconclusive,
            )
        },
        "interference.throttled_pct" => Case {
            before: Status::Fail,
            judged_by_this_limit: false,
            ..c(
                "sleepbench.calls_per_thread",
                none,
                |v, x| {
                    slow_sleep(v, 0.0);
                    v["health_check"]["interference"]["sleep"]["throttled_pct"] = json!(x);
                },
                0.0,
                40.0,
                Status::Inconclusive,
            )
        },
        "interference.thermal_events" => Case {
            before: Status::Fail,
            judged_by_this_limit: false,
            ..c(
                "sleepbench.calls_per_thread",
                none,
                |v, x| {
                    slow_sleep(v, 0.0);
                    v["health_check"]["interference"]["sleep"]["thermal_events"] = json!(x as u64);
                },
                0.0,
                3.0,
                Status::Inconclusive,
            )
        },
        "errors.memory_corrected_per_hour" => c(
            "errors.edac:mc0",
            none,
            |v, x| counter(v, ("edac", "mc0", "corrected"), x, x + 5.0),
            5.0,
            50.0,
            Status::Warn,
        ),
        "errors.memory_uncorrected" => c(
            "errors.edac:mc0",
            none,
            |v, x| acknowledged(v, ("edac", "mc0", "uncorrected"), x),
            0.0,
            1.0,
            Status::Fail,
        ),
        "errors.pcie_correctable_per_hour" => c(
            "errors.aer:0000:3b:00.0",
            none,
            |v, x| counter(v, ("aer", "0000:3b:00.0", "correctable"), x, x),
            5.0,
            500.0,
            Status::Warn,
        ),
        "errors.pcie_uncorrectable" => c(
            "errors.aer:0000:3b:00.0",
            none,
            |v, x| acknowledged(v, ("aer", "0000:3b:00.0", "fatal"), x),
            0.0,
            1.0,
            Status::Fail,
        ),
        "errors.nic_carrier_downs" => c(
            "errors.nic:eth0",
            none,
            |v, x| counter(v, ("nic", "eth0", "carrier_down"), x, x + 3.0),
            0.0,
            2.0,
            Status::Warn,
        ),
        "errors.nic_crc_per_hour" => c(
            "errors.nic:eth0",
            none,
            |v, x| counter(v, ("nic", "eth0", "rx_crc_errors"), x, x),
            5.0,
            100.0,
            Status::Warn,
        ),
        "errors.nic_missed_per_hour" => c(
            "errors.nic:eth0",
            none,
            |v, x| counter(v, ("nic", "eth0", "rx_missed_errors"), x, x),
            1_000.0,
            1_000_000.0,
            Status::Warn,
        ),
        "errors.thermal_per_hour" => c(
            "errors.thermal:package0",
            none,
            |v, x| counter(v, ("thermal", "package0", "core_throttle"), x, x),
            100.0,
            10_000.0,
            Status::Warn,
        ),
        "errors.machine_checks" => c(
            "errors.mce:all",
            none,
            |v, x| acknowledged(v, ("mce", "all", "exceptions"), x),
            0.0,
            1.0,
            Status::Fail,
        ),
        other => panic!("add a case to this test for the new limit '{other}'"),
    }
}

/// One error counter with `new` events in the 10 hours since the last run and `total`
/// since boot.
fn counter(
    v: &mut serde_json::Value,
    (source, subject, name): (&str, &str, &str),
    new: f64,
    total: f64,
) {
    v["system"]["error_counters"] = serde_json::json!({
        "since": "last_run", "hours": 10.0, "last_run_unix": 1, "watched": {source: 4},
        "counters": [{"source": source, "subject": subject, "counter": name,
            "total": total as u64, "new": new as u64}]
    });
}

/// A condition (judged since boot): one event acknowledged by an operator, and `open` more.
fn acknowledged(v: &mut serde_json::Value, which: (&str, &str, &str), open: f64) {
    counter(v, which, 0.0, open + 1.0);
    v["system"]["error_counters"]["counters"][0]["acknowledged"] =
        serde_json::json!({"by": "root (uid 0)", "at_unix": 1, "count": 1});
}

/// A slow nanosleep run, measured while other processes took `other` % of the CPU time.
fn slow_sleep(v: &mut serde_json::Value, other: f64) {
    use serde_json::json;
    v["sleepbench"]["calls_per_second_per_thread"] = json!(900.0);
    v["health_check"]["interference"]["sleep"] = json!({"seconds": 3.0, "steal_pct": 0.0,
        "other_cpu_pct": other, "throttled_pct": 0.0, "thermal_events": 0});
}

/// A second NUMA node (memory-only: a CXL or HBM node) and the local latencies of both.
fn two_nodes(v: &mut serde_json::Value, memory_only: bool) {
    use serde_json::json;
    let mut second = v["system"]["numa_nodes"][0].clone();
    second["id"] = json!(1);
    if memory_only {
        second["cpu_count"] = json!(0);
        second["cpus"] = json!("");
    }
    v["system"]["numa_nodes"] = json!([v["system"]["numa_nodes"][0].clone(), second]);
}

/// `--strict` exits 3 for failures only: a warning or an inconclusive figure is not one.
#[test]
fn strict_counts_failures_only() {
    let c = |status| Check {
        name: CheckId::parse("network.bandwidth"),
        status,
        value: None,
        limit: None,
        message: String::new(),
    };
    assert!(!any_failed(&[]));
    let calm = [
        Status::Pass,
        Status::Warn,
        Status::Inconclusive,
        Status::Skip,
    ]
    .map(c);
    assert!(!any_failed(&calm));
    assert!(any_failed(&[c(Status::Pass), c(Status::Fail)]));
}

/// The reverse direction is compared with the forward one only when the forward one was
/// measured.
#[test]
fn symmetry_is_judged_only_when_the_forward_test_measured() {
    let symmetry = |doc: &Document| {
        evaluate(doc, &Thresholds::default())
            .iter()
            .filter(|c| c.name.to_string().starts_with("network.reverse_symmetry"))
            .count()
    };
    assert_eq!(symmetry(&healthy(|_| {})), 1);
    let no_forward = healthy(|v| v["iperf3 bandwidth"][0]["bandwidth"] = serde_json::Value::Null);
    assert_eq!(symmetry(&no_forward), 0);
}

#[test]
fn every_limit_can_warn_or_fail() {
    let t = Thresholds::default();
    for limit in LIMITS {
        let c = case(limit.name);
        let with = |x: f64| {
            evaluate(
                &healthy(|v| {
                    (c.setup)(v);
                    (c.figure)(v, x)
                }),
                &t,
            )
        };
        let (good, bad) = (with(c.good), with(c.bad));
        assert_eq!(
            status_of(&good, c.check),
            Some(c.before),
            "'{}' before '{}' is broken: {:#?}",
            c.check,
            limit.name,
            good.iter().find(|x| x.name == c.check)
        );
        let judged = bad
            .iter()
            .find(|x| x.name == c.check)
            .unwrap_or_else(|| panic!("no '{}' once '{}' is broken", c.check, limit.name));
        assert_eq!(judged.status, c.after, "'{}': {judged:#?}", limit.name);
        if c.judged_by_this_limit {
            assert_eq!(judged.limit, Some(limit.default), "'{}'", limit.name);
        }
        // Nothing else changed its verdict: the case is about this rule alone.
        for other in &bad {
            if other.name != c.check {
                assert_eq!(
                    Some(other.status),
                    status_of(&good, &other.name.to_string()),
                    "breaking '{}' changed '{}' too",
                    limit.name,
                    other.name
                );
            }
        }
    }
}

#[test]
fn every_limit_is_listed_with_its_default() {
    let table = limits_table();
    for l in LIMITS {
        assert!(table.contains(l.name));
    }
    let t = Thresholds::default();
    assert_eq!(t.sleep_total_cpu_pct, 50.0);
    assert_eq!(t.timer_slack_ns, 50_000.0);
    assert_eq!(t.storage_tail_ratio, 20.0);
    // Every field has a limit entry: none keeps the placeholder NaN.
    let debug = format!("{t:?}");
    assert!(
        !debug.contains("NaN"),
        "a threshold has no LIMITS entry: {debug}"
    );
}
