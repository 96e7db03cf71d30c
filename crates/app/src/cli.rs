//! The command line as typed: clap declarations and the argv clean-up that benchpress's
//! whitespace splitting makes necessary. No validation and no I/O here; `config.rs` turns this
//! into settings.
//!
//! benchpress fills `-c {clients}` with `str.format` and splits every argument on whitespace, so a
//! client list arrives as `-c` with no value, as `-c a,` `b`, or as `-c x;rm` `-rf` `/`
//! (`docs/benchpress.md`). [`normalize_args`] gathers every token after `-c` up to the next real
//! option into one `--clients=` value, so those tokens become host names, literally, and are never
//! mistaken for options or executed.

use crate::judge::machine::LabelFrom;
use crate::profile;
use crate::render::export::Format;
use crate::wire::document::{Profile, Section};
mod values;
pub use values::PingMethodArg;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

/// Environment variable whose whitespace-separated options are added before the command line's
/// own (which win): lets a benchpress job, whose argv is fixed by DCPerf's YAML, pick a profile.
pub const OPTIONS_ENV: &str = "HEALTH_CHECK_OPTS";

/// A whole number typed by a person: digits (and a sign) only, with a message that says so where
/// Rust's parser would say "invalid digit found in string".
fn whole_number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    let t = text.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "'{text}' is not a whole number: write it in digits, e.g. 512"
        ));
    }
    t.parse::<T>()
        .map_err(|_| format!("'{text}' is too large or negative for this option"))
}

/// An argument group with nothing typed: every field at the default its clap attributes declare,
/// so defaults live in one place (the attribute) and nowhere else.
pub fn untyped<T: Args + clap::FromArgMatches>() -> T {
    let cmd = T::augment_args(clap::Command::new("health_check"));
    let matches = cmd.get_matches_from(["health_check"]);
    T::from_arg_matches(&matches).expect("an empty command line parses into every group")
}

/// A native machine health check for DCPerf: memory, network, scheduling and storage, as one
/// JSON document on stdout.
#[derive(Debug, Parser)]
#[command(
    name = "health_check",
    version,
    args_override_self = true,
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  health_check -r server -c host1,host2\n  health_check -r server -c localhost --profile quick\n  health_check -r client\n  health_check sleep --sleep-time 5\n\nOptions in $HEALTH_CHECK_OPTS are read before the command line's own."
)]
pub struct Cli {
    /// Debug subcommands: run one section and print its part of the document.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Role: `server` measures, `client` answers the server's network tests.
    #[arg(short = 'r', long, value_enum)]
    pub role: Option<RoleArg>,
    /// Clients and sections.
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Options shared by every mode.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Sleep-section knobs.
    #[command(flatten)]
    pub sleep: SleepArgs,
    /// Network-section knobs.
    #[command(flatten)]
    pub net: NetArgs,
    /// Client-role (responder) knobs.
    #[command(flatten)]
    pub responder: ResponderArgs,
    /// Memory-section knobs.
    #[command(flatten)]
    pub memory: MemoryArgs,
    /// Storage target (opt-in section).
    #[arg(long, value_name = "PATH")]
    pub storage: Option<PathBuf>,
    /// Storage-section knobs.
    #[command(flatten)]
    pub storage_args: StorageArgs,
}

impl Cli {
    /// The command line parsed (the program name first): what main and the tests call, so clap stays in
    /// this module. `Err` carries clap's own message and exit code (help and version included).
    pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        <Cli as Parser>::try_parse_from(args)
    }
}

/// Storage-section knobs.
#[derive(Debug, Args)]
pub struct StorageArgs {
    /// Test file size in MiB (directory), or MiB of a file or device to use.
    #[arg(long, value_name = "MIB", allow_negative_numbers = true, value_parser = whole_number::<i64>)]
    pub storage_size: Option<i64>,
    /// Length of each storage test: seconds, or with a unit.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, help = profile::help::storage_time())]
    pub storage_time: Option<String>,
    /// Let the write tests overwrite an existing file or an unused block device.
    #[arg(long)]
    pub storage_allow_write: bool,
    /// Threads of the 4 KiB random tests (fio numjobs).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<i64>)]
    pub storage_threads: Option<i64>,
    /// Expected 4 KiB random-read IOPS (e.g. from the data sheet): fewer fails the check.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub storage_expect_iops: Option<f64>,
    /// Expected 1 MiB sequential-write MB/s: less fails the check.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub storage_expect_mb_s: Option<f64>,
}

