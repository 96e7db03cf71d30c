//! A JSON value checked strictly: an object that names a key twice is an error, where serde
//! keeps the last one silently (in maps and ignored fields). A section is read as its type from
//! its own text, after this check, so a duplicated key must be caught here or it is never caught.

use foldhash::fast::FixedState;
use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// Checks that `text`, one JSON value, names no key twice in any object; the error says
/// which key and where. Text already known to be valid JSON (a section's raw text) is told
/// fine by a scan of its bytes ([`clearly_no_repeated_key`]); anything that scan cannot vouch
/// for is walked by serde ([`NoRepeatedKey`]), which also words the error.
pub fn check(text: &str) -> Result<(), serde_json::Error> {
    if clearly_no_repeated_key(text.as_bytes()) {
        return Ok(());
    }
    serde_json::from_str::<NoRepeatedKey>(text).map(|_| ())
}

/// The most keys an object may have for the byte scan to compare them pairwise; a larger one
/// is left to the hashed walk.
const SCANNED_KEYS: usize = 64;

/// The deepest nesting the scan follows: serde_json's own limit, past which the reading fails
/// anyway (and a hostile file of brackets costs no memory).
const SCANNED_DEPTH: usize = 128;

/// The bytes the scan stops at: brackets, commas and quotes.
const STRUCTURAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    let stops = b"{}[],\"";
    while i < stops.len() {
        table[stops[i] as usize] = true;
        i += 1;
    }
    table
};

