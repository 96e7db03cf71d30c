//! The `health_check` binary: its body is [`health_check::run::entry::main`].

use std::process::ExitCode;

fn main() -> ExitCode {
    health_check::run::entry::main()
}
