//! Sizes, counts and numbers as NHC's bash reads them and prints them. A size is kB with
//! base-1024 suffixes (`32gb`, `1k`, `3%` is a share), an inode count has base-1000 suffixes.
//! NHC multiplies a suffixed value inside `$((...))` and compares with `[[ A -lt B ]]`, both
//! bash arithmetic: `010g` is octal, `0x10` hexadecimal, `1+1m` is 1025; a value that is no
//! expression makes a comparison false (bash says so and goes on), but inside `$((...))` bash
//! abandons the line: NHC's `eval` returns 1 ([`LineError::Abandons`]).

use super::bash::Vars;
use super::bash::arith::{self, ArithError};
use super::bytes::show;
use super::verdict::{LineError, Settings};

/// The variables, read only: NHC evaluates these in its own functions, and what an expression
/// assigns there does not reach the checks that follow.
struct ReadOnly<'a>(&'a Settings);

impl Vars for ReadOnly<'_> {
    fn get(&self, name: &[u8]) -> Option<Vec<u8>> {
        self.0.vars().get(name).cloned()
    }
    fn set(&mut self, _: &[u8], _: Vec<u8>) {}
}

/// `text` as bash arithmetic (`[[ X -lt TEXT ]]` evaluates it so).
pub fn number(text: &[u8], vars: &Settings) -> Result<i64, ArithError> {
    arith::eval(text, &mut ReadOnly(vars))
}

/// An operand NHC compares: the number, or the error that makes every comparison false.
pub type Operand = Result<i64, ArithError>;

/// `a < b` as `[[ a -lt b ]]`: false when an operand is no number.
pub fn lt(a: &Operand, b: &Operand) -> bool {
    matches!((a, b), (Ok(a), Ok(b)) if a < b)
}

/// A limit: a share of the whole (`3%`) or an amount.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    /// Percent of the whole (the text before the `%`).
    Percent(Held),
    /// kB (sizes) or a count (inodes).
    Amount(Held),
}

/// Suffixes and their powers: `k`..`e`.
fn power_of(suffix: u8) -> Option<u32> {
    match suffix.to_ascii_lowercase() {
        b'k' => Some(1),
        b'm' => Some(2),
        b'g' => Some(3),
        b't' => Some(4),
        b'p' => Some(5),
        b'e' => Some(6),
        _ => None,
    }
}

/// `rest * base^power` as NHC writes it: the text pasted into `$((rest*base*...))`.
fn multiplied(rest: &[u8], base: u64, power: u32, vars: &Settings) -> Result<i64, LineError> {
    let mut expr = rest.to_vec();
    for _ in 0..power {
        expr.extend_from_slice(format!("*{base}").as_bytes());
    }
    number(&expr, vars)
        .map_err(|e| LineError::Abandons(format!("{}: {e} (in NHC's size parsing)", show(&expr))))
}

/// A value as NHC holds it after parsing: the text it prints, and what comparing it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// The text (the number written without its `k`, or the product NHC computed).
    pub text: Vec<u8>,
    /// The number a comparison reads.
    pub value: Operand,
}

impl Held {
    fn of(text: &[u8], vars: &Settings) -> Held {
        Held {
            text: text.to_vec(),
            value: number(text, vars),
        }
    }

    fn computed(v: i64) -> Held {
        Held {
            text: v.to_string().into_bytes(),
            value: Ok(v),
        }
    }

    /// The text, for a message.
    pub fn shown(&self) -> String {
        show(&self.text)
    }
}

/// A size in kB as `nhc_common_parse_size` makes it: `None` for an empty text.
pub fn parse_size(text: &[u8], vars: &Settings) -> Result<Option<Held>, LineError> {
    if text.is_empty() {
        return Ok(None);
    }
    let t = text
        .strip_suffix(b"b")
        .or_else(|| text.strip_suffix(b"B"))
        .unwrap_or(text);
    let held = match t.split_last() {
        Some((s, rest)) if s.eq_ignore_ascii_case(&b'k') => Held::of(rest, vars),
        Some((s, rest)) if power_of(*s).is_some() => {
            let power = power_of(*s).unwrap_or(1) - 1;
            Held::computed(multiplied(rest, 1024, power, vars)?)
        }
        _ => Held::of(t, vars),
    };
    // `k` or `b` alone leaves nothing: NHC's `-n` tests then skip the limit, as for no text.
    Ok((!held.text.is_empty()).then_some(held))
}

/// A count as `nhc_common_parse_count` makes it (base 1000, no `b`).
pub fn parse_count(text: &[u8], vars: &Settings) -> Result<Option<Held>, LineError> {
    if text.is_empty() {
        return Ok(None);
    }
    Ok(Some(match text.split_last() {
        Some((s, rest)) if power_of(*s).is_some() => {
            Held::computed(multiplied(rest, 1000, power_of(*s).unwrap_or(1), vars)?)
        }
        _ => Held::of(text, vars),
    }))
}

/// A limit as NHC's space checks read it: a trailing `%` makes a share; else a size (`sizes`)
/// or a count. `None` for an empty text (NHC then checks nothing).
pub fn parse_limit(text: &[u8], sizes: bool, vars: &Settings) -> Result<Option<Limit>, LineError> {
    if let Some(p) = text.strip_suffix(b"%") {
        return Ok(Some(Limit::Percent(Held::of(p, vars))));
    }
    Ok(if sizes {
        parse_size(text, vars)?
    } else {
        parse_count(text, vars)?
    }
    .map(Limit::Amount))
}

