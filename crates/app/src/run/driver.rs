//! DCPerf's `-r server` (and the debug subcommands): runs the planned sections in order, records
//! each one's outcome, and never lets one section's failure or panic stop the others. Ctrl-C ends
//! the current section early (its figures so far are kept) and skips the rest.

use super::{Outcome, RunInfoBuilder};
use crate::config::{Config, Section};
use crate::judge::checks;
use crate::judge::noise;
use crate::os;
use crate::profile;
use crate::render::progress::Progress;
use crate::sched::sleepbench;
use crate::system::SystemInfo;
use crate::system::source::HostFs;
use crate::wire::document::{Document, NotMeasured, Part, SectionOutcome, SleepBench};
use crate::wire::identity::InterferenceEntry;
use crate::wire::memory::MemoryPart;
use crate::wire::network::{
    aggregate_entry, bandwidth_entries, bandwidth_error_entry, ping_entries, ping_error_entry,
};
use crate::wire::storage::StoragePart;
use crate::wire::system::SystemPart;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// How one step ended, before a failure becomes [`SectionOutcome::Failed`].
enum StepEnd {
    Ok,
    Interrupted,
    Skipped(String),
    /// Some parts failed; the figures of the others are in the document.
    PartlyFailed(String),
}

/// Runs the plan of `config` and builds the document.
pub fn run(config: &Config, options_from_env: Option<String>) -> Outcome {
    let clock = RunInfoBuilder::start();
    let mut system =
        if config.plan.contains(&Section::System) && profile::settings(config.profile).dimms {
            crate::system::collect_host_with_dram()
        } else {
            crate::system::collect_host()
        };
    let fitted = fit_to_budget(config, &system);
    let config = &fitted;
    let mut doc = Document::default();
    let mut interference = BTreeMap::new();
    let mut outcomes = run_plan(config, &system, &mut doc, &mut interference);
    outcomes.extend(
        config
            .excluded
            .iter()
            .map(|(s, why)| (*s, SectionOutcome::Skipped(why.clone()))),
    );
    outcomes.sort_by_key(|(s, _)| *s);
    // Throttling and steal over the run: compare the counters now with those at the start.
    let deltas = crate::system::run_deltas(
        &system,
        &crate::system::collect_host(),
        clock.elapsed_secs(),
    );
    system.during_run = Some(deltas);
    if let Some(Part::Measured(sys)) = &mut doc.system {
        sys.during_run = Some((&deltas).into());
    }
    doc.add_dcperf_names(&system.architecture);
    let interrupted = os::interrupted();
    doc.health_check = clock.finish(config, outcomes, options_from_env, interrupted, &system);
    doc.health_check.interference = interference;
    let recorder = config
        .history
        .as_ref()
        .map(|h| super::history::Recorder::open(h, &mut doc));
    doc.checks = checks::evaluate(&doc, &config.thresholds);
    if let Some(nhc) = &config.nhc {
        doc.checks
            .extend(crate::nhc::evaluate(nhc, &crate::nhc::state::Host));
    }
    if let Some(why) = &config.nhc_unread {
        doc.checks.push(crate::wire::check::Check {
            name: crate::wire::check::CheckId::new("node", "nhc_conf"),
            status: crate::wire::check::Status::Warn,
            value: None,
            limit: None,
            message: format!("NHC's checks not run: {why}"),
        });
    }
    if let Some(b) = &config.baseline {
        let judged = crate::judge::baseline::checks_of_document(&doc, b, &config.thresholds);
        doc.checks.extend(judged);
    }
    let recorded = recorder.map(|r| r.and_then(|r| r.finish(&mut doc, config)));
    if let Some(Err(e)) = recorded {
        eprintln!("health_check: warning: the run was not recorded: {e}");
        doc.checks.push(super::history::not_recorded(&e));
    }
    super::watchdog::measured();
    Outcome {
        doc,
        system,
        interrupted,
    }
}

