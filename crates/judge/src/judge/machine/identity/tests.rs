use super::*;
use crate::wire::figures::{BANDWIDTH, Figure, PEAK_BANDWIDTH};

fn run(source: &str, id: &str, started: u64, host: &str, bw: f64) -> Machine {
    let mut m = Machine::measured_only("x");
    m.entry.source = source.into();
    m.entry.machine_id = Some(id.into());
    m.entry.boot_id = Some("boot".into());
    m.entry.started_unix = Some(started);
    m.entry.hostname = Some(host.into());
    m.figures = vec![
        Figure::new(&PEAK_BANDWIDTH, vec!["all reads".into()], bw, "b".into()).unwrap(),
        Figure::new(&BANDWIDTH, vec!["c1".into()], 10.0, "b".into()).unwrap(),
    ];
    m.entry.figures = 2;
    m
}

/// Five copies of one run are one machine; three runs of one machine are one, on each figure's
/// median; a machine of its own id is untouched.
#[test]
fn copies_count_once_and_runs_of_one_machine_are_its_median() {
    let mut ms: Vec<Machine> = (0..5)
        .map(|i| run(&format!("copy{i}.json"), "m1", 100, "h1", 50.0))
        .collect();
    ms.push(run("r1.json", "m2", 100, "h2", 10.0));
    ms.push(run("r2.json", "m2", 200, "h2", 30.0));
    ms.push(run("r3.json", "m2", 300, "h2", 20.0));
    ms.push(run("other.json", "m3", 100, "h3", 40.0));
    let (ms, notes) = one_vote(ms);
    assert_eq!(ms.len(), 3);
    let dups: Vec<&IdentityNote> = notes
        .iter()
        .filter(|n| n.kind == IdentityKind::Duplicate)
        .collect();
    assert_eq!(dups.len(), 4);
    assert_eq!(dups[0].files, ["copy0.json", "copy1.json"]);
    let m2 = ms
        .iter()
        .find(|m| m.entry.machine_id.as_deref() == Some("m2"))
        .unwrap();
    assert_eq!(m2.entry.source, "r3.json", "the latest run's entry");
    let peak = m2
        .figures
        .iter()
        .find(|f| f.family.name == PEAK_BANDWIDTH.name)
        .unwrap();
    assert_eq!(peak.value, 20.0, "the median of 10, 30 and 20");
    assert!(
        notes
            .iter()
            .any(|n| n.kind == IdentityKind::Runs && n.files.len() == 3)
    );
    assert!(m2.entry.reasons.iter().any(|r| r.contains("one of 3 runs")));
}

/// Two documents of different machines claiming one host name, or one address: both lose the
/// claim and are warned, and the report names both files.
#[test]
fn documents_claiming_one_identity_clash() {
    let real = run("h1.json", "m1", 100, "h1", 50.0);
    let mut impostor = run("evil.json", "m9", 100, "h1", 50.0);
    impostor.addresses = vec!["10.0.0.1".into()];
    let mut other = run("h2.json", "m2", 100, "h2", 50.0);
    other.addresses = vec!["10.0.0.1".into(), "172.17.0.1".into()];
    // A bridge's address on every host, which no path names: no clash.
    let mut bystander = run("h3.json", "m3", 100, "h3", 50.0);
    bystander.addresses = vec!["172.17.0.1".into()];
    // A server that measured 10.0.0.1 as its client.
    let mut server = run("s.json", "m4", 100, "s", 50.0);
    server.figures =
        vec![Figure::new(&BANDWIDTH, vec!["10.0.0.1".into()], 10.0, "b".into()).unwrap()];
    let (ms, notes) = one_vote(vec![real, impostor, other, bystander, server]);
    let clashes: Vec<&IdentityNote> = notes
        .iter()
        .filter(|n| n.kind == IdentityKind::Clash)
        .collect();
    assert_eq!(clashes.len(), 2, "{notes:?}");
    let by_name = clashes
        .iter()
        .find(|n| n.message.contains("claim host name h1 as 2 machines"))
        .expect("the host name's clash");
    assert_eq!(by_name.files, ["h1.json", "evil.json"]);
    let by_address = clashes
        .iter()
        .find(|n| n.message.contains("claim address 10.0.0.1 as 2 machines"))
        .expect("the address's clash");
    assert_eq!(by_address.files, ["evil.json", "h2.json"]);
    for m in &ms[..3] {
        assert_eq!(m.entry.status, MachineStatus::Warn, "{:?}", m.entry);
    }
    // Each loses only what is disputed: h2 keeps its name and the bridge's address (before, an
    // address another machine held took its host name too).
    let kept: Vec<(Option<&str>, &[String])> = ms[..3]
        .iter()
        .map(|m| (m.entry.hostname.as_deref(), m.addresses.as_slice()))
        .collect();
    assert_eq!(
        kept,
        [
            (None, &[][..]),
            (None, &[][..]),
            (Some("h2"), &["172.17.0.1".to_string()][..])
        ]
    );
    for m in &ms[3..] {
        assert_eq!(m.entry.status, MachineStatus::Ok, "{:?}", m.entry);
    }
    // The server's path to the disputed address is nobody's: no machine is made up for it
    // (before, the view added a machine named 10.0.0.1, which blame then judged).
    let mut ms = ms;
    let before = ms.len();
    let view = crate::judge::view::View::of(&mut ms);
    let added: Vec<&str> = ms[before..]
        .iter()
        .map(|m| m.entry.label.as_str())
        .collect();
    assert_eq!(
        added,
        ["c1"],
        "only the clients no one claimed are made machines"
    );
    assert_eq!(view.named("10.0.0.1"), None);
    assert_eq!(view.named("h1"), None);
}

