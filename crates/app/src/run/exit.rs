//! The process's exit status, one enum for every command (README "Exit codes").

use crate::os::Interrupt;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the document (or report) was written; failed sections are recorded in it.
    Ok,
    /// 1: no document could be produced, or it could not be written where asked.
    NotWritten,
    /// 2: a usage error, or an input that cannot be read (the message names it).
    Usage,
    /// 3: `--strict` and a check failed (or the fleet report flags a machine).
    ChecksFailed,
    /// 130 or 143: SIGINT or SIGTERM cut the run short (the document was still written).
    Interrupted(Interrupt),
    /// 1 under `--format npd` and `slurm`: the run is unhealthy (a check or section failed).
    Unhealthy,
    /// 2 under `--format npd`: inconclusive, or a section could not run (NPD's Unknown).
    Unknown,
}

impl Exit {
    /// The status the process exits with.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::NotWritten => 1,
            Exit::Usage => 2,
            Exit::ChecksFailed => 3,
            Exit::Interrupted(i) => i.exit_code(),
            Exit::Unhealthy => 1,
            Exit::Unknown => 2,
        }
    }

    /// The worse of two outcomes of one command (a failed write outranks success).
    pub fn or(self, other: Exit) -> Exit {
        if self == Exit::Ok { other } else { self }
    }
}
