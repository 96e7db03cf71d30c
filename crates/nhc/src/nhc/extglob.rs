//! ksh's extended patterns (`+(a|b)`, `*(x)`, `?(x)`, `@(x|y)`) as bash's `[[ == ]]` matches
//! them, in time linear in the text. The C library's `fnmatch` recurses once per byte for
//! `*(a)` and backtracks without end on `+(a|aa)b`: a process argument of a thousand bytes, which
//! any local user can start, crashed or stalled the root check. Here the pattern becomes a
//! regular expression of the `regex` crate (bytes, anchored at both ends), which matches
//! without backtracking. `!(x)` (the complement) is taken as the whole pattern (`!(a|b)`);
//! inside a longer pattern it is refused: the C library takes time growing with a power of the
//! text's length for it (`*!(a)*!(b)c`), and a complement is no regular expression of the crate.

use regex::bytes::{Regex, RegexBuilder};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// A compiled pattern.
#[derive(Debug)]
pub struct Glob {
    re: Regex,
    /// `!(...)` as the whole pattern: the text matches when the inside does not.
    negated: bool,
}

impl Glob {
    /// Whether the whole `text` matches.
    pub fn is_match(&self, text: &[u8]) -> bool {
        self.re.is_match(text) != self.negated
    }
}

/// A pattern compiled, or why it is not taken.
type Compiled = Rc<Result<Glob, String>>;

thread_local! {
    /// Compiled patterns by text: a file of many process checks compiles each once.
    static COMPILED: RefCell<HashMap<Vec<u8>, Compiled>> = RefCell::new(HashMap::new());
}

/// The most compiled patterns kept.
const CACHE_LIMIT: usize = 1024;

/// Whether `text` matches the extended `pattern`, or why the pattern is not matched.
pub fn matches(pattern: &[u8], text: &[u8]) -> Result<bool, String> {
    let compiled = COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(g) = c.get(pattern) {
            return Rc::clone(g);
        }
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        let g = Rc::new(compile(pattern));
        c.insert(pattern.to_vec(), Rc::clone(&g));
        g
    });
    match &*compiled {
        Ok(g) => Ok(g.is_match(text)),
        Err(e) => Err(e.clone()),
    }
}

/// The largest compiled program accepted: a pattern is at most 4096 bytes, so only nesting
/// could grow it, and that is refused first.
const SIZE_LIMIT: usize = 1 << 20;

