//! Tests of `store.rs`.

use super::*;
use crate::wire::figures::of_document;
use crate::wire::identity::MachineIdentity;

fn doc(started: u64, peak: f64) -> Document {
    let mut d: Document = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/document.json"
    )))
    .expect("the fixture is a document");
    d.health_check.started_unix = started;
    d.health_check.machine = Some(MachineIdentity {
        hostname: Some("h1".into()),
        machine_id: Some("0123456789abcdef0123456789abcdef".into()),
        boot_id: Some("b".into()),
        ..MachineIdentity::default()
    });
    if let Some(crate::wire::document::Part::Measured(m)) = &mut d.memory {
        m.peak_bandwidth_mb_s.insert("all reads".into(), peak);
    }
    d
}

fn append(h: &mut History, d: &Document, keep: Keep) -> i64 {
    append_at(h, d, keep, unix_now())
}

/// Records `d` as a run whose clock read `now` when it was recorded.
fn append_at(h: &mut History, d: &Document, keep: Keep, now: u64) -> i64 {
    let figures = of_document(d).figures;
    h.append_at(
        &Record {
            doc: d,
            figures: &figures,
            noisy: &BTreeSet::new(),
            references: &BTreeMap::new(),
        },
        keep,
        now,
    )
    .expect("append")
}

const ALL: Keep = Keep {
    runs: None,
    age: None,
};

#[test]
fn runs_read_back_as_trends_and_the_past() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    for (i, v) in [100.0, 110.0, 90.0].iter().enumerate() {
        append(&mut h, &doc(1_000 + i as u64, *v), ALL);
    }
    let runs = h.runs(&Filter::default()).expect("runs");
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0].hostname.as_deref(), Some("h1"));
    let trends = h.trends(&Filter::default()).expect("trends");
    let t = &trends["memory.peak_bandwidth.all reads"];
    let values: Vec<f64> = t.points.iter().map(|p| p.value).collect();
    assert_eq!(values, [100.0, 110.0, 90.0]);
    assert_eq!(t.unit, "MiB/s");
    let d = doc(2_000, 1.0);
    let figures = of_document(&d).figures;
    let machine = History::machine_of(&d).expect("machine");
    let (earlier, past) = h
        .past(&machine, d.health_check.profile.name(), &figures, 2)
        .expect("past");
    assert_eq!(earlier.len(), 2, "the last two runs");
    let p = &past["memory.peak_bandwidth.all reads"];
    assert_eq!(p.iter().map(|p| p.value).collect::<Vec<_>>(), [110.0, 90.0]);
    let last = h.last_run(&machine).expect("last").expect("a run");
    assert_eq!(last.summary.run, runs[2].run);
    h.check_integrity().expect("sound");
    // Documents come back whole.
    let docs = h.documents(&Filter::default()).expect("documents");
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[1].1.health_check.started_unix, 1_001);
}

#[test]
fn the_last_run_that_described_the_machine_is_the_one_counters_start_from() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    let described = append(&mut h, &doc(1, 1.0), ALL);
    let mut sleep_only = doc(2, 1.0);
    sleep_only.system = None;
    append(&mut h, &sleep_only, ALL);
    let machine = History::machine_of(&sleep_only).expect("machine");
    let last = h.last_run(&machine).expect("last").expect("a run");
    assert_eq!(last.summary.run, described);
    assert!(!last.facts.is_empty() || last.counters.is_none());
    // Its configuration changes are between runs that recorded one.
    assert!(h.changes(&Filter::default()).expect("changes").is_empty());
}

#[test]
fn keep_deletes_the_oldest_runs_and_their_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    let keep = Keep {
        runs: Some(2),
        age: None,
    };
    for i in 0..5 {
        append(&mut h, &doc(unix_now() - 100 + i, 100.0 + i as f64), keep);
    }
    let runs = h.runs(&Filter::default()).expect("runs");
    assert_eq!(runs.len(), 2);
    let t = h.trends(&Filter::default()).expect("trends");
    let values: Vec<f64> = t["memory.peak_bandwidth.all reads"]
        .points
        .iter()
        .map(|p| p.value)
        .collect();
    assert_eq!(values, [103.0, 104.0], "the figures went with their runs");
    // By age: a run from three days ago goes when two days are kept, once the newest
    // AGE_KEEPS_NEWEST runs are others.
    let by_age = Keep {
        runs: None,
        age: Some(Duration::from_secs(2 * 86_400)),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    let now = unix_now();
    append(&mut h, &doc(now - 3 * 86_400, 1.0), ALL);
    append(&mut h, &doc(now - 1000, 2.0), by_age);
    // One run's clock never decides alone: the run before this one must agree.
    assert_eq!(h.runs(&Filter::default()).expect("runs").len(), 2);
    for i in 2..AGE_KEEPS_NEWEST as u64 {
        append(&mut h, &doc(now - 1000 + i, 3.0), by_age);
    }
    // The old run is still among the newest AGE_KEEPS_NEWEST.
    let runs = h.runs(&Filter::default()).expect("runs");
    assert_eq!(runs.len(), AGE_KEEPS_NEWEST);
    assert_eq!(runs[0].started_unix, now - 3 * 86_400);
    append(&mut h, &doc(now, 3.0), by_age);
    let runs = h.runs(&Filter::default()).expect("runs");
    assert_eq!(runs.len(), AGE_KEEPS_NEWEST);
    assert!(runs.iter().all(|r| r.started_unix > now - 86_400));
}

