//! The wire format: the JSON document health_check prints, which benchpress stores as `metrics`.
//! This is THE contract (DESIGN §2, `benchpress/health_check.schema.json`). Keys that DCPerf
//! defined keep DCPerf's spelling (`"calls per second"`, `"usr%"`); what we add sits beside them.
//!
//! Types whose field names already are the wire keys (the system section's) are serialised
//! directly; the others are wire-only structs built from the domain results with `From`.
//!
//! Every number is finite or null: serde_json writes NaN and infinities as null.

use crate::sched::sleepbench::SleepResults;
use crate::system::SystemInfo;
use crate::units::round_to;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// The whole document. Sections that were not planned are absent; a planned section that could not
/// run is present as [`Part::NotMeasured`] with its reason.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Document {
    /// Ping latency and loss per client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping: Option<Vec<PingEntry>>,
    /// TCP bandwidth per client (DCPerf's key, with its space).
    #[serde(rename = "iperf3 bandwidth", skip_serializing_if = "Option::is_none")]
    pub iperf3_bandwidth: Option<Vec<BandwidthEntry>>,
    /// All clients at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_aggregate: Option<AggregateEntry>,
    /// DCPerf's nanosleep benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleepbench: Option<Part<SleepBench>>,
    /// Memory latency and bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Part<super::memory::MemoryPart>>,
    /// Direct-I/O storage (opt-in).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<Part<super::storage::StoragePart>>,
    /// What the machine is and how it is set up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Part<SystemInfo>>,
    /// What the client role served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responder: Option<ResponderReport>,
    /// Verdicts over the figures.
    pub checks: Vec<Check>,
    /// About this run.
    pub health_check: RunInfo,
}

/// A section's figures, or why there are none.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum Part<T> {
    /// The section ran.
    Measured(T),
    /// The section did not run or failed before producing figures.
    NotMeasured(NotMeasured),
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
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
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
}

/// DCPerf's `sleepbench` object, with numbers instead of DCPerf's strings, plus our fields.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SleepBench {
    /// nanosleep calls per second by all threads.
    #[serde(rename = "calls per second")]
    pub calls_per_second: f64,
    /// User time over the run, % of all CPU time (guest included).
    #[serde(rename = "usr%")]
    pub usr_pct: Option<f64>,
    /// Niced user time, %.
    #[serde(rename = "nice%")]
    pub nice_pct: Option<f64>,
    /// Kernel time, %.
    #[serde(rename = "sys%")]
    pub sys_pct: Option<f64>,
    /// Idle time, %.
    #[serde(rename = "idle%")]
    pub idle_pct: Option<f64>,
    /// I/O wait, %.
    #[serde(rename = "iowait%")]
    pub iowait_pct: Option<f64>,
    /// Hardware interrupt time, %.
    #[serde(rename = "irq%")]
    pub irq_pct: Option<f64>,
    /// Softirq time, %.
    #[serde(rename = "softirq%")]
    pub softirq_pct: Option<f64>,
    /// Time stolen by the hypervisor, %.
    #[serde(rename = "steal%")]
    pub steal_pct: Option<f64>,
    /// Guest time (part of usr%), %.
    #[serde(rename = "guest%")]
    pub guest_pct: Option<f64>,
    /// Busy CPU: 100 - idle%, %.
    pub total: Option<f64>,
    /// Threads that called nanosleep.
    pub threads: usize,
    /// Measured run time, seconds.
    pub seconds: f64,
    /// Calls per second of one thread on average.
    pub calls_per_second_per_thread: f64,
    /// Calls by all threads.
    pub calls: u64,
    /// Timer slack of the threads, ns (bounds one thread to 1e9 / slack calls per second).
    pub timer_slack_ns: Option<u64>,
    /// The sleep each call requested, ns.
    pub sleep_request_ns: u64,
    /// Set when Ctrl-C/SIGTERM cut the run short.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Why the CPU split is missing, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_error: Option<String>,
}

impl From<&SleepResults> for SleepBench {
    fn from(r: &SleepResults) -> Self {
        let pct = |f: fn(&crate::sched::cpustat::CpuShares) -> f64| {
            r.cpu.as_ref().map(|c| round_to(f(c), 2))
        };
        SleepBench {
            calls_per_second: round_to(r.calls_per_second(), 1),
            usr_pct: pct(|c| c.usr_pct),
            nice_pct: pct(|c| c.nice_pct),
            sys_pct: pct(|c| c.sys_pct),
            idle_pct: pct(|c| c.idle_pct),
            iowait_pct: pct(|c| c.iowait_pct),
            irq_pct: pct(|c| c.irq_pct),
            softirq_pct: pct(|c| c.softirq_pct),
            steal_pct: pct(|c| c.steal_pct),
            guest_pct: pct(|c| c.guest_pct),
            total: pct(|c| c.total_pct()),
            threads: r.calls_per_thread.len(),
            seconds: round_to(r.elapsed.as_secs_f64(), 3),
            calls_per_second_per_thread: round_to(r.calls_per_second_per_thread(), 1),
            calls: r.calls_total(),
            timer_slack_ns: r.timer_slack_ns,
            sleep_request_ns: u64::try_from(r.sleep_request.as_nanos()).unwrap_or(u64::MAX),
            interrupted: r.interrupted,
            cpu_error: r.cpu_error.clone(),
        }
    }
}

