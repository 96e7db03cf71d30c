//! A seam for the tests' fault injection. The shipped binary installs nothing here, so no
//! variable or file can make it panic or hang on purpose; the tests' build
//! (`examples/health_check_with_faults.rs`) installs a hook that does, at the start of a section.

use std::sync::OnceLock;

/// Called with a section's name as it starts measuring.
pub type SectionHook = fn(&str);

static SECTION_HOOK: OnceLock<SectionHook> = OnceLock::new();

/// Installs the hook (once per process; a second call is ignored).
pub fn set_section_hook(hook: SectionHook) {
    let _ = SECTION_HOOK.set(hook);
}

/// Runs the hook, if one was installed, for the section `name`.
pub(crate) fn section_starts(name: &str) {
    if let Some(hook) = SECTION_HOOK.get() {
        hook(name);
    }
}
