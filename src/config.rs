//! The command line turned into validated settings, once: client list split, sections planned,
//! profile defaults settled. Measurement code takes these types, never clap's.

use crate::cli::{
    Cli, Command, CommonArgs, MemoryArgs, NetArgs, PlanArgs, ReaderArgs, ResponderArgs, RoleArg,
    SleepArgs, SlurmArgs, StorageArgs, untyped,
};
use crate::error::ConfigError;
use crate::judge::baseline::Baseline;
use crate::judge::fleet::{BaselineRef, ReaderConfig};
use crate::judge::rules::Rules;
use crate::memory::MemoryConfig;
use crate::net::ping::PingConfig;
use crate::net::{BandwidthConfig, NetworkConfig};
use crate::profile::{self, IPERF_STREAMS, PEER_TIMEOUTS, RESOLVE_TIMEOUT, STORAGE_THREADS};
use crate::render::export::Format;
use crate::sched::sleepbench::{SleepConfig, default_threads};
use crate::units::parse_duration;
pub use crate::wire::document::{Profile, Role, Section};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What this invocation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `-r server`: measure this machine and the network to the clients.
    Server,
    /// `-r client`: answer a server's network tests.
    Client,
    /// `checks --list`: print the thresholds.
    ListChecks,
    /// `compare`: judge many documents against each other.
    Compare(ReaderConfig),
    /// `baseline`: learn per-SKU expectations.
    Baseline(ReaderConfig),
    /// `merge`: documents of one machine as one.
    Merge(Vec<PathBuf>),
    /// `report`: draw documents as an HTML page.
    Report {
        /// What to read.
        reader: ReaderConfig,
        /// Where the page goes.
        html: Option<PathBuf>,
    },
    /// `schema`: print a JSON Schema.
    Schema {
        /// The fleet report's instead of the document's.
        fleet: bool,
    },
    /// A debug subcommand running one section.
    Debug(Debug),
    /// `slurm`: a server run, then drain or resume this node in Slurm.
    Slurm(SlurmConfig),
    /// `acknowledge`: an operator acknowledges a condition the history's last run saw.
    Acknowledge {
        /// The history file.
        file: PathBuf,
        /// `errors.<source>` or `errors.<source>:<subject>`.
        check: crate::wire::check::CheckId,
        /// What they said.
        note: Option<String>,
    },
    /// `nhc`: an nhc.conf's lines run one by one, what each did printed.
    Nhc {
        /// The file.
        file: PathBuf,
        /// The host masks are matched as.
        host: Option<String>,
        /// Cases separated by `#@case ID` lines, each its own file.
        cases: bool,
        /// NHC's command-line settings (`NAME=VALUE`), in order.
        settings: Vec<(String, String)>,
    },
    /// `history`: a machine's recorded runs and trends.
    History {
        /// The history file.
        file: PathBuf,
        /// Which runs and figures.
        filter: crate::history::Filter,
        /// Where the page goes.
        html: Option<PathBuf>,
    },
}

/// `--history`: where runs are recorded and how the past judges them.
#[derive(Debug, Clone)]
pub struct HistoryConfig {
    /// The SQLite file.
    pub path: PathBuf,
    /// What each machine keeps.
    pub keep: crate::history::Keep,
    /// Earlier runs in the machine's own reference.
    pub window: usize,
    /// Leave the past runs flagged themselves out of the reference: set by the Slurm mode while
    /// health_check's drain holds, so the failing level cannot become the reference its next run
    /// passes against (and resume the node by absorption).
    pub without_flagged: bool,
}

/// `health_check slurm`'s settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmConfig {
    /// `--node`, else `$SLURMD_NODENAME`, else the short host name (resolved at run time).
    pub node: Option<String>,
    /// Failing runs in a row before a drain.
    pub drain_after: u32,
    /// Checks that drain on the first failing run (`--drain-at-once`): names, or prefixes
    /// ending in `*`.
    pub drain_at_once: Vec<String>,
    /// Passing runs in a row before our drain is lifted.
    pub resume_after: u32,
    /// Most of a partition drained by us before we stop draining, %.
    pub max_drained_pct: f64,
    /// The streak state file, when given.
    pub state: Option<PathBuf>,
    /// scontrol.
    pub scontrol: PathBuf,
    /// sinfo.
    pub sinfo: PathBuf,
    /// Longest wait for each scontrol or sinfo call.
    pub timeout: Duration,
    /// `--no-act`: decide and log, change nothing in Slurm.
    pub no_act: bool,
}

// The share is checked finite when the settings are made.
impl Eq for SlurmConfig {}

/// The argument groups of a measuring run, borrowed from a subcommand.
struct RunGroups<'a> {
    plan: &'a PlanArgs,
    common: &'a CommonArgs,
    sleep: &'a SleepArgs,
    net: &'a NetArgs,
    memory: &'a MemoryArgs,
    storage: Option<&'a std::path::Path>,
    storage_args: &'a StorageArgs,
}

/// The debug subcommands: each runs one section (ping and iperf one half of the network's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Debug {
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
}

impl Debug {
    /// The section it runs.
    pub fn section(self) -> Section {
        match self {
            Debug::System => Section::System,
            Debug::Sleep => Section::Sleep,
            Debug::Ping | Debug::Iperf => Section::Network,
            Debug::Memory => Section::Memory,
            Debug::Storage => Section::Storage,
        }
    }

