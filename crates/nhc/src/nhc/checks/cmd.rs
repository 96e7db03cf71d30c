//! `check_cmd_status` and `check_cmd_output`: a command run without a shell (its words as NHC
//! splits them, found on NHC's `$PATH`), its process group killed at its timeout, its exit code
//! against `-r` (0) and, for check_cmd_output, its output's lines against `-m` match strings
//! (custom messages with `-M`). Output is kept up to [`OUTPUT_LIMIT`], and the message says
//! when more was dropped. Only from a file only root can change (the reader sees to that).

use super::{LineError, Settings, Verdict, getopts};
use crate::nhc::bytes::{show, words};
use crate::nhc::matching::mcheck;
use crate::nhc::size::number;
use crate::nhc::state::{COMMAND_PATH, find_command};
use std::time::Duration;

/// How much of a command's output is matched.
pub const OUTPUT_LIMIT: usize = 1 << 20;

/// NHC's own watchdog when the file does not set `TIMEOUT`.
const NHC_TIMEOUT: i64 = 30;

/// Runs `check` (check_cmd_status or check_cmd_output) with `args`.
pub fn run(check: &str, args: &[Vec<u8>], settings: &Settings) -> Result<Verdict, LineError> {
    let output = check == "check_cmd_output";
    let spec = if output { "C:M:O:e:m:r:t:" } else { "C:r:t:" };
    let (given, at) = getopts(check, args, spec)?;
    let (mut name, mut secs_text, mut rc_text) = (check.to_string(), b"5".to_vec(), None);
    let (mut matches, mut templates, mut line) = (Vec::new(), Vec::new(), None);
    for (opt, value) in given {
        match opt {
            b'C' => name = show(value),
            b't' => secs_text = value.to_vec(),
            b'r' => rc_text = Some(value.to_vec()),
            b'm' => matches.push(value.to_vec()),
            b'M' => templates.push(value.to_vec()),
            b'e' => line = Some(value.to_vec()),
            _ => {}
        }
    }
    // `-e 'CMD'` is split on blanks, not read as shell; otherwise the words given.
    let (argv, shown): (Vec<Vec<u8>>, String) = match &line {
        Some(l) => (words(l).map(<[u8]>::to_vec).collect(), show(l)),
        None => (args[at..].to_vec(), show(&args[at..].join(&b' '))),
    };
    let Some((program, rest)) = argv.split_first() else {
        return Err(LineError::Fails(format!(
            "{name}:  Syntax error:  No command specified"
        )));
    };
    let nhc_timeout = settings
        .get("TIMEOUT")
        .map_or(Ok(NHC_TIMEOUT), |t| number(t, settings));
    let secs = number(&secs_text, settings);
    if let (Ok(s), Ok(t)) = (&secs, &nhc_timeout) {
        if s > t {
            return Err(LineError::Fails(format!(
                "{name}:  Command timeout {} exceeds NHC timeout {t}",
                show(&secs_text)
            )));
        }
    }
    // A timeout of 0 or less (or no number) stops the command at once, as NHC's timer does.
    let limit = Duration::from_secs(secs.unwrap_or(0).max(0) as u64);
    let path_var = settings.get_or("PATH", COMMAND_PATH);
    let path = find_command(program, path_var).unwrap_or_else(|| {
        use std::os::unix::ffi::OsStringExt;
        std::path::PathBuf::from(std::ffi::OsString::from_vec(program.clone()))
    });
    let (code, lines, truncated) =
        match crate::command::run_capped(&path, &os_args(rest), limit, OUTPUT_LIMIT) {
            Ok(out) => (
                out.code.unwrap_or(-1),
                if output {
                    lines_of(&out.stdout)
                } else {
                    Vec::new()
                },
                out.truncated,
            ),
            Err(crate::command::CommandError::Timeout { .. }) => {
                return Ok(Verdict::fail(
                    Some(shown.clone().into_bytes()),
                    format!(
                        "{name}:  TIMEOUT after {}s for \"{shown}\"; subprocess terminated.",
                        show(&secs_text)
                    ),
                ));
            }
            // The shell's "command not found".
            Err(crate::command::CommandError::Spawn { .. }) => (127, Vec::new(), false),
        };
    let cut = if truncated {
        format!(
            " (health_check kept the first {} MiB of its output)",
            OUTPUT_LIMIT >> 20
        )
    } else {
        String::new()
    };
    let subject = Some(shown.clone().into_bytes());
    let template = |i: usize, default: &str| {
        templates
            .get(i)
            .map_or_else(|| default.to_string(), |t| show(t))
    };
    let negative = |p: &[u8]| p.first() == Some(&b'!');
    let mut matched: Vec<bool> = matches.iter().map(|p| negative(p)).collect();
    let negatives = matched.iter().filter(|m| **m).count();
    let mut hits = 0;
    // NHC's loop runs one line past the last (an empty one).
    for (n, l) in lines
        .iter()
        .map(Vec::as_slice)
        .chain([&b""[..]])
        .enumerate()
    {
        for (i, p) in matches.iter().enumerate() {
            if negative(p) {
                if mcheck(&p[1..], l) {
                    let msg = template(i, "\"%m\" matched at line %l of \"%c\"")
                        .replace("%m", &show(&p[1..]))
                        .replace("%l", &(n + 1).to_string())
                        .replace("%L", &show(l).replace(['"', '`', '$'], ""))
                        .replace("%c", &shown);
                    return Ok(Verdict::fail(subject, format!("{name}:  {msg}.{cut}")));
                }
            } else if !matched[i] && mcheck(p, l) {
                matched[i] = true;
                hits += 1;
                if hits == matches.len() {
                    break;
                }
            }
        }
    }
    hits += negatives;
    let want = rc_text
        .as_ref()
        .map_or(Ok(0), |r| number(r, settings).map(|r| r as i32));
    if want.is_ok_and(|w| w != code) {
        let expected = rc_text
            .as_ref()
            .map_or(String::new(), |r| format!(" (expected {})", show(r)));
        return Ok(Verdict::fail(
            subject,
            format!("{name}:  {code}{expected} returned by \"{shown}\".{cut}"),
        ));
    }
    if hits == matches.len() {
        return Ok(Verdict::pass(subject));
    }
    let failure = if hits == 0 && matches.len() == 1 {
        template(0, "\"%m\" failed to match \"%c\" output")
            .replace("%m", &show(&matches[0]))
            .replace("%c", &shown)
    } else {
        let i = matched.iter().position(|m| !m).unwrap_or(0);
        template(
            i,
            "\"%m\" failed to match \"%c\" output (%f patterns failed)",
        )
        .replace("%m", &show(&matches[i]))
        .replace("%c", &shown)
        .replace("%f", &format!("{}/{}", matches.len() - hits, matches.len()))
    };
    Ok(Verdict::fail(subject, format!("{name}:  {failure}.{cut}")))
}

/// The output's lines as NHC holds them (`IFS=$'\n'; LINES=( $(cmd) )`): empty lines and NUL
/// bytes gone.
fn lines_of(out: &[u8]) -> Vec<Vec<u8>> {
    out.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| l.iter().copied().filter(|b| *b != 0).collect())
        .collect()
}

fn os_args(words: &[Vec<u8>]) -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    words
        .iter()
        .map(|w| std::ffi::OsString::from_vec(w.clone()))
        .collect()
}
