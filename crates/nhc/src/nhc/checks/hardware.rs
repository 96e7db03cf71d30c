//! NHC's checks that ask a tool about the hardware: `check_hw_mcelog` (the mcelog daemon's
//! error counts), `check_dmi_data_match` and `check_dmi_raw_data_match` (dmidecode's tables)
//! and the GPU checks `check_nv_healthmon` / `check_nvsmi_healthmon`. Each tool runs without a
//! shell, with a deadline and a bound on what it prints; which tool runs comes from the file's
//! settings (`MCELOG=`, `NVIDIA_HEALTHMON=`), split on blanks as NHC's unquoted `$MCELOG` is.

use super::getopts;
use crate::nhc::bytes::{show, words};
use crate::nhc::matching::mcheck;
use crate::nhc::size::{lt, number};
use crate::nhc::state::{COMMAND_PATH, Machine, find_command};
use crate::nhc::verdict::{LineError, Settings, Verdict};
use std::time::Duration;

/// How long a hardware tool may take (NHC's whole run has 30 s by default).
const TOOL_DEADLINE: Duration = Duration::from_secs(10);
/// How much of a tool's output is read.
const TOOL_OUTPUT: usize = 4 << 20;

/// A verdict about the machine.
fn verdict(failure: Option<String>, note: Option<String>, skip: Option<String>) -> Verdict {
    Verdict::of_machine(failure, note, skip)
}

/// `$PROGRAM $ARGS` as NHC runs it: both split on blanks; the program found on `$PATH`.
fn tool(
    settings: &Settings,
    program: &str,
    default: &[u8],
    args: &str,
    default_args: &[u8],
) -> (Vec<u8>, Option<std::path::PathBuf>, Vec<Vec<u8>>) {
    let mut words: Vec<Vec<u8>> = words(settings.get_or(program, default))
        .chain(words(settings.get_or(args, default_args)))
        .map(<[u8]>::to_vec)
        .collect();
    if words.is_empty() {
        return (Vec::new(), None, Vec::new());
    }
    let name = words.remove(0);
    let path = find_command(&name, settings.get_or("PATH", COMMAND_PATH));
    (name, path, words)
}

fn os(words: &[Vec<u8>]) -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    words
        .iter()
        .map(|w| std::ffi::OsString::from_vec(w.clone()))
        .collect()
}

/// `check_hw_mcelog`: `$MCELOG $MCELOG_ARGS` (`mcelog --client`) asked for each DIMM's errors
/// in the last 24 h; more corrected errors than `MCELOG_MAX_CORRECTED_RATE` (9) or uncorrected
/// than `MCELOG_MAX_UNCORRECTED_RATE` (0) fails. No output, or no daemon, passes (NHC says the
/// daemon is not running in its log; this says it beside the pass). With either limit set
/// empty, any output fails, as NHC decides.
pub fn mcelog(settings: &Settings) -> Result<Verdict, LineError> {
    let check = "check_hw_mcelog";
    let (name, path, args) = tool(settings, "MCELOG", b"mcelog", "MCELOG_ARGS", b"--client");
    let Some(path) = path else {
        // NHC reads the shell's "command not found" as output without counts and passes.
        return Ok(verdict(
            None,
            Some(format!("{} is not installed", show(&name))),
            None,
        ));
    };
    let mut text = match crate::command::run_capped(&path, &os(&args), TOOL_DEADLINE, TOOL_OUTPUT) {
        Ok(out) => {
            let mut t = out.stdout;
            t.extend_from_slice(&out.stderr);
            t
        }
        // One that cannot start prints the shell's complaint to NHC, no counts: a pass.
        Err(e @ crate::command::CommandError::Spawn { .. }) => {
            return Ok(verdict(None, Some(format!("{check}:  {e}")), None));
        }
        Err(e) => return Ok(verdict(Some(format!("{check}:  {e}")), None, None)),
    };
    while text.last() == Some(&b'\n') {
        text.pop();
    }
    if text.is_empty() {
        return Ok(verdict(None, None, None));
    }
    if text.windows(18).any(|w| w == b"Connection refused") {
        return Ok(verdict(
            None,
            Some(format!("{check}:  No mcelog daemon running")),
            None,
        ));
    }
    let corrected = settings.get_or("MCELOG_MAX_CORRECTED_RATE", b"9");
    let uncorrected = settings.get_or("MCELOG_MAX_UNCORRECTED_RATE", b"0");
    if corrected.is_empty() || uncorrected.is_empty() {
        return Ok(verdict(
            Some(format!("{check}:  MCEs detected in log.")),
            None,
            None,
        ));
    }
    // NHC splits the output on newlines, empty lines gone, and reads "<n> in 24h" two lines
    // below each heading.
    let lines: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    for (i, line) in lines.iter().enumerate() {
        let (kind, max) = match *line {
            b"corrected memory errors:" => ("corrected", corrected),
            b"uncorrected memory errors:" => ("UNcorrected", uncorrected),
            _ => continue,
        };
        let day = lines
            .get(i + 2)
            .and_then(|l| words(l).next())
            .unwrap_or(b"");
        if lt(&number(max, settings), &number(day, settings)) {
            return Ok(verdict(
                Some(format!(
                    "{check}:  MCEs detected - {} {kind} memory errors detected (limit of \
                     {}/day).",
                    show(day),
                    show(max)
                )),
                None,
                None,
            ));
        }
    }
    Ok(verdict(None, None, None))
}

