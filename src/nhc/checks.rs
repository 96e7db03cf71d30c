//! NHC's checks, with NHC's names, arguments, verdicts and messages (NHC 1.4.3; facts recorded
//! in the conformance table of `tests.rs`). Each check line gives one verdict per subject: a
//! mount point, a file, a process, or the machine.

use super::matching::{glob, host_matches};
use super::size::{Limit, parse_limit, parse_size, show_count, show_size};
use super::state::{Machine, Space};
pub use super::verdict::{Settings, Verdict};
use std::collections::BTreeMap;

/// The checks health_check runs, by NHC's names.
pub const SUPPORTED: &[&str] = &[
    "check_fs_mount",
    "check_fs_mount_rw",
    "check_fs_mount_ro",
    "check_fs_free",
    "check_fs_used",
    "check_fs_size",
    "check_fs_ifree",
    "check_fs_iused",
    "check_hw_cpuinfo",
    "check_hw_physmem",
    "check_hw_swap",
    "check_hw_mem",
    "check_hw_physmem_free",
    "check_hw_swap_free",
    "check_hw_mem_free",
    "check_hw_eth",
    "check_hw_ib",
    "check_file_test",
    "check_file_stat",
    "check_file_contents",
    "check_ps_daemon",
    "check_ps_blacklist",
    "check_ps_service",
    "check_ps_loadavg",
    "check_cmd_status",
    "check_cmd_output",
    "check_hw_mcelog",
    "check_dmi_data_match",
    "check_nv_healthmon",
    "check_nvsmi_healthmon",
    "check_ps_unauth_users",
    "check_ps_userproc_lineage",
];

fn pass(subject: Option<String>) -> Verdict {
    Verdict {
        subject,
        failure: None,
        note: None,
        skip: None,
    }
}

fn fail(subject: Option<String>, message: String) -> Verdict {
    Verdict {
        subject,
        failure: Some(message),
        note: None,
        skip: None,
    }
}

/// NHC's hardware variables (`HW_CORES` ...), for `$((...))` in arguments.
pub fn hw_vars(m: &dyn Machine) -> BTreeMap<&'static str, u64> {
    let (sockets, cores, threads) = cpu_counts(&m.cpuinfo());
    let mem = m.meminfo();
    let get = |k: &str| mem.get(k).copied().unwrap_or(0);
    BTreeMap::from([
        ("HW_SOCKETS", sockets),
        ("HW_CORES", cores),
        ("HW_THREADS", threads),
        ("HW_RAM_TOTAL", get("MemTotal")),
        (
            "HW_RAM_FREE",
            get("MemFree") + get("Buffers") + get("Cached"),
        ),
        ("HW_SWAP_TOTAL", get("SwapTotal")),
        ("HW_SWAP_FREE", get("SwapFree")),
    ])
}

/// Sockets (distinct `physical id`), cores (sockets x `cpu cores`) and threads (sockets x
/// `siblings`), as NHC counts them; a machine without `physical id` counts its processors.
pub fn cpu_counts(cpuinfo: &str) -> (u64, u64, u64) {
    let mut ids = std::collections::BTreeSet::new();
    let (mut cores, mut siblings, mut processors) = (0, 0, 0);
    for line in cpuinfo.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "physical id" => {
                ids.insert(v.to_string());
            }
            "cpu cores" => cores = v.parse().unwrap_or(cores),
            "siblings" => siblings = v.parse().unwrap_or(siblings),
            "processor" => processors += 1,
            _ => {}
        }
    }
    let sockets = ids.len() as u64;
    match (sockets, processors) {
        (0, 0) => (1, 1, 1),
        (0, p) => (p, p, p),
        (s, _) => (s, s * cores, s * siblings),
    }
}

/// An argument with `$((...))` and `$VAR` worked out from NHC's hardware variables.
pub fn expand(word: &str, vars: &BTreeMap<&'static str, u64>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        if let Some(expr) = tail.strip_prefix("((") {
            let end = expr
                .find("))")
                .ok_or_else(|| format!("'{word}': $(( is not closed"))?;
            out.push_str(&arithmetic(&expr[..end], vars)?.to_string());
            rest = &expr[end + 2..];
        } else {
            let name: String = tail
                .trim_start_matches('{')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let value = vars
                .get(name.as_str())
                .ok_or_else(|| format!("'{word}': ${name} is not one of NHC's HW_* variables"))?;
            out.push_str(&value.to_string());
            let skip = name.len() + if tail.starts_with('{') { 2 } else { 0 };
            rest = &tail[skip.min(tail.len())..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Integer arithmetic over numbers and variables: `+ - * / %` and parentheses.
fn arithmetic(expr: &str, vars: &BTreeMap<&'static str, u64>) -> Result<i64, String> {
    let tokens: Vec<String> = {
        let mut t = Vec::new();
        let mut cur = String::new();
        for c in expr.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                cur.push(c);
            } else {
                if !cur.is_empty() {
                    t.push(std::mem::take(&mut cur));
                }
                if !c.is_whitespace() {
                    t.push(c.to_string());
                }
            }
        }
        if !cur.is_empty() {
            t.push(cur);
        }
        t
    };
    let mut at = 0;
    let v = sum(&tokens, &mut at, vars)?;
    if at != tokens.len() {
        return Err(format!("$(({expr})): cannot read it"));
    }
    Ok(v)
}

