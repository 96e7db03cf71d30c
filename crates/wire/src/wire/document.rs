//! The wire format: the JSON document health_check prints, which benchpress stores as `metrics`.
//! These types are THE contract (`docs/contract.md`): the writer serialises them, the readers
//! (`compare`, `baseline`, `report`) deserialise documents through them, and
//! `benchpress/health_check.schema.json` is generated from them (`health_check schema`), so the
//! three cannot drift apart. Keys that DCPerf defined keep DCPerf's spelling (`"calls per
//! second"`, `"usr%"`); what we add sits beside them.
//!
//! Domain results never reach the wire directly: each section has wire structs here or beside
//! this file (`memory.rs`, `network.rs`, `storage.rs`, `system.rs`, `responder.rs`) built with
//! `From`/`from_results`, so renaming a field in `net/` or `system/` cannot change the document.
//!
//! Reading is lenient where writing is strict: the schema closes every object
//! (`additionalProperties: false`), while readers ignore keys they do not know, and fields added
//! after the first release are optional, so older and newer documents both read.
//!
//! Every number is finite or null: serde_json writes NaN and infinities as null.

pub use super::check::{Check, CheckId, Status};
use super::identity::{InterferenceEntry, MachineIdentity};
use super::memory::MemoryPart;
use super::nullable::nullable;
pub use super::part::{NotMeasured, Part};
use super::responder::ResponderReport;
use super::storage::StoragePart;
use super::system::SystemPart;
use crate::sched::sleepbench::SleepResults;
use crate::units::round_to;
use schemars::JsonSchema;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A string that is always the same word, e.g. a unit (`"ms"`). Reads only that word.
macro_rules! fixed_word {
    ($(#[$doc:meta])* $name:ident = $word:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            #[default]
            #[doc = concat!("`", $word, "`")]
            #[serde(rename = $word)]
            Word,
        }
    };
}

fixed_word!(
    /// The unit of ping figures: milliseconds.
    Ms = "ms"
);
fixed_word!(
    /// The unit of bandwidth figures: Gbit/s (10^9 bit/s).
    Gbps = "Gbps"
);

/// The whole document. Sections that were not planned are absent; a planned section that could not
/// run is present as [`Part::NotMeasured`] with its reason.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, title = "health_check document")]
pub struct Document {
    /// Ping latency and loss per client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping: Option<Vec<PingEntry>>,
    /// TCP bandwidth per client (DCPerf's README key, with its space).
    #[serde(rename = "iperf3 bandwidth", skip_serializing_if = "Option::is_none")]
    pub iperf3_bandwidth: Option<Vec<BandwidthEntry>>,
    /// The same figures under the name DCPerf's parser writes, for dashboards built on real DCPerf
    /// runs: `{hostname, bandwidth, unit}` for each client that has a figure.
    // Not read by the fleet's readers (`copies.rs`).
    #[serde(
        rename = "iperf3_bandwidth",
        default,
        deserialize_with = "super::copies::copy",
        skip_serializing_if = "Option::is_none"
    )]
    pub iperf3_bandwidth_dcperf: Option<Vec<DcperfBandwidth>>,
    /// All clients at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_aggregate: Option<AggregateEntry>,
    /// DCPerf's nanosleep benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleepbench: Option<Part<SleepBench>>,
    /// Memory latency and bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Part<MemoryPart>>,
    /// Direct-I/O storage (opt-in).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<Part<StoragePart>>,
    /// What the machine is and how it is set up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Part<SystemPart>>,
    /// What the client role served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responder: Option<ResponderReport>,
    /// Verdicts over the figures.
    pub checks: Vec<Check>,
    /// About this run.
    pub health_check: RunInfo,
}

impl Document {
    /// The sleepbench figures, when measured.
    pub fn sleep(&self) -> Option<&SleepBench> {
        self.sleepbench.as_ref().and_then(Part::measured)
    }