/// One DMI structure: its handle, type number and name, and its lines, each prefixed with the
/// headings it sits under (`BIOS Information: Version: 2.0.1`), as NHC flattens them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmiHandle {
    /// `0x0000`.
    pub handle: Vec<u8>,
    /// The DMI type's number.
    pub type_id: Vec<u8>,
    /// The type's name (`BIOS Information`).
    pub type_name: Vec<u8>,
    /// The structure's lines, flattened.
    pub lines: Vec<Vec<u8>>,
}

/// `Handle 0x0000, DMI type 0, 24 bytes`: the handle and the type.
fn handle_line(line: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let rest = line.strip_prefix(b"Handle ")?;
    let comma = rest.iter().position(|b| *b == b',')?;
    let handle = &rest[..comma];
    let kind = rest[comma..].strip_prefix(b", DMI type ")?;
    let end = kind.iter().position(|b| !b.is_ascii_digit())?;
    let ok = !handle.is_empty()
        && handle
            .iter()
            .all(|b| b.is_ascii_hexdigit() || matches!(b, b'x' | b'X'))
        && end > 0
        && kind[end..].starts_with(b", ");
    ok.then(|| (handle.to_vec(), kind[..end].to_vec()))
}

/// dmidecode's output as NHC reads it: lines before the first `Handle` dropped, empty lines
/// dropped, each indented line prefixed with the lines it is indented under (each given a
/// trailing `:`), by the count of leading whitespace bytes. Unlike NHC 1.4.3, the last
/// structure keeps its lines (real output ends with an empty `End Of Table` one, so this
/// decides the same there).
pub fn parse_dmi(text: &[u8]) -> Vec<DmiHandle> {
    let mut out: Vec<DmiHandle> = Vec::new();
    let mut tags: Vec<Vec<u8>> = Vec::new();
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        if let Some((handle, type_id)) = handle_line(line) {
            out.push(DmiHandle {
                handle,
                type_id,
                type_name: Vec::new(),
                lines: Vec::new(),
            });
            tags.clear();
            continue;
        }
        let Some(current) = out.last_mut() else {
            continue;
        };
        let depth = line.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let body = &line[depth..];
        if body.is_empty() {
            continue;
        }
        if depth == 0 {
            current.type_name = body.to_vec();
        } else {
            tags.truncate(depth);
            let mut flat = tags.join(&b' ');
            if !flat.is_empty() {
                flat.push(b' ');
            }
            flat.extend_from_slice(body);
            current.lines.push(flat);
        }
        let mut tag = body.to_vec();
        if tag.last() != Some(&b':') {
            tag.push(b':');
        }
        tags.push(tag);
    }
    out
}

/// `check_dmi_data_match [-! | -n | !] [-h HANDLES] [-t TYPE] MATCH`: some line of the chosen
/// structures (all; those of a type number or name; the handles given, compared as numbers as
/// NHC's array index compares them) matches MATCH, or, negated, none does.
pub fn dmi_data_match(
    args: &[Vec<u8>],
    m: &dyn Machine,
    settings: &Settings,
) -> Result<Verdict, LineError> {
    let check = "check_dmi_data_match";
    let (given, at) = getopts(check, args, "!h:nt:")?;
    let (mut negate, mut handles, mut kind) = (false, Vec::<Vec<u8>>::new(), None::<Vec<u8>>);
    for (opt, value) in given {
        match opt {
            b'!' | b'n' => negate = true,
            b'h' => handles = words(value).map(<[u8]>::to_vec).collect(),
            b't' => kind = Some(value.to_vec()).filter(|k| !k.is_empty()),
            _ => {}
        }
    }
    let mut rest = &args[at..];
    if rest.first().map(Vec::as_slice) == Some(b"!") {
        negate = true;
        rest = &rest[1..];
    }
    let pattern = rest.join(&b' ');
    let (table, why) = match m.dmidecode() {
        Ok(text) => (parse_dmi(&text), None),
        Err(why) => (Vec::new(), Some(why)),
    };
    let no_handles = || {
        Ok(verdict(
            Some(format!("{check}:  No valid DMI handles found")),
            why.clone(),
            None,
        ))
    };
    let index = |h: &[u8]| number(h, settings).ok();
    let chosen: Vec<&DmiHandle> = if !handles.is_empty() {
        let wanted: Vec<Option<i64>> = handles.iter().map(|h| index(h)).collect();
        wanted
            .iter()
            .filter_map(|w| table.iter().find(|d| w.is_some() && index(&d.handle) == *w))
            .filter(|d| {
                kind.as_ref()
                    .is_none_or(|k| d.type_id == *k || d.type_name == *k)
            })
            .collect()
    } else if let Some(k) = &kind {
        if table.is_empty() {
            return no_handles();
        }
        table
            .iter()
            .filter(|d| {
                if k.iter().all(u8::is_ascii_digit) {
                    index(&d.type_id) == index(k)
                } else {
                    d.type_name == *k
                }
            })
            .collect()
    } else {
        table.iter().collect()
    };
    if chosen.is_empty() && handles.is_empty() {
        return no_handles();
    }
    for line in chosen.iter().flat_map(|h| &h.lines) {
        if mcheck(&pattern, line) {
            let failure = negate.then(|| {
                format!(
                    "{check}:  Match found for {}:  {}",
                    show(&pattern),
                    show(line)
                )
            });
            return Ok(verdict(failure, None, None));
        }
    }
    let failure = (!negate).then(|| format!("{check}:  No match found for {}", show(&pattern)));
    Ok(verdict(failure, None, None))
}

