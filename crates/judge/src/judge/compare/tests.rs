//! Tests of `compare.rs`.

use super::*;
use crate::wire::figures::{Basis, Family, IDLE_LATENCY, MEM_TOTAL, PEAK_BANDWIDTH, Spec};
use crate::wire::fleet::DocumentKind;
use std::sync::Arc;

pub fn standard() -> Basis {
    Arc::from("profile=standard")
}

pub fn fig(family: &'static Family, labels: &[&str], value: f64) -> Figure {
    fig_as(family, labels, value, standard())
}

pub fn fig_as(family: &'static Family, labels: &[&str], value: f64, basis: Basis) -> Figure {
    Figure {
        spec: Spec::shared(family, crate::wire::figures::labels(labels), basis),
        value,
    }
}

pub fn sku() -> Sku {
    Sku {
        cpu_model: Some("M".into()),
        sockets: Some(1),
        cores_per_socket: Some(8),
        numa_nodes: Some(1),
    }
}

pub fn machine(label: &str, figures: Vec<Figure>) -> Machine {
    let mut m = Machine::measured_only(label);
    m.entry.source = format!("{label}.json");
    m.entry.kind = DocumentKind::HealthCheck;
    m.entry.sku = Some(sku());
    m.entry.figures = figures.len();
    m.figures = figures;
    m
}

fn run(machines: &mut [Machine]) -> Vec<Finding> {
    let rules = Rules::builtin();
    let groups = group(machines);
    compare(machines, &groups, &mut RuleCache::new(&rules)).1
}

fn peak(v: f64) -> Vec<Figure> {
    vec![fig(&PEAK_BANDWIDTH, &["all reads"], v)]
}

/// The matrix of machines as read, on their view.
fn matrix_of(machines: impl Into<Vec<Machine>>) -> Option<crate::wire::fleet::Matrix> {
    let mut machines = machines.into();
    let view = crate::judge::view::View::of(&mut machines);
    matrix(&machines, &view)
}

#[test]
fn the_matrix_is_given_up_to_its_size_limit_only() {
    // A ring: every machine measured the next one.
    let ring = |n: usize| -> Vec<Machine> {
        (0..n)
            .map(|i| {
                let next = format!("m{}", (i + 1) % n);
                machine(
                    &format!("m{i}"),
                    vec![fig(&crate::wire::figures::BANDWIDTH, &[&next], 9.0)],
                )
            })
            .collect()
    };
    assert!(matrix_of(ring(2)).is_some(), "two machines make a matrix");
    // A measured direction is never overwritten by the other's symmetric fill.
    let ping = &crate::wire::figures::PING_LATENCY;
    let both = [
        machine("m0", vec![fig(ping, &["m1"], 1.0)]),
        machine("m1", vec![fig(ping, &["m0"], 2.0)]),
    ];
    let m = matrix_of(both).unwrap();
    assert_eq!(m.latency_ms, [[None, Some(1.0)], [Some(2.0), None]]);
    let one = [
        machine("m0", vec![fig(ping, &["m1"], 1.0)]),
        machine("m1", vec![]),
    ];
    let m = matrix_of(one).unwrap();
    assert_eq!(
        m.latency_ms,
        [[None, Some(1.0)], [Some(1.0), None]],
        "RTT is symmetric"
    );
    let small = matrix_of(ring(3)).expect("three machines measured each other");
    assert_eq!(small.machines, ["m0", "m1", "m2"]);
    assert_eq!(small.bandwidth_gbps[0][1], Some(9.0));
    assert_eq!(small.bandwidth_gbps[1][0], None);
    assert!(matrix_of(ring(MATRIX_MAX_MACHINES)).is_some());
    assert!(matrix_of(ring(MATRIX_MAX_MACHINES + 1)).is_none());
}

