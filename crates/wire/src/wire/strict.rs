//! A JSON value checked strictly: an object that names a key twice is an error, where serde
//! keeps the last one silently (in maps and ignored fields). A section is read as its type from
//! its own text, after this check, so a duplicated key must be caught here or it is never caught.

use foldhash::fast::FixedState;
use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

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

/// An object's key, borrowed from the text where it has no escapes.
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
}
