//! Bash's arithmetic (`$((...))`, and the numbers NHC's checks compare with `-lt`): 64-bit
//! integers that wrap, every operator bash has (assignment and `++` included), numbers in
//! decimal, octal (`010`), hexadecimal (`0x1f`) and `base#digits`, names read as variables whose
//! values are expressions themselves (unset or empty is 0). Errors are bash's (division by 0, a
//! value too great for its base, an operand missing); nesting and variable chains are bounded,
//! so no input recurses without end.

use super::Vars;

/// How deep parentheses, operators and variables that name variables may nest (bash stops at
/// 1024 levels of recursion; a few hundred is plenty for nhc.conf).
const DEPTH_LIMIT: usize = 256;

/// Why bash refuses an expression: its message, as bash words it after the expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArithError(pub String);

impl std::fmt::Display for ArithError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Evaluates `expr` as bash's `$((expr))` does, reading and assigning variables in `vars`.
pub fn eval(expr: &[u8], vars: &mut dyn Vars) -> Result<i64, ArithError> {
    eval_at(expr, vars, 0)
}

fn eval_at(expr: &[u8], vars: &mut dyn Vars, depth: usize) -> Result<i64, ArithError> {
    if depth > DEPTH_LIMIT {
        return Err(ArithError("expression recursion level exceeded".into()));
    }
    let (tokens, starts) = tokenize(expr)?;
    if tokens.is_empty() {
        return Ok(0);
    }
    let mut p = Parser {
        tokens: &tokens,
        starts: &starts,
        expr,
        at: 0,
        vars,
        depth,
        skip: 0,
    };
    let v = p.comma()?;
    match p.tokens.get(p.at) {
        None => Ok(v),
        Some(_) => Err(ArithError(format!(
            "syntax error in expression (error token is \"{}\")",
            p.error_token()
        ))),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Num(Vec<u8>),
    Name(Vec<u8>),
    Op(&'static str),
}

/// Operators, longest first so `<<=` is not read as `<<` then `=`.
const OPS: &[&str] = &[
    "<<=", ">>=", "**", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "*=", "/=",
    "%=", "+=", "-=", "&=", "^=", "|=", "+", "-", "*", "/", "%", "<", ">", "&", "^", "|", "!", "~",
    "?", ":", "=", ",", "(", ")",
];

/// The tokens of `expr`, and where each starts.
fn tokenize(expr: &[u8]) -> Result<(Vec<Tok>, Vec<usize>), ArithError> {
    let mut out = Vec::new();
    let mut starts = Vec::new();
    let mut i = 0;
    while i < expr.len() {
        let b = expr[i];
        if !matches!(b, b' ' | b'\t' | b'\n') {
            starts.push(i);
        }
        if matches!(b, b' ' | b'\t' | b'\n') {
            i += 1;
        } else if b.is_ascii_digit() {
            let start = i;
            while i < expr.len()
                && (expr[i].is_ascii_alphanumeric() || matches!(expr[i], b'#' | b'@' | b'_'))
            {
                i += 1;
            }
            out.push(Tok::Num(expr[start..i].to_vec()));
        } else if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < expr.len() && (expr[i].is_ascii_alphanumeric() || expr[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(expr[start..i].to_vec()));
        } else if let Some(op) = OPS.iter().find(|o| expr[i..].starts_with(o.as_bytes())) {
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            let rest = crate::nhc::bytes::show(&expr[i..]);
            return Err(ArithError(format!(
                "syntax error: invalid arithmetic operator (error token is \"{rest}\")"
            )));
        }
    }
    Ok((out, starts))
}

/// A number as bash reads one: `0x` hexadecimal, a leading 0 octal, `base#digits` (bases 2 to
/// 64: digits, then a-z, A-Z, `@`, `_`; letters of either case below base 37), else decimal;
/// wrapping past 64 bits as bash does.
pub fn number(text: &[u8]) -> Result<i64, ArithError> {
    let bad = |why: &str| {
        ArithError(format!(
            "{}: {why} (error token is \"{}\")",
            crate::nhc::bytes::show(text),
            crate::nhc::bytes::show(text)
        ))
    };
    let (base, digits): (u32, &[u8]) = if let Some(hash) = text.iter().position(|b| *b == b'#') {
        let head = &text[..hash];
        if head.is_empty() || !head.iter().all(u8::is_ascii_digit) || head[0] == b'0' {
            return Err(bad("invalid number"));
        }
        let base: u32 = crate::nhc::bytes::number(head).unwrap_or(0);
        if !(2..=64).contains(&base) {
            return Err(bad("invalid arithmetic base"));
        }
        if hash + 1 == text.len() {
            return Err(bad("invalid integer constant"));
        }
        (base, &text[hash + 1..])
    } else if let Some(hex) = text
        .strip_prefix(b"0x")
        .or_else(|| text.strip_prefix(b"0X"))
    {
        (16, hex)
    } else if text.len() > 1 && text[0] == b'0' {
        (8, &text[1..])
    } else {
        (10, text)
    };
    let mut v: i64 = 0;
    for &d in digits {
        let value = match d {
            b'0'..=b'9' => u32::from(d - b'0'),
            b'a'..=b'z' => u32::from(d - b'a') + 10,
            b'A'..=b'Z' if base <= 36 => u32::from(d - b'A') + 10,
            b'A'..=b'Z' => u32::from(d - b'A') + 36,
            b'@' => 62,
            b'_' => 63,
            _ => return Err(bad("invalid number")),
        };
        if value >= base {
            return Err(bad("value too great for base"));
        }
        v = v
            .wrapping_mul(i64::from(base))
            .wrapping_add(i64::from(value));
    }
    Ok(v)
}

/// `base ** exp` wrapping, for any non-negative exponent.
fn power(mut base: i64, mut exp: i64) -> i64 {
    let mut acc: i64 = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    acc
}

struct Parser<'a> {
    tokens: &'a [Tok],
    /// Where each token starts in `expr`.
    starts: &'a [usize],
    expr: &'a [u8],
    at: usize,
    vars: &'a mut dyn Vars,
    depth: usize,
    /// Above 0 inside the side of `&&`, `||` or `?:` bash does not evaluate: parsed, no
    /// variable changed, no division by zero raised.
    skip: usize,
}

impl Parser<'_> {
    /// What bash quotes as the error token: the expression from the start of the token it read
    /// last (the one at hand, or at the end the one before it) to its end.
    fn error_token(&self) -> String {
        let last = self.at.min(self.tokens.len().saturating_sub(1));
        let from = self.starts.get(last).copied().unwrap_or(self.expr.len());
        crate::nhc::bytes::show(&self.expr[from..])
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, op: &str) -> bool {
        match self.peek() {
            Some(Tok::Op(o)) if *o == op => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    fn deeper(&mut self) -> Result<(), ArithError> {
        self.depth += 1;
        if self.depth > DEPTH_LIMIT {
            return Err(ArithError("expression recursion level exceeded".into()));
        }
        Ok(())
    }

    fn comma(&mut self) -> Result<i64, ArithError> {
        let mut v = self.assign()?;
        while self.eat(",") {
            v = self.assign()?;
        }
        Ok(v)
    }

    fn assign(&mut self) -> Result<i64, ArithError> {
        if let (Some(Tok::Name(name)), Some(Tok::Op(op))) =
            (self.tokens.get(self.at), self.tokens.get(self.at + 1))
        {
            let ops = [
                "=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=",
            ];
            if ops.contains(op) {
                let (name, op) = (name.clone(), *op);
                self.at += 2;
                self.deeper()?;
                let rhs = self.assign()?;
                self.depth -= 1;
                let v = if op == "=" {
                    rhs
                } else {
                    let old = self.variable(&name)?;
                    self.binary(old, &op[..op.len() - 1], rhs)?
                };
                self.store(&name, v);
                return Ok(v);
            }
        }
        self.ternary()
    }

    fn ternary(&mut self) -> Result<i64, ArithError> {
        let cond = self.logical_or()?;
        if !self.eat("?") {
            return Ok(cond);
        }
        self.deeper()?;
        if cond == 0 {
            self.skip += 1;
        }
        let yes = self.comma()?;
        if cond == 0 {
            self.skip -= 1;
        }
        if !self.eat(":") {
            return Err(ArithError(format!(
                "`:' expected for conditional expression (error token is \"{}\")",
                self.error_token()
            )));
        }
        if cond != 0 {
            self.skip += 1;
        }
        let no = self.assign()?;
        if cond != 0 {
            self.skip -= 1;
        }
        self.depth -= 1;
        Ok(if cond != 0 { yes } else { no })
    }

    fn logical_or(&mut self) -> Result<i64, ArithError> {
        let mut v = self.logical_and()?;
        while self.eat("||") {
            let short = v != 0;
            self.skip += usize::from(short);
            let r = self.logical_and()?;
            self.skip -= usize::from(short);
            v = i64::from(short || r != 0);
        }
        Ok(v)
    }

    fn logical_and(&mut self) -> Result<i64, ArithError> {
        let mut v = self.binary_level(0)?;
        while self.eat("&&") {
            let short = v == 0;
            self.skip += usize::from(short);
            let r = self.binary_level(0)?;
            self.skip -= usize::from(short);
            v = i64::from(!short && r != 0);
        }
        Ok(v)
    }

    /// The left-associative binary levels, loosest first.
    fn binary_level(&mut self, level: usize) -> Result<i64, ArithError> {
        const LEVELS: &[&[&str]] = &[
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<=", ">=", "<", ">"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.exponent();
        };
        self.deeper()?;
        let mut v = self.binary_level(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(o)) if ops.contains(o) => *o,
                _ => break,
            };
            self.at += 1;
            let r = self.binary_level(level + 1)?;
            v = self.binary(v, op, r)?;
        }
        self.depth -= 1;
        Ok(v)
    }

    fn binary(&self, l: i64, op: &str, r: i64) -> Result<i64, ArithError> {
        if self.skip > 0 {
            return Ok(0);
        }
        Ok(match op {
            "|" => l | r,
            "^" => l ^ r,
            "&" => l & r,
            "==" => i64::from(l == r),
            "!=" => i64::from(l != r),
            "<=" => i64::from(l <= r),
            ">=" => i64::from(l >= r),
            "<" => i64::from(l < r),
            ">" => i64::from(l > r),
            // The shift count is taken modulo 64, as the machine does for bash.
            "<<" => l.wrapping_shl(r as u32),
            ">>" => l.wrapping_shr(r as u32),
            "+" => l.wrapping_add(r),
            "-" => l.wrapping_sub(r),
            "*" => l.wrapping_mul(r),
            "/" | "%" if r == 0 => {
                return Err(ArithError("division by 0".into()));
            }
            "/" => l.wrapping_div(r),
            "%" => l.wrapping_rem(r),
            "**" if r < 0 => return Err(ArithError("exponent less than 0".into())),
            "**" => power(l, r),
            _ => return Err(ArithError(format!("unknown operator {op}"))),
        })
    }

    /// `**`, right-associative, binding looser than the unary operators (`-2**2` is 4).
    fn exponent(&mut self) -> Result<i64, ArithError> {
        let base = self.unary()?;
        if !self.eat("**") {
            return Ok(base);
        }
        self.deeper()?;
        let exp = self.exponent()?;
        self.depth -= 1;
        self.binary(base, "**", exp)
    }

    fn unary(&mut self) -> Result<i64, ArithError> {
        self.deeper()?;
        let v = match self.peek().cloned() {
            Some(Tok::Op(op @ ("-" | "+" | "!" | "~"))) => {
                self.at += 1;
                let v = self.unary()?;
                match op {
                    "-" => v.wrapping_neg(),
                    "+" => v,
                    "!" => i64::from(v == 0),
                    _ => !v,
                }
            }
            Some(Tok::Op(op @ ("++" | "--"))) => {
                self.at += 1;
                match self.peek().cloned() {
                    Some(Tok::Name(name)) => {
                        self.at += 1;
                        let v = self.variable(&name)?;
                        let v = if op == "++" {
                            v.wrapping_add(1)
                        } else {
                            v.wrapping_sub(1)
                        };
                        self.store(&name, v);
                        v
                    }
                    // `--3` is two minus signs before a number (and `++3` two plus signs), as
                    // bash reads them: the value unchanged.
                    _ => self.unary()?,
                }
            }
            _ => self.postfix()?,
        };
        self.depth -= 1;
        Ok(v)
    }

    fn postfix(&mut self) -> Result<i64, ArithError> {
        match self.peek().cloned() {
            Some(Tok::Name(name)) => {
                self.at += 1;
                let v = self.variable(&name)?;
                for op in ["++", "--"] {
                    if self.eat(op) {
                        let next = if op == "++" {
                            v.wrapping_add(1)
                        } else {
                            v.wrapping_sub(1)
                        };
                        self.store(&name, next);
                        return Ok(v);
                    }
                }
                Ok(v)
            }
            Some(Tok::Num(n)) => {
                self.at += 1;
                number(&n)
            }
            Some(Tok::Op("(")) => {
                self.at += 1;
                let v = self.comma()?;
                if !self.eat(")") {
                    return Err(ArithError("missing `)'".into()));
                }
                Ok(v)
            }
            _ => Err(ArithError(format!(
                "syntax error: operand expected (error token is \"{}\")",
                self.error_token()
            ))),
        }
    }

    /// A variable's value: its text evaluated as an expression (unset or empty is 0).
    fn variable(&mut self, name: &[u8]) -> Result<i64, ArithError> {
        if self.skip > 0 {
            return Ok(0);
        }
        let Some(text) = self.vars.get(name).filter(|t| !t.is_empty()) else {
            return Ok(0);
        };
        eval_at(&text, self.vars, self.depth + 1)
    }

    fn store(&mut self, name: &[u8], v: i64) {
        if self.skip == 0 {
            self.vars.set(name, v.to_string().into_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Map = BTreeMap<Vec<u8>, Vec<u8>>;

    fn run(expr: &str, vars: &mut Map) -> Result<i64, String> {
        eval(expr.as_bytes(), vars).map_err(|e| e.0)
    }

    /// What bash 5.2 prints for `echo $((expr))` (run by hand here).
    #[test]
    fn expressions_evaluate_as_bashs() {
        let cases: &[(&str, i64)] = &[
            ("-9223372036854775808 / -1", i64::MIN),
            ("-9223372036854775808 % -1", 0),
            ("1 << 64", 1),
            ("1 << 65", 2),
            ("1 << -1", i64::MIN),
            ("-8 >> 1", -4),
            ("0x", 0),
            ("0x1F", 31),
            ("64#@", 62),
            ("64#_", 63),
            ("36#z", 35),
            ("37#z", 35),
            ("99999999999999999999", 7766279631452241919),
            ("9223372036854775807 + 1", i64::MIN),
            ("2**63", i64::MIN),
            ("3**0", 1),
            ("0**0", 1),
            ("010", 8),
            ("1?2:3", 2),
            ("0?1/0:5", 5),
            ("0 && 1/0", 0),
            ("1 || 1/0", 1),
            ("a=5, a*2", 10),
            ("x++ + x", 1),
            ("- -3", 3),
            ("--3", 3),
            ("!0", 1),
            ("~0", -1),
            ("5 % -3", 2),
            ("-5 % 3", -2),
            ("-5 / 2", -2),
            ("1,2", 2),
            ("", 0),
            (" ", 0),
            ("abc", 0),
            ("z=1+2, z*3", 9),
            ("(((1)))", 1),
            ("1 == 1 == 1", 1),
            ("2 < 3 < 1", 0),
            ("-2**2", 4),
            ("2**3**2", 512),
            ("2*(16+100)", 232),
        ];
        for (expr, want) in cases {
            assert_eq!(run(expr, &mut Map::new()), Ok(*want), "$(({expr}))");
        }
    }

    #[test]
    fn errors_are_bashs() {
        let cases: &[(&str, &str)] = &[
            ("2#102", "value too great for base"),
            ("08", "value too great for base"),
            ("1e3", "value too great for base"),
            ("2**-1", "exponent less than 0"),
            ("1/0", "division by 0"),
            ("5%0", "division by 0"),
            ("(1", "missing `)'"),
            ("+", "operand expected"),
            ("1 + ", "operand expected"),
            ("1.5", "invalid arithmetic operator"),
            ("07#1", "invalid number"),
            ("1#1", "invalid arithmetic base"),
            ("65#1", "invalid arithmetic base"),
            ("2#", "invalid integer constant"),
            ("'a'", "invalid arithmetic operator"),
            ("1 ? 2", "`:' expected"),
        ];
        for (expr, want) in cases {
            let got = run(expr, &mut Map::new()).unwrap_err();
            assert!(got.contains(want), "$(({expr})): {got}");
        }
        // bash's error token: from the token it read last to the end (bash 5.2, run here).
        let tokens: &[(&str, &str)] = &[
            ("2*", "operand expected (error token is \"*\")"),
            ("+", "operand expected (error token is \"+\")"),
            ("2+*3", "operand expected (error token is \"*3\")"),
            ("2 3", "syntax error in expression (error token is \"3\")"),
            ("1+2*", "operand expected (error token is \"*\")"),
            (
                "1 ? 2",
                "`:' expected for conditional expression (error token is \"2\")",
            ),
            ("2**", "operand expected (error token is \"**\")"),
            ("1,", "operand expected (error token is \",\")"),
            ("()", "operand expected (error token is \")\")"),
            ("1+(2*)", "operand expected (error token is \")\")"),
        ];
        for (expr, want) in tokens {
            let got = run(expr, &mut Map::new()).unwrap_err();
            assert!(got.ends_with(want), "$(({expr})): {got}");
        }
    }

    #[test]
    fn variables_are_expressions_and_their_chains_are_bounded() {
        let mut vars = Map::from([
            (b"HW_CORES".to_vec(), b"12".to_vec()),
            (b"A".to_vec(), b"B*2".to_vec()),
            (b"B".to_vec(), b"3".to_vec()),
            (b"LOOP".to_vec(), b"LOOP+1".to_vec()),
        ]);
        assert_eq!(run("2*(HW_CORES+100)", &mut vars), Ok(224));
        assert_eq!(run("A", &mut vars), Ok(6));
        assert!(run("LOOP", &mut vars).unwrap_err().contains("recursion"));
        assert_eq!(run("X+=4, X*=2", &mut vars), Ok(8));
        assert_eq!(vars.get(&b"X"[..]), Some(&b"8".to_vec()));
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(run(&deep, &mut vars).unwrap_err().contains("recursion"));
        assert!(run(&"-".repeat(10_000), &mut vars).is_err());
    }
}