/// The role DCPerf passes with `-r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    /// Measure this machine and the network to the clients.
    Server,
    /// Answer a server's network tests (iperf3 protocol) until stopped.
    Client,
}

/// `-c`, `--only`, `--skip`: what a measuring run covers.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Clients to test the network against, comma-separated; empty means none. Every token after
    /// `-c` up to the next option is part of the list.
    #[arg(short = 'c', long, value_name = "LIST", action = ArgAction::Append, num_args = 0..=1, default_missing_value = "")]
    pub clients: Vec<String>,
    /// Run only these sections (comma-separated: system,network,sleep,memory,storage).
    #[arg(long, value_parser = values::of::<Section>(), value_delimiter = ',', value_name = "LIST")]
    pub only: Vec<Section>,
    /// Leave out these sections (comma-separated).
    #[arg(long, value_parser = values::of::<Section>(), value_delimiter = ',', value_name = "LIST")]
    pub skip: Vec<Section>,
}

/// Options every mode takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Run length preset (default: standard; for `slurm`, check).
    #[arg(long, value_parser = values::of::<Profile>())]
    pub profile: Option<Profile>,
    /// Also write the output to FILE (atomically: readers never see half of it).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// What to print: the JSON document, JUnit XML (one testcase per check) or Prometheus text
    /// (every figure as a gauge, for node_exporter's textfile collector).
    #[arg(long, value_parser = values::of::<Format>(), default_value = "json")]
    pub format: Format,
    /// Also judge the run by a baseline learned with 'health_check baseline' (one check per
    /// figure the baseline knows for this machine's model).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Also run the node checks of an NHC configuration (LBNL Node Health Check's nhc.conf:
    /// check_fs_mount_rw, check_hw_physmem, check_ps_service, ...), the lines whose host mask
    /// matches this host, as checks named node.CHECK:SUBJECT (docs/nhc.md). `slurm` reads
    /// /etc/nhc/nhc.conf when it exists unless this says otherwise; an empty value reads none.
    #[arg(
        long,
        value_name = "FILE",
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::OsStringValueParser::new(),
            PathBuf::from
        )
    )]
    pub nhc_conf: Option<PathBuf>,
    /// Wrap the document in benchpress's result envelope (for runs outside benchpress).
    #[arg(long)]
    pub envelope: bool,
    /// Exit with status 3 when any check fails.
    #[arg(long)]
    pub strict: bool,
    /// iperf3 port: where the client role listens and the server role connects.
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::net::iperf3::protocol::DEFAULT_PORT,
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    pub port: u16,
    /// Measure a section again, up to N times, when it was measured under interference (steal,
    /// other processes' load, a CPU quota, thermal throttling) beyond the interference limits.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<i64>)]
    pub retry_inconclusive: Option<i64>,
    /// Stop the run after this long (seconds, or with a unit: '50s', '2m'): the section still
    /// running fails, naming the deadline, the document is written, and the run counts as
    /// failing; a measurement stuck past it (a process in the kernel) is abandoned. Default:
    /// none; for 'slurm', 50 s (slurmd kills its program at 60 s).
    #[arg(long, value_name = "SECONDS")]
    pub deadline: Option<String>,
    /// Change a check's limit (repeatable); 'health_check checks --list' shows the names.
    #[arg(long, value_name = "NAME=VALUE", action = ArgAction::Append)]
    pub threshold: Vec<String>,
    /// Record the run in this history (SQLite; also $HEALTH_CHECK_HISTORY) and judge it against
    /// the machine's past: history.FIGURE checks from the 4th run of a profile on, error
    /// counters since the last run. For 'report', draw the machine's trends from it.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// How much history each machine keeps: runs, an age, or both ('1000', '90d', '1000,90d').
    #[arg(long, value_name = "KEEP", default_value = profile::HISTORY_KEEP)]
    pub history_keep: String,
    /// How many earlier runs the machine's own reference takes.
    #[arg(long, value_name = "N", default_value_t = profile::HISTORY_WINDOW, value_parser = clap::value_parser!(u16).range(3..=1000))]
    pub history_window: u16,
}