fn sum(t: &[String], at: &mut usize, vars: &BTreeMap<&'static str, u64>) -> Result<i64, String> {
    let mut v = product(t, at, vars)?;
    while let Some(op) = t.get(*at).filter(|o| *o == "+" || *o == "-") {
        let op = op.clone();
        *at += 1;
        let r = product(t, at, vars)?;
        v = if op == "+" { v + r } else { v - r };
    }
    Ok(v)
}

fn product(
    t: &[String],
    at: &mut usize,
    vars: &BTreeMap<&'static str, u64>,
) -> Result<i64, String> {
    let mut v = atom(t, at, vars)?;
    while let Some(op) = t.get(*at).filter(|o| ["*", "/", "%"].contains(&o.as_str())) {
        let op = op.clone();
        *at += 1;
        let r = atom(t, at, vars)?;
        v = match op.as_str() {
            "*" => v * r,
            _ if r == 0 => return Err("division by zero".into()),
            "/" => v / r,
            _ => v % r,
        };
    }
    Ok(v)
}

fn atom(t: &[String], at: &mut usize, vars: &BTreeMap<&'static str, u64>) -> Result<i64, String> {
    let tok = t.get(*at).ok_or("an expression ends too early")?.clone();
    *at += 1;
    if tok == "(" {
        let v = sum(t, at, vars)?;
        if t.get(*at).map(String::as_str) != Some(")") {
            return Err("a parenthesis is not closed".into());
        }
        *at += 1;
        return Ok(v);
    }
    if tok == "-" {
        return Ok(-atom(t, at, vars)?);
    }
    if let Ok(n) = tok.parse::<i64>() {
        return Ok(n);
    }
    vars.get(tok.as_str())
        .map(|&v| v as i64)
        .ok_or_else(|| format!("{tok} is not one of NHC's HW_* variables"))
}

/// Runs one check line on `m` with NHC's default settings. `Err` is a line NHC would reject
/// as a syntax error.
pub fn run(check: &str, args: &[String], m: &dyn Machine) -> Result<Vec<Verdict>, String> {
    run_with(check, args, m, &Settings::new())
}

/// Runs one check line on `m` with the file's `settings`.
pub fn run_with(
    check: &str,
    args: &[String],
    m: &dyn Machine,
    settings: &Settings,
) -> Result<Vec<Verdict>, String> {
    use super::{hardware, processes};
    match check {
        "check_fs_mount" => fs_mount(args, None, m),
        "check_fs_mount_rw" => fs_mount(args, Some("rw"), m),
        "check_fs_mount_ro" => fs_mount(args, Some("ro"), m),
        "check_fs_free" | "check_fs_used" | "check_fs_ifree" | "check_fs_iused" => {
            fs_space(check, args, m)
        }
        "check_fs_size" => fs_size(args, m),
        "check_hw_cpuinfo" => Ok(vec![hw_cpuinfo(args, m)?]),
        "check_hw_physmem" | "check_hw_swap" | "check_hw_mem" => Ok(vec![hw_mem(check, args, m)?]),
        "check_hw_physmem_free" | "check_hw_swap_free" | "check_hw_mem_free" => {
            Ok(vec![hw_mem_free(check, args, m)?])
        }
        "check_hw_eth" => Ok(vec![hw_eth(args, m)?]),
        "check_hw_ib" => Ok(vec![hw_ib(args, m)?]),
        "check_file_test" => file_test(args),
        "check_file_stat" => file_stat(args),
        "check_file_contents" => Ok(vec![file_contents(args)?]),
        "check_ps_daemon" | "check_ps_blacklist" => Ok(vec![ps_daemon(check, args, m)?]),
        "check_ps_service" => Ok(vec![ps_service(args, m)?]),
        "check_ps_loadavg" => Ok(vec![ps_loadavg(args, m)?]),
        "check_cmd_status" | "check_cmd_output" => Ok(vec![cmd(check, args)?]),
        "check_hw_mcelog" => Ok(vec![hardware::mcelog(settings)?]),
        "check_dmi_data_match" => Ok(vec![hardware::dmi_data_match(args, m)?]),
        "check_nv_healthmon" | "check_nvsmi_healthmon" => Ok(vec![hardware::gpu(check, settings)?]),
        "check_ps_unauth_users" => Ok(vec![processes::unauth_users(args, m, settings)?]),
        "check_ps_userproc_lineage" => Ok(vec![processes::userproc_lineage(args, m, settings)?]),
        other => Err(format!("{other} is not a check health_check runs")),
    }
}

/// Whether `text` matches an NHC match string: `/re/`, `{list}`, or a glob; `!` negates.
fn mstr(pattern: &str, text: &str) -> Result<bool, String> {
    host_matches(pattern, text)
}

