//! Tests of `wire/figures.rs`.

use super::*;

#[test]
fn names_are_unique_and_units_are_set() {
    let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), FAMILIES.len());
    let mut prom: Vec<&str> = FAMILIES.iter().map(|f| f.prometheus).collect();
    prom.sort();
    prom.dedup();
    assert_eq!(prom.len(), FAMILIES.len());
    for f in FAMILIES {
        assert!(!f.unit.is_empty() && !f.help.is_empty(), "{}", f.name);
        assert!(
            f.prometheus
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{}",
            f.prometheus
        );
    }
}

/// The idle latencies, the loaded sweep (under `sweep`: our documents and DCPerf's name it
/// differently) and the peak bandwidths of a memory section, as named figures.
fn memory_figures(memory: &serde_json::Value, sweep: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for (pattern, rows) in memory["idle_latency"].as_object().unwrap() {
        for (cpu, row) in rows.as_object().unwrap() {
            for (mem, ns) in row.as_object().unwrap() {
                let name = format!("memory.idle_latency.{pattern}.{cpu}.{mem}");
                out.push((name, ns.as_f64().unwrap()));
            }
        }
    }
    for (pattern, rows) in memory[sweep].as_object().unwrap() {
        for row in rows.as_array().unwrap() {
            let delay = row[0].as_u64().unwrap();
            let bandwidth = format!("memory.loaded_bandwidth.{pattern}.{delay}");
            out.push((bandwidth, row[1].as_f64().unwrap()));
            let latency = format!("memory.loaded_latency.{pattern}.{delay}");
            out.push((latency, row[2].as_f64().unwrap()));
        }
    }
    for (mix, v) in memory["peak_bandwidth_mb_s"].as_object().unwrap() {
        out.push((format!("memory.peak_bandwidth.{mix}"), v.as_f64().unwrap()));
    }
    out
}

/// Every value a family's `at` finds in a document's JSON, with the label values it binds, in
/// the family's label order (see [`Family::at`]).
fn values_at(json: &serde_json::Value, family: &Family) -> Vec<(Vec<String>, f64)> {
    let segments: Vec<&str> = family.at.trim_start_matches('/').split('/').collect();
    let mut out = Vec::new();
    walk(
        json,
        &segments,
        &mut HashMap::new(),
        family.labels,
        &mut out,
    );
    out
}

fn walk(
    v: &serde_json::Value,
    rest: &[&str],
    bound: &mut HashMap<String, String>,
    labels: &[&str],
    out: &mut Vec<(Vec<String>, f64)>,
) {
    let Some((seg, tail)) = rest.split_first() else {
        if let Some(x) = v.as_f64() {
            out.push((labels.iter().map(|l| bound[*l].clone()).collect(), x));
        }
        return;
    };
    let key_text = |k: Option<&serde_json::Value>| match k {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    if let Some(label) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        for (k, child) in v.as_object().into_iter().flatten() {
            bound.insert(label.to_string(), k.clone());
            walk(child, tail, bound, labels, out);
        }
    } else if let Some(inner) = seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        let (field, label) = inner.split_once('=').expect("[field={label}]");
        let label = label.trim_matches(['{', '}']);
        for el in v.as_array().into_iter().flatten() {
            let key = match field.parse::<usize>() {
                Ok(i) => key_text(el.get(i)),
                Err(_) => key_text(el.get(field)),
            };
            if let Some(key) = key {
                bound.insert(label.to_string(), key);
                walk(el, tail, bound, labels, out);
            }
        }
    } else {
        let child = seg
            .split('|')
            .find_map(|k| v.get(k).filter(|c| !c.is_null()))
            .or_else(|| seg.parse::<usize>().ok().and_then(|i| v.get(i)));
        if let Some(c) = child {
            walk(c, tail, bound, labels, out);
        }
    }
}

/// Every figure of a real document against the document's JSON read where the family table
/// says (`at`), not through our types: a figure dropped, misnamed or taken from the wrong field
/// shows here, and a family the fixture lacks is named (add its part to the fixture).
#[test]
fn every_family_reads_its_figures_from_where_the_table_says() {
    let text = include_str!("../../../../../tests/fixtures/document.json");
    let json: serde_json::Value = serde_json::from_str(text).unwrap();
    let doc: Document = serde_json::from_str(text).unwrap();
    let extracted = of_document(&doc);
    assert!(extracted.rejected.is_empty(), "{:?}", extracted.rejected);
    let by_labels = |v: &mut Vec<(Vec<String>, f64)>| v.sort_by(|a, b| a.0.cmp(&b.0));
    for family in FAMILIES {
        if let Reads::Identity(_) = family.reads {
            continue;
        }
        let mut want = values_at(&json, family);
        let mut got: Vec<(Vec<String>, f64)> = extracted
            .figures
            .iter()
            .filter(|f| f.family == *family)
            .map(|f| (f.labels.to_vec(), f.value))
            .collect();
        by_labels(&mut want);
        by_labels(&mut got);
        assert!(
            !want.is_empty(),
            "tests/fixtures/document.json has nothing at {} ({}): add it",
            family.at,
            family.name
        );
        assert_eq!(got, want, "{} at {}", family.name, family.at);
    }
    assert_eq!(
        extracted.figures.len(),
        FAMILIES
            .iter()
            .map(|f| values_at(&json, f).len())
            .sum::<usize>()
    );
    let bandwidth = extracted
        .figures
        .iter()
        .find(|f| f.family == &BANDWIDTH)
        .unwrap();
    assert_eq!(&*bandwidth.basis, "profile=quick, streams=4");
}

