//! What the settings read besides the flags: nhc.conf, the history's path, the documents to
//! read and a baseline, `--since`, NHC's NAME=VALUE settings.

use super::{HISTORY_ENV, HistoryConfig};
use crate::cli::{CommonArgs, ReaderArgs};
use crate::error::ConfigError;
use crate::judge::baseline;
use crate::judge::baseline::BaselineRef;
use crate::judge::fleet::ReaderConfig;
use crate::judge::rules::Rules;
use std::path::{Path, PathBuf};

/// `--nhc-conf FILE` read for this host; without it, `default` (slurm's /etc/nhc/nhc.conf) when
/// it exists. A given file that cannot be honoured is a configuration error; the default one is
/// not (a site's NHC file may hold checks this does not run, and slurmd must not lose every
/// other check for it): it comes back as the reason it was not read. An empty value reads none.
pub(super) fn nhc_config(
    given: Option<&Path>,
    default: Option<&Path>,
) -> Result<(Option<crate::nhc::Conf>, Option<String>), ConfigError> {
    let host = crate::nhc::host_name();
    let deadline = crate::nhc::conf::READ_DEADLINE;
    match given {
        Some(p) if p.as_os_str().is_empty() => Ok((None, None)),
        Some(p) => crate::nhc::Conf::load(p, &host, deadline)
            .map(|c| (Some(c), None))
            .map_err(|e| ConfigError::new("--nhc-conf", e.to_string())),
        None => match default.filter(|p| p.exists()) {
            None => Ok((None, None)),
            Some(p) => Ok(match crate::nhc::Conf::load(p, &host, deadline) {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e.to_string())),
            }),
        },
    }
}

/// `--history FILE`, else `$HEALTH_CHECK_HISTORY` (an empty value is none).
pub(super) fn history_config(common: &CommonArgs) -> Result<Option<HistoryConfig>, ConfigError> {
    let keep: crate::history::Keep =
        common
            .history_keep
            .parse()
            .map_err(|e: crate::history::KeepError| {
                ConfigError::new("--history-keep", e.to_string())
            })?;
    let path = common.history.clone().or_else(|| {
        std::env::var_os(HISTORY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    Ok(path.map(|path| HistoryConfig {
        path,
        keep,
        window: usize::from(common.history_window),
        without_flagged: false,
    }))
}

/// `--since`: an age back from now (`7d`, `12h`, `4w`), a date (`2026-11-01`, UTC midnight) or
/// Unix seconds.
pub fn parse_since(text: &str) -> Result<u64, ConfigError> {
    let t = text.trim();
    let bad = || {
        ConfigError::new(
            "--since",
            format!(
                "'{text}' is not a time: give an age (7d, 12h, 4w), a date (2026-11-01) or Unix seconds"
            ),
        )
    };
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    if let Some((y, rest)) = t.split_once('-') {
        let (m, d) = rest.split_once('-').ok_or_else(bad)?;
        let (y, m, d): (i64, i64, i64) = (
            y.parse().map_err(|_| bad())?,
            m.parse().map_err(|_| bad())?,
            d.parse().map_err(|_| bad())?,
        );
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
            return Err(bad());
        }
        // Days since 1970-01-01 from a civil date (Howard Hinnant's algorithm).
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        return u64::try_from(days * 86_400).map_err(|_| bad());
    }
    let keep: crate::history::Keep = t.parse().map_err(|_| bad())?;
    let age = keep.age.filter(|_| keep.runs.is_none()).ok_or_else(bad)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(now.saturating_sub(age.as_secs()))
}

pub(super) fn reader_config(
    args: &ReaderArgs,
    common: &CommonArgs,
    print_rules: bool,
) -> Result<ReaderConfig, ConfigError> {
    let rules = match &args.rules {
        Some(path) => {
            Rules::from_file(path).map_err(|e| ConfigError::new("--rules", e.to_string()))?
        }
        None => Rules::builtin(),
    };
    Ok(ReaderConfig {
        paths: args.paths.clone(),
        rules,
        labels: args.label_from,
        print_rules,
        thresholds: crate::judge::checks::Thresholds::with_overrides(&common.threshold)
            .map_err(|m| ConfigError::new("--threshold", m.to_string()))?,
    })
}

pub(super) fn load_baseline(path: &std::path::Path) -> Result<BaselineRef, ConfigError> {
    let (baseline, rules) =
        baseline::read(path).map_err(|e| ConfigError::new("--baseline", e.message))?;
    Ok(BaselineRef {
        path: path.to_path_buf(),
        baseline,
        rules,
    })
}

/// NHC's command-line settings, `NAME=VALUE` each, as NHC's own command line takes them: a
/// shell variable name, then the value as written.
pub(super) fn nhc_settings(given: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
    given
        .iter()
        .map(|s| {
            let (name, value) = s.split_once('=').unwrap_or((s, ""));
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
                && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
            if !valid || !s.contains('=') {
                return Err(ConfigError::new(
                    "nhc",
                    format!(
                        "'{s}' is no setting: after the file come NAME=VALUE settings, as NHC's \
                         command line takes them (NHC_RM=slurm)"
                    ),
                ));
            }
            Ok((name.to_string(), value.to_string()))
        })
        .collect()
}