    /// The memory figures, when measured.
    pub fn memory(&self) -> Option<&MemoryPart> {
        self.memory.as_ref().and_then(Part::measured)
    }

    /// The storage figures, when measured.
    pub fn storage(&self) -> Option<&StoragePart> {
        self.storage.as_ref().and_then(Part::measured)
    }

    /// The system description, when collected.
    pub fn system(&self) -> Option<&SystemPart> {
        self.system.as_ref().and_then(Part::measured)
    }

    /// The machine the document is about: `health_check.machine`, else (documents written
    /// before it) what its system section says.
    pub fn identity(&self) -> Option<MachineIdentity> {
        if let Some(id) = &self.health_check.machine {
            return Some(id.clone());
        }
        let sys = self.system()?;
        Some(MachineIdentity {
            hostname: sys.hostname.clone(),
            machine_id: None,
            boot_id: None,
            architecture: sys.architecture.clone(),
            cpu_model: sys.cpu_model.clone(),
            sockets: sys.sockets,
            cores_per_socket: (sys.cores / sys.sockets.max(1)).max(1),
            threads_per_core: sys.threads_per_core,
            logical_cpus: sys.logical_cpus,
            numa_nodes: sys.numa_nodes.len().max(1),
            mem_total_kib: sys.mem_total_kib,
        })
    }

    /// Adds the names DCPerf's own parser writes beside ours, with the same values and types, so
    /// dashboards built on real DCPerf runs read our runs too: `iperf3_bandwidth`,
    /// `memory.delay_bandwidth_latency`, and on aarch64 (`arch`) the names its aarch64 path writes.
    pub fn add_dcperf_names(&mut self, arch: &str) {
        if let Some(entries) = &self.iperf3_bandwidth {
            self.iperf3_bandwidth_dcperf = Some(
                entries
                    .iter()
                    .filter_map(|e| {
                        Some(DcperfBandwidth {
                            hostname: e.hostname.clone(),
                            bandwidth: e.bandwidth?,
                            unit: Gbps::Word,
                        })
                    })
                    .collect(),
            );
        }
        if let Some(Part::Measured(m)) = &mut self.memory {
            m.add_dcperf_names(arch == "aarch64");
        }
    }
}

/// One client's figure under DCPerf's parser's name `iperf3_bandwidth`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DcperfBandwidth {
    /// The client exactly as given.
    pub hostname: String,
    /// Receiver goodput, Gbit/s.
    pub bandwidth: f64,
    /// Always `Gbps`.
    pub unit: Gbps,
}

/// DCPerf's `sleepbench` object, with numbers instead of DCPerf's strings, plus our fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SleepBench {
    /// nanosleep calls per second by all threads.
    #[serde(rename = "calls per second")]
    pub calls_per_second: f64,
    /// User time over the run, % of all CPU time (guest included).
    #[serde(rename = "usr%")]
    #[schemars(required, transform = nullable)]
    pub usr_pct: Option<f64>,
    /// Niced user time, %.
    #[serde(rename = "nice%")]
    #[schemars(required, transform = nullable)]
    pub nice_pct: Option<f64>,
    /// Kernel time, %.
    #[serde(rename = "sys%")]
    #[schemars(required, transform = nullable)]
    pub sys_pct: Option<f64>,
    /// Idle time, %.
    #[serde(rename = "idle%")]
    #[schemars(required, transform = nullable)]
    pub idle_pct: Option<f64>,
    /// I/O wait, %.
    #[serde(rename = "iowait%")]
    #[schemars(required, transform = nullable)]
    pub iowait_pct: Option<f64>,
    /// Hardware interrupt time, %.
    #[serde(rename = "irq%")]
    #[schemars(required, transform = nullable)]
    pub irq_pct: Option<f64>,
    /// Softirq time, %.
    #[serde(rename = "softirq%")]
    #[schemars(required, transform = nullable)]
    pub softirq_pct: Option<f64>,
    /// Time stolen by the hypervisor, %.
    #[serde(rename = "steal%")]
    #[schemars(required, transform = nullable)]
    pub steal_pct: Option<f64>,
    /// Guest time (part of usr%), %.
    #[serde(rename = "guest%")]
    #[schemars(required, transform = nullable)]
    pub guest_pct: Option<f64>,
    /// Busy CPU: 100 - idle%, %.
    #[schemars(required, transform = nullable)]
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
    #[schemars(required, transform = nullable)]
    pub timer_slack_ns: Option<u64>,
    /// The sleep each call requested, ns.
    pub sleep_request_ns: u64,
    /// Set when Ctrl-C/SIGTERM cut the run short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Seconds from releasing the threads until all of them ran; calls count only after that.
    #[serde(default)]
    pub startup_seconds: f64,
    /// Something the figures need read with (a start-up longer than the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why the CPU split is missing, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_error: Option<String>,
}

