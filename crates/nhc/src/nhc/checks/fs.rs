//! NHC's file system checks: `check_fs_mount` (and `_rw`, `_ro`), `check_fs_free`, `_used`,
//! `_ifree`, `_iused`, `check_fs_size` and `check_fs_inodes`.

use super::{Ctx, Outcome, Verdict, getopts};
use crate::nhc::bytes::show;
use crate::nhc::matching::{as_printed, mcheck};
use crate::nhc::size::{
    Held, Limit, lt, parse_count, parse_limit, parse_size, show_held, show_size,
};
use crate::nhc::state::{Mount, Space};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// Whether the mount table's `point` is the one asked for. NHC reads /proc/mounts with
/// `read`, which drops the backslash of the kernel's escapes (`/a\040b` becomes `/a040b`): a
/// file written for NHC names such a mount point so, and that spelling is honoured beside the
/// real one.
fn same_point(m: &Mount, asked: &[u8]) -> bool {
    if m.point == asked {
        return true;
    }
    let escaped = m
        .point
        .iter()
        .any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\\'));
    escaped && nhc_spelling(&m.point) == asked
}

/// Whether a field of the mount table (its source, type or options) matches `pat` as written
/// for NHC, which reads the field with the kernel's escapes mangled (`hcd\040src` as
/// `hcd040src`): either spelling matches, and a negated match string must miss both.
fn field_matches(pat: &[u8], field: &[u8]) -> bool {
    let escaped = field
        .iter()
        .any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\\'));
    if !escaped {
        return mcheck(pat, field);
    }
    let mangled = nhc_spelling(field);
    if pat.starts_with(b"!") {
        mcheck(pat, field) && mcheck(pat, &mangled)
    } else {
        mcheck(pat, field) || mcheck(pat, &mangled)
    }
}

/// A mount point as NHC holds it: the kernel's octal escape with its backslash dropped.
fn nhc_spelling(point: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for &b in point {
        match b {
            b' ' => out.extend_from_slice(b"040"),
            b'\t' => out.extend_from_slice(b"011"),
            b'\n' => out.extend_from_slice(b"012"),
            b'\\' => out.extend_from_slice(b"134"),
            b => out.push(b),
        }
    }
    out
}

