//! Reading documents for the readers: files and directories (searched for `*.json`), in any of
//! the forms a run leaves behind: our document, our document in benchpress's envelope
//! (`--envelope`, or benchpress's `health_check_metrics_*.json` with our parser), and DCPerf's own
//! metrics (bare, or in the envelope). Everything goes through typed wire structs; a file that is
//! none of these is kept with the reason, never dropped.

use crate::wire::dcperf::UpstreamMetrics;
use crate::wire::document::Document;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use std::path::{Path, PathBuf};

/// benchpress's machine record (every value a string).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct EnvelopeMachine {
    /// `x86_64`, `aarch64`.
    #[serde(default)]
    pub cpu_architecture: Option<String>,
    /// lscpu's model name.
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// Host name.
    #[serde(default)]
    pub hostname: Option<String>,
    /// `24684096 KiB`.
    #[serde(default)]
    pub mem_total_kib: Option<String>,
    /// `384`.
    #[serde(default)]
    pub num_logical_cpus: Option<String>,
}

/// What a file held.
#[derive(Debug)]
pub enum Content {
    /// One of our documents.
    Ours(Box<Document>),
    /// DCPerf's own metrics.
    Upstream(Box<UpstreamMetrics>),
    /// No document: a fleet run left this instead, saying why the host has none
    /// (`{"fleet_host_error": "unreachable: ...", "addresses": ["10.0.0.3"]}`), and the
    /// addresses others measured the host at.
    HostError(String, Vec<String>),
}

/// One input file, read.
#[derive(Debug)]
pub struct Loaded {
    /// The file.
    pub path: PathBuf,
    /// Its content, or why it could not be read.
    pub content: Result<Content, String>,
    /// The envelope's machine record, when the file had an envelope.
    pub machine: Option<EnvelopeMachine>,
    /// The envelope's timestamp.
    pub timestamp: Option<u64>,
}

/// What the first pass over a file finds: enough to know its form.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(default)]
    health_check: Option<IgnoredAny>,
    #[serde(default)]
    fleet_report: Option<IgnoredAny>,
    #[serde(default)]
    fleet_host_error: Option<String>,
    #[serde(default)]
    addresses: Vec<String>,
    #[serde(default, borrow)]
    metrics: Option<&'a RawValue>,
    #[serde(default)]
    machines: Option<Vec<EnvelopeMachine>>,
    #[serde(default)]
    timestamp: Option<u64>,
    #[serde(default)]
    ping: Option<IgnoredAny>,
    #[serde(default)]
    sleepbench: Option<IgnoredAny>,
    #[serde(default)]
    memory: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct InnerProbe {
    #[serde(default)]
    health_check: Option<IgnoredAny>,
}

/// The largest document a reader takes, bytes (`HEALTH_CHECK_MAX_DOCUMENT` raises it): a run's
/// document is a few hundred KiB; anything far larger is not one.
pub const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// [`MAX_DOCUMENT_BYTES`], or what `HEALTH_CHECK_MAX_DOCUMENT` sets.
pub fn max_document_bytes() -> u64 {
    std::env::var("HEALTH_CHECK_MAX_DOCUMENT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(MAX_DOCUMENT_BYTES)
}

/// The files the inputs name: files as given, and every `*.json` regular file below a
/// directory. What cannot be read (a directory that cannot be listed, a FIFO or device found in
/// a directory) is kept with the reason, as an input that failed; the rest go on. `Err` only
/// when a path given on the command line does not exist.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("'{}': {e}", p.display()))?;
        if meta.is_dir() {
            let before = out.len();
            walk(p, &mut out);
            out[before..].sort_unstable_by(|a: &Input, b: &Input| walk_order(a.path(), b.path()));
        } else {
            out.push(Input::File(p.clone()));
        }
    }
    Ok(out)
}

/// The order of two paths a walk found below one directory: [`Path`]'s own (by component),
/// compared as bytes with the separator lowest, which is the same for paths joined one name at a
/// time and cheaper by far (parsing components was most of listing 100,000 files).
fn walk_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let (x, y) = (a.as_os_str().as_bytes(), b.as_os_str().as_bytes());
    let i = first_difference(x, y);
    let key = |c: u8| if c == b'/' { 0 } else { c };
    match (x.get(i), y.get(i)) {
        (Some(&p), Some(&q)) => key(p).cmp(&key(q)),
        _ => x.len().cmp(&y.len()),
    }
}

