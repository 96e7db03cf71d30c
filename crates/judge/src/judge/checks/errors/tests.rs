//! Tests of `judge/checks/errors.rs`.

use super::*;

fn counters(since: CounterWindow, hours: f64, list: &[(&str, &str, &str, u64)]) -> ErrorCounters {
    let mut watched = BTreeMap::new();
    for (source, ..) in list {
        *watched.entry(source.to_string()).or_default() += 1;
    }
    watched.insert("aer".to_string(), 40);
    ErrorCounters {
        since,
        hours,
        last_run_unix: None,
        watched,
        counters: list
            .iter()
            .map(|(source, subject, counter, new)| ErrorCounter {
                source: source.to_string(),
                subject: subject.to_string(),
                counter: counter.to_string(),
                total: *new,
                new: *new,
                acknowledged: None,
            })
            .collect(),
    }
}

fn status(checks: &[Check], name: &str) -> Status {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
        .status
}

#[test]
fn any_uncorrected_memory_error_fails_and_names_the_dimm() {
    let c = counters(
        CounterWindow::LastRun,
        2.0,
        &[
            ("edac", "mc0/dimm1", "uncorrected", 1),
            ("edac", "mc0/dimm1", "corrected", 1),
        ],
    );
    let checks = all(&c, &Thresholds::default());
    let dimm = checks
        .iter()
        .find(|c| c.name == "errors.edac:mc0/dimm1")
        .unwrap();
    assert_eq!(dimm.status, Status::Fail);
    assert!(
        dimm.message.contains("replace the DIMM"),
        "{}",
        dimm.message
    );
    assert!(dimm.message.contains("since the last run (2.0 h ago)"));
    // Sources with nothing new pass in one line.
    assert_eq!(status(&checks, "errors.aer"), Status::Pass);
}

#[test]
fn corrected_errors_warn_above_a_rate_over_at_least_an_hour() {
    let t = Thresholds::default();
    // 20 in 10 hours: 2/h, over the 1/h limit.
    let c = counters(
        CounterWindow::LastRun,
        10.0,
        &[("edac", "mc1", "corrected", 20)],
    );
    assert_eq!(status(&all(&c, &t), "errors.edac:mc1"), Status::Warn);
    // 5 in 10 hours passes (and is still listed).
    let c = counters(
        CounterWindow::LastRun,
        10.0,
        &[("edac", "mc1", "corrected", 5)],
    );
    assert_eq!(status(&all(&c, &t), "errors.edac:mc1"), Status::Pass);
    // One error a minute after the last run is one an hour, not sixty.
    let c = counters(
        CounterWindow::LastRun,
        0.02,
        &[("edac", "mc1", "corrected", 1)],
    );
    assert_eq!(status(&all(&c, &t), "errors.edac:mc1"), Status::Pass);
}

#[test]
fn a_link_loss_between_runs_warns_but_its_coming_up_does_not() {
    let t = Thresholds::default();
    let boot = counters(
        CounterWindow::Boot,
        100.0,
        &[("nic", "eth0", "carrier_down", 1)],
    );
    let checks = all(&boot, &t);
    assert_eq!(status(&checks, "errors.nic"), Status::Pass);
    assert!(!checks.iter().any(|c| c.name == "errors.nic:eth0"));
    // Seen since boot, nothing new: listed, passing.
    let mut seen = counters(
        CounterWindow::LastRun,
        1.0,
        &[("nic", "eth0", "carrier_down", 0)],
    );
    seen.counters[0].total = 4;
    let checks = all(&seen, &t);
    let c = checks.iter().find(|c| c.name == "errors.nic:eth0").unwrap();
    assert_eq!(c.status, Status::Pass);
    assert!(
        c.message
            .contains("3 link losses on eth0 since boot, none new"),
        "{}",
        c.message
    );
    let flap = counters(
        CounterWindow::LastRun,
        0.1,
        &[("nic", "eth0", "carrier_down", 1)],
    );
    let checks = all(&flap, &t);
    let c = checks.iter().find(|c| c.name == "errors.nic:eth0").unwrap();
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("1 link losses on eth0"), "{}", c.message);
    assert!(c.message.contains("switch port"), "{}", c.message);
}