/// `check_fs_mount`: each mount point mounted (the table's last entry for it), from a source,
/// of a type and with options matching the match strings, up to the first that fails (NHC
/// dies there). `-r`, `-e`, `-E` and the creation of a missing directory are said, never done.
pub fn mount(args: &[Vec<u8>], mode: Option<&[u8]>, cx: &Ctx) -> Outcome {
    let check = "check_fs_mount";
    let mut points: Vec<Vec<u8>> = Vec::new();
    let (mut sources, mut types, mut opts) = (Vec::new(), Vec::new(), Vec::new());
    let (mut non_fatal, mut acts) = (false, Vec::new());
    let mut autofs: Vec<Vec<u8>> = Vec::new();
    let old_form = args.first().is_some_and(|a| a.starts_with(b"/"));
    if let Some(mode) = mode {
        if !old_form {
            opts.push(mode.to_vec());
        }
    }
    if old_form {
        points.push(args[0].clone());
        let given = |i: usize| args.get(i).filter(|s| !s.is_empty()).cloned();
        sources.extend(given(1));
        types.extend(given(2));
        match mode {
            Some(mode) => opts.push(mode.to_vec()),
            None => opts.extend(given(3)),
        }
    } else {
        // NHC's check_fs_mount names the whole line ($CHECK) in its option errors.
        let line = cx.settings.get("CHECK").map_or(check.into(), show);
        let (given, at) = getopts(&line, args, "0rE:F:O:e:f:o:s:t:")?;
        for (opt, value) in given {
            match opt {
                b'0' => non_fatal = true,
                b'r' => acts.push("remount it".to_string()),
                b'f' => points.push(value.to_vec()),
                b'F' => autofs.push(value.to_vec()),
                b's' => sources.push(value.to_vec()),
                b't' => types.push(value.to_vec()),
                b'o' => opts.push(value.to_vec()),
                b'e' => acts.push(format!("run \"{}\"", show(value))),
                _ => {}
            }
        }
        // NHC takes operands up to the first empty one, and looks at `-F`'s after the rest.
        points.extend(args[at..].iter().take_while(|a| !a.is_empty()).cloned());
        points.append(&mut autofs);
    }
    let mounts = cx.m.mounts();
    let mut out = Vec::new();
    for p in points {
        let shown = show(&p);
        // NHC keeps the first position of a mount point with the last entry's fields.
        let Some(mt) = mounts.iter().rev().find(|x| same_point(x, &p)) else {
            let mut acts = acts.clone();
            let missing = if std::path::Path::new(OsStr::from_bytes(&p)).is_dir() {
                String::new()
            } else {
                // NHC creates it ("auto-fixed"): said, not done.
                acts.insert(0, "create the directory".to_string());
                format!("; directory {shown} missing")
            };
            out.push(fatal(
                &p,
                format!("{check}:  {shown} not mounted{missing}"),
                non_fatal,
                &acts,
            ));
            if non_fatal {
                continue;
            }
            // NHC dies at the first mount point that fails: the rest are not looked at.
            break;
        };
        let should = |pat: &[u8]| match pat.strip_prefix(b"!") {
            Some(p) => format!("should NOT match {}", show(p)),
            None => format!("should match {}", show(pat)),
        };
        let wrong = if let Some(s) = sources.iter().find(|s| !field_matches(s, &mt.source)) {
            Some(format!(
                "{check}:  {shown} mounted from {} ({})",
                show(&mt.source),
                should(s)
            ))
        } else if let Some(t) = types.iter().find(|t| !field_matches(t, &mt.fstype)) {
            Some(format!(
                "{check}:  {shown} has incorrect type {} ({})",
                show(&mt.fstype),
                should(t)
            ))
        } else {
            opts.iter()
                .find(|o| !field_matches(o, &mt.options))
                .map(|o| format!("{check}:  {shown} mount options incorrect ({})", should(o)))
        };
        let stops = wrong.is_some() && !non_fatal;
        out.push(match wrong {
            Some(msg) => fatal(&p, msg, non_fatal, &acts),
            None => Verdict::pass(Some(p)),
        });
        if stops {
            break;
        }
    }
    Ok(out)
}

/// A failure, or with `-0` a pass that says it; what NHC would have done is said, not done.
fn fatal(subject: &[u8], message: String, non_fatal: bool, acts: &[String]) -> Verdict {
    let note = (!acts.is_empty()).then(|| {
        format!(
            "NHC would {} (health_check does not act on the node)",
            acts.join(" and ")
        )
    });
    if non_fatal {
        Verdict {
            subject: Some(subject.to_vec()),
            failure: None,
            note: Some(match &note {
                // NHC says what it set off; this sets off nothing and says what NHC would do.
                Some(act) => format!("{message} (non-fatal); {act}"),
                None => format!("{message} (non-fatal)"),
            }),
            skip: None,
        }
    } else {
        Verdict {
            subject: Some(subject.to_vec()),
            failure: Some(message),
            note,
            skip: None,
        }
    }
}