    /// The subcommand's name.
    pub fn name(self) -> &'static str {
        match self {
            Debug::System => "system",
            Debug::Sleep => "sleep",
            Debug::Ping => "ping",
            Debug::Iperf => "iperf",
            Debug::Memory => "memory",
            Debug::Storage => "storage",
        }
    }

    /// The role the document records.
    pub fn role(self) -> Role {
        match self {
            Debug::System => Role::System,
            Debug::Sleep => Role::Sleep,
            Debug::Ping => Role::Ping,
            Debug::Iperf => Role::Iperf,
            Debug::Memory => Role::Memory,
            Debug::Storage => Role::Storage,
        }
    }
}

impl Config {
    /// Whether this invocation measures (and so polls the stop flag between steps): the roles
    /// and the debug subcommands, not the readers.
    pub fn measures(&self) -> bool {
        matches!(
            self.mode,
            Mode::Server | Mode::Client | Mode::Debug(_) | Mode::Slurm(_)
        )
    }
}

impl Mode {
    /// The role name written to `health_check.role`.
    pub fn role(&self) -> Role {
        match self {
            Mode::Server => Role::Server,
            Mode::Client => Role::Client,
            Mode::Debug(d) => d.role(),
            Mode::ListChecks
            | Mode::Schema { .. }
            | Mode::Compare(_)
            | Mode::Baseline(_)
            | Mode::Report { .. }
            | Mode::Merge(_)
            | Mode::Acknowledge { .. }
            | Mode::Nhc { .. }
            | Mode::History { .. } => Role::Checks,
            Mode::Slurm(_) => Role::Server,
        }
    }
}

/// Client-role settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponderConfig {
    /// Address to listen on; `None` = all.
    pub bind: Option<IpAddr>,
    /// Port.
    pub port: u16,
    /// Stop after this long without a test; `None` = until signalled.
    pub idle_timeout: Option<Duration>,
    /// Detach and return at once.
    pub daemon: bool,
    /// Pid file for --daemon, when given (else the runtime directory's, see `run::pidfile`).
    pub pid_file: Option<PathBuf>,
}

/// Validated settings for one run.
#[derive(Debug, Clone)]
pub struct Config {
    /// What to do.
    pub mode: Mode,
    /// Run-length preset.
    pub profile: Profile,
    /// Sections to run, in order.
    pub plan: Vec<Section>,
    /// Sections of the role not run, with the reason.
    pub excluded: Vec<(Section, String)>,
    /// Client host names exactly as given (trimmed, empty items dropped, duplicates removed).
    pub clients: Vec<String>,
    /// Whether `-c` was given at all.
    pub clients_given: bool,
    /// `--output`.
    pub output: Option<PathBuf>,
    /// `--envelope`.
    pub envelope: bool,
    /// `--strict`.
    pub strict: bool,
    /// `--format`.
    pub format: Format,
    /// `--baseline`, loaded.
    pub baseline: Option<BaselineRef>,
    /// Sleep-section settings.
    pub sleep: SleepConfig,
    /// Network-section settings.
    pub network: NetworkConfig,
    /// Client-role settings.
    pub responder: ResponderConfig,
    /// Memory-section settings.
    pub memory: MemoryConfig,
    /// Storage-section settings, when a target was given.
    pub storage: Option<crate::storage::StorageConfig>,
    /// Limits of the checks.
    pub thresholds: crate::judge::checks::Thresholds,
    /// Notes for the person running it (ignored options and the like), printed on stderr.
    pub notes: Vec<String>,
    /// `--retry-inconclusive`: how many times a section measured under interference runs again.
    pub retry_inconclusive: u32,
    /// `--history` (or `$HEALTH_CHECK_HISTORY`): record the run and judge it against the past.
    pub history: Option<HistoryConfig>,
    /// `--nhc-conf`, read: NHC's node checks for this host.
    pub nhc: Option<crate::nhc::Conf>,
    /// The nhc.conf `slurm` found by itself ([`crate::profile::NHC_CONF`]) and could not honour:
    /// why. The run goes on without it and says so in a warning check; a file given with
    /// `--nhc-conf` is a configuration error instead.
    pub nhc_unread: Option<String>,
    /// `--deadline`: how long the run may take before it stops itself.
    pub deadline: Option<Duration>,
}

/// Splits `-c` values into host names: commas separate, blanks are trimmed, empty items and
/// repeats are dropped. Nothing else is interpreted.
pub fn split_clients(values: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for host in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if !host.is_empty() && !hosts.iter().any(|h| h == host) {
            hosts.push(host.to_string());
        }
    }
    hosts
}

