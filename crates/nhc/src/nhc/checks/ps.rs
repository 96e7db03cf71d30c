//! NHC's process checks on the process table: `check_ps_daemon` and `check_ps_blacklist` (a
//! command somewhere in a process's arguments), `check_ps_service` (a service's daemon running,
//! or not), `check_ps_loadavg`. What NHC would do about a process (start, stop, kill, run an
//! action) is said, never done: health_check does not act on the node.

use super::{Ctx, LineError, Verdict, getopts};
use crate::nhc::bytes::{show, words};
use crate::nhc::matching::{as_printed, mcheck_printed, same_printed};
use crate::nhc::posix::glob_contains;
use crate::nhc::size::number;

fn arg(args: &[Vec<u8>], i: usize) -> &[u8] {
    args.get(i).map_or(&b""[..], Vec::as_slice)
}

/// `check_ps_daemon CMD [OWNER] [ARGS]` (a matching process runs, owned by OWNER exactly) and
/// `check_ps_blacklist CMD [OWNER] [ARGS]` (none runs whose owner matches the match string).
pub fn daemon(check: &str, args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let owner = Some(arg(args, 1)).filter(|o| !o.is_empty());
    let mut pattern = arg(args, 0).to_vec();
    if !arg(args, 2).is_empty() {
        pattern.push(b' ');
        pattern.extend_from_slice(arg(args, 2));
    }
    let blacklist = check == "check_ps_blacklist";
    let running = cx.m.processes().iter().any(|p| {
        (glob_contains(&pattern, &p.args) || glob_contains(&pattern, &as_printed(&p.args)))
            && owner.is_none_or(|o| {
                if blacklist {
                    mcheck_printed(o, &p.user)
                } else {
                    same_printed(&p.user, o)
                }
            })
    });
    let owned_by = owner.map_or(String::new(), |o| format!("owned by {} ", show(o)));
    let shown = show(&pattern);
    let failure = if blacklist {
        running.then(|| format!("{check}:  Process {shown} {owned_by}running"))
    } else {
        (!running).then(|| format!("{check}:  Process {shown} {owned_by}not running"))
    };
    Ok(Verdict::judged(Some(pattern), failure))
}

/// `check_ps_service [-0fSrcskv] [-u USER] [-d DAEMON] [-m MATCH] [-e|-E CMD] SERVICE`: the
/// service's daemon (its first argument matching MATCH, `*DAEMON` by default) runs, owned by
/// USER where given; with `-s`, `-k` or `-E` it must not.
pub fn service(args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let check = "check_ps_service";
    let (given, at) = getopts(check, args, "0E:SVcd:e:fkm:rsu:v")?;
    let (mut non_fatal, mut full, mut start, mut restart, mut cycle, mut stop, mut kill) =
        (false, false, false, false, false, false, false);
    let (mut user, mut daemon, mut matcher) = (None, None, None);
    let (mut action, mut found_action) = (None, None);
    for (opt, value) in given {
        match opt {
            b'0' => non_fatal = true,
            b'f' => full = true,
            b'S' => start = true,
            b'r' => restart = true,
            b'c' => cycle = true,
            b's' => stop = true,
            b'k' => kill = true,
            b'u' => user = Some(value.to_vec()),
            b'd' => daemon = Some(value.to_vec()),
            b'm' => matcher = Some(value.to_vec()),
            b'e' => action = Some(value.to_vec()),
            b'E' => found_action = Some(value.to_vec()),
            _ => {}
        }
    }
    let service = args[at..].join(&b' ');
    if service.is_empty() {
        return Err(LineError::Fails(format!(
            "{check}:  Syntax error:  Service name required."
        )));
    }
    let daemon = daemon
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| service.clone());
    let matcher = matcher.filter(|m| !m.is_empty()).unwrap_or_else(|| {
        let mut m = b"*".to_vec();
        m.extend_from_slice(&daemon);
        m
    });
    // A numeric owner is a uid, named as /etc/passwd names it.
    let user = user.filter(|u| !u.is_empty()).map(|u| {
        match (
            u.iter().all(u8::is_ascii_digit),
            crate::nhc::bytes::number::<u32>(&u),
        ) {
            (true, Some(uid)) => cx.m.user_name(uid).unwrap_or(u),
            _ => u,
        }
    });
    let found = cx.m.processes().into_iter().find(|p| {
        let text: &[u8] = if full {
            &p.args
        } else {
            words(&p.args).next().unwrap_or(b"")
        };
        mcheck_printed(&matcher, text) && user.as_ref().is_none_or(|u| mcheck_printed(u, &p.user))
    });
    let owned_by = user
        .as_ref()
        .map_or(String::new(), |u| format!("owned by {} ", show(u)));
    let base = format!(
        "{check}:  Service {} (process {}) {owned_by}",
        show(&service),
        show(&daemon)
    );
    let must_not_run = stop || kill || found_action.is_some();
    let (message, act) = match (&found, must_not_run) {
        (Some(p), true) => {
            let act = if kill {
                format!("kill process ID {}", p.pid)
            } else if stop {
                format!("stop the service ({})", show(&service))
            } else {
                format!(
                    "run \"{}\"",
                    show(found_action.as_deref().unwrap_or_default())
                )
            };
            (format!("{base}running"), Some(act))
        }
        (Some(_), false) | (None, true) => return Ok(Verdict::pass(Some(service))),
        (None, false) => {
            let act = if start {
                Some("start the service".to_string())
            } else if restart {
                Some("restart the service".to_string())
            } else if cycle {
                Some("cycle the service".to_string())
            } else {
                action.as_ref().map(|a| format!("run \"{}\"", show(a)))
            };
            (format!("{base}not running"), act)
        }
    };
    let note = act.map(|a| format!("NHC would {a} (health_check does not act on the node)"));
    Ok(if non_fatal {
        Verdict {
            subject: Some(service),
            failure: None,
            note: Some(match &note {
                // NHC says what it started (`; start in progress`); this starts nothing.
                Some(act) => format!("{message} (non-fatal); {act}"),
                None => format!("{message} (non-fatal)"),
            }),
            skip: None,
        }
    } else {
        Verdict {
            subject: Some(service),
            failure: Some(message),
            note,
            skip: None,
        }
    })
}

/// `check_ps_loadavg [L1] [L5] [L15]`: each load average's integer part below its limit (NHC
/// fails when it is equal); a limit that is no number never fails.
pub fn loadavg(args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let check = "check_ps_loadavg";
    let Some(loads) = cx.m.loadavg() else {
        return Ok(Verdict::fail(
            None,
            format!("{check}:  /proc/loadavg cannot be read"),
        ));
    };
    for (i, minutes) in ["1", "5", "15"].iter().enumerate() {
        let limit = arg(args, i);
        if limit.is_empty() {
            continue;
        }
        let load = loads[i] as i64;
        if number(limit, cx.settings).is_ok_and(|l| load >= l) {
            return Ok(Verdict::fail(
                None,
                format!(
                    "{check}:  {minutes}-minute load average too high:  {load} >= {}",
                    show(limit)
                ),
            ));
        }
    }
    Ok(Verdict::pass(None))
}