/// One client's ping figures (DCPerf: hostname, latency, unit), RTTs in ms.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PingEntry {
    /// The client exactly as given.
    pub hostname: String,
    /// Average RTT, ms.
    pub latency: Option<f64>,
    /// Always `ms`.
    pub unit: &'static str,
    /// Smallest RTT, ms.
    pub min: Option<f64>,
    /// Largest RTT, ms.
    pub max: Option<f64>,
    /// Spread as ping prints it (population standard deviation), ms.
    pub mdev: Option<f64>,
    /// Requests sent.
    pub sent: u32,
    /// Replies received.
    pub received: u32,
    /// Lost requests, % of sent.
    pub loss_pct: Option<f64>,
    /// `icmp` or `tcp-connect`.
    pub method: Option<&'static str>,
    /// The address pinged.
    pub address: Option<String>,
    /// Why there are no figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One client's TCP bandwidth (DCPerf: hostname, bandwidth, unit), rates in Gbit/s (10^9 bit/s).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BandwidthEntry {
    /// The client exactly as given.
    pub hostname: String,
    /// Receiver goodput, this end to the client, Gbit/s.
    pub bandwidth: Option<f64>,
    /// Always `Gbps`.
    pub unit: &'static str,
    /// What the sender wrote per second, Gbit/s.
    pub sender_gbps: Option<f64>,
    /// TCP retransmits of the sender.
    pub retransmits: Option<u64>,
    /// Parallel streams.
    pub streams: u32,
    /// Receiver's test time, seconds.
    pub seconds: Option<f64>,
    /// Receiver goodput, client to this end (iperf3 -R), Gbit/s.
    pub reverse_gbps: Option<f64>,
    /// Sender rate of the reverse test, Gbit/s.
    pub reverse_sender_gbps: Option<f64>,
    /// TCP retransmits of the reverse test's sender.
    pub reverse_retransmits: Option<u64>,
    /// Speed of the egress interface, Gbit/s.
    pub link_speed_gbps: Option<f64>,
    /// `bandwidth` over the most TCP goodput the link can carry, %.
    pub link_efficiency_pct: Option<f64>,
    /// The egress interface.
    pub interface: Option<String>,
    /// Its MTU, bytes.
    pub mtu: Option<u32>,
    /// Who answered: `iperf3` or `health_check <version>` (`(embedded)` when started by us).
    pub peer: Option<String>,
    /// The address tested.
    pub address: Option<String>,
    /// Set when a stop request cut a test short.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Why the forward test has no figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the reverse test has no figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse_error: Option<String>,
}

/// All clients at once: the sum of the receivers' goodput, Gbit/s.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AggregateEntry {
    /// Sum of receiver goodput over the clients whose test worked, Gbit/s.
    pub bandwidth: Option<f64>,
    /// Always `Gbps`.
    pub unit: &'static str,
    /// The clients tested together.
    pub clients: Vec<String>,
    /// Each client's share, Gbit/s (null where its test failed).
    pub per_client_gbps: Vec<Option<f64>>,
    /// Streams per client.
    pub streams: u32,
    /// Errors of the clients whose test failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The client role's report: what it served.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ResponderReport {
    /// Where it listened (`[::]:5201`).
    pub listening: Option<String>,
    /// Why it stopped: `idle timeout`, `SIGINT`, `SIGTERM`, `daemonized`, or why it never started.
    pub ended_by: String,
    /// Tests served.
    pub tests_served: usize,
    /// Bytes read from clients.
    pub bytes_received: u64,
    /// Bytes sent to clients.
    pub bytes_sent: u64,
    /// Connections answered "busy".
    pub refused_busy: u64,
    /// Connections dropped before a test (no cookie in time, bad parameters).
    pub dropped: u64,
    /// Each test.
    pub tests: Vec<crate::net::iperf3::server::ServedTest>,
    /// The detached process, with --daemon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_pid: Option<u32>,
    /// Its pid file, with --daemon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid_file: Option<String>,
    /// Something worth knowing, e.g. that another iperf3 server already serves the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A verdict's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
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
}

impl Status {
    /// The status as written in the document.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// One verdict: a figure judged against a limit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    /// Rule name, `section.rule` (e.g. `sleepbench.total_cpu`).
    pub name: String,
    /// Outcome.
    pub status: Status,
    /// The figure judged, in the unit the message gives; null when missing.
    pub value: Option<f64>,
    /// The limit it was judged against.
    pub limit: Option<f64>,
    /// One line a person can act on.
    pub message: String,
}

/// About this run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RunInfo {
    /// health_check's version.
    pub version: String,
    /// `server`, `client`, or the debug subcommand's section.
    pub role: String,
    /// Clients as given to `-c`.
    pub clients: Vec<String>,
    /// Profile name.
    pub profile: String,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// Start time, seconds since the Unix epoch.
    pub started_unix: u64,
    /// Each section's outcome in run order: `ok`, `interrupted`, `skipped: why`, `failed: why`.
    pub sections: SectionStatuses,
    /// Options read from $HEALTH_CHECK_OPTS, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options_from_env: Option<String>,
    /// The signal that interrupted the run, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
}

/// Section outcomes as an ordered JSON object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectionStatuses(pub Vec<(String, String)>);

impl SectionStatuses {
    /// The status recorded for `section`.
    pub fn get(&self, section: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(s, _)| s == section)
            .map(|(_, v)| v.as_str())
    }
}

impl Serialize for SectionStatuses {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
