//! Matching as bash matches for NHC: `/regex/` is bash's `[[ text =~ re ]]`, which is the C
//! library's POSIX extended regular expressions (regcomp/regexec); a glob is bash's
//! `[[ text == pattern ]]`, which is shell pattern matching with ksh's extended patterns
//! (`+(a|b)`), the C library's fnmatch with FNM_EXTMATCH. Using the same engine gives NHC's
//! verdicts on every pattern, bracket expressions and GNU escapes (`\b`, `\<`) included, and
//! matches bytes (this process keeps the C locale, as slurmd's NHC runs under).
//!
//! Patterns come from the operator's nhc.conf, texts from the machine (a user's process
//! arguments among them), so both are bounded: back-references (exponential in the C library)
//! are refused, a pattern's length, nesting and repetition counts are capped, and a text is
//! matched on its first [`TEXT_LIMIT`] bytes.

use std::ffi::CString;

/// The longest pattern accepted.
pub const PATTERN_LIMIT: usize = 4096;
/// The deepest nesting of parentheses accepted (the C library compiles recursively).
const DEPTH_LIMIT: usize = 64;
/// The largest product of repetition counts (`{m,n}`) in one regular expression: each count
/// copies what it repeats when compiled.
const REPEAT_LIMIT: u64 = 1 << 16;
/// How much of a text a regular expression is matched against: the C library's matcher can
/// take time growing with the square of the length (`(a|aa)*b`: 6 s on 64 KiB).
pub const TEXT_LIMIT: usize = 64 * 1024;
/// How much of a text a shell pattern is matched against: matching takes time linear in it
/// (a line of a file may be long: 70,000 bytes matched `*needle` in NHC's bash).
pub const GLOB_TEXT_LIMIT: usize = 16 << 20;

/// A text as a C string, cut at `limit`: bash strings hold no NUL byte (it drops them), so
/// neither does this.
fn c_text(text: &[u8], limit: usize) -> CString {
    let text = &text[..text.len().min(limit)];
    let kept: Vec<u8> = text.iter().copied().filter(|b| *b != 0).collect();
    CString::new(kept).unwrap_or_default()
}

/// Why a pattern is refused before it reaches the C library.
fn bounded(pattern: &[u8]) -> Result<(), String> {
    if pattern.len() > PATTERN_LIMIT {
        return Err(format!(
            "is longer than {PATTERN_LIMIT} bytes ({})",
            pattern.len()
        ));
    }
    if pattern.contains(&0) {
        return Err("holds a NUL byte".into());
    }
    Ok(())
}

/// A compiled POSIX extended regular expression.
pub struct Ere {
    re: Box<libc::regex_t>,
}

impl std::fmt::Debug for Ere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ere")
    }
}

impl Ere {
    /// Compiles `pattern` as bash's `=~` does, or says why it is no regular expression.
    pub fn new(pattern: &[u8]) -> Result<Ere, String> {
        bounded(pattern)?;
        ere_bounded(pattern)?;
        let c = CString::new(pattern).map_err(|_| "holds a NUL byte".to_string())?;
        let mut re: Box<std::mem::MaybeUninit<libc::regex_t>> = Box::new_uninit();
        // SAFETY: `re` points to writable memory the size of a regex_t; `c` is a valid C string.
        let rc = unsafe {
            libc::regcomp(
                re.as_mut_ptr(),
                c.as_ptr(),
                libc::REG_EXTENDED | libc::REG_NOSUB,
            )
        };
        if rc != 0 {
            let mut buf = [0u8; 256];
            // SAFETY: after a failed regcomp, regerror only reads the error code and the
            // compiled object's error state; `buf` is writable for its whole length.
            unsafe {
                libc::regerror(rc, re.as_ptr(), buf.as_mut_ptr().cast(), buf.len());
            }
            let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
            return Err(String::from_utf8_lossy(&buf[..end]).into_owned());
        }
        // SAFETY: regcomp returned 0, so it initialised the regex_t.
        let re = unsafe { re.assume_init() };
        Ok(Ere { re })
    }