#[test]
fn pcie_fatal_fails_nonfatal_and_correctable_warn() {
    let t = Thresholds::default();
    let c = counters(
        CounterWindow::LastRun,
        1.0,
        &[
            ("aer", "0000:3b:00.0", "fatal", 1),
            ("aer", "0000:5e:00.0", "nonfatal", 2),
            ("aer", "0000:86:00.0", "correctable", 50),
            ("thermal", "package0", "core_throttle", 500),
            ("mce", "all", "exceptions", 1),
            ("nic", "eth1", "rx_crc_errors", 30),
        ],
    );
    let checks = all(&c, &t);
    assert_eq!(status(&checks, "errors.aer:0000:3b:00.0"), Status::Fail);
    assert_eq!(status(&checks, "errors.aer:0000:5e:00.0"), Status::Warn);
    assert_eq!(status(&checks, "errors.aer:0000:86:00.0"), Status::Warn);
    assert_eq!(status(&checks, "errors.thermal:package0"), Status::Warn);
    assert_eq!(status(&checks, "errors.mce:all"), Status::Fail);
    assert_eq!(status(&checks, "errors.nic:eth1"), Status::Warn);
    assert!(
        !checks.iter().any(|c| c.name == "errors.aer"),
        "aer had news"
    );
}

/// Each counter is judged by its own kind: its status beyond its own limit, per hour or by
/// count, and named for people. The limits here are all different, so a counter judged by
/// another's limit shows.
#[test]
fn every_counter_has_its_own_status_limit_rate_and_words() {
    let t = Thresholds {
        errors_memory_uncorrected: 1.0,
        errors_memory_corrected_per_hour: 2.0,
        errors_pcie_uncorrectable: 3.0,
        errors_pcie_correctable_per_hour: 4.0,
        errors_nic_carrier_downs: 5.0,
        errors_nic_crc_per_hour: 6.0,
        errors_nic_missed_per_hour: 7.0,
        errors_thermal_per_hour: 8.0,
        errors_machine_checks: 9.0,
        ..Thresholds::default()
    };
    let (warn, fail) = (Status::Warn, Status::Fail);
    // source, counter, status, limit, per hour, what
    let table = [
        (
            "edac",
            "uncorrected",
            fail,
            1.0,
            false,
            "uncorrected memory error(s)",
        ),
        (
            "edac",
            "corrected",
            warn,
            2.0,
            true,
            "corrected memory errors",
        ),
        ("aer", "fatal", fail, 3.0, false, "fatal PCIe errors"),
        (
            "aer",
            "nonfatal",
            warn,
            3.0,
            false,
            "uncorrectable (non-fatal) PCIe errors",
        ),
        (
            "aer",
            "correctable",
            warn,
            4.0,
            true,
            "correctable PCIe errors",
        ),
        ("nic", "carrier_down", warn, 5.0, false, "link losses"),
        (
            "nic",
            "rx_crc_errors",
            warn,
            6.0,
            true,
            "receive CRC errors",
        ),
        (
            "nic",
            "rx_missed_errors",
            warn,
            7.0,
            true,
            "packets dropped for lack of receive buffers",
        ),
        (
            "thermal",
            "core_throttle",
            warn,
            8.0,
            true,
            "thermal-throttle events",
        ),
        (
            "mce",
            "exceptions",
            fail,
            9.0,
            false,
            "machine-check exceptions",
        ),
    ];
    for (source, counter, bad, limit, per_hour, what) in table {
        let c = counters(
            CounterWindow::LastRun,
            10.0,
            &[(source, "dev", counter, 100)],
        );
        let checks = all(&c, &t);
        let got = checks
            .iter()
            .find(|c| c.name.to_string() == format!("errors.{source}:dev"))
            .unwrap();
        let want = if per_hour { 10.0 } else { 100.0 };
        assert_eq!(
            (got.status, got.limit, got.value),
            (bad, Some(limit), Some(want)),
            "{source} {counter}: {}",
            got.message
        );
        assert!(
            got.message.starts_with(&format!("100 {what} on dev ")),
            "{source} {counter}: {}",
            got.message
        );
    }
}