impl Config {
    /// Validates the command line. `usable_cpus` sets the default sleep thread count.
    pub fn from_cli(cli: &Cli, usable_cpus: usize) -> Result<Config, ConfigError> {
        let none: (SleepArgs, NetArgs, ResponderArgs, MemoryArgs) =
            (untyped(), untyped(), untyped(), untyped());
        let base = |mode, common, sleep, net, responder| {
            Self::base(mode, common, sleep, net, responder, &none.3, usable_cpus)
        };
        match &cli.command {
            Some(Command::System { common }) => {
                let mut c = base(
                    Mode::Debug(Debug::System),
                    common,
                    &none.0,
                    &none.1,
                    &none.2,
                )?;
                c.plan = vec![Section::System];
                Ok(c)
            }
            Some(Command::Sleep { common, sleep }) => {
                let mut c = base(Mode::Debug(Debug::Sleep), common, sleep, &none.1, &none.2)?;
                c.plan = vec![Section::Sleep];
                Ok(c)
            }
            Some(Command::Ping { hosts, common, net }) => {
                let mut c = base(Mode::Debug(Debug::Ping), common, &none.0, net, &none.2)?;
                c.network.bandwidth = None;
                c.with_hosts(hosts)
            }
            Some(Command::Iperf { hosts, common, net }) => {
                let mut c = base(Mode::Debug(Debug::Iperf), common, &none.0, net, &none.2)?;
                c.network.ping = None;
                c.with_hosts(hosts)
            }
            Some(Command::Memory { common, memory }) => {
                let mode = Mode::Debug(Debug::Memory);
                let mut c =
                    Self::base(mode, common, &none.0, &none.1, &none.2, memory, usable_cpus)?;
                c.plan = vec![Section::Memory];
                Ok(c)
            }
            Some(Command::Storage {
                path,
                common,
                storage,
            }) => {
                let mode = Mode::Debug(Debug::Storage);
                let mut c = base(mode, common, &none.0, &none.1, &none.2)?;
                c.storage = Some(storage_config(path, storage, c.profile)?);
                c.plan = vec![Section::Storage];
                Ok(c)
            }
            Some(Command::Checks { list, common }) => {
                if !list {
                    return Err(ConfigError::new(
                        "checks",
                        "say what to show: 'health_check checks --list' prints the thresholds",
                    ));
                }
                base(Mode::ListChecks, common, &none.0, &none.1, &none.2)
            }
            Some(Command::Compare {
                reader,
                print_rules,
                common,
            }) => {
                let reader = reader_config(reader, common, *print_rules)?;
                if reader.paths.is_empty() && !print_rules {
                    return Err(ConfigError::new(
                        "DOC|DIR",
                        "give the documents to compare (files, or directories searched for *.json)",
                    ));
                }
                base(Mode::Compare(reader), common, &none.0, &none.1, &none.2)
            }
            Some(Command::Baseline { reader, common }) => {
                let reader = reader_config(reader, common, false)?;
                if reader.paths.is_empty() {
                    return Err(ConfigError::new(
                        "DOC|DIR",
                        "give the documents to learn from (files, or directories searched for *.json)",
                    ));
                }
                if common.output.is_none() {
                    return Err(ConfigError::new(
                        "--output",
                        "say where to write the baseline: -o baseline.yaml",
                    ));
                }
                base(Mode::Baseline(reader), common, &none.0, &none.1, &none.2)
            }
            Some(Command::Report {
                reader,
                html,
                common,
            }) => {
                let reader = reader_config(reader, common, false)?;
                if reader.paths.is_empty() {
                    return Err(ConfigError::new(
                        "DOC|DIR",
                        "give the documents to draw (files, or directories searched for *.json)",
                    ));
                }
                if html.is_none() && common.format == Format::Json {
                    return Err(ConfigError::new(
                        "--html",
                        "say what to write: --html report.html, or --format junit|prometheus",
                    ));
                }
                let html = html.clone();
                base(
                    Mode::Report { reader, html },
                    common,
                    &none.0,
                    &none.1,
                    &none.2,
                )
            }
            Some(Command::Merge { paths, common }) => base(
                Mode::Merge(paths.clone()),
                common,
                &none.0,
                &none.1,
                &none.2,
            ),
            Some(Command::Schema { fleet, common }) => {
                let mode = Mode::Schema { fleet: *fleet };
                base(mode, common, &none.0, &none.1, &none.2)
            }
            Some(Command::Acknowledge {
                check,
                history,
                note,
                common,
            }) => {
                let file = history
                    .clone()
                    .or_else(|| {
                        std::env::var_os(HISTORY_ENV)
                            .filter(|v| !v.is_empty())
                            .map(PathBuf::from)
                    })
                    .ok_or_else(|| {
                        ConfigError::new(
                            "--history",
                            format!(
                                "give the history the runs are recorded in (or set {HISTORY_ENV})"
                            ),
                        )
                    })?;
                let id = crate::wire::check::CheckId::parse(check);
                if id.section != "errors" || id.rule.is_empty() {
                    return Err(ConfigError::new(
                        "CHECK",
                        format!(
                            "'{check}' is not an error counter's check: give one as the run named \
                             it, such as errors.edac:mc0/dimm1 or errors.aer"
                        ),
                    ));
                }
                let mode = Mode::Acknowledge {
                    file,
                    check: id,
                    note: note.clone().filter(|n| !n.trim().is_empty()),
                };
                base(mode, common, &none.0, &none.1, &none.2)
            }
            Some(Command::History {
                file,
                host,
                figure,
                since,
                html,
                common,
            }) => {
                if !matches!(common.format, Format::Json) {
                    return Err(ConfigError::new(
                        "--format",
                        "history prints JSON (and a table on stderr); --html FILE draws it",
                    ));
                }
                let filter = crate::history::Filter {
                    host: host.clone(),
                    figure: figure
                        .as_deref()
                        .map(regex::Regex::new)
                        .transpose()
                        .map_err(|e| ConfigError::new("--figure", e.to_string()))?,
                    since: since.as_deref().map(parse_since).transpose()?,
                    profile: common.profile.map(|p| p.name().to_string()),
                };
                let mode = Mode::History {
                    file: file.clone(),
                    filter,
                    html: html.clone(),
                };
                base(mode, common, &none.0, &none.1, &none.2)
            }
            Some(Command::Slurm {
                slurm,
                plan,
                common,
                sleep,
                net,
                memory,
                storage,
                storage_args,
            }) => Self::slurm(
                slurm,
                RunGroups {
                    plan,
                    common,
                    sleep,
                    net,
                    memory,
                    storage: storage.as_deref(),
                    storage_args,
                },
                usable_cpus,
            ),
            Some(Command::Nhc {
                file,
                host,
                settings,
                cases,
                common,
            }) => {
                let mode = Mode::Nhc {
                    file: file.clone(),
                    host: host.clone(),
                    cases: *cases,
                    settings: nhc_settings(settings)?,
                };
                base(mode, common, &none.0, &none.1, &none.2)
            }
            Some(Command::Serve { common, responder }) => {
                base(Mode::Client, common, &none.0, &none.1, responder)
            }
            None => Self::role(cli, usable_cpus),
        }
    }