/// Options of the readers (`compare`, `baseline`, `report`).
#[derive(Debug, Args)]
pub struct ReaderArgs {
    /// Documents, or directories searched for *.json: ours (plain or --envelope), benchpress
    /// metrics files, DCPerf's own health_check output.
    #[arg(value_name = "DOC|DIR")]
    pub paths: Vec<PathBuf>,
    /// Rules in YAML instead of the built-in ones ('compare --print-rules' prints those).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// How machines are named.
    #[arg(long, value_parser = values::of::<LabelFrom>(), default_value = "auto")]
    pub label_from: LabelFrom,
}

/// Network-section knobs.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// Echo requests per client (ping -c).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<i64>, help = profile::help::ping_count())]
    pub ping_count: Option<i64>,
    /// Time between echo requests: seconds, or with a unit (`200ms`).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, help = profile::help::ping_interval())]
    pub ping_interval: Option<String>,
    /// Seconds per bandwidth test direction (whole seconds, as iperf3 -t).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = whole_number::<i64>, help = profile::help::iperf_time())]
    pub iperf_time: Option<i64>,
    /// Parallel TCP streams per bandwidth test (iperf3 -P).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<i64>)]
    pub iperf_streams: Option<i64>,
    /// Deadline for each wait on a peer (connect, control messages): seconds, or with a unit.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub iperf_timeout: Option<String>,
    /// Measure only the forward direction (no iperf3 -R test).
    #[arg(long)]
    pub no_reverse: bool,
    /// How to ping: ICMP echo when permitted, else TCP connect time (auto); or force one.
    #[arg(long, value_enum, default_value = "auto")]
    pub ping_method: PingMethodArg,
}

/// Memory-section knobs.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// Size of the idle-latency chain in MiB (mm-mem: 512).
    #[arg(long, value_name = "MIB", allow_negative_numbers = true, value_parser = whole_number::<i64>, help = profile::help::memory_size())]
    pub memory_size: Option<i64>,
    /// Measurements per memory figure (min/avg/max are reported).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<i64>, help = profile::help::memory_repeats())]
    pub memory_repeats: Option<i64>,
    /// Grow the hugetlb pools for the run so the chains get huge pages (root; restored after).
    #[arg(long)]
    pub memory_reserve_hugepages: bool,
    /// Which memory tests to run (comma-separated: idle,peak,memcpy,loaded,curve).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub memory_tests: Vec<MemoryTest>,
}

/// A part of the memory section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MemoryTest {
    /// Idle latency per node pair.
    Idle,
    /// Peak bandwidth per read/write mix and the vector read kernel.
    Peak,
    /// memcpy of 16 KiB and 128 MiB pieces.
    Memcpy,
    /// The loaded-latency delay sweep.
    Loaded,
    /// The cache-latency curve.
    Curve,
}

/// Client-role (responder) knobs.
#[derive(Debug, Args)]
pub struct ResponderArgs {
    /// Address to listen on (default: all, IPv4 and IPv6).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// Stop after this long without a test: seconds, or with a unit; 0 serves until signalled.
    #[arg(long, value_name = "SECONDS", default_value = profile::IDLE_TIMEOUT)]
    pub idle_timeout: String,
    /// Detach (new session, stdio closed, pid file) and return at once.
    #[arg(long)]
    pub daemon: bool,
    /// Where --daemon writes its process id (default: responder-PORT.pid in /run/health_check as
    /// root, else in $XDG_RUNTIME_DIR/health_check or /tmp/health_check-UID; a directory only
    /// this user can write; $HEALTH_CHECK_RUNTIME_DIR overrides).
    #[arg(long, value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
}

