//! Dispatch on the role, then deliver the result: the JSON document on stdout (and `--output`),
//! the summary on stderr, and the exit code (0 written, 1 nothing could be produced, 3 `--strict`
//! and a check failed, 130/143 interrupted).

pub mod driver;
pub mod responder;

use crate::checks;
use crate::config::{Config, Mode};
use crate::report::{self, envelope, human};
use std::io::{IsTerminal, Write};

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

/// The role's argument strings as benchpress records them (`benchmark_args`).
fn benchmark_args(config: &Config) -> Vec<String> {
    match &config.mode {
        Mode::Server => vec![
            "-r server".to_string(),
            format!("-c {}", config.clients.join(",")),
        ],
        Mode::Client => vec!["-r client".to_string()],
        Mode::ListChecks => vec!["checks --list".to_string()],
        Mode::Debug { name, .. } => vec![name.to_string()],
    }
}

/// Writes the document to `--output` and stdout and the summary to stderr. Returns 0, or 1 when
/// the document could not be written where asked.
pub fn deliver(config: &Config, outcome: &driver::Outcome) -> u8 {
    let render = |pretty: bool| {
        if config.envelope {
            let env = envelope::wrap(
                &outcome.doc,
                &outcome.system,
                benchmark_args(config),
                envelope::new_run_id(),
                outcome.doc.health_check.started_unix,
            );
            report::render(&env, pretty)
        } else {
            report::render(&outcome.doc, pretty)
        }
    };
    let mut code = 0;
    let stdout_is_tty = std::io::stdout().is_terminal();
    match render(stdout_is_tty) {
        Ok(json) => {
            if let Some(path) = &config.output {
                let file_json = if stdout_is_tty {
                    Ok(json.clone())
                } else {
                    render(true)
                };
                if let Err(e) = file_json.and_then(|j| report::write_atomically(path, &j)) {
                    eprintln!("health_check: error: {e:#}");
                    code = 1;
                }
            }
            let mut out = std::io::stdout().lock();
            if let Err(e) = writeln!(out, "{json}").and_then(|_| out.flush()) {
                // A closed pipe (`| head`) is the reader's choice, not our failure.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    eprintln!("health_check: error: writing the document to stdout: {e}");
                    code = 1;
                }
            }
        }
        Err(e) => {
            eprintln!("health_check: error: {e:#}");
            return 1;
        }
    }
    eprint!("{}", human::summary(&outcome.doc, human::color_wanted()));
    code
}
