//! Dispatch on the role, then deliver the result: the JSON document on stdout (and `--output`),
//! the summary on stderr, and the exit code (0 written, 1 nothing could be produced, 3 `--strict`
//! and a check failed, 130/143 interrupted).

pub mod driver;
pub mod entry;
pub mod exit;
pub mod faults;
pub mod history;
pub mod nhc;
pub mod pidfile;
pub mod readers;
pub mod responder;
pub mod slurm;
pub mod watchdog;

use crate::config::{Config, Mode, Section};
use crate::judge::checks;
use crate::os::Interrupt;
use crate::render::export::{self, Exporter, Format};
use crate::render::{self, envelope, summary};
use crate::system::SystemInfo;
use crate::wire::document::{Document, RunInfo, SectionOutcome, SectionStatuses, SignalName};
use crate::wire::identity::MachineIdentity;
pub use exit::Exit;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A finished run: the document, the machine description (for the envelope) and the signal that
/// cut it short, if any. Both roles end in one.
#[derive(Debug)]
pub struct Outcome {
    /// The document to print.
    pub doc: Document,
    /// The machine, also when the system section was not in the plan.
    pub system: SystemInfo,
    /// Set when SIGINT/SIGTERM arrived during the run.
    pub interrupted: Option<Interrupt>,
}

/// Builds `health_check`, the run's own record, for either role.
pub struct RunInfoBuilder {
    started: Instant,
    started_unix: u64,
}

impl RunInfoBuilder {
    /// Starts the clock.
    pub fn start() -> Self {
        RunInfoBuilder {
            started: Instant::now(),
            started_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// Seconds since the start.
    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The record, as of now, of a run on the machine `system` describes.
    pub fn finish(
        &self,
        config: &Config,
        sections: Vec<(Section, SectionOutcome)>,
        options_from_env: Option<String>,
        interrupted: Option<Interrupt>,
        system: &SystemInfo,
    ) -> RunInfo {
        RunInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            role: config.mode.role(),
            clients: config.clients.clone(),
            profile: config.profile,
            seconds: crate::units::round_to(self.elapsed_secs(), 3),
            started_unix: self.started_unix,
            sections: SectionStatuses(sections),
            options_from_env,
            interrupted_by: interrupted.map(|i| match i {
                Interrupt::Int => SignalName::Sigint,
                Interrupt::Term => SignalName::Sigterm,
                Interrupt::Deadline => SignalName::Deadline,
            }),
            machine: Some(MachineIdentity::from(&crate::system::identity::identity(
                &crate::system::source::HostFs,
                system,
            ))),
            interference: BTreeMap::new(),
            notes: config.notes.clone(),
        }
    }
}

/// Runs what `config` asks for and returns how it ended.
pub fn run(config: &Config, options_from_env: Option<String>) -> Exit {
    for note in &config.notes {
        eprintln!("health_check: note: {note}");
    }
    match &config.mode {
        Mode::Client => return responder::run(config, options_from_env),
        Mode::ListChecks => {
            print!("{}", checks::limits_table());
            return Exit::Ok;
        }
        Mode::Compare(reader) => {
            crate::os::large_allocations_mapped();
            return readers::compare(config, reader);
        }
        Mode::Baseline(reader) => {
            crate::os::large_allocations_mapped();
            return readers::baseline(config, reader);
        }
        Mode::Report { reader, html } => {
            crate::os::large_allocations_mapped();
            return readers::report(config, reader, html.as_deref());
        }
        Mode::Merge(paths) => return readers::merge(config, paths),
        Mode::Schema { fleet } => {
            let schema = if *fleet {
                crate::wire::fleet::fleet_schema()
            } else {
                crate::wire::document::document_schema()
            };
            return print_pretty(&schema);
        }
        Mode::Slurm(cfg) => return slurm::run(config, cfg, options_from_env),
        Mode::Acknowledge { file, check, note } => {
            return history::acknowledge(config, file, check, note.as_deref());
        }
        Mode::History { file, filter, html } => {
            return history::show(config, file, filter, html.as_deref());
        }
        Mode::Nhc {
            file,
            host,
            cases,
            settings,
        } => return nhc::run(file, host.as_deref(), *cases, settings),
        Mode::Server | Mode::Debug(_) => {}
    }
    if let Some(deadline) = config.deadline {
        let abandoned = config.clone();
        watchdog::on_overrun(Box::new(move |section| {
            let doc = abandoned_document(&abandoned, section);
            let exporter = export::exporter(abandoned.format);
            if let Ok(text) = exporter.document(&doc, false) {
                let _ = emit(abandoned.output.as_deref(), &text, &text);
            }
            // NPD knows 0, 1 and 2: its exit says what its line says (the section that hung
            // failed to run).
            if abandoned.format == Format::Npd {
                return crate::render::npd::verdict(&doc).code;
            }
            Interrupt::Deadline.exit_code()
        }));
        watchdog::start(deadline);
    }
    let outcome = driver::run(config, options_from_env);
    if config.format == Format::Npd {
        // NPD sets the condition from the exit code, which must say what the line says: a
        // `--output` that could not be written is on stderr, not a verdict on the node.
        deliver_quietly(config, &outcome);
        // A signal ends the plugin as NPD's own timeout would; the deadline is a verdict (the
        // section it stopped failed to run), with one of the codes NPD knows.
        if let Some(signal) = outcome.interrupted
            && signal != Interrupt::Deadline
        {
            return Exit::Interrupted(signal);
        }
        return match crate::render::npd::verdict(&outcome.doc).code {
            0 => Exit::Ok,
            1 => Exit::Unhealthy,
            _ => Exit::Unknown,
        };
    }
    let written = deliver(config, &outcome);
    if written != Exit::Ok {
        return written;
    }
    if let Some(signal) = outcome.interrupted {
        return Exit::Interrupted(signal);
    }
    if config.strict && checks::any_failed(&outcome.doc.checks) {
        return Exit::ChecksFailed;
    }
    Exit::Ok
}

/// The document of a run abandoned past its deadline: what it measured is lost with the thread
/// that hung, so it says which section hung and that the others are not in it.
pub fn abandoned_document(config: &Config, hung: Option<Section>) -> Document {
    let sections = config
        .plan
        .iter()
        .map(|&s| {
            let outcome = if Some(s) == hung {
                SectionOutcome::Failed(format!(
                    "did not stop {} s after the --deadline: the run was abandoned",
                    watchdog::GRACE.as_secs()
                ))
            } else {
                SectionOutcome::Skipped("the run was abandoned past its --deadline".into())
            };
            (s, outcome)
        })
        .collect();
    Document {
        health_check: RunInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            role: config.mode.role(),
            clients: config.clients.clone(),
            profile: config.profile,
            seconds: config
                .deadline
                .map_or(0.0, |d| (d + watchdog::GRACE).as_secs_f64()),
            started_unix: 0,
            sections: SectionStatuses(sections),
            options_from_env: None,
            interrupted_by: Some(SignalName::Deadline),
            machine: None,
            interference: BTreeMap::new(),
            notes: config.notes.clone(),
        },
        ..Document::default()
    }
}