/// `slurm`: the node, the damping, the cap, the state and the commands.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// This node's name in Slurm (default: $SLURMD_NODENAME, which slurmd sets, else the short
    /// host name).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Drain after this many failing runs in a row (a shared hiccup must not drain a cluster).
    #[arg(long, value_name = "N", default_value_t = profile::SLURM_DRAIN_AFTER, value_parser = whole_number::<u32>)]
    pub drain_after: u32,
    /// Checks that drain on the first failing run, as NHC drains (comma-separated names, a
    /// trailing `*` for every check starting so: `node.*`, `errors.memory_uncorrected`); the
    /// others wait for --drain-after.
    #[arg(long, value_name = "CHECKS", value_delimiter = ',')]
    pub drain_at_once: Vec<String>,
    /// Resume our own drain after this many passing runs in a row.
    #[arg(long, value_name = "N", default_value_t = profile::SLURM_RESUME_AFTER, value_parser = whole_number::<u32>)]
    pub resume_after: u32,
    /// Never drain when more than this share of the node's partition is already drained by
    /// health_check (one node may always be), %.
    #[arg(long, value_name = "PCT", default_value = profile::SLURM_MAX_DRAINED_PCT)]
    pub max_drained_pct: f64,
    /// Where the run streaks are kept (default: slurm-state.json in /var/lib/health_check as
    /// root, else in the runtime directory).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// The scontrol to call.
    #[arg(long, value_name = "PATH", default_value = profile::SCONTROL)]
    pub scontrol: PathBuf,
    /// The sinfo to call.
    #[arg(long, value_name = "PATH", default_value = profile::SINFO)]
    pub sinfo: PathBuf,
    /// Longest wait for each scontrol or sinfo call: seconds, or with a unit (slurmd runs the
    /// program before it registers, when the controller may not answer).
    #[arg(long, value_name = "SECONDS", default_value = profile::SLURM_CALL_TIMEOUT)]
    pub slurm_timeout: String,
    /// Decide as usual but change nothing: each drain or resume is logged as "would drain ...",
    /// and no trace is left (no streak file, no mark, no history record): for a roll-out,
    /// before the program is trusted to act.
    #[arg(long)]
    pub no_act: bool,
}

/// Sleep-section knobs.
#[derive(Debug, Args)]
pub struct SleepArgs {
    /// How long the nanosleep benchmark runs: seconds, or with a unit (`500ms`, `1m`).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, help = profile::help::sleep_time())]
    pub sleep_time: Option<String>,
    /// Threads calling nanosleep (default: 2.5 x usable CPUs, truncated).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<usize>)]
    pub sleep_threads: Option<usize>,
}