/// DCPerf's own metrics (a real run, same machine) against their JSON read by path.
#[test]
fn every_figure_of_upstream_metrics_is_its_value_in_the_json() {
    let text = include_str!("../../../../../tests/fixtures/upstream-health-check-metrics.json");
    let envelope: serde_json::Value = serde_json::from_str(text).unwrap();
    let json = &envelope["metrics"];
    let metrics =
        |j: &serde_json::Value| -> UpstreamMetrics { serde_json::from_value(j.clone()).unwrap() };
    let figures = |j: &serde_json::Value| -> HashMap<String, f64> {
        of_upstream(&metrics(j))
            .figures
            .iter()
            .map(|f| (f.name(), f.value))
            .collect()
    };
    let got = figures(json);
    let at = |p: &str| json.pointer(p).and_then(|v| v.as_f64()).unwrap();
    // DCPerf pads host names with a space: the figure's label is trimmed.
    let mut want: Vec<(String, f64)> = [
        ("ping.latency.127.0.0.1", "/ping/0/latency"),
        (
            "network.bandwidth.127.0.0.1",
            "/iperf3_bandwidth/0/bandwidth",
        ),
        (
            "sleepbench.calls_per_second",
            "/sleepbench/calls per second",
        ),
        ("sleepbench.total_cpu_pct", "/sleepbench/total"),
        ("sleepbench.irq_pct", "/sleepbench/irq%"),
        ("sleepbench.sys_pct", "/sleepbench/sys%"),
        ("memory.memcpy_medium", "/memory/memcpy_medium_mb_s"),
        ("memory.memcpy_large", "/memory/memcpy_large_mb_s"),
    ]
    .iter()
    .map(|(name, path)| (name.to_string(), at(path)))
    .collect();
    let memory = &json["memory"];
    want.extend(memory_figures(memory, "delay_bandwidth_latency"));
    for (name, value) in &want {
        assert_eq!(got.get(name), Some(value), "{name}");
    }
    assert_eq!(
        got.len(),
        want.len(),
        "figures beyond the metrics': {got:?}"
    );

    // Without `total`, the busy CPU is what idle leaves.
    let mut no_total = json.clone();
    no_total["sleepbench"]
        .as_object_mut()
        .unwrap()
        .remove("total");
    let busy = figures(&no_total)["sleepbench.total_cpu_pct"];
    assert!(
        (busy - (100.0 - at("/sleepbench/idle%"))).abs() < 1e-9,
        "{busy}"
    );
    // aarch64's loaded-latency rows (MB/s, another delay scale) are not mm-mem's sweep.
    let mut arm = json.clone();
    arm["memory"]["delay_bandwidth_latency"] = serde_json::json!({
        "loaded_latency": [[0, 41000.0, 120.0], [200, 20000.0, 110.0]]
    });
    assert!(
        !figures(&arm)
            .keys()
            .any(|k| k.starts_with("memory.loaded_")),
        "aarch64 rows became figures"
    );
}

#[test]
fn what_the_machine_has_is_two_figures() {
    let id = MachineIdentity {
        logical_cpus: 384,
        mem_total_kib: Some(1_584_168_960),
        ..MachineIdentity::default()
    };
    let got: Vec<(String, f64)> = of_identity(&id)
        .figures
        .iter()
        .map(|f| (f.name(), f.value))
        .collect();
    assert_eq!(
        got,
        [
            ("machine.mem_total_gib".to_string(), 1510.781),
            ("machine.logical_cpus".to_string(), 384.0)
        ]
    );
    assert!(of_identity(&MachineIdentity::default()).figures.is_empty());
}

#[test]
fn a_figure_equal_to_its_reference_is_not_worse() {
    assert!(!Direction::Higher.is_worse(9.4, 9.4));
    assert!(!Direction::Lower.is_worse(9.4, 9.4));
    assert!(Direction::Higher.is_worse(9.3, 9.4) && !Direction::Higher.is_worse(9.5, 9.4));
    assert!(Direction::Lower.is_worse(9.5, 9.4) && !Direction::Lower.is_worse(9.3, 9.4));
}

