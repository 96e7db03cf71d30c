//! How the command line names the values of types that live elsewhere (`--only system`,
//! `--format npd`, `--profile quick`, ...): clap stays in `cli`, the types stay free of it.

use crate::judge::machine::LabelFrom;
use crate::net::ping::MethodChoice;
use crate::profile::{settings, shown};
use crate::render::export::Format;
use crate::wire::document::{Profile, Section};
use clap::ValueEnum;
use clap::builder::PossibleValue;

impl ValueEnum for Section {
    fn value_variants<'a>() -> &'a [Self] {
        &Section::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            Section::System => "Machine description from /proc and /sys",
            Section::Network => "Ping and TCP bandwidth to the clients",
            Section::Sleep => "The multi-threaded nanosleep benchmark",
            Section::Memory => "Memory latency and bandwidth",
            Section::Storage => "Direct-I/O storage test (opt-in)",
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}

impl ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[Format::Json, Format::Junit, Format::Prometheus, Format::Npd]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            Format::Json => ("json", "The JSON document (or fleet report)"),
            Format::Junit => ("junit", "JUnit XML: one testcase per check"),
            Format::Prometheus => (
                "prometheus",
                "Prometheus text: figures and check statuses as gauges",
            ),
            Format::Npd => (
                "npd",
                "node-problem-detector's custom plugin line: at most 80 bytes naming the first \
                 failing check; exit 0 healthy, 1 failing, 2 inconclusive or could not run",
            ),
        };
        Some(PossibleValue::new(name).help(help))
    }
}

impl ValueEnum for LabelFrom {
    fn value_variants<'a>() -> &'a [Self] {
        &[LabelFrom::Auto, LabelFrom::Hostname, LabelFrom::File]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            LabelFrom::Auto => (
                "auto",
                "The host name, or the file name where host names repeat",
            ),
            LabelFrom::Hostname => ("hostname", "The host name"),
            LabelFrom::File => (
                "file",
                "The file name without .json (fleet runs name files after inventory hosts)",
            ),
        };
        Some(PossibleValue::new(name).help(help))
    }
}

/// `--ping-method`: the command line's own copy of [`MethodChoice`] (clap's trait can only be
/// implemented in this crate for a type of this crate; the measuring crate knows nothing of clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingMethodArg {
    /// [`MethodChoice::Auto`].
    Auto,
    /// [`MethodChoice::Icmp`].
    Icmp,
    /// [`MethodChoice::Tcp`].
    Tcp,
}

impl From<PingMethodArg> for MethodChoice {
    fn from(arg: PingMethodArg) -> MethodChoice {
        match arg {
            PingMethodArg::Auto => MethodChoice::Auto,
            PingMethodArg::Icmp => MethodChoice::Icmp,
            PingMethodArg::Tcp => MethodChoice::Tcp,
        }
    }
}

impl ValueEnum for PingMethodArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[PingMethodArg::Auto, PingMethodArg::Icmp, PingMethodArg::Tcp]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            PingMethodArg::Auto => (
                "auto",
                "ICMP echo (datagram socket, else raw socket), falling back to TCP connect",
            ),
            PingMethodArg::Icmp => (
                "icmp",
                "ICMP echo only; an error when no ICMP socket can be opened",
            ),
            PingMethodArg::Tcp => (
                "tcp",
                "TCP connect time to the client's port (for paths that drop ICMP)",
            ),
        };
        Some(PossibleValue::new(name).help(help))
    }
}

impl ValueEnum for Profile {
    fn value_variants<'a>() -> &'a [Self] {
        &Profile::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let s = settings(*self);
        Some(PossibleValue::new(self.name()).help(format!(
            "{} ({} sleep, {} x {} pings, {} s bandwidth tests)",
            s.summary,
            shown(s.sleep_time),
            s.ping_count,
            shown(s.ping_interval),
            s.iperf_seconds
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each type's values are named as the document and the docs name them, one per variant.
    #[test]
    fn every_value_has_its_documented_name() {
        let names = |v: Vec<Option<PossibleValue>>| -> Vec<String> {
            v.into_iter()
                .map(|p| p.unwrap().get_name().to_string())
                .collect()
        };
        assert_eq!(
            names(Section::ALL.iter().map(|s| s.to_possible_value()).collect()),
            ["system", "network", "sleep", "memory", "storage"]
        );
        assert_eq!(
            names(
                Format::value_variants()
                    .iter()
                    .map(|f| f.to_possible_value())
                    .collect()
            ),
            ["json", "junit", "prometheus", "npd"]
        );
        assert_eq!(
            names(
                LabelFrom::value_variants()
                    .iter()
                    .map(|f| f.to_possible_value())
                    .collect()
            ),
            ["auto", "hostname", "file"]
        );
        assert_eq!(
            names(
                PingMethodArg::value_variants()
                    .iter()
                    .map(|f| f.to_possible_value())
                    .collect()
            ),
            ["auto", "icmp", "tcp"]
        );
        let pv = Profile::Quick.to_possible_value().unwrap();
        assert_eq!(pv.get_name(), "quick");
        assert!(pv.get_help().unwrap().to_string().contains("3 s sleep"));
    }
}
