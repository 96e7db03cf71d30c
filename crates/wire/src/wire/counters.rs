//! Hardware error counters in the document (`system.error_counters`): the counters above zero,
//! what each counted since boot and what is new in the window judged (since boot, or since the
//! last recorded run of the same boot), and how many counters of each source were read.

use crate::system::counters::{Counter, increase};
use crate::units::round_to;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the `new` counts are counted since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CounterWindow {
    /// Since the machine booted: no earlier run of this boot is recorded (or no `--history`).
    Boot,
    /// Since the last run recorded in `--history` of the same boot.
    LastRun,
}

/// The error counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorCounters {
    /// What `new` is counted since.
    pub since: CounterWindow,
    /// The window's length, hours (the uptime, or the time since the last run).
    pub hours: f64,
    /// When the last run was (Unix seconds), for a window since the last run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_unix: Option<u64>,
    /// How many counters of each source were read (all of them, zeros included).
    pub watched: BTreeMap<String, usize>,
    /// The counters above zero since boot.
    pub counters: Vec<ErrorCounter>,
}

/// One counter above zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorCounter {
    /// `edac`, `aer`, `nic`, `thermal`, `mce`.
    pub source: String,
    /// What it counts on: `mc0/dimm3`, `0000:3b:00.0`, `eth0`, `package0`, `all`.
    pub subject: String,
    /// Which count (`corrected`, `uncorrected`, `correctable`, `nonfatal`, `fatal`,
    /// `carrier_down`, `rx_crc_errors`, `rx_missed_errors`, `core_throttle`,
    /// `package_throttle`, `exceptions`).
    pub counter: String,
    /// Events since boot.
    pub total: u64,
    /// Events in the window (`since`).
    pub new: u64,
    /// An operator's acknowledgement of this counter's events in this boot (`health_check
    /// acknowledge`), from the history: a condition that persists (an uncorrected error, a link
    /// down) passes while its count stays at what was acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<Acknowledgement>,
}

/// Who acknowledged a counter's events, when, and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Acknowledgement {
    /// Who: the user's name and uid.
    pub by: String,
    /// When (Unix seconds).
    pub at_unix: u64,
    /// The count since boot that was acknowledged.
    pub count: u64,
    /// What they said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ErrorCounters {
    /// The counters of one boot with every event since boot new; `uptime_secs` is the window.
    pub fn since_boot(counters: &[Counter], uptime_secs: f64) -> ErrorCounters {
        let mut watched: BTreeMap<String, usize> = BTreeMap::new();
        for c in counters {
            *watched.entry(c.source.name().to_string()).or_default() += 1;
        }
        ErrorCounters {
            since: CounterWindow::Boot,
            hours: round_to(uptime_secs / 3600.0, 3),
            last_run_unix: None,
            watched,
            counters: counters
                .iter()
                .filter(|c| c.value > 0)
                .map(|c| ErrorCounter {
                    source: c.source.name().to_string(),
                    subject: c.subject.clone(),
                    counter: c.counter.clone(),
                    total: c.value,
                    new: c.value,
                    acknowledged: None,
                })
                .collect(),
        }
    }

    /// Counts `new` since the last run of the same boot, whose counters above zero were
    /// `before` (a counter missing there was zero) and which was `hours` ago. A counter that
    /// went back (a driver reload) counts what it counted since.
    pub fn since_last_run(&mut self, before: &[ErrorCounter], hours: f64, last_run_unix: u64) {
        let earlier: BTreeMap<(&str, &str, &str), u64> = before
            .iter()
            .map(|c| {
                (
                    (c.source.as_str(), c.subject.as_str(), c.counter.as_str()),
                    c.total,
                )
            })
            .collect();
        for c in &mut self.counters {
            let then = earlier
                .get(&(c.source.as_str(), c.subject.as_str(), c.counter.as_str()))
                .copied()
                .unwrap_or(0);
            c.new = increase(then, c.total);
        }
        self.since = CounterWindow::LastRun;
        self.hours = round_to(hours.max(0.0), 3);
        self.last_run_unix = Some(last_run_unix);
    }
}

