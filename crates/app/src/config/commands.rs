//! One function per subcommand: its arguments turned into a [`Config`], what it needs checked.
//! `Config::from_cli` only dispatches here.

use super::inputs::{nhc_settings, parse_since, reader_config};
use super::{Config, Debug, HISTORY_ENV, Mode, RunGroups, Section, SlurmConfig};
use crate::cli::{
    CommonArgs, MemoryArgs, NetArgs, ReaderArgs, ResponderArgs, SleepArgs, SlurmArgs, StorageArgs,
    untyped,
};
use crate::error::ConfigError;
use crate::judge::fleet::ReaderConfig;
use crate::render::export::Format;
use crate::units::parse_duration;
use crate::wire::document::Profile;
use std::path::{Path, PathBuf};

/// `health_check history`'s own arguments.
pub(super) struct HistoryArgs<'a> {
    pub file: &'a Path,
    pub host: Option<&'a str>,
    pub figure: Option<&'a str>,
    pub since: Option<&'a str>,
    pub html: Option<&'a Path>,
}

/// A reading subcommand's documents: at least one path, or an error saying what to give (`to`:
/// what the subcommand does with them).
fn needs_documents(reader: &ReaderConfig, to: &str) -> Result<(), ConfigError> {
    if reader.paths.is_empty() {
        return Err(ConfigError::new(
            "DOC|DIR",
            format!("give the documents to {to} (files, or directories searched for *.json)"),
        ));
    }
    Ok(())
}

impl Config {
    /// The settings of a subcommand that measures none of the sections' own flags (they keep
    /// the profile's defaults).
    fn plain(mode: Mode, common: &CommonArgs, usable_cpus: usize) -> Result<Config, ConfigError> {
        Self::base(
            mode,
            common,
            &untyped(),
            &untyped(),
            &untyped(),
            &untyped(),
            usable_cpus,
        )
    }

    /// A debug subcommand's settings: `mode`'s one section.
    fn one_section(
        mode: Debug,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mut c = Self::plain(Mode::Debug(mode), common, usable_cpus)?;
        c.plan = vec![mode.section()];
        Ok(c)
    }

    /// `health_check system`.
    pub(super) fn system(common: &CommonArgs, usable_cpus: usize) -> Result<Config, ConfigError> {
        Self::one_section(Debug::System, common, usable_cpus)
    }

    /// `health_check sleep`.
    pub(super) fn sleep(
        common: &CommonArgs,
        sleep: &SleepArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mode = Mode::Debug(Debug::Sleep);
        let (net, responder, memory) = (untyped(), untyped(), untyped());
        let mut c = Self::base(mode, common, sleep, &net, &responder, &memory, usable_cpus)?;
        c.plan = vec![Section::Sleep];
        Ok(c)
    }

    /// `health_check ping HOST...`: the network section's latency half.
    pub(super) fn ping(
        hosts: &[String],
        common: &CommonArgs,
        net: &NetArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mut c = Self::with_net(Debug::Ping, common, net, usable_cpus)?;
        c.network.bandwidth = None;
        c.with_hosts(hosts)
    }

    /// `health_check iperf HOST...`: the network section's bandwidth half.
    pub(super) fn iperf(
        hosts: &[String],
        common: &CommonArgs,
        net: &NetArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mut c = Self::with_net(Debug::Iperf, common, net, usable_cpus)?;
        c.network.ping = None;
        c.with_hosts(hosts)
    }

    fn with_net(
        mode: Debug,
        common: &CommonArgs,
        net: &NetArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let (sleep, responder, memory) = (untyped(), untyped(), untyped());
        let mode = Mode::Debug(mode);
        Self::base(mode, common, &sleep, net, &responder, &memory, usable_cpus)
    }

    /// `health_check memory`.
    pub(super) fn memory(
        common: &CommonArgs,
        memory: &MemoryArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mode = Mode::Debug(Debug::Memory);
        let (sleep, net, responder) = (untyped(), untyped(), untyped());
        let mut c = Self::base(mode, common, &sleep, &net, &responder, memory, usable_cpus)?;
        c.plan = vec![Section::Memory];
        Ok(c)
    }

    /// `health_check storage PATH`.
    pub(super) fn storage(
        path: &Path,
        common: &CommonArgs,
        storage: &StorageArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mut c = Self::plain(Mode::Debug(Debug::Storage), common, usable_cpus)?;
        c.storage = Some(super::storage_config(path, storage, c.profile)?);
        c.plan = vec![Section::Storage];
        Ok(c)
    }

    /// `health_check checks --list`.
    pub(super) fn checks(
        list: bool,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        if !list {
            return Err(ConfigError::new(
                "checks",
                "say what to show: 'health_check checks --list' prints the thresholds",
            ));
        }
        Self::plain(Mode::ListChecks, common, usable_cpus)
    }