impl From<&SleepResults> for SleepBench {
    fn from(r: &SleepResults) -> Self {
        let pct = |f: fn(&crate::system::cpustat::CpuShares) -> f64| {
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
            startup_seconds: round_to(r.startup.as_secs_f64(), 3),
            note: startup_note(r),
            cpu_error: r.cpu_error.clone(),
        }
    }
}

/// What a reader of the sleep figures must know about the threads' start-up, if anything.
fn startup_note(r: &SleepResults) -> Option<String> {
    let threads = r.calls_per_thread.len();
    if r.started < threads {
        return Some(format!(
            "only {} of {threads} threads had started after {:.1} s; the window began without the \
             rest: this machine cannot run that many sleeping threads, lower --sleep-threads",
            r.started,
            r.startup.as_secs_f64()
        ));
    }
    (r.startup > r.elapsed).then(|| {
        format!(
            "starting the {threads} threads took {:.3} s, longer than the {:.3} s measured: the \
             figures cover the window in which all of them ran, but the start-up loaded the CPUs \
             too; use a longer --sleep-time",
            r.startup.as_secs_f64(),
            r.elapsed.as_secs_f64()
        )
    })
}

/// How a client was pinged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PingMethod {
    /// ICMP echo, as `ping` does.
    #[serde(rename = "icmp")]
    Icmp,
    /// TCP connect time to the client's port (no ICMP socket could be opened).
    #[serde(rename = "tcp-connect")]
    TcpConnect,
}

/// One client's ping figures (DCPerf: hostname, latency, unit), RTTs in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PingEntry {
    /// The client exactly as given.
    pub hostname: String,
    /// Average RTT, ms (DCPerf's figure, as `ping` prints it).
    #[schemars(required, transform = nullable)]
    pub latency: Option<f64>,
    /// Always `ms`.
    pub unit: Ms,
    /// Median RTT, ms: the figure judged (`ping.latency`), one slow reply on a busy host does
    /// not move it. Absent in documents older than 2026-12-05 (their average is judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<f64>,
    /// Smallest RTT, ms.
    #[schemars(required, transform = nullable)]
    pub min: Option<f64>,
    /// Largest RTT, ms.
    #[schemars(required, transform = nullable)]
    pub max: Option<f64>,
    /// Spread as ping prints it (population standard deviation), ms.
    #[schemars(required, transform = nullable)]
    pub mdev: Option<f64>,
    /// Requests sent and counted.
    pub sent: u32,
    /// Requests sent before the counted ones and not counted in any figure (the first packet
    /// to a peer pays for neighbour discovery).
    #[serde(default)]
    pub warm_up: u32,
    /// Replies received.
    pub received: u32,
    /// Lost requests, % of sent.
    #[schemars(required, transform = nullable)]
    pub loss_pct: Option<f64>,
    /// How it was pinged.
    #[schemars(required, transform = nullable)]
    pub method: Option<PingMethod>,
    /// The address pinged.
    #[schemars(required, transform = nullable)]
    pub address: Option<String>,
    /// Why ICMP was not used, when `method` is `tcp-connect` in auto mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// A local error: requests it stopped were not sent and are not counted as lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PingEntry {
    /// The RTT judged: the median where the document has one, else the average.
    pub fn typical_rtt(&self) -> Option<f64> {
        self.median.or(self.latency)
    }

    /// Which RTT [`PingEntry::typical_rtt`] is, for messages.
    pub fn typical_rtt_name(&self) -> &'static str {
        if self.median.is_some() {
            "median"
        } else {
            "average"
        }
    }
}

