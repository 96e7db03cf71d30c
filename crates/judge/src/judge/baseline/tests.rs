//! Tests of `baseline.rs`.

use super::*;
use crate::judge::compare::tests::{fig, fig_as, sku};
use crate::wire::figures::{BANDWIDTH, Direction, PEAK_BANDWIDTH, SLEEP_IRQ};
use std::collections::BTreeMap;

fn expected(median: f64, mad: f64, machines: usize, unit: &str, d: Direction) -> Expected {
    Expected {
        median,
        mad,
        count: machines,
        machines,
        basis: "profile=standard".into(),
        unit: unit.into(),
        direction: d,
    }
}

fn baseline() -> Baseline {
    Baseline {
        health_check_baseline: FORMAT,
        version: "t".into(),
        created_unix: 0,
        rules: Rules::builtin().specs(),
        skus: vec![SkuBaseline {
            sku: sku(),
            machines: 10,
            figures: BTreeMap::from([
                (
                    "memory.peak_bandwidth.all reads".to_string(),
                    expected(30_000.0, 500.0, 10, "MiB/s", Direction::Higher),
                ),
                (
                    "network.bandwidth".to_string(),
                    expected(9.4, 0.1, 10, "Gbit/s", Direction::Higher),
                ),
                (
                    "sleepbench.irq_pct".to_string(),
                    expected(0.0, 0.0, 10, "%", Direction::Lower),
                ),
            ]),
        }],
    }
}

/// Failed runs, runs with interference and figures measured otherwise than most teach
/// nothing: the expectation is the healthy, quiet majority's.
#[test]
fn a_baseline_learns_only_from_healthy_quiet_runs_measured_alike() {
    use crate::judge::compare::tests::machine;
    use crate::wire::document::Section;
    use crate::wire::fleet::MachineStatus;
    let peak = |v: f64| vec![fig(&PEAK_BANDWIDTH, &["all reads"], v)];
    let mut machines: Vec<Machine> = [30_000.0, 30_500.0, 29_500.0, 31_000.0]
        .iter()
        .enumerate()
        .map(|(i, &v)| machine(&format!("m{i}"), peak(v)))
        .collect();
    let mut failed = machine("failed", peak(1.0));
    failed.raise(MachineStatus::Failed, "its run failed");
    let mut busy = machine("busy", peak(2.0));
    busy.interfered
        .insert(Section::Memory, "30 % of the CPU stolen".into());
    let quick = machine(
        "quick",
        vec![fig_as(
            &PEAK_BANDWIDTH,
            &["all reads"],
            3.0,
            "profile=quick".into(),
        )],
    );
    machines.extend([failed, busy, quick]);
    let groups = vec![(sku(), (0..machines.len()).collect())];
    let b = super::learn(&machines, &groups, &Rules::builtin());
    assert_eq!(b.skus.len(), 1);
    assert_eq!(b.skus[0].machines, 7);
    let e = &b.skus[0].figures["memory.peak_bandwidth.all reads"];
    assert_eq!((e.median, e.count, e.machines), (30_250.0, 4, 4));
    assert_eq!(e.mad, 500.0);
    assert_eq!(e.basis, "profile=standard");
    assert_eq!((e.unit.as_str(), e.direction), ("MiB/s", Direction::Higher));
}