fn fs_mount(args: &[String], mode: Option<&str>, m: &dyn Machine) -> Result<Vec<Verdict>, String> {
    let mut points = Vec::new();
    let (mut sources, mut types, mut opts) = (Vec::new(), Vec::new(), Vec::new());
    let (mut non_fatal, mut acts) = (false, Vec::new());
    if let Some(mode) = mode {
        opts.push(format!("/(^|,){mode}($|,)/"));
    }
    if args.first().is_some_and(|a| a.starts_with('/')) {
        // The old form: mount point, then source, type and options.
        points.push(args[0].clone());
        sources.extend(args.get(1).filter(|s| !s.is_empty()).cloned());
        types.extend(args.get(2).filter(|s| !s.is_empty()).cloned());
        opts.extend(args.get(3).filter(|s| !s.is_empty()).cloned());
    } else {
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("check_fs_mount:  Syntax error:  {a} needs a value"))
            };
            match a.as_str() {
                "-0" => non_fatal = true,
                "-r" => acts.push("remount it".to_string()),
                "-f" | "-F" => points.push(value()?),
                "-s" => sources.push(value()?),
                "-t" => types.push(value()?),
                "-o" => opts.push(value()?),
                "-O" => {
                    value()?;
                }
                "-e" | "-E" => acts.push(format!("run \"{}\"", value()?)),
                s if s.starts_with('-') => {
                    return Err(format!(
                        "check_fs_mount:  Syntax error:  unknown option {s}"
                    ));
                }
                p => points.push(p.to_string()),
            }
        }
    }
    if points.is_empty() {
        return Err("check_fs_mount:  Syntax error:  no mount point given (-f /path)".into());
    }
    let mounts = m.mounts();
    let mut out = Vec::new();
    for p in points {
        // The mount table's last entry for a mount point is what is mounted there.
        let Some(mt) = mounts.iter().rev().find(|x| x.point == p) else {
            let missing = if std::path::Path::new(&p).is_dir() {
                String::new()
            } else {
                format!("; directory {p} missing")
            };
            out.push(fatal(
                &p,
                format!("check_fs_mount:  {p} not mounted{missing}"),
                non_fatal,
                &acts,
            ));
            continue;
        };
        let should = |pat: &str| match pat.strip_prefix('!') {
            Some(p) => format!("should NOT match {p}"),
            None => format!("should match {pat}"),
        };
        let mut wrong = None;
        for s in &sources {
            if wrong.is_none() && !mstr(s, &mt.source)? {
                wrong = Some(format!(
                    "check_fs_mount:  {p} mounted from {} ({})",
                    mt.source,
                    should(s)
                ));
            }
        }
        for t in &types {
            if wrong.is_none() && !mstr(t, &mt.fstype)? {
                wrong = Some(format!(
                    "check_fs_mount:  {p} has incorrect type {} ({})",
                    mt.fstype,
                    should(t)
                ));
            }
        }
        for o in &opts {
            if wrong.is_none() && !mstr(o, &mt.options)? {
                wrong = Some(format!(
                    "check_fs_mount:  {p} mount options incorrect ({})",
                    should(o)
                ));
            }
        }
        out.push(match wrong {
            Some(msg) => fatal(&p, msg, non_fatal, &acts),
            None => pass(Some(p)),
        });
    }
    Ok(out)
}

/// A failure, or with `-0` a pass that says it; what NHC would have done is said, not done.
fn fatal(subject: &str, message: String, non_fatal: bool, acts: &[String]) -> Verdict {
    let note = (!acts.is_empty()).then(|| {
        format!(
            "NHC would {} (health_check does not act on the node)",
            acts.join(" and ")
        )
    });
    if non_fatal {
        Verdict {
            subject: Some(subject.to_string()),
            failure: None,
            note: Some(format!("{message} (non-fatal)")),
            skip: None,
        }
    } else {
        Verdict {
            subject: Some(subject.to_string()),
            failure: Some(message),
            note,
            skip: None,
        }
    }
}

/// The mounted file system at `point`, or `None` where NHC's df would not list it (NHC then
/// passes silently).
fn space_at(point: &str, m: &dyn Machine) -> Option<Space> {
    m.mounts()
        .iter()
        .any(|x| x.point == point)
        .then(|| m.space(point))?
}

fn two_args<'a>(check: &str, args: &'a [String]) -> Result<(&'a str, &'a str), String> {
    match args {
        [a, b, ..] => Ok((a, b)),
        _ => Err(format!(
            "{check}:  Syntax error:  give a mount point and a limit"
        )),
    }
}

