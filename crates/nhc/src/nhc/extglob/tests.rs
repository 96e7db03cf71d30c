use super::*;

fn m(p: &str, t: &[u8]) -> bool {
    compile(p.as_bytes()).unwrap().is_match(t)
}

/// What bash 5.2's `[[ text == pattern ]]` gives (run by hand, C locale).
#[test]
fn extended_patterns_match_as_bashs() {
    assert!(m("+(a|b|c)", b"abc"));
    assert!(!m("+(a|b)", b""));
    assert!(m("*(a)", b""));
    assert!(m("?(x)y", b"y") && m("?(x)y", b"xy") && !m("?(x)y", b"xxy"));
    assert!(m("@(ab|cd)*", b"cdzz") && !m("@(ab|cd)", b"abcd"));
    assert!(m("n+([0-9]).*", b"n0042.cluster"));
    assert!(m("*(+(a)b)", b"aabab"));
    assert!(m("[!a]+(x)", b"bxx") && !m("[!a]+(x)", b"axx"));
    assert!(m("+([[:digit:]])", b"123") && !m("+([[:digit:]])", b"12a"));
    assert!(m("*\\(x\\)", b"a(x)"));
    assert!(m("+(\\|)", b"||"));
    assert!(m("[]a]+(b)", b"]b"));
    assert!(m("x?(y)", b"x") && m("?", b"\xff"));
    assert!(m("!(a|b)", b"c") && !m("!(a|b)", b"a") && m("!(a)", b"aa"));
    assert!(compile(b"*!(a)*!(b)c").is_err() && compile(b"!(a)b(").is_err());
    assert!(compile(b"+(a").is_err());
}

/// The patterns that crashed or stalled the C library's fnmatch match in linear time here.
#[test]
fn runaway_patterns_take_linear_time() {
    let long = vec![b'a'; 64 * 1024];
    for p in ["+(a|aa)b", "*(a)*(a)*(a)b", "*(a)b", "+(+(a))b"] {
        let started = std::time::Instant::now();
        assert!(!m(p, &long), "{p}");
        // Generous: a debug build on a busy machine; the C library never returned.
        assert!(started.elapsed().as_secs() < 5, "{p}");
    }
}

/// A pattern of the generator: pieces, and operators nesting them.
fn pattern(rng: &mut u64, depth: u32) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"a", b"b", b"*", b"?", b"[ab]", b"[!a]", b"[a-b]", b"\\*", b"\\)", b"[]a]", b"\\|",
    ];
    let mut next = |n: u64| {
        // xorshift: the same cases on every run.
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng % n
    };
    let mut p = Vec::new();
    for _ in 0..=next(3) {
        if depth < 3 && next(3) == 0 {
            p.push(b"?*+@"[next(4) as usize]);
            p.push(b'(');
            let alternatives = 1 + next(2);
            let mut seed = next(u64::MAX) | 1;
            for k in 0..alternatives {
                if k > 0 {
                    p.push(b'|');
                }
                p.extend(pattern(&mut seed, depth + 1));
            }
            p.push(b')');
        } else {
            p.extend_from_slice(PIECES[next(PIECES.len() as u64) as usize]);
        }
    }
    p
}

/// Beside bash itself (`shopt -s extglob; [[ $text == $pattern ]]`, NHC's matcher) on 3000
/// generated patterns and texts, in one bash process.
#[test]
fn agrees_with_bash_on_generated_patterns() {
    use std::io::Write;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut cases = Vec::new();
    for _ in 0..3000 {
        let p = pattern(&mut rng, 0);
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let t: Vec<u8> = (0..rng % 7)
            .map(|k| b"ab*|)"[((rng >> (k * 3)) % 5) as usize])
            .collect();
        cases.push((p, t));
    }
    let mut input = Vec::new();
    for (p, t) in &cases {
        input.extend_from_slice(p);
        input.push(b'\n');
        input.extend_from_slice(t);
        input.push(b'\n');
    }
    let script = "shopt -s extglob; while IFS= read -r p && IFS= read -r t; do \
                  if [[ $t == $p ]]; then echo 1; else echo 0; fi; done";
    let mut bash = match std::process::Command::new("bash")
        .args(["--norc", "-c", script])
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("skipped: no bash to compare with ({e})");
            return;
        }
    };
    bash.stdin.take().unwrap().write_all(&input).unwrap();
    let out = bash.wait_with_output().unwrap();
    let said: Vec<bool> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| l == b"1")
        .collect();
    assert_eq!(said.len(), cases.len());
    let hits = said.iter().filter(|m| **m).count();
    assert!(
        hits > cases.len() / 10 && hits < cases.len() * 9 / 10,
        "the cases tell nothing: {hits} of {} match",
        cases.len()
    );
    let mut differ = Vec::new();
    for ((p, t), bash) in cases.iter().zip(said) {
        let ours = match compile(p) {
            Ok(re) => re.is_match(t),
            Err(e) => panic!("{}: {e}", String::from_utf8_lossy(p)),
        };
        if ours != bash {
            differ.push(format!(
                "{:?} on {:?}: bash {bash}",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(t)
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {}:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}