/// Whether `text` clearly names no key twice: `true` only when every object's keys, spelled
/// without escapes, were seen to differ. Made for valid JSON (it does not validate: a string's
/// end and a container's nesting are all it follows); on anything it does not expect (an
/// escape in a key, a large object, unbalanced brackets, a truncated string) it says `false`
/// and the caller walks the text with serde. Numbers and strings that are values are skipped
/// without being read: the serde walk parsed every number, twice the time of the scan.
pub fn clearly_no_repeated_key(text: &[u8]) -> bool {
    // The keys of the open objects, flat; per open container, where its keys start (`None`
    // for an array).
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut open: Vec<Option<usize>> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < text.len() {
        // Numbers, literals and white space are stepped over in a tight loop: most of a
        // document's bytes.
        while i < text.len() && !STRUCTURAL[usize::from(text[i])] {
            i += 1;
        }
        let Some(&byte) = text.get(i) else { break };
        match byte {
            b'{' | b'[' if open.len() >= SCANNED_DEPTH => return false,
            b'{' => {
                open.push(Some(keys.len()));
                expect_key = true;
            }
            b'[' => {
                open.push(None);
                expect_key = false;
            }
            b'}' | b']' => {
                match open.pop() {
                    Some(Some(start)) if byte == b'}' => keys.truncate(start),
                    Some(None) if byte == b']' => {}
                    _ => return false,
                }
                expect_key = false;
            }
            b',' => expect_key = matches!(open.last(), Some(Some(_))),
            b'"' => {
                let start = i + 1;
                let Some(len) = memchr::memchr2(b'"', b'\\', &text[start..]) else {
                    return false;
                };
                let mut end = start + len;
                if text[end] == b'\\' {
                    if expect_key {
                        return false;
                    }
                    // A value with escapes: step over each escaped byte to the closing quote.
                    loop {
                        match text.get(end) {
                            Some(b'\\') => end += 2,
                            Some(b'"') => break,
                            Some(_) => end += 1,
                            None => return false,
                        }
                    }
                }
                if expect_key {
                    let Some(Some(first)) = open.last() else {
                        return false;
                    };
                    let key = &text[start..end];
                    let siblings = &keys[*first..];
                    if siblings.len() >= SCANNED_KEYS || siblings.contains(&key) {
                        return false;
                    }
                    keys.push(key);
                    expect_key = false;
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    open.is_empty()
}

/// A JSON value walked without being kept, that fails where an object names a key twice: the
/// check costs a scan (a section is then read as its type from its text, never built as a
/// `serde_json::Value` first).
pub struct NoRepeatedKey;

impl<'de> Deserialize<'de> for NoRepeatedKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WalkVisitor).map(|()| NoRepeatedKey)
    }
}

struct WalkVisitor;

/// An object's key, borrowed from the text where it has no escapes (also how a section read in
/// place reads its first key, `part.rs`).
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(v.into()))
            }

            fn visit_str<E: Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(v.to_string().into()))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for WalkVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E: Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<NoRepeatedKey>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Most objects have a few keys: compared in a list, no hash and no allocation; a large
        // one is hashed.
        const LISTED: usize = 16;
        let mut listed: Vec<Cow<'de, str>> = Vec::new();
        let mut hashed: HashSet<Cow<'de, str>, FixedState> = HashSet::default();
        while let Some(Key(key)) = map.next_key::<Key>()? {
            map.next_value::<NoRepeatedKey>()?;
            let repeated = if hashed.is_empty() && listed.len() < LISTED {
                let seen = listed.contains(&key);
                listed.push(key.clone());
                seen
            } else {
                hashed.extend(listed.drain(..));
                !hashed.insert(key.clone())
            };
            if repeated {
                return Err(A::Error::custom(format!("duplicate key '{key}'")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_an_error_at_any_depth() {
        for text in [r#"{"a": 1, "a": 2}"#, r#"{"x": [{"b": 1, "b": 1}]}"#] {
            let e = serde_json::from_str::<NoRepeatedKey>(text).err().unwrap();
            assert!(e.to_string().contains("duplicate key"), "{e}");
        }
        assert!(
            serde_json::from_str::<NoRepeatedKey>(
                r#"{"a": [1, {"b": 2.5}], "\u0061b": {}, "ab2": null}"#
            )
            .is_ok()
        );
        let escaped = serde_json::from_str::<NoRepeatedKey>(r#"{"ab": 1, "\u0061b": 2}"#);
        assert!(
            escaped.is_err(),
            "a key spelled with an escape is the same key"
        );
    }

    /// Objects of 0 to 40 keys (the list and the hashed set both), a repeat anywhere or none:
    /// refused exactly when a key repeats.
    #[test]
    fn a_repeat_is_found_in_small_and_large_objects() {
        let mut rng = crate::rng::Rng::new(11);
        for _ in 0..3000 {
            let n = rng.below(41);
            let mut keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
            let repeat = n > 1 && rng.below(2) == 0;
            if repeat {
                let (from, to) = (rng.below(n), rng.below(n));
                if from != to {
                    keys[to] = keys[from].clone();
                }
            }
            let unique = keys.iter().collect::<std::collections::HashSet<_>>().len() == n;
            let body: Vec<String> = keys.iter().map(|k| format!("\"{k}\": [1]")).collect();
            let text = format!("{{{}}}", body.join(", "));
            let read = serde_json::from_str::<NoRepeatedKey>(&text);
            assert_eq!(read.is_ok(), unique, "{text}");
        }
    }

    /// Generated JSON: objects and arrays nested to four levels, keys drawn from a few names (so
    /// repeats are common), some spelled with an escape, strings with escapes and quotes,
    /// numbers. The scan never vouches for a text serde refuses, and `check` agrees with the
    /// serde walk on every one.
    fn json() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("ab".to_string()),
            Just("\\u0061".to_string()),
            Just("c\\\"d".to_string()),
            Just("é".to_string()),
        ];
        let leaf = prop_oneof![
            Just("1".to_string()),
            Just("-2.5e3".to_string()),
            Just("true".to_string()),
            Just("null".to_string()),
            Just("\"x\\\"y\\\\\"".to_string()),
            Just("\"{[,:\"".to_string()),
        ];
        leaf.prop_recursive(4, 64, 8, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key.clone(), inner), 0..8).prop_map(|v| {
                    let pairs: Vec<String> =
                        v.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{{ {} }}", pairs.join(", "))
                }),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn the_scan_never_vouches_for_a_repeat(text in json()) {
            let walked = serde_json::from_str::<NoRepeatedKey>(&text);
            if clearly_no_repeated_key(text.as_bytes()) {
                proptest::prop_assert!(walked.is_ok(), "{}", text);
            }
            proptest::prop_assert_eq!(check(&text).is_ok(), walked.is_ok(), "{}", text);
        }

        /// Any bytes, a truncated text among them: an answer, never a panic, and never `true`
        /// for a text serde refuses.
        #[test]
        fn the_scan_takes_any_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), cut in 0usize..200, text in json()) {
            let _ = clearly_no_repeated_key(&bytes);
            let cut = &text.as_bytes()[..cut.min(text.len())];
            if clearly_no_repeated_key(cut) {
                if let Ok(s) = std::str::from_utf8(cut) {
                    if let Err(e) = serde_json::from_str::<NoRepeatedKey>(s) {
                        proptest::prop_assert!(!e.to_string().contains("duplicate"), "{}", s);
                    }
                }
            }
        }
    }

    #[test]
    fn the_scan_reads_our_sections() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/document.json"
        ))
        .unwrap();
        assert!(clearly_no_repeated_key(doc.as_bytes()));
        assert!(!clearly_no_repeated_key(
            br#"{"memory": {"a": 1, "b": [{"c": 1}], "a": 2}}"#
        ));
        assert!(!clearly_no_repeated_key(br#"{"a": 1, "\u0061": 2}"#));
        assert!(clearly_no_repeated_key(
            br#"{"a": "\"a\": 1", "b": {"a": 1}}"#
        ));
        // Nesting past serde_json's limit is left to serde, which refuses it.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(!clearly_no_repeated_key(deep.as_bytes()));
        assert!(serde_json::from_str::<NoRepeatedKey>(&deep).is_err());
        let fine = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(clearly_no_repeated_key(fine.as_bytes()));
    }
}
