//! How much history a machine keeps (`--history-keep`): a number of runs, an age, or both
//! (`1000`, `90d`, `1000,90d`); a run is deleted when either says so.

use std::time::Duration;

/// Retention per machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// The newest runs kept.
    pub runs: Option<usize>,
    /// Runs younger than this kept.
    pub age: Option<Duration>,
}

impl Default for Keep {
    /// Ten thousand runs (a run every five minutes for a month, every hour for a year) and
    /// two years.
    fn default() -> Self {
        Keep {
            runs: Some(10_000),
            age: Some(Duration::from_secs(730 * 86_400)),
        }
    }
}

/// A `--history-keep` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not a retention: give a number of runs (1000), an age (90d, 12h, 4w) or both (1000,90d)"
)]
pub struct KeepError(pub String);

impl std::str::FromStr for Keep {
    type Err = KeepError;

    fn from_str(text: &str) -> Result<Keep, KeepError> {
        let bad = || KeepError(text.to_string());
        let mut keep = Keep {
            runs: None,
            age: None,
        };
        for part in text.split(',').map(str::trim) {
            if let Ok(n) = part.parse::<usize>() {
                if n == 0 || keep.runs.is_some() {
                    return Err(bad());
                }
                keep.runs = Some(n);
                continue;
            }
            // The unit is the last character, whatever its width (`9ü` is refused, not a panic).
            let split = part.char_indices().last().ok_or_else(bad)?.0;
            let (number, unit) = part.split_at(split);
            let n: u64 = number.parse().map_err(|_| bad())?;
            let secs = match unit {
                "h" => 3600,
                "d" => 86_400,
                "w" => 7 * 86_400,
                _ => return Err(bad()),
            };
            if n == 0 || keep.age.is_some() {
                return Err(bad());
            }
            keep.age = Some(Duration::from_secs(n.checked_mul(secs).ok_or_else(bad)?));
        }
        Ok(keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_ages_and_both_parse_and_nonsense_does_not() {
        let k: Keep = "1000".parse().unwrap();
        assert_eq!((k.runs, k.age), (Some(1000), None));
        let k: Keep = "90d".parse().unwrap();
        assert_eq!(k.age, Some(Duration::from_secs(90 * 86_400)));
        let k: Keep = "500, 12h".parse().unwrap();
        assert_eq!(
            (k.runs, k.age),
            (Some(500), Some(Duration::from_secs(43_200)))
        );
        for bad in [
            "", "0", "d", "10x", "1,2", "1d,2d", "-3", "0d", "９", "9ü", "１２", "ü", "12h,ü",
        ] {
            assert!(bad.parse::<Keep>().is_err(), "{bad}");
        }
    }
}