#[test]
fn a_wrong_clock_never_moves_retention() {
    let two_years = Keep::default();
    let year_2000 = 946_684_800;
    let now = unix_now();
    // One run stamped in the year 2000 among normal ones: every run stays.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    for i in 0..3 {
        append(&mut h, &doc(now - 300 + i, 1.0), two_years);
    }
    append(&mut h, &doc(year_2000, 2.0), two_years);
    append(&mut h, &doc(now, 3.0), two_years);
    append(&mut h, &doc(now + 1, 4.0), two_years);
    assert_eq!(h.runs(&Filter::default()).expect("runs").len(), 6);
    // A clock years ahead: the run is recorded, and ages judged by it delete nothing.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    for i in 0..3 {
        append(&mut h, &doc(now - 300 + i, 1.0), two_years);
    }
    // The clock reads ten years on: by it, the earlier runs are all older than two years.
    let later = now + 10 * 365 * 86_400;
    append_at(&mut h, &doc(later, 2.0), two_years, later);
    assert_eq!(h.runs(&Filter::default()).expect("runs").len(), 4);
    // Back to the right time: the run from the future is kept, and nothing else goes.
    append(&mut h, &doc(now, 3.0), two_years);
    assert_eq!(h.runs(&Filter::default()).expect("runs").len(), 5);
    // Several runs in a row years ahead (before NTP set the clock): the newest
    // AGE_KEEPS_NEWEST runs stay, whatever the clock says.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    for i in 0..40 {
        append(&mut h, &doc(now - 300 + i, 1.0), two_years);
    }
    append_at(&mut h, &doc(later, 2.0), two_years, later);
    // One run's clock does not decide: the run before it must agree.
    assert_eq!(h.runs(&Filter::default()).expect("runs").len(), 41);
    for i in 1..5 {
        append_at(&mut h, &doc(later + i, 2.0), two_years, later + i);
    }
    assert_eq!(
        h.runs(&Filter::default()).expect("runs").len(),
        AGE_KEEPS_NEWEST
    );
    // The age still deletes what it names: the runs older than it.
    let ahead = Keep {
        runs: Some(10_000),
        age: Some(Duration::from_secs(86_400)),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.sqlite")).expect("open");
    for started in [now - 5 * 86_400, now - 4 * 86_400] {
        append(&mut h, &doc(started, 1.0), two_years);
    }
    for i in 0..AGE_KEEPS_NEWEST as u64 {
        append(&mut h, &doc(now - 3600 + i, 1.0), two_years);
    }
    append(&mut h, &doc(now, 2.0), ahead);
    let runs = h.runs(&Filter::default()).expect("runs");
    assert_eq!(runs.len(), AGE_KEEPS_NEWEST + 1);
    assert!(runs.iter().all(|r| r.started_unix >= now - 3600));
}

#[test]
fn other_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let theirs = dir.path().join("theirs.sqlite");
    let c = Connection::open(&theirs).expect("sqlite");
    c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .expect("their table");
    drop(c);
    let e = History::open(&theirs).err().expect("refused");
    assert!(e.to_string().contains("another program's"), "{e}");
    let newer = dir.path().join("newer.sqlite");
    let mut h = History::open(&newer).expect("open");
    append(&mut h, &doc(1, 1.0), ALL);
    drop(h);
    let c = Connection::open(&newer).expect("sqlite");
    c.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .expect("version");
    drop(c);
    let e = History::open_existing(&newer).err().expect("refused");
    assert!(e.to_string().contains("newer health_check"), "{e}");
    assert!(
        History::open_existing(&dir.path().join("absent.sqlite")).is_err(),
        "reading never creates"
    );
    assert!(!dir.path().join("absent.sqlite").exists());
}

/// A file of version 2 (figures without the reference they were judged against) reads as it
/// is, and gains the columns when a run is recorded in it: its old rows have no reference, new
/// ones have theirs.
#[test]
fn a_version_2_file_reads_and_gains_the_references() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.sqlite");
    {
        let mut h = History::open(&path).expect("open");
        append(&mut h, &doc(1_000, 100.0), ALL);
    }
    // Back to version 2: the columns dropped, the version lowered.
    {
        let c = Connection::open(&path).expect("sqlite");
        c.execute_batch(
            "ALTER TABLE figures DROP COLUMN reference;
             ALTER TABLE figures DROP COLUMN reference_runs;
             PRAGMA user_version = 2;",
        )
        .expect("downgrade");
    }
    let old = History::open_existing(&path).expect("read a version 2 file");
    let trends = old.trends(&Filter::default()).expect("trends");
    assert!(
        trends
            .values()
            .flat_map(|t| &t.points)
            .all(|p| p.reference.is_none())
    );
    drop(old);
    let mut h = History::open(&path).expect("upgrade");
    let d = doc(2_000, 101.0);
    let figures = of_document(&d).figures;
    let name = "memory.peak_bandwidth.all reads".to_string();
    let references = BTreeMap::from([(
        name.clone(),
        PastReference {
            median: 99.5,
            runs: 3,
        },
    )]);
    h.append_at(
        &Record {
            doc: &d,
            figures: &figures,
            noisy: &BTreeSet::new(),
            references: &references,
        },
        ALL,
        unix_now(),
    )
    .expect("append");
    let trends = h.trends(&Filter::default()).expect("trends");
    let points = &trends
        .iter()
        .find(|(k, _)| k.ends_with(&name))
        .expect("the figure's trend")
        .1
        .points;
    assert_eq!(points[0].reference, None);
    assert_eq!(
        points[1].reference,
        Some(PastReference {
            median: 99.5,
            runs: 3
        })
    );
}
