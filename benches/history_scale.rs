//! The history at scale (issue 20): a run appended to a history of 1,000, 10,000 and 100,000
//! runs, and one figure's trend read back, timed with the library's own calls (what a run and
//! `health_check history` do). The anchors are the same operations on a history of 1,000 runs
//! in the same process: the ratios show how cost grows with the file. Also prints the file's
//! size per run.
//!
//! Goals: an append (the past's query, the judge's input, and the write) under 50 ms at 100,000
//! runs; one figure's trend over 100,000 runs under 100 ms.
//!
//! Usage: cargo bench --bench history_scale [-- 100000]

use health_check::history::{Filter, History, Keep, Record};
use health_check::wire::document::{Document, Profile};
use health_check::wire::figures;
use health_check::wire::identity::MachineIdentity;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const FIXTURE: &str = include_str!("../tests/fixtures/document.json");
const FIGURE: &str = "memory.peak_bandwidth.all reads";
const SAMPLES: usize = 21;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Fleet {
    doc: Document,
    next: u64,
}

impl Fleet {
    fn run(&mut self) -> Document {
        let mut d = self.doc.clone();
        d.health_check.started_unix = 1_700_000_000 + self.next * 300;
        d.health_check.seconds = 60.0;
        self.next += 1;
        d
    }
}

/// One run as a recording run makes it: the machine's past read, then the append.
fn append(h: &mut History, fleet: &mut Fleet) -> Duration {
    let doc = fleet.run();
    let extracted = figures::of_document(&doc);
    let start = Instant::now();
    let machine = History::machine_of(&doc).expect("the fixture says which machine");
    let _past = h
        .past(&machine, "standard", &extracted.figures, 23)
        .expect("past");
    let _last = h.last_run(&machine).expect("last");
    h.append(
        &Record {
            doc: &doc,
            figures: &extracted.figures,
            noisy: &BTreeSet::new(),
            references: &BTreeMap::new(),
        },
        Keep {
            runs: None,
            age: None,
        },
    )
    .expect("append");
    start.elapsed()
}

fn trend(h: &History) -> Duration {
    let filter = Filter {
        figure: Some(regex::Regex::new(&format!("^{}$", regex::escape(FIGURE))).expect("regex")),
        ..Filter::default()
    };
    let start = Instant::now();
    let t = h.trends(&filter).expect("trend");
    let took = start.elapsed();
    assert_eq!(t.len(), 1);
    took
}

fn main() {
    let largest: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let mut doc: Document = serde_json::from_str(FIXTURE).expect("the fixture is a document");
    doc.health_check.profile = Profile::Standard;
    doc.health_check.machine = Some(MachineIdentity {
        hostname: Some("bench".into()),
        machine_id: Some("0123456789abcdef0123456789abcdef".into()),
        boot_id: Some("boot".into()),
        architecture: "x86_64".into(),
        ..MachineIdentity::default()
    });
    let mut fleet = Fleet { doc, next: 0 };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.sqlite");
    let mut h = History::open(&path).expect("open");
    let figures_per_run = figures::of_document(&fleet.doc).figures.len();
    println!(
        "history_scale: {figures_per_run} figures per run; each row: the median of {SAMPLES} \
         appends and of {SAMPLES} trend reads"
    );
    println!(
        "{:>8} {:>10} {:>9} {:>10} {:>9} {:>9} {:>10}",
        "runs", "append ms", "x anchor", "trend ms", "x anchor", "KiB/run", "fill s"
    );
    let mut anchor: Option<(f64, f64)> = None;
    let mut size = 1_000usize;
    let fill_start = Instant::now();
    while size <= largest {
        while (fleet.next as usize) < size {
            append(&mut h, &mut fleet);
        }
        let fill = fill_start.elapsed().as_secs_f64();
        let a = ms(median(
            (0..SAMPLES).map(|_| append(&mut h, &mut fleet)).collect(),
        ));
        let t = ms(median((0..SAMPLES).map(|_| trend(&h)).collect()));
        let (a0, t0) = *anchor.get_or_insert((a, t));
        let kib = h.size_bytes() as f64 / 1024.0 / fleet.next as f64;
        println!(
            "{size:>8} {a:>10.2} {:>9.2} {t:>10.2} {:>9.2} {kib:>9.1} {fill:>10.0}",
            a / a0,
            t / t0
        );
        size *= 10;
    }
}