/// `check_dmi_raw_data_match [!] MATCH`: some line of dmidecode's output matches, or, negated,
/// none does.
pub fn dmi_raw_data_match(args: &[Vec<u8>], m: &dyn Machine) -> Result<Verdict, LineError> {
    let check = "check_dmi_raw_data_match";
    let (negate, rest) = match args.first().map(Vec::as_slice) {
        Some(b"!") => (true, &args[1..]),
        _ => (false, args),
    };
    let pattern = rest.join(&b' ');
    let text = m.dmidecode().unwrap_or_default();
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        if mcheck(&pattern, line) {
            let failure = negate.then(|| {
                format!(
                    "{check}:  Match found for {}:  {}",
                    show(&pattern),
                    show(line)
                )
            });
            return Ok(verdict(failure, None, None));
        }
    }
    let failure = (!negate).then(|| format!("{check}:  No match found for {}", show(&pattern)));
    Ok(verdict(failure, None, None))
}

/// `check_nv_healthmon` (`$NVIDIA_HEALTHMON $NVIDIA_HEALTHMON_ARGS`, `nvidia-healthmon -e -v`)
/// and `check_nvsmi_healthmon` (`$NVIDIA_SMI_HEALTHMON`, `nvidia-smi`): the tool's exit code
/// judged as NHC judges it. Where the tool is not installed, NHC fails; this skips and says so
/// (a node without GPUs is not a broken node).
pub fn gpu(check: &str, settings: &Settings) -> Result<Verdict, LineError> {
    let (name, path, args) = match check {
        "check_nv_healthmon" => tool(
            settings,
            "NVIDIA_HEALTHMON",
            b"nvidia-healthmon",
            "NVIDIA_HEALTHMON_ARGS",
            b"-e -v",
        ),
        _ => tool(
            settings,
            "NVIDIA_SMI_HEALTHMON",
            b"nvidia-smi",
            "NVIDIA_SMI_HEALTHMON_ARGS",
            b"",
        ),
    };
    let program = show(&name);
    let Some(path) = path else {
        // What NHC's own would say: check_nv_healthmon looks for the tool first;
        // check_nvsmi_healthmon runs it, and the shell answers 127.
        let nhc_says = if check == "check_nv_healthmon" {
            format!("{check}:  {program} not found or not runnable.")
        } else {
            format!("{check}:  {program}:  Returned failure code 127")
        };
        return Ok(verdict(
            None,
            None,
            Some(format!(
                "{check}:  {program} is not installed (no GPU tools here); NHC would fail \
                 \"{nhc_says}\""
            )),
        ));
    };
    let code = match crate::command::run_capped(&path, &os(&args), TOOL_DEADLINE, TOOL_OUTPUT) {
        Ok(out) => out.code.unwrap_or(-1),
        Err(e) => return Ok(verdict(Some(format!("{check}:  {e}")), None, None)),
    };
    let failure = match (check, code) {
        (_, 0) => None,
        ("check_nv_healthmon", c) if c > 127 => Some(format!(
            "{check}:  {program} caught fatal signal {}",
            c - 127
        )),
        ("check_nv_healthmon", c) => Some(format!("{check}:  {program} returned failure code {c}")),
        (_, c) => Some(format!("{check}:  {program}:  {}", nvidia_smi_says(c))),
    };
    Ok(verdict(failure, None, None))
}

/// What an `nvidia-smi` exit code means (its manual's list, as NHC words them).
fn nvidia_smi_says(code: i32) -> String {
    match code {
        2 => "Invalid argument or flag".into(),
        4 => "Permission denied".into(),
        8 => "Power cables not attached".into(),
        9 => "NVIDIA driver not loaded".into(),
        10 => "Interrupt issue with a GPU".into(),
        12 => "NVML shared library could not be found".into(),
        14 => "InfoROM is corrupted".into(),
        15 => "The GPU has fallen off the bus or has otherwise become inaccessible".into(),
        c if c > 127 => format!("Caught fatal signal {}", c & 0x7f),
        c => format!("Returned failure code {c}"),
    }
}
