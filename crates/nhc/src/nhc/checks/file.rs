//! NHC's file checks: `check_file_test` (the shell's `test` operators), `check_file_stat` (what
//! `stat` says of a file, in NHC's fixed order of conditions) and `check_file_contents` (lines
//! matching match strings). Files are opened once, without blocking, and read with a bound.

use super::{Ctx, LineError, Outcome, Verdict, getopts};
use crate::nhc::bash::read::Lines;
use crate::nhc::bash::{expand, words};
use crate::nhc::bytes::show;
use crate::nhc::matching::mcheck;
use crate::nhc::size::{lt, number};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How much of a file `check_file_contents` reads: past it, the verdict is taken on what was
/// read, and the message says so.
pub const CONTENTS_LIMIT: u64 = 16 << 20;

/// One condition of check_file_stat: the failure for the wanted value, if any.
type Judge<'a> = Box<dyn Fn(&[u8]) -> Option<String> + 'a>;

fn path(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// `check_file_test [-!] -OP... FILE...`: every operator holds for every file (`-!`: some
/// does not). NHC runs `eval test OP "FILE"`, so a file's name is read as shell once more: a
/// name that splits into several words makes `test` fail with 2, as there.
pub fn test(args: &[Vec<u8>], cx: &Ctx) -> Outcome {
    let check = "check_file_test";
    let (mut ops, mut files, mut negate) = (Vec::new(), Vec::new(), false);
    for a in args {
        match a.as_slice() {
            b"-!" => negate = true,
            [b'-', op] if b"abcdefghkprstuwxOGLSN".contains(op) => ops.push(*op),
            [b'-', ..] => {
                return Err(LineError::Fails(format!(
                    "{check}:  Syntax error:  Invalid/unsupported operator \"{}\".",
                    show(a)
                )));
            }
            _ => files.push(a.as_slice()),
        }
    }
    if ops.is_empty() || files.is_empty() {
        return Err(LineError::Fails(format!(
            "{check}:  Syntax error:  Missing parameters."
        )));
    }
    let mut last = (0u8, &b""[..], 0);
    for &op in &ops {
        for &f in &files {
            let result = test_as_eval(op, f, cx);
            last = (op, f, result);
            if result != 0 {
                if negate {
                    return Ok(vec![Verdict::pass(Some(files.join(&b' ')))]);
                }
                return Ok(vec![Verdict::fail(
                    Some(f.to_vec()),
                    format!("{check}:  -{} {} returned {result}.", op as char, show(f)),
                )]);
            }
        }
    }
    if negate {
        let (op, f, result) = last;
        return Ok(vec![Verdict::fail(
            Some(f.to_vec()),
            format!("{check}:  -{} {} returned {result}.", op as char, show(f)),
        )]);
    }
    Ok(vec![Verdict::pass(Some(files.join(&b' ')))])
}

/// `eval test -OP FILE`: the name read as shell words, then `test` on them (0 true, 1 false, 2
/// a usage error).
fn test_as_eval(op: u8, file: &[u8], cx: &Ctx) -> i32 {
    let mut vars = cx.settings.vars().clone();
    // Read after a name of our own, as `test -OP` stands before it in NHC's eval: the file's
    // first word is an argument (expanded, `$x` and all), never a command or an assignment.
    let line = [&b"test "[..], file].concat();
    let words = words::parse(&line)
        .ok()
        .and_then(|c| expand::args(&c.args, &mut vars).ok());
    match words.as_deref() {
        None => 2,
        // `test -e` alone is a non-empty string: true.
        Some([]) => 0,
        Some([f]) => i32::from(!test_one(op, f)),
        Some(_) => 2,
    }
}

/// `test -OP FILE`, as the shell's.
fn test_one(op: u8, file: &[u8]) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    if file.is_empty() {
        return false;
    }
    let p = path(file);
    let link = std::fs::symlink_metadata(p);
    let access = |mode: nix::unistd::AccessFlags| {
        nix::unistd::faccessat(
            nix::fcntl::AT_FDCWD,
            p,
            mode,
            nix::fcntl::AtFlags::AT_EACCESS,
        )
        .is_ok()
    };
    if matches!(op, b'h' | b'L') {
        return link.is_ok_and(|l| l.file_type().is_symlink());
    }
    if op == b't' {
        // A file descriptor that is a terminal: the argument is a number, not a file.
        return false;
    }
    let Ok(md) = std::fs::metadata(p) else {
        return false;
    };
    let mode = md.permissions().mode();
    let ft = md.file_type();
    match op {
        b'a' | b'e' => true,
        b'b' => ft.is_block_device(),
        b'c' => ft.is_char_device(),
        b'd' => ft.is_dir(),
        b'f' => ft.is_file(),
        b'g' => mode & 0o2000 != 0,
        b'k' => mode & 0o1000 != 0,
        b'p' => ft.is_fifo(),
        b'r' => access(nix::unistd::AccessFlags::R_OK),
        b's' => md.len() > 0,
        b'u' => mode & 0o4000 != 0,
        b'w' => access(nix::unistd::AccessFlags::W_OK),
        b'x' => access(nix::unistd::AccessFlags::X_OK),
        b'O' => md.uid() == nix::unistd::geteuid().as_raw(),
        b'G' => md.gid() == nix::unistd::getegid().as_raw(),
        b'S' => ft.is_socket(),
        b'N' => md.mtime() > md.atime(),
        _ => false,
    }
}