/// A size in kB for people, as NHC prints it: divided by 1024 while the remainder is within a
/// tenth of a unit of a whole one (1572864 kB is `1536MB`, not `2GB`), then rounded
/// (`78298MB`, `15108752kB`).
pub fn show_size(kb: i64) -> String {
    show_scaled(kb, 1024, &["kB", "MB", "GB", "TB", "PB", "EB"])
}

/// A count for people (`1G` inodes), the same way in steps of 1000.
pub fn show_count(n: i64) -> String {
    show_scaled(n, 1000, &["", "k", "M", "G", "T", "P", "E"])
}

/// A limit as NHC's `nhc_common_unparse_size` (`sizes`) or `_count` prints it back: scaled down
/// as [`show_size`] and [`show_count`] do; but where not one step down is taken (below one
/// unit, negative, or a first step that would cut more than a tenth) NHC keeps the text as it
/// holds it (`010`, `-1048576`) and appends the first unit (`kB`, nothing).
pub fn show_held(h: &Held, sizes: bool) -> String {
    let (base, first) = if sizes { (1024, "kB") } else { (1000, "") };
    match h.value {
        Ok(v)
            if v >= base && {
                let pct = v % base * 100 / base;
                pct.min(100 - pct) <= 10
            } =>
        {
            if sizes {
                show_size(v)
            } else {
                show_count(v)
            }
        }
        _ => format!("{}{first}", h.shown()),
    }
}

fn show_scaled(value: i64, base: i64, units: &[&str]) -> String {
    if value < 0 {
        return value.to_string();
    }
    let (mut v, mut rest, mut unit) = (value, 0, 0);
    while v >= base && unit + 1 < units.len() {
        let pct = v % base * 100 / base;
        if pct.min(100 - pct) > 10 {
            break;
        }
        rest = v % base;
        v /= base;
        unit += 1;
    }
    if rest >= base / 2 {
        v += 1;
    }
    format!("{v}{}", units[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(t: &str) -> Option<i64> {
        parse_size(t.as_bytes(), &Settings::default())
            .ok()??
            .value
            .ok()
    }

    #[test]
    fn sizes_are_kb_with_base_1024_suffixes_read_as_bash_arithmetic() {
        assert_eq!(size("32gb"), Some(33_554_432));
        assert_eq!(size("1k"), Some(1));
        assert_eq!(size("1"), Some(1));
        assert_eq!(size("1tb"), Some(1_073_741_824));
        assert_eq!(size("1MB"), Some(1024));
        assert_eq!(size("010g"), Some(8 << 20), "octal, as bash");
        assert_eq!(size("0x10m"), Some(16 << 10));
        assert_eq!(size("k"), None, "nothing left: no limit");
        assert_eq!(size("B"), None);
        assert_eq!(size("1+1m"), Some(1025), "pasted into $((...))");
        assert_eq!(size("x"), Some(0), "a name: an unset variable is 0 to bash");
        assert!(matches!(
            parse_size(b"1.5g", &Settings::default()),
            Err(LineError::Abandons(_))
        ));
        // Without a multiplying suffix bash compares the text itself: no number, no comparison.
        let held = parse_size(b"1.5", &Settings::default()).unwrap().unwrap();
        assert!(held.value.is_err());
        let held = parse_size(b"100kB", &Settings::default()).unwrap().unwrap();
        assert_eq!((held.shown(), held.value), ("100".to_string(), Ok(100)));
        assert_eq!(
            parse_count(b"1k", &Settings::default())
                .unwrap()
                .unwrap()
                .value,
            Ok(1000)
        );
        assert!(matches!(
            parse_limit(b"3%", true, &Settings::default()),
            Ok(Some(Limit::Percent(Held { value: Ok(3), .. })))
        ));
        assert_eq!(parse_limit(b"", true, &Settings::default()), Ok(None));
    }

    #[test]
    fn sizes_are_shown_in_the_largest_unit_that_loses_a_tenth_at_most() {
        assert_eq!(show_size(15_108_752), "15108752kB");
        assert_eq!(show_size(80_177_152), "78298MB");
        assert_eq!(show_size(1_572_864), "1536MB");
        assert_eq!(show_size(1000), "1000kB");
        assert_eq!(show_count(1_000_000_000), "1G");
        // Not one step down: the text as held, with the first unit (NHC 1.4.3 by hand).
        let held = |t: &str| {
            parse_size(t.as_bytes(), &Settings::default())
                .unwrap()
                .unwrap()
        };
        assert_eq!(show_held(&held("-1g"), true), "-1048576kB");
        assert_eq!(show_held(&held("010"), true), "010kB");
        assert_eq!(show_held(&held("2g"), true), "2GB");
        let count = |t: &str| {
            parse_count(t.as_bytes(), &Settings::default())
                .unwrap()
                .unwrap()
        };
        assert_eq!(show_held(&count("010"), false), "010");
        assert_eq!(show_held(&count("1500"), false), "1500");
        assert_eq!(show_held(&count("2k"), false), "2k");
    }
}