/// Hosts cloned from one image share /etc/machine-id: they are not one machine's runs (each
/// keeps its vote), and both are warned; copies of a failed run still count once.
#[test]
fn one_machine_id_under_two_names_is_a_cloned_image() {
    let a = run("a.json", "m1", 100, "h1", 50.0);
    let b = run("b.json", "m1", 200, "h2", 10.0);
    let mut failed = run("f.json", "m5", 100, "h5", 1.0);
    failed.entry.status = MachineStatus::Failed;
    let mut failed_copy = run("f-copy.json", "m5", 100, "h5", 1.0);
    failed_copy.entry.status = MachineStatus::Failed;
    let (ms, notes) = one_vote(vec![a, b, failed, failed_copy]);
    assert_eq!(ms.len(), 3, "{notes:?}");
    let clash = notes
        .iter()
        .find(|n| n.kind == IdentityKind::Clash)
        .expect("a clash");
    assert_eq!(clash.files, ["a.json", "b.json"]);
    assert!(clash.message.contains("cloned image"), "{}", clash.message);
    assert!(!notes.iter().any(|n| n.kind == IdentityKind::Runs));
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.kind == IdentityKind::Duplicate)
            .count(),
        1
    );
    for m in &ms[..2] {
        assert_eq!(m.entry.status, MachineStatus::Warn);
        assert!(m.entry.hostname.is_some(), "each keeps its name");
    }
}

/// A fleet cloned from one image: 5,000 hosts with one machine id make one note whose text stays
/// short (the report's `files` lists them all), each host warned once, in linear work.
#[test]
fn a_cloned_fleet_is_one_short_note() {
    let ms: Vec<Machine> = (0..5000)
        .map(|i| {
            run(
                &format!("h{i}.json"),
                "same",
                100 + i,
                &format!("h{i}"),
                50.0,
            )
        })
        .collect();
    let (ms, notes) = one_vote(ms);
    assert_eq!(ms.len(), 5000);
    assert_eq!(notes.len(), 1, "{:?}", &notes[..notes.len().min(3)]);
    assert_eq!(notes[0].files.len(), 5000);
    assert!(notes[0].message.len() < 400, "{}", notes[0].message);
    assert!(notes[0].message.contains("and 4996 more"));
    assert!(ms.iter().all(|m| m.entry.reasons.len() == 1));
}

/// A machine whose first run read failed still has one vote: its runs pool, the latest run's
/// status is the machine's, and the failed run is said (before, each later run stood beside the
/// failed one as a vote of its own).
#[test]
fn a_failed_run_does_not_give_its_machine_more_votes() {
    let mut failed = run("d1/h1.json", "m1", 100, "h1", 1.0);
    failed.entry.status = MachineStatus::Failed;
    failed.entry.reasons = vec!["storage failed to run".into()];
    let ms = vec![
        failed,
        run("d2/h1.json", "m1", 200, "h1", 30.0),
        run("d3/h1.json", "m1", 300, "h1", 20.0),
        run("h2.json", "m2", 100, "h2", 20.0),
    ];
    let (ms, notes) = one_vote(ms);
    assert_eq!(ms.len(), 2, "{notes:?}");
    let h1 = &ms[0];
    assert_eq!(h1.entry.source, "d3/h1.json", "the latest run's entry");
    assert_eq!(h1.entry.status, MachineStatus::Ok);
    assert!(
        h1.entry
            .reasons
            .iter()
            .any(|r| r.contains("an earlier run (d1/h1.json) failed: storage failed to run")),
        "{:?}",
        h1.entry.reasons
    );
    assert!(
        notes
            .iter()
            .any(|n| n.kind == IdentityKind::Runs && n.files.len() == 3)
    );
    // The latest failed: the machine's status is failed, still one vote.
    let mut late = run("late.json", "m3", 900, "h3", 1.0);
    late.entry.status = MachineStatus::Failed;
    let (ms, _) = one_vote(vec![run("early.json", "m3", 100, "h3", 5.0), late]);
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].entry.status, MachineStatus::Failed);
}

