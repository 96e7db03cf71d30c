//! Sizes and counts as NHC writes and prints them: sizes in kB with base-1024 suffixes
//! (`32gb`, `1k`, `3%` is a share), inode counts with base-1000 suffixes.

/// A limit: a share of the whole (`3%`) or an amount.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// Percent of the whole.
    Percent(u64),
    /// kB (sizes) or a count (inodes).
    Amount(u64),
}

/// A size in kB: an integer with an optional `k`/`m`/`g`/`t`/`p`/`e` (any case, base 1024) and
/// an optional trailing `b`; no suffix means kB. `None` for anything else (NHC takes integers
/// only: `1.5g` is no size).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t
        .strip_suffix('b')
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, unit) = split_unit(t);
    let power = match unit.to_ascii_lowercase().as_str() {
        "" | "k" => 0,
        "m" => 1,
        "g" => 2,
        "t" => 3,
        "p" => 4,
        "e" => 5,
        _ => return None,
    };
    digits
        .parse::<u64>()
        .ok()?
        .checked_mul(1024u64.checked_pow(power)?)
}

/// An inode count: an integer with an optional `k`/`M`/`G`/`T`/`P`/`E` (any case, base 1000).
pub fn parse_count(text: &str) -> Option<u64> {
    let (digits, unit) = split_unit(text.trim());
    let power = match unit.to_ascii_lowercase().as_str() {
        "" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        "e" => 6,
        _ => return None,
    };
    digits
        .parse::<u64>()
        .ok()?
        .checked_mul(1000u64.checked_pow(power)?)
}

fn split_unit(t: &str) -> (&str, &str) {
    let at = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    t.split_at(at)
}

/// A limit as NHC reads it: `N%`, else a size (`sizes`) or a count.
pub fn parse_limit(text: &str, sizes: bool) -> Option<Limit> {
    if let Some(p) = text.trim().strip_suffix('%') {
        return p.parse().ok().map(Limit::Percent);
    }
    if sizes {
        parse_size(text)
    } else {
        parse_count(text)
    }
    .map(Limit::Amount)
}

/// A size in kB for people, as NHC prints it: divided by 1024 while the remainder is within a
/// tenth of a unit of a whole one (1572864 kB is `1536MB`, not `2GB`), then rounded
/// (`78298MB`, `15108752kB`).
pub fn show_size(kb: u64) -> String {
    show(kb, 1024, &["kB", "MB", "GB", "TB", "PB", "EB"])
}

/// A count for people (`1G` inodes), the same way in steps of 1000.
pub fn show_count(n: u64) -> String {
    show(n, 1000, &["", "k", "M", "G", "T", "P", "E"])
}

fn show(value: u64, base: u64, units: &[&str]) -> String {
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

    #[test]
    fn sizes_are_kb_with_base_1024_suffixes_and_integers_only() {
        assert_eq!(parse_size("32gb"), Some(33_554_432));
        assert_eq!(parse_size("1k"), Some(1));
        assert_eq!(parse_size("1"), Some(1));
        assert_eq!(parse_size("1tb"), Some(1_073_741_824));
        assert_eq!(parse_size("1MB"), Some(1024));
        assert_eq!(parse_size("1.5g"), None);
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_count("1k"), Some(1000));
        assert_eq!(parse_limit("3%", true), Some(Limit::Percent(3)));
        assert_eq!(parse_limit("1k", false), Some(Limit::Amount(1000)));
    }

    #[test]
    fn sizes_are_shown_in_the_largest_unit_that_loses_a_tenth_at_most() {
        assert_eq!(show_size(15_108_752), "15108752kB");
        assert_eq!(show_size(80_177_152), "78298MB");
        assert_eq!(show_size(1_572_864), "1536MB");
        assert_eq!(show_size(1000), "1000kB");
        assert_eq!(show_count(1_000_000_000), "1G");
    }
}
