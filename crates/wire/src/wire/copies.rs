//! DCPerf's names for figures a document also holds under ours (`iperf3_bandwidth` beside
//! `"iperf3 bandwidth"`, `memory.delay_bandwidth_latency` beside `delay_latency_bandwidth`):
//! written for dashboards built on DCPerf's runs, never judged. The fleet's readers read a
//! document only to judge it, so they step over these copies unparsed ([`skipped`]): the sweep's
//! copy was a third of the memory section's numbers. Every other reading (`merge`, a lone
//! machine's page) reads them. Tested where they are read (`read.rs`): a test here would import
//! the document, which imports this.

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
