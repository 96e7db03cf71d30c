//! `health_check nhc FILE`: an nhc.conf's lines run on this machine one by one, and what each
//! did printed as JSON (the line, its text as NHC evaluates it, its checks, or why it was
//! refused or where NHC's bash would stop), with what the file's reading said. Every refused
//! line is listed (exit 2), not only the first. For operators
//! trying their NHC file before it is trusted with a node, and (with `--cases`) for the
//! differential runs beside NHC itself.

use super::exit::Exit;
use crate::nhc::bytes::show;
use crate::nhc::conf::{Conf, READ_DEADLINE, SIZE_LIMIT};
use crate::nhc::state::{Host, Machine};
use serde_json::{Value, json};
use std::path::Path;

/// Runs the file (or each of its cases) and prints the JSON.
pub fn run(file: &Path, host: Option<&str>, cases: bool, settings: &[(String, String)]) -> Exit {
    let host = host.map_or_else(crate::nhc::host_name, str::to_string);
    let machine = crate::nhc::Once::new(&Host);
    let doc = if cases {
        let read = match crate::trust::read_root_file(file, SIZE_LIMIT) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("health_check: error: {}: {e}", file.display());
                return Exit::Usage;
            }
        };
        let root_only = read.root_only.is_ok();
        let cases: Vec<Value> = split_cases(&read.bytes)
            .into_iter()
            .map(|(id, text)| {
                let lines = match Conf::parse(text, file, host.as_bytes(), root_only) {
                    Ok(mut conf) => {
                        conf.command_line = command_line(settings);
                        lines(&conf, &machine)
                    }
                    Err(e) => vec![json!({
                        "line": e.line,
                        "outcome": "config_error",
                        "error": e.message,
                        "checks": [],
                    })],
                };
                json!({"id": show(id), "lines": lines})
            })
            .collect();
        json!({"host": host, "cases": cases})
    } else {
        // Every line's fault at once, not the first only: a site's file may have dozens.
        let mut conf = match Conf::read(file, &host, READ_DEADLINE) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("health_check: error: {e}");
                return Exit::Usage;
            }
        };
        conf.command_line = command_line(settings);
        for note in &conf.notes {
            eprintln!("health_check: note: {}: {note}", file.display());
        }
        let mut all = lines(&conf, &machine);
        all.extend(conf.refused.iter().map(|e| {
            json!({
                "line": e.line,
                "column": e.column,
                "outcome": "refused",
                "error": e.message,
                "checks": [],
            })
        }));
        all.sort_by_key(|l| l["line"].as_u64());
        let doc = json!({"host": host, "notes": conf.notes, "lines": all});
        if conf.refused.is_empty() {
            return super::print_pretty(&doc);
        }
        let printed = super::print_pretty(&doc);
        for e in &conf.refused {
            eprintln!("health_check: error: {e}");
        }
        eprintln!(
            "health_check: error: {}: {} line(s) for this host cannot be honoured (outcome \
             \"refused\" above): --nhc-conf refuses the file until each is changed or masked \
             to other hosts",
            file.display(),
            conf.refused.len()
        );
        return if printed == Exit::Ok {
            Exit::Usage
        } else {
            printed
        };
    };
    super::print_pretty(&doc)
}

/// The settings as bytes.
fn command_line(settings: &[(String, String)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    settings
        .iter()
        .map(|(k, v)| (k.clone().into_bytes(), v.clone().into_bytes()))
        .collect()
}

/// What each line of `conf` did.
fn lines(conf: &Conf, m: &dyn Machine) -> Vec<Value> {
    crate::nhc::run(conf, m)
        .into_iter()
        .map(|o| {
            let checks: Vec<Value> = o
                .checks
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name.to_string(),
                        "status": c.status.as_str(),
                        "message": c.message,
                    })
                })
                .collect();
            let mut notes = o.notes.clone();
            notes.extend(o.unset.iter().map(|n| {
                format!(
                    "${} is not set here: it expands to nothing, in NHC as here",
                    show(n)
                )
            }));
            json!({
                "line": o.number,
                "text": show(&o.text),
                "outcome": if o.stopped.is_some() { "stopped" } else { "ran" },
                "error": o.stopped,
                "checks": checks,
                "notes": notes,
            })
        })
        .collect()
}

/// The cases of a file: the text after each line that is exactly `#@case ID`, to the next.
fn split_cases(bytes: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut current: Option<(&[u8], usize)> = None;
    let mut at = 0;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let bare = line.strip_suffix(b"\n").unwrap_or(line);
        if let Some(id) = bare.strip_prefix(b"#@case ") {
            if let Some((prev, start)) = current.take() {
                out.push((prev, &bytes[start..at]));
            }
            current = Some((id, at + line.len()));
        }
        at += line.len();
    }
    if let Some((id, start)) = current {
        out.push((id, &bytes[start..]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_the_text_between_their_markers() {
        let cases = split_cases(b"ignored\n#@case a\n* || x\n#@case b\n* || y\n* || z\n");
        assert_eq!(
            cases,
            [
                (&b"a"[..], &b"* || x\n"[..]),
                (&b"b"[..], &b"* || y\n* || z\n"[..])
            ]
        );
    }
}
