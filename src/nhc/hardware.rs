//! NHC's checks that ask a tool about the hardware: `check_hw_mcelog` (the mcelog daemon's
//! error counts), `check_dmi_data_match` (dmidecode's tables) and the GPU checks
//! `check_nv_healthmon` / `check_nvsmi_healthmon`. Each tool runs without a shell and with a
//! deadline; which tool runs comes from the file's settings (`MCELOG=`, `NVIDIA_HEALTHMON=`),
//! as NHC's variables say.

use super::matching::host_matches;
use super::state::{Machine, find_command};
use super::verdict::{Settings, Verdict};
use std::time::Duration;

/// How long a hardware tool may take (NHC's whole run has 30 s by default).
const TOOL_DEADLINE: Duration = Duration::from_secs(10);

/// A verdict about the machine.
fn verdict(failure: Option<String>, note: Option<String>, skip: Option<String>) -> Verdict {
    Verdict::of_machine(failure, note, skip)
}

/// A setting of the file, else NHC's default.
fn setting<'a>(settings: &'a Settings, name: &str, default: &'a str) -> &'a str {
    settings.get(name).map_or(default, String::as_str)
}

/// `check_hw_mcelog`: `$MCELOG $MCELOG_ARGS` (`mcelog --client`) asked for each DIMM's errors
/// in the last 24 h; more corrected errors than `MCELOG_MAX_CORRECTED_RATE` (9) or uncorrected
/// than `MCELOG_MAX_UNCORRECTED_RATE` (0) fails. No output, or no daemon, passes (NHC says the
/// daemon is not running in its log; this says it beside the pass). With either limit set
/// empty, any output fails, as NHC decides.
pub fn mcelog(settings: &Settings) -> Result<Verdict, String> {
    let check = "check_hw_mcelog";
    let program = setting(settings, "MCELOG", "mcelog");
    let args: Vec<&str> = setting(settings, "MCELOG_ARGS", "--client")
        .split_whitespace()
        .collect();
    let Some(path) = find_command(program) else {
        // NHC reads the shell's "command not found" as output without counts and passes.
        return Ok(verdict(
            None,
            Some(format!("{program} is not installed")),
            None,
        ));
    };
    let text = match crate::command::run(&path, &args, TOOL_DEADLINE) {
        Ok(out) => {
            let mut t = out.stdout_text();
            t.push_str(&String::from_utf8_lossy(&out.stderr));
            t
        }
        // One that cannot start prints the shell's complaint to NHC, no counts: a pass.
        Err(e @ crate::command::CommandError::Spawn { .. }) => {
            return Ok(verdict(None, Some(format!("{check}:  {e}")), None));
        }
        Err(e) => return Ok(verdict(Some(format!("{check}:  {e}")), None, None)),
    };
    if text.trim().is_empty() {
        return Ok(verdict(None, None, None));
    }
    if text.contains("Connection refused") {
        return Ok(verdict(
            None,
            Some(format!("{check}:  No mcelog daemon running")),
            None,
        ));
    }
    let limit = |name: &str, default: &str| -> Result<Option<u64>, String> {
        match setting(settings, name, default) {
            "" => Ok(None),
            v => v
                .parse()
                .map(Some)
                .map_err(|_| format!("{check}:  {name}={v} is no whole number")),
        }
    };
    let (Some(corrected), Some(uncorrected)) = (
        limit("MCELOG_MAX_CORRECTED_RATE", "9")?,
        limit("MCELOG_MAX_UNCORRECTED_RATE", "0")?,
    ) else {
        return Ok(verdict(
            Some(format!("{check}:  MCEs detected in log.")),
            None,
            None,
        ));
    };
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let (kind, max) = match line.trim() {
            "corrected memory errors:" => ("corrected", corrected),
            "uncorrected memory errors:" => ("UNcorrected", uncorrected),
            _ => continue,
        };
        // Two lines down: "<n> in 24h".
        let day: u64 = lines
            .get(i + 2)
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if day > max {
            return Ok(verdict(
                Some(format!(
                    "{check}:  MCEs detected - {day} {kind} memory errors detected (limit of \
                     {max}/day)."
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
    pub handle: String,
    /// The DMI type's number.
    pub type_id: String,
    /// The type's name (`BIOS Information`).
    pub type_name: String,
    /// The structure's lines, flattened.
    pub lines: Vec<String>,
}

/// dmidecode's output as NHC reads it: lines before the first `Handle` dropped, blank lines
/// dropped, each indented line prefixed with the lines it is indented under (each given a
/// trailing `:`), by the count of leading whitespace characters. Unlike NHC 1.4.3, the last
/// structure keeps its lines (real output ends with an empty `End Of Table` one, so this
/// decides the same there).
pub fn parse_dmi(text: &str) -> Vec<DmiHandle> {
    let head = regex::Regex::new(r"^Handle ([A-Fa-fXx0-9]+), DMI type ([0-9]+), ").expect("re");
    let mut out: Vec<DmiHandle> = Vec::new();
    let mut tags: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(c) = head.captures(line) {
            out.push(DmiHandle {
                handle: c[1].to_string(),
                type_id: c[2].to_string(),
                type_name: String::new(),
                lines: Vec::new(),
            });
            tags.clear();
            continue;
        }
        let Some(current) = out.last_mut() else {
            continue;
        };
        let body = line.trim_start();
        let depth = line.len() - body.len();
        if depth == 0 {
            current.type_name = body.to_string();
        } else {
            tags.truncate(depth);
            let mut flat = tags.join(" ");
            if !flat.is_empty() {
                flat.push(' ');
            }
            flat.push_str(body);
            current.lines.push(flat);
        }
        let mut tag = body.to_string();
        if !tag.ends_with(':') {
            tag.push(':');
        }
        tags.push(tag);
    }
    out
}

/// `check_dmi_data_match [-! | -n | !] [-h handles] [-t type] MATCH`: some line of the chosen
/// structures (all; those of a type number or name; the handles given) matches MATCH (an NHC
/// match string over the flattened line), or, negated, none does.
pub fn dmi_data_match(args: &[String], m: &dyn Machine) -> Result<Verdict, String> {
    let check = "check_dmi_data_match";
    let (mut negate, mut handles, mut kind) = (false, Vec::<String>::new(), None::<String>);
    let mut i = 0;
    while let Some(a) = args.get(i).filter(|a| a.starts_with('-') && a.len() > 1) {
        let value = || {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{check}:  Option {a} requires an argument."))
        };
        match a.as_str() {
            "-!" | "-n" => negate = true,
            "-h" => {
                handles = value()?.split_whitespace().map(str::to_string).collect();
                i += 1;
            }
            "-t" => {
                kind = Some(value()?);
                i += 1;
            }
            _ => return Err(format!("{check}:  Invalid option:  {a}")),
        }
        i += 1;
    }
    let mut rest = &args[i..];
    if rest.first().map(String::as_str) == Some("!") {
        negate = true;
        rest = &rest[1..];
    }
    let pattern = rest.join(" ");
    if pattern.is_empty() {
        return Err(format!("{check}:  Syntax error:  give a string to match"));
    }
    let table = match m.dmidecode() {
        Ok(text) => parse_dmi(&text),
        Err(why) => {
            return Ok(verdict(
                Some(format!("{check}:  No valid DMI handles found ({why})")),
                None,
                None,
            ));
        }
    };
    let of_kind = |h: &DmiHandle| {
        kind.as_ref()
            .is_none_or(|k| &h.type_id == k || &h.type_name == k)
    };
    let chosen: Vec<&DmiHandle> = table
        .iter()
        .filter(|h| handles.is_empty() || handles.contains(&h.handle))
        .filter(|h| of_kind(h))
        .collect();
    if chosen.is_empty() {
        return Ok(verdict(
            Some(format!("{check}:  No valid DMI handles found")),
            None,
            None,
        ));
    }
    for line in chosen.iter().flat_map(|h| &h.lines) {
        if host_matches(&pattern, line)? {
            let failure = negate.then(|| format!("{check}:  Match found for {pattern}:  {line}"));
            return Ok(verdict(failure, None, None));
        }
    }
    let failure = (!negate).then(|| format!("{check}:  No match found for {pattern}"));
    Ok(verdict(failure, None, None))
}

/// `check_nv_healthmon` (`$NVIDIA_HEALTHMON $NVIDIA_HEALTHMON_ARGS`, `nvidia-healthmon -e -v`)
/// and `check_nvsmi_healthmon` (`$NVIDIA_SMI_HEALTHMON`, `nvidia-smi`): the tool's exit code
/// judged as NHC judges it. Where the tool is not installed, NHC fails; this skips and says so
/// (a node without GPUs is not a broken node).
pub fn gpu(check: &str, settings: &Settings) -> Result<Verdict, String> {
    let (program, args) = match check {
        "check_nv_healthmon" => (
            setting(settings, "NVIDIA_HEALTHMON", "nvidia-healthmon"),
            setting(settings, "NVIDIA_HEALTHMON_ARGS", "-e -v"),
        ),
        _ => (
            setting(settings, "NVIDIA_SMI_HEALTHMON", "nvidia-smi"),
            setting(settings, "NVIDIA_SMI_HEALTHMON_ARGS", ""),
        ),
    };
    let Some(path) = find_command(program) else {
        return Ok(verdict(
            None,
            None,
            Some(format!(
                "{check}:  {program} is not installed (no GPU tools here); NHC would fail \
                 \"{program} not found or not runnable\""
            )),
        ));
    };
    let argv: Vec<&str> = args.split_whitespace().collect();
    let code = match crate::command::run(&path, &argv, TOOL_DEADLINE) {
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