/// Whether `pattern` uses one of the extended operators (an operator byte before `(`, not
/// escaped).
pub fn is_extended(pattern: &[u8]) -> bool {
    let mut i = 0;
    while i + 1 < pattern.len() {
        match pattern[i] {
            b'\\' => i += 1,
            b'?' | b'*' | b'+' | b'@' | b'!' if pattern[i + 1] == b'(' => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether `pattern` uses `!(...)`, which [`compile`] does not take.
pub fn has_complement(pattern: &[u8]) -> bool {
    let mut i = 0;
    while i + 1 < pattern.len() {
        match pattern[i] {
            b'\\' => i += 1,
            b'!' if pattern[i + 1] == b'(' => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// The pattern compiled, or why it is not taken (`!(...)` inside a longer pattern, an
/// operator never closed).
pub fn compile(pattern: &[u8]) -> Result<Glob, String> {
    let whole_complement = pattern.starts_with(b"!(") && {
        // The complement's group must close at the pattern's end.
        let mut t = Translator::new(pattern);
        t.i = 0;
        t.group(b'@', 0).is_ok() && t.i == pattern.len()
    };
    let mut t = Translator::new(pattern);
    if whole_complement {
        t.group(b'@', 0)?;
    } else {
        t.sequence(0)?;
    }
    t.out.push_str(")\\z");
    let re = RegexBuilder::new(&t.out)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Glob {
        re,
        negated: whole_complement,
    })
}

struct Translator<'a> {
    p: &'a [u8],
    i: usize,
    out: String,
}

impl<'a> Translator<'a> {
    fn new(p: &'a [u8]) -> Translator<'a> {
        Translator {
            p,
            i: 0,
            out: String::from("(?s-u)\\A(?:"),
        }
    }

    fn byte(&mut self, b: u8) {
        self.out.push_str(&format!("\\x{b:02x}"));
    }

    /// Bytes up to the end, or (`depth` > 0) up to this group's `|` or `)`.
    fn sequence(&mut self, depth: usize) -> Result<(), String> {
        while let Some(&b) = self.p.get(self.i) {
            let next = self.p.get(self.i + 1).copied();
            match b {
                b'|' | b')' if depth > 0 => return Ok(()),
                b'\\' => {
                    // A trailing backslash matches itself.
                    self.byte(next.unwrap_or(b'\\'));
                    self.i += 2;
                }
                b'?' | b'*' | b'+' | b'@' | b'!' if next == Some(b'(') => {
                    if b == b'!' {
                        return Err("health_check takes !(...) only as the whole pattern (the \
                                    C library's matcher can take hours on it); a leading ! on \
                                    the whole match string negates it"
                            .into());
                    }
                    self.group(b, depth)?;
                }
                b'*' => {
                    self.out.push_str(".*");
                    self.i += 1;
                }
                b'?' => {
                    self.out.push('.');
                    self.i += 1;
                }
                b'[' => match bracket(self.p, self.i) {
                    Some((class, end)) => {
                        self.out.push_str(&class);
                        self.i = end;
                    }
                    None => {
                        self.byte(b'[');
                        self.i += 1;
                    }
                },
                _ => {
                    self.byte(b);
                    self.i += 1;
                }
            }
        }
        Ok(())
    }
}

impl Translator<'_> {
    /// The operator `op(...)` at `self.i`: its alternatives, then its repetition.
    fn group(&mut self, op: u8, depth: usize) -> Result<(), String> {
        self.i += 2;
        self.out.push_str("(?:");
        loop {
            self.sequence(depth + 1)?;
            match self.p.get(self.i) {
                Some(b'|') => {
                    self.out.push('|');
                    self.i += 1;
                }
                Some(b')') => {
                    self.i += 1;
                    break;
                }
                _ => return Err("an extended operator (such as +( ) is not closed".into()),
            }
        }
        self.out.push_str(match op {
            b'?' => ")?",
            b'*' => ")*",
            b'+' => ")+",
            _ => ")",
        });
        Ok(())
    }
}

/// The bracket expression at `p[start] == b'['` as a regex class, and where it ends; `None`
/// when it is not closed (the `[` is then an ordinary byte).
fn bracket(p: &[u8], start: usize) -> Option<(String, usize)> {
    let mut i = start + 1;
    let negated = matches!(p.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut items: Vec<String> = Vec::new();
    let mut first = true;
    loop {
        let b = *p.get(i)?;
        if b == b']' && !first {
            i += 1;
            break;
        }
        first = false;
        if b == b'[' && p.get(i + 1) == Some(&b':') {
            let close = p[i + 2..].windows(2).position(|w| w == b":]")?;
            let name = std::str::from_utf8(&p[i + 2..i + 2 + close]).ok()?;
            const CLASSES: &[&str] = &[
                "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
                "space", "upper", "xdigit",
            ];
            if !CLASSES.contains(&name) {
                // An unknown class matches nothing, as the C library's.
                items.push(String::new());
            } else {
                items.push(format!("[:{name}:]"));
            }
            i += close + 4;
            continue;
        }
        let (lo, after) = if b == b'\\' && i + 1 < p.len() {
            (p[i + 1], i + 2)
        } else {
            (b, i + 1)
        };
        if p.get(after) == Some(&b'-') && p.get(after + 1).is_some_and(|c| *c != b']') {
            let (hi, end) = if p[after + 1] == b'\\' && after + 2 < p.len() {
                (p[after + 2], after + 3)
            } else {
                (p[after + 1], after + 2)
            };
            // A range whose end comes before its start matches nothing.
            if lo <= hi {
                items.push(format!("\\x{lo:02x}-\\x{hi:02x}"));
            }
            i = end;
            continue;
        }
        items.push(format!("\\x{lo:02x}"));
        i = after;
    }
    let members: String = items.concat();
    let class = match (members.is_empty(), negated) {
        // No member: nothing matches; negated, any byte does.
        (true, false) => "[^\\x00-\\xff]".to_string(),
        (true, true) => "[\\x00-\\xff]".to_string(),
        (false, false) => format!("[{members}]"),
        (false, true) => format!("[^{members}]"),
    };
    Some((class, i))
}

#[cfg(test)]
mod tests;
