//! nhc.conf as NHC reads it: lines of `<host mask> || <check> <args>`, comments, a trailing `\`
//! joining the next line, settings (`export VAR=value`), and the host masks NHC accepts (a glob
//! of the whole host name, `/regex/`, a pdsh-style `{n[01-10],n20}` list, each negated by a
//! leading `!`). A line health_check cannot honour (an unknown check, shell beyond a simple
//! command, an unknown setting) is an error naming the line, never skipped.

use super::checks::SUPPORTED;
use super::matching::host_matches;
pub use super::shell::words;
use std::path::{Path, PathBuf};

/// The checks of one nhc.conf that apply to this host, and its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conf {
    /// The file.
    pub path: PathBuf,
    /// The check lines whose host mask matches this host, in order.
    pub lines: Vec<Line>,
    /// `TIMEOUT`: seconds (NHC's watchdog; 30 by default).
    pub timeout_secs: Option<u64>,
    /// `MARK_OFFLINE=0`: observe only (failures are reported, not acted on).
    pub observe_only: bool,
    /// Settings the checks read (`MCELOG=`, `NHC_AUTH_USERS=`, ...), the last value of each.
    pub settings: std::collections::BTreeMap<String, String>,
}

/// One check line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its line number in the file (the first, for a joined line).
    pub number: usize,
    /// The check as written.
    pub text: String,
    /// The check's name.
    pub check: String,
    /// Its arguments, as words (quotes removed; `$((...))` and `$HW_*` left for run time).
    pub args: Vec<String>,
}

/// What is wrong with an nhc.conf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct ConfError {
    /// The file.
    pub path: String,
    /// The line (0: the file itself).
    pub line: usize,
    /// What is wrong, and what would be right.
    pub message: String,
}

/// Settings the checks read, as NHC names them.
const CHECK_SETTINGS: &[&str] = &[
    "MCELOG_ARGS",
    "MCELOG_MAX_CORRECTED_RATE",
    "MCELOG_MAX_UNCORRECTED_RATE",
    "NVIDIA_HEALTHMON_ARGS",
    "NVIDIA_SMI_HEALTHMON_ARGS",
    "NHC_AUTH_USERS",
    "MAX_SYS_UID",
    "NHC_RM",
    "RM_DAEMON_MATCH",
];

/// Settings that name a program to run: like check_cmd_*, only from a file only root can write.
const COMMAND_SETTINGS: &[&str] = &["MCELOG", "NVIDIA_HEALTHMON", "NVIDIA_SMI_HEALTHMON"];

/// Settings NHC knows that mean nothing to health_check (logging, its own paths, the resource
/// manager it would call): accepted and ignored.
const IGNORED_SETTINGS: &[&str] = &[
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
    "FORCE_SETSID",
    "NHC_CHECK_ALL",
    "IGNORE_EMPTY_NOTE",
    "DF_CMD",
    "DF_FLAGS",
    "DFI_CMD",
    "DFI_FLAGS",
    "MOUNT_CMD",
    "STAT_CMD",
    "PATH",
];

