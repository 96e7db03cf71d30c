//! nhc.conf read as NHC 1.4.3 reads it, byte for byte: lines as `while read LINE` gives them
//! (a backslash quotes and is dropped, a trailing one joins lines, blanks trimmed, a last line
//! with no newline never read), cut at the first `||` into a host mask and a check, comments
//! (`#` starting the mask) and empty sides skipped, and the check kept when the mask matches this
//! host (`mcheck`). Each kept check is what `eval $CHECK` makes of it: split on blanks, joined
//! with one space, parsed as one bash command ([`super::bash::words`]).
//!
//! The file is read once, as a file that steers root ([`crate::trust::read_root_file`]): a
//! line that runs a program the file names (`check_cmd_*`, `MCELOG=`, `PATH=` ...) is honoured
//! only when nobody but root can change the file. A line health_check cannot honour (a check it
//! does not run, shell beyond one command) is an error naming the line, for this host; for
//! another host it is said in the notes.

use super::bash::read::Lines;
use super::bash::words::{self, Assignment, Command, Piece};
use super::bytes::{show, trim, words as blank_words};
use super::checks::{RUN_COMMANDS, SUPPORTED};
use super::matching::{mcheck, take_problems};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The largest nhc.conf read.
pub const SIZE_LIMIT: u64 = 4 << 20;

/// How long reading the file may take when the run has no deadline of its own (a file on a
/// hung network file system must not hang the run).
pub const READ_DEADLINE: Duration = Duration::from_secs(10);

/// The checks of one nhc.conf that apply to this host, and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conf {
    /// The file.
    pub path: PathBuf,
    /// The host name the masks were matched against.
    pub host: Vec<u8>,
    /// The lines whose host mask matches this host, in order.
    pub lines: Vec<Line>,
    /// Whether nobody but root can change the file (programs it names may run).
    pub root_only: bool,
    /// `TIMEOUT`: seconds, where the file writes one out.
    pub timeout_secs: Option<u64>,
    /// What the operator should hear of: lines for other hosts health_check could not honour,
    /// settings it does not use, patterns that match nothing, a last line NHC never reads.
    pub notes: Vec<String>,
    /// Settings given as NHC's command line gives them (`NHC_RM=none`): they hold before the
    /// first line, over NHC's defaults and the environment.
    pub command_line: Vec<(Vec<u8>, Vec<u8>)>,
    /// NHC's own settings file (`/etc/default/nhc`, `/etc/sysconfig/nhc`), which NHC sources
    /// after its command line and before its defaults: its settings, in order.
    pub sysconfig: Vec<Line>,
    /// The lines for this host health_check cannot honour, each with why (read by
    /// [`Conf::read`]; [`Conf::parse`] and [`Conf::load`] refuse a file that has any).
    pub refused: Vec<ConfError>,
}

/// `path` read as a file that steers root, taking at most `deadline` (a file on a hung network
/// file system makes it an error, not a hang); `Err`: the time ran out.
fn read_within(
    path: &Path,
    deadline: Duration,
) -> Result<Result<crate::trust::RootFile, crate::trust::Untrusted>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(crate::trust::read_root_file(&owned, SIZE_LIMIT));
    });
    rx.recv_timeout(deadline).map_err(|_| {
        format!(
            "reading it took more than {} s (a hung file system?)",
            deadline.as_secs_f64()
        )
    })
}

/// Where NHC 1.4.3 finds its settings file (`nhcmain_init_env`): `/etc/default/nhc` on Debian,
/// else `/etc/sysconfig/nhc` where `/etc/sysconfig` is a directory, else `/etc/default/nhc`,
/// else `/etc/nhc/sysconfig/nhc`.
pub fn sysconfig_path() -> PathBuf {
    let dir = if Path::new("/etc/debian_version").is_file() {
        "/etc/default"
    } else if Path::new("/etc/sysconfig").is_dir() {
        "/etc/sysconfig"
    } else if Path::new("/etc/default").is_dir() {
        "/etc/default"
    } else {
        "/etc/nhc/sysconfig"
    };
    Path::new(dir).join("nhc")
}