/// Two boots that started a run in the same second under one machine id and host name are two
/// machines (a clone that kept its name): each its own vote, named by file, warned, one note; a
/// copy of either still counts once.
#[test]
fn a_clone_that_kept_its_name_is_two_machines() {
    let a = run("a.json", "m1", 100, "localhost", 50.0);
    let mut b = run("b.json", "m1", 100, "localhost", 10.0);
    b.entry.boot_id = Some("another boot".into());
    b.addresses = vec!["10.0.0.9".into()];
    let mut b_copy = run("b-copy.json", "m1", 100, "localhost", 10.0);
    b_copy.entry.boot_id = Some("another boot".into());
    let (ms, notes) = one_vote(vec![a, b, b_copy]);
    assert_eq!(ms.len(), 2, "{notes:?}");
    let clash: Vec<&IdentityNote> = notes
        .iter()
        .filter(|n| n.kind == IdentityKind::Clash)
        .collect();
    assert_eq!(clash.len(), 1, "{notes:?}");
    assert_eq!(clash[0].files, ["a.json", "b.json"]);
    assert!(
        clash[0].message.contains("2 machines, not one"),
        "{}",
        clash[0].message
    );
    assert!(notes.iter().any(|n| n.kind == IdentityKind::Duplicate));
    for m in &ms {
        assert_eq!(m.entry.status, MachineStatus::Warn, "{:?}", m.entry);
        assert!(m.entry.hostname.is_none() && m.addresses.is_empty());
    }
}

/// A cloned image's hosts with several runs each: the warning stays on each pooled machine
/// (before, it was raised on a run that pooling then replaced).
#[test]
fn a_cloned_image_is_still_warned_when_its_hosts_have_several_runs() {
    let ms = vec![
        run("a1.json", "m1", 100, "h1", 50.0),
        run("b1.json", "m1", 110, "h2", 50.0),
        run("a2.json", "m1", 200, "h1", 50.0),
        run("b2.json", "m1", 210, "h2", 50.0),
    ];
    let (ms, notes) = one_vote(ms);
    assert_eq!(ms.len(), 2, "{notes:?}");
    for m in &ms {
        assert_eq!(m.entry.status, MachineStatus::Warn, "{:?}", m.entry);
        assert!(
            m.entry.reasons.iter().any(|r| r.contains("identity clash")),
            "{:?}",
            m.entry.reasons
        );
    }
}

/// A run whose clock said next year does not speak for its machine for ever: the latest run by
/// a believable clock does, and the odd one is named.
#[test]
fn a_run_from_the_future_is_not_the_latest() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut odd = run("odd.json", "m1", now + 365 * 86_400, "h1", 1.0);
    odd.entry.status = MachineStatus::Warn;
    let ms = vec![
        odd,
        run("old.json", "m1", now - 7200, "h1", 20.0),
        run("new.json", "m1", now - 60, "h1", 30.0),
    ];
    let (ms, _) = one_vote(ms);
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].entry.source, "new.json");
    assert_eq!(ms[0].entry.status, MachineStatus::Ok);
    assert!(
        ms[0]
            .entry
            .reasons
            .iter()
            .any(|r| r.contains("odd.json started in the future")),
        "{:?}",
        ms[0].entry.reasons
    );
}

/// A stateless node (its /etc/machine-id made anew at each boot) run three times: one machine of
/// three runs, said, not three impostors of its host name; the same host name at the same time
/// from other machines still clashes, and so do unconfigured hosts all named `localhost`.
#[test]
fn a_node_with_a_new_machine_id_each_boot_is_one_machine() {
    let node = |file: &str, id: &str, boot: &str, start: u64, host: &str| {
        let mut m = run(file, id, start, host, 10.0 + start as f64 / 1000.0);
        m.entry.boot_id = Some(boot.into());
        m.entry.sku = Some(crate::wire::fleet::Sku::default());
        m
    };
    let ms = vec![
        node("mon.json", "m1", "b1", 10_000, "n001"),
        node("tue.json", "m2", "b2", 96_400, "n001"),
        node("wed.json", "m3", "b3", 182_800, "n001"),
        node("other.json", "m9", "b9", 10_000, "n002"),
    ];
    let (ms, notes) = one_vote(ms);
    assert_eq!(ms.len(), 2, "{notes:?}");
    assert!(
        !notes.iter().any(|n| n.kind == IdentityKind::Clash),
        "{notes:?}"
    );
    let runs = notes
        .iter()
        .find(|n| n.kind == IdentityKind::Runs)
        .expect("the runs said");
    assert_eq!(runs.files, ["mon.json", "tue.json", "wed.json"]);
    assert!(
        runs.message.contains("anew at each boot"),
        "{}",
        runs.message
    );
    assert_eq!(ms[0].entry.source, "wed.json", "the latest run's entry");
    assert_eq!(ms[0].entry.hostname.as_deref(), Some("n001"));
    // Within minutes of each other: two machines claiming one name, a clash.
    let (_, notes) = one_vote(vec![
        node("a.json", "m1", "b1", 10_000, "n001"),
        node("b.json", "m2", "b2", 10_030, "n001"),
    ]);
    assert!(
        notes.iter().any(|n| n.kind == IdentityKind::Clash),
        "{notes:?}"
    );
    // Hosts never given a name are not one machine by it.
    let (ms, notes) = one_vote(vec![
        node("a.json", "m1", "b1", 10_000, "localhost"),
        node("b.json", "m2", "b2", 96_400, "localhost"),
    ]);
    assert_eq!(ms.len(), 2, "{notes:?}");
}