/// An uncorrected error is a condition: it fails on every run while its count stands, not
/// only on the run that first saw it, until an operator acknowledges it; a new one after
/// that fails again. A rate (corrected errors) is still judged on what is new.
#[test]
fn a_condition_keeps_failing_until_acknowledged_and_fails_again_when_it_grows() {
    let t = Thresholds::default();
    let mut c = counters(
        CounterWindow::LastRun,
        0.1,
        &[
            ("edac", "mc0/dimm1", "uncorrected", 0),
            ("aer", "0000:3b:00.0", "fatal", 0),
            ("mce", "all", "exceptions", 0),
            ("nic", "eth0", "link_down", 0),
            ("edac", "mc1", "corrected", 0),
        ],
    );
    for e in &mut c.counters {
        e.total = 2;
    }
    let checks = all(&c, &t);
    for name in [
        "errors.edac:mc0/dimm1",
        "errors.aer:0000:3b:00.0",
        "errors.mce:all",
        "errors.nic:eth0",
    ] {
        let got = checks.iter().find(|c| c.name == name).unwrap();
        assert_eq!(got.status, Status::Fail, "{name}: {}", got.message);
        assert!(
            got.message.contains("since boot, none new"),
            "{}",
            got.message
        );
        assert!(
            got.message.contains("health_check acknowledge"),
            "{}",
            got.message
        );
    }
    assert_eq!(status(&checks, "errors.edac:mc1"), Status::Pass);
    // Acknowledged at its count: passes, and says by whom and when.
    c.counters[0].acknowledged = Some(crate::wire::counters::Acknowledgement {
        by: "alice (uid 1000)".into(),
        at_unix: 1_796_027_264,
        count: 2,
        note: Some("DIMM B2 ordered".into()),
    });
    let dimm = all(&c, &t)
        .into_iter()
        .find(|c| c.name == "errors.edac:mc0/dimm1")
        .unwrap();
    assert_eq!(dimm.status, Status::Pass, "{}", dimm.message);
    assert_eq!(
        dimm.message,
        "2 uncorrected memory error(s) on mc0/dimm1 since boot, 2 acknowledged by alice \
         (uid 1000) at 2026-11-30 08:27 UTC (DIMM B2 ordered)"
    );
    // One more after the acknowledgement fails again.
    c.counters[0].total = 3;
    c.counters[0].new = 1;
    let dimm = all(&c, &t)
        .into_iter()
        .find(|c| c.name == "errors.edac:mc0/dimm1")
        .unwrap();
    assert_eq!(dimm.status, Status::Fail, "{}", dimm.message);
    assert_eq!(dimm.value, Some(1.0));
}

/// A subject's check takes its worst counter's status, wherever that counter is listed.
#[test]
fn a_subject_is_as_bad_as_its_worst_counter() {
    let t = Thresholds::default();
    for list in [
        [
            ("edac", "mc1", "corrected", 50),
            ("edac", "mc1", "corrected_noinfo", 1),
        ],
        [
            ("edac", "mc1", "corrected_noinfo", 1),
            ("edac", "mc1", "corrected", 50),
        ],
    ] {
        let c = counters(CounterWindow::LastRun, 10.0, &list);
        assert_eq!(
            status(&all(&c, &t), "errors.edac:mc1"),
            Status::Warn,
            "{list:?}"
        );
    }
}

/// A source watched with nothing to report passes in one line that says what was watched.
#[test]
fn a_quiet_source_says_what_it_watched() {
    let watched = ["edac", "aer", "nic", "thermal", "mce"];
    let c = ErrorCounters {
        since: CounterWindow::Boot,
        hours: 3.0,
        last_run_unix: None,
        watched: watched.iter().map(|s| (s.to_string(), 2)).collect(),
        counters: Vec::new(),
    };
    let checks = all(&c, &Thresholds::default());
    let words = [
        "memory errors (EDAC)",
        "PCIe errors (AER)",
        "link losses or receive errors on the NICs",
        "thermal throttling",
        "machine-check exceptions",
    ];
    for (source, what) in watched.iter().zip(words) {
        let got = checks
            .iter()
            .find(|c| c.name.to_string() == format!("errors.{source}"))
            .unwrap();
        assert_eq!(got.status, Status::Pass);
        assert_eq!(
            got.message,
            format!("no {what} since boot (3.0 h) (2 counters)")
        );
    }
}