/// One line for this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its line number in the file (the first, for a joined line).
    pub number: usize,
    /// The check as NHC evaluates it (blanks collapsed).
    pub text: Vec<u8>,
    /// The check as NHC holds it in `$CHECK` (trimmed, its blanks as written): what NHC's
    /// messages about the whole line quote.
    pub raw: Vec<u8>,
    /// The command, parsed.
    pub command: Command,
    /// What it is.
    pub kind: Kind,
    /// Whether nobody but root can change the file it came from (nhc.conf, or NHC's settings
    /// file: each line is trusted as its own file is).
    pub root_only: bool,
}

/// What a line does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Runs a check, by NHC's name.
    Check(String),
    /// Sets variables (`A=1`, `export A=1 B=2`).
    Set,
    /// `unset NAME...`: removes variables.
    Unset,
    /// `:` or `true`: nothing.
    Nothing,
}

/// What is wrong with an nhc.conf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}{}: {message}", .column.map(|c| format!(":{c}")).unwrap_or_default())]
pub struct ConfError {
    /// The file.
    pub path: String,
    /// The line (0: the file itself).
    pub line: usize,
    /// The byte of the line where what is wrong starts, from 1, when the fault is one word.
    pub column: Option<usize>,
    /// What is wrong, and what would be right.
    pub message: String,
}

/// Variables naming programs NHC runs, or what they are given (a tool's arguments choose what
/// it writes as root: `nvidia-smi -f FILE`; df's flags choose what it opens): set only from a
/// file only root can change, by a plain setting or by an expansion (`${X:=...}`) alike.
pub const PROGRAM_SETTINGS: &[&str] = &[
    "MCELOG",
    "MCELOG_ARGS",
    "NVIDIA_HEALTHMON",
    "NVIDIA_HEALTHMON_ARGS",
    "NVIDIA_SMI_HEALTHMON",
    "NVIDIA_SMI_HEALTHMON_ARGS",
    "DF_FLAGS",
    "DFI_FLAGS",
    "PATH",
];

/// NHC's settings for its own log, paths and tools, which mean nothing to health_check: said,
/// never dropped silently.
const NHC_OWN_SETTINGS: &[&str] = &[
    "DEBUG",
    "TS",
    "SILENT",
    "VERBOSE",
    "LOGFILE",
    "RESULTFILE",
    "CONFDIR",
    "CONFFILE",
    "INCDIR",
    "HELPERDIR",
    "ONLINE_NODE",
    "OFFLINE_NODE",
    "NHC_CHECK_FORKED",
    "DETACHED_MODE",
    "DETACHED_MODE_FAIL_NODATA",
    "FORCE_SETSID",
    "NHC_CHECK_ALL",
    "IGNORE_EMPTY_NOTE",
    "DF_CMD",
    "DFI_CMD",
    "MOUNT_CMD",
    "STAT_CMD",
    "STAT_FMT_ARGS",
    "PBSNODES",
    "PBSNODES_LIST_ARGS",
    "PBSNODES_OFFLINE_ARGS",
    "PBSNODES_ONLINE_ARGS",
    "SLURM_SCONTROL",
    "SLURM_SC_OFFLINE_ARGS",
    "SLURM_SC_ONLINE_ARGS",
    "SLURM_SINFO",
    "NHC_MCHECK_DELIM",
    "NHC_MCHECK_COMMAND",
];

impl Conf {
    /// Reads `path` for the host named `host` (`/proc/sys/kernel/hostname`, as NHC matches),
    /// taking at most `deadline` (a hung file system makes it an error, not a hang).
    pub fn load(path: &Path, host: &str, deadline: Duration) -> Result<Conf, ConfError> {
        Conf::read(path, host, deadline)?.whole()
    }