/// What a fingerprint fact is, for people: `kernel.cmdline` -> `kernel command line`.
pub fn fact_label(name: &str) -> String {
    let known = match name {
        "bios.vendor" => "BIOS vendor",
        "bios.version" => "BIOS version",
        "bios.date" => "BIOS date",
        "board.vendor" => "board vendor",
        "board.name" => "board",
        "board.version" => "board revision",
        "system.product" => "product name",
        "cpu.microcode" => "CPU microcode",
        "kernel.release" => "kernel",
        "kernel.cmdline" => "kernel command line",
        "cpu.governor" => "CPU frequency governor",
        "cpu.smt" => "SMT",
        "cpu.idle_driver" => "cpuidle driver",
        "cpu.idle_states" => "idle states enabled",
        "memory.thp" => "transparent huge pages",
        "memory.thp_defrag" => "THP defrag",
        "kernel.numa_balancing" => "NUMA balancing",
        "memory.dimms" => "DIMMs",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    match name.strip_prefix("nic.").and_then(|r| r.rsplit_once('.')) {
        Some((nic, "driver")) => format!("{nic} driver"),
        Some((nic, "firmware")) => format!("{nic} firmware"),
        _ => name.to_string(),
    }
}

/// How two values of a fact differ, for people: for the kernel command line the words one has
/// and the other lacks (`+ mitigations=off - quiet`), else both values.
pub fn fact_difference(name: &str, mine: &str, theirs: &str) -> String {
    if name == "kernel.cmdline" {
        let a: Vec<&str> = mine.split_whitespace().collect();
        let b: Vec<&str> = theirs.split_whitespace().collect();
        let mut out: Vec<String> = a
            .iter()
            .filter(|w| !b.contains(w))
            .map(|w| format!("+ {w}"))
            .collect();
        out.extend(
            b.iter()
                .filter(|w| !a.contains(w))
                .map(|w| format!("- {w}")),
        );
        if !out.is_empty() {
            return out.join(" ");
        }
    }
    format!("{mine} (theirs: {theirs})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::counters::CounterSource;

    #[test]
    fn every_fingerprint_fact_has_a_label_for_people() {
        for (fact, label) in [
            ("bios.vendor", "BIOS vendor"),
            ("bios.version", "BIOS version"),
            ("bios.date", "BIOS date"),
            ("board.vendor", "board vendor"),
            ("board.name", "board"),
            ("board.version", "board revision"),
            ("system.product", "product name"),
            ("cpu.microcode", "CPU microcode"),
            ("kernel.release", "kernel"),
            ("kernel.cmdline", "kernel command line"),
            ("cpu.governor", "CPU frequency governor"),
            ("cpu.smt", "SMT"),
            ("cpu.idle_driver", "cpuidle driver"),
            ("cpu.idle_states", "idle states enabled"),
            ("memory.thp", "transparent huge pages"),
            ("memory.thp_defrag", "THP defrag"),
            ("kernel.numa_balancing", "NUMA balancing"),
            ("memory.dimms", "DIMMs"),
            ("nic.eth0.driver", "eth0 driver"),
            ("nic.eth0.firmware", "eth0 firmware"),
            // A fact a newer version collects is shown by its name.
            ("nic.eth0.speed", "nic.eth0.speed"),
            ("cpu.vulnerabilities", "cpu.vulnerabilities"),
        ] {
            assert_eq!(fact_label(fact), label, "{fact}");
        }
    }

    fn counter(source: CounterSource, subject: &str, counter: &str, value: u64) -> Counter {
        Counter {
            source,
            subject: subject.into(),
            counter: counter.into(),
            value,
        }
    }

    #[test]
    fn since_boot_lists_counters_above_zero_and_what_was_watched() {
        let c = ErrorCounters::since_boot(
            &[
                counter(CounterSource::Edac, "mc0", "corrected", 4),
                counter(CounterSource::Edac, "mc0", "uncorrected", 0),
                counter(CounterSource::Nic, "eth0", "carrier_down", 0),
            ],
            7200.0,
        );
        assert_eq!(c.hours, 2.0);
        assert_eq!(c.watched["edac"], 2);
        assert_eq!(c.watched["nic"], 1);
        assert_eq!(c.counters.len(), 1);
        assert_eq!((c.counters[0].total, c.counters[0].new), (4, 4));
    }

    #[test]
    fn since_the_last_run_counts_increases_and_resets_never_negative() {
        let mut now = ErrorCounters::since_boot(
            &[
                counter(CounterSource::Edac, "mc0", "corrected", 9),
                counter(CounterSource::Nic, "eth0", "rx_crc_errors", 2),
                counter(CounterSource::Aer, "0000:3b:00.0", "correctable", 1),
            ],
            100_000.0,
        );
        let before = vec![
            ErrorCounter {
                source: "edac".into(),
                subject: "mc0".into(),
                counter: "corrected".into(),
                total: 5,
                new: 5,
                acknowledged: None,
            },
            ErrorCounter {
                source: "nic".into(),
                subject: "eth0".into(),
                counter: "rx_crc_errors".into(),
                total: 40,
                new: 0,
                acknowledged: None,
            },
        ];
        now.since_last_run(&before, 0.5, 1_700_000_000);
        assert_eq!(now.since, CounterWindow::LastRun);
        assert_eq!(now.hours, 0.5);
        let new: Vec<u64> = now.counters.iter().map(|c| c.new).collect();
        // edac: 9 - 5; nic: reset from 40 to 2 counts 2; aer: absent before, so zero then.
        assert_eq!(new, vec![4, 2, 1]);
    }

    #[test]
    fn facts_read_as_words_and_command_lines_as_differences() {
        assert_eq!(fact_label("kernel.cmdline"), "kernel command line");
        assert_eq!(fact_label("nic.eth0.firmware"), "eth0 firmware");
        assert_eq!(fact_label("something.new"), "something.new");
        assert_eq!(
            fact_difference("kernel.cmdline", "quiet mitigations=off", "quiet ro"),
            "+ mitigations=off - ro"
        );
        assert_eq!(
            fact_difference("bios.version", "1.2", "1.3"),
            "1.2 (theirs: 1.3)"
        );
    }
}