    fn with_hosts(mut self, hosts: &[String]) -> Result<Config, ConfigError> {
        self.clients = split_clients(hosts);
        if self.clients.is_empty() {
            return Err(ConfigError::new("HOST", "give at least one host to test"));
        }
        self.clients_given = true;
        self.network.clients = self.clients.clone();
        self.plan = vec![Section::Network];
        Ok(self)
    }

    fn role(cli: &Cli, usable_cpus: usize) -> Result<Config, ConfigError> {
        let mode = match cli.role {
            Some(RoleArg::Server) => Mode::Server,
            Some(RoleArg::Client) => Mode::Client,
            None => {
                return Err(ConfigError::new(
                    "-r",
                    "choose a role: '-r server' measures this machine (and the network to '-c \
                     LIST'), '-r client' answers a server's network tests",
                ));
            }
        };
        let mut config = Self::base(
            mode,
            &cli.common,
            &cli.sleep,
            &cli.net,
            &cli.responder,
            &cli.memory,
            usable_cpus,
        )?;
        if config.mode == Mode::Client {
            config.clients_given = !cli.plan.clients.is_empty();
            if config.clients_given {
                config
                    .notes
                    .push("'-c' is ignored in the client role".into());
            }
            config.clients.clear();
            config.plan = Vec::new();
            return Ok(config);
        }
        config.plan_run(&cli.plan, cli.storage.as_deref(), &cli.storage_args)?;
        Ok(config)
    }

    /// A measuring run's clients, storage target and sections.
    fn plan_run(
        &mut self,
        plan: &PlanArgs,
        storage: Option<&std::path::Path>,
        storage_args: &StorageArgs,
    ) -> Result<(), ConfigError> {
        self.clients = split_clients(&plan.clients);
        self.clients_given = !plan.clients.is_empty();
        self.network.clients = self.clients.clone();
        let (only, skip) = (&plan.only, &plan.skip);
        if let Some(path) = storage {
            self.storage = Some(storage_config(path, storage_args, self.profile)?);
        } else if only.contains(&Section::Storage) {
            return Err(ConfigError::new(
                "--only",
                "'storage' needs a target: add --storage PATH (a directory, file or block device)",
            ));
        }
        (self.plan, self.excluded) = plan_sections(only, skip, self.storage.is_some());
        Ok(())
    }

    fn slurm(slurm: &SlurmArgs, run: RunGroups, usable_cpus: usize) -> Result<Config, ConfigError> {
        let timeout = parse_duration(&slurm.slurm_timeout)
            .map_err(|m| ConfigError::new("--slurm-timeout", m.to_string()))?;
        if !(slurm.max_drained_pct.is_finite() && (0.0..=100.0).contains(&slurm.max_drained_pct)) {
            return Err(ConfigError::new(
                "--max-drained-pct",
                format!(
                    "'{}' is not a share between 0 and 100",
                    slurm.max_drained_pct
                ),
            ));
        }
        for (flag, n) in [
            ("--drain-after", slurm.drain_after),
            ("--resume-after", slurm.resume_after),
        ] {
            if n == 0 {
                return Err(ConfigError::new(flag, "give at least 1 run"));
            }
        }
        let settings = SlurmConfig {
            node: slurm.node.clone(),
            drain_after: slurm.drain_after,
            drain_at_once: slurm
                .drain_at_once
                .iter()
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect(),
            resume_after: slurm.resume_after,
            max_drained_pct: slurm.max_drained_pct,
            state: slurm.state.clone(),
            scontrol: slurm.scontrol.clone(),
            sinfo: slurm.sinfo.clone(),
            timeout,
            no_act: slurm.no_act,
        };
        let mut config = Self::base_with(
            Mode::Slurm(settings),
            run.common,
            run.sleep,
            run.net,
            &untyped(),
            run.memory,
            usable_cpus,
            Profile::Check,
        )?;
        config.plan_run(run.plan, run.storage, run.storage_args)?;
        Ok(config)
    }

    fn base(
        mode: Mode,
        common: &CommonArgs,
        sleep: &SleepArgs,
        net: &NetArgs,
        responder: &ResponderArgs,
        memory: &MemoryArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        Self::base_with(
            mode,
            common,
            sleep,
            net,
            responder,
            memory,
            usable_cpus,
            Profile::Standard,
        )
    }