    /// [`Conf::load`], keeping the lines for this host it cannot honour in
    /// [`Conf::refused`] instead of refusing the file at the first: what an operator trying a
    /// site's file reads, every line's fault at once.
    pub fn read(path: &Path, host: &str, deadline: Duration) -> Result<Conf, ConfError> {
        let shown = path.display().to_string();
        let err = |line: usize, message: String| ConfError {
            path: shown.clone(),
            line,
            column: None,
            message,
        };
        let file = read_within(path, deadline)
            .map_err(|e| err(0, e))?
            .map_err(|e| err(0, e.0))?;
        let (root_only, why) = match file.root_only {
            Ok(()) => (true, None),
            Err(e) => (false, Some(e.0)),
        };
        let mut conf = Conf::parse_all(&file.bytes, path, host.as_bytes(), root_only)?;
        if let (Some(why), Some(first)) = (why, conf.lines.iter().find(|l| l.runs_programs())) {
            return Err(err(
                first.number,
                format!(
                    "it runs programs the file names ({}), so nobody but root may be able to \
                     change the file: {why}; chown root, chmod go-w it and its directories",
                    show(first.command.name.as_deref().unwrap_or(b"a setting"))
                ),
            ));
        }
        conf.path = path.to_path_buf();
        let sysconfig = sysconfig_path();
        match read_within(&sysconfig, deadline) {
            Ok(Ok(read)) => conf.source(&read.bytes, &sysconfig, read.root_only.is_ok()),
            // No settings file is NHC's usual case.
            Ok(Err(_)) if !sysconfig.exists() => {}
            Ok(Err(crate::trust::Untrusted(why))) | Err(why) => conf.notes.push(format!(
                "{}: not read ({why}): NHC sources it before the file, so its settings may differ",
                sysconfig.display(),
            )),
        }
        Ok(conf)
    }

    /// Takes the settings of NHC's settings file (`path`: what `. /etc/default/nhc` sets),
    /// line by line as bash reads a sourced file: a backslash before a newline joins lines,
    /// `#` starts a comment, each line one command. Settings, `export` and `unset` are kept
    /// ([`Conf::sysconfig`]); anything else NHC's bash would run there (a check, a function, an
    /// `if`) is not run, and said. `root_only` as for the file itself.
    pub fn source(&mut self, bytes: &[u8], path: &Path, root_only: bool) {
        let shown = path.display();
        let joined = bytes_joined(bytes);
        for (number, line) in joined {
            let text = trim(&line);
            if text.is_empty() || text.starts_with(b"#") {
                continue;
            }
            let command = match words::parse(text) {
                Ok(c) => c,
                Err(e) => {
                    self.notes.push(format!(
                        "{shown}:{number}: '{}': {}: not taken",
                        show(text),
                        e.message
                    ));
                    continue;
                }
            };
            let kind = match kind_of(&command, root_only) {
                Ok(k @ (Kind::Set | Kind::Unset | Kind::Nothing)) => k,
                Ok(Kind::Check(check)) => {
                    self.notes.push(format!(
                        "{shown}:{number}: {check} is a check: NHC would run it as it reads the \
                         file, outside its checks; health_check runs checks only from nhc.conf"
                    ));
                    continue;
                }
                Err(m) => {
                    self.notes.push(format!(
                        "{shown}:{number}: '{}': {m}: not taken",
                        show(text)
                    ));
                    continue;
                }
            };
            self.note_settings(number, &command);
            if let Some(Ok(secs)) = timeout_of(&command) {
                self.timeout_secs = (secs > 0).then_some(secs as u64);
            }
            self.sysconfig.push(Line {
                number,
                text: text.to_vec(),
                raw: text.to_vec(),
                command,
                kind,
                root_only,
            });
        }
        if !self.sysconfig.is_empty() {
            self.notes.push(format!(
                "{shown}: {} setting line(s) taken, as NHC sources the file before nhc.conf",
                self.sysconfig.len()
            ));
        }
    }