fn fs_space(check: &str, args: &[String], m: &dyn Machine) -> Result<Vec<Verdict>, String> {
    let (point, limit) = two_args(check, args)?;
    let inodes = check.contains('i');
    let lim = parse_limit(limit, !inodes).ok_or_else(|| {
        format!("{check}:  Syntax error:  '{limit}' is no size, count or percentage")
    })?;
    let subject = Some(point.to_string());
    let Some(s) = space_at(point, m) else {
        return Ok(vec![pass(subject)]);
    };
    let whole = if inodes { s.inodes } else { s.size_kb };
    if whole == 0 {
        return Ok(vec![pass(subject)]);
    }
    let used_pct = if inodes {
        s.inodes_used_pct()
    } else {
        s.used_pct()
    };
    let (used, free) = if inodes {
        (s.inodes.saturating_sub(s.inodes_free), s.inodes_free)
    } else {
        (s.used_kb, s.avail_kb)
    };
    // NHC writes a measured size with its unit but a measured inode count as the plain number;
    // limits it writes back as the file gave them (`50k`, `32GB`).
    let amount = |n: u64| if inodes { n.to_string() } else { show_size(n) };
    let limit_of = |n: u64| if inodes { show_count(n) } else { show_size(n) };
    let message = match (check, lim) {
        ("check_fs_free", Limit::Percent(min)) if 100 - used_pct < min => Some(format!(
            "{check}:  {point} has only {}% free ({}), minimum is {limit}",
            100 - used_pct,
            amount(free)
        )),
        ("check_fs_free", Limit::Amount(min)) if free < min => Some(format!(
            "{check}:  {point} has only {} free, minimum is {}",
            amount(free),
            limit_of(min)
        )),
        ("check_fs_used", Limit::Percent(max)) if used_pct >= max => Some(format!(
            "{check}:  {point} is {used_pct}% full ({}), threshold is {limit}",
            amount(used)
        )),
        ("check_fs_used", Limit::Amount(max)) if used >= max => Some(format!(
            "{check}:  {point} has {} used, threshold is {}",
            amount(used),
            limit_of(max)
        )),
        ("check_fs_ifree", Limit::Percent(min)) if 100 - used_pct < min => Some(format!(
            "{check}:  {point} has only {}% of inodes free ({}), minimum is {limit}",
            100 - used_pct,
            amount(free)
        )),
        ("check_fs_ifree", Limit::Amount(min)) if free < min => Some(format!(
            "{check}:  {point} has only {} inodes free, minimum is {}",
            amount(free),
            limit_of(min)
        )),
        ("check_fs_iused", Limit::Percent(max)) if used_pct >= max => Some(format!(
            "{check}:  {point} has {used_pct}% of inodes used ({}), threshold is {limit}",
            amount(used)
        )),
        ("check_fs_iused", Limit::Amount(max)) if used >= max => Some(format!(
            "{check}:  {point} has {} inodes used, threshold is {}",
            amount(used),
            limit_of(max)
        )),
        _ => None,
    };
    Ok(vec![Verdict {
        subject,
        failure: message,
        note: None,
        skip: None,
    }])
}

fn fs_size(args: &[String], m: &dyn Machine) -> Result<Vec<Verdict>, String> {
    let check = "check_fs_size";
    let point = args
        .first()
        .ok_or_else(|| format!("{check}:  Syntax error:  give a mount point"))?;
    let size = |i: usize| -> Result<Option<u64>, String> {
        match args.get(i).filter(|a| !a.is_empty()) {
            None => Ok(None),
            Some(a) => parse_size(a)
                .map(Some)
                .ok_or_else(|| format!("{check}:  Syntax error:  '{a}' is no size")),
        }
    };
    let (min, max) = (size(1)?, size(2)?);
    let subject = Some(point.clone());
    let Some(s) = space_at(point, m) else {
        return Ok(vec![pass(subject)]);
    };
    let message = match (min, max) {
        (Some(min), _) if s.size_kb < min => Some(format!(
            "{check}:  {point} size {} less than minimum of {}",
            show_size(s.size_kb),
            show_size(min)
        )),
        (_, Some(max)) if s.size_kb > max => Some(format!(
            "{check}:  {point} size {} exceeds maximum of {}",
            show_size(s.size_kb),
            show_size(max)
        )),
        _ => None,
    };
    Ok(vec![Verdict {
        subject,
        failure: message,
        note: None,
        skip: None,
    }])
}

fn hw_cpuinfo(args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let (sockets, cores, threads) = cpu_counts(&m.cpuinfo());
    for (i, (what, actual)) in [("socket", sockets), ("core", cores), ("thread", threads)]
        .into_iter()
        .enumerate()
    {
        let Some(want) = args.get(i).filter(|a| !a.is_empty()) else {
            continue;
        };
        let want: u64 = want
            .parse()
            .map_err(|_| format!("check_hw_cpuinfo:  Syntax error:  '{want}' is no count"))?;
        if actual != want {
            return Ok(fail(
                None,
                format!(
                    "check_hw_cpuinfo:  Actual CPU {what} count ({actual}) does not match \
                     expected ({want})."
                ),
            ));
        }
    }
    Ok(pass(None))
}

fn hw_mem(check: &str, args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let mem = m.meminfo();
    let get = |k: &str| mem.get(k).copied().unwrap_or(0);
    let (total, what) = match check {
        "check_hw_physmem" => (get("MemTotal"), "RAM size"),
        "check_hw_swap" => (get("SwapTotal"), "SWAP size"),
        _ => (get("MemTotal") + get("SwapTotal"), "system memory"),
    };
    let (min, max) = match args {
        [min, max, ..] => (min, max),
        _ => {
            return Err(format!(
                "{check}:  Syntax error:  give MIN and MAX (NHC fails every run without MAX)"
            ));
        }
    };
    let size =
        |a: &str| parse_size(a).ok_or_else(|| format!("{check}:  Syntax error:  '{a}' is no size"));
    let (min, max) = (size(min)?, size(max)?);
    let fudge = match args.get(2) {
        None => 0,
        Some(f) => match parse_limit(f, true) {
            Some(Limit::Percent(p)) => total * p / 100,
            Some(Limit::Amount(a)) => a,
            None => {
                return Err(format!(
                    "{check}:  Syntax error:  '{f}' is no size or percentage"
                ));
            }
        },
    };
    let message = if total + fudge < min {
        Some(format!(
            "{check}:  Actual {what} ({total} kB) less than minimum allowed ({min} kB)."
        ))
    } else if total.saturating_sub(fudge) > max {
        Some(format!(
            "{check}:  Actual {what} ({total} kB) greater than maximum allowed ({max} kB)."
        ))
    } else {
        None
    };
    Ok(Verdict {
        subject: None,
        failure: message,
        note: None,
        skip: None,
    })
}

