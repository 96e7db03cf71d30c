//! How the command line names the values of types that live elsewhere (`--only system`,
//! `--format npd`, `--profile quick`, ...): clap stays in `cli`, the types stay free of it. The
//! types live in the crates below, where clap's own trait cannot be implemented for them here:
//! each names its values through [`Named`], and [`of`] is clap's parser for it.

use crate::judge::machine::LabelFrom;
use crate::net::ping::MethodChoice;
use crate::profile::{settings, shown};
use crate::render::export::Format;
use crate::wire::document::{Profile, Section};
use clap::ValueEnum;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// A type whose values the command line names: every value, each with its name and help.
pub trait Named: Copy + Send + Sync + 'static {
    /// Every value, in the order the help lists them.
    fn variants() -> &'static [Self];
    /// The value's name on the command line, with its help.
    fn possible(&self) -> PossibleValue;
}

/// clap's parser for a [`Named`] type: one of its names (clap's own error and help list them).
pub fn of<T: Named>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::variants().iter().map(Named::possible)).map(|name: String| {
        *T::variants()
            .iter()
            .find(|v| v.possible().get_name() == name)
            .expect("clap passes one of the names listed")
    })
}

impl Named for Section {
    fn variants() -> &'static [Self] {
        &Section::ALL
    }

    fn possible(&self) -> PossibleValue {
        let help = match self {
            Section::System => "Machine description from /proc and /sys",
            Section::Network => "Ping and TCP bandwidth to the clients",
            Section::Sleep => "The multi-threaded nanosleep benchmark",
            Section::Memory => "Memory latency and bandwidth",
            Section::Storage => "Direct-I/O storage test (opt-in)",
        };
        PossibleValue::new(self.name()).help(help)
    }
}

impl Named for Format {
    fn variants() -> &'static [Self] {
        &[Format::Json, Format::Junit, Format::Prometheus, Format::Npd]
    }

    fn possible(&self) -> PossibleValue {
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
        PossibleValue::new(name).help(help)
    }
}

impl Named for LabelFrom {
    fn variants() -> &'static [Self] {
        &[LabelFrom::Auto, LabelFrom::Hostname, LabelFrom::File]
    }

    fn possible(&self) -> PossibleValue {
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
        PossibleValue::new(name).help(help)
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

impl Named for Profile {
    fn variants() -> &'static [Self] {
        &Profile::ALL
    }

    fn possible(&self) -> PossibleValue {
        let s = settings(*self);
        PossibleValue::new(self.name()).help(format!(
            "{} ({} sleep, {} x {} pings, {} s bandwidth tests)",
            s.summary,
            shown(s.sleep_time),
            s.ping_count,
            shown(s.ping_interval),
            s.iperf_seconds
        ))
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
            names(Section::ALL.iter().map(|s| Some(s.possible())).collect()),
            ["system", "network", "sleep", "memory", "storage"]
        );
        assert_eq!(
            names(
                Format::variants()
                    .iter()
                    .map(|f| Some(f.possible()))
                    .collect()
            ),
            ["json", "junit", "prometheus", "npd"]
        );
        assert_eq!(
            names(
                LabelFrom::variants()
                    .iter()
                    .map(|f| Some(f.possible()))
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
        let pv = Profile::Quick.possible();
        assert_eq!(pv.get_name(), "quick");
        assert!(pv.get_help().unwrap().to_string().contains("3 s sleep"));
    }
}