    /// Parses the bytes of an nhc.conf for the host `host`; `root_only` says whether nobody but
    /// root can change the file. A line for this host that cannot be honoured refuses the file.
    pub fn parse(
        bytes: &[u8],
        path: &Path,
        host: &[u8],
        root_only: bool,
    ) -> Result<Conf, ConfError> {
        Conf::parse_all(bytes, path, host, root_only)?.whole()
    }

    /// The file as a whole: refused, with its first refused line, how many more there are and
    /// where, when it has any.
    pub fn whole(self) -> Result<Conf, ConfError> {
        let Some(first) = self.refused.first() else {
            return Ok(self);
        };
        let mut e = first.clone();
        let more = &self.refused[1..];
        if !more.is_empty() {
            let at: Vec<String> = more.iter().take(10).map(|m| m.line.to_string()).collect();
            e.message.push_str(&format!(
                " (and {} more line(s) refused: {}{}; `health_check nhc {}` says why for each)",
                more.len(),
                at.join(", "),
                if more.len() > 10 { ", ..." } else { "" },
                self.path.display()
            ));
        }
        Err(e)
    }

    /// [`Conf::parse`], keeping the lines it cannot honour in [`Conf::refused`].
    pub fn parse_all(
        bytes: &[u8],
        path: &Path,
        host: &[u8],
        root_only: bool,
    ) -> Result<Conf, ConfError> {
        let err = |line: usize, column: Option<usize>, message: String| ConfError {
            path: path.display().to_string(),
            line,
            column,
            message,
        };
        let mut conf = Conf {
            path: path.to_path_buf(),
            host: host.to_vec(),
            lines: Vec::new(),
            root_only,
            timeout_secs: None,
            notes: Vec::new(),
            command_line: Vec::new(),
            sysconfig: Vec::new(),
            refused: Vec::new(),
        };
        let _ = take_problems();
        let mut lines = Lines::new(bytes, SIZE_LIMIT);
        for read in lines.by_ref() {
            let number = read.number;
            let (mask, check) = split(&read.bytes);
            if mask.starts_with(b"#") || mask.is_empty() || check.is_empty() {
                continue;
            }
            let matches = mcheck(mask, host);
            for p in take_problems() {
                conf.notes.push(format!("line {number}: host mask: {p}"));
            }
            // A line without `||` is its own host mask (NHC cuts at `||` or not at all): a
            // forgotten `* ||` silently never runs, in NHC as here.
            if !matches && !read.bytes.windows(2).any(|w| w == b"||") {
                conf.notes.push(format!(
                    "line {number}: '{}' has no '||': NHC reads the whole line as its host mask, \
                     which matches no host named like this one, so the line never runs (write \
                     '* || ...' to run it on every host)",
                    show(trim(&read.bytes))
                ));
                continue;
            }
            // `eval $CHECK`: split on blanks, joined with single spaces, then parsed.
            let split: Vec<&[u8]> = blank_words(check).collect();
            let text: Vec<u8> = split.join(&b' ');
            let parsed = match words::parse(&text) {
                Ok(c) => kind_of(&c, root_only)
                    .map(|k| (c, k))
                    .map_err(|m| (m, None)),
                Err(e) => Err((e.message, Some(column(&read.bytes, &split, e.at)))),
            };
            let (command, kind) = match (parsed, matches) {
                (Ok(p), true) => p,
                (Err((m, col)), true) => {
                    conf.refused
                        .push(err(number, col, format!("'{}': {m}", show(&text))));
                    continue;
                }
                (Err((m, col)), false) => {
                    let at = col.map(|c| format!(", column {c}")).unwrap_or_default();
                    conf.notes.push(format!(
                        "line {number}{at} (for '{}', not this host): '{}': {m}",
                        show(mask),
                        show(&text)
                    ));
                    continue;
                }
                (Ok(_), false) => continue,
            };
            conf.note_settings(number, &command);
            if let Some(t) = timeout_of(&command) {
                match t {
                    Ok(secs) => conf.timeout_secs = (secs > 0).then_some(secs as u64),
                    Err(why) => conf.notes.push(format!("line {number}: {why}")),
                }
            }
            conf.lines.push(Line {
                number,
                text,
                raw: crate::nhc::bytes::trim(check).to_vec(),
                command,
                kind,
                root_only,
            });
        }
        if lines.truncated {
            return Err(err(
                0,
                None,
                format!("it is larger than {SIZE_LIMIT} bytes"),
            ));
        }
        if let Some(last) = lines.unterminated {
            conf.notes.push(format!(
                "line {}: '{}' has no newline at its end: NHC's `while read` never runs it, and \
                 neither does health_check",
                last.number,
                show(&last.bytes)
            ));
        }
        Ok(conf)
    }

