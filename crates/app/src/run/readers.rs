//! The readers' commands: `compare` prints the fleet report (JSON on stdout, the table on
//! stderr); `baseline` writes what it learned to `-o FILE`; `report` draws pages; `merge` makes
//! one machine's documents one.

use super::{Exit, emit, export};
use crate::config::Config;
use crate::judge::fleet::ReaderConfig;
use crate::judge::{self, rules::default_rules};
use crate::render::export::{Format, exporter};
use crate::render::{self, fleet_table};
use crate::wire;

/// `health_check compare`: written, not written, an input path that cannot be read (usage), or
/// with `--strict` anything flagged.
pub fn compare(config: &Config, reader: &ReaderConfig) -> Exit {
    if reader.print_rules {
        print!("{}", rules_text(reader));
        return Exit::Ok;
    }
    let (fleet_report, machines) =
        match judge::fleet::build(reader, config.baseline.as_ref(), false) {
            Ok(r) => r,
            Err(e) => return read_failed(&e),
        };
    freed_at_exit(machines);
    let out = exporter(config.format);
    let mut exit = export(config, &|pretty| out.fleet(&fleet_report, pretty));
    eprint!("{}", fleet_table::summary(&fleet_report));
    if exit == Exit::Ok && config.strict && judge::fleet::anything_failed(&fleet_report) {
        exit = Exit::ChecksFailed;
    }
    freed_at_exit(fleet_report);
    exit
}

/// Leaves `value`'s memory to the end of the process, which follows the command: the kernel
/// takes it back at once, where dropping it walks every machine's figures and documents (half
/// a second of one CPU at 100,000 machines, docs/performance.md). Only for what a command
/// holds until it returns.
fn freed_at_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Says why nothing could be judged: a path that cannot be read is a usage error, inputs that
/// hold no document leave nothing written.
fn read_failed(e: &judge::fleet::ReadError) -> Exit {
    eprintln!("health_check: error: {e}");
    match e {
        judge::fleet::ReadError::Path(_) => Exit::Usage,
        judge::fleet::ReadError::Empty(_) => Exit::NotWritten,
    }
}

/// The rules in force as a YAML file: the built-in text (with its comments), or the file's.
fn rules_text(reader: &ReaderConfig) -> String {
    if reader.rules.source == "built-in" {
        return default_rules();
    }
    #[derive(serde::Serialize)]
    struct File {
        rules: Vec<crate::judge::rules::RuleSpec>,
    }
    serde_yaml::to_string(&File {
        rules: reader.rules.specs(),
    })
    .unwrap_or_default()
}

/// `health_check report`: one document's page, or the fleet's (`--html`); one document's or the
/// fleet's JUnit XML or Prometheus text (`--format`).
pub fn report(config: &Config, reader: &ReaderConfig, html: Option<&std::path::Path>) -> Exit {
    let (fleet_report, machines) = match judge::fleet::build(reader, config.baseline.as_ref(), true)
    {
        Ok(r) => r,
        Err(e) => return read_failed(&e),
    };
    let single = match machines.as_slice() {
        [one] => one
            .document
            .as_deref()
            .map(|d| (d, one.entry.source.as_str())),
        _ => None,
    };
    let mut exit = Exit::Ok;
    if let Some(path) = html {
        let history = match (single, &config.history) {
            (Some((doc, _)), Some(h)) => machine_history(&h.path, doc),
            (None, Some(_)) => {
                eprintln!(
                    "health_check: note: --history draws one machine's trends; the fleet's page \
                     has none"
                );
                None
            }
            _ => None,
        };
        let page = match single {
            Some((doc, source)) => render::html::machine_page(doc, source, history.as_ref()),
            None => render::html::fleet_page(&fleet_report, &machines),
        };
        match render::write_atomically(path, &page) {
            Ok(()) => eprintln!(
                "health_check: wrote '{}' ({} machine(s), {} KiB)",
                path.display(),
                machines.len(),
                page.len() / 1024
            ),
            Err(e) => {
                eprintln!("health_check: error: {e:#}");
                exit = Exit::NotWritten;
            }
        }
    }
    // JSON is the fleet report, which `compare` prints; `report` prints only other formats.
    if config.format == Format::Json {
        freed_at_exit((fleet_report, machines));
        return exit;
    }
    let out = exporter(config.format);
    let text = match single {
        Some((doc, _)) => out.document(doc, true),
        None => out.fleet(&fleet_report, true),
    };
    freed_at_exit((fleet_report, machines));
    match text {
        Ok(text) => exit.or(emit(config.output.as_deref(), &text, &text)),
        Err(e) => {
            eprintln!("health_check: error: {e:#}");
            Exit::NotWritten
        }
    }
}

/// The trends of the machine `doc` is about, from the history at `path`; says on stderr why
/// there are none.
fn machine_history(
    path: &std::path::Path,
    doc: &wire::document::Document,
) -> Option<wire::history::HistoryReport> {
    let Some(machine) = crate::history::History::machine_of(doc) else {
        eprintln!("health_check: note: the document does not say which machine it is: no history");
        return None;
    };
    let filter = crate::history::Filter {
        host: Some(machine),
        ..Default::default()
    };
    match super::history::read(path, &filter) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("health_check: warning: no history drawn: {e}");
            None
        }
    }
}