/// The mounted file system at `point` (named as the kernel, NHC's `read` or `df` spell it), or
/// `None` where none is listed there (NHC then passes silently). With NHC's own df flags
/// (`-Tka`, `-Tia`: every file system) that is the mount table and statvfs. A site's
/// `DF_FLAGS`/`DFI_FLAGS` choose what df lists (`-l`: local file systems only, without `-a`
/// one entry per device), so then df runs with them, as NHC runs it, and its first line for
/// the point decides. `Err`: df gave no answer to judge by (NHC would pass on an empty list).
fn space_at(point: &[u8], cx: &Ctx, inodes: bool) -> Result<Option<Space>, String> {
    let (name, default): (&str, &[u8]) = if inodes {
        ("DFI_FLAGS", b"-Tia")
    } else {
        ("DF_FLAGS", b"-Tka")
    };
    let flags = cx
        .settings
        .get(name)
        .filter(|f| !f.is_empty())
        .unwrap_or(default);
    match cx.m.df_rows(inodes, flags) {
        None => {
            let mounts = cx.m.mounts();
            let found = mounts
                .iter()
                .rev()
                .find(|x| same_point(x, point) || *as_printed(&x.point) == *point);
            Ok(found.and_then(|mt| cx.m.space(&mt.point)))
        }
        Some(Err(e)) => Err(format!(
            "`df {}` ({name}) listed nothing ({e}): NHC would find no file system and pass",
            show(flags)
        )),
        Some(Ok(rows)) => {
            let Some(row) = rows.iter().find(|r| r.point == point) else {
                return Ok(None);
            };
            let [Some(size), Some(used), Some(free)] = row.numbers else {
                return Err(format!(
                    "`df {}` ({name}) printed no number for {}: NHC's arithmetic would stop on it",
                    show(flags),
                    show(point)
                ));
            };
            Ok(Some(if inodes {
                Space {
                    size_kb: 0,
                    used_kb: 0,
                    avail_kb: 0,
                    inodes: size,
                    inodes_free: free,
                }
            } else {
                Space {
                    size_kb: size,
                    used_kb: used,
                    avail_kb: free,
                    inodes: 0,
                    inodes_free: 0,
                }
            }))
        }
    }
}

/// [`space_at`] as a check's verdict when it cannot say: a skip, with why.
fn listed(point: &[u8], cx: &Ctx, inodes: bool) -> Result<Option<Space>, Verdict> {
    space_at(point, cx, inodes).map_err(|why| Verdict {
        subject: Some(point.to_vec()),
        failure: None,
        note: None,
        skip: Some(why),
    })
}

fn arg(args: &[Vec<u8>], i: usize) -> &[u8] {
    args.get(i).map_or(&b""[..], Vec::as_slice)
}

/// `check_fs_free`, `_used`, `_ifree`, `_iused MP LIMIT`: df's free/used space or inodes
/// against a share (`3%`) or an amount; no limit, a mount point df does not list, or a pseudo
/// file system (size 0) passes, as NHC.
pub fn space(check: &str, args: &[Vec<u8>], cx: &Ctx) -> Outcome {
    let point = arg(args, 0).to_vec();
    let limit = arg(args, 1);
    let inodes = check.contains("_i");
    let subject = Some(point.clone());
    let s = match listed(&point, cx, inodes) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(vec![Verdict::pass(subject)]),
        Err(v) => return Ok(vec![v]),
    };
    let whole = if inodes { s.inodes } else { s.size_kb };
    if whole == 0 {
        return Ok(vec![Verdict::pass(subject)]);
    }
    let Some(lim) = parse_limit(limit, !inodes, cx.settings)? else {
        return Ok(vec![Verdict::pass(subject)]);
    };
    let pct = if inodes {
        s.inodes_used_pct()
    } else {
        s.used_pct()
    } as i64;
    let (used, free) = if inodes {
        (s.inodes.saturating_sub(s.inodes_free), s.inodes_free)
    } else {
        (s.used_kb, s.avail_kb)
    };
    let (used, free) = (used as i64, free as i64);
    let p = show(&point);
    let limit = show(limit);
    // NHC writes a measured size with its unit but a measured inode count as the plain number,
    // and a limit back as it parsed it (`50k`, `32GB`).
    let amount = |n: i64| if inodes { n.to_string() } else { show_size(n) };
    let limit_of = |h: &Held| show_held(h, !inodes);
    let message = match (check, &lim) {
        ("check_fs_free", Limit::Percent(min)) if lt(&Ok(100 - pct), &min.value) => Some(format!(
            "{check}:  {p} has only {}% free ({}), minimum is {limit}",
            100 - pct,
            amount(free)
        )),
        ("check_fs_free", Limit::Amount(min)) if lt(&Ok(free), &min.value) => Some(format!(
            "{check}:  {p} has only {} free, minimum is {}",
            amount(free),
            limit_of(min)
        )),
        ("check_fs_used", Limit::Percent(max))
            if !lt(&Ok(pct), &max.value) && max.value.is_ok() =>
        {
            Some(format!(
                "{check}:  {p} is {pct}% full ({}), threshold is {limit}",
                amount(used)
            ))
        }
        ("check_fs_used", Limit::Amount(max))
            if !lt(&Ok(used), &max.value) && max.value.is_ok() =>
        {
            Some(format!(
                "{check}:  {p} has {} used, threshold is {}",
                amount(used),
                limit_of(max)
            ))
        }
        ("check_fs_ifree", Limit::Percent(min)) if lt(&Ok(100 - pct), &min.value) => Some(format!(
            "{check}:  {p} has only {}% of inodes free ({}), minimum is {limit}",
            100 - pct,
            amount(free)
        )),
        ("check_fs_ifree", Limit::Amount(min)) if lt(&Ok(free), &min.value) => Some(format!(
            "{check}:  {p} has only {} inodes free, minimum is {}",
            amount(free),
            limit_of(min)
        )),
        ("check_fs_iused", Limit::Percent(max))
            if !lt(&Ok(pct), &max.value) && max.value.is_ok() =>
        {
            Some(format!(
                "{check}:  {p} has {pct}% of inodes used ({}), threshold is {limit}",
                amount(used)
            ))
        }
        ("check_fs_iused", Limit::Amount(max))
            if !lt(&Ok(used), &max.value) && max.value.is_ok() =>
        {
            Some(format!(
                "{check}:  {p} has {} inodes used, threshold is {}",
                amount(used),
                limit_of(max)
            ))
        }
        _ => None,
    };
    Ok(vec![Verdict::judged(subject, message)])
}