    /// Whether `text` holds a match.
    pub fn is_match(&self, text: &[u8]) -> bool {
        let c = c_text(text, TEXT_LIMIT);
        // SAFETY: `self.re` was compiled by regcomp and not freed; REG_NOSUB asks for no
        // match positions, so a null array of zero entries is allowed.
        unsafe { libc::regexec(&*self.re, c.as_ptr(), 0, std::ptr::null_mut(), 0) == 0 }
    }
}

impl Drop for Ere {
    fn drop(&mut self) {
        // SAFETY: compiled by regcomp in `new`, freed once, here.
        unsafe { libc::regfree(&mut *self.re) }
    }
}

/// Refuses back-references, deep nesting and repetition counts whose product would blow up the
/// compiled form; everything else is the C library's to judge.
fn ere_bounded(pattern: &[u8]) -> Result<(), String> {
    let (mut depth, mut product, mut i) = (0usize, 1u64, 0usize);
    let mut in_bracket = false;
    while i < pattern.len() {
        let b = pattern[i];
        if in_bracket {
            // `]` right after `[` or `[^` is a member; `[:x:]` holds a `]` of its own.
            if b == b'[' && matches!(pattern.get(i + 1), Some(b':' | b'.' | b'=')) {
                let close = pattern[i + 2..]
                    .windows(2)
                    .position(|w| w[0] == pattern[i + 1] && w[1] == b']');
                i += close.map_or(1, |c| c + 4);
                continue;
            }
            if b == b']' {
                in_bracket = false;
            }
            i += 1;
            continue;
        }
        match b {
            b'\\' => {
                if pattern
                    .get(i + 1)
                    .is_some_and(|d| (b'1'..=b'9').contains(d))
                {
                    return Err(
                        "uses a back-reference (\\1 ... \\9), which health_check does \
                                not match: it can take exponential time"
                            .into(),
                    );
                }
                i += 1;
            }
            b'[' => {
                in_bracket = true;
                if pattern.get(i + 1) == Some(&b'^') {
                    i += 1;
                }
                if pattern.get(i + 1) == Some(&b']') {
                    i += 1;
                }
            }
            b'(' => {
                depth += 1;
                if depth > DEPTH_LIMIT {
                    return Err(format!("nests parentheses deeper than {DEPTH_LIMIT}"));
                }
            }
            b')' => depth = depth.saturating_sub(1),
            b'{' => {
                let close = pattern[i..].iter().position(|c| *c == b'}');
                if let Some(close) = close {
                    let inner = &pattern[i + 1..i + close];
                    let most = inner
                        .split(|c| *c == b',')
                        .filter_map(|n| std::str::from_utf8(n).ok()?.parse::<u64>().ok())
                        .max();
                    if let Some(most) = most {
                        product = product.saturating_mul(most.max(1));
                        if product > REPEAT_LIMIT {
                            return Err(format!(
                                "repeats more than {REPEAT_LIMIT} times in all ({{m,n}} \
                                 counts multiply)"
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The C library's flag for ksh's extended patterns (`+(a|b)`, `!(x)`): GNU only.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const FNM_EXTMATCH: libc::c_int = 1 << 5;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
const FNM_EXTMATCH: libc::c_int = 0;

/// Whether `text` matches the shell pattern `pattern` as bash's `[[ text == pattern ]]` decides
/// (the whole text; `*` crosses `/`; a backslash quotes the next byte; ksh's extended patterns
/// on, as `[[ == ]]` has them, matched by [`super::extglob`]). A pattern too long to take, or an
/// extended one it does not take, never matches.
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    if super::extglob::is_extended(pattern) {
        // Matched in linear time: the C library's matcher runs away on these (see extglob).
        return bounded(pattern).is_ok()
            && super::extglob::matches(pattern, &text[..text.len().min(GLOB_TEXT_LIMIT)])
                .unwrap_or(false);
    }
    fnmatch(pattern, text, FNM_EXTMATCH)
}

/// Whether `text` matches `pattern` as bash's `${NAME#pattern}` decides: the whole text,
/// extended patterns off (NHC never turns them on).
pub fn glob_match_plain(pattern: &[u8], text: &[u8]) -> bool {
    fnmatch(pattern, text, 0)
}

/// Whether `pattern` occurs anywhere in `text`, as bash's `${text//pattern}` finds it (extended
/// patterns off there); an empty pattern occurs nowhere.
pub fn glob_contains(pattern: &[u8], text: &[u8]) -> bool {
    if pattern.is_empty() {
        return false;
    }
    let mut anywhere = b"*".to_vec();
    anywhere.extend_from_slice(pattern);
    anywhere.push(b'*');
    fnmatch(&anywhere, text, 0)
}

/// The C library's own answer with extended patterns on, for the tests that hold
/// [`super::extglob`] to it.
#[cfg(test)]
pub fn c_fnmatch_extended(pattern: &[u8], text: &[u8]) -> bool {
    fnmatch(pattern, text, FNM_EXTMATCH)
}

fn fnmatch(pattern: &[u8], text: &[u8], flags: libc::c_int) -> bool {
    if bounded(pattern).is_err() {
        return false;
    }
    let p = c_text(pattern, PATTERN_LIMIT);
    let t = c_text(text, GLOB_TEXT_LIMIT);
    // SAFETY: both are valid C strings for the duration of the call.
    unsafe { libc::fnmatch(p.as_ptr(), t.as_ptr(), flags) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str, t: &[u8]) -> bool {
        Ere::new(p.as_bytes()).unwrap().is_match(t)
    }

    /// What bash's `=~` decides (bash 5.2 in the C locale, run by hand).
    #[test]
    fn extended_regular_expressions_match_as_bashs() {
        assert!(re("(^|,)rw($|,)", b"ro,rw,relatime"));
        assert!(!re("(^|,)rw($|,)", b"ro,rwx"));
        assert!(re("\\bslurmstepd\\b", b"slurmstepd: [1.0]"));
        assert!(!re("\\bslurmstepd\\b", b"xslurmstepd"));
        // A backslash inside brackets is a member, not an escape.
        assert!(re("[\\.]", b"a\\b"));
        assert!(re("^[[:space:]]*x$", b" \tx"));
        // Bytes: `.` is any byte in the C locale.
        assert!(re("x.y", b"x\xffy"));
        assert!(Ere::new(b"caf\xe9").unwrap().is_match(b"un caf\xe9"));
        assert!(Ere::new(b"(").is_err());
        assert!(Ere::new(b"a{2,1}").is_err());
    }

    #[test]
    fn patterns_that_could_run_away_are_refused() {
        assert!(Ere::new(b"(a)\\1").unwrap_err().contains("back-reference"));
        assert!(
            re("[\\1]", b"1"),
            "a digit in brackets is no back-reference"
        );
        let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
        assert!(Ere::new(deep.as_bytes()).unwrap_err().contains("deeper"));
        assert!(
            Ere::new(b"((a{200}){200}){200}")
                .unwrap_err()
                .contains("repeats")
        );
        assert!(Ere::new(&vec![b'a'; PATTERN_LIMIT + 1]).is_err());
    }

    /// What bash's `[[ == ]]` decides: whole text, extended patterns on, escapes honoured.
    #[test]
    fn globs_match_as_bashs() {
        assert!(glob_match(b"n*.*", b"n0000.testbed"));
        assert!(glob_match(b"*\\**", b"some*glob"));
        assert!(!glob_match(b"\\*", b"hostname"));
        assert!(glob_match(
            b"*.?xample.[CcNnOo][OoEeRr][MmTtGg]",
            b"host.example.com"
        ));
        assert!(glob_match(b"*", b"a/b"));
        assert!(glob_match(b"[!a]", b"b"));
        assert!(glob_match(b"x?y", b"x\xffy"));
        assert!(glob_match(b"[a", b"[a"));
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        assert!(glob_match(b"+(a|b|c)", b"abc"));
    }
}