fn hw_mem_free(check: &str, args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let mem = m.meminfo();
    let get = |k: &str| mem.get(k).copied().unwrap_or(0);
    let ram = get("MemFree") + get("Buffers") + get("Cached");
    let (free, what) = match check {
        "check_hw_physmem_free" => (ram, "RAM free"),
        "check_hw_swap_free" => (get("SwapFree"), "swap free"),
        _ => (ram + get("SwapFree"), "free memory"),
    };
    let min = args
        .first()
        .and_then(|a| parse_size(a))
        .ok_or_else(|| format!("{check}:  Syntax error:  give the minimum free, a size"))?;
    Ok(Verdict {
        subject: None,
        failure: (free < min)
            .then(|| format!("{check}:  Not enough {what} ({free} kB < {min} kB).")),
        note: None,
        skip: None,
    })
}

fn hw_eth(args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let dev = args
        .first()
        .ok_or("check_hw_eth:  Syntax error:  give a device")?;
    let g = glob(dev)?;
    let found = m.net_devices().iter().any(|d| g.is_match(d));
    Ok(Verdict {
        subject: Some(dev.clone()),
        failure: (!found).then(|| format!("check_hw_eth:  Ethernet device {dev} not detected.")),
        note: None,
        skip: None,
    })
}

fn file_test(args: &[String]) -> Result<Vec<Verdict>, String> {
    let check = "check_file_test";
    let (mut ops, mut files, mut negate) = (Vec::new(), Vec::new(), false);
    for a in args {
        match a.as_str() {
            "-!" => negate = true,
            op if op.len() == 2 && op.starts_with('-') => {
                if !"abcdefghkprstuwxOGLSN".contains(&op[1..]) {
                    return Err(format!(
                        "{check}:  Syntax error:  Invalid/unsupported operator \"{op}\"."
                    ));
                }
                ops.push(op.to_string());
            }
            f => files.push(f.to_string()),
        }
    }
    if ops.is_empty() || files.is_empty() {
        return Err(format!("{check}:  Syntax error:  Missing parameters."));
    }
    let mut last = None;
    for op in &ops {
        for f in &files {
            let ok = test(op, f);
            last = Some((op.clone(), f.clone()));
            if negate && !ok {
                return Ok(vec![pass(Some(files.join(" ")))]);
            }
            if !negate && !ok {
                return Ok(vec![fail(
                    Some(f.clone()),
                    format!("{check}:  {op} {f} returned 1."),
                )]);
            }
        }
    }
    Ok(vec![match (negate, last) {
        (true, Some((op, f))) => fail(Some(f.clone()), format!("{check}:  {op} {f} returned 0.")),
        _ => pass(Some(files.join(" "))),
    }])
}

/// `test OP FILE`, as the shell's.
fn test(op: &str, file: &str) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let path = std::path::Path::new(file);
    let link = std::fs::symlink_metadata(path);
    let meta = std::fs::metadata(path);
    let access = |mode: nix::unistd::AccessFlags| nix::unistd::access(path, mode).is_ok();
    let Ok(md) = meta else {
        return op == "-h" || op == "-L" && link.is_ok_and(|l| l.file_type().is_symlink());
    };
    let mode = md.permissions().mode();
    let ft = md.file_type();
    match op {
        "-a" | "-e" => true,
        "-b" => ft.is_block_device(),
        "-c" => ft.is_char_device(),
        "-d" => ft.is_dir(),
        "-f" => ft.is_file(),
        "-g" => mode & 0o2000 != 0,
        "-h" | "-L" => link.is_ok_and(|l| l.file_type().is_symlink()),
        "-k" => mode & 0o1000 != 0,
        "-p" => ft.is_fifo(),
        "-r" => access(nix::unistd::AccessFlags::R_OK),
        "-s" => md.len() > 0,
        "-t" => false,
        "-u" => mode & 0o4000 != 0,
        "-w" => access(nix::unistd::AccessFlags::W_OK),
        "-x" => access(nix::unistd::AccessFlags::X_OK),
        "-O" => md.uid() == nix::unistd::geteuid().as_raw(),
        "-G" => md.gid() == nix::unistd::getegid().as_raw(),
        "-S" => ft.is_socket(),
        "-N" => md.mtime() > md.atime(),
        _ => false,
    }
}

/// Whether `pattern` (a glob) is found anywhere in `text`.
fn contains_glob(pattern: &str, text: &str) -> Result<bool, String> {
    Ok(glob(&format!("*{pattern}*"))?.is_match(text))
}

