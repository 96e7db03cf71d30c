//! Dispatch on the role, then deliver the result: the JSON document on stdout (and `--output`),
//! the summary on stderr, and the exit code (0 written, 1 nothing could be produced, 3 `--strict`
//! and a check failed, 130/143 interrupted).

pub mod driver;
pub mod pidfile;
pub mod readers;
pub mod responder;

use crate::config::{Config, Format, Mode, Profile, Section};
use crate::judge::checks;
use crate::os::Interrupt;
use crate::render::{self as report, envelope, summary as human};
use crate::system::SystemInfo;
use crate::wire::document::{
    Document, ProfileName, Role, RunInfo, SectionOutcome, SectionStatuses, SignalName,
};
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

    /// The record, as of now.
    pub fn finish(
        &self,
        config: &Config,
        sections: Vec<(Section, SectionOutcome)>,
        options_from_env: Option<String>,
        interrupted: Option<Interrupt>,
    ) -> RunInfo {
        RunInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            role: wire_role(&config.mode),
            clients: config.clients.clone(),
            profile: match config.profile {
                Profile::Standard => ProfileName::Standard,
                Profile::Quick => ProfileName::Quick,
                Profile::Thorough => ProfileName::Thorough,
            },
            seconds: crate::units::round_to(self.elapsed_secs(), 3),
            started_unix: self.started_unix,
            sections: SectionStatuses(
                sections
                    .into_iter()
                    .map(|(s, o)| (s.name().to_string(), o))
                    .collect(),
            ),
            options_from_env,
            interrupted_by: interrupted.map(|i| match i {
                Interrupt::Int => SignalName::Sigint,
                Interrupt::Term => SignalName::Sigterm,
            }),
        }
    }
}

fn wire_role(mode: &Mode) -> Role {
    match mode {
        Mode::Server => Role::Server,
        Mode::Client => Role::Client,
        Mode::ListChecks
        | Mode::Schema { .. }
        | Mode::Compare(_)
        | Mode::Baseline(_)
        | Mode::Report { .. }
        | Mode::Merge(_) => Role::Checks,
        Mode::Debug { name, section } => match (*name, section) {
            ("ping", _) => Role::Ping,
            ("iperf", _) => Role::Iperf,
            (_, Section::System) => Role::System,
            (_, Section::Sleep) => Role::Sleep,
            (_, Section::Memory) => Role::Memory,
            (_, Section::Storage) => Role::Storage,
            (_, Section::Network) => Role::Iperf,
        },
    }
}

/// Runs what `config` asks for and returns the process exit code.
pub fn run(config: &Config, options_from_env: Option<String>) -> u8 {
    for note in &config.notes {
        eprintln!("health_check: note: {note}");
    }
    if config.mode == Mode::Client {
        return responder::run(config, options_from_env);
    }
    if config.mode == Mode::ListChecks {
        print!("{}", checks::limits_table());
        return 0;
    }
    match &config.mode {
        Mode::Compare(reader) => return readers::compare(config, reader),
        Mode::Baseline(reader) => return readers::baseline(config, reader),
        Mode::Report { reader, html } => return readers::report(config, reader, html.as_deref()),
        Mode::Merge(paths) => return readers::merge(config, paths),
        _ => {}
    }
    if let Mode::Schema { fleet } = config.mode {
        let schema = if fleet {
            crate::wire::fleet::fleet_schema()
        } else {
            crate::wire::document::document_schema()
        };
        return print_pretty(&schema);
    }
    let outcome = driver::run(config, options_from_env);
    let code = deliver(config, &outcome);
    if code != 0 {
        return code;
    }
    if let Some(signal) = outcome.interrupted {
        return signal.exit_code();
    }
    if config.strict && checks::any_failed(&outcome.doc.checks) {
        return 3;
    }
    0
}

/// Prints a JSON value indented, as committed files hold it; 0, or 1 when stdout is closed.
pub(crate) fn print_pretty(value: &serde_json::Value) -> u8 {
    match report::render(value, true) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{text}").and_then(|_| out.flush()) {
                Ok(()) => 0,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
                Err(e) => {
                    eprintln!("health_check: error: writing to stdout: {e}");
                    1
                }
            }
        }
        Err(e) => {
            eprintln!("health_check: error: {e:#}");
            1
        }
    }
}

/// Writes `file_text` to `output` (atomically) when given, and `stdout_text` to stdout. Returns 0,
/// or 1 when either could not be written (a closed pipe is the reader's choice, not a failure).
pub(crate) fn emit(output: Option<&std::path::Path>, stdout_text: &str, file_text: &str) -> u8 {
    let mut code = 0;
    if let Some(path) = output {
        if let Err(e) = report::write_atomically(path, file_text) {
            eprintln!("health_check: error: {e:#}");
            code = 1;
        }
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{stdout_text}").and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("health_check: error: writing to stdout: {e}");
            code = 1;
        }
    }
    code
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
        Mode::Debug { name, .. } => vec![name.to_string()],
    }
}

/// Writes the document (in `--format`) to `--output` and stdout and the summary to stderr.
/// Returns 0, or 1 when the document could not be written where asked.
pub fn deliver(config: &Config, outcome: &Outcome) -> u8 {
    let run_id = envelope::new_run_id();
    let render = |pretty: bool| -> Result<String, serde_json::Error> {
        match config.format {
            Format::Junit => Ok(report::junit::document(&outcome.doc)),
            Format::Prometheus => Ok(report::prometheus::document(&outcome.doc)),
            Format::Json if config.envelope => {
                let env = envelope::wrap(
                    &outcome.doc,
                    &outcome.system,
                    benchmark_args(config),
                    run_id.clone(),
                    outcome.doc.health_check.started_unix,
                );
                report::render(&env, pretty)
            }
            Format::Json => report::render(&outcome.doc, pretty),
        }
    };
    // One line on a pipe (benchpress reads lines), indented for people and in files.
    let file = match config.output {
        Some(_) => render(true),
        None => Ok(String::new()),
    };
    let code = match (render(std::io::stdout().is_terminal()), file) {
        (Ok(out), Ok(file)) => emit(config.output.as_deref(), &out, &file),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("health_check: error: {e:#}");
            1
        }
    };
    eprint!("{}", human::summary(&outcome.doc, human::color_wanted()));
    code
}