/// One client's TCP bandwidth (DCPerf: hostname, bandwidth, unit), rates in Gbit/s (10^9 bit/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BandwidthEntry {
    /// The client exactly as given.
    pub hostname: String,
    /// Receiver goodput, this end to the client, Gbit/s.
    #[schemars(required, transform = nullable)]
    pub bandwidth: Option<f64>,
    /// Always `Gbps`.
    pub unit: Gbps,
    /// What the sender wrote per second, Gbit/s.
    #[schemars(required, transform = nullable)]
    pub sender_gbps: Option<f64>,
    /// TCP retransmits of the sender.
    #[schemars(required, transform = nullable)]
    pub retransmits: Option<u64>,
    /// Parallel streams.
    pub streams: u32,
    /// Receiver's test time, seconds.
    #[schemars(required, transform = nullable)]
    pub seconds: Option<f64>,
    /// Receiver goodput, client to this end (iperf3 -R), Gbit/s.
    #[schemars(required, transform = nullable)]
    pub reverse_gbps: Option<f64>,
    /// Sender rate of the reverse test, Gbit/s.
    pub reverse_sender_gbps: Option<f64>,
    /// TCP retransmits of the reverse test's sender.
    pub reverse_retransmits: Option<u64>,
    /// Speed of the egress interface, Gbit/s.
    #[schemars(required, transform = nullable)]
    pub link_speed_gbps: Option<f64>,
    /// `bandwidth` over the most TCP goodput the link can carry, %.
    #[schemars(required, transform = nullable)]
    pub link_efficiency_pct: Option<f64>,
    /// The egress interface.
    pub interface: Option<String>,
    /// Its MTU, bytes.
    pub mtu: Option<u32>,
    /// Who answered: `iperf3` or `health_check <version>` (`(embedded)` when started by us).
    #[schemars(required, transform = nullable)]
    pub peer: Option<String>,
    /// The address tested.
    pub address: Option<String>,
    /// Set when a stop request cut a test short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Why the forward test has no figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the reverse test has no figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse_error: Option<String>,
}

/// All clients at once: the sum of every client's rate in the window where all of them ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AggregateEntry {
    /// Sum over the clients whose test worked of their rate in the common window, Gbit/s;
    /// null when no test worked or the tests did not run together long enough (see `note`).
    #[schemars(required, transform = nullable)]
    pub bandwidth: Option<f64>,
    /// Always `Gbps`.
    pub unit: Gbps,
    /// The clients tested together.
    pub clients: Vec<String>,
    /// Each client's rate in the common window, Gbit/s (null where its test failed).
    pub per_client_gbps: Vec<Option<f64>>,
    /// Streams per client.
    pub streams: u32,
    /// The common window: from 0.5 s after the last test started to the first test's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<f64>,
    /// Why there is no figure, when the tests did not run together long enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Errors of the clients whose test failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// Who wrote the document: a role, or the debug subcommand's section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `-r server`.
    #[default]
    Server,
    /// `-r client` or `serve`.
    Client,
    /// `health_check system`.
    System,
    /// `health_check sleep`.
    Sleep,
    /// `health_check ping`.
    Ping,
    /// `health_check iperf`.
    Iperf,
    /// `health_check memory`.
    Memory,
    /// `health_check storage`.
    Storage,
    /// `health_check checks`.
    Checks,
}

