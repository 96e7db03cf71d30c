//! NHC's match strings (`mcheck`), for host masks and for checks' arguments, on bytes: a leading
//! `!` negates; `/re/` is an unanchored POSIX extended regular expression; `{n00[20-39],n05}` a
//! pdsh-style list; anything else a shell pattern of the whole text. Decided as NHC 1.4.3's bash
//! decides, quirks included: a regular expression that does not compile matches nothing, negated
//! or not; a list item that is neither a name ending in digits nor `prefix[lo-hi]suffix` makes the
//! whole list match nothing. Such a pattern is also noted ([`take_problems`]) so the operator
//! hears of it.

use super::bytes::show;
use super::posix::{Ere, glob_match};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// A pattern compiled, or why it is no regular expression.
type Compiled = Rc<Result<Ere, String>>;

thread_local! {
    /// Compiled regular expressions by pattern: a file of many process checks compiles each once.
    static COMPILED: RefCell<HashMap<Vec<u8>, Compiled>> = RefCell::new(HashMap::new());
    /// What was wrong with patterns matched since the last [`take_problems`].
    static PROBLEMS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The most compiled expressions kept (a generated file cannot grow the cache without end).
const CACHE_LIMIT: usize = 1024;

fn note(problem: String) {
    PROBLEMS.with(|p| {
        let mut p = p.borrow_mut();
        if !p.contains(&problem) {
            p.push(problem);
        }
    });
}

/// What was wrong with the patterns matched on this thread since the last call.
pub fn take_problems() -> Vec<String> {
    PROBLEMS.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

/// `text` as `ps` and `df` print it in the C locale NHC runs them in: every byte that is no
/// printable ASCII as `?` (`hcd?sleep`, `t?ab`). A file written for NHC names processes, users
/// and mount points so.
pub fn as_printed(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if text.iter().all(|b| (0x20..0x7f).contains(b)) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.iter()
        .map(|&b| if (0x20..0x7f).contains(&b) { b } else { b'?' })
        .collect()
}

/// [`mcheck`] of a field health_check reads as bytes (a process's command, its user) that NHC
/// sees as `ps` prints it ([`as_printed`]): a match string written either way matches; a
/// negated one must miss both.
pub fn mcheck_printed(pattern: &[u8], text: &[u8]) -> bool {
    let printed = as_printed(text);
    if *printed == *text {
        return mcheck(pattern, text);
    }
    if pattern.starts_with(b"!") {
        mcheck(pattern, text) && mcheck(pattern, &printed)
    } else {
        mcheck(pattern, text) || mcheck(pattern, &printed)
    }
}

/// Whether `text` (read as bytes) is `name`, spelled as it is or as `ps` prints it.
pub fn same_printed(text: &[u8], name: &[u8]) -> bool {
    text == name || *as_printed(text) == *name
}

/// Whether `text` matches `pattern` as NHC's `mcheck` decides.
pub fn mcheck(pattern: &[u8], text: &[u8]) -> bool {
    let (negated, pattern) = match pattern.strip_prefix(b"!") {
        Some(p) => (true, p),
        None => (false, pattern),
    };
    if pattern.len() >= 2 && pattern.starts_with(b"/") && pattern.ends_with(b"/") {
        // NHC returns 2 for a regular expression that does not compile; negated, 3: both fail.
        return match regex_match(&pattern[1..pattern.len() - 1], text) {
            Some(hit) => hit != negated,
            None => false,
        };
    }
    if pattern.len() >= 2 && pattern.starts_with(b"{") && pattern.ends_with(b"}") {
        return in_list(&pattern[1..pattern.len() - 1], text) != negated;
    }
    if super::extglob::is_extended(pattern) {
        if let Err(why) = super::extglob::matches(pattern, b"") {
            note(format!(
                "'{}' is no pattern health_check matches ({why}): it matches nothing",
                show(pattern)
            ));
            return false;
        }
    }
    glob_match(pattern, text) != negated
}

/// `Some(hit)`, or `None` (and a problem noted) where `re` is no regular expression.
fn regex_match(re: &[u8], text: &[u8]) -> Option<bool> {
    let compiled = COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(r) = c.get(re) {
            return Rc::clone(r);
        }
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        let r = Rc::new(Ere::new(re));
        c.insert(re.to_vec(), Rc::clone(&r));
        r
    });
    match &*compiled {
        Ok(ere) => Some(ere.is_match(text)),
        Err(why) => {
            note(format!(
                "'/{}/' is no regular expression NHC can use ({why}): it matches nothing",
                show(re)
            ));
            None
        }
    }
}