#[test]
fn an_outlier_in_a_large_group_is_flagged_with_its_z_score() {
    let mut ms: Vec<Machine> = [
        30000.0, 30500.0, 29500.0, 31000.0, 29800.0, 30200.0, 15000.0,
    ]
    .iter()
    .enumerate()
    .map(|(i, &v)| machine(&format!("m{i}"), peak(v)))
    .collect();
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!((f[0].machine.as_str(), f[0].scope), ("m6", Scope::Machine));
    assert_eq!(f[0].figure, "memory.peak_bandwidth.all reads");
    assert_eq!(f[0].median, Some(30000.0));
    assert_eq!(f[0].deviation_pct, Some(-50.0));
    let z = f[0].robust_z.unwrap();
    assert!((z - 0.6745 * -15000.0 / 500.0).abs() < 0.01, "{z}");
}

#[test]
fn a_deviation_within_the_noise_of_a_large_group_is_not_flagged() {
    // 26 400 is 12 % below the median 30 000, past the 10 % tolerance, but this fleet is
    // noisy: MAD 3 000, so |z| = 0.81.
    let fleet = |last: f64| -> Vec<Machine> {
        [30000.0, 34000.0, 26000.0, 33000.0, 27000.0, 30500.0, last]
            .iter()
            .enumerate()
            .map(|(i, &v)| machine(&format!("m{i}"), peak(v)))
            .collect()
    };
    assert!(run(&mut fleet(26_400.0)).is_empty());
    // The z-gate is what spares it: far enough out, the same fleet flags.
    let f = run(&mut fleet(10_000.0));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].robust_z.unwrap() < -3.5);
}

#[test]
fn small_groups_and_zero_mad_go_by_the_tolerance_alone() {
    let mut ms = vec![
        machine("a", peak(30000.0)),
        machine("b", peak(30000.0)),
        machine("c", peak(26000.0)),
    ];
    let f = run(&mut ms);
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].machine.as_str(), f[0].robust_z), ("c", None));
    let mut ms: Vec<Machine> = (0..6)
        .map(|i| {
            machine(
                &format!("m{i}"),
                peak(if i == 5 { 26000.0 } else { 30000.0 }),
            )
        })
        .collect();
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "MAD is 0: the tolerance decides");
    assert_eq!(f[0].machine, "m5");
}

#[test]
fn only_the_worse_direction_is_flagged() {
    let lat = |v: f64| vec![fig(&IDLE_LATENCY, &["FullRandom", "Node-0", "Node-0"], v)];
    let mut ms = vec![
        machine("a", lat(100.0)),
        machine("b", lat(100.0)),
        machine("fast", lat(50.0)),
        machine("slow", lat(130.0)),
    ];
    let f = run(&mut ms);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].machine, "slow");
    assert_eq!(f[0].deviation_pct, Some(30.0));
}

#[test]
fn a_machine_with_less_memory_stays_in_its_group_and_fails() {
    let mem = |gib: f64| {
        vec![
            fig(&MEM_TOTAL, &[], gib),
            fig(&PEAK_BANDWIDTH, &["all reads"], 30_000.0),
        ]
    };
    let mut ms = vec![
        machine("a", mem(23.54)),
        machine("b", mem(23.54)),
        machine("c", mem(23.55)),
        machine("dimm", mem(22.95)),
    ];
    let f = run(&mut ms);
    assert_eq!(ms[3].entry.group, ms[0].entry.group, "same model");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].figure, "machine.mem_total_gib");
    assert_eq!(f[0].machine, "dimm");
}

