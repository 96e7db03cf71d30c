//! Bash's brace expansion, the first expansion of an unquoted word: `/{scratch,home}` is two
//! words, `n{01..03}` three. Only unquoted braces count; quoted text and `$` expansions pass
//! through whole. The number of words it may make is bounded.

use super::words::{Piece, Word};

/// The most words one word may expand to.
pub const WORDS_LIMIT: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Byte(u8),
    Other(Piece),
}

/// The words `word` expands to, in bash's order.
pub fn expand(word: &Word) -> Result<Vec<Word>, String> {
    let items: Vec<Item> = word
        .iter()
        .flat_map(|p| match p {
            Piece::Text {
                bytes,
                quoted: false,
            } => bytes.iter().map(|b| Item::Byte(*b)).collect(),
            other => vec![Item::Other(other.clone())],
        })
        .collect();
    let mut count = 0;
    let out = expand_items(&items, &mut count)?;
    Ok(out.into_iter().map(|items| to_word(&items)).collect())
}

fn to_word(items: &[Item]) -> Word {
    let mut word: Word = Vec::new();
    for item in items {
        match item {
            Item::Byte(b) => {
                if let Some(Piece::Text {
                    bytes,
                    quoted: false,
                }) = word.last_mut()
                {
                    bytes.push(*b);
                } else {
                    word.push(Piece::Text {
                        bytes: vec![*b],
                        quoted: false,
                    });
                }
            }
            Item::Other(p) => word.push(p.clone()),
        }
    }
    word
}

fn expand_items(items: &[Item], count: &mut usize) -> Result<Vec<Vec<Item>>, String> {
    let Some((open, close, alternatives)) = first_expression(items) else {
        return Ok(vec![items.to_vec()]);
    };
    let prefix = &items[..open];
    let mut alts = Vec::new();
    for alt in alternatives {
        alts.extend(expand_items(&alt, count)?);
    }
    let post = expand_items(&items[close + 1..], count)?;
    let mut out = Vec::new();
    for a in &alts {
        for p in &post {
            *count += 1;
            if *count > WORDS_LIMIT {
                return Err(format!(
                    "brace expansion makes more than {WORDS_LIMIT} words"
                ));
            }
            let mut w = prefix.to_vec();
            w.extend(a.iter().cloned());
            w.extend(p.iter().cloned());
            out.push(w);
        }
    }
    Ok(out)
}