/// `check_file_stat [-m MODE] [-M MODE] [-u UID] [-g GID] [-U USER] [-G GROUP] [-d DEV]
/// [-t MAJOR] [-T MINOR] [-n|-o|-N|-O SECS] FILE...`: what `stat` says of each file (the file
/// itself, a link not followed), the conditions checked in NHC's order, the first unmet one
/// failing. Numbers compare as bash arithmetic: a mode is octal only when written with a 0.
pub fn stat(args: &[Vec<u8>], cx: &Ctx) -> Outcome {
    use std::os::unix::fs::MetadataExt;
    let check = "check_file_stat";
    let (given, at) = getopts(check, args, "D:G:M:N:O:T:U:d:g:m:n:o:t:u:")?;
    // The last value of each option, as NHC keeps it.
    let want = |c: u8| -> Option<&[u8]> {
        given
            .iter()
            .rev()
            .find(|(o, _)| *o == c || (c == b'd' && *o == b'D'))
            .map(|(_, v)| *v)
            .filter(|v| !v.is_empty())
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let num = |text: &[u8]| number(text, cx.settings);
    let ago = |secs: &[u8]| -> Result<i64, LineError> {
        num(secs).map(|s| now.wrapping_sub(s)).map_err(|e| {
            LineError::Abandons(format!("{}: {e} (in NHC's time arithmetic)", show(secs)))
        })
    };
    let mut out = Vec::new();
    for f in &args[at..] {
        let shown = show(f);
        let md = match std::fs::symlink_metadata(path(f)) {
            Ok(md) => md,
            Err(_) => {
                out.push(Verdict::fail(
                    Some(f.clone()),
                    format!("{check}:  stat({shown}) returned 1:  "),
                ));
                // NHC dies at the first file that fails: the rest are not looked at.
                break;
            }
        };
        let mode = format!("0{:o}", md.mode() & 0o7777);
        let rdev = md.rdev();
        let dev = md.dev();
        // glibc's `major`/`minor` of a device number.
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
        let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
        let user =
            cx.m.user_name(md.uid())
                .unwrap_or_else(|| b"UNKNOWN".to_vec());
        let group =
            cx.m.group_name(md.gid())
                .unwrap_or_else(|| b"UNKNOWN".to_vec());
        let file = format!("{check}:  File \"{shown}\"");
        let ne = |have: i64, w: &[u8]| num(w).is_ok_and(|w| w != have);
        let mut failure = None;
        if let Some(w) = want(b'N') {
            if lt(&Ok(md.ctime()), &Ok(ago(w)?)) {
                failure = Some(format!("{file} ctime is not newer than {}s", show(w)));
            }
        }
        if failure.is_none() {
            if let Some(w) = want(b'O') {
                if !lt(&Ok(md.ctime()), &Ok(ago(w)?)) {
                    failure = Some(format!("{file} ctime is not older than {}s", show(w)));
                }
            }
        }
        let checks: [(u8, Judge); 7] = [
            (
                b'd',
                Box::new(|w| {
                    ne(dev as i64, w).then(|| {
                        format!("{file} device number is 0x{dev:x}; should be {}", show(w))
                    })
                }),
            ),
            (
                b'g',
                Box::new(|w| {
                    (md.gid().to_string().as_bytes() != w).then(|| {
                        format!("{file} GID is \"{}\"; should be \"{}\"", md.gid(), show(w))
                    })
                }),
            ),
            (
                b'u',
                Box::new(|w| {
                    (md.uid().to_string().as_bytes() != w).then(|| {
                        format!("{file} UID is \"{}\"; should be \"{}\"", md.uid(), show(w))
                    })
                }),
            ),
            (
                b'G',
                Box::new(|w| {
                    (group.as_slice() != w).then(|| {
                        format!(
                            "{file} groupname is \"{}\"; should be \"{}\"",
                            show(&group),
                            show(w)
                        )
                    })
                }),
            ),
            (
                b't',
                Box::new(|w| {
                    ne(major as i64, w).then(|| {
                        format!(
                            "{file} has device major number 0x{major:x}; should be {}",
                            show(w)
                        )
                    })
                }),
            ),
            (
                b'T',
                Box::new(|w| {
                    ne(minor as i64, w).then(|| {
                        format!(
                            "{file} has device minor number 0x{minor:x}; should be {}",
                            show(w)
                        )
                    })
                }),
            ),
            (
                b'm',
                Box::new(|w| {
                    let have = num(mode.as_bytes()).unwrap_or(0);
                    ne(have, w)
                        .then(|| format!("{file} has permissions {mode}; should be {}", show(w)))
                }),
            ),
        ];
        for (opt, judge) in &checks {
            if failure.is_some() {
                break;
            }
            if let Some(w) = want(*opt) {
                failure = judge(w);
            }
        }
        if failure.is_none() {
            if let Some(w) = want(b'M') {
                let have = num(mode.as_bytes()).unwrap_or(0);
                // `$((MODE & WANT))` in NHC's function: no number there ends its run.
                let bits = num(w).map_err(|e| {
                    LineError::Abandons(format!("{}: {e} (in NHC's mode arithmetic)", show(w)))
                })?;
                if have & bits != bits {
                    failure = Some(format!(
                        "{file} has permissions {mode}; should be at least {}",
                        show(w)
                    ));
                }
            }
        }
        if failure.is_none() {
            if let Some(w) = want(b'n') {
                if lt(&Ok(md.mtime()), &Ok(ago(w)?)) {
                    failure = Some(format!("{file} mtime is not newer than {}s", show(w)));
                }
            }
        }
        if failure.is_none() {
            if let Some(w) = want(b'o') {
                if !lt(&Ok(md.mtime()), &Ok(ago(w)?)) {
                    failure = Some(format!("{file} mtime is not older than {}s", show(w)));
                }
            }
        }
        if failure.is_none() {
            if let Some(w) = want(b'U') {
                if user.as_slice() != w {
                    failure = Some(format!(
                        "{file} username is \"{}\"; should be \"{}\"",
                        show(&user),
                        show(w)
                    ));
                }
            }
        }
        let failed = failure.is_some();
        out.push(Verdict::judged(Some(f.clone()), failure));
        if failed {
            break;
        }
    }
    Ok(out)
}

/// `check_file_contents FILE MATCH...`: each plain match string matches some line, and no
/// negated one (`!x`) matches any, the lines read as `read` gives them. Streamed: reading stops
/// once the verdict is known, and after [`CONTENTS_LIMIT`] bytes (said in the message). A file
/// that cannot be opened has no lines, as NHC's redirection gives none.
pub fn contents(args: &[Vec<u8>]) -> Result<Verdict, LineError> {
    let check = "check_file_contents";
    let file = args.first().cloned().unwrap_or_default();
    let patterns = args.get(1..).unwrap_or(&[]);
    let shown = show(&file);
    let negative = |p: &[u8]| p.first() == Some(&b'!');
    let mut matched: Vec<bool> = patterns.iter().map(|p| negative(p)).collect();
    let negatives = matched.iter().filter(|m| **m).count();
    let mut hits = 0usize;
    let subject = Some(file.clone());
    if is_device(&file) {
        return Ok(Verdict {
            subject,
            failure: None,
            note: None,
            skip: Some(format!(
                "{check}:  \"{shown}\" is a device: health_check does not open one as root \
                 (opening some acts: a watchdog's arms it); NHC would read it"
            )),
        });
    }
    let Some(reader) = open_bounded(&file) else {
        return Ok(contents_verdict(
            check,
            &shown,
            patterns,
            &matched,
            hits + negatives,
            subject,
            false,
        ));
    };
    let mut lines = Lines::new(reader, CONTENTS_LIMIT);
    for line in lines.by_ref() {
        for (i, p) in patterns.iter().enumerate() {
            if matched[i] {
                if negative(p) && mcheck(&p[1..], &line.bytes) {
                    return Ok(Verdict::fail(
                        subject,
                        format!(
                            "{check}:  File \"{shown}\" line {} matches \"{}\".",
                            line.number,
                            show(&p[1..])
                        ),
                    ));
                }
            } else if mcheck(p, &line.bytes) {
                matched[i] = true;
                hits += 1;
                if hits == patterns.len() {
                    return Ok(Verdict::pass(subject));
                }
            }
        }
    }
    Ok(contents_verdict(
        check,
        &shown,
        patterns,
        &matched,
        hits + negatives,
        subject,
        lines.truncated,
    ))
}

fn contents_verdict(
    check: &str,
    shown: &str,
    patterns: &[Vec<u8>],
    matched: &[bool],
    count: usize,
    subject: Option<Vec<u8>>,
    truncated: bool,
) -> Verdict {
    let cut = if truncated {
        format!(
            " (health_check read its first {} MiB only)",
            CONTENTS_LIMIT >> 20
        )
    } else {
        String::new()
    };
    if count == patterns.len() {
        let mut v = Verdict::pass(subject);
        if truncated {
            v.note = Some(format!("{check}:  File \"{shown}\"{cut}"));
        }
        return v;
    }
    if count == 0 && patterns.len() == 1 {
        return Verdict::fail(
            subject,
            format!(
                "{check}:  File \"{shown}\" failed to match \"{}\".{cut}",
                show(&patterns[0])
            ),
        );
    }
    let first = patterns
        .iter()
        .zip(matched)
        .find(|(_, m)| !**m)
        .map(|(p, _)| show(p))
        .unwrap_or_default();
    Verdict::fail(
        subject,
        format!(
            "{check}:  File \"{shown}\" matched {count}/{} patterns.  First failed match:  \"{first}\".{cut}",
            patterns.len()
        ),
    )
}

/// Whether `file` (its last link followed, as NHC's redirection follows it) is a device.
fn is_device(file: &[u8]) -> bool {
    use std::os::unix::fs::FileTypeExt;
    !file.is_empty()
        && std::fs::metadata(path(file))
            .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_block_device())
}

/// `file` opened once, following links as NHC's redirection does, without blocking, buffered;
/// only a regular file (what the check's files are: a pipe never hangs the run, and a device a
/// user's link names is never opened as root, since opening some acts: a watchdog's arms it).
fn open_bounded(file: &[u8]) -> Option<std::io::BufReader<std::fs::File>> {
    if file.is_empty() {
        return None;
    }
    crate::trust::open_inert(path(file), true)
        .ok()
        .map(|(f, _)| std::io::BufReader::new(f))
}
