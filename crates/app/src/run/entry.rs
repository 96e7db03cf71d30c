//! The binary's body: parse the command line, run, turn the outcome into an exit code. `main.rs`
//! calls it; so does the tests' build with fault injection (`examples/`), so both run one path.

use super::Exit;
use crate::cli::{self, Cli, OPTIONS_ENV};
use crate::{config::Config, os};
use std::process::ExitCode;

/// Runs `health_check` with the process's arguments and environment.
pub fn main() -> ExitCode {
    let env_options = std::env::var(OPTIONS_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let args = cli::with_env_options(
        cli::normalize_args(std::env::args_os()),
        env_options.as_deref(),
    );
    let cli = match Cli::parse_args(&args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version exit 0 on stdout; usage errors exit 2 on stderr.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let config = match Config::from_cli(&cli, os::available_cpus()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            eprintln!("For more information, try '--help'.");
            return ExitCode::from(Exit::Usage.code());
        }
    };
    // Measuring modes stop between steps and still print what they measured; the readers
    // keep the default action, so the first SIGINT or SIGTERM ends them at once (130/143).
    if config.measures() {
        if let Err(e) = os::install_stop_handlers() {
            eprintln!("health_check: warning: Ctrl-C will end the run without a document: {e}");
        }
    }
    ExitCode::from(super::run(&config, env_options).code())
}