/// Literal numbers, not the constants the table uses: a Gbit/s counted as bits, or a MiB
/// as 1,000,000 bytes, shows here.
#[test]
fn prometheus_scales_turn_each_unit_into_base_units() {
    for f in FAMILIES {
        let expected = match f.unit {
            "ms" => 0.001,
            "us" => 0.000_001,
            "ns" => 0.000_000_001,
            "%" => 0.01,
            "Gbit/s" => 125_000_000.0,
            "MB/s" => 1_000_000.0,
            "MiB/s" => 1_048_576.0,
            "GiB/s" | "GiB" => 1_073_741_824.0,
            "segments" | "calls/s" | "IOPS" | "CPUs" => 1.0,
            other => panic!("{}: unit {other} has no expected scale here", f.name),
        };
        assert_eq!(f.prometheus_scale, expected, "{} in {}", f.name, f.unit);
    }
}

#[test]
fn help_says_both_units() {
    assert_eq!(
        BANDWIDTH.unit_note(),
        "bytes per second; the document's figure is in Gbit/s"
    );
    assert_eq!(
        CALLS.unit_note(),
        "calls per second; the document's figure is in calls/s"
    );
    assert_eq!(
        PING_LATENCY.unit_note(),
        "seconds; the document's figure is in ms"
    );
    assert_eq!(
        PING_LOSS.unit_note(),
        "ratio; the document's figure is in %"
    );
}

#[test]
fn keys_drop_the_client_and_find_their_family() {
    let b: Basis = Arc::from("profile=standard");
    let f = Figure::new(&BANDWIDTH, vec!["host.example.com".into()], 9.4, b.clone()).unwrap();
    assert_eq!(f.name(), "network.bandwidth.host.example.com");
    assert_eq!(f.key(), "network.bandwidth");
    assert_eq!(f.client(), Some("host.example.com"));
    let m = Figure::new(
        &IDLE_LATENCY,
        vec!["FullRandom".into(), "Node-0".into(), "Node-1".into()],
        120.0,
        b.clone(),
    )
    .unwrap();
    assert_eq!(m.key(), "memory.idle_latency.FullRandom.Node-0.Node-1");
    assert_eq!(m.client(), None);
    assert_eq!(family_of_key(&m.key()), Some(&IDLE_LATENCY));
    assert_eq!(family_of_key("network.bandwidth"), Some(&BANDWIDTH));
    assert_eq!(
        family_of_key("network.reverse_bandwidth"),
        Some(&REVERSE_BANDWIDTH)
    );
    assert_eq!(family_of_key("nothing.here"), None);
    assert!(Figure::new(&CALLS, vec![], f64::NAN, b.clone()).is_none());
    assert!(Figure::new(&CALLS, vec![], -1.0, b.clone()).is_none());
    assert_eq!(
        basis_difference(
            "profile=standard, pages=4 KiB",
            "profile=standard, pages=1 GiB"
        ),
        "measured with pages=4 KiB where its group used pages=1 GiB"
    );
}

/// A run's check named by a family is of that family's section (`sleepbench.*` for the
/// nanosleep figures), and no check is named by two families: the family table is the one place
/// that says which figure a check judges.
#[test]
fn every_run_check_belongs_to_one_family_of_its_section() {
    let mut seen = std::collections::BTreeSet::new();
    for f in FAMILIES {
        for check in f.run_checks {
            let section = check.split_once('.').map(|(s, _)| s).unwrap_or_default();
            let expected = match f.section {
                Section::Sleep => "sleepbench",
                Section::Network => "network",
                Section::Memory => "memory",
                Section::Storage => "storage",
                Section::System => "system",
            };
            assert_eq!(section, expected, "{check} in {}", f.name);
            assert!(seen.insert(*check), "{check} named twice");
        }
    }
    assert!(seen.len() >= 16, "{seen:?}");
}

#[test]
fn label_values_are_shared_and_never_confused() {
    let a = labels(&["all reads", "Node-0"]);
    let b = labels(&[String::from("all reads"), String::from("Node-0")]);
    assert!(Arc::ptr_eq(&a, &b), "one copy for the same values");
    assert_eq!(&a[..], ["all reads", "Node-0"]);
    assert_ne!(labels(&["a", "b"]), labels(&["a\0b"]));
    // Joined with NUL, these two would read alike: a value holding a NUL is never shared.
    let (x, y) = (labels(&["a\0", "b"]), labels(&["a", "\0b"]));
    assert_eq!(&x[..], ["a\0", "b"]);
    assert_eq!(&y[..], ["a", "\0b"]);
    assert_eq!(&labels::<&str>(&[])[..], [] as [&str; 0]);
}