// Each profile's settings are in `profile.rs`, the one table of them.
/// The run-length preset.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "ProfileName")]
pub enum Profile {
    /// DCPerf's parameters.
    #[default]
    Standard,
    /// The scheduler level: within 10 s.
    Check,
    /// Seconds per section.
    Quick,
    /// Longer than standard.
    Thorough,
}

impl Profile {
    /// Every profile, shortest first.
    pub const ALL: [Profile; 4] = [
        Profile::Check,
        Profile::Quick,
        Profile::Standard,
        Profile::Thorough,
    ];

    /// The profile's name, as `--profile` takes it and the document writes it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Standard => "standard",
            Profile::Check => "check",
            Profile::Quick => "quick",
            Profile::Thorough => "thorough",
        }
    }
}

/// The signal that interrupted a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SignalName {
    /// Ctrl-C.
    #[serde(rename = "SIGINT")]
    Sigint,
    /// `kill`.
    #[serde(rename = "SIGTERM")]
    Sigterm,
    /// The run's own `--deadline` passed.
    #[serde(rename = "deadline")]
    Deadline,
}

/// About this run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunInfo {
    /// health_check's version.
    pub version: String,
    /// `server`, `client`, or the debug subcommand's section.
    pub role: Role,
    /// Clients as given to `-c`.
    pub clients: Vec<String>,
    /// Profile name.
    pub profile: Profile,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// Start time, seconds since the Unix epoch.
    pub started_unix: u64,
    /// Each section's outcome in run order.
    pub sections: SectionStatuses,
    /// Options read from $HEALTH_CHECK_OPTS, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options_from_env: Option<String>,
    /// The signal that interrupted the run, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<SignalName>,
    /// The machine the run measured (readers group machines by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineIdentity>,
    /// What else happened on the machine while each section measured.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interference: BTreeMap<Section, InterferenceEntry>,
    /// What reading the run's configuration said (nhc.conf's lines for other hosts, NHC's
    /// settings file, settings health_check does not use, a deadline raised), as on stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Why a planned section did not run when the run's deadline had passed before it started.
pub const DEADLINE_PASSED: &str = "the --deadline passed";

/// How a section ended. On the wire: `ok`, `interrupted`, `skipped: why`, `failed: why`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionOutcome {
    /// It ran to the end.
    Ok,
    /// A stop request cut it short; what it measured is kept.
    Interrupted,
    /// It did not run, and why.
    Skipped(String),
    /// It failed, and why (figures measured before the failure may be kept).
    Failed(String),
}

impl SectionOutcome {
    /// The outcome as the document writes it.
    pub fn to_wire(&self) -> String {
        match self {
            SectionOutcome::Ok => "ok".into(),
            SectionOutcome::Interrupted => "interrupted".into(),
            SectionOutcome::Skipped(why) => format!("skipped: {why}"),
            SectionOutcome::Failed(why) => format!("failed: {why}"),
        }
    }

    /// Reads the document's form; text of no known form is a failure described by that text.
    pub fn from_wire(text: &str) -> Self {
        match text {
            "ok" => SectionOutcome::Ok,
            "interrupted" => SectionOutcome::Interrupted,
            _ => {
                if let Some(why) = text.strip_prefix("skipped: ") {
                    SectionOutcome::Skipped(why.into())
                } else if let Some(why) = text.strip_prefix("failed: ") {
                    SectionOutcome::Failed(why.into())
                } else {
                    SectionOutcome::Failed(text.into())
                }
            }
        }
    }

    /// The verdict colour the summary gives it.
    pub fn status(&self) -> Status {
        match self {
            SectionOutcome::Ok => Status::Pass,
            SectionOutcome::Interrupted => Status::Warn,
            SectionOutcome::Skipped(_) => Status::Skip,
            SectionOutcome::Failed(_) => Status::Fail,
        }
    }
}

impl Serialize for SectionOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_wire())
    }
}

