//! `--history`: the run recorded in the machine's history and judged against its past, and
//! `health_check history`, which shows that past.
//!
//! Recording happens after the measurements, so the file is never held while the machine is
//! measured: before the checks the error counters are counted since the last run of the same
//! boot; after them come the `history.<figure>` checks, the configuration changed since the last
//! run (`history.fingerprint`), and the append, one transaction. A history that cannot be used
//! costs the run nothing: a skipped `history` check and one line on stderr say why.

use crate::config::{Config, HistoryConfig};
use crate::history::{Filter, History, HistoryError, LastRun, Record};
use crate::judge::pipeline::Population;
use crate::judge::{noise, past as judge_history, rules::Rules};
use crate::render::trends as render_history;
use crate::wire::check::{Check, CheckId, Status};
use crate::wire::counters::{Acknowledgement, ErrorCounter};
use crate::wire::document::{Document, Part, Section};
use crate::wire::figures;
use crate::wire::history::{HistoryReport, RunSummary};
use std::collections::BTreeSet;
use std::path::Path;

use super::Exit;

/// An open history and what it holds about the machine before this run.
pub struct Recorder {
    history: History,
    machine: String,
    last: Option<LastRun>,
}

impl Recorder {
    /// Opens the history and counts the error counters of `doc` since the machine's last run,
    /// when that run was of the same boot. An interrupted run is not recorded: its figures may
    /// be of a cut window.
    pub fn open(cfg: &HistoryConfig, doc: &mut Document) -> Result<Recorder, HistoryError> {
        if let Some(signal) = doc.health_check.interrupted_by {
            return Err(HistoryError::Interrupted(crate::wire::document::word(
                &signal,
            )));
        }
        let machine = History::machine_of(doc).ok_or(HistoryError::NoMachine)?;
        let history = History::open(&cfg.path)?;
        let last = history.last_run(&machine)?;
        let boot = doc
            .health_check
            .machine
            .as_ref()
            .and_then(|m| m.boot_id.clone());
        if let (Some(last), Some(Part::Measured(sys))) = (&last, &mut doc.system) {
            let same_boot = boot.is_some() && last.summary.boot_id == boot;
            if let (true, Some(counters), Some(before)) =
                (same_boot, &mut sys.error_counters, &last.counters)
            {
                let hours = doc
                    .health_check
                    .started_unix
                    .saturating_sub(last.summary.started_unix) as f64
                    / 3600.0;
                counters.since_last_run(before, hours, last.summary.started_unix);
            }
        }
        // An operator's acknowledgements in this boot go with the counters they cover.
        if let (Some(boot), Some(Part::Measured(sys))) = (&boot, &mut doc.system) {
            if let Some(counters) = &mut sys.error_counters {
                let acks = history.acknowledgements(&machine, boot)?;
                for c in &mut counters.counters {
                    let key = (c.source.clone(), c.subject.clone(), c.counter.clone());
                    c.acknowledged = acks.get(&key).cloned();
                }
            }
        }
        Ok(Recorder {
            history,
            machine,
            last,
        })
    }

    /// Judges `doc` against the machine's past, adds the checks and records the run.
    pub fn finish(self, doc: &mut Document, config: &Config) -> Result<i64, HistoryError> {
        let window = config
            .history
            .as_ref()
            .map_or(judge_history::DEFAULT_WINDOW, |h| h.window);
        let without_flagged = config.history.as_ref().is_some_and(|h| h.without_flagged);
        let mut history = self.history;
        let extracted = figures::of_document(doc);
        let profile = doc.health_check.profile.name();
        let (runs, past) = history.past(
            &self.machine,
            profile,
            &extracted.figures,
            window * 2 + judge_history::SHIFT_RUNS,
        )?;
        let now = summary_of(doc, &self.machine);
        let judged_past = judge_history::Past {
            runs: &runs,
            figures: &past,
            window,
            population: Population::past(without_flagged),
        };
        let rules = Rules::builtin();
        let mut checks = judge_history::judge(&extracted.figures, &judged_past, &now, &rules);
        // Recorded with the run: the history's pages draw the reference that judged it.
        let references = judge_history::references(&extracted.figures, &judged_past, &rules);
        noise::mark_inconclusive(
            &mut checks,
            &doc.health_check.interference,
            &config.thresholds,
        );
        if let (Some(last), Some(sys)) = (&self.last, doc.system()) {
            checks.push(fingerprint_check(sys, last));
        }
        doc.checks.extend(checks);
        let noisy: BTreeSet<Section> = doc
            .health_check
            .interference
            .iter()
            .filter(|(_, i)| noise::interfered(i, &config.thresholds).is_some())
            .map(|(s, _)| *s)
            .collect();
        let keep = config.history.as_ref().map(|h| h.keep).unwrap_or_default();
        history.append(
            &Record {
                doc,
                figures: &extracted.figures,
                noisy: &noisy,
                references: &references,
            },
            keep,
        )
    }
}

/// The run as the history will summarise it.
fn summary_of(doc: &Document, machine: &str) -> RunSummary {
    let sys = doc.system();
    RunSummary {
        run: 0,
        started_unix: doc.health_check.started_unix,
        machine: machine.to_string(),
        hostname: sys.and_then(|s| s.hostname.clone()),
        profile: doc.health_check.profile.name().to_string(),
        boot_id: doc
            .health_check
            .machine
            .as_ref()
            .and_then(|m| m.boot_id.clone()),
        kernel: sys.and_then(|s| s.kernel.clone()),
        firmware: sys.and_then(|s| s.fingerprint.get("bios.version").cloned()),
        worst: None,
        seconds: doc.health_check.seconds,
    }
}