/// Where two byte strings first differ (the shorter's length when one begins the other),
/// eight bytes at a time: a fleet's file names share most of their bytes.
fn first_difference(x: &[u8], y: &[u8]) -> usize {
    let n = x.len().min(y.len());
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or_default());
    let mut i = 0;
    while i + 8 <= n {
        let differ = word(x, i) ^ word(y, i);
        if differ != 0 {
            return i + (differ.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && x[i] == y[i] {
        i += 1;
    }
    i
}

/// One input: a file to read, or one already known not to be readable.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file to read.
    File(PathBuf),
    /// Not readable, and why.
    Failed(PathBuf, String),
}

impl Input {
    /// Where it is.
    pub fn path(&self) -> &Path {
        match self {
            Input::File(p) | Input::Failed(p, _) => p,
        }
    }
}

/// Lists `dir` depth first. Each directory's entries are read and its handle closed before
/// descending, so a deep tree holds one descriptor at a time (a low `ulimit -n` is no limit to
/// depth); what cannot be listed is an input that failed, and the walk goes on.
fn walk(dir: &Path, out: &mut Vec<Input>) {
    let listed: Result<Vec<(PathBuf, std::io::Result<std::fs::FileType>)>, std::io::Error> =
        std::fs::read_dir(dir).and_then(|entries| {
            entries
                .map(|e| e.map(|e| (e.path(), e.file_type())))
                .collect()
        });
    let entries = match listed {
        Ok(e) => e,
        Err(e) => {
            out.push(Input::Failed(
                dir.to_path_buf(),
                format!("cannot list this directory: {e}"),
            ));
            return;
        }
    };
    for (path, kind) in entries {
        let Ok(kind) = kind else {
            out.push(Input::Failed(path, "cannot tell what it is".into()));
            continue;
        };
        if kind.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            if kind.is_file() || kind.is_symlink() {
                out.push(Input::File(path));
            } else {
                out.push(Input::Failed(
                    path,
                    "not a regular file (a FIFO, socket or device): not read".into(),
                ));
            }
        }
    }
}

/// Why [`read_regular_text`] refused a file.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// It could not be opened or read (the OS error, worded).
    Io(String),
    /// A FIFO, socket or device: reading it could block or never end.
    NotRegular,
    /// Larger than the cap; the size in bytes (as far as it could be read).
    TooLarge(u64),
}

/// The text of a regular file of at most `cap` bytes, opened without blocking so a FIFO cannot
/// hang the reader. Every file we read from an operator (documents, rules, baselines) comes
/// through here.
pub fn read_regular_text(path: &Path, cap: u64) -> Result<String, Refusal> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e: std::io::Error| Refusal::Io(format!("cannot read it: {e}"));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Refusal::NotRegular);
    }
    if meta.len() > cap {
        return Err(Refusal::TooLarge(meta.len()));
    }
    let mut text = String::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_string(&mut text).map_err(io)?;
    if text.len() as u64 > cap {
        return Err(Refusal::TooLarge(text.len() as u64));
    }
    Ok(text)
}

/// A document's text, refused in words a reader of the fleet report can act on.
fn read_text(path: &Path) -> Result<String, String> {
    let cap = max_document_bytes();
    read_regular_text(path, cap).map_err(|refusal| match refusal {
        Refusal::Io(message) => message,
        Refusal::NotRegular => "not a regular file (a FIFO, socket or device): not read".into(),
        Refusal::TooLarge(bytes) => format!(
            "{bytes} bytes is larger than a document can be ({cap} bytes; \
             HEALTH_CHECK_MAX_DOCUMENT raises the limit)"
        ),
    })
}

/// Reads one file. `Ok(None)` for a file that is one of our fleet reports (a reader's output,
/// not a run: skipped so a results directory can be compared again).
pub fn load(path: &Path) -> Option<Loaded> {
    let text = match read_text(path) {
        Ok(t) => t,
        Err(why) => return Some(failed(path, why)),
    };
    // Most files a reader meets are our documents: one pass reads them. Any other form (an
    // envelope, DCPerf's metrics, a fleet report, a host's error, a document that does not
    // read) is probed first, to say what it is.
    let quick = super::checked::read_document(&text)
        .unwrap_or_else(|| serde_json::from_str::<Document>(&text));
    if let Ok(doc) = quick {
        return Some(Loaded {
            path: path.to_path_buf(),
            content: Ok(Content::Ours(Box::new(doc))),
            machine: None,
            timestamp: None,
        });
    }
    let probe: Probe = match serde_json::from_str(&text) {
        Ok(p) => p,
        Err(e) => return Some(failed(path, format!("not a JSON object: {e}"))),
    };
    if probe.fleet_report.is_some() {
        return None;
    }
    let machine = probe.machines.and_then(|m| m.into_iter().next());
    let content = if let Some(why) = probe.fleet_host_error {
        Ok(Content::HostError(why, probe.addresses))
    } else if probe.health_check.is_some() {
        read_ours(&text)
    } else if let Some(metrics) = probe.metrics {
        match serde_json::from_str::<InnerProbe>(metrics.get()) {
            Ok(inner) if inner.health_check.is_some() => read_ours(metrics.get()),
            Ok(_) => read_upstream(metrics.get()),
            Err(e) => Err(format!("its metrics are not a JSON object: {e}")),
        }
    } else if probe.ping.is_some() || probe.sleepbench.is_some() || probe.memory.is_some() {
        read_upstream(&text)
    } else {
        Err("not a health_check document: no 'health_check', 'metrics' or DCPerf keys".into())
    };
    Some(Loaded {
        path: path.to_path_buf(),
        content,
        machine,
        timestamp: probe.timestamp,
    })
}

