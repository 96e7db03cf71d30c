//! Turning the document into text: JSON for stdout and `--output` (ASCII only, one line unless
//! stdout is a terminal), the benchpress envelope, and the human summary for stderr.
//!
//! ASCII-only output matters under benchpress: it splits stdout with Python's `str.splitlines()`,
//! which also breaks lines at U+0085, U+2028 and U+2029; escaped, those cannot cut the document.

pub mod dcperf;
pub mod envelope;
pub mod figures;
pub mod html;
pub mod human;
pub mod junit;
pub mod memory;
pub mod network;
pub mod progress;
pub mod prometheus;
pub mod responder;
pub mod schema;
pub mod storage;
pub mod system;

use anyhow::Context;
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Serialises `value` as JSON, pretty when asked, with every non-ASCII character escaped.
pub fn render<T: Serialize>(value: &T, pretty: bool) -> anyhow::Result<String> {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .context("serialising the JSON document")?;
    Ok(ascii_escape(text))
}

/// Escapes non-ASCII characters as `\uXXXX` (surrogate pairs above U+FFFF). serde_json only emits
/// non-ASCII inside strings, so escaping the whole text keeps it valid JSON with the same value.
pub fn ascii_escape(json: String) -> String {
    if json.is_ascii() {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    out
}

/// Writes `text` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over the target, so no crash leaves half a document behind.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("--output '{}' names no file", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing --output '{}'", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_is_escaped_and_round_trips() {
        let value = serde_json::json!({"host": "h\u{2028}ö😀", "n": f64::NAN});
        let text = render(&value, false).unwrap();
        assert!(text.is_ascii());
        assert!(text.contains("\\u2028"));
        assert!(text.contains("\\ud83d\\ude00"));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["host"], "h\u{2028}ö😀");
        assert!(back["n"].is_null());
    }

    #[test]
    fn atomic_write_replaces_the_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, "{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let missing = dir.path().join("no/such/dir/out.json");
        let err = write_atomically(&missing, "{}").unwrap_err();
        assert!(format!("{err:#}").contains("--output"));
    }
}