fn ps_daemon(check: &str, args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let cmd = args
        .first()
        .ok_or_else(|| format!("{check}:  Syntax error:  give a process"))?;
    let owner = args.get(1).filter(|o| !o.is_empty());
    let pattern = match args.get(2) {
        Some(a) => format!("{cmd} {a}"),
        None => cmd.clone(),
    };
    let mut running = false;
    for p in m.processes() {
        let owned = match (owner, check) {
            (None, _) => true,
            (Some(o), "check_ps_daemon") => &p.user == o,
            (Some(o), _) => mstr(o, &p.user)?,
        };
        if owned && contains_glob(&pattern, &p.args)? {
            running = true;
            break;
        }
    }
    let owned_by = owner.map_or(String::new(), |o| format!("owned by {o} "));
    let failure = match check {
        "check_ps_daemon" => {
            (!running).then(|| format!("{check}:  Process {pattern} {owned_by}not running"))
        }
        _ => running.then(|| format!("{check}:  Process {pattern} {owned_by}running")),
    };
    Ok(Verdict {
        subject: Some(pattern),
        failure,
        note: None,
        skip: None,
    })
}

fn ps_service(args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let check = "check_ps_service";
    let (mut user, mut daemon, mut matcher, mut full, mut non_fatal) =
        (None, None, None, false, false);
    let (mut act, mut inverted) = (None, false);
    let mut service = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{check}:  Syntax error:  {a} needs a value"))
        };
        match a.as_str() {
            "-0" => non_fatal = true,
            "-f" => full = true,
            "-v" | "-V" => {}
            "-S" => act = Some("start".to_string()),
            "-r" => act = Some("restart".to_string()),
            "-c" => act = Some("cycle".to_string()),
            "-s" | "-k" => {
                inverted = true;
                act = Some(if a == "-s" { "stop" } else { "kill" }.to_string());
            }
            "-u" => user = Some(value()?),
            "-d" => daemon = Some(value()?),
            "-m" => matcher = Some(value()?),
            "-e" => act = Some(format!("run \"{}\"", value()?)),
            "-E" => {
                inverted = true;
                act = Some(format!("run \"{}\"", value()?));
            }
            s if s.starts_with('-') => {
                return Err(format!("{check}:  Syntax error:  unknown option {s}"));
            }
            s => service = Some(s.to_string()),
        }
    }
    let service = service.ok_or_else(|| format!("{check}:  Syntax error:  give a service"))?;
    let daemon = daemon.unwrap_or_else(|| service.clone());
    let matcher = matcher.unwrap_or_else(|| format!("*{daemon}"));
    let mut running = false;
    for p in m.processes() {
        let text = if full {
            p.args.clone()
        } else {
            p.args.split(' ').next().unwrap_or("").to_string()
        };
        let owned = match &user {
            Some(u) => mstr(u, &p.user)?,
            None => true,
        };
        if owned && mstr(&matcher, &text)? {
            running = true;
            break;
        }
    }
    let owned_by = user
        .as_ref()
        .map_or(String::new(), |u| format!("owned by {u} "));
    let message = if inverted && running {
        Some(format!(
            "{check}:  Service {service} (process {daemon}) {owned_by}running"
        ))
    } else if !inverted && !running {
        Some(format!(
            "{check}:  Service {service} (process {daemon}) {owned_by}not running"
        ))
    } else {
        None
    };
    let Some(message) = message else {
        return Ok(pass(Some(service)));
    };
    let acts: Vec<String> = act
        .map(|a| {
            if a.starts_with("run") {
                a
            } else {
                format!("{a} the service")
            }
        })
        .into_iter()
        .collect();
    Ok(fatal(&service, message, non_fatal, &acts))
}

fn ps_loadavg(args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let check = "check_ps_loadavg";
    let loads = m
        .loadavg()
        .ok_or_else(|| format!("{check}:  /proc/loadavg cannot be read"))?;
    for (i, minutes) in ["1", "5", "15"].iter().enumerate() {
        let Some(limit) = args.get(i).filter(|a| !a.is_empty()) else {
            continue;
        };
        let limit: u64 = limit
            .parse()
            .map_err(|_| format!("{check}:  Syntax error:  '{limit}' is no whole number"))?;
        // NHC drops the fraction, and a load equal to the limit is too high.
        let load = loads[i] as u64;
        if load >= limit {
            return Ok(fail(
                None,
                format!("{check}:  {minutes}-minute load average too high:  {load} >= {limit}"),
            ));
        }
    }
    Ok(pass(None))
}

/// A user's or group's name by id, from the files NHC's `stat` reads them from.
fn name_of(file: &str, id: u32) -> Option<String> {
    std::fs::read_to_string(file).ok()?.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.get(2)?.parse::<u32>().ok()? == id).then(|| f[0].to_string())
    })
}