    /// [`Config::base`] with another default profile.
    #[allow(clippy::too_many_arguments)]
    fn base_with(
        mode: Mode,
        common: &CommonArgs,
        sleep: &SleepArgs,
        net: &NetArgs,
        responder: &ResponderArgs,
        memory: &MemoryArgs,
        usable_cpus: usize,
        default_profile: Profile,
    ) -> Result<Config, ConfigError> {
        let profile = common.profile.unwrap_or(default_profile);
        let mode_is_slurm = matches!(mode, Mode::Slurm(_));
        let (nhc, nhc_unread) = nhc_config(
            common.nhc_conf.as_deref(),
            mode_is_slurm.then_some(Path::new(crate::profile::NHC_CONF)),
        )?;
        // nhc.conf's TIMEOUT is how long the site lets a check run take: the deadline, unless
        // --deadline says otherwise; under slurmd never past what slurmd allows. It was sized for
        // NHC's checks, which take milliseconds: never shorter than the level's own budget and a
        // margin, or every run would overrun and count as failing.
        // What reading nhc.conf said (lines for other hosts, settings of NHC's own, patterns
        // that match nothing): in the document, never dropped.
        let mut notes: Vec<String> = nhc
            .iter()
            .flat_map(|n| {
                n.notes
                    .iter()
                    .map(|note| format!("{}: {note}", n.path.display()))
            })
            .collect();
        let nhc_timeout = nhc.as_ref().and_then(|n| n.timeout_secs).map(|secs| {
            let mut t = Duration::from_secs(secs);
            let least = crate::profile::settings(profile)
                .budget
                .map(|b| b + crate::profile::NHC_TIMEOUT_MARGIN);
            if let Some(least) = least.filter(|&l| t < l) {
                notes.push(format!(
                    "nhc.conf's TIMEOUT={secs} is shorter than the {} level's budget and margin: \
                     the deadline is {} s",
                    profile.name(),
                    least.as_secs()
                ));
                t = least;
            }
            if mode_is_slurm {
                t.min(crate::profile::SLURM_DEADLINE)
            } else {
                t
            }
        });
        Ok(Config {
            mode,
            profile,
            plan: Vec::new(),
            excluded: Vec::new(),
            clients: Vec::new(),
            clients_given: false,
            output: common.output.clone(),
            envelope: common.envelope,
            strict: common.strict,
            format: common.format,
            baseline: common.baseline.as_deref().map(load_baseline).transpose()?,
            sleep: sleep_config(sleep, profile, usable_cpus)?,
            network: network_config(net, profile, common.port)?,
            responder: responder_config(responder, common.port)?,
            memory: memory_config(memory, profile)?,
            storage: None,
            thresholds: crate::judge::checks::Thresholds::with_overrides(&common.threshold)
                .map_err(|m| ConfigError::new("--threshold", m.to_string()))?,
            notes,
            retry_inconclusive: int_in(
                common.retry_inconclusive,
                "--retry-inconclusive",
                0..=10,
                0,
            )?,
            history: history_config(common)?,
            nhc,
            nhc_unread,
            deadline: common
                .deadline
                .as_deref()
                .map(|d| match parse_duration(d) {
                    Ok(d) if d >= MIN_DEADLINE => Ok(d),
                    Ok(_) => Err(ConfigError::new(
                        "--deadline",
                        format!(
                            "'{d}' is shorter than any section takes: give {} s or more",
                            MIN_DEADLINE.as_secs()
                        ),
                    )),
                    Err(m) => Err(ConfigError::new("--deadline", m.to_string())),
                })
                .transpose()?
                .or(nhc_timeout)
                .or_else(|| mode_is_slurm.then_some(crate::profile::SLURM_DEADLINE)),
        })
    }
}

/// `--nhc-conf FILE` read for this host; without it, `default` (slurm's /etc/nhc/nhc.conf) when
/// it exists. A given file that cannot be honoured is a configuration error; the default one is
/// not (a site's NHC file may hold checks this does not run, and slurmd must not lose every
/// other check for it): it comes back as the reason it was not read. An empty value reads none.
fn nhc_config(
    given: Option<&Path>,
    default: Option<&Path>,
) -> Result<(Option<crate::nhc::Conf>, Option<String>), ConfigError> {
    let host = crate::nhc::host_name();
    let deadline = crate::nhc::conf::READ_DEADLINE;
    match given {
        Some(p) if p.as_os_str().is_empty() => Ok((None, None)),
        Some(p) => crate::nhc::Conf::load(p, &host, deadline)
            .map(|c| (Some(c), None))
            .map_err(|e| ConfigError::new("--nhc-conf", e.to_string())),
        None => match default.filter(|p| p.exists()) {
            None => Ok((None, None)),
            Some(p) => Ok(match crate::nhc::Conf::load(p, &host, deadline) {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e.to_string())),
            }),
        },
    }
}

