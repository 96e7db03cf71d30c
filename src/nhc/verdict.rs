//! What a check line decides ([`Verdict`]) and the file's settings it reads ([`Settings`]):
//! shared by the modules of checks, so none of them imports another.

use std::collections::BTreeMap;

/// The file's settings the checks read (`MCELOG=`, `NHC_AUTH_USERS=`, ...), and the host's
/// names (`HOSTNAME`, `HOSTNAME_S`), by name.
pub type Settings = BTreeMap<String, String>;

/// One verdict of a check line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What it is about (a mount point, a file, a process), if not the machine.
    pub subject: Option<String>,
    /// NHC's verdict: `None` passed; the failure message as NHC gives it otherwise.
    pub failure: Option<String>,
    /// Said beside a pass (a non-fatal failure, something NHC would have done).
    pub note: Option<String>,
    /// Why it could not be judged here (a tool that is not installed, a resource manager that
    /// did not answer): neither a pass nor a failure.
    pub skip: Option<String>,
}

impl Verdict {
    /// A verdict about the machine as a whole (no subject).
    pub fn of_machine(
        failure: Option<String>,
        note: Option<String>,
        skip: Option<String>,
    ) -> Verdict {
        Verdict {
            subject: None,
            failure,
            note,
            skip,
        }
    }
}
