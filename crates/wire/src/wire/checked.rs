//! Reading a document whose whole text was checked first: when the byte scan
//! ([`strict::clearly_no_repeated_key`]) vouches that no key is named twice anywhere, the
//! document is read in one pass, each section in place ([`part`]). Only the readers' first
//! attempt reads so ([`read_document`]); a text that fails it is read the long way, whose errors
//! name the section.

use super::document::Document;
use super::part;
use super::strict;

/// Reads `text` as a document in one pass when the scan vouches that it names no key twice;
/// `None` when it does not (the caller reads it the long way, which finds and names a repeat).
pub fn read_document(text: &str) -> Option<Result<Document, serde_json::Error>> {
    if !strict::clearly_no_repeated_key(text.as_bytes()) {
        return None;
    }
    Some(part::reading_checked_text(|| serde_json::from_str(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every section of the fixture replaced by each shape a section can take (a reason, both
    /// reasons, a reason that is not a string, a reason beside figures in either order, an
    /// empty object, an array, null, an escaped first key): read in one pass, the document
    /// is the one the long way reads, or both refuse it (the reader then reads it the long
    /// way, whose error names the section).
    #[test]
    fn in_place_reads_as_the_long_way() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/document.json"
        ))
        .unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut tried = 0;
        for section in ["sleepbench", "memory", "storage", "system"] {
            let figures = doc[section].to_string();
            let inner = figures.trim_start_matches('{').trim_end_matches('}');
            let shapes = [
                figures.clone(),
                r#"{"skipped": "no clients"}"#.to_string(),
                r#"{"error": "boom"}"#.to_string(),
                r#"{"\u0065rror": "escaped"}"#.to_string(),
                r#"{"skipped": "a", "error": "b"}"#.to_string(),
                r#"{"error": 5}"#.to_string(),
                format!(r#"{{"skipped": "x", {inner}}}"#),
                format!(r#"{{{inner}, "error": "late"}}"#),
                "{}".to_string(),
                "[]".to_string(),
                "null".to_string(),
            ];
            for shape in shapes {
                let whole = text.replacen(&figures, &shape, 1);
                let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
                v[section] = serde_json::from_str(&shape).unwrap();
                let whole = if whole == text { v.to_string() } else { whole };
                let long = serde_json::from_str::<Document>(&whole);
                let quick = read_document(&whole).expect("the scan vouches for these");
                assert_eq!(quick.is_ok(), long.is_ok(), "{section}: {shape}");
                if let (Ok(q), Ok(l)) = (&quick, &long) {
                    assert_eq!(
                        serde_json::to_value(q).unwrap(),
                        serde_json::to_value(l).unwrap(),
                        "{section}: {shape}"
                    );
                    tried += 1;
                }
            }
        }
        assert_eq!(tried, 4 * 7, "shapes read");
        assert!(!part::whole_text_checked_now(), "the mark is cleared");
    }
}