/// `--history FILE`, else `$HEALTH_CHECK_HISTORY` (an empty value is none).
fn history_config(common: &CommonArgs) -> Result<Option<HistoryConfig>, ConfigError> {
    let keep: crate::history::Keep =
        common
            .history_keep
            .parse()
            .map_err(|e: crate::history::KeepError| {
                ConfigError::new("--history-keep", e.to_string())
            })?;
    let path = common.history.clone().or_else(|| {
        std::env::var_os(HISTORY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    Ok(path.map(|path| HistoryConfig {
        path,
        keep,
        window: usize::from(common.history_window),
        without_flagged: false,
    }))
}

/// The shortest `--deadline`: the system section alone takes this long on a busy machine, and a
/// run that measures nothing must not read healthy.
pub const MIN_DEADLINE: Duration = Duration::from_secs(1);

/// The environment variable `--history` defaults to.
pub const HISTORY_ENV: &str = "HEALTH_CHECK_HISTORY";

/// `--since`: an age back from now (`7d`, `12h`, `4w`), a date (`2026-11-01`, UTC midnight) or
/// Unix seconds.
pub fn parse_since(text: &str) -> Result<u64, ConfigError> {
    let t = text.trim();
    let bad = || {
        ConfigError::new(
            "--since",
            format!(
                "'{text}' is not a time: give an age (7d, 12h, 4w), a date (2026-11-01) or Unix seconds"
            ),
        )
    };
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    if let Some((y, rest)) = t.split_once('-') {
        let (m, d) = rest.split_once('-').ok_or_else(bad)?;
        let (y, m, d): (i64, i64, i64) = (
            y.parse().map_err(|_| bad())?,
            m.parse().map_err(|_| bad())?,
            d.parse().map_err(|_| bad())?,
        );
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
            return Err(bad());
        }
        // Days since 1970-01-01 from a civil date (Howard Hinnant's algorithm).
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        return u64::try_from(days * 86_400).map_err(|_| bad());
    }
    let keep: crate::history::Keep = t.parse().map_err(|_| bad())?;
    let age = keep.age.filter(|_| keep.runs.is_none()).ok_or_else(bad)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(now.saturating_sub(age.as_secs()))
}

fn reader_config(
    args: &ReaderArgs,
    common: &CommonArgs,
    print_rules: bool,
) -> Result<ReaderConfig, ConfigError> {
    let rules = match &args.rules {
        Some(path) => {
            Rules::from_file(path).map_err(|e| ConfigError::new("--rules", e.to_string()))?
        }
        None => Rules::builtin(),
    };
    Ok(ReaderConfig {
        paths: args.paths.clone(),
        rules,
        labels: args.label_from,
        print_rules,
        thresholds: crate::judge::checks::Thresholds::with_overrides(&common.threshold)
            .map_err(|m| ConfigError::new("--threshold", m.to_string()))?,
    })
}

fn load_baseline(path: &std::path::Path) -> Result<BaselineRef, ConfigError> {
    let (baseline, rules) =
        Baseline::from_file(path).map_err(|e| ConfigError::new("--baseline", e.message))?;
    Ok(BaselineRef {
        path: path.to_path_buf(),
        baseline,
        rules,
    })
}

fn memory_config(args: &MemoryArgs, profile: Profile) -> Result<MemoryConfig, ConfigError> {
    let mut m = profile::settings(profile).memory;
    if let Some(mib) = args.memory_size {
        // 256 GiB: beyond every LLC by far; larger only costs minutes of page faults.
        let mib = int_in(Some(mib), "--memory-size", 1..=256 << 10, 0)?;
        m.region_bytes = (mib as usize) << 20;
    }
    m.repeats = int_in(
        args.memory_repeats,
        "--memory-repeats",
        1..=100,
        m.repeats as u32,
    )? as usize;
    m.reserve_hugepages = args.memory_reserve_hugepages;
    if !args.memory_tests.is_empty() {
        use crate::cli::MemoryTest as T;
        let has = |t: T| args.memory_tests.contains(&t);
        m.tests = crate::memory::Tests {
            idle: has(T::Idle),
            peak: has(T::Peak),
            memcpy: has(T::Memcpy),
            loaded: has(T::Loaded),
            curve: has(T::Curve),
        };
    }
    Ok(m)
}

/// Storage settings from the command line and the profile (standard: 10 s per test, as the
/// vendors' procedure; quick: 2 s).
fn storage_config(
    path: &std::path::Path,
    args: &crate::cli::StorageArgs,
    profile: Profile,
) -> Result<crate::storage::StorageConfig, ConfigError> {
    let time = match &args.storage_time {
        Some(t) => {
            parse_duration(t).map_err(|m| ConfigError::new("--storage-time", m.to_string()))?
        }
        None => profile::settings(profile).storage_time,
    };
    let size = match args.storage_size {
        None => None,
        Some(mib) => Some(u64::from(int_in(Some(mib), "--storage-size", 1..=1 << 30, 0)?) << 20),
    };
    let threads = int_in(
        args.storage_threads,
        "--storage-threads",
        1..=4096,
        STORAGE_THREADS,
    )? as usize;
    for (flag, v) in [
        ("--storage-expect-iops", args.storage_expect_iops),
        ("--storage-expect-mb-s", args.storage_expect_mb_s),
    ] {
        if v.is_some_and(|v| !v.is_finite() || v <= 0.0) {
            return Err(ConfigError::new(flag, "give a positive number"));
        }
    }
    Ok(crate::storage::StorageConfig {
        path: path.to_path_buf(),
        size_bytes: size,
        time,
        allow_write: args.storage_allow_write,
        random_threads: threads,
        sequential_threads: profile::STORAGE_SEQUENTIAL_THREADS,
        expect_iops: args.storage_expect_iops,
        expect_mb_s: args.storage_expect_mb_s,
    })
}

/// A whole number from a flag, within `range`.
fn int_in(
    value: Option<i64>,
    flag: &'static str,
    range: std::ops::RangeInclusive<i64>,
    default: u32,
) -> Result<u32, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) if range.contains(&v) => Ok(v as u32),
        Some(v) => Err(ConfigError::new(
            flag,
            format!("'{v}' is outside {}..={}", range.start(), range.end()),
        )),
    }
}