impl<'de> Deserialize<'de> for SectionOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(SectionOutcome::from_wire(&String::deserialize(d)?))
    }
}

impl JsonSchema for SectionOutcome {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SectionOutcome".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`ok`, `interrupted`, `skipped: <why>` or `failed: <why>`.",
            "type": "string",
            "pattern": "^(ok|interrupted|skipped: .+|failed: .+)$"
        })
    }
}

/// A section of the document, in the order the server role runs them (`--only`, `--skip`,
/// the keys of `health_check.sections`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    /// Machine description from /proc and /sys.
    System,
    /// Ping and TCP bandwidth to the clients.
    Network,
    /// The multi-threaded nanosleep benchmark.
    Sleep,
    /// Memory latency and bandwidth.
    Memory,
    /// Direct-I/O storage test (opt-in).
    Storage,
}

impl Section {
    /// Every section, in run order.
    pub const ALL: [Section; 5] = [
        Section::System,
        Section::Network,
        Section::Sleep,
        Section::Memory,
        Section::Storage,
    ];

    /// The section's name.
    pub fn name(self) -> &'static str {
        match self {
            Section::System => "system",
            Section::Network => "network",
            Section::Sleep => "sleep",
            Section::Memory => "memory",
            Section::Storage => "storage",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Section outcomes as an ordered JSON object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectionStatuses(pub Vec<(Section, SectionOutcome)>);

impl SectionStatuses {
    /// The outcome recorded for `section`.
    pub fn get(&self, section: Section) -> Option<&SectionOutcome> {
        self.0.iter().find(|(s, _)| *s == section).map(|(_, v)| v)
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

impl<'de> Deserialize<'de> for SectionStatuses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = SectionStatuses;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of section outcomes")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Section, SectionOutcome>()? {
                    out.push((k, v));
                }
                Ok(SectionStatuses(out))
            }
        }
        d.deserialize_map(InOrder)
    }
}

impl JsonSchema for SectionStatuses {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SectionStatuses".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let outcome = generator.subschema_for::<SectionOutcome>();
        schemars::json_schema!({
            "description": "Each section's outcome, in run order.",
            "type": "object",
            "propertyNames": { "enum": Section::ALL.map(Section::name) },
            "additionalProperties": outcome
        })
    }
}

/// The word a unit-like enum (a role, a profile, a status) is written as in the document.
pub fn word<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// The JSON Schema of [`Document`], as `benchpress/health_check.schema.json` holds it.
pub fn document_schema() -> serde_json::Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(Document)).expect("a generated schema is JSON");
    schema["$id"] =
        "https://github.com/health-check/health_check/benchpress/health_check.schema.json".into();
    schema["description"] = "What health_check prints on stdout: the benchpress metrics object \
        (docs/contract.md). Sections not planned are absent; a planned section that could not run \
        holds {skipped} or {error}. Units are in the key names or in the descriptions. Generated \
        from the wire types by 'health_check schema'; do not edit by hand."
        .into();
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_outcomes_round_trip_through_their_wire_form() {
        for o in [
            SectionOutcome::Ok,
            SectionOutcome::Interrupted,
            SectionOutcome::Skipped("no clients given".into()),
            SectionOutcome::Failed("cannot open /proc/stat".into()),
        ] {
            assert_eq!(SectionOutcome::from_wire(&o.to_wire()), o);
        }
        assert_eq!(
            SectionOutcome::from_wire("exploded"),
            SectionOutcome::Failed("exploded".into())
        );
    }

    #[test]
    fn section_statuses_keep_their_order() {
        let s = SectionStatuses(vec![
            (Section::Sleep, SectionOutcome::Ok),
            (Section::Memory, SectionOutcome::Interrupted),
            (
                Section::System,
                SectionOutcome::Skipped("not in --only".into()),
            ),
        ]);
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            text,
            r#"{"sleep":"ok","memory":"interrupted","system":"skipped: not in --only"}"#
        );
        let back: SectionStatuses = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
    }
}
