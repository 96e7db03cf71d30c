//! A section of a document: its figures, or why there are none ([`Part`]), told apart by what
//! it holds. Read on its own (the long way), a section's text is copied out, checked for a key
//! named twice ([`strict::check`]), tried as a reason and read as its figures. In a text the
//! byte scan vouched for as a whole (`reading_checked_text`, from `checked.rs`), a section is read
//! in place, in one pass: by its first key, it is its figures (the key handed back to them) or,
//! rarely, buffered and told apart as the long way does.

use super::strict::{self, Key};
use schemars::JsonSchema;
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, StringDeserializer};
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Error, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

/// A section's figures, or why there are none. Read strictly: an object holding only `skipped`
/// or `error` (a string) is a section not measured; anything else must be the section's figures,
/// or reading fails naming what is wrong (never a silent "not measured").
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Part<T> {
    /// The section ran.
    Measured(T),
    /// The section did not run or failed before producing figures.
    NotMeasured(NotMeasured),
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Part<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        if whole_text_checked() {
            return part_in_place(d);
        }
        // The section's text, read three times without building it as a value (which cost a
        // fleet's reader most of its time): for a key named twice anywhere, as a reason, as
        // the section's figures.
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        let text = raw.get();
        strict::check(text).map_err(D::Error::custom)?;
        let may_be_reason = !matches!(first_key(text), Some(k) if k != "skipped" && k != "error");
        if let Some(reason) = may_be_reason
            .then(|| serde_json::from_str::<OnlyReason>(text).ok())
            .flatten()
            .and_then(OnlyReason::not_measured)
        {
            return Ok(Part::NotMeasured(reason));
        }
        serde_json::from_str(text)
            .map(Part::Measured)
            .map_err(D::Error::custom)
    }
}

/// The first key of a JSON object's text, when it is spelled without escapes; `None` for
/// anything else (no key, an escape, not an object), which the caller reads the long way. A
/// section whose first key is neither `skipped` nor `error` is no reason: told without
/// reading it as one (whose refusal, an error built with its message, cost a fleet's reader
/// more than the section).
fn first_key(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find(['"', '\\'])?;
    (rest.as_bytes()[end] == b'"').then(|| &rest[..end])
}

/// An object that holds a reason and nothing else (`{"skipped": "..."}`, `{"error": "..."}`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OnlyReason {
    skipped: Option<String>,
    error: Option<String>,
}

impl OnlyReason {
    /// The section not measured, when exactly one of the two is set.
    pub(crate) fn not_measured(self) -> Option<NotMeasured> {
        match self {
            OnlyReason {
                skipped: Some(why),
                error: None,
            } => Some(NotMeasured::skipped(why)),
            OnlyReason {
                skipped: None,
                error: Some(why),
            } => Some(NotMeasured::error(why)),
            _ => None,
        }
    }
}

impl<T> Part<T> {
    /// The figures, if the section produced any.
    pub fn measured(&self) -> Option<&T> {
        match self {
            Part::Measured(t) => Some(t),
            Part::NotMeasured(_) => None,
        }
    }
}

/// Why a section has no figures: exactly one of the two fields is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NotMeasured {
    /// The section was not run, and why (e.g. `interrupted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The section failed, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl NotMeasured {
    /// A section that failed.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            skipped: None,
            error: Some(message.into()),
        }
    }

    /// A section that was not run.
    pub fn skipped(reason: impl Into<String>) -> Self {
        Self {
            skipped: Some(reason.into()),
            error: None,
        }
    }

    /// The reason, whichever field holds it.
    pub fn reason(&self) -> &str {
        self.error
            .as_deref()
            .or(self.skipped.as_deref())
            .unwrap_or("no reason given")
    }
}

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
fn whole_text_checked() -> bool {
    WHOLE_TEXT_CHECKED.with(Cell::get)
}

/// Runs `read` with this thread's sections read in place: for a text the byte scan vouched
/// for ([`strict::clearly_no_repeated_key`]), whose sections need no check of their own.
pub(crate) fn reading_checked_text<R>(read: impl FnOnce() -> R) -> R {
    WHOLE_TEXT_CHECKED.with(|c| c.set(true));
    let _marked = Marked;
    read()
}

/// A section read in place (see the module's text).
fn part_in_place<'de, T, D>(d: D) -> Result<Part<T>, D::Error>
where
    T: DeserializeOwned,
    D: Deserializer<'de>,
{
    d.deserialize_map(PartVisitor(PhantomData))
}

struct PartVisitor<T>(PhantomData<T>);

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

/// Whether this thread is reading sections in place now (the tests' look at the mark).
#[cfg(test)]
pub(crate) fn whole_text_checked_now() -> bool {
    whole_text_checked()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A section's figures, for the tests: one number.
    #[derive(Debug, Deserialize)]
    struct SleepBench {
        #[serde(rename = "calls per second")]
        #[allow(dead_code)]
        calls_per_second: f64,
    }

    /// The shortcut never calls a reason what the long way would not: whenever it names a first
    /// key other than `skipped` and `error`, reading the text as a reason fails; and the
    /// sections read as before (a reason, an escaped reason, figures, an empty object).
    #[test]
    fn a_first_key_other_than_a_reason_is_never_a_reason() {
        let texts = [
            r#"{"skipped": "no clients"}"#,
            r#" { "error" : "boom" }"#,
            r#"{"\u0073kipped": "escaped"}"#,
            r#"{"skippedx": 1}"#,
            r#"{"calls per second": 1.0, "skipped": "x"}"#,
            r#"{"error": "x", "calls per second": 1.0}"#,
            r#"{}"#,
            r#"[1]"#,
            r#"{"a\"b": 1}"#,
        ];
        for text in texts {
            if let Some(k) = first_key(text).filter(|k| *k != "skipped" && *k != "error") {
                assert!(
                    serde_json::from_str::<OnlyReason>(text).is_err(),
                    "{k}: {text}"
                );
            }
        }
        assert_eq!(first_key(r#"{"\u0073kipped": 1}"#), None);
        assert_eq!(first_key(r#" {"a": 1}"#), Some("a"));
        let part = |t: &str| serde_json::from_str::<Part<SleepBench>>(t);
        assert!(
            matches!(part(r#"{"\u0073kipped": "why"}"#), Ok(Part::NotMeasured(n)) if n.skipped.as_deref() == Some("why"))
        );
        assert!(
            matches!(part(r#"{"error": "why"}"#), Ok(Part::NotMeasured(n)) if n.error.as_deref() == Some("why"))
        );
    }
}