fn network_config(
    net: &NetArgs,
    profile: Profile,
    port: u16,
) -> Result<NetworkConfig, ConfigError> {
    let interval = match &net.ping_interval {
        Some(t) => {
            parse_duration(t).map_err(|m| ConfigError::new("--ping-interval", m.to_string()))?
        }
        None => profile::settings(profile).ping_interval,
    };
    if interval < Duration::from_millis(10) {
        return Err(ConfigError::new(
            "--ping-interval",
            "give at least 10ms between requests",
        ));
    }
    let count = int_in(
        net.ping_count,
        "--ping-count",
        1..=100_000,
        profile::settings(profile).ping_count,
    )?;
    let seconds = int_in(
        net.iperf_time,
        "--iperf-time",
        1..=86_400,
        profile::settings(profile).iperf_seconds,
    )?;
    let streams = int_in(net.iperf_streams, "--iperf-streams", 1..=128, IPERF_STREAMS)?;
    let mut timeouts = PEER_TIMEOUTS;
    if let Some(t) = &net.iperf_timeout {
        let wait =
            parse_duration(t).map_err(|m| ConfigError::new("--iperf-timeout", m.to_string()))?;
        timeouts.control = wait;
        timeouts.connect = wait.min(timeouts.connect);
    }
    Ok(NetworkConfig {
        clients: Vec::new(),
        port,
        ping: Some(PingConfig {
            count,
            interval,
            linger: interval.max(Duration::from_secs(1)),
            tcp_port: port,
            method: net.ping_method,
        }),
        bandwidth: Some(BandwidthConfig {
            streams,
            seconds,
            // As long as the forward test, or `reverse_symmetry` compares unequal windows.
            reverse_seconds: if net.no_reverse { 0 } else { seconds },
            aggregate: true,
        }),
        resolve_timeout: RESOLVE_TIMEOUT,
        timeouts,
    })
}

fn responder_config(args: &ResponderArgs, port: u16) -> Result<ResponderConfig, ConfigError> {
    let bind = match &args.bind {
        None => None,
        Some(b) => Some(
            b.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .map_err(|_| ConfigError::new("--bind", format!("'{b}' is not an IP address")))?,
        ),
    };
    let idle_timeout = match args.idle_timeout.trim() {
        "0" => None,
        t => {
            Some(parse_duration(t).map_err(|m| ConfigError::new("--idle-timeout", m.to_string()))?)
        }
    };
    let pid_file = args.pid_file.clone();
    Ok(ResponderConfig {
        bind,
        port,
        idle_timeout,
        daemon: args.daemon,
        pid_file,
    })
}

fn sleep_config(
    args: &SleepArgs,
    profile: Profile,
    usable_cpus: usize,
) -> Result<SleepConfig, ConfigError> {
    let duration = match &args.sleep_time {
        Some(t) => {
            parse_duration(t).map_err(|m| ConfigError::new("--sleep-time", m.to_string()))?
        }
        None => profile::settings(profile).sleep_time,
    };
    let threads = match args.sleep_threads {
        Some(0) => {
            return Err(ConfigError::new(
                "--sleep-threads",
                "'0': give at least 1 thread",
            ));
        }
        Some(n) if n > 100_000 => {
            return Err(ConfigError::new(
                "--sleep-threads",
                format!(
                    "'{n}' threads is more than this benchmark can start; DCPerf uses 2.5 per CPU"
                ),
            ));
        }
        Some(n) => n,
        None => default_threads(usable_cpus),
    };
    Ok(SleepConfig::new(threads, duration))
}

/// The server role's sections after `--only` and `--skip`, and the ones left out with the reason.
/// Storage is opt-in: it runs only when a target was given (`storage_given`).
pub fn plan_sections(
    only: &[Section],
    skip: &[Section],
    storage_given: bool,
) -> (Vec<Section>, Vec<(Section, String)>) {
    let mut plan = Vec::new();
    let mut excluded = Vec::new();
    for s in Section::ALL {
        let reason = if skip.contains(&s) {
            Some("excluded by --skip".to_string())
        } else if !only.is_empty() && !only.contains(&s) {
            Some("not in --only".to_string())
        } else if s == Section::Storage && !storage_given {
            Some("opt-in: give --storage PATH to run it".to_string())
        } else {
            None
        };
        match reason {
            Some(r) => excluded.push((s, r)),
            None => plan.push(s),
        }
    }
    (plan, excluded)
}

