//! Unit parsing and formatting shared by the CLI and the report: durations typed by people
//! (`30`, `2.5s`, `500ms`, `1m`), byte sizes as lscpu prints them (`64 KiB`), and rounding for the
//! JSON figures.

use std::time::Duration;

/// A duration typed by a person that makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a number with a known unit.
    #[error("'{0}' is not a duration (try '30', '2.5s' or '500ms')")]
    NotADuration(String),
    /// Zero or negative.
    #[error("'{0}' must be a positive duration")]
    NotPositive(String),
    /// More than a day: almost surely a typo.
    #[error("'{0}' is longer than a day")]
    TooLong(String),
}

/// Parses a duration: a plain number means seconds; `ms`, `s`, `m` and `h` suffixes are accepted.
/// Zero and negative values are rejected, as are values above one day (almost surely a typo).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| DurationError::NotADuration(text.into()))?;
    let seconds = value * scale;
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(DurationError::NotPositive(text.into()));
    }
    if seconds > 86_400.0 {
        return Err(DurationError::TooLong(text.into()));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Formats a byte count the way lscpu does in its cache summary: binary units, a space, and at
/// most one decimal that is dropped when it is zero (`64 KiB`, `1.5 MiB`, `768 MiB`).
pub fn format_binary_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{} {}", rounded as u64, UNITS[unit])
    } else {
        format!("{rounded:.1} {}", UNITS[unit])
    }
}

/// Rounds to `digits` decimal places; non-finite values pass through (serialised as null).
pub fn round_to(value: f64, digits: i32) -> f64 {
    if !value.is_finite() {
        return value;
    }
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

/// A figure with as many decimals as its size deserves.
pub fn number(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// At most `width` characters of `text`, the last one `~` when it was cut.
pub fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
        s.push('~');
        s
    }
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM UTC`.
pub fn utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_read_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_796_027_264), "2026-11-30 08:27 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn durations_accept_plain_seconds_and_suffixes() {
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration(" 1m ").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
    }

    #[test]
    fn durations_reject_nonsense() {
        for bad in ["", "0", "-1", "abc", "1x", "nan", "inf", "2d", "100000"] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn binary_sizes_match_lscpu() {
        assert_eq!(format_binary_size(64 * 1024), "64 KiB");
        assert_eq!(format_binary_size(2 * 1024 * 1024), "2 MiB");
        assert_eq!(format_binary_size(1536 * 1024), "1.5 MiB");
        assert_eq!(format_binary_size(768 * 1024 * 1024), "768 MiB");
        assert_eq!(format_binary_size(512), "512 B");
    }

    #[test]
    fn rounding_keeps_non_finite_values() {
        assert_eq!(round_to(1.23456, 2), 1.23);
        assert!(round_to(f64::NAN, 2).is_nan());
    }
}
