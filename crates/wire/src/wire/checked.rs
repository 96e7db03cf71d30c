//! Reading a document whose whole text was checked first. A section ([`Part`]) is either its
//! figures or a reason, told apart by what it holds; read on its own, each section's text was
//! copied out, walked for a key named twice, and read again as its figures (three passes over
//! most of a document). When the byte scan ([`strict::clearly_no_repeated_key`]) vouches for
//! the whole text first, a section is read in place, in one pass: by its first key, it is its
//! figures (the key handed back to them) or, rarely, buffered and told apart as before.
//!
//! Only the readers' first attempt reads so ([`read_document`]); a text that fails it is read
//! the long way, whose errors name the section.

use super::document::{Document, OnlyReason, Part};
use super::strict;
use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, StringDeserializer};
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Error, MapAccess, Visitor};
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

thread_local! {
    /// Set while this thread reads a text the scan vouched for.
    static WHOLE_TEXT_CHECKED: Cell<bool> = const { Cell::new(false) };
}

/// Clears the mark however the read ends (a panic included).
struct Marked;

impl Drop for Marked {
    fn drop(&mut self) {
        WHOLE_TEXT_CHECKED.with(|c| c.set(false));
    }
}

/// Whether the section being read belongs to a text already checked for repeated keys.
pub(crate) fn whole_text_checked() -> bool {
    WHOLE_TEXT_CHECKED.with(Cell::get)
}

/// Reads `text` as a document in one pass when the scan vouches that it names no key twice;
/// `None` when it does not (the caller reads it the long way, which finds and names a repeat).
pub fn read_document(text: &str) -> Option<Result<Document, serde_json::Error>> {
    if !strict::clearly_no_repeated_key(text.as_bytes()) {
        return None;
    }
    WHOLE_TEXT_CHECKED.with(|c| c.set(true));
    let _marked = Marked;
    Some(serde_json::from_str(text))
}

/// A section read in place (see the module's text).
pub(crate) fn part_in_place<'de, T, D>(d: D) -> Result<Part<T>, D::Error>
where
    T: DeserializeOwned,
    D: Deserializer<'de>,
{
    d.deserialize_map(PartVisitor(PhantomData))
}

struct PartVisitor<T>(PhantomData<T>);

/// A key as read: borrowed from the text unless it had escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E: Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for PartVisitor<T> {
    type Value = Part<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a section: its figures, or {\"skipped\": ...} or {\"error\": ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part<T>, A::Error> {
        let first = map.next_key::<Key>()?.map(|k| k.0);
        if let Some(key) = first
            .as_deref()
            .filter(|k| matches!(*k, "skipped" | "error"))
        {
            // Perhaps a reason: the object is kept and told apart as the long way does.
            let mut object = serde_json::Map::new();
            object.insert(key.to_string(), map.next_value()?);
            while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
                object.insert(k, v);
            }
            return from_object(serde_json::Value::Object(object)).map_err(A::Error::custom);
        }
        T::deserialize(MapAccessDeserializer::new(Replay { first, map })).map(Part::Measured)
    }
}

/// A section buffered because its first key is `skipped` or `error`: a reason when that is all
/// it holds, else its figures.
fn from_object<T: DeserializeOwned>(
    object: serde_json::Value,
) -> Result<Part<T>, serde_json::Error> {
    if let Some(reason) = OnlyReason::deserialize(&object)
        .ok()
        .and_then(OnlyReason::not_measured)
    {
        return Ok(Part::NotMeasured(reason));
    }
    T::deserialize(object).map(Part::Measured)
}

/// The rest of a section's object, its first key handed back first.
struct Replay<'de, A> {
    first: Option<Cow<'de, str>>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(Cow::Borrowed(k)) => seed.deserialize(BorrowedStrDeserializer::new(k)).map(Some),
            Some(Cow::Owned(k)) => seed.deserialize(StringDeserializer::new(k)).map(Some),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
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
        assert!(!whole_text_checked(), "the mark is cleared");
    }
}