fn file_stat(args: &[String]) -> Result<Vec<Verdict>, String> {
    use std::os::unix::fs::MetadataExt;
    let check = "check_file_stat";
    let mut wants: Vec<(String, String)> = Vec::new();
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-m" | "-M" | "-u" | "-g" | "-U" | "-G" | "-t" | "-T" | "-n" | "-o" | "-N" | "-O" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("{check}:  Syntax error:  {a} needs a value"))?;
                wants.push((a.clone(), v.clone()));
            }
            s if s.starts_with('-') => {
                return Err(format!("{check}:  Syntax error:  unknown option {s}"));
            }
            f => files.push(f.to_string()),
        }
    }
    if files.is_empty() {
        return Err(format!("{check}:  Syntax error:  give a file"));
    }
    let octal = |v: &str| {
        u32::from_str_radix(v, 8)
            .map_err(|_| format!("{check}:  Syntax error:  '{v}' is no octal mode"))
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut out = Vec::new();
    for f in files {
        let md = match std::fs::metadata(&f) {
            Ok(md) => md,
            Err(e) => {
                out.push(fail(
                    Some(f.clone()),
                    format!("{check}:  stat({f}) returned 1:  {e}"),
                ));
                continue;
            }
        };
        let mode = md.mode() & 0o7777;
        let rdev = md.rdev();
        // Linux's encoding of a device number (glibc's `major`/`minor`).
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
        let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
        let mut failure = None;
        for (opt, want) in &wants {
            let secs = || {
                want.parse::<i64>().map_err(|_| {
                    format!("{check}:  Syntax error:  '{want}' is no number of seconds")
                })
            };
            let msg = match opt.as_str() {
                "-m" if mode != octal(want)? => Some(format!(
                    "has permissions {mode:04o}; should be {:04o}",
                    octal(want)?
                )),
                "-M" if mode & octal(want)? != octal(want)? => Some(format!(
                    "has permissions {mode:04o}; should be at least {:04o}",
                    octal(want)?
                )),
                "-u" if md.uid().to_string() != *want => {
                    Some(format!("UID is \"{}\"; should be \"{want}\"", md.uid()))
                }
                "-g" if md.gid().to_string() != *want => {
                    Some(format!("GID is \"{}\"; should be \"{want}\"", md.gid()))
                }
                "-U" => {
                    let user =
                        name_of("/etc/passwd", md.uid()).unwrap_or_else(|| md.uid().to_string());
                    (user != *want).then(|| format!("username is \"{user}\"; should be \"{want}\""))
                }
                "-G" => {
                    let group =
                        name_of("/etc/group", md.gid()).unwrap_or_else(|| md.gid().to_string());
                    (group != *want)
                        .then(|| format!("groupname is \"{group}\"; should be \"{want}\""))
                }
                "-t" if major.to_string() != *want => {
                    Some(format!("has device major number {major}; should be {want}"))
                }
                "-T" if minor.to_string() != *want => {
                    Some(format!("has device minor number {minor}; should be {want}"))
                }
                "-n" if md.mtime() < now - secs()? => {
                    Some(format!("mtime is not newer than {want}s"))
                }
                "-o" if md.mtime() >= now - secs()? => {
                    Some(format!("mtime is not older than {want}s"))
                }
                "-N" if md.ctime() < now - secs()? => {
                    Some(format!("ctime is not newer than {want}s"))
                }
                "-O" if md.ctime() >= now - secs()? => {
                    Some(format!("ctime is not older than {want}s"))
                }
                _ => None,
            };
            if let Some(m) = msg {
                failure = Some(format!("{check}:  File \"{f}\" {m}"));
                break;
            }
        }
        out.push(Verdict {
            subject: Some(f),
            failure,
            note: None,
            skip: None,
        });
    }
    Ok(out)
}

fn file_contents(args: &[String]) -> Result<Verdict, String> {
    let check = "check_file_contents";
    let [file, patterns @ ..] = args else {
        return Err(format!("{check}:  Syntax error:  give a file and patterns"));
    };
    if patterns.is_empty() {
        return Err(format!("{check}:  Syntax error:  give a file and patterns"));
    }
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut matched = vec![false; patterns.len()];
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        for (i, p) in patterns.iter().enumerate() {
            match p.strip_prefix('!') {
                Some(neg) if mstr(neg, line)? => {
                    return Ok(fail(
                        Some(file.clone()),
                        format!(
                            "{check}:  File \"{file}\" line {} matches \"{neg}\".",
                            n + 1
                        ),
                    ));
                }
                Some(_) => {}
                None => matched[i] |= mstr(p, line)?,
            }
        }
    }
    let positive: Vec<&String> = patterns.iter().filter(|p| !p.starts_with('!')).collect();
    let hits = patterns
        .iter()
        .zip(&matched)
        .filter(|(p, m)| !p.starts_with('!') && **m)
        .count();
    let first_missed = patterns
        .iter()
        .zip(&matched)
        .find(|(p, m)| !p.starts_with('!') && !**m)
        .map(|(p, _)| p);
    let failure = first_missed.map(|p| {
        if positive.len() == 1 {
            format!("{check}:  File \"{file}\" failed to match \"{p}\".")
        } else {
            format!(
                "{check}:  File \"{file}\" matched {hits}/{} patterns.  First failed match:  \"{p}\".",
                positive.len()
            )
        }
    });
    Ok(Verdict {
        subject: Some(file.clone()),
        failure,
        note: None,
        skip: None,
    })
}