/// The run fitted to its profile's time budget on this machine: the memory section's
/// idle-latency matrix sampled where the machine has too many node pairs for the budget (the
/// memory section's notes name the pairs measured). Says so on stderr when it cuts.
fn fit_to_budget(config: &Config, system: &SystemInfo) -> Config {
    let usable = crate::os::allowed_cpus()
        .unwrap_or_else(|| system.topology.cpus.iter().map(|c| c.id).collect());
    let planned_clients = if config.plan.contains(&Section::Network) {
        config.clients.len()
    } else {
        0
    };
    let shape = profile::Shape::of(&system.topology, &usable, planned_clients);
    let table = profile::settings(config.profile);
    let mut planned = profile::Settings {
        sleep_time: config.sleep.duration,
        ping_count: config.network.ping.as_ref().map_or(0, |p| p.count),
        ping_interval: config
            .network
            .ping
            .as_ref()
            .map_or(std::time::Duration::ZERO, |p| p.interval),
        iperf_seconds: config.network.bandwidth.as_ref().map_or(0, |b| b.seconds),
        memory: config.memory.clone(),
        ..table
    };
    // Only the sections planned take time.
    if !config.plan.contains(&Section::Memory) {
        planned.memory.tests = crate::memory::Tests {
            idle: false,
            peak: false,
            memcpy: false,
            loaded: false,
            curve: false,
        };
    }
    if !config.plan.contains(&Section::Sleep) {
        planned.sleep_time = std::time::Duration::ZERO;
    }
    let (fitted, estimate, left_out) = profile::fit(planned, &shape);
    let mut out = config.clone();
    for note in &left_out {
        eprintln!(
            "health_check: the {} profile on this machine: {note}",
            config.profile.name()
        );
    }
    out.memory.budget_notes = fitted.memory.budget_notes.clone();
    if out.plan.contains(&Section::Memory) {
        out.memory.tests = fitted.memory.tests;
        out.memory.idle_full_random_only = fitted.memory.idle_full_random_only;
        out.memory.peak_all_reads_only = fitted.memory.peak_all_reads_only;
        out.memory.repeats = fitted.memory.repeats;
    }
    if fitted.memory.max_idle_pairs != config.memory.max_idle_pairs {
        eprintln!(
            "health_check: the {} profile's {} s budget: idle latency on {} of {} node pairs \
             (estimated {:.0} s in all)",
            config.profile.name(),
            table.budget.map_or(0, |b| b.as_secs()),
            fitted.memory.max_idle_pairs.unwrap_or(0),
            shape.cpu_nodes * shape.mem_nodes,
            estimate.total()
        );
        out.memory.max_idle_pairs = fitted.memory.max_idle_pairs;
    }
    out
}

/// Runs each planned section in order, recording what interfered in each one's window; after a
/// stop request the rest are skipped. A section measured under interference beyond the limits
/// runs again, up to `--retry-inconclusive` times.
fn run_plan(
    config: &Config,
    system: &SystemInfo,
    doc: &mut Document,
    interference: &mut BTreeMap<Section, InterferenceEntry>,
) -> Vec<(Section, SectionOutcome)> {
    let cpus: Vec<(usize, usize)> = system
        .topology
        .cpus
        .iter()
        .map(|c| (c.id, c.package))
        .collect();
    let window = || crate::system::interference::snapshot(&HostFs, &cpus);
    let mut outcomes = Vec::new();
    for &section in &config.plan {
        if let Some(stop) = os::interrupted() {
            let why = match stop {
                os::Interrupt::Deadline => crate::wire::document::DEADLINE_PASSED,
                _ => "interrupted",
            };
            outcomes.push((section, SectionOutcome::Skipped(why.into())));
            mark_not_measured(doc, section, NotMeasured::skipped(why), config);
            continue;
        }
        let mut attempt = 0;
        loop {
            let before = window();
            super::watchdog::running(Some(section));
            let mut outcome = run_step(section, config, system, doc);
            super::watchdog::running(None);
            // Stopped by the run's own deadline: the section overran it, a failure to act on.
            if outcome == SectionOutcome::Interrupted
                && os::interrupted() == Some(os::Interrupt::Deadline)
            {
                outcome = SectionOutcome::Failed(super::watchdog::overran(config.deadline));
            }
            let during =
                InterferenceEntry::from(&crate::system::interference::between(&before, &window()));
            let why = noise::interfered(&during, &config.thresholds);
            if section != Section::System {
                interference.insert(section, during);
            }
            let again = section != Section::System
                && attempt < config.retry_inconclusive
                && outcome == SectionOutcome::Ok
                && os::interrupted().is_none();
            match why {
                Some(why) if again => {
                    attempt += 1;
                    eprintln!(
                        "health_check: {section} measured under interference ({why}); measuring \
                         it again ({attempt} of {})",
                        config.retry_inconclusive
                    );
                }
                _ => {
                    outcomes.push((section, outcome));
                    break;
                }
            }
        }
    }
    outcomes
}