/// What a baseline leaves out is said, with the reason; and runs that were all measured under
/// interference teach no measured figure at all, which `baseline` refuses to write.
#[test]
fn a_baseline_names_what_it_could_not_learn_and_whether_it_learned_a_measurement() {
    use crate::judge::compare::tests::machine;
    use crate::wire::document::Section;
    let peak = |v: f64| vec![fig(&PEAK_BANDWIDTH, &["all reads"], v)];
    let mut machines: Vec<Machine> = [30_000.0, 30_500.0, 29_500.0]
        .iter()
        .enumerate()
        .map(|(i, &v)| machine(&format!("m{i}"), peak(v)))
        .collect();
    let mut busy = machine("busy", peak(2.0));
    busy.interfered
        .insert(Section::Memory, "30 % of the CPU stolen".into());
    let quick = machine(
        "quick",
        vec![fig_as(
            &PEAK_BANDWIDTH,
            &["all reads"],
            3.0,
            "profile=quick".into(),
        )],
    );
    machines.extend([busy, quick]);
    let groups = vec![(sku(), (0..machines.len()).collect())];
    let learned = super::learn_saying_what_not(&machines, &groups, &Rules::builtin());
    assert!(learned.learned_a_measurement());
    let [gap] = learned.not_learned.as_slice() else {
        panic!("{:?}", learned.not_learned);
    };
    assert_eq!(gap.figure, "memory.peak_bandwidth.all reads");
    assert!(!gap.missing, "learned from the quiet standard runs");
    assert!(
        gap.why.contains("measured otherwise by 1 as profile=quick"),
        "{}",
        gap.why
    );
    // Every run under interference: nothing measured is learned, and each figure says why.
    for m in &mut machines {
        m.interfered.insert(Section::Memory, "busy".into());
    }
    let learned = super::learn_saying_what_not(&machines, &groups, &Rules::builtin());
    assert!(!learned.learned_a_measurement());
    assert!(learned.baseline.skus[0].figures.is_empty());
    let missing: Vec<&NotLearned> = learned.not_learned.iter().filter(|g| g.missing).collect();
    assert_eq!(missing.len(), 1, "{:?}", learned.not_learned);
    assert!(
        missing[0]
            .why
            .contains("under interference on all 5 machine(s)"),
        "{missing:?}"
    );
}

#[test]
fn fifteen_percent_less_memory_bandwidth_fails_and_names_everything() {
    let rules = Rules::builtin();
    let figures = [
        fig(&PEAK_BANDWIDTH, &["all reads"], 25_500.0),
        fig(&BANDWIDTH, &["c1"], 9.3),
    ];
    let checks = judge(&figures, Some(&sku()), &baseline(), &rules, "b.yaml");
    assert_eq!(checks.len(), 2);
    let mem = &checks[0];
    assert_eq!(mem.name, "baseline.memory.peak_bandwidth.all reads");
    assert_eq!(mem.status, Status::Fail);
    assert_eq!(mem.limit, Some(27_000.0));
    for part in [
        "memory.peak_bandwidth.all reads",
        "25500",
        "30000",
        "-15.0%",
    ] {
        assert!(mem.message.contains(part), "{part}: {}", mem.message);
    }
    assert_eq!(checks[1].status, Status::Pass, "{}", checks[1].message);
}

#[test]
fn a_zero_median_is_judged_by_the_noise_floor_and_says_so() {
    // IRQ 40 % where the model's machines show 0 %: the rule's 5-point floor is the limit.
    let rules = Rules::builtin();
    let checks = judge(
        &[fig(&SLEEP_IRQ, &[], 40.0)],
        Some(&sku()),
        &baseline(),
        &rules,
        "b",
    );
    assert_eq!(checks[0].status, Status::Warn, "{}", checks[0].message);
    assert_eq!((checks[0].value, checks[0].limit), (Some(40.0), Some(5.0)));
    let calm = judge(
        &[fig(&SLEEP_IRQ, &[], 3.0)],
        Some(&sku()),
        &baseline(),
        &rules,
        "b",
    );
    assert_eq!(calm[0].status, Status::Pass);
}

#[test]
fn a_figure_measured_otherwise_is_skipped_with_what_differs() {
    let quick: crate::wire::figures::Basis = std::sync::Arc::from("profile=quick");
    let checks = judge(
        &[fig_as(&PEAK_BANDWIDTH, &["all reads"], 10.0, quick)],
        Some(&sku()),
        &baseline(),
        &Rules::builtin(),
        "b",
    );
    assert_eq!(checks[0].status, Status::Skip);
    assert!(
        checks[0]
            .message
            .contains("measured with profile=quick where the baseline used profile=standard"),
        "{}",
        checks[0].message
    );
}