/// The first `{...}` that bash expands: its bounds and its alternatives.
fn first_expression(items: &[Item]) -> Option<(usize, usize, Vec<Vec<Item>>)> {
    for (open, item) in items.iter().enumerate() {
        if *item != Item::Byte(b'{') {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        for (at, item) in items.iter().enumerate().skip(open + 1) {
            match item {
                Item::Byte(b'{') => depth += 1,
                Item::Byte(b'}') if depth > 0 => depth -= 1,
                Item::Byte(b'}') => {
                    let inner = &items[open + 1..at];
                    if !commas.is_empty() {
                        let mut alts = Vec::new();
                        let mut from = open + 1;
                        for c in commas.iter().copied().chain([at]) {
                            alts.push(items[from..c].to_vec());
                            from = c + 1;
                        }
                        return Some((open, at, alts));
                    }
                    if let Some(seq) = sequence(inner) {
                        return Some((open, at, seq));
                    }
                    break;
                }
                Item::Byte(b',') if depth == 0 => commas.push(at),
                _ => {}
            }
        }
    }
    None
}

/// `x..y` or `x..y..step` of integers (zero-padded when either bound is) or single letters.
fn sequence(inner: &[Item]) -> Option<Vec<Vec<Item>>> {
    let bytes: Vec<u8> = inner
        .iter()
        .map(|i| match i {
            Item::Byte(b) => Some(*b),
            Item::Other(_) => None,
        })
        .collect::<Option<_>>()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let parts: Vec<&str> = text.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [a, b] => (*a, *b, None),
        [a, b, s] => (*a, *b, Some(s.parse::<i64>().ok()?)),
        _ => return None,
    };
    let step = step.map(i64::unsigned_abs).filter(|s| *s > 0).unwrap_or(1);
    let words: Vec<String> = if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let padded = |s: &str| {
            s.trim_start_matches('-').starts_with('0') && s.trim_start_matches('-').len() > 1
        };
        let width = if padded(from) || padded(to) {
            from.len().max(to.len())
        } else {
            0
        };
        let span = a.abs_diff(b) / step + 1;
        if span > WORDS_LIMIT as u64 {
            // More words than allowed: as many empty ones as trip the count in expand_items.
            return Some(vec![Vec::new(); WORDS_LIMIT + 1]);
        }
        (0..span)
            .map(|k| {
                let v = if a <= b {
                    a + (k * step) as i64
                } else {
                    a - (k * step) as i64
                };
                if width > 0 {
                    let digits =
                        format!("{:0w$}", v.unsigned_abs(), w = width - usize::from(v < 0));
                    if v < 0 { format!("-{digits}") } else { digits }
                } else {
                    v.to_string()
                }
            })
            .collect()
    } else if from.len() == 1
        && to.len() == 1
        && from.as_bytes()[0].is_ascii_alphabetic()
        && to.as_bytes()[0].is_ascii_alphabetic()
    {
        let (a, b) = (from.as_bytes()[0], to.as_bytes()[0]);
        let step = step.min(255) as usize;
        if a <= b {
            (a..=b)
                .step_by(step)
                .map(|c| (c as char).to_string())
                .collect()
        } else {
            (b..=a)
                .rev()
                .step_by(step)
                .map(|c| (c as char).to_string())
                .collect()
        }
    } else {
        return None;
    };
    Some(
        words
            .into_iter()
            .map(|w| w.bytes().map(Item::Byte).collect())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &[u8]) -> Vec<String> {
        let c = super::super::words::parse(text).unwrap();
        c.args
            .iter()
            .flat_map(|w| expand(w).unwrap())
            .map(|w| {
                w.iter()
                    .map(|p| match p {
                        Piece::Text { bytes, .. } => String::from_utf8_lossy(bytes).into_owned(),
                        _ => "$".into(),
                    })
                    .collect()
            })
            .collect()
    }

    /// What bash 5.2 makes of each (run by hand).
    #[test]
    fn braces_expand_as_bashs() {
        assert_eq!(words(b"x {a,b}c"), ["ac", "bc"]);
        assert_eq!(words(b"x \"{a,b}\""), ["{a,b}"]);
        assert_eq!(words(b"x {1..3}"), ["1", "2", "3"]);
        assert_eq!(words(b"x a{,b}"), ["a", "ab"]);
        assert_eq!(words(b"x {a}"), ["{a}"]);
        assert_eq!(words(b"x a{b,c}d{e,f}"), ["abde", "abdf", "acde", "acdf"]);
        assert_eq!(words(b"x {01..03}"), ["01", "02", "03"]);
        assert_eq!(words(b"x {3..1}"), ["3", "2", "1"]);
        assert_eq!(words(b"x {1..7..3}"), ["1", "4", "7"]);
        assert_eq!(words(b"x {c..a}"), ["c", "b", "a"]);
        assert_eq!(words(b"x {a,{b,c}}"), ["a", "b", "c"]);
        assert_eq!(words(b"x {}"), ["{}"]);
        assert_eq!(words(b"x {n[01-10]}"), ["{n[01-10]}"]);
    }

    #[test]
    fn a_runaway_expansion_is_refused() {
        let c = super::super::words::parse(b"x {1..100000000}").unwrap();
        assert!(expand(&c.args[0]).is_err());
        let c = super::super::words::parse(
            b"x {a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}",
        )
        .unwrap();
        assert!(expand(&c.args[0]).is_err());
    }
}