/// A spec found by its text is the one made the long way: the same copy for the same family,
/// labels and basis; another for any of them different; a label holding a NUL still right.
#[test]
fn a_spec_found_by_its_text_is_the_shared_one() {
    let long = Spec::shared(&BANDWIDTH, labels(&["h1"]), basis("profile=quick"));
    let by_text = Spec::shared_by_text(&BANDWIDTH, &["h1"], "profile=quick");
    assert!(Arc::ptr_eq(&long, &by_text), "one copy");
    assert!(Arc::ptr_eq(
        &by_text,
        &Spec::shared_by_text(&BANDWIDTH, &["h1"], "profile=quick")
    ));
    for other in [
        Spec::shared_by_text(&REVERSE_BANDWIDTH, &["h1"], "profile=quick"),
        Spec::shared_by_text(&BANDWIDTH, &["h2"], "profile=quick"),
        Spec::shared_by_text(&BANDWIDTH, &["h1"], "profile=standard"),
    ] {
        assert!(!Arc::ptr_eq(&long, &other));
        assert_ne!(
            (other.family.name, &other.labels[..], &*other.basis),
            (long.family.name, &long.labels[..], &*long.basis)
        );
    }
    // Never seen: made, then found.
    let fresh = Spec::shared_by_text(&BANDWIDTH, &["fresh-host"], "profile=fresh");
    assert_eq!(
        (&fresh.labels[..], &*fresh.basis),
        (&["fresh-host".to_string()][..], "profile=fresh")
    );
    assert!(Arc::ptr_eq(
        &fresh,
        &Spec::shared_by_text(&BANDWIDTH, &["fresh-host"], "profile=fresh")
    ));
    let nul = Spec::shared_by_text(&BANDWIDTH, &["a\0"], "profile=quick");
    assert_eq!(&nul.labels[..], ["a\0"]);
}

/// A figure's spec is the thread's shared one for its family, labels and basis whether or not
/// the last document's figure at its place had it: documents alike, one with a figure without a
/// value (the places after it kept), one with other labels at the same places, one under
/// another basis, and each again.
#[test]
fn a_figure_in_its_place_has_the_shared_spec() {
    let runs: [(&str, [Option<&str>; 3]); 4] = [
        ("profile=quick", [Some("p1"), Some("p2"), Some("p3")]),
        ("profile=quick", [Some("p1"), None, Some("p3")]),
        ("profile=quick", [Some("p2"), Some("p1"), Some("p3")]),
        ("profile=standard", [Some("p1"), Some("p2"), Some("p3")]),
    ];
    for (common, clients) in runs.iter().chain(&runs) {
        let mut f = Figures::new(common.to_string(), Read::Ours);
        for c in clients {
            f.add(&BANDWIDTH, &[c.unwrap_or("p0")], c.map(|_| 5.0));
        }
        f.add(&REVERSE_BANDWIDTH, &["p1"], Some(1.0));
        let expected: Vec<Arc<Spec>> = clients
            .iter()
            .flatten()
            .map(|c| Spec::shared_by_text(&BANDWIDTH, &[c], common))
            .chain([Spec::shared_by_text(&REVERSE_BANDWIDTH, &["p1"], common)])
            .collect();
        assert_eq!(f.out.figures.len(), expected.len(), "{common} {clients:?}");
        for (fig, spec) in f.out.figures.iter().zip(&expected) {
            assert!(Arc::ptr_eq(&fig.spec, spec), "{common} {clients:?}");
        }
    }
}

/// A figure's key told without spelling it is the key spelled: for keys that are it, that
/// stop short of it or run past it, that differ in a label, and per-client figures (whose key
/// leaves the client off).
#[test]
fn a_key_told_in_place_is_the_key_spelled() {
    let figures = [
        Figure::new(&BANDWIDTH, vec!["h1".into()], 1.0, "b".into()),
        Figure::new(
            &IDLE_LATENCY,
            vec!["FullRandom".into(), "Node-0".into(), "Node-1".into()],
            1.0,
            "b".into(),
        ),
        Figure::new(&MEM_TOTAL, vec![], 1.0, "b".into()),
    ];
    for fig in figures.iter().flatten() {
        let key = fig.key();
        let mut tries = vec![
            key.clone(),
            format!("{key}."),
            format!("{key}.x"),
            key[..key.len() - 1].to_string(),
            format!("x{key}"),
            key.replace('.', "_"),
            String::new(),
            fig.name(),
        ];
        tries.extend(fig.labels.iter().map(|l| key.replace(l.as_str(), "other")));
        for k in tries {
            assert_eq!(fig.key_is(&k), fig.key() == k, "{k}");
        }
    }
}