/// `health_check merge`: printed (and written), not written, or a document that cannot be read
/// or documents of different machines (usage).
pub fn merge(config: &Config, paths: &[std::path::PathBuf]) -> Exit {
    let mut docs = Vec::with_capacity(paths.len());
    for p in paths {
        let loaded = wire::read::load(p);
        match loaded.map(|l| l.content) {
            Some(Ok(wire::read::Content::Ours(d))) => docs.push(*d),
            Some(Ok(wire::read::Content::Upstream(_))) => {
                eprintln!(
                    "health_check: error: '{}' is DCPerf's own output; only health_check documents merge",
                    p.display()
                );
                return Exit::Usage;
            }
            Some(Err(why)) | Some(Ok(wire::read::Content::HostError(why, _))) => {
                eprintln!("health_check: error: '{}': {why}", p.display());
                return Exit::Usage;
            }
            None => {
                eprintln!(
                    "health_check: error: '{}' is a fleet report, not a document",
                    p.display()
                );
                return Exit::Usage;
            }
        }
    }
    let merged = match wire::merge::merge(docs) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return Exit::Usage;
        }
    };
    let mut merged = merged;
    if let Some(b) = &config.baseline {
        add_baseline_checks(&mut merged, b, &config.thresholds);
    }
    let json = exporter(Format::Json);
    export(config, &|pretty| json.document(&merged, pretty))
}

/// Judges a merged document by the baseline too, as a run with `--baseline` would have.
fn add_baseline_checks(
    doc: &mut crate::wire::document::Document,
    b: &judge::baseline::BaselineRef,
    t: &judge::checks::Thresholds,
) {
    doc.checks.retain(|c| c.name.section != "baseline");
    let judged = judge::baseline::checks_of_document(doc, b, t);
    doc.checks.extend(judged);
}

/// What counting one vote per machine did, on stderr: each clash in full (a baseline learned
/// from a cloned image's hosts or an impostor should be looked at), copies and pooled runs
/// counted (`compare` lists every file).
fn say_identity(notes: &[wire::fleet::IdentityNote]) {
    use wire::fleet::IdentityKind;
    let safe = crate::render::text::terminal_safe;
    for n in notes.iter().filter(|n| n.kind == IdentityKind::Clash) {
        eprintln!(
            "health_check: warning: identity clash: {}",
            safe(&n.message)
        );
    }
    let count = |k: IdentityKind| notes.iter().filter(|n| n.kind == k).count();
    let (copies, runs) = (count(IdentityKind::Duplicate), count(IdentityKind::Runs));
    if copies + runs > 0 {
        eprintln!(
            "health_check: note: one vote per machine: {copies} copy(ies) of a run counted once, \
             {runs} machine(s) of several runs learned from each figure's median over their \
             runs (health_check compare names every file)"
        );
    }
}

/// `health_check baseline`: written, not written, or an input that cannot be read or that teaches
/// no measured figure (usage). Every figure it could not learn is named with the reason.
pub fn baseline(config: &Config, reader: &ReaderConfig) -> Exit {
    let (learned, machines, identity) = match judge::fleet::learn(reader) {
        Ok(r) => r,
        Err(e) => return read_failed(&e),
    };
    say_identity(&identity);
    let Some(path) = &config.output else {
        eprintln!("health_check: error: say where to write the baseline: -o baseline.yaml");
        return Exit::Usage;
    };
    let used = machines.iter().filter(|m| m.entry.group.is_some()).count();
    if used == 0 {
        let why = if machines.iter().all(|m| m.figures.is_empty()) {
            "holds a figure to learn from"
        } else {
            "says what machine it is (runs of health_check 0.1 write health_check.machine; \
             older ones need their system section): a baseline is per model"
        };
        eprintln!(
            "health_check: error: none of the {} input(s) {why}",
            machines.len()
        );
        return Exit::NotWritten;
    }
    let safe = crate::render::text::terminal_safe;
    for gap in &learned.not_learned {
        eprintln!(
            "health_check: note: {} on model {}: {}{}",
            safe(&gap.figure),
            safe(&gap.sku),
            if gap.missing { "not learned: " } else { "" },
            safe(&gap.why)
        );
    }
    if !learned.learned_a_measurement() {
        let left = learned.not_learned.iter().filter(|g| g.missing).count();
        eprintln!(
            "health_check: error: the baseline would hold no measured figure (only what the \
             machines have): {left} measured figure(s) could not be learned (above); run the \
             machines again when nothing else loads them, or with their sections, and learn \
             from those runs; nothing written"
        );
        return Exit::Usage;
    }
    let learned = learned.baseline;
    let text = match serde_yaml::to_string(&learned) {
        Ok(t) => format!(
            "# health_check baseline: per-SKU medians learned from {used} machine(s); judge runs with\n\
             # 'health_check -r server ... --baseline FILE' or 'health_check compare ... --baseline FILE'.\n{t}"
        ),
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return Exit::NotWritten;
        }
    };
    if let Err(e) = render::write_atomically(path, text.trim_end()) {
        eprintln!("health_check: error: {e:#}");
        return Exit::NotWritten;
    }
    for m in machines.iter().filter(|m| m.entry.group.is_none()) {
        eprintln!(
            "health_check: note: {} was not used: {}",
            crate::render::text::terminal_safe(&m.entry.label),
            crate::render::text::terminal_safe(
                m.entry.reasons.first().map_or("no figures", String::as_str)
            )
        );
    }
    eprintln!(
        "health_check: baseline of {} SKU(s) from {used} machine(s) written to '{}'",
        learned.skus.len(),
        path.display()
    );
    Exit::Ok
}