/// `history.fingerprint`: the facts of the machine's configuration that changed since its last
/// run. A change warns once (the next run compares with this one): it is the first thing to
/// suspect when a figure moves.
fn fingerprint_check(sys: &crate::wire::system::SystemPart, last: &LastRun) -> Check {
    let name = CheckId::new("history", "fingerprint");
    let changes =
        crate::history::fact_changes(&last.facts, &sys.fingerprint, last.summary.run, 0, 0);
    let text: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "{} {} -> {}",
                crate::wire::counters::fact_label(&c.fact),
                c.from.as_deref().unwrap_or("(none)"),
                c.to.as_deref().unwrap_or("(none)")
            )
        })
        .collect();
    Check {
        name,
        status: if changes.is_empty() {
            Status::Pass
        } else {
            Status::Warn
        },
        value: Some(changes.len() as f64),
        limit: Some(0.0),
        message: if changes.is_empty() {
            format!(
                "the configuration is as in the last run ({} facts)",
                sys.fingerprint.len()
            )
        } else {
            format!(
                "changed since the last run ({}): {}",
                crate::render::html::utc(last.summary.started_unix),
                text.join("; ")
            )
        },
    }
}

/// `health_check acknowledge CHECK`: records who acknowledged the counters of `check` (one
/// source, or one subject of it) as the newest run of this boot in the history counted them.
/// Prints what was acknowledged as JSON; a line on stderr says it for people.
pub fn acknowledge(config: &Config, file: &Path, check: &CheckId, note: Option<&str>) -> Exit {
    match record_acknowledgement(file, check, note) {
        Ok(value) => super::export(config, &|pretty| crate::render::render(&value, pretty)),
        Err(e) => {
            eprintln!("health_check: error: {e}");
            Exit::Usage
        }
    }
}

fn record_acknowledgement(
    file: &Path,
    check: &CheckId,
    note: Option<&str>,
) -> Result<serde_json::Value, String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|b| b.trim().to_string())
        .map_err(|e| format!("cannot read this boot's id: {e}"))?;
    // A mistyped path makes nothing: only a history runs were recorded in is acknowledged in.
    if !file.is_file() {
        return Err(format!(
            "'{}' is no history file: give the one runs are recorded in (--history, \
             $HEALTH_CHECK_HISTORY)",
            file.display()
        ));
    }
    let mut history = History::open(file).map_err(|e| e.to_string())?;
    let last = history
        .last_run_of_boot(&boot)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "no run of this boot is recorded in '{}': run health_check with --history {} \
                 first, so there is a count to acknowledge",
                file.display(),
                file.display()
            )
        })?;
    let covered: Vec<ErrorCounter> = last
        .counters
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            c.source == check.rule && check.subject.as_ref().is_none_or(|s| *s == c.subject)
        })
        .collect();
    if covered.is_empty() {
        return Err(format!(
            "the last run of this boot ({}) counted nothing for {check}: nothing to acknowledge",
            crate::units::utc(last.summary.started_unix)
        ));
    }
    let ack = Acknowledgement {
        by: who(),
        at_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        count: 0,
        note: note.map(str::to_string),
    };
    history
        .acknowledge(&last.summary.machine, &boot, &covered, &ack)
        .map_err(|e| e.to_string())?;
    for c in &covered {
        eprintln!(
            "health_check: acknowledged {} {} on {} (counted since boot by the run of {}), by {}",
            c.total,
            c.counter,
            crate::render::text::terminal_safe(&c.subject),
            crate::units::utc(last.summary.started_unix),
            ack.by
        );
    }
    Ok(serde_json::json!({
        "acknowledged": covered.iter().map(|c| serde_json::json!({
            "source": c.source, "subject": c.subject, "counter": c.counter, "count": c.total,
        })).collect::<Vec<_>>(),
        "by": ack.by,
        "at_unix": ack.at_unix,
        "note": ack.note,
        "boot_id": boot,
        "machine": last.summary.machine,
    }))
}

/// Who is acknowledging: the user who ran sudo, else the real user, with the uid.
fn who() -> String {
    let uid = nix::unistd::getuid();
    let name = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| format!("uid {uid}"), |u| u.name);
    match std::env::var("SUDO_USER").ok().filter(|s| !s.is_empty()) {
        Some(sudo) if uid.is_root() => format!("{sudo} (sudo, uid {uid})"),
        _ => format!("{name} (uid {uid})"),
    }
}

/// The check that says why the run was not recorded.
pub fn not_recorded(e: &HistoryError) -> Check {
    Check {
        name: CheckId::new("history", ""),
        status: Status::Skip,
        value: None,
        limit: None,
        message: format!("not recorded: {e}"),
    }
}

/// `health_check history FILE`: the table on stderr, the JSON on stdout, the page to `--html`.
pub fn show(config: &Config, file: &Path, filter: &Filter, html: Option<&Path>) -> Exit {
    let report = match read(file, filter) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return Exit::Usage;
        }
    };
    eprint!("{}", render_history::table(&report));
    if let Some(path) = html {
        let page = crate::render::html::trends::page(&report);
        if let Err(e) = crate::render::write_atomically(path, &page) {
            eprintln!("health_check: error: {e:#}");
            return Exit::NotWritten;
        }
        eprintln!("health_check: wrote {}", path.display());
    }
    let value = match serde_json::to_value(&report) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return Exit::NotWritten;
        }
    };
    super::export(config, &|pretty| crate::render::render(&value, pretty))
}

/// The runs, trends and changes `filter` selects.
pub fn read(file: &Path, filter: &Filter) -> Result<HistoryReport, HistoryError> {
    let h = History::open_existing(file)?;
    Ok(HistoryReport {
        file: file.display().to_string(),
        runs: h.runs(filter)?,
        figures: h.trends(filter)?,
        changes: h.changes(filter)?,
    })
}