/// A document that knows less of its model (no socket count) takes the one baseline model it
/// may be; with two such models it takes neither.
#[test]
fn a_model_known_in_part_takes_the_one_compatible_baseline_only() {
    let partial = Sku {
        sockets: None,
        ..sku()
    };
    let b = baseline();
    assert_eq!(b.for_sku(&partial).map(|s| &s.sku), Some(&sku()));
    let mut two = baseline();
    let mut second = two.skus[0].clone();
    second.sku.sockets = Some(2);
    two.skus.push(second);
    assert!(
        two.for_sku(&partial).is_none(),
        "two models fit: neither is taken"
    );
    assert_eq!(two.for_sku(&sku()).map(|s| &s.sku), Some(&sku()));
}

#[test]
fn an_unknown_sku_is_one_skip_saying_so() {
    let other = Sku {
        sockets: Some(2),
        ..sku()
    };
    let checks = judge(&[], Some(&other), &baseline(), &Rules::builtin(), "b.yaml");
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].status, Status::Skip);
    assert!(checks[0].message.contains("2 sockets") && checks[0].message.contains("b.yaml"));
}

#[test]
fn the_file_round_trips_and_impossible_expectations_are_refused() {
    let b = baseline();
    let text = serde_yaml::to_string(&b).unwrap();
    let back: Baseline = serde_yaml::from_str(&text).unwrap();
    assert_eq!(back, b);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.yaml");
    std::fs::write(&path, &text).unwrap();
    assert!(super::read(&path).is_ok());
    std::fs::write(&path, text.replace("median: 9.4", "median: -9.4")).unwrap();
    let e = super::read(&path).unwrap_err().to_string();
    assert!(e.contains("network.bandwidth") && e.contains("-9.4"), "{e}");
    std::fs::write(&path, text.replace("median: 9.4", "median: .nan")).unwrap();
    assert!(super::read(&path).is_err());
}

/// A run (or a merged document) and a fleet's reader judge one document by a baseline alike:
/// the same model key, the same figures, the same interference. A baseline expecting twice
/// every figure of a real document, with its memory measured under interference.
#[test]
fn a_run_and_a_fleet_give_one_document_the_same_baseline_checks() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/document.json"
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["health_check"]["interference"] =
        serde_json::json!({"memory": {"seconds": 10.0, "steal_pct": 40.0}});
    let dir = std::env::temp_dir().join(format!("hc-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("doc.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let doc: Document = serde_json::from_value(v).unwrap();
    let t = Thresholds::default();
    let machine = crate::judge::machine::documents::machine_from(
        crate::wire::read::load(&file).unwrap(),
        false,
        &t,
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let figures = figures::of_document(&doc).figures;
    let sku = Sku::of(&doc.identity().unwrap());
    let b = BaselineRef {
        path: "b.yaml".into(),
        rules: Rules::builtin(),
        baseline: Baseline {
            skus: vec![SkuBaseline {
                sku: sku.clone(),
                machines: 10,
                figures: figures
                    .iter()
                    .map(|f| {
                        let mut e =
                            expected(2.0 * f.value, 0.0, 10, f.family.unit, f.family.direction);
                        e.basis = f.basis.to_string();
                        (f.key(), e)
                    })
                    .collect(),
            }],
            ..baseline()
        },
    };
    let run = checks_of_document(&doc, &b, &t);
    let fleet = checks(
        &machine.figures,
        machine.entry.sku.as_ref(),
        &machine.interfered,
        &b,
    );
    assert_eq!(machine.entry.sku.as_ref(), Some(&sku));
    assert_eq!(run, fleet);
    let count = |s: Status| run.iter().filter(|c| c.status == s).count();
    assert!(
        count(Status::Inconclusive) > 0 && count(Status::Fail) + count(Status::Warn) > 0,
        "{run:#?}"
    );
}
