//! The command line turned into validated settings, once: client list split, sections planned,
//! profile defaults settled. Measurement code takes these types, never clap's.

use crate::cli::{
    Cli, Command, CommonArgs, MemoryArgs, NetArgs, PlanArgs, ResponderArgs, RoleArg, SleepArgs,
    StorageArgs,
};
use crate::error::ConfigError;
use crate::judge::baseline::BaselineRef;
use crate::judge::fleet::ReaderConfig;
use crate::memory::MemoryConfig;
use crate::net::NetworkConfig;
use crate::render::export::Format;
use crate::sched::sleepbench::SleepConfig;
use crate::units::parse_duration;
pub use crate::wire::document::{Profile, Role, Section};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The shortest `--deadline`: the system section alone takes this long on a busy machine, and a
/// run that measures nothing must not read healthy.
pub const MIN_DEADLINE: Duration = Duration::from_secs(1);

/// The environment variable `--history` defaults to.
pub const HISTORY_ENV: &str = "HEALTH_CHECK_HISTORY";

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
    /// Validates the command line. `usable_cpus` sets the default sleep thread count. Each
    /// subcommand's settings are made in `commands.rs`; the run's in `role`.
    pub fn from_cli(cli: &Cli, usable_cpus: usize) -> Result<Config, ConfigError> {
        let cpus = usable_cpus;
        match &cli.command {
            None => Self::role(cli, cpus),
            Some(Command::System { common }) => Self::system(common, cpus),
            Some(Command::Sleep { common, sleep }) => Self::sleep(common, sleep, cpus),
            Some(Command::Ping { hosts, common, net }) => Self::ping(hosts, common, net, cpus),
            Some(Command::Iperf { hosts, common, net }) => Self::iperf(hosts, common, net, cpus),
            Some(Command::Memory { common, memory }) => Self::memory(common, memory, cpus),
            Some(Command::Storage {
                path,
                common,
                storage,
            }) => Self::storage(path, common, storage, cpus),
            Some(Command::Checks { list, common }) => Self::checks(*list, common, cpus),
            Some(Command::Compare {
                reader,
                print_rules,
                common,
            }) => Self::compare(reader, *print_rules, common, cpus),
            Some(Command::Baseline { reader, common }) => Self::baseline(reader, common, cpus),
            Some(Command::Report {
                reader,
                html,
                common,
            }) => Self::report(reader, html.as_deref(), common, cpus),
            Some(Command::Merge { paths, common }) => Self::merge(paths, common, cpus),
            Some(Command::Schema { fleet, common }) => Self::schema(*fleet, common, cpus),
            Some(Command::Acknowledge {
                check,
                history,
                note,
                common,
            }) => Self::acknowledge(check, history.as_deref(), note.as_deref(), common, cpus),
            Some(Command::History {
                file,
                host,
                figure,
                since,
                html,
                common,
            }) => Self::history(
                HistoryArgs {
                    file,
                    host: host.as_deref(),
                    figure: figure.as_deref(),
                    since: since.as_deref(),
                    html: html.as_deref(),
                },
                common,
                cpus,
            ),
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
                cpus,
            ),
            Some(Command::Nhc {
                file,
                host,
                settings,
                cases,
                common,
            }) => Self::nhc(file, host.as_deref(), settings, *cases, common, cpus),
            Some(Command::Serve { common, responder }) => Self::serve(common, responder, cpus),
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
                    "nhc.conf's TIMEOUT={secs} bounds NHC's own checks (milliseconds each); this \
                     run also measures, within the {} level's budget: its deadline is {} s, that \
                     budget and a margin (--deadline sets another)",
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
        let thresholds = crate::judge::checks::Thresholds::with_overrides(&common.threshold)
            .map_err(|m| ConfigError::new("--threshold", m.to_string()))?;
        let mut memory = memory_config(memory, profile)?;
        // The working sets are sized to the multiple of the last-level cache they are judged
        // by: `--threshold memory.working_set_factor=F` moves both.
        memory.working_set_factor = thresholds.working_set_factor;
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
            memory,
            storage: None,
            thresholds,
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

mod commands;
use commands::HistoryArgs;
mod inputs;
mod sections;
#[cfg(test)]
mod tests;

pub use inputs::parse_since;
use inputs::{history_config, load_baseline, nhc_config};
use sections::{
    int_in, memory_config, network_config, responder_config, sleep_config, storage_config,
};