/// A document that names only its CPU model (DCPerf's) joins the one group it may be part
/// of, whichever is read first, and the group is known by the complete model.
#[test]
fn a_model_known_in_part_joins_its_group_in_any_order() {
    let partial = || {
        let mut m = machine("dcperf", peak(30200.0));
        m.entry.sku = Some(Sku {
            sockets: None,
            cores_per_socket: None,
            numa_nodes: None,
            ..sku()
        });
        m
    };
    for partial_first in [true, false] {
        let mut ms = vec![machine("a", peak(30000.0)), machine("b", peak(30500.0))];
        if partial_first {
            ms.insert(0, partial());
        } else {
            ms.push(partial());
        }
        let groups = group(&mut ms);
        assert_eq!(groups.len(), 1, "{groups:#?}");
        assert_eq!(
            groups[0].0,
            sku(),
            "the group is known by the complete model"
        );
        assert_eq!(groups[0].1.len(), 3);
        assert!(ms.iter().all(|m| m.entry.status != MachineStatus::Alone));
    }
}

/// Two machines of a model measured alike are compared (their median is the reference).
#[test]
fn two_machines_are_enough_to_compare() {
    let mut ms = vec![machine("a", peak(30000.0)), machine("slow", peak(20000.0))];
    let f = run(&mut ms);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].machine, "slow");
    assert!(
        f[0].message
            .contains("20000 MiB/s is 20.0% below the median 25000 MiB/s of 2 machines"),
        "{}",
        f[0].message
    );
    assert!(ms.iter().all(|m| m.entry.not_compared.is_empty()));
}

/// A figure the others have and a machine lacks is listed as missing, for that machine only.
#[test]
fn what_a_machine_lacks_is_listed() {
    use crate::wire::figures::MEMCPY_LARGE;
    let both = |v: f64| {
        let mut f = peak(v);
        f.push(fig(&MEMCPY_LARGE, &[], 9000.0));
        f
    };
    let mut ms = vec![
        machine("a", both(30000.0)),
        machine("b", both(30100.0)),
        machine("no memcpy", peak(30200.0)),
    ];
    run(&mut ms);
    assert!(ms[0].entry.missing_figures.is_empty() && ms[1].entry.missing_figures.is_empty());
    assert_eq!(ms[2].entry.missing_figures, ["memory.memcpy_large"]);
}

#[test]
fn alone_and_unknown_models_say_so() {
    let mut big = machine("big", peak(90000.0));
    big.entry.sku.as_mut().unwrap().sockets = Some(2);
    let mut unknown = machine("unknown", peak(30000.0));
    unknown.entry.sku = None;
    let mut ms = vec![
        machine("a", peak(30000.0)),
        machine("b", peak(30500.0)),
        big,
        unknown,
    ];
    let f = run(&mut ms);
    assert!(f.is_empty(), "different models are not compared: {f:#?}");
    assert_eq!(ms[2].entry.status, MachineStatus::Alone);
    assert!(ms[2].entry.reasons[0].contains("the only machine of its model"));
    assert_eq!(ms[3].entry.status, MachineStatus::Alone);
    assert!(ms[3].entry.reasons[0].contains("model unknown"));
    assert_eq!(ms[3].entry.group, None);
}

#[test]
fn figures_measured_otherwise_are_not_compared_and_say_how() {
    let huge: Basis = Arc::from("profile=standard, pages=1 GiB");
    let thp: Basis = Arc::from("profile=standard, pages=2 MiB");
    let lat = |v: f64, b: &Basis| {
        vec![fig_as(
            &IDLE_LATENCY,
            &["FullRandom", "Node-0", "Node-0"],
            v,
            b.clone(),
        )]
    };
    let mut ms = vec![
        machine("a", lat(100.0, &huge)),
        machine("b", lat(101.0, &huge)),
        machine("c", lat(99.0, &huge)),
        machine("thp", lat(140.0, &thp)),
    ];
    let f = run(&mut ms);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(
        ms[3].entry.not_compared,
        [
            "memory.idle_latency.FullRandom.Node-0.Node-0: measured with pages=2 MiB where its \
          group used pages=1 GiB"
        ]
    );
}

