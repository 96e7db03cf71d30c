//! A command's words to its arguments, as bash expands them: braces, then `~`, `$NAME`,
//! `${NAME...}` and `$((...))`, then the results of unquoted expansions split on `$IFS`, quotes
//! removed. An unquoted expansion to nothing is no argument; `""` is an empty one.

use super::words::{ParamOp, Piece, Word};
use super::{Vars, arith, braces};

/// Why a word could not be expanded, as bash would take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// Bash reports the error and the command fails (`$((1/0))`: `eval` returns 1).
    Fails(String),
    /// Bash leaves the whole script (`${NAME:?}` unset).
    Stops(String),
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Fails(m) | ExpandError::Stops(m) => f.write_str(m),
        }
    }
}

/// Bytes and whether they are subject to field splitting.
struct Segment {
    bytes: Vec<u8>,
    split: bool,
}

/// The arguments `words` expand to.
pub fn args(words: &[Word], vars: &mut dyn Vars) -> Result<Vec<Vec<u8>>, ExpandError> {
    let mut out = Vec::new();
    for word in words {
        for w in braces::expand(word).map_err(ExpandError::Fails)? {
            let quoted = w.iter().any(|p| match p {
                Piece::Text { quoted, .. }
                | Piece::Param { quoted, .. }
                | Piece::Arith { quoted, .. } => *quoted,
                Piece::Home => false,
            });
            let mut segs = Vec::new();
            for piece in &w {
                segments(piece, vars, &mut segs)?;
            }
            let ifs = vars.get(b"IFS").unwrap_or_else(|| b" \t\n".to_vec());
            out.extend(fields(&segs, &ifs, quoted));
        }
    }
    Ok(out)
}

/// The value `word` expands to as an assignment's value: no braces, no splitting.
pub fn value(word: &[Piece], vars: &mut dyn Vars) -> Result<Vec<u8>, ExpandError> {
    let mut segs = Vec::new();
    for piece in word {
        segments(piece, vars, &mut segs)?;
    }
    Ok(segs.into_iter().flat_map(|s| s.bytes).collect())
}

fn segments(piece: &Piece, vars: &mut dyn Vars, out: &mut Vec<Segment>) -> Result<(), ExpandError> {
    segments_in(piece, vars, out, false)
}

/// `in_expansion`: the piece is the word of an unquoted `${NAME:-word}`, whose unquoted text is
/// split like any unquoted expansion's result.
fn segments_in(
    piece: &Piece,
    vars: &mut dyn Vars,
    out: &mut Vec<Segment>,
    in_expansion: bool,
) -> Result<(), ExpandError> {
    match piece {
        Piece::Text { bytes, quoted } => out.push(Segment {
            bytes: bytes.clone(),
            split: in_expansion && !quoted,
        }),
        Piece::Home => out.push(Segment {
            bytes: vars.get(b"HOME").unwrap_or_default(),
            split: false,
        }),
        Piece::Arith { expr, quoted } => {
            let text = value(expr, vars)?;
            let v = arith::eval(&text, vars).map_err(|e| {
                ExpandError::Fails(format!("{}: {e}", crate::nhc::bytes::show(&text)))
            })?;
            out.push(Segment {
                bytes: v.to_string().into_bytes(),
                split: !quoted,
            });
        }
        Piece::Param { name, op, quoted } => {
            let current = vars.get(name);
            let unset = |colon: bool| match &current {
                None => true,
                Some(v) => colon && v.is_empty(),
            };
            let own = |v: Vec<u8>| Segment {
                bytes: v,
                split: !quoted,
            };
            match op {
                ParamOp::Value => out.push(own(current.clone().unwrap_or_default())),
                ParamOp::Length => out.push(own(current
                    .as_ref()
                    .map_or(0, Vec::len)
                    .to_string()
                    .into_bytes())),
                ParamOp::Default { colon, word } => {
                    if unset(*colon) {
                        for p in word {
                            segments_in(p, vars, out, !quoted)?;
                        }
                    } else {
                        out.push(own(current.clone().unwrap_or_default()));
                    }
                }
                ParamOp::Assign { colon, word } => {
                    if unset(*colon) {
                        let v = value(word, vars)?;
                        vars.set(name, v.clone());
                        out.push(own(v));
                    } else {
                        out.push(own(current.clone().unwrap_or_default()));
                    }
                }
                ParamOp::Alternative { colon, word } => {
                    if !unset(*colon) {
                        for p in word {
                            segments_in(p, vars, out, !quoted)?;
                        }
                    }
                }
                ParamOp::Trim {
                    suffix,
                    longest,
                    pattern,
                } => {
                    let v = current.clone().unwrap_or_default();
                    let pat = pattern_of(pattern, vars)?;
                    out.push(own(trim(&v, &pat, *suffix, *longest)?));
                }
                ParamOp::Required { colon, word } => {
                    if unset(*colon) {
                        let said = value(word, vars)?;
                        let said = if said.is_empty() {
                            "parameter null or not set".to_string()
                        } else {
                            crate::nhc::bytes::show(&said)
                        };
                        return Err(ExpandError::Stops(format!(
                            "{}: {said}",
                            crate::nhc::bytes::show(name)
                        )));
                    }
                    out.push(own(current.clone().unwrap_or_default()));
                }
            }
        }
    }
    Ok(())
}

