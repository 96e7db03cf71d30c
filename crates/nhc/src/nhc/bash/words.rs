//! One nhc.conf check as bash parses it (after NHC's `eval $CHECK` has split it on blanks and
//! joined it with single spaces): a simple command of assignments and words, each word a list of
//! [`Piece`]s that remember their quoting. Nothing is evaluated here; every construct beyond a
//! simple command is an error that names it.

use super::is_name;
use crate::nhc::bytes::show;

/// A piece of a word, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes taken as they are. `quoted` ones (in quotes, or after a backslash) are never split,
    /// brace-expanded or read as `~`.
    Text {
        /// The bytes.
        bytes: Vec<u8>,
        /// Whether they were quoted.
        quoted: bool,
    },
    /// `$NAME` or `${NAME...}`.
    Param {
        /// The variable.
        name: Vec<u8>,
        /// What is done with it.
        op: ParamOp,
        /// Inside double quotes: not split.
        quoted: bool,
    },
    /// `$((...))`: the expression's pieces (expanded, then evaluated).
    Arith {
        /// The expression as written, its `$NAME`s still to expand.
        expr: Vec<Piece>,
        /// Inside double quotes.
        quoted: bool,
    },
    /// An unquoted `~` starting a word (or an assignment's value): `$HOME`.
    Home,
}

/// What `${NAME...}` does with the variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamOp {
    /// `$NAME`, `${NAME}`.
    Value,
    /// `${#NAME}`: its length.
    Length,
    /// `${NAME-word}` (`colon`: `${NAME:-word}`, also when empty): the word when unset.
    Default {
        /// `:` given: empty counts as unset.
        colon: bool,
        /// The word.
        word: Vec<Piece>,
    },
    /// `${NAME=word}`, `${NAME:=word}`: as Default, and the variable is set to it.
    Assign {
        /// `:` given.
        colon: bool,
        /// The word.
        word: Vec<Piece>,
    },
    /// `${NAME+word}`, `${NAME:+word}`: the word when set.
    Alternative {
        /// `:` given.
        colon: bool,
        /// The word.
        word: Vec<Piece>,
    },
    /// `${NAME?word}`, `${NAME:?word}`: bash stops when unset.
    Required {
        /// `:` given.
        colon: bool,
        /// The word.
        word: Vec<Piece>,
    },
    /// `${NAME#pat}`, `${NAME##pat}`, `${NAME%pat}`, `${NAME%%pat}`: the value without the
    /// shortest (longest) prefix (`%`: suffix) the glob pattern matches.
    Trim {
        /// `%`: from the end.
        suffix: bool,
        /// Doubled: the longest match.
        longest: bool,
        /// The pattern (its quoted parts literal).
        pattern: Vec<Piece>,
    },
}

/// A word: its pieces in order.
pub type Word = Vec<Piece>;

/// `NAME=value` or `NAME+=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The variable.
    pub name: Vec<u8>,
    /// `+=`: appended to the old value.
    pub append: bool,
    /// The value as written.
    pub value: Word,
}

/// A simple command: assignments, then words (the first is the command's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Assignments before the command (for a check, they hold for that check only).
    pub assignments: Vec<Assignment>,
    /// The command's name, written out (no expansion in it), or `None` for assignments alone.
    pub name: Option<Vec<u8>>,
    /// The arguments as written.
    pub args: Vec<Word>,
}

/// How deep `${...}` and `$((...))` may nest inside one another.
const NESTING_LIMIT: usize = 32;

/// Words bash reserves at the start of a command (compound commands and the like).
const RESERVED: &[&[u8]] = &[
    b"if",
    b"then",
    b"else",
    b"elif",
    b"fi",
    b"case",
    b"esac",
    b"for",
    b"select",
    b"while",
    b"until",
    b"do",
    b"done",
    b"in",
    b"function",
    b"time",
    b"{",
    b"}",
    b"!",
    b"[[",
    b"]]",
    b"coproc",
];