/// Runs one section, turning errors and panics into its outcome and a `NotMeasured` entry.
fn run_step(
    section: Section,
    config: &Config,
    system: &SystemInfo,
    doc: &mut Document,
) -> SectionOutcome {
    let progress = start_progress(section, config, system);
    let result = catch_unwind(AssertUnwindSafe(|| {
        measure(section, config, system, doc, &progress)
    }));
    drop(progress);
    let failure = match result {
        Ok(Ok(StepEnd::Ok)) => return SectionOutcome::Ok,
        Ok(Ok(StepEnd::Interrupted)) => return SectionOutcome::Interrupted,
        Ok(Ok(StepEnd::PartlyFailed(why))) => {
            eprintln!("health_check: {} partly failed: {why}", section.name());
            return SectionOutcome::Failed(why);
        }
        Ok(Ok(StepEnd::Skipped(why))) => {
            mark_not_measured(doc, section, NotMeasured::skipped(why.clone()), config);
            return SectionOutcome::Skipped(why);
        }
        Ok(Err(e)) => format!("{e:#}"),
        Err(panic) => format!("internal error (panic): {}", panic_message(&panic)),
    };
    eprintln!("health_check: {} failed: {failure}", section.name());
    mark_not_measured(doc, section, NotMeasured::error(failure.clone()), config);
    SectionOutcome::Failed(failure)
}

fn measure(
    section: Section,
    config: &Config,
    system: &SystemInfo,
    doc: &mut Document,
    progress: &Progress,
) -> anyhow::Result<StepEnd> {
    // The tests' build injects its faults here (a panic, a hang); the shipped one does nothing.
    super::faults::section_starts(section.name());
    match section {
        Section::System => {
            doc.system = Some(Part::Measured(SystemPart::from(system)));
            Ok(StepEnd::Ok)
        }
        Section::Sleep => {
            let results = sleepbench::measure(&config.sleep, &|| os::interrupted().is_some())?;
            doc.sleepbench = Some(Part::Measured(SleepBench::from(&results)));
            Ok(if results.interrupted {
                StepEnd::Interrupted
            } else {
                StepEnd::Ok
            })
        }
        Section::Network if config.clients.is_empty() => {
            Ok(StepEnd::Skipped(if config.clients_given {
                "no clients given ('-c' was empty)".into()
            } else {
                "no clients given (use -c host1,host2)".into()
            }))
        }
        Section::Network => Ok(measure_network(config, doc, progress)),
        Section::Memory => measure_memory(config, system, doc, progress),
        Section::Storage => measure_storage(config, doc, progress),
    }
}

fn measure_memory(
    config: &Config,
    system: &SystemInfo,
    doc: &mut Document,
    progress: &Progress,
) -> anyhow::Result<StepEnd> {
    let online: Vec<usize> = system.topology.cpus.iter().map(|c| c.id).collect();
    let usable: Vec<usize> = match crate::os::allowed_cpus() {
        Some(allowed) => online.into_iter().filter(|c| allowed.contains(c)).collect(),
        None => online,
    };
    let stop = || os::interrupted().is_some();
    let results = crate::memory::run(
        &config.memory,
        &system.topology,
        &usable,
        system.allocatable_bytes(),
        &stop,
        &|line| progress.step(line),
    );
    let part = MemoryPart::from_results(&results, config.memory.repeats, &system.topology.caches);
    if part.is_empty() && !stop() {
        anyhow::bail!(
            "no memory figure could be measured: {}",
            results.errors.join("; ")
        );
    }
    doc.memory = Some(Part::Measured(part));
    Ok(finished(stop(), &results.errors))
}

fn measure_storage(
    config: &Config,
    doc: &mut Document,
    progress: &Progress,
) -> anyhow::Result<StepEnd> {
    let Some(cfg) = &config.storage else {
        return Ok(StepEnd::Skipped(
            "opt-in: give --storage PATH to run it".into(),
        ));
    };
    let stop = || os::interrupted().is_some();
    let results = crate::storage::run(cfg, &stop, &|line| progress.step(line))?;
    let measured = [
        &results.sequential_write,
        &results.random_read,
        &results.random_write,
    ];
    let part = StoragePart::from_results(&results, cfg);
    let errors: Vec<String> = part.errors.iter().map(ToString::to_string).collect();
    if measured.iter().all(|r| r.is_none()) && !errors.is_empty() && !stop() {
        anyhow::bail!("no storage figure could be measured: {}", errors.join("; "));
    }
    doc.storage = Some(Part::Measured(part));
    Ok(finished(stop(), &errors))
}

