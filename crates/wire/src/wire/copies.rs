//! DCPerf's names for figures a document also holds under ours (`iperf3_bandwidth` beside
//! `"iperf3 bandwidth"`, `memory.delay_bandwidth_latency` beside `delay_latency_bandwidth`):
//! written for dashboards built on DCPerf's runs, never judged. The fleet's readers read a
//! document only to judge it, so they step over these copies unparsed ([`skipped`]): the sweep's
//! copy was a third of the memory section's numbers. Every other reading (`merge`, a lone
//! machine's page) reads them.

use serde::de::{Deserialize, Deserializer, IgnoredAny};
use std::cell::Cell;

thread_local! {
    static SKIPPING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with DCPerf's copies read as absent (their default) in this thread; the text is
/// still stepped over, so it must still be JSON, and its repeated keys are still refused by the
/// whole text's check.
pub fn skipped<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SKIPPING.set(self.0);
        }
    }
    let _restore = Restore(SKIPPING.replace(true));
    f()
}

/// The field's `deserialize_with`: the copy, or its default inside [`skipped`].
pub(crate) fn copy<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    if SKIPPING.get() {
        IgnoredAny::deserialize(d)?;
        Ok(T::default())
    } else {
        T::deserialize(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::document::Document;

    fn fixture() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/document.json"
        ))
        .unwrap()
    }

    /// Inside `skipped` the copies are absent and all else is as read outside it; outside (and
    /// after, even when `f` panicked) they are read.
    #[test]
    fn only_the_copies_are_skipped_and_only_inside() {
        let text = fixture();
        let full: Document = serde_json::from_str(&text).unwrap();
        let memory = full.memory().unwrap();
        assert!(!memory.delay_bandwidth_latency.is_empty());
        assert!(full.iperf3_bandwidth_dcperf.is_some());

        let judged: Document = skipped(|| serde_json::from_str(&text)).unwrap();
        assert!(judged.memory().unwrap().delay_bandwidth_latency.is_empty());
        assert_eq!(judged.iperf3_bandwidth_dcperf, None);
        let mut without = full.clone();
        if let Some(crate::wire::part::Part::Measured(m)) = &mut without.memory {
            m.delay_bandwidth_latency.clear();
        }
        without.iperf3_bandwidth_dcperf = None;
        assert_eq!(
            serde_json::to_value(&judged).unwrap(),
            serde_json::to_value(&without).unwrap()
        );

        let _ = std::panic::catch_unwind(|| skipped(|| panic!("inside")));
        let again: Document = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_value(&again).unwrap(),
            serde_json::to_value(&full).unwrap()
        );
    }

    /// A copy that is not what its type reads is no error when skipped (it is never judged),
    /// and still one when read.
    #[test]
    fn a_skipped_copy_need_not_read() {
        let mut doc: serde_json::Value = serde_json::from_str(&fixture()).unwrap();
        doc["iperf3_bandwidth"] = serde_json::json!([{"hostname": 5}]);
        doc["memory"]["delay_bandwidth_latency"] = serde_json::json!({"FullRandom": "x"});
        let text = doc.to_string();
        assert!(skipped(|| serde_json::from_str::<Document>(&text)).is_ok());
        assert!(serde_json::from_str::<Document>(&text).is_err());
    }
}
