//! One verdict of the document: a figure judged against a limit. A check is named by a
//! [`CheckId`] (section, rule, subject), written as `section.rule` or `section.rule:subject`.

use super::nullable::nullable;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// What a check is about: the section its rule belongs to, the rule, and the subject when the
/// rule applies to many (a client, a figure, a node pair). On the wire: `section.rule` or
/// `section.rule:subject`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CheckId {
    /// `network`, `memory`, `sleepbench`, `system`, `storage`, `baseline`, ...
    pub section: String,
    /// The rule within the section (`ping_loss`); empty for a check named by its section alone.
    pub rule: String,
    /// What the rule was applied to (a client, a figure), when it applies to many.
    pub subject: Option<String>,
}

impl CheckId {
    /// The check `section.rule`.
    pub fn new(section: &str, rule: &str) -> CheckId {
        CheckId {
            section: section.to_string(),
            rule: rule.to_string(),
            subject: None,
        }
    }

    /// The same rule applied to `subject`.
    pub fn on(mut self, subject: impl Into<String>) -> CheckId {
        self.subject = Some(subject.into());
        self
    }

    /// Reads the wire form: the section up to the first `.`, the rule up to the first `:`, the
    /// subject after it. Every string reads, and writes back unchanged: a dot with no rule
    /// after it (`memory.`, `memory.:x`) stays in the section, or it would be written without
    /// it (and `memory.:x` read as `memory:x`'s id).
    pub fn parse(text: &str) -> CheckId {
        let (section, rest) = match text.find('.') {
            Some(dot) if !matches!(text.as_bytes().get(dot + 1), None | Some(b':')) => {
                (&text[..dot], &text[dot + 1..])
            }
            Some(dot) => text.split_at(dot + 1),
            None => (text, ""),
        };
        let (rule, subject) = match rest.split_once(':') {
            Some((r, s)) => (r, Some(s.to_string())),
            None => (rest, None),
        };
        CheckId {
            section: section.to_string(),
            rule: rule.to_string(),
            subject,
        }
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.section)?;
        if !self.rule.is_empty() {
            write!(f, ".{}", self.rule)?;
        }
        if let Some(s) = &self.subject {
            write!(f, ":{s}")?;
        }
        Ok(())
    }
}

impl CheckId {
    /// Whether the wire form of this id is `text`.
    fn is(&self, text: &str) -> bool {
        let Some(mut rest) = text.strip_prefix(self.section.as_str()) else {
            return false;
        };
        if !self.rule.is_empty() {
            match rest
                .strip_prefix('.')
                .and_then(|r| r.strip_prefix(self.rule.as_str()))
            {
                Some(r) => rest = r,
                None => return false,
            }
        }
        match &self.subject {
            None => rest.is_empty(),
            Some(s) => rest.strip_prefix(':') == Some(s.as_str()),
        }
    }
}

impl PartialEq<str> for CheckId {
    fn eq(&self, other: &str) -> bool {
        self.is(other)
    }
}

impl PartialEq<&str> for CheckId {
    fn eq(&self, other: &&str) -> bool {
        self.is(other)
    }
}

impl Serialize for CheckId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CheckId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Parsed where the text lies: a document's dozens of checks, a copy each saved.
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = CheckId;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a check's name")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CheckId, E> {
                Ok(CheckId::parse(v))
            }
        }
        d.deserialize_str(Text)
    }
}

impl JsonSchema for CheckId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CheckId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

/// A verdict's outcome.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Within the limit.
    Pass,
    /// Worth a look.
    Warn,
    /// Outside the limit.
    Fail,
    /// Could not be judged (the figure is missing); the message says why.
    Skip,
    /// Measured under interference (steal, other load, a CPU quota, thermal throttling) beyond
    /// its limit: neither a pass nor a fault; the message says what interfered.
    Inconclusive,
}

impl Status {
    /// The status as written in the document.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
            Status::Inconclusive => "inconclusive",
        }
    }

    /// Order for people: failures first, then warnings, skips, passes.
    pub fn urgency(self) -> u8 {
        match self {
            Status::Fail => 0,
            Status::Warn => 1,
            Status::Inconclusive => 2,
            Status::Skip => 3,
            Status::Pass => 4,
        }
    }
}

/// One verdict: a figure judged against a limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Check {
    /// Rule name, `section.rule` (e.g. `sleepbench.total_cpu`); per-client and per-figure rules
    /// add `:client` or `:figure`.
    pub name: CheckId,
    /// Outcome.
    pub status: Status,
    /// The figure judged, in the unit the message gives; null when missing.
    #[schemars(required, transform = nullable)]
    pub value: Option<f64>,
    /// The limit it was judged against.
    #[schemars(required, transform = nullable)]
    pub limit: Option<f64>,
    /// One line a person can act on.
    pub message: String,
}

impl Check {
    /// The same check with no limit (for figures judged by presence, not size).
    pub fn without_limit(mut self) -> Self {
        self.limit = None;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_ids_read_back_as_written() {
        let id = CheckId::new("network", "ping_loss").on("fe80::1%eth0");
        assert_eq!(id.to_string(), "network.ping_loss:fe80::1%eth0");
        assert_eq!(CheckId::parse(&id.to_string()), id);
        for text in [
            "system.iommu",
            "baseline",
            "baseline.memory.peak_bandwidth.all reads",
            "memory.",
            "memory.:x",
            "memory:x",
            ".",
            "a..b",
        ] {
            assert_eq!(CheckId::parse(text).to_string(), text);
        }
        assert_ne!(CheckId::parse("memory.:x"), CheckId::parse("memory:x"));
        assert_eq!(
            CheckId::parse("memory.numa_ratio:Node-0>Node-1").section,
            "memory"
        );
        assert!(id == "network.ping_loss:fe80::1%eth0");
    }

    /// Read from JSON as `parse` reads the string, escaped or not; anything else is refused.
    #[test]
    fn check_ids_read_from_json_as_parsed() {
        for (json, text) in [
            (r#""network.ping_loss:h1""#, "network.ping_loss:h1"),
            (
                r#""memory.numa_ratio:Node-0\u003eNode-1""#,
                "memory.numa_ratio:Node-0>Node-1",
            ),
            (r#""baseline""#, "baseline"),
            (r#""""#, ""),
        ] {
            let id: CheckId = serde_json::from_str(json).unwrap();
            assert_eq!(id, CheckId::parse(text), "{json}");
        }
        assert!(serde_json::from_str::<CheckId>("5").is_err());
        assert!(serde_json::from_str::<CheckId>("null").is_err());
    }

    proptest::proptest! {
        /// Any name, written as JSON (escapes, NULs, dots and colons anywhere), reads as
        /// `parse` reads the name, and writes back as it was.
        #[test]
        fn any_check_name_reads_from_json_as_parsed(name in "[a-z.:\\u{0}\"\\\\é ]{0,24}") {
            let json = serde_json::to_string(&name).unwrap();
            let id: CheckId = serde_json::from_str(&json).unwrap();
            proptest::prop_assert_eq!(&id, &CheckId::parse(&name));
            proptest::prop_assert_eq!(&id.to_string(), &name);
            proptest::prop_assert!(id == name.as_str());
        }
    }
}