/// A section that measured something: interrupted, partly failed (its errors), or ok.
fn finished(stopped: bool, errors: &[String]) -> StepEnd {
    if stopped {
        StepEnd::Interrupted
    } else if errors.is_empty() {
        StepEnd::Ok
    } else {
        StepEnd::PartlyFailed(errors.join("; "))
    }
}

fn measure_network(config: &Config, doc: &mut Document, progress: &Progress) -> StepEnd {
    let net = &config.network;
    let stop = || os::interrupted().is_some();
    let results = crate::net::measure(net, &stop, &|line| progress.step(line));
    if net.ping.is_some() {
        doc.ping = Some(ping_entries(&results));
    }
    if let Some(bw) = &net.bandwidth {
        doc.iperf3_bandwidth = Some(bandwidth_entries(&results, bw.streams));
        doc.network_aggregate = results
            .aggregate
            .as_ref()
            .map(|a| aggregate_entry(a, bw.streams));
    }
    if results.interrupted {
        StepEnd::Interrupted
    } else {
        StepEnd::Ok
    }
}

/// Records that `section` has no figures, under its document key.
fn mark_not_measured(doc: &mut Document, section: Section, why: NotMeasured, config: &Config) {
    match section {
        Section::System => doc.system = Some(Part::NotMeasured(why)),
        Section::Sleep => doc.sleepbench = Some(Part::NotMeasured(why)),
        // Per-host lists stay lists (DCPerf's skeleton), with the reason on every host.
        Section::Network => {
            let reason = why.error.or(why.skipped).unwrap_or_default();
            let streams = config.network.bandwidth.map_or(0, |b| b.streams);
            if doc.ping.is_none() && config.network.ping.is_some() {
                doc.ping = Some(
                    config
                        .clients
                        .iter()
                        .map(|h| ping_error_entry(h, &reason))
                        .collect(),
                );
            }
            if doc.iperf3_bandwidth.is_none() && config.network.bandwidth.is_some() {
                let entries = config
                    .clients
                    .iter()
                    .map(|h| bandwidth_error_entry(h, &reason, streams));
                doc.iperf3_bandwidth = Some(entries.collect());
            }
        }
        Section::Memory => doc.memory = Some(Part::NotMeasured(why)),
        Section::Storage => doc.storage = Some(Part::NotMeasured(why)),
    }
}

fn start_progress(section: Section, config: &Config, system: &SystemInfo) -> Progress {
    let detail = match section {
        Section::Sleep => format!(
            " ({} threads for {:.1} s)",
            config.sleep.threads,
            config.sleep.duration.as_secs_f64()
        ),
        Section::Network => format!(" ({} client(s))", config.clients.len()),
        _ => String::new(),
    };
    Progress::start(
        section.name(),
        &detail,
        expected_time(section, config, system),
    )
}

/// Roughly how long a section takes, for the progress bar.
fn expected_time(section: Section, config: &Config, system: &SystemInfo) -> Option<Duration> {
    match section {
        Section::Sleep => Some(config.sleep.duration),
        Section::Network => {
            let net = &config.network;
            let hosts = config.clients.len() as u32;
            let ping = net.ping.map_or(Duration::ZERO, |p| p.interval * p.count);
            let bw = net.bandwidth.map_or(Duration::ZERO, |b| {
                let per_host = Duration::from_secs(u64::from(b.seconds + b.reverse_seconds) + 1);
                let together = if hosts > 1 {
                    Duration::from_secs(u64::from(b.seconds) + 1)
                } else {
                    Duration::ZERO
                };
                per_host * hosts + together
            });
            Some(ping + bw)
        }
        Section::Memory => {
            let usable: Vec<usize> = system.topology.cpus.iter().map(|c| c.id).collect();
            let shape = profile::Shape::of(&system.topology, &usable, 0);
            let planned = profile::Settings {
                memory: config.memory.clone(),
                ..profile::settings(config.profile)
            };
            Some(Duration::from_secs_f64(
                profile::estimate(&planned, &shape).memory,
            ))
        }
        Section::Storage => config.storage.as_ref().map(|s| s.time * 3),
        Section::System => None,
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