/// Why a check's text is not one simple command, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What is wrong, and what would be right.
    pub message: String,
    /// The byte of the text where the word or operator at fault starts.
    pub at: usize,
}

/// Parses one check's text as bash parses a simple command.
pub fn parse(text: &[u8]) -> Result<Command, ParseError> {
    let mut lx = Lexer { s: text, i: 0 };
    let mut words: Vec<Word> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    loop {
        while lx.i < lx.s.len() && matches!(lx.s[lx.i], b' ' | b'\t' | b'\n') {
            lx.i += 1;
        }
        let Some(&b) = lx.s.get(lx.i) else { break };
        if b == b'#' {
            break;
        }
        let at = lx.i;
        if is_operator(b) {
            return Err(ParseError {
                message: operator_error(&lx.s[at..]),
                at,
            });
        }
        words.push(lx.word(0).map_err(|message| ParseError { message, at })?);
        starts.push(at);
    }
    command(words).map_err(|(message, word)| ParseError {
        message,
        at: starts.get(word).copied().unwrap_or(0),
    })
}

fn is_operator(b: u8) -> bool {
    matches!(b, b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')')
}

fn operator_error(rest: &[u8]) -> String {
    let op: Vec<u8> = rest
        .iter()
        .take_while(|b| is_operator(**b))
        .copied()
        .collect();
    let what = match op.first() {
        Some(b';') => "';' runs a second command",
        Some(b'&') if op.starts_with(b"&&") => "'&&' runs a second command",
        Some(b'&') => "'&' runs a command in the background",
        Some(b'|') if op.starts_with(b"||") => "'||' runs a second command",
        Some(b'|') => "'|' is a pipe",
        Some(b'<' | b'>') => "a redirection",
        _ => "a parenthesis is a subshell or an array",
    };
    format!(
        "'{}' is shell beyond one check ({what}): give one check per line",
        show(&op)
    )
}

/// Splits the words into assignments, the command's name and its arguments; an error names
/// the word at fault by its index.
fn command(words: Vec<Word>) -> Result<Command, (String, usize)> {
    let mut assignments = Vec::new();
    let mut rest = words.into_iter().peekable();
    while let Some(a) = rest.peek().and_then(assignment) {
        assignments.push(a);
        rest.next();
    }
    let Some(first) = rest.next() else {
        return Ok(Command {
            assignments,
            name: None,
            args: Vec::new(),
        });
    };
    let mut name = Vec::new();
    for piece in &first {
        match piece {
            Piece::Text { bytes, .. } => name.extend_from_slice(bytes),
            _ => {
                return Err((
                    "the command's name holds an expansion: write the check's name out".into(),
                    assignments.len(),
                ));
            }
        }
    }
    let unquoted = matches!(first.as_slice(), [Piece::Text { quoted: false, .. }]);
    if unquoted && RESERVED.contains(&name.as_slice()) {
        return Err((
            format!(
                "'{}' starts a compound command: health_check runs one check per line, not shell",
                show(&name)
            ),
            assignments.len(),
        ));
    }
    Ok(Command {
        assignments,
        name: Some(name),
        args: rest.collect(),
    })
}