impl Conf {
    /// Reads `path` for the host named `host` (`/proc/sys/kernel/hostname`, as NHC matches).
    pub fn load(path: &Path, host: &str) -> Result<Conf, ConfError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfError {
            path: path.display().to_string(),
            line: 0,
            message: format!("cannot read it: {e}"),
        })?;
        let conf = Conf::parse(&text, path, host)?;
        let runs_commands = conf.lines.iter().any(|l| l.check.starts_with("check_cmd_"))
            || COMMAND_SETTINGS
                .iter()
                .any(|s| conf.settings.contains_key(*s));
        if runs_commands {
            others_can_write(path).map_err(|message| ConfError {
                path: path.display().to_string(),
                line: 0,
                message,
            })?;
        }
        Ok(conf)
    }

    /// Parses the text of an nhc.conf.
    pub fn parse(text: &str, path: &Path, host: &str) -> Result<Conf, ConfError> {
        let err = |line: usize, message: String| ConfError {
            path: path.display().to_string(),
            line,
            message,
        };
        let mut conf = Conf {
            path: path.to_path_buf(),
            lines: Vec::new(),
            timeout_secs: None,
            observe_only: false,
            settings: Default::default(),
        };
        for (number, line) in joined_lines(text) {
            let line = line.trim();
            let Some((mask, check)) = line.split_once("||") else {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                return Err(err(
                    number,
                    format!("'{line}': a line is '<host mask> || <check> <args>'"),
                ));
            };
            let (mask, check) = (mask.trim(), check.trim());
            if mask.starts_with('#') || mask.is_empty() || check.is_empty() {
                continue;
            }
            let words = words(check).map_err(|m| err(number, format!("'{check}': {m}")))?;
            let Some(first) = words.first() else { continue };
            let matches = host_matches(mask, host).map_err(|m| err(number, m))?;
            if first == "export" || first.contains('=') {
                let setting = if first == "export" {
                    words.get(1)
                } else {
                    Some(first)
                };
                let Some((name, value)) = setting.and_then(|s| s.split_once('=')) else {
                    return Err(err(number, format!("'{check}': a setting is VAR=value")));
                };
                if matches {
                    conf.set(name, value).map_err(|m| err(number, m))?;
                }
                continue;
            }
            if !SUPPORTED.contains(&first.as_str()) {
                return Err(err(
                    number,
                    format!(
                        "'{first}' is not a check health_check runs; it runs: {}",
                        SUPPORTED.join(", ")
                    ),
                ));
            }
            if matches {
                conf.lines.push(Line {
                    number,
                    text: check.to_string(),
                    check: first.clone(),
                    args: words[1..].to_vec(),
                });
            }
        }
        Ok(conf)
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name {
            "TIMEOUT" => {
                let secs = value
                    .parse()
                    .map_err(|_| format!("TIMEOUT={value}: give whole seconds"))?;
                self.timeout_secs = (secs > 0).then_some(secs);
            }
            "MARK_OFFLINE" => self.observe_only = value == "0",
            _ if CHECK_SETTINGS.contains(&name) || COMMAND_SETTINGS.contains(&name) => {
                self.settings.insert(name.to_string(), value.to_string());
            }
            _ if IGNORED_SETTINGS.contains(&name) => {}
            _ => {
                return Err(format!(
                    "{name}: not a setting health_check knows (it honours TIMEOUT, \
                     MARK_OFFLINE, {}, {}, and accepts NHC's own: {})",
                    COMMAND_SETTINGS.join(", "),
                    CHECK_SETTINGS.join(", "),
                    IGNORED_SETTINGS.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// Commands run from a file only root may change: owned by root, writable by no group or other.
fn others_can_write(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if md.uid() != 0 || md.mode() & 0o022 != 0 {
        return Err(format!(
            "it runs commands (check_cmd_*), so it must be owned by root and writable by nobody \
             else (owner uid {}, mode {:04o}): chown root and chmod go-w it",
            md.uid(),
            md.mode() & 0o7777
        ));
    }
    Ok(())
}

/// The file's lines with their numbers, a line ending in `\` joined to the next.
fn joined_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let (number, mut line) = open.take().unwrap_or((i + 1, String::new()));
        match raw.trim_end().strip_suffix('\\') {
            Some(head) if !head.ends_with('\\') => {
                line.push_str(head);
                open = Some((number, line));
            }
            _ => {
                line.push_str(raw);
                out.push((number, line));
            }
        }
    }
    out.extend(open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, host: &str) -> Result<Conf, ConfError> {
        Conf::parse(text, Path::new("nhc.conf"), host)
    }

    /// The host masks of NHC's README, on a few names.
    #[test]
    fn host_masks_match_as_nhc_matches_them() {
        let cases = [
            ("*", "n0001", true),
            ("!ln*", "ln01", false),
            ("!ln*", "n0001", true),
            ("/n000[0-9]/", "xn0003y", true),
            ("!/\\.(gpu|htc)/", "n1.gpu.site", false),
            ("{n00[20-39]}", "n0025", true),
            ("{n00[20-39]}", "n0040", false),
            ("!{n03,n05,n0[7-9]}", "n05", false),
            ("!{n03,n05,n0[7-9]}", "n06", true),
            ("{n[000-010]}", "n002", true),
            ("{n[000-010]}", "n2", false),
            ("n0[1-3]", "n02", true),
        ];
        for (mask, host, want) in cases {
            assert_eq!(host_matches(mask, host), Ok(want), "{mask} {host}");
        }
    }

    #[test]
    fn lines_settings_and_comments_are_read_as_nhc_reads_them() {
        let text = "# comment\n   # indented\n\
            * || export MARK_OFFLINE=0\n\
            * || TIMEOUT=15\n\
            n1 || check_fs_mount_rw -f /\n\
            other || check_fs_mount_rw -f /other\n\
            * || check_file_test -r -s \\\n   /etc/passwd   # trailing comment\n\
            * || check_hw_physmem 1k 1TB\n";
        let c = parse(text, "n1").unwrap();
        assert!(c.observe_only);
        assert_eq!(c.timeout_secs, Some(15));
        let got: Vec<(usize, &str, Vec<&str>)> = c
            .lines
            .iter()
            .map(|l| {
                (
                    l.number,
                    l.check.as_str(),
                    l.args.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (5, "check_fs_mount_rw", vec!["-f", "/"]),
                (7, "check_file_test", vec!["-r", "-s", "/etc/passwd"]),
                (9, "check_hw_physmem", vec!["1k", "1TB"]),
            ]
        );
    }

    #[test]
    fn a_line_that_cannot_be_honoured_is_an_error_naming_it() {
        let e = parse("* || check_moab_sched\n", "n1").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(
            e.message
                .contains("'check_moab_sched' is not a check health_check runs")
        );
        assert!(e.message.contains("check_fs_mount"), "{}", e.message);
        let e = parse("\n* || check_fs_mount -f / ; reboot\n", "n1").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message.contains("shell beyond one check"),
            "{}",
            e.message
        );
        let e = parse("* || export FOO=1\n", "n1").unwrap_err();
        assert!(e.message.contains("FOO: not a setting"), "{}", e.message);
        let e = parse("* || check_ps_daemon $(id -u)\n", "n1").unwrap_err();
        assert!(e.message.contains("command substitution"), "{}", e.message);
        // An unknown check on a line for another host is still an error: the file is wrong.
        assert!(parse("other || check_nope\n", "n1").is_err());
    }

    /// Commands run only from a file only root may change.
    #[test]
    fn commands_run_only_from_a_file_nobody_else_can_write() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nhc.conf");
        std::fs::write(&path, "* || check_cmd_status true\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Conf::load(&path, "n1").unwrap_err();
        assert!(
            e.message
                .contains("must be owned by root and writable by nobody else"),
            "{}",
            e.message
        );
        // Without commands, the same file is read.
        std::fs::write(&path, "* || check_fs_mount_rw -f /\n").unwrap();
        assert!(Conf::load(&path, "n1").is_ok());
    }

    #[test]
    fn words_keep_quotes_together() {
        assert_eq!(
            words(r#"check_fs_mount -s '/(none|devpts)/' -o "a b" x\ y $((2*HW_CORES))"#).unwrap(),
            [
                "check_fs_mount",
                "-s",
                "/(none|devpts)/",
                "-o",
                "a b",
                "x y",
                "$((2*HW_CORES))"
            ]
        );
    }
}