/// Reads `text` as `T`, naming where it does not: `section 'memory' does not read: ...`. The
/// path is tracked only for a document that does not read (read again to name where): tracking
/// it on every document cost a fleet's reader about a third of its time.
fn strictly<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    if let Ok(t) = serde_json::from_str(text) {
        return Ok(t);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match path
            .split('.')
            .next()
            .filter(|p| !p.is_empty() && *p != "?")
        {
            Some(section) => format!("section '{section}' does not read ({path}): {inner}"),
            None => inner.to_string(),
        }
    })
}

fn read_ours(text: &str) -> Result<Content, String> {
    strictly::<Document>(text)
        .map(|d| Content::Ours(Box::new(d)))
        .map_err(|e| format!("not a health_check document this version reads: {e}"))
}

fn read_upstream(text: &str) -> Result<Content, String> {
    strictly::<UpstreamMetrics>(text)
        .map(|m| Content::Upstream(Box::new(m)))
        .map_err(|e| format!("not DCPerf health_check metrics: {e}"))
}

fn failed(path: &Path, why: String) -> Loaded {
    Loaded {
        path: path.to_path_buf(),
        content: Err(why),
        machine: None,
        timestamp: None,
    }
}

/// Reads every input [`expand`] found, on all CPUs, in the order given; the ones it already
/// failed stay as they are. Read to be judged: DCPerf's copies of our figures are stepped over
/// ([`super::copies`]).
pub fn load_all(inputs: &[Input]) -> Vec<Loaded> {
    load_all_as(inputs, |l| l)
}

/// [`load_all`], each file turned into what the caller keeps by `into`, in the thread that read
/// it: a document is dropped as soon as `into` has taken what it needs, so a fleet's documents
/// are never all in memory at once.
pub fn load_all_as<T: Send>(inputs: &[Input], into: impl Fn(Loaded) -> T + Sync) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 16);
    let one = |input: &Input| match input {
        Input::File(p) => super::copies::skipped(|| load(p)),
        Input::Failed(p, why) => Some(failed(p, why.clone())),
    };
    // Files are handed out a batch at a time, so a reader held up (a cold file, a busy CPU)
    // never leaves the others idle at the end; the batches are put back in order.
    let batches: Vec<&[Input]> = inputs.chunks(BATCH).collect();
    let next = AtomicUsize::new(0);
    let into = &into;
    let mut done: Vec<(usize, Vec<T>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers.min(batches.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        let Some(batch) = batches.get(b) else { break };
                        mine.push((b, batch.iter().filter_map(one).map(into).collect()));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![(
                        usize::MAX,
                        vec![into(failed(
                            Path::new("?"),
                            "reader thread panicked".into(),
                        ))],
                    )]
                })
            })
            .collect()
    });
    done.sort_by_key(|(b, _)| *b);
    let mut out = Vec::with_capacity(done.iter().map(|(_, v)| v.len()).sum());
    for (_, v) in done {
        out.extend(v);
    }
    out
}