/// Whether `text` is in the pdsh-style list (the braces removed), item by item as NHC reads
/// them; the first item in neither form ends the search with no match.
fn in_list(list: &[u8], text: &[u8]) -> bool {
    for item in list.split(|b| *b == b',') {
        match range_item(item) {
            Some(Item::Name) => {
                if text == item {
                    return true;
                }
            }
            Some(Item::Range {
                prefix,
                lo,
                hi,
                suffix,
            }) => {
                if in_range(text, prefix, lo, hi, suffix) {
                    return true;
                }
            }
            None => {
                note(format!(
                    "'{}' in '{{{}}}' is neither a node name ending in digits nor \
                     prefix[lo-hi]suffix: NHC matches nothing with this list",
                    show(item),
                    show(list)
                ));
                return false;
            }
        }
    }
    false
}

enum Item<'a> {
    Name,
    Range {
        prefix: &'a [u8],
        lo: &'a [u8],
        hi: &'a [u8],
        suffix: &'a [u8],
    },
}

fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn tail_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'.'
}

/// An item as NHC's two expressions read it: a name (letters, digits, `-`, `_`, then at least
/// one digit, then letters, digits, `-`, `.`), or `prefix[lo-hi]suffix`.
fn range_item(item: &[u8]) -> Option<Item<'_>> {
    if let Some(open) = item.iter().position(|b| *b == b'[') {
        let prefix = &item[..open];
        let rest = &item[open + 1..];
        let close = rest.iter().position(|b| *b == b']')?;
        let (range, suffix) = (&rest[..close], &rest[close + 1..]);
        let dash = range.iter().position(|b| *b == b'-')?;
        let (lo, hi) = (&range[..dash], &range[dash + 1..]);
        let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
        return (!prefix.is_empty()
            && prefix.iter().all(|b| name_byte(*b))
            && digits(lo)
            && digits(hi)
            && suffix.iter().all(|b| tail_byte(*b)))
        .then_some(Item::Range {
            prefix,
            lo,
            hi,
            suffix,
        });
    }
    // `[-a-zA-Z0-9_]+[0-9]+[-.a-zA-Z0-9]*`: some digit after the first byte, with only name
    // bytes before it and tail bytes after.
    let ok = (1..item.len()).any(|d| {
        item[d].is_ascii_digit()
            && item[..d].iter().all(|b| name_byte(*b))
            && item[d..].iter().all(|b| tail_byte(*b))
    });
    ok.then_some(Item::Name)
}

/// NHC's range test: the prefix and suffix around the number, the number within the bounds
/// (either order) and exactly as wide as the wider bound.
fn in_range(text: &[u8], prefix: &[u8], lo: &[u8], hi: &[u8], suffix: &[u8]) -> bool {
    let Some(node) = text
        .strip_prefix(prefix)
        .and_then(|t| t.strip_suffix(suffix))
    else {
        return false;
    };
    let width = lo.len().max(hi.len());
    // Base 10, wrapping as bash's 10#N; a node that is no number does not match.
    let value = |d: &[u8]| -> Option<i64> {
        (!d.is_empty() && d.iter().all(u8::is_ascii_digit)).then(|| {
            d.iter().fold(0i64, |v, b| {
                v.wrapping_mul(10).wrapping_add(i64::from(b - b'0'))
            })
        })
    };
    let (Some(a), Some(b), Some(n)) = (value(lo), value(hi), value(node)) else {
        return false;
    };
    node.len() == width && a.min(b) <= n && n <= a.max(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host masks of NHC's README and its own test suite's `mcheck` rows.
    #[test]
    fn masks_match_as_nhc_matches_them() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "n0001", true),
            ("!ln*", "ln01", false),
            ("!ln*", "n0001", true),
            ("/n000[0-9]/", "xn0003y", true),
            ("!/.(gpu|htc)/", "n1.gpu.site", false),
            ("{n00[20-39]}", "n0025", true),
            ("{n00[20-39]}", "n0040", false),
            ("!{n03,n05,n0[7-9]}", "n05", false),
            ("!{n03,n05,n0[7-9]}", "n06", true),
            ("{n[000-010]}", "n002", true),
            ("{n[000-010]}", "n2", false),
            ("n0[1-3]", "n02", true),
            ("{n[00-10]00.cluster}", "n0200.cluster", true),
            ("{fx-r0-n[0-42]}", "fx-r0-n42", true),
            ("{fx-r0-n[0-42]}", "fx-r0-n5", false),
            // An item in neither form makes the whole list match nothing.
            ("{login,n01}", "n01", false),
            ("!{login,n01}", "n01", true),
            // A regular expression that does not compile matches nothing, negated or not.
            ("/(/", "x", false),
            ("!/(/", "x", false),
            ("/x/", "a\u{e9}x", true),
        ];
        for (mask, host, want) in cases {
            assert_eq!(
                mcheck(mask.as_bytes(), host.as_bytes()),
                *want,
                "{mask} {host}"
            );
        }
        assert!(mcheck(b"/caf\xe9/", b"un caf\xe9"));
        assert!(mcheck(b"*\xff*", b"ab\xffc"));
        let problems = take_problems();
        assert!(problems.iter().any(|p| p.contains("'/(/'")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("'login'")),
            "{problems:?}"
        );
        assert!(take_problems().is_empty());
    }
}