/// check_cmd_status and check_cmd_output: the command run without a shell, with a deadline
/// (`-t`, 5 s), its exit code against `-r` (0), and for check_cmd_output its lines against `-m`
/// match strings (a plain glob matches a whole line; `!` none may match).
fn cmd(check: &str, args: &[String]) -> Result<Verdict, String> {
    let (mut secs, mut rc, mut patterns, mut line) = (5u64, 0i32, Vec::new(), None);
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        let value = args
            .get(i + 1)
            .ok_or_else(|| format!("{check}:  Syntax error:  {} needs a value", args[i]))?;
        match args[i].as_str() {
            "-t" => {
                secs = value.parse().map_err(|_| {
                    format!("{check}:  Syntax error:  '{value}' is no whole number of seconds")
                })?
            }
            "-r" => {
                rc = value
                    .parse()
                    .map_err(|_| format!("{check}:  Syntax error:  '{value}' is no exit code"))?
            }
            "-m" if check == "check_cmd_output" => patterns.push(value.clone()),
            "-e" | "-E" if check == "check_cmd_output" => line = Some(value.clone()),
            o => return Err(format!("{check}:  Syntax error:  unknown option {o}")),
        }
        i += 2;
    }
    let words: Vec<String> = match line {
        Some(l) => super::shell::words(&l).map_err(|e| format!("{check}:  '{l}': {e}"))?,
        None => args[i..].to_vec(),
    };
    let Some((program, rest)) = words.split_first() else {
        return Err(format!("{check}:  Syntax error:  give a command"));
    };
    let shown = words.join(" ");
    let path =
        super::state::find_command(program).unwrap_or_else(|| std::path::PathBuf::from(program));
    let argv: Vec<&str> = rest.iter().map(String::as_str).collect();
    let out = match crate::command::run(&path, &argv, std::time::Duration::from_secs(secs)) {
        Ok(out) => out,
        Err(crate::command::CommandError::Timeout { .. }) => {
            return Ok(fail(
                Some(shown.clone()),
                format!("{check}:  TIMEOUT after {secs}s for \"{shown}\"; subprocess terminated."),
            ));
        }
        Err(e) => {
            return Ok(fail(
                Some(shown.clone()),
                format!("{check}:  127 returned by \"{shown}\" ({e})."),
            ));
        }
    };
    let code = out.code.unwrap_or(-1);
    let text = out.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    for p in patterns.iter().filter_map(|p| p.strip_prefix('!')) {
        for (n, l) in lines.iter().enumerate() {
            if mstr(p, l)? {
                return Ok(fail(
                    Some(shown.clone()),
                    format!(
                        "{check}:  \"{p}\" matched at line {} of \"{shown}\".",
                        n + 1
                    ),
                ));
            }
        }
    }
    if code != rc {
        let expected = if rc != 0 {
            format!(" (expected {rc})")
        } else {
            String::new()
        };
        return Ok(fail(
            Some(shown.clone()),
            format!("{check}:  {code}{expected} returned by \"{shown}\"."),
        ));
    }
    let positive: Vec<&String> = patterns.iter().filter(|p| !p.starts_with('!')).collect();
    let mut missed = Vec::new();
    for p in &positive {
        let mut hit = false;
        for l in &lines {
            if mstr(p, l)? {
                hit = true;
                break;
            }
        }
        if !hit {
            missed.push(*p);
        }
    }
    let failure = missed.first().map(|p| {
        if positive.len() == 1 {
            format!("{check}:  \"{p}\" failed to match \"{shown}\" output.")
        } else {
            format!(
                "{check}:  \"{p}\" failed to match \"{shown}\" output ({}/{} patterns failed).",
                missed.len(),
                positive.len()
            )
        }
    });
    Ok(Verdict {
        subject: Some(shown),
        failure,
        note: None,
        skip: None,
    })
}

/// `check_hw_ib [RATE] [DEV]`: some port ACTIVE and LinkUp, at RATE (Gb/s, as the port's `rate`
/// says it) and on DEV (`<hca>:<port>`) where given. Without the user-space MAD ABI (no
/// InfiniBand stack at all) NHC fails with its version message, and so does this.
fn hw_ib(args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let check = "check_hw_ib";
    let rate = args.first().filter(|a| !a.is_empty());
    let dev = args.get(1).filter(|a| !a.is_empty());
    let (abi, ports) = m.infiniband();
    let subject = dev.cloned();
    if abi == 0 {
        return Ok(fail(
            subject,
            format!(
                "{check}:  Version mismatch between kernel OFED drivers and userspace OFED libraries."
            ),
        ));
    }
    let up = ports.iter().any(|p| {
        p.state == "ACTIVE"
            && p.phys_state == "LinkUp"
            && rate.is_none_or(|r| &p.rate == r)
            && dev.is_none_or(|d| &p.dev == d)
    });
    let on = dev.map_or(String::new(), |d| format!(" {d}"));
    let at = rate.map_or(String::new(), |r| format!(" {r} Gb/sec"));
    Ok(Verdict {
        subject,
        failure: (!up).then(|| format!("{check}:  No IB port{on} is ACTIVE (LinkUp{at}).")),
        note: None,
        skip: None,
    })
}