/// `check_fs_size MP [MIN] [MAX]`: the file system's size in kB within the bounds.
pub fn size(args: &[Vec<u8>], cx: &Ctx) -> Outcome {
    let check = "check_fs_size";
    let point = arg(args, 0).to_vec();
    let min = parse_size(arg(args, 1), cx.settings)?;
    let max = parse_size(arg(args, 2), cx.settings)?;
    let subject = Some(point.clone());
    let s = match listed(&point, cx, false) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(vec![Verdict::pass(subject)]),
        Err(v) => return Ok(vec![v]),
    };
    if s.size_kb == 0 {
        return Ok(vec![Verdict::pass(subject)]);
    }
    let have = Ok(s.size_kb as i64);
    let p = show(&point);
    let shown = |h: &Held| show_held(h, true);
    let message = if let Some(min) = min.as_ref().filter(|m| lt(&have, &m.value)) {
        Some(format!(
            "{check}:  {p} size {} less than minimum of {}",
            show_size(s.size_kb as i64),
            shown(min)
        ))
    } else {
        max.as_ref().filter(|m| lt(&m.value, &have)).map(|max| {
            format!(
                "{check}:  {p} size {} exceeds maximum of {}",
                show_size(s.size_kb as i64),
                shown(max)
            )
        })
    };
    Ok(vec![Verdict::judged(subject, message)])
}

/// `check_fs_inodes MP [MIN] [MAX]`: the file system's inode count within the bounds.
pub fn inodes(args: &[Vec<u8>], cx: &Ctx) -> Outcome {
    let check = "check_fs_inodes";
    let point = arg(args, 0).to_vec();
    let min = parse_count(arg(args, 1), cx.settings)?;
    let max = parse_count(arg(args, 2), cx.settings)?;
    let subject = Some(point.clone());
    let s = match listed(&point, cx, true) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(vec![Verdict::pass(subject)]),
        Err(v) => return Ok(vec![v]),
    };
    if s.inodes == 0 {
        return Ok(vec![Verdict::pass(subject)]);
    }
    let have = Ok(s.inodes as i64);
    let p = show(&point);
    let shown = |h: &Held| show_held(h, false);
    let message = if let Some(min) = min.as_ref().filter(|m| lt(&have, &m.value)) {
        Some(format!(
            "{check}:  {p} inodes {} less than minimum of {}",
            s.inodes,
            shown(min)
        ))
    } else {
        max.as_ref().filter(|m| lt(&m.value, &have)).map(|max| {
            format!(
                "{check}:  {p} inodes {} exceeds maximum of {}",
                s.inodes,
                shown(max)
            )
        })
    };
    Ok(vec![Verdict::judged(subject, message)])
}