/// A glob pattern as bash builds it from a word: quoted parts match themselves (their glob
/// bytes escaped), unquoted text and unquoted expansions are pattern.
fn pattern_of(word: &Word, vars: &mut dyn Vars) -> Result<Vec<u8>, ExpandError> {
    let mut out = Vec::new();
    for piece in word {
        let quoted = match piece {
            Piece::Text { quoted, .. }
            | Piece::Param { quoted, .. }
            | Piece::Arith { quoted, .. } => *quoted,
            Piece::Home => true,
        };
        let bytes = value(std::slice::from_ref(piece), vars)?;
        for b in bytes {
            if quoted
                && matches!(
                    b,
                    b'*' | b'?' | b'[' | b']' | b'\\' | b'(' | b')' | b'|' | b'!' | b'@' | b'+'
                )
            {
                out.push(b'\\');
            }
            out.push(b);
        }
    }
    Ok(out)
}

/// The most bytes a value may hold for `${NAME#pattern}`: every split point is tried against the
/// pattern, as bash does, so the cost grows with the square of the length.
const TRIM_LIMIT: usize = 16 << 10;

/// `value` without the shortest (or longest) prefix (or suffix) `pattern` matches.
fn trim(value: &[u8], pattern: &[u8], suffix: bool, longest: bool) -> Result<Vec<u8>, ExpandError> {
    if value.len() > TRIM_LIMIT {
        return Err(ExpandError::Fails(format!(
            "a value of {} bytes is more than health_check matches a pattern against ({TRIM_LIMIT})",
            value.len()
        )));
    }
    let n = value.len();
    let cuts: Box<dyn Iterator<Item = usize>> = match (suffix, longest) {
        (false, false) => Box::new(0..=n),
        (false, true) => Box::new((0..=n).rev()),
        (true, false) => Box::new((0..=n).rev()),
        (true, true) => Box::new(0..=n),
    };
    for at in cuts {
        let (part, rest) = if suffix {
            (&value[at..], &value[..at])
        } else {
            (&value[..at], &value[at..])
        };
        if crate::nhc::posix::glob_match_plain(pattern, part) {
            return Ok(rest.to_vec());
        }
    }
    Ok(value.to_vec())
}