/// Files a reading thread takes at a time.
const BATCH: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    // DCPerf's copies of our figures, as the fleet's readers read them (`copies.rs`).
    fn fixture_text() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/document.json"
        ))
        .unwrap()
    }

    /// Inside `skipped` the copies are absent and all else is as read outside it; outside (and
    /// after, even when `f` panicked) they are read.
    #[test]
    fn only_the_copies_are_skipped_and_only_inside() {
        let text = fixture_text();
        let full: Document = serde_json::from_str(&text).unwrap();
        let memory = full.memory().unwrap();
        assert!(!memory.delay_bandwidth_latency.is_empty());
        assert!(full.iperf3_bandwidth_dcperf.is_some());

        let judged: Document =
            crate::wire::copies::skipped(|| serde_json::from_str(&text)).unwrap();
        assert!(judged.memory().unwrap().delay_bandwidth_latency.is_empty());
        assert_eq!(judged.iperf3_bandwidth_dcperf, None);
        let mut without = full.clone();
        if let Some(crate::wire::part::Part::Measured(m)) = &mut without.memory {
            m.delay_bandwidth_latency.clear();
        }
        without.iperf3_bandwidth_dcperf = None;
        assert_eq!(
            serde_json::to_value(&judged).unwrap(),
            serde_json::to_value(&without).unwrap()
        );

        let _ = std::panic::catch_unwind(|| crate::wire::copies::skipped(|| panic!("inside")));
        let again: Document = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_value(&again).unwrap(),
            serde_json::to_value(&full).unwrap()
        );
    }

    /// A copy that is not what its type reads is no error when skipped (it is never judged),
    /// and still one when read.
    #[test]
    fn a_skipped_copy_need_not_read() {
        let mut doc: serde_json::Value = serde_json::from_str(&fixture_text()).unwrap();
        doc["iperf3_bandwidth"] = serde_json::json!([{"hostname": 5}]);
        doc["memory"]["delay_bandwidth_latency"] = serde_json::json!({"FullRandom": "x"});
        let text = doc.to_string();
        assert!(crate::wire::copies::skipped(|| serde_json::from_str::<Document>(&text)).is_ok());
        assert!(serde_json::from_str::<Document>(&text).is_err());
        // The fleet's reading skips them; reading one file (`merge`) does not.
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "odd-copies.json", &text);
        let inputs = expand(std::slice::from_ref(&file)).unwrap();
        assert!(matches!(load_all(&inputs)[0].content, Ok(Content::Ours(_))));
        assert!(load(&file).unwrap().content.is_err());
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    proptest::proptest! {
        /// A walk's paths (a directory and names joined one at a time, names of the bytes
        /// that sort around the separator) sort as `Path` sorts them.
        #[test]
        fn a_walk_sorts_as_paths_do(
            names in proptest::collection::vec(
                proptest::collection::vec("[a./ -0]{1,12}", 1..4), 0..40)
        ) {
            let paths: Vec<PathBuf> = names
                .iter()
                .map(|parts| {
                    parts.iter().fold(PathBuf::from("/fleet/run"), |p, n| {
                        let n = n.replace('/', "_");
                        p.join(if n == "." || n == ".." { "x".into() } else { n })
                    })
                })
                .collect();
            let mut ours = paths.clone();
            ours.sort_unstable_by(|a, b| walk_order(a, b));
            let mut theirs = paths;
            theirs.sort();
            proptest::prop_assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn every_form_is_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ours = r#"{"checks": [], "health_check": {"version": "0.1.0", "role": "server",
            "clients": [], "profile": "quick", "seconds": 1.0, "started_unix": 1, "sections": {}}}"#;
        let files = [
            write(d, "a.json", ours),
            write(
                d,
                "b.json",
                &format!(
                    r#"{{"machines": [{{"hostname": "b", "num_logical_cpus": "2"}}], "timestamp": 5, "metrics": {ours}}}"#
                ),
            ),
            write(
                d,
                "c.json",
                &std::fs::read_to_string(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../tests/fixtures/upstream-health-check-metrics.json"
                ))
                .unwrap(),
            ),
            write(
                d,
                "d.json",
                r#"{"ping": [{"hostname": "x", "latency": "0.1"}]}"#,
            ),
            write(d, "e.json", r#"{"hello": 1}"#),
            write(d, "f.json", "not json"),
            write(d, "fleet.json", r#"{"fleet_report": {}, "machines": []}"#),
            write(
                d,
                "gone.json",
                r#"{"fleet_host_error": "unreachable: no route"}"#,
            ),
        ];
        let inputs: Vec<Input> = files.iter().cloned().map(Input::File).collect();
        let loaded = load_all(&inputs);
        assert_eq!(loaded.len(), 7, "the fleet report is skipped");
        assert!(
            matches!(&loaded[6].content, Ok(Content::HostError(w, _)) if w.contains("no route"))
        );
        assert!(matches!(loaded[0].content, Ok(Content::Ours(_))));
        assert!(matches!(loaded[1].content, Ok(Content::Ours(_))));
        assert_eq!(
            loaded[1].machine.as_ref().unwrap().hostname.as_deref(),
            Some("b")
        );
        assert_eq!(loaded[1].timestamp, Some(5));
        assert!(matches!(loaded[2].content, Ok(Content::Upstream(_))));
        assert!(matches!(loaded[3].content, Ok(Content::Upstream(_))));
        assert!(
            loaded[4]
                .content
                .as_ref()
                .unwrap_err()
                .contains("not a health_check document")
        );
        assert!(
            loaded[5]
                .content
                .as_ref()
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert_eq!(expand(&[d.to_path_buf()]).unwrap().len(), 8);
        assert!(
            expand(&[d.join("missing")])
                .unwrap_err()
                .contains("missing")
        );
    }
}
