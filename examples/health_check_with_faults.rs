//! `health_check` as the tests run it to inject faults: the shipped binary's body plus a hook
//! that panics in the section named by `HEALTH_CHECK_INJECT_PANIC`, or hangs in the one named by
//! `HEALTH_CHECK_INJECT_HANG` (without polling the stop flag, as a section stuck in the kernel on
//! a sick node). Never installed: the shipped `health_check` ignores both variables.

use health_check::run::{entry, faults};
use std::process::ExitCode;
use std::time::Duration;

fn inject(section: &str) {
    if std::env::var("HEALTH_CHECK_INJECT_PANIC").as_deref() == Ok(section) {
        panic!("injected panic in the {section} section");
    }
    if std::env::var("HEALTH_CHECK_INJECT_HANG").as_deref() == Ok(section) {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

fn main() -> ExitCode {
    faults::set_section_hook(inject);
    entry::main()
}