/// Splits the segments into fields at `ifs` bytes of splittable segments, as bash does: runs of
/// IFS blanks are one separator and vanish at the ends; every other IFS byte separates on its
/// own. A word with a quoted part is at least one (possibly empty) field.
fn fields(segs: &[Segment], ifs: &[u8], quoted: bool) -> Vec<Vec<u8>> {
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n') && ifs.contains(&b);
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut started = false;
    // After a field ended at blanks, a following non-blank separator ends nothing more.
    let mut ended_at_blank = false;
    for seg in segs {
        if !seg.split {
            cur.extend_from_slice(&seg.bytes);
            started |= !seg.bytes.is_empty();
            if !seg.bytes.is_empty() {
                ended_at_blank = false;
            }
            continue;
        }
        for &b in &seg.bytes {
            if blank(b) {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                    ended_at_blank = true;
                }
            } else if ifs.contains(&b) {
                if !ended_at_blank {
                    out.push(std::mem::take(&mut cur));
                }
                started = false;
                ended_at_blank = false;
            } else {
                cur.push(b);
                started = true;
                ended_at_blank = false;
            }
        }
    }
    if started || (quoted && out.is_empty()) {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::words::parse;
    use super::*;
    use std::collections::BTreeMap;

    fn run(line: &str, vars: &mut BTreeMap<Vec<u8>, Vec<u8>>) -> Result<Vec<String>, ExpandError> {
        let c = parse(line.as_bytes()).unwrap();
        Ok(args(&c.args, vars)?
            .into_iter()
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .collect())
    }

    fn vars() -> BTreeMap<Vec<u8>, Vec<u8>> {
        BTreeMap::from([
            (b"X".to_vec(), b"1 2".to_vec()),
            (b"HOME".to_vec(), b"/root".to_vec()),
            (b"E".to_vec(), b"".to_vec()),
            (b"HW_CORES".to_vec(), b"12".to_vec()),
        ])
    }

    /// What bash 5.2 passes a function for each line under `eval` (run by hand).
    #[test]
    fn words_expand_as_bashs() {
        let cases: &[(&str, &[&str])] = &[
            ("c a\\ b c", &["a b", "c"]),
            ("c \"x\\$y\" \"\\\\a\" \"\\a\"", &["x$y", "\\a", "\\a"]),
            ("c $UNSET x", &["x"]),
            ("c \"$UNSET\" x", &["", "x"]),
            ("c $X", &["1", "2"]),
            ("c \"$X\"", &["1 2"]),
            ("c ${UNSET:-d e}", &["d", "e"]),
            ("c \"${UNSET:-d e}\"", &["d e"]),
            ("c ${E-default} x", &["x"]),
            ("c ${E:-default}", &["default"]),
            ("c ${X:+alt}", &["alt"]),
            ("c ${#HOME}", &["5"]),
            ("c ~ ~/x", &["/root", "/root/x"]),
            ("c $((1+2))x \"$((1+2))\"", &["3x", "3"]),
            ("c $((  1 +  (2*3) ))", &["7"]),
            ("c $(( $((2)) * 3))", &["6"]),
            ("c $((2*(HW_CORES+100)))", &["224"]),
            ("c $((-HW_CORES))", &["-12"]),
            ("c \\$HOME", &["$HOME"]),
            ("c 'a'\\''b'", &["a'b"]),
            ("c \"\" ''", &["", ""]),
            ("c $ a$ \"$\"", &["$", "a$", "$"]),
            ("c A={x,y}", &["A=x", "A=y"]),
            ("c /{scratch,home}", &["/scratch", "/home"]),
        ];
        for (line, want) in cases {
            assert_eq!(run(line, &mut vars()).unwrap(), *want, "{line}");
        }
    }

    /// `${NAME#pattern}` and its kin, as bash 5.2 gave them by hand (NHC's shell options:
    /// extended patterns off).
    #[test]
    fn trims_take_what_bash_takes() {
        let mut v = vars();
        for (k, val) in [("H", "n0042.cluster.example"), ("S", "a*b.c"), ("P", "*.")] {
            v.insert(k.as_bytes().to_vec(), val.as_bytes().to_vec());
        }
        let cases: &[(&str, &[&str])] = &[
            (
                "c ${H%%.*} ${H%.*} ${H#*.} ${H##*.}",
                &["n0042", "n0042.cluster", "cluster.example", "example"],
            ),
            (
                "c \"${S#\"a*\"}\" ${S#a\\*} ${S#a*}z ${S#$P} ${S#\"$P\"}q",
                &["b.c", "b.c", "*b.cz", "c", "a*b.cq"],
            ),
            (
                "c ${X#1} \"${X%2}\" ${UNSET#x}y ${H#} ${H%%*}e",
                &["2", "1 ", "y", "n0042.cluster.example", "e"],
            ),
            ("c ${H#n+([0-9])}", &["n0042.cluster.example"]),
        ];
        for (line, want) in cases {
            assert_eq!(run(line, &mut v).unwrap(), *want, "{line}");
        }
    }

    #[test]
    fn errors_fail_or_stop_as_bash_does() {
        assert!(matches!(
            run("c $((1/0))", &mut vars()),
            Err(ExpandError::Fails(m)) if m.contains("division by 0")
        ));
        assert!(matches!(
            run("c ${UNSET:?gone}", &mut vars()),
            Err(ExpandError::Stops(m)) if m == "UNSET: gone"
        ));
        let mut v = vars();
        assert_eq!(run("c ${N:=5} $N", &mut v).unwrap(), ["5", "5"]);
    }

    #[test]
    fn other_separators_split_as_bashs() {
        let mut v = vars();
        v.insert(b"IFS".to_vec(), b",".to_vec());
        v.insert(b"L".to_vec(), b",a,,b,".to_vec());
        assert_eq!(run("c $L", &mut v).unwrap(), ["", "a", "", "b"]);
        v.insert(b"IFS".to_vec(), b" ,".to_vec());
        v.insert(b"L".to_vec(), b"a , b".to_vec());
        assert_eq!(run("c $L", &mut v).unwrap(), ["a", "b"]);
    }
}