/// NHC's command-line settings, `NAME=VALUE` each, as NHC's own command line takes them: a
/// shell variable name, then the value as written.
fn nhc_settings(given: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
    given
        .iter()
        .map(|s| {
            let (name, value) = s.split_once('=').unwrap_or((s, ""));
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
                && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
            if !valid || !s.contains('=') {
                return Err(ConfigError::new(
                    "nhc",
                    format!(
                        "'{s}' is no setting: after the file come NAME=VALUE settings, as NHC's \
                         command line takes them (NHC_RM=slurm)"
                    ),
                ));
            }
            Ok((name.to_string(), value.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Result<Config, ConfigError> {
        let argv = crate::cli::normalize_args(args.iter().map(std::ffi::OsString::from));
        let cli = Cli::parse_args(argv).expect("clap accepts the test argv");
        Config::from_cli(&cli, 2)
    }

    #[test]
    fn clients_are_split_trimmed_and_deduplicated() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(split_clients(&v(&["a,,b", " c ,a"])), ["a", "b", "c"]);
        assert!(split_clients(&v(&[""])).is_empty());
    }

    #[test]
    fn server_role_plans_all_but_storage() {
        let c = config(&["hc", "-r", "server", "-c", "h1,h2"]).unwrap();
        assert_eq!(c.mode, Mode::Server);
        assert_eq!(c.clients, ["h1", "h2"]);
        assert_eq!(
            c.plan,
            [
                Section::System,
                Section::Network,
                Section::Sleep,
                Section::Memory
            ]
        );
        assert_eq!(c.excluded[0].0, Section::Storage);
        assert_eq!(c.sleep.threads, 5);
        assert_eq!(c.sleep.duration, Duration::from_secs(30));
    }

    #[test]
    fn only_and_skip_shape_the_plan() {
        let c = config(&[
            "hc",
            "-r",
            "server",
            "--only",
            "sleep,system",
            "--skip",
            "system",
        ])
        .unwrap();
        assert_eq!(c.plan, [Section::Sleep]);
        assert_eq!(c.excluded.len(), 4);
    }

    /// nhc.conf's TIMEOUT is the run's deadline; --deadline wins; under slurmd it never passes
    /// slurmd's own limit.
    #[test]
    fn an_nhc_timeout_is_the_deadline_unless_deadline_says_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("nhc.conf");
        std::fs::write(&conf, "* || export TIMEOUT=20\n* || check_hw_swap_free 0\n").unwrap();
        let c = conf.to_str().unwrap();
        let check = ["hc", "-r", "server", "--profile", "check", "--nhc-conf", c];
        let run = config(&check).unwrap();
        assert_eq!(run.deadline, Some(Duration::from_secs(20)));
        assert!(run.notes.is_empty(), "{:?}", run.notes);
        let given = config(&["hc", "-r", "server", "--nhc-conf", c, "--deadline", "7"]).unwrap();
        assert_eq!(given.deadline, Some(Duration::from_secs(7)));
        // Shorter than the level's budget (quick: 30 s) and its margin: raised, and said.
        let quick = config(&["hc", "-r", "server", "--profile", "quick", "--nhc-conf", c]).unwrap();
        assert_eq!(quick.deadline, Some(Duration::from_secs(35)));
        assert!(
            quick.notes.iter().any(|n| n.contains("TIMEOUT=20")),
            "{:?}",
            quick.notes
        );
        std::fs::write(&conf, "* || export TIMEOUT=300\n").unwrap();
        let slurm = config(&["hc", "slurm", "--nhc-conf", c]).unwrap();
        assert_eq!(slurm.deadline, Some(crate::profile::SLURM_DEADLINE));
        let run = config(&["hc", "-r", "server", "--nhc-conf", c]).unwrap();
        assert_eq!(run.deadline, Some(Duration::from_secs(300)));
    }

    /// slurm reads /etc/nhc/nhc.conf when it exists; one it cannot honour is said, not fatal;
    /// a file given is read or is an error; an empty value reads none.
    #[test]
    fn slurm_reads_the_sites_nhc_conf_by_itself_and_survives_one_it_cannot_honour() {
        let dir = tempfile::tempdir().unwrap();
        let default = dir.path().join("nhc.conf");
        assert_eq!(nhc_config(None, Some(&default)).unwrap(), (None, None));
        std::fs::write(&default, "* || check_hw_swap_free 0\n").unwrap();
        let (conf, unread) = nhc_config(None, Some(&default)).unwrap();
        assert_eq!((conf.unwrap().lines.len(), unread), (1, None));
        assert_eq!(nhc_config(None, None).unwrap(), (None, None));
        std::fs::write(&default, "* || check_moab_sched\n").unwrap();
        let (conf, unread) = nhc_config(None, Some(&default)).unwrap();
        assert!(conf.is_none());
        assert!(unread.unwrap().contains("check_moab_sched"));
        let e = nhc_config(Some(&default), None).unwrap_err();
        assert_eq!(e.flag, "--nhc-conf");
        assert_eq!(
            nhc_config(Some(Path::new("")), Some(&default)).unwrap(),
            (None, None)
        );
    }

    #[test]
    fn missing_role_names_the_flag() {
        let e = config(&["hc"]).unwrap_err();
        assert_eq!(e.flag, "-r");
    }

    #[test]
    fn bad_sleep_values_name_the_flag() {
        assert_eq!(
            config(&["hc", "-r", "server", "--sleep-time", "x"])
                .unwrap_err()
                .flag,
            "--sleep-time"
        );
        assert_eq!(
            config(&["hc", "-r", "server", "--sleep-threads", "0"])
                .unwrap_err()
                .flag,
            "--sleep-threads"
        );
    }

    #[test]
    fn quick_profile_and_overrides() {
        let c = config(&["hc", "sleep", "--profile", "quick", "--sleep-threads", "3"]).unwrap();
        assert_eq!(c.mode, Mode::Debug(Debug::Sleep));
        assert_eq!(c.plan, [Section::Sleep]);
        assert_eq!(c.sleep.duration, Duration::from_secs(3));
        assert_eq!(c.sleep.threads, 3);
    }

    #[test]
    fn client_role_ignores_clients_with_a_note() {
        let c = config(&["hc", "-r", "client", "-c", "x"]).unwrap();
        assert_eq!(c.mode, Mode::Client);
        assert!(c.plan.is_empty());
        assert_eq!(c.notes.len(), 1);
    }
}