#[test]
fn a_figure_measured_under_load_is_inconclusive_and_out_of_the_reference() {
    let mut ms: Vec<Machine> = (0..4)
        .map(|i| machine(&format!("m{i}"), peak(30_000.0)))
        .collect();
    ms.push(machine("busy", peak(12_000.0)));
    ms[4].interfered.insert(
        crate::wire::document::Section::Memory,
        "other processes".into(),
    );
    let f = run(&mut ms);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].inconclusive.as_deref(), Some("other processes"));
    assert_eq!(f[0].median, Some(30_000.0));
}

/// The group's figures gathered in several parts, on their threads, and joined are what one
/// walk gathers: the same keys and bases in the same numbers, every key's values (machine,
/// value, basis) in member order, each member's count of keys. Random machines: figures left
/// out, bases that differ per machine or per key, per-client figures, figures read twice.
#[test]
fn a_group_gathered_in_parts_is_gathered_as_in_one_walk() {
    use crate::wire::figures::PING_LATENCY;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let bases: Vec<Basis> = [
        "profile=standard",
        "profile=quick",
        "profile=standard, streams=8",
    ]
    .into_iter()
    .map(Arc::from)
    .collect();
    for round in 0..40 {
        let count = 1 + next(60) as usize;
        let machines: Vec<Machine> = (0..count)
            .map(|i| {
                let mut figures = Vec::new();
                for k in 0..12 {
                    if next(5) == 0 {
                        continue; // this machine lacks the key
                    }
                    let basis = bases[if next(4) == 0 { next(3) as usize } else { 0 }].clone();
                    let value = next(1000) as f64 + 0.5;
                    let f = match k % 4 {
                        0 => fig_as(&PEAK_BANDWIDTH, &[&format!("kind{k}")], value, basis),
                        1 => fig_as(
                            &IDLE_LATENCY,
                            &["FullRandom", "Node-0", &format!("Node-{k}")],
                            value,
                            basis,
                        ),
                        2 => fig_as(
                            &PING_LATENCY,
                            &[&format!("client{}", next(3))],
                            value,
                            basis,
                        ),
                        _ => fig_as(&MEM_TOTAL, &[], value, basis),
                    };
                    figures.push(f);
                    if next(10) == 0 {
                        figures.push(figures.last().unwrap().clone()); // read twice
                    }
                }
                machine(&format!("m{i}"), figures)
            })
            .collect();
        // Members in an order of their own, not the machines'.
        let mut members: Vec<usize> = (0..count).collect();
        for i in (1..count).rev() {
            members.swap(i, next(i as u64 + 1) as usize);
        }
        let one = gather(&machines, &members, 1);
        for parts in [2, 3, 7, count + 3] {
            let joined = gather(&machines, &members, parts);
            let ctx = format!("round {round}, {count} machines in {parts} parts");
            assert_eq!(joined.index.keys.len(), one.index.keys.len(), "{ctx}");
            for (a, b) in joined.index.keys.iter().zip(&one.index.keys) {
                assert_eq!(a.0, b.0, "{ctx}: the keys' numbers");
                assert!(std::ptr::eq(a.1, b.1), "{ctx}");
            }
            assert_eq!(
                joined.index.bases, one.index.bases,
                "{ctx}: the bases' numbers"
            );
            assert_eq!(joined.keys_had, one.keys_had, "{ctx}");
            assert_eq!(joined.values.len(), one.values.len(), "{ctx}");
            for (a, b) in joined.values.iter().zip(&one.values) {
                let all = |v: &KeyValues| -> Vec<(u32, u32, u64)> {
                    (0..v.value.len())
                        .map(|i| v.get(i))
                        .map(|v| (v.machine, v.basis, v.value.to_bits()))
                        .collect()
                };
                assert_eq!(all(a), all(b), "{ctx}: a key's values");
                let one_basis = |v: &KeyValues| matches!(v.basis, Bases::All(_));
                assert_eq!(one_basis(a), one_basis(b), "{ctx}: the bases kept alike");
            }
        }
    }
}