/// The word as an assignment, when it is one: `NAME=` or `NAME+=` unquoted at its start.
pub fn assignment(word: &Word) -> Option<Assignment> {
    let Some(Piece::Text {
        bytes,
        quoted: false,
    }) = word.first()
    else {
        return None;
    };
    let eq = bytes.iter().position(|b| *b == b'=')?;
    let (name, append) = match bytes[..eq].strip_suffix(b"+") {
        Some(n) => (n, true),
        None => (&bytes[..eq], false),
    };
    if !is_name(name) {
        return None;
    }
    let mut value: Word = Vec::new();
    let after = &bytes[eq + 1..];
    // `NAME=~/x`: a `~` right after `=` is a home directory too.
    if after == b"~" || after.starts_with(b"~/") {
        value.push(Piece::Home);
        if after.len() > 1 {
            value.push(Piece::Text {
                bytes: after[1..].to_vec(),
                quoted: false,
            });
        }
    } else if !after.is_empty() {
        value.push(Piece::Text {
            bytes: after.to_vec(),
            quoted: false,
        });
    }
    value.extend(word[1..].iter().cloned());
    Some(Assignment {
        name: name.to_vec(),
        append,
        value,
    })
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

/// Appends bytes to the word, merging with the last piece of the same quoting.
fn push_text(word: &mut Word, bytes: &[u8], quoted: bool) {
    if let Some(Piece::Text {
        bytes: b,
        quoted: q,
    }) = word.last_mut()
    {
        if *q == quoted {
            b.extend_from_slice(bytes);
            return;
        }
    }
    word.push(Piece::Text {
        bytes: bytes.to_vec(),
        quoted,
    });
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.s.get(self.i + ahead).copied()
    }

    /// One word, up to an unquoted blank or operator.
    fn word(&mut self, depth: usize) -> Result<Word, String> {
        let mut word: Word = Vec::new();
        if self.peek(0) == Some(b'~') && matches!(self.peek(1), None | Some(b'/' | b' ' | b'\t')) {
            word.push(Piece::Home);
            self.i += 1;
        } else if self.peek(0) == Some(b'~') && self.peek(1).is_some_and(|b| !is_operator(b)) {
            let user: Vec<u8> = self.s[self.i + 1..]
                .iter()
                .take_while(|b| !matches!(b, b'/' | b' ' | b'\t') && !is_operator(**b))
                .copied()
                .collect();
            if is_name(&user) {
                return Err(format!(
                    "'~{}' is another user's home directory: write the path out",
                    show(&user)
                ));
            }
        }
        while let Some(b) = self.peek(0) {
            match b {
                b' ' | b'\t' | b'\n' => break,
                _ if is_operator(b) => break,
                b'\\' => {
                    match self.peek(1) {
                        Some(c) => push_text(&mut word, &[c], true),
                        None => push_text(&mut word, b"\\", true),
                    }
                    self.i += 2;
                }
                b'\'' => {
                    self.i += 1;
                    let close = self.s[self.i..]
                        .iter()
                        .position(|c| *c == b'\'')
                        .ok_or("a quote (') is not closed")?;
                    let bytes = self.s[self.i..self.i + close].to_vec();
                    push_text(&mut word, &bytes, true);
                    self.i += close + 1;
                }
                b'"' => {
                    self.i += 1;
                    self.double_quoted(&mut word, depth)?;
                }
                b'$' => self.dollar(&mut word, false, depth)?,
                b'`' => return Err("'`' is command substitution: shell, not a check".into()),
                _ => {
                    push_text(&mut word, &[b], false);
                    self.i += 1;
                }
            }
        }
        Ok(word)
    }

    /// The inside of `"..."`, the opening quote read.
    fn double_quoted(&mut self, word: &mut Word, depth: usize) -> Result<(), String> {
        // `""` is a quoted empty word, not nothing.
        push_text(word, b"", true);
        loop {
            match self.peek(0) {
                None => return Err("a quote (\") is not closed".into()),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    match self.peek(1) {
                        Some(c @ (b'$' | b'`' | b'"' | b'\\')) => push_text(word, &[c], true),
                        Some(b'\n') => {}
                        Some(c) => push_text(word, &[b'\\', c], true),
                        None => return Err("a quote (\") is not closed".into()),
                    }
                    self.i += 2;
                }
                Some(b'$') => self.dollar(word, true, depth)?,
                Some(b'`') => {
                    return Err("'`' is command substitution: shell, not a check".into());
                }
                Some(c) => {
                    push_text(word, &[c], true);
                    self.i += 1;
                }
            }
        }
    }

    /// What a `$` starts, the `$` not yet read.
    fn dollar(&mut self, word: &mut Word, quoted: bool, depth: usize) -> Result<(), String> {
        if depth > NESTING_LIMIT {
            return Err(format!(
                "expansions nest deeper than {NESTING_LIMIT} levels"
            ));
        }
        match self.peek(1) {
            Some(b'\'') if !quoted => {
                self.i += 2;
                let bytes = self.ansi_c()?;
                push_text(word, &bytes, true);
            }
            Some(b'"') if !quoted => {
                // $"..." is translated by the locale: as "..." in the C locale.
                self.i += 2;
                self.double_quoted(word, depth + 1)?;
            }
            Some(b'(') if self.peek(2) == Some(b'(') => {
                self.i += 3;
                let expr = self.arithmetic(depth + 1)?;
                word.push(Piece::Arith { expr, quoted });
            }
            Some(b'(') => {
                return Err("'$(' is command substitution: shell, not a check".into());
            }
            Some(b'[') => {
                return Err("'$[' is bash's old arithmetic: write $((...))".into());
            }
            Some(b'{') => {
                self.i += 2;
                let piece = self.braced(quoted, depth + 1)?;
                word.push(piece);
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                self.i += 1;
                let start = self.i;
                while self
                    .peek(0)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.i += 1;
                }
                word.push(Piece::Param {
                    name: self.s[start..self.i].to_vec(),
                    op: ParamOp::Value,
                    quoted,
                });
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
                return Err(format!(
                    "'${}' is a shell parameter that means nothing in nhc.conf",
                    c as char
                ));
            }
            _ => {
                push_text(word, b"$", quoted);
                self.i += 1;
            }
        }
        Ok(())
    }

    /// `$'...'`: C escapes, the opening `$'` read.
    fn ansi_c(&mut self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            let Some(b) = self.peek(0) else {
                return Err("a quote ($') is not closed".into());
            };
            self.i += 1;
            if b == b'\'' {
                return Ok(out);
            }
            if b != b'\\' {
                out.push(b);
                continue;
            }
            let Some(e) = self.peek(0) else {
                return Err("a quote ($') is not closed".into());
            };
            self.i += 1;
            match e {
                b'a' => out.push(7),
                b'b' => out.push(8),
                b'e' | b'E' => out.push(27),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(11),
                b'\\' | b'\'' | b'"' | b'?' => out.push(e),
                b'0'..=b'7' => {
                    let mut v = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.peek(0) {
                            Some(d @ b'0'..=b'7') => {
                                v = v * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(v as u8);
                }
                b'x' => {
                    let digits = self.hex_digits(2);
                    match digits {
                        Some(v) => out.push(v as u8),
                        None => out.extend_from_slice(b"\\x"),
                    }
                }
                b'u' | b'U' => {
                    let most = if e == b'u' { 4 } else { 8 };
                    match self.hex_digits(most).and_then(char::from_u32) {
                        Some(c) => {
                            let mut buf = [0; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                        None => out.extend_from_slice(&[b'\\', e]),
                    }
                }
                b'c' => match self.peek(0) {
                    Some(c) => {
                        self.i += 1;
                        out.push(c & 0x1f);
                    }
                    None => out.extend_from_slice(b"\\c"),
                },
                _ => out.extend_from_slice(&[b'\\', e]),
            }
        }
    }

    fn hex_digits(&mut self, most: usize) -> Option<u32> {
        let mut v = 0u32;
        let mut n = 0;
        while n < most {
            match self.peek(0).and_then(|d| (d as char).to_digit(16)) {
                Some(d) => {
                    v = v * 16 + d;
                    self.i += 1;
                    n += 1;
                }
                None => break,
            }
        }
        (n > 0).then_some(v)
    }

    /// `$((...))`, the opening `$((` read: up to the `))` that balances it; `$` expansions and
    /// double quotes inside are read, everything else is the expression's text.
    fn arithmetic(&mut self, depth: usize) -> Result<Vec<Piece>, String> {
        let mut expr: Word = Vec::new();
        let mut open = 0usize;
        loop {
            match self.peek(0) {
                None => return Err("'$((' is not closed by '))'".into()),
                Some(b')') if open == 0 => {
                    if self.peek(1) == Some(b')') {
                        self.i += 2;
                        return Ok(expr);
                    }
                    return Err("'$((' is not closed by '))'".into());
                }
                Some(b')') => {
                    open -= 1;
                    push_text(&mut expr, b")", true);
                    self.i += 1;
                }
                Some(b'(') => {
                    open += 1;
                    push_text(&mut expr, b"(", true);
                    self.i += 1;
                }
                Some(b'$') => self.dollar(&mut expr, true, depth)?,
                Some(b'"') => self.i += 1,
                Some(b'`') => {
                    return Err("'`' is command substitution: shell, not a check".into());
                }
                Some(b'\\') => {
                    if let Some(c) = self.peek(1) {
                        push_text(&mut expr, &[c], true);
                    }
                    self.i += 2;
                }
                Some(c) => {
                    push_text(&mut expr, &[c], true);
                    self.i += 1;
                }
            }
        }
    }

    /// `${...}`, the opening `${` read.
    fn braced(&mut self, quoted: bool, depth: usize) -> Result<Piece, String> {
        let length = self.peek(0) == Some(b'#') && self.peek(1) != Some(b'}');
        if length {
            self.i += 1;
        }
        let start = self.i;
        while self
            .peek(0)
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        let name = self.s[start..self.i].to_vec();
        if !is_name(&name) {
            let shown: Vec<u8> = self.s[start..]
                .iter()
                .take_while(|c| **c != b'}')
                .copied()
                .collect();
            return Err(format!(
                "'${{{}}}' is a shell parameter that means nothing in nhc.conf",
                show(&shown)
            ));
        }
        if self.peek(0) == Some(b'}') {
            self.i += 1;
            let op = if length {
                ParamOp::Length
            } else {
                ParamOp::Value
            };
            return Ok(Piece::Param { name, op, quoted });
        }
        if !length && let Some(c @ (b'#' | b'%')) = self.peek(0) {
            let longest = self.peek(1) == Some(c);
            self.i += 1 + usize::from(longest);
            let pattern = self.braced_word(quoted, depth)?;
            let op = ParamOp::Trim {
                suffix: c == b'%',
                longest,
                pattern,
            };
            return Ok(Piece::Param { name, op, quoted });
        }
        let colon = self.peek(0) == Some(b':');
        let kind = self.peek(usize::from(colon));
        if length || !matches!(kind, Some(b'-' | b'=' | b'+' | b'?')) {
            let shown: Vec<u8> = self.s[start..]
                .iter()
                .take_while(|c| **c != b'}')
                .copied()
                .collect();
            return Err(format!(
                "'${{{}}}': health_check reads ${{NAME}}, ${{#NAME}}, ${{NAME:-word}} \
                 (-, =, +, ?) and ${{NAME#pattern}} (#, ##, %, %%), not this expansion",
                show(&shown)
            ));
        }
        self.i += usize::from(colon) + 1;
        let word = self.braced_word(quoted, depth)?;
        let op = match kind {
            Some(b'-') => ParamOp::Default { colon, word },
            Some(b'=') => ParamOp::Assign { colon, word },
            Some(b'+') => ParamOp::Alternative { colon, word },
            _ => ParamOp::Required { colon, word },
        };
        Ok(Piece::Param { name, op, quoted })
    }

    /// The word of `${NAME:-word}` up to its unquoted `}`.
    fn braced_word(&mut self, quoted: bool, depth: usize) -> Result<Word, String> {
        let mut word: Word = Vec::new();
        loop {
            match self.peek(0) {
                None => return Err("'${' is not closed by '}'".into()),
                Some(b'}') => {
                    self.i += 1;
                    return Ok(word);
                }
                Some(b'\\') => {
                    match self.peek(1) {
                        Some(c) => push_text(&mut word, &[c], true),
                        None => return Err("'${' is not closed by '}'".into()),
                    }
                    self.i += 2;
                }
                Some(b'\'') if !quoted => {
                    self.i += 1;
                    let close = self.s[self.i..]
                        .iter()
                        .position(|c| *c == b'\'')
                        .ok_or("a quote (') is not closed")?;
                    let bytes = self.s[self.i..self.i + close].to_vec();
                    push_text(&mut word, &bytes, true);
                    self.i += close + 1;
                }
                Some(b'"') => {
                    self.i += 1;
                    self.double_quoted(&mut word, depth)?;
                }
                Some(b'$') => self.dollar(&mut word, quoted, depth)?,
                Some(b'`') => {
                    return Err("'`' is command substitution: shell, not a check".into());
                }
                Some(c) => {
                    push_text(&mut word, &[c], quoted);
                    self.i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(b: &str, quoted: bool) -> Piece {
        Piece::Text {
            bytes: b.as_bytes().to_vec(),
            quoted,
        }
    }

    #[test]
    fn quotes_keep_what_they_quote() {
        let c = parse(br#"check_fs_mount -o '/(^|,)vers=3(,|$)/' "a $X" a\ b"#).unwrap();
        assert_eq!(c.name.as_deref(), Some(&b"check_fs_mount"[..]));
        assert_eq!(c.args[1], vec![text("/(^|,)vers=3(,|$)/", true)]);
        assert_eq!(
            c.args[2],
            vec![
                text("a ", true),
                Piece::Param {
                    name: b"X".to_vec(),
                    op: ParamOp::Value,
                    quoted: true
                }
            ]
        );
        assert_eq!(
            c.args[3],
            vec![text("a", false), text(" ", true), text("b", false)]
        );
    }

    #[test]
    fn assignments_come_before_the_name() {
        let c = parse(b"A=1 B+=\"x y\" check_ps_loadavg 5").unwrap();
        assert_eq!(c.assignments.len(), 2);
        assert!(c.assignments[1].append);
        assert_eq!(c.name.as_deref(), Some(&b"check_ps_loadavg"[..]));
        let c = parse(b"export A=1 B=2").unwrap();
        assert_eq!(c.name.as_deref(), Some(&b"export"[..]));
        assert_eq!(c.args.len(), 2);
        let c = parse(b"MARK_OFFLINE=0").unwrap();
        assert_eq!((c.assignments.len(), c.name), (1, None));
    }

    #[test]
    fn shell_beyond_one_command_is_named() {
        for (line, want) in [
            ("check_a ; reboot", "';' runs a second command"),
            ("check_a && x", "'&&'"),
            ("check_a || x", "'||'"),
            ("check_a | x", "pipe"),
            ("check_a > /x", "redirection"),
            ("check_a $(id)", "command substitution"),
            ("check_a `id`", "command substitution"),
            ("if true", "compound command"),
            ("check_a 'x", "not closed"),
            ("check_a \"x", "not closed"),
            ("check_a $((1+2)", "not closed"),
            ("check_a ${X/y/z}", "not this expansion"),
            ("check_a $1", "shell parameter"),
            ("check_a ~bob", "another user's home"),
            ("$CHECK x", "write the check's name out"),
        ] {
            let e = parse(line.as_bytes()).unwrap_err().message;
            assert!(e.contains(want), "{line}: {e}");
        }
        assert!(parse(b"check_a # a comment ; here").is_ok());
        assert!(parse(b"check_a a#b").unwrap().args.len() == 1);
    }

    #[test]
    fn ansi_c_quotes_and_nesting() {
        let c = parse(b"x $'a\\tb\\x41\\101'").unwrap();
        assert_eq!(c.args[0], vec![text("a\tbAA", true)]);
        let c = parse(b"x $'\\xff'").unwrap();
        assert_eq!(
            c.args[0],
            vec![Piece::Text {
                bytes: vec![0xff],
                quoted: true
            }]
        );
        let deep = format!("x {}", "${X:-".repeat(100));
        assert!(parse(deep.as_bytes()).unwrap_err().message.contains("nest"));
    }
}
