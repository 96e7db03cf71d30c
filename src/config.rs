//! The command line turned into validated settings, once: client list split, sections planned,
//! profile defaults settled. Measurement code takes these types, never clap's.

use crate::cli::{Cli, Command, CommonArgs, ProfileArg, RoleArg, SectionArg, SleepArgs};
use crate::error::ConfigError;
use crate::sched::sleepbench::{SleepConfig, default_threads};
use crate::units::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

/// A section of the document, in the order the server role runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// Machine description.
    System,
    /// Ping and bandwidth to the clients.
    Network,
    /// nanosleep benchmark.
    Sleep,
    /// Memory latency and bandwidth.
    Memory,
    /// Direct-I/O storage test.
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

    /// The name used in `--only`, `--skip` and `health_check.sections`.
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

impl From<SectionArg> for Section {
    fn from(s: SectionArg) -> Self {
        match s {
            SectionArg::System => Section::System,
            SectionArg::Network => Section::Network,
            SectionArg::Sleep => Section::Sleep,
            SectionArg::Memory => Section::Memory,
            SectionArg::Storage => Section::Storage,
        }
    }
}

/// Run-length preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// DCPerf's parameters.
    Standard,
    /// Seconds per section.
    Quick,
    /// Longer than standard.
    Thorough,
}

impl Profile {
    /// The profile's name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Standard => "standard",
            Profile::Quick => "quick",
            Profile::Thorough => "thorough",
        }
    }

    /// How long the nanosleep benchmark runs (DCPerf: 30 s).
    pub fn sleep_time(self) -> Duration {
        Duration::from_secs(match self {
            Profile::Standard => 30,
            Profile::Quick => 3,
            Profile::Thorough => 60,
        })
    }
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Standard => Profile::Standard,
            ProfileArg::Quick => Profile::Quick,
            ProfileArg::Thorough => Profile::Thorough,
        }
    }
}

/// What this invocation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `-r server`: measure this machine and the network to the clients.
    Server,
    /// `-r client`: answer a server's network tests.
    Client,
    /// A debug subcommand running one section.
    Debug(Section),
}

impl Mode {
    /// The role name written to `health_check.role`.
    pub fn role_name(&self) -> &'static str {
        match self {
            Mode::Server => "server",
            Mode::Client => "client",
            Mode::Debug(s) => s.name(),
        }
    }
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
    /// Sleep-section settings.
    pub sleep: SleepConfig,
    /// Notes for the person running it (ignored options and the like), printed on stderr.
    pub notes: Vec<String>,
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
        match &cli.command {
            Some(Command::System { common }) => {
                Self::debug(Section::System, common, &SleepArgs::none(), usable_cpus)
            }
            Some(Command::Sleep { common, sleep }) => {
                Self::debug(Section::Sleep, common, sleep, usable_cpus)
            }
            None => Self::role(cli, usable_cpus),
        }
    }

    fn role(cli: &Cli, usable_cpus: usize) -> Result<Config, ConfigError> {
        let mode = match cli.role.role {
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
        let mut config = Self::base(mode, &cli.common, &cli.sleep, usable_cpus)?;
        config.clients = split_clients(&cli.role.clients);
        config.clients_given = !cli.role.clients.is_empty();
        if config.mode == Mode::Client {
            if config.clients_given {
                config
                    .notes
                    .push("'-c' is ignored in the client role".into());
            }
            config.plan = Vec::new();
            return Ok(config);
        }
        let only: Vec<Section> = cli.role.only.iter().map(|&s| s.into()).collect();
        let skip: Vec<Section> = cli.role.skip.iter().map(|&s| s.into()).collect();
        (config.plan, config.excluded) = plan_sections(&only, &skip);
        Ok(config)
    }

    fn debug(
        section: Section,
        common: &CommonArgs,
        sleep: &SleepArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mut config = Self::base(Mode::Debug(section), common, sleep, usable_cpus)?;
        config.plan = vec![section];
        Ok(config)
    }

    fn base(
        mode: Mode,
        common: &CommonArgs,
        sleep: &SleepArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let profile: Profile = common.profile.into();
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
            sleep: sleep_config(sleep, profile, usable_cpus)?,
            notes: Vec::new(),
        })
    }
}

impl SleepArgs {
    fn none() -> Self {
        SleepArgs {
            sleep_time: None,
            sleep_threads: None,
        }
    }
}

fn sleep_config(
    args: &SleepArgs,
    profile: Profile,
    usable_cpus: usize,
) -> Result<SleepConfig, ConfigError> {
    let duration = match &args.sleep_time {
        Some(t) => parse_duration(t).map_err(|m| ConfigError::new("--sleep-time", m))?,
        None => profile.sleep_time(),
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
/// Storage runs only when named in `--only` (it is opt-in).
pub fn plan_sections(only: &[Section], skip: &[Section]) -> (Vec<Section>, Vec<(Section, String)>) {
    let mut plan = Vec::new();
    let mut excluded = Vec::new();
    for s in Section::ALL {
        let reason = if skip.contains(&s) {
            Some("excluded by --skip".to_string())
        } else if !only.is_empty() && !only.contains(&s) {
            Some("not in --only".to_string())
        } else if only.is_empty() && s == Section::Storage {
            Some("opt-in: name it in --only to run it".to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(args: &[&str]) -> Result<Config, ConfigError> {
        let argv = crate::cli::normalize_args(args.iter().map(std::ffi::OsString::from));
        let cli = Cli::try_parse_from(argv).expect("clap accepts the test argv");
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
        assert_eq!(c.mode, Mode::Debug(Section::Sleep));
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