    /// Says which of NHC's own settings the line sets (they mean nothing here).
    fn note_settings(&mut self, number: usize, c: &Command) {
        for a in assignments(c) {
            let name = String::from_utf8_lossy(&a.name);
            if NHC_OWN_SETTINGS.contains(&name.as_ref()) {
                self.notes.push(format!(
                    "line {number}: {name} is a setting of NHC's own (its log, paths or tools): \
                     health_check does not use it"
                ));
            }
        }
    }
}

impl Line {
    /// Whether the line runs a program the file names (a command check, or a setting naming
    /// a program).
    pub fn runs_programs(&self) -> bool {
        matches!(&self.kind, Kind::Check(c) if RUN_COMMANDS.contains(&c.as_str()))
            || assignments(&self.command)
                .iter()
                .any(|a| PROGRAM_SETTINGS.contains(&String::from_utf8_lossy(&a.name).as_ref()))
    }
}

/// The column (a byte of `line`, from 1) of byte `at` of the words of `line` joined with single
/// spaces (the text a check is parsed from): columns point into the file as it is, blanks and
/// all.
fn column(line: &[u8], words: &[&[u8]], at: usize) -> usize {
    let mut start = 0;
    for w in words {
        // Each word is a part of the line: where it starts there.
        let in_line = (w.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
        if at <= start + w.len() {
            return in_line + (at - start).min(w.len()) + 1;
        }
        start += w.len() + 1;
    }
    line.len() + 1
}

/// The line cut as NHC cuts it: before the first `||` the mask, after it the check (a line
/// without one is both), each trimmed.
fn split(line: &[u8]) -> (&[u8], &[u8]) {
    match line.windows(2).position(|w| w == b"||") {
        Some(at) => (trim(&line[..at]), trim(&line[at + 2..])),
        None => (trim(line), trim(line)),
    }
}

/// Every assignment a command makes: before its name, and as `export`'s arguments.
pub fn assignments(c: &Command) -> Vec<Assignment> {
    let mut out = c.assignments.clone();
    if c.name.as_deref() == Some(b"export") {
        out.extend(c.args.iter().filter_map(words::assignment));
    }
    out
}

/// The checks health_check runs, by family: `check_fs_{mount,free}, check_hw_cpuinfo, ...`.
fn supported_compact() -> String {
    let mut families: Vec<(&str, Vec<&str>)> = Vec::new();
    for name in SUPPORTED {
        // `check_fs_mount_rw`: family `check_fs_`, member `mount_rw`.
        let cut = name["check_".len()..]
            .find('_')
            .map_or(name.len(), |i| "check_".len() + i + 1);
        let (family, member) = name.split_at(cut);
        match families.iter_mut().find(|(f, _)| *f == family) {
            Some((_, members)) => members.push(member),
            None => families.push((family, vec![member])),
        }
    }
    families
        .iter()
        .map(|(family, members)| match members.as_slice() {
            [one] => format!("{family}{one}"),
            many => format!("{family}{{{}}}", many.join(",")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A sourced file's lines as bash reads them, with the number of each one's first line: a
/// backslash before a newline joins the two (outside single quotes: a setting file's lines
/// seldom quote one; a quote left open is refused by the parser).
fn bytes_joined(bytes: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let mut out: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let (number, mut text) = open.take().unwrap_or((i + 1, Vec::new()));
        match line.strip_suffix(b"\\") {
            Some(head) => {
                text.extend_from_slice(head);
                open = Some((number, text));
            }
            None => {
                text.extend_from_slice(line);
                out.push((number, text));
            }
        }
    }
    out.extend(open);
    out
}

/// What a parsed command is, or why health_check cannot honour it.
fn kind_of(c: &Command, root_only: bool) -> Result<Kind, String> {
    for a in assignments(c) {
        let name = String::from_utf8_lossy(&a.name).into_owned();
        if name == "IFS" {
            return Err("setting IFS changes how NHC splits every later line: \
                        health_check does not follow it"
                .into());
        }
        if PROGRAM_SETTINGS.contains(&name.as_str()) && !root_only {
            return Err(format!(
                "{name} names a program to run, or what it is given: honoured only from a file \
                 nobody but root can change"
            ));
        }
    }
    let Some(name) = &c.name else {
        return Ok(Kind::Set);
    };
    let literal = |w: &words::Word| -> Option<Vec<u8>> {
        w.iter()
            .map(|p| match p {
                Piece::Text { bytes, .. } => Some(bytes.clone()),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(|v| v.concat())
    };
    Ok(match name.as_slice() {
        b":" | b"true" => Kind::Nothing,
        b"export" => {
            for a in &c.args {
                if words::assignment(a).is_none()
                    && literal(a).is_some_and(|w| w.starts_with(b"-") && w != b"-n")
                {
                    return Err("export takes names and NAME=value here (and -n)".into());
                }
            }
            Kind::Set
        }
        b"unset" => {
            if c.args
                .iter()
                .any(|a| literal(a).is_some_and(|w| w.starts_with(b"-") && w != b"-v"))
            {
                return Err("unset takes variables' names here".into());
            }
            Kind::Unset
        }
        other => {
            let check = String::from_utf8_lossy(other).into_owned();
            if !SUPPORTED.contains(&check.as_str()) {
                let site = if other.starts_with(b"check_") {
                    " (NHC's own checks are these; a site's, from a script in /etc/nhc/scripts, \
                     are not run)"
                } else {
                    ""
                };
                return Err(format!(
                    "'{}' is not a check health_check runs; it runs {}{site}",
                    show(other),
                    supported_compact()
                ));
            }
            if RUN_COMMANDS.contains(&check.as_str()) && !root_only {
                return Err(format!(
                    "{check} runs a program: honoured only from a file nobody but root can change"
                ));
            }
            Kind::Check(check)
        }
    })
}

/// `TIMEOUT=N` on this line: the number, or why it is not taken.
fn timeout_of(c: &Command) -> Option<Result<i64, String>> {
    let a = assignments(c)
        .into_iter()
        .rev()
        .find(|a| a.name == b"TIMEOUT")?;
    let text: Option<Vec<u8>> = a
        .value
        .iter()
        .map(|p| match p {
            Piece::Text { bytes, .. } => Some(bytes.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .map(|v| v.concat());
    Some(match text {
        Some(t) => super::bash::arith::number(&t).map_err(|e| {
            format!(
                "TIMEOUT={} is no number ({e}): not taken as the run's deadline",
                show(&t)
            )
        }),
        None => Err(
            "TIMEOUT is computed here: health_check takes nhc.conf's TIMEOUT as the \
                     run's deadline only when it is written out as a number"
                .into(),
        ),
    })
}

#[cfg(test)]
mod tests;