    /// `health_check compare DOC|DIR...`.
    pub(super) fn compare(
        reader: &ReaderArgs,
        print_rules: bool,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let reader = reader_config(reader, common, print_rules)?;
        if !print_rules {
            needs_documents(&reader, "compare")?;
        }
        Self::plain(Mode::Compare(reader), common, usable_cpus)
    }

    /// `health_check baseline DOC|DIR... -o FILE`.
    pub(super) fn baseline(
        reader: &ReaderArgs,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let reader = reader_config(reader, common, false)?;
        needs_documents(&reader, "learn from")?;
        if common.output.is_none() {
            return Err(ConfigError::new(
                "--output",
                "say where to write the baseline: -o baseline.yaml",
            ));
        }
        Self::plain(Mode::Baseline(reader), common, usable_cpus)
    }

    /// `health_check report DOC|DIR... --html FILE` (or `--format junit|prometheus`).
    pub(super) fn report(
        reader: &ReaderArgs,
        html: Option<&Path>,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let reader = reader_config(reader, common, false)?;
        needs_documents(&reader, "draw")?;
        if html.is_none() && common.format == Format::Json {
            return Err(ConfigError::new(
                "--html",
                "say what to write: --html report.html, or --format junit|prometheus",
            ));
        }
        let html = html.map(Path::to_path_buf);
        Self::plain(Mode::Report { reader, html }, common, usable_cpus)
    }

    /// `health_check merge DOC...`.
    pub(super) fn merge(
        paths: &[PathBuf],
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        Self::plain(Mode::Merge(paths.to_vec()), common, usable_cpus)
    }

    /// `health_check schema [--fleet]`.
    pub(super) fn schema(
        fleet: bool,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        Self::plain(Mode::Schema { fleet }, common, usable_cpus)
    }

    /// `health_check acknowledge CHECK`: an error counter's count taken as known.
    pub(super) fn acknowledge(
        check: &str,
        history: Option<&Path>,
        note: Option<&str>,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let file = history
            .map(Path::to_path_buf)
            .or_else(|| {
                std::env::var_os(HISTORY_ENV)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .ok_or_else(|| {
                ConfigError::new(
                    "--history",
                    format!("give the history the runs are recorded in (or set {HISTORY_ENV})"),
                )
            })?;
        let id = crate::wire::check::CheckId::parse(check);
        if id.section != "errors" || id.rule.is_empty() {
            return Err(ConfigError::new(
                "CHECK",
                format!(
                    "'{check}' is not an error counter's check: give one as the run named it, \
                     such as errors.edac:mc0/dimm1 or errors.aer"
                ),
            ));
        }
        let mode = Mode::Acknowledge {
            file,
            check: id,
            note: note.filter(|n| !n.trim().is_empty()).map(str::to_string),
        };
        Self::plain(mode, common, usable_cpus)
    }

    /// `health_check history FILE`.
    pub(super) fn history(
        args: HistoryArgs,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        if !matches!(common.format, Format::Json) {
            return Err(ConfigError::new(
                "--format",
                "history prints JSON (and a table on stderr); --html FILE draws it",
            ));
        }
        let filter = crate::history::Filter {
            host: args.host.map(str::to_string),
            figure: args
                .figure
                .map(regex::Regex::new)
                .transpose()
                .map_err(|e| ConfigError::new("--figure", e.to_string()))?,
            since: args.since.map(parse_since).transpose()?,
            profile: common.profile.map(|p| p.name().to_string()),
        };
        let mode = Mode::History {
            file: args.file.to_path_buf(),
            filter,
            html: args.html.map(Path::to_path_buf),
        };
        Self::plain(mode, common, usable_cpus)
    }

    /// `health_check nhc FILE [NAME=VALUE...]`.
    pub(super) fn nhc(
        file: &Path,
        host: Option<&str>,
        settings: &[String],
        cases: bool,
        common: &CommonArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let mode = Mode::Nhc {
            file: file.to_path_buf(),
            host: host.map(str::to_string),
            cases,
            settings: nhc_settings(settings)?,
        };
        Self::plain(mode, common, usable_cpus)
    }

    /// `health_check serve`: the client role's responder, on its own.
    pub(super) fn serve(
        common: &CommonArgs,
        responder: &ResponderArgs,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
        let (sleep, net, memory) = (untyped(), untyped(), untyped());
        Self::base(
            Mode::Client,
            common,
            &sleep,
            &net,
            responder,
            &memory,
            usable_cpus,
        )
    }

    /// `health_check slurm`: a measuring run judged and acted on for slurmd.
    pub(super) fn slurm(
        slurm: &SlurmArgs,
        run: RunGroups,
        usable_cpus: usize,
    ) -> Result<Config, ConfigError> {
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
}