/// Debug subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Describe the machine (system section only).
    System {
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Run the multi-threaded nanosleep benchmark (sleep section only).
    Sleep {
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Sleep knobs.
        #[command(flatten)]
        sleep: SleepArgs,
    },
    /// Ping hosts (ICMP, or TCP connect without the privilege).
    Ping {
        /// Hosts to ping.
        #[arg(value_name = "HOST")]
        hosts: Vec<String>,
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Network knobs.
        #[command(flatten)]
        net: NetArgs,
    },
    /// Measure TCP bandwidth to hosts running 'iperf3 -s' or 'health_check -r client'.
    Iperf {
        /// Hosts to test.
        #[arg(value_name = "HOST")]
        hosts: Vec<String>,
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Network knobs.
        #[command(flatten)]
        net: NetArgs,
    },
    /// Measure memory latency and bandwidth (memory section only).
    Memory {
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Memory knobs.
        #[command(flatten)]
        memory: MemoryArgs,
    },
    /// Measure a directory, file or block device with direct I/O (storage section only).
    Storage {
        /// Directory (a test file is made and removed), file or block device.
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Storage knobs.
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// About the checks: '--list' prints every rule's limit and default.
    Checks {
        /// Print the thresholds and their defaults.
        #[arg(long)]
        list: bool,
        /// Shared options (accepted so $HEALTH_CHECK_OPTS applies to every subcommand).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Compare documents of many machines: flag the machines worse than their SKU's siblings.
    #[command(
        after_help = "Each figure is named by a dotted path (memory.idle_latency.FullRandom.Node-0.Node-0, \
network.bandwidth.HOST, sleepbench.calls_per_second); rules match these names. Exit status 0, or \
3 with --strict when anything is flagged."
    )]
    Compare {
        /// What to read and how to judge it.
        #[command(flatten)]
        reader: ReaderArgs,
        /// Print the built-in rules as YAML (a file to start from) and exit.
        #[arg(long)]
        print_rules: bool,
        /// Shared options (--output, --format, --strict, --baseline).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Learn per-SKU expectations (medians) from documents and write them as YAML (-o FILE).
    Baseline {
        /// What to read and which figures to learn.
        #[command(flatten)]
        reader: ReaderArgs,
        /// Shared options (-o FILE is required).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Draw one document (a machine's page) or several (the fleet's page) as one self-contained
    /// HTML file with plots (--html FILE), and/or print them as JUnit XML or Prometheus text
    /// (--format).
    Report {
        /// What to read and how to judge it.
        #[command(flatten)]
        reader: ReaderArgs,
        /// Where to write the page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Shared options (--format, --output, --baseline).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Merge documents of one machine into one (a fleet run's network rounds and its local
    /// sections) and print it.
    Merge {
        /// The documents, in order: sections are taken from the first that measured them.
        #[arg(value_name = "DOC", required = true)]
        paths: Vec<PathBuf>,
        /// Shared options (--output).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// A machine's recorded runs (--history FILE): each figure's trend and the runs where its
    /// configuration changed, as a table on stderr and JSON on stdout ({"runs", "figures",
    /// "changes"}); --html FILE draws the trends.
    History {
        /// The history file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Only this machine (host name or machine id).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Only figures whose dotted name matches this regular expression.
        #[arg(long, value_name = "REGEX")]
        figure: Option<String>,
        /// Only runs since then: an age ('7d', '12h', '4w'), a date ('2026-11-01') or Unix
        /// seconds.
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Where to draw the trends as a self-contained HTML page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Shared options (--output, --profile: only runs of that profile).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Acknowledge a hardware condition that keeps failing (an uncorrected memory error, a fatal
    /// PCIe error, a machine check, a link down) as the last run recorded in the history saw it:
    /// who and when are recorded, the count seen passes from then on, and any new event fails
    /// again. Counters reset at reboot, and acknowledgements with them.
    Acknowledge {
        /// The check, as the run named it: `errors.edac:mc0/dimm1`, or `errors.edac` for all
        /// of a source.
        #[arg(value_name = "CHECK")]
        check: String,
        /// The history file the runs are recorded in (also $HEALTH_CHECK_HISTORY).
        #[arg(long, value_name = "FILE")]
        history: Option<PathBuf>,
        /// What is being done about it ("DIMM B2 ordered, ticket 4711").
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Print the JSON Schema of the document (or, with --fleet, of compare's fleet report).
    Schema {
        /// The fleet report's schema instead of the document's.
        #[arg(long)]
        fleet: bool,
        /// Shared options (accepted so $HEALTH_CHECK_OPTS applies to every subcommand).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Slurm's HealthCheckProgram (and Prolog): run the check level (or what the options say),
    /// drain this node on failing checks and resume it on passing ones, only ever lifting its
    /// own drains. Exit 0 healthy, 1 unhealthy.
    Slurm {
        /// What Slurm is told and when.
        #[command(flatten)]
        slurm: SlurmArgs,
        /// Clients and sections.
        #[command(flatten)]
        plan: PlanArgs,
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Sleep knobs.
        #[command(flatten)]
        sleep: SleepArgs,
        /// Network knobs.
        #[command(flatten)]
        net: NetArgs,
        /// Memory knobs.
        #[command(flatten)]
        memory: MemoryArgs,
        /// Storage target (opt-in section).
        #[arg(long, value_name = "PATH")]
        storage: Option<PathBuf>,
        /// Storage knobs.
        #[command(flatten)]
        storage_args: StorageArgs,
    },
    /// Run an nhc.conf's lines on this machine, line by line, and print what each did as JSON
    /// ({"host", "notes", "lines": [{"line", "text", "outcome", "error", "checks", "notes"}]}): what
    /// health_check makes of a site's NHC file before it is trusted with a node.
    Nhc {
        /// The nhc.conf.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Match host masks (and set $HOSTNAME) as this host (default: this machine's name).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Settings as NHC takes them on its command line (`NHC_RM=slurm MARK_OFFLINE=0`):
        /// they hold before the file's first line, over NHC's defaults; values are literal.
        #[arg(value_name = "NAME=VALUE")]
        settings: Vec<String>,
        /// The file holds separate cases, each after a line `#@case ID`: each runs as a file of
        /// its own (for differential runs beside NHC).
        #[arg(long, hide = true)]
        cases: bool,
        /// Shared options (accepted so $HEALTH_CHECK_OPTS applies to every subcommand).
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Serve iperf3 tests in the foreground (the client role).
    Serve {
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Responder knobs.
        #[command(flatten)]
        responder: ResponderArgs,
    },
}

/// Short options that end a `-c` list when they stand alone. An attached form such as `-rf`
/// stays a host name: after `-c` it is far more likely to be a fragment of the list.
const STANDALONE_SHORT_OPTIONS: [&str; 4] = ["-r", "-c", "-h", "-V"];

fn ends_client_list(token: &str) -> bool {
    token.starts_with("--") || STANDALONE_SHORT_OPTIONS.contains(&token)
}

/// Rewrites argv so that each `-c`/`--clients` and every token after it, up to the next option,
/// becomes one `--clients=a,b,...` argument. Tokens are converted lossily to UTF-8 (a host name
/// with invalid bytes cannot resolve anyway).
pub fn normalize_args<I: IntoIterator<Item = OsString>>(args: I) -> Vec<String> {
    let tokens: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        // The value attached to the flag itself, if any: `-cHOST`, `--clients=LIST`.
        let attached = if i == 0 {
            None
        } else if token == "-c" || token == "--clients" {
            Some(None)
        } else if let Some(v) = token.strip_prefix("--clients=") {
            Some(Some(v.to_string()))
        } else if token.len() > 2 && token.starts_with("-c") && !token.starts_with("--") {
            Some(Some(token[2..].to_string()))
        } else {
            None
        };
        let Some(attached) = attached else {
            out.push(token.clone());
            i += 1;
            continue;
        };
        let mut parts: Vec<String> = attached.into_iter().collect();
        i += 1;
        while i < tokens.len() && !ends_client_list(&tokens[i]) {
            parts.push(tokens[i].clone());
            i += 1;
        }
        out.push(format!("--clients={}", parts.join(",")));
    }
    out
}

/// Inserts the options from [`OPTIONS_ENV`] before the command line's own (after the subcommand
/// name when one is given), so that explicit options override them.
pub fn with_env_options(mut args: Vec<String>, env: Option<&str>) -> Vec<String> {
    let Some(env) = env else { return args };
    let extra: Vec<String> = env.split_whitespace().map(str::to_string).collect();
    if extra.is_empty() || args.is_empty() {
        return args;
    }
    use clap::CommandFactory;
    let is_subcommand = |name: &str| {
        Cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == name)
    };
    let at = if args.get(1).is_some_and(|a| is_subcommand(a)) {
        2
    } else {
        1
    };
    args.splice(at..at, extra);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(args: &[&str]) -> Vec<String> {
        normalize_args(args.iter().map(OsString::from))
    }

    #[test]
    fn client_tokens_are_gathered_until_the_next_option() {
        assert_eq!(
            norm(&["hc", "-r", "server", "-c"]),
            ["hc", "-r", "server", "--clients="]
        );
        assert_eq!(
            norm(&["hc", "-r", "server", "-c", "a,", "b"]),
            ["hc", "-r", "server", "--clients=a,,b"]
        );
        assert_eq!(
            norm(&["hc", "-c", "x;rm", "-rf", "/", "--profile", "quick"]),
            ["hc", "--clients=x;rm,-rf,/", "--profile", "quick"]
        );
        assert_eq!(
            norm(&["hc", "-c", "a", "-r", "server"]),
            ["hc", "--clients=a", "-r", "server"]
        );
        assert_eq!(
            norm(&["hc", "-chost1,host2"]),
            ["hc", "--clients=host1,host2"]
        );
        assert_eq!(norm(&["hc", "--clients=a", "b"]), ["hc", "--clients=a,b"]);
    }

    #[test]
    fn env_options_go_before_the_command_lines_own() {
        let args = vec!["hc".to_string(), "-r".into(), "server".into()];
        assert_eq!(
            with_env_options(args.clone(), Some(" --profile  quick ")),
            ["hc", "--profile", "quick", "-r", "server"]
        );
        let sub = vec!["hc".to_string(), "sleep".into()];
        assert_eq!(
            with_env_options(sub, Some("--sleep-time 1")),
            ["hc", "sleep", "--sleep-time", "1"]
        );
        // Every subcommand, the ones added later included, takes the options after its name.
        for sub in [
            "storage", "checks", "schema", "compare", "baseline", "report", "merge",
        ] {
            let args = vec!["hc".to_string(), sub.into(), "x".into()];
            assert_eq!(
                with_env_options(args, Some("--profile quick"))[1],
                sub,
                "{sub}"
            );
        }
        assert_eq!(with_env_options(args.clone(), None), args);
    }
}