/// Prints a JSON value indented, as committed files hold it.
pub(crate) fn print_pretty(value: &serde_json::Value) -> Exit {
    match render::render(value, true) {
        Ok(text) => emit(None, &text, ""),
        Err(e) => {
            eprintln!("health_check: error: {e:#}");
            Exit::NotWritten
        }
    }
}

/// Writes `file_text` to `output` (atomically) when given, and `stdout_text` to stdout. A closed
/// pipe is the reader's choice, not a failure.
pub(crate) fn emit(output: Option<&std::path::Path>, stdout_text: &str, file_text: &str) -> Exit {
    let mut exit = Exit::Ok;
    if let Some(path) = output {
        if let Err(e) = render::write_atomically(path, file_text) {
            eprintln!("health_check: error: {e:#}");
            exit = Exit::NotWritten;
        }
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{stdout_text}").and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("health_check: error: writing to stdout: {e}");
            exit = Exit::NotWritten;
        }
    }
    exit
}

/// Renders with `exporter` for stdout (one line on a pipe, which benchpress reads by lines;
/// indented on a terminal) and for `--output` (indented), and writes both.
pub(crate) fn export(
    config: &Config,
    exporter: &dyn Fn(bool) -> Result<String, serde_json::Error>,
) -> Exit {
    let file = match config.output {
        Some(_) => exporter(true),
        None => Ok(String::new()),
    };
    match (exporter(std::io::stdout().is_terminal()), file) {
        (Ok(out), Ok(file)) => emit(config.output.as_deref(), &out, &file),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("health_check: error: {e:#}");
            Exit::NotWritten
        }
    }
}

/// The role's argument strings as benchpress records them (`benchmark_args`).
fn benchmark_args(config: &Config) -> Vec<String> {
    match &config.mode {
        Mode::Server => vec![
            "-r server".to_string(),
            format!("-c {}", config.clients.join(",")),
        ],
        Mode::Client => vec!["-r client".to_string()],
        Mode::ListChecks => vec!["checks --list".to_string()],
        Mode::Schema { .. } => vec!["schema".to_string()],
        Mode::Compare(_) => vec!["compare".to_string()],
        Mode::Baseline(_) => vec!["baseline".to_string()],
        Mode::Report { .. } => vec!["report".to_string()],
        Mode::Merge(_) => vec!["merge".to_string()],
        Mode::Debug(d) => vec![d.name().to_string()],
        Mode::Slurm(_) => vec!["slurm".to_string()],
        Mode::History { .. } => vec!["history".to_string()],
        Mode::Nhc { .. } => vec!["nhc".to_string()],
        Mode::Acknowledge { .. } => vec!["acknowledge".to_string()],
    }
}

/// The exporter for this run's document: `--format`'s, or benchpress's envelope.
fn run_exporter(config: &Config, outcome: &Outcome) -> Box<dyn Exporter> {
    if config.envelope && config.format == Format::Json {
        Box::new(export::Envelope {
            system: outcome.system.clone(),
            args: benchmark_args(config),
            run_id: envelope::new_run_id(),
        })
    } else {
        export::exporter(config.format)
    }
}

/// Writes the document (in `--format`) to `--output` and stdout and the summary to stderr.
pub fn deliver(config: &Config, outcome: &Outcome) -> Exit {
    let exit = deliver_quietly(config, outcome);
    eprint!(
        "{}",
        summary::summary(&outcome.doc, summary::color_wanted())
    );
    exit
}

/// [`deliver`] without the summary on stderr: node-problem-detector logs a plugin's stderr and
/// Slurm's HealthCheckProgram says what it did in its own lines.
pub fn deliver_quietly(config: &Config, outcome: &Outcome) -> Exit {
    let exporter = run_exporter(config, outcome);
    export(config, &|pretty| exporter.document(&outcome.doc, pretty))
}
