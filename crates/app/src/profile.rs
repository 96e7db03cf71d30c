//! The run-length presets (`--profile`) and every default the command line falls back to, in one
//! table: what each section measures for how long, and the waits on peers. `config.rs` reads its
//! defaults from here and nowhere else, and the help text is generated from the same table, so
//! the two cannot disagree.
//!
//! May import: the leaves, the measurement modules' settings types and the wire's `Profile`.

use crate::judge::checks::Thresholds;
use crate::memory::{MemoryConfig, Tests};
use crate::net::iperf3::client::Timeouts;
use crate::wire::document::Profile;
use std::time::Duration;

/// What a profile runs, section by section.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// One line for `--help`.
    pub summary: &'static str,
    /// nanosleep benchmark length (DCPerf: 30 s).
    pub sleep_time: Duration,
    /// Echo requests per client (DCPerf: ping -c 10).
    pub ping_count: u32,
    /// Time between echo requests (ping's default 1 s).
    pub ping_interval: Duration,
    /// Seconds of each bandwidth test direction (DCPerf: iperf3's default 10 s).
    pub iperf_seconds: u32,
    /// The memory section.
    pub memory: MemoryConfig,
    /// Length of each storage test (the vendors' procedure: 10 s).
    pub storage_time: Duration,
    /// The level's time budget: the planner shortens the run (samples idle-latency node pairs)
    /// until its estimate fits; `None` measures everything.
    pub budget: Option<Duration>,
    /// Whether the system section asks dmidecode for the DIMMs (up to 2 s).
    pub dimms: bool,
}

/// iperf3 streams per bandwidth test (DCPerf: `-P4`).
pub const IPERF_STREAMS: u32 = 4;
/// Threads of the 4 KiB random storage tests (fio `numjobs=64`, as the vendors' procedure).
pub const STORAGE_THREADS: u32 = 64;
/// Threads of the 1 MiB sequential-write test.
pub const STORAGE_SEQUENTIAL_THREADS: usize = 4;
/// How long a client's name may take to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
/// Waits on an iperf3 peer: connecting, and each control message.
pub const PEER_TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(3),
    control: Duration::from_secs(10),
    busy: None,
};
/// How long the client role waits for a test before it stops by itself: 15 minutes, long enough
/// for a server's whole run, short enough that a forgotten responder does not linger.
pub const IDLE_TIMEOUT: &str = "900";
/// `health_check slurm`'s `--deadline`: slurmd kills its HealthCheckProgram after 60 s; the run
/// stops itself before, to write its document and count the overrun as a failing run.
pub const SLURM_DEADLINE: Duration = Duration::from_secs(50);
/// How much longer than its level's budget a run may take when nhc.conf's TIMEOUT is its
/// deadline (the budget is an estimate; NHC's TIMEOUT was sized for checks of milliseconds).
pub const NHC_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);
/// `slurm --drain-after`: failing runs in a row before a drain (one noisy run must not drain).
pub const SLURM_DRAIN_AFTER: u32 = 2;
/// `slurm --resume-after`: passing runs in a row before health_check's own drain is lifted.
pub const SLURM_RESUME_AFTER: u32 = 1;
/// `slurm --max-drained-pct`: the share of a partition health_check may hold drained.
pub const SLURM_MAX_DRAINED_PCT: &str = "10";
/// `slurm --slurm-timeout`: the longest wait for one scontrol or sinfo call, seconds.
pub const SLURM_CALL_TIMEOUT: &str = "10";
/// `slurm --scontrol` and `--sinfo`: found on PATH.
pub const SCONTROL: &str = "scontrol";
/// See [`SCONTROL`].
pub const SINFO: &str = "sinfo";
/// `--history-keep`: runs and age a machine's history keeps.
pub const HISTORY_KEEP: &str = "10000,730d";
/// `--history-window`: earlier runs in a machine's own reference (the judge's default).
pub const HISTORY_WINDOW: u16 = crate::judge::past::DEFAULT_WINDOW as u16;

/// The nhc.conf `health_check slurm` reads when it exists and `--nhc-conf` does not say
/// otherwise: where NHC reads its own.
pub const NHC_CONF: &str = "/etc/nhc/nhc.conf";

/// The table.
pub fn settings(profile: Profile) -> Settings {
    let ms = Duration::from_millis;
    let s = Duration::from_secs;
    match profile {
        // The scheduler level (Slurm's HealthCheckProgram, node-problem-detector, a timer): the
        // cheap, telling part of every section, within 10 s.
        Profile::Check => Settings {
            summary: "the scheduler level, within 10 s: a short nanosleep window, one idle \
                      chain and one bandwidth mix sized to the last-level cache, 5 pings and 1 s \
                      each way to each client",
            sleep_time: s(1),
            ping_count: 5,
            ping_interval: ms(100),
            iperf_seconds: 1,
            memory: MemoryConfig {
                tests: Tests {
                    idle: true,
                    peak: true,
                    memcpy: false,
                    loaded: false,
                    curve: false,
                },
                idle_full_random_only: true,
                peak_all_reads_only: true,
                ..memory(64, 32, 1, [150, 150, 40, 20, 30], false)
            },
            storage_time: s(1),
            budget: Some(s(10)),
            dimms: false,
        },
        Profile::Quick => Settings {
            summary: "a few seconds per section",
            sleep_time: s(3),
            ping_count: 5,
            ping_interval: ms(200),
            iperf_seconds: 2,
            memory: memory(128, 64, 1, [200, 200, 40, 20, 50], false),
            storage_time: s(2),
            budget: Some(s(30)),
            dimms: true,
        },
        Profile::Standard => Settings {
            summary: "DCPerf's parameters",
            sleep_time: s(30),
            ping_count: 10,
            ping_interval: s(1),
            iperf_seconds: 10,
            // mm-mem's sizes (512 MiB chain, 128 MiB per thread) with shorter, repeated
            // measurements, so the section takes under a minute on a small machine.
            memory: memory(512, 128, 3, [500, 400, 250, 50, 200], true),
            storage_time: s(10),
            // DCPerf's own health_check took 182 s on a 2-CPU machine.
            budget: Some(s(180)),
            dimms: true,
        },
        Profile::Thorough => Settings {
            summary: "longer runs and more repeats than standard",
            sleep_time: s(60),
            ping_count: 30,
            ping_interval: s(1),
            iperf_seconds: 30,
            // Close to mm-mem's 2 s points.
            memory: memory(1024, 128, 5, [1000, 1000, 1000, 200, 500], true),
            storage_time: s(30),
            budget: None,
            dimms: true,
        },
    }
}

/// Memory settings: chain and per-thread MiB, repeats, and the measured milliseconds of an
/// idle-latency repeat, a bandwidth phase, a sweep point, a curve point and the warm-up.
fn memory(
    region_mib: usize,
    thread_mib: usize,
    repeats: usize,
    [idle, bandwidth, sweep, curve, warmup]: [u64; 5],
    curve_fine: bool,
) -> MemoryConfig {
    let ms = Duration::from_millis;
    MemoryConfig {
        region_bytes: region_mib << 20,
        thread_region_bytes: thread_mib << 20,
        repeats,
        idle_time: ms(idle),
        bandwidth_time: ms(bandwidth),
        sweep_time: ms(sweep),
        curve_time: ms(curve),
        warmup: ms(warmup),
        reserve_hugepages: false,
        curve_fine,
        tests: Tests::ALL,
        working_set_factor: Thresholds::default().working_set_factor,
        idle_full_random_only: false,
        peak_all_reads_only: false,
        max_idle_pairs: None,
        budget_notes: Vec::new(),
    }
}

/// A duration as people write it: `3 s`, `200 ms`.
pub fn shown(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// `standard's value (quick: ..., thorough: ...)` for one setting, for an option's help.
pub fn per_profile(value: impl Fn(&Settings) -> String) -> String {
    let standard = value(&settings(Profile::Standard));
    let others: Vec<String> = Profile::ALL
        .iter()
        .filter(|&&p| p != Profile::Standard)
        .map(|&p| format!("{}: {}", p.name(), value(&settings(p))))
        .collect();
    format!("{standard} ({})", others.join(", "))
}

/// Help text of the options whose defaults depend on the profile.
pub mod help {
    use super::{per_profile, shown};

    /// `--sleep-time`.
    pub fn sleep_time() -> String {
        format!(
            "How long the nanosleep benchmark runs: seconds, or with a unit (`500ms`, `1m`); \
             default {}",
            per_profile(|s| shown(s.sleep_time))
        )
    }

    /// `--ping-count`.
    pub fn ping_count() -> String {
        format!(
            "Echo requests per client (ping -c); default {}",
            per_profile(|s| s.ping_count.to_string())
        )
    }

    /// `--ping-interval`.
    pub fn ping_interval() -> String {
        format!(
            "Time between echo requests: seconds, or with a unit (`200ms`); default {}",
            per_profile(|s| shown(s.ping_interval))
        )
    }

    /// `--iperf-time`.
    pub fn iperf_time() -> String {
        format!(
            "Seconds per bandwidth test direction (whole seconds, as iperf3 -t); default {}",
            per_profile(|s| format!("{} s", s.iperf_seconds))
        )
    }

    /// `--memory-size`.
    pub fn memory_size() -> String {
        format!(
            "Size of the idle-latency chain in MiB (mm-mem: 512); default {}",
            per_profile(|s| (s.memory.region_bytes >> 20).to_string())
        )
    }

    /// `--memory-repeats`.
    pub fn memory_repeats() -> String {
        format!(
            "Measurements per memory figure (min/avg/max are reported); default {}",
            per_profile(|s| s.memory.repeats.to_string())
        )
    }

    /// `--storage-time`.
    pub fn storage_time() -> String {
        format!(
            "Length of each storage test: seconds, or with a unit; default {}",
            per_profile(|s| shown(s.storage_time))
        )
    }
}

/// What a run's length depends on besides its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// NUMA nodes with CPUs this process may use.
    pub cpu_nodes: usize,
    /// NUMA nodes with memory (columns of the idle-latency matrix).
    pub mem_nodes: usize,
    /// CPUs this process may use.
    pub cpus: usize,
    /// One instance of the last-level cache, bytes.
    pub llc_bytes: u64,
    /// Clients of the network section.
    pub clients: usize,
}

impl Shape {
    /// The shape of a machine's topology, for a run with `clients` clients.
    pub fn of(topo: &crate::system::topology::Topology, usable: &[usize], clients: usize) -> Shape {
        let llc = crate::memory::plan::LastLevelCache::of(topo).map_or(0, |c| c.instance);
        Shape {
            cpu_nodes: topo
                .nodes
                .iter()
                .filter(|n| n.cpu_ids.iter().any(|c| usable.contains(c)))
                .count()
                .max(1),
            mem_nodes: topo
                .nodes
                .iter()
                .filter(|n| n.mem_total_kib.is_none_or(|k| k > 0))
                .count()
                .max(1),
            cpus: usable.len().max(1),
            llc_bytes: llc,
            clients,
        }
    }
}

/// How long each section of a run is expected to take, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// The system section (and dmidecode).
    pub system: f64,
    /// Ping and bandwidth to every client, then all at once.
    pub network: f64,
    /// The nanosleep benchmark.
    pub sleep: f64,
    /// The memory section.
    pub memory: f64,
}

impl Estimate {
    /// The whole run.
    pub fn total(&self) -> f64 {
        self.system + self.network + self.sleep + self.memory
    }
}

/// First touch of fresh memory: about 1.5 s per GiB on the machines measured (docs/performance.md).
const TOUCH_S_PER_GIB: f64 = 1.5;

fn gib(bytes: usize) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}

/// What a run of `s` takes on a machine of `shape` (the model behind the budgets; the numbers
/// are this VM's measured costs, rounded up).
pub fn estimate(s: &Settings, shape: &Shape) -> Estimate {
    let secs = |d: Duration| d.as_secs_f64();
    let m = &s.memory;
    let chain = m
        .region_bytes
        .max((shape.llc_bytes as f64 * m.working_set_factor) as usize);
    let patterns = if m.idle_full_random_only { 1.0 } else { 2.0 };
    let pairs = (shape.cpu_nodes * shape.mem_nodes).min(m.max_idle_pairs.unwrap_or(usize::MAX));
    let cell = gib(chain) * TOUCH_S_PER_GIB + secs(m.warmup) + m.repeats as f64 * secs(m.idle_time);
    let touch = gib(m.thread_region_bytes) * TOUCH_S_PER_GIB;
    let phase = secs(m.bandwidth_time);
    let mixes = if m.peak_all_reads_only { 1.0 } else { 5.0 };
    let mut memory = 0.0;
    if m.tests.idle {
        memory += pairs as f64 * patterns * cell;
    }
    if m.tests.peak {
        memory += touch + secs(m.warmup) + m.repeats as f64 * mixes * phase;
        if !m.peak_all_reads_only {
            // The vector kernels' trial before the measured phases (crates/measure).
            memory += secs(crate::memory::bandwidth::trial_duration(m.bandwidth_time));
        }
    }
    if m.tests.memcpy {
        memory += 2.0 * touch + secs(m.warmup) + m.repeats as f64 * 2.0 * phase;
    }
    if m.tests.loaded {
        memory += 2.0 * (gib(chain) * TOUCH_S_PER_GIB + 24.0 * secs(m.sweep_time)) + touch;
    }
    if m.tests.curve {
        let points = if m.curve_fine { 24.0 } else { 14.0 };
        memory += points * secs(m.curve_time) + gib(chain) * TOUCH_S_PER_GIB;
    }
    let network = if shape.clients == 0 {
        0.0
    } else {
        let ping = s.ping_count as f64 * secs(s.ping_interval) + secs(s.ping_interval).max(1.0);
        let each = 2.0 * f64::from(s.iperf_seconds) + 0.5;
        let together = if shape.clients > 1 {
            f64::from(s.iperf_seconds) + 1.0
        } else {
            0.0
        };
        ping + shape.clients as f64 * each + together
    };
    Estimate {
        system: if s.dimms { 2.2 } else { 0.2 },
        network,
        // Starting 2.5 threads per CPU costs about 50 us each.
        sleep: secs(s.sleep_time) + 0.2 + 2.5 * shape.cpus as f64 * 50e-6,
        memory,
    }
}

/// `s` fitted to its budget on a machine of `shape`. First the idle-latency matrix is sampled
/// (local pairs first) down to one pair; then, where the working sets are large (the chains grow
/// to 4x the last-level cache: a 1.5 GiB cache makes 6 GiB chains, 9 s to touch each), the parts
/// that add least are left out in turn: the loaded-latency sweep, the cache curve, memcpy,
/// RandomInChunk (FullRandom stays), the mixes beside all reads, the repeats. Returns the
/// settings, their estimate, and what was left out, in words (also in the memory section's
/// notes).
pub fn fit(mut s: Settings, shape: &Shape) -> (Settings, Estimate, Vec<String>) {
    let Some(budget) = s.budget.map(|b| b.as_secs_f64()) else {
        let e = estimate(&s, shape);
        return (s, e, Vec::new());
    };
    let all = shape.cpu_nodes * shape.mem_nodes;
    let mut pairs = all;
    let mut e = estimate(&s, shape);
    while e.total() > budget && pairs > 1 {
        pairs = (pairs * 3 / 4).max(1);
        s.memory.max_idle_pairs = Some(pairs);
        e = estimate(&s, shape);
    }
    type Cut = (&'static str, fn(&mut MemoryConfig) -> bool);
    let cuts: [Cut; 6] = [
        ("the loaded-latency sweep", |m| {
            std::mem::take(&mut m.tests.loaded)
        }),
        ("the cache-latency curve", |m| {
            std::mem::take(&mut m.tests.curve)
        }),
        ("memcpy", |m| std::mem::take(&mut m.tests.memcpy)),
        ("RandomInChunk idle latency (FullRandom is measured)", |m| {
            !std::mem::replace(&mut m.idle_full_random_only, true)
        }),
        (
            "the read/write mixes and vector reads (all reads are measured)",
            |m| !std::mem::replace(&mut m.peak_all_reads_only, true),
        ),
        ("repeats (each figure measured once)", |m| {
            std::mem::replace(&mut m.repeats, 1) > 1
        }),
    ];
    let mut left_out = Vec::new();
    for (what, cut) in cuts {
        if e.total() <= budget {
            break;
        }
        if cut(&mut s.memory) {
            left_out.push(what);
            e = estimate(&s, shape);
        }
    }
    let mut said = Vec::new();
    if !left_out.is_empty() {
        said.push(format!(
            "the {} s budget leaves out {} (the last-level cache of {} MiB makes each working set \
             {} MiB: --profile thorough measures them)",
            budget,
            left_out.join(", "),
            shape.llc_bytes >> 20,
            ((shape.llc_bytes as f64 * s.memory.working_set_factor) as u64) >> 20
        ));
    }
    if e.total() > budget {
        said.push(format!(
            "estimated {:.0} s, over the {budget} s budget even so",
            e.total()
        ));
    }
    s.memory.budget_notes = said.clone();
    (s, e, said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_fits_its_budget_on_machines_small_and_large() {
        for profile in [Profile::Check, Profile::Quick, Profile::Standard] {
            let budget = settings(profile).budget.unwrap().as_secs_f64();
            for nodes in [1, 2, 8, 16] {
                for cpus in [8, 64, 384, 512] {
                    let shape = Shape {
                        cpu_nodes: nodes,
                        mem_nodes: nodes,
                        cpus,
                        llc_bytes: 32 << 20,
                        clients: if profile == Profile::Check { 1 } else { 2 },
                    };
                    let (s, e, _) = fit(settings(profile), &shape);
                    assert!(
                        e.total() <= budget,
                        "{profile:?} on {nodes} nodes, {cpus} CPUs: {e:?} over {budget} s"
                    );
                    // What the budget left out is the idle matrix's, and only on big machines.
                    if nodes == 1 {
                        assert_eq!(s.memory.max_idle_pairs, None, "{profile:?}");
                    }
                }
            }
        }
        // Caches up to 1.5 GiB (3D V-Cache parts report 1.1 GiB; a VM reported 480 MiB): the
        // chains grow to 4x, and quick and standard still fit, saying what they left out.
        for profile in [Profile::Quick, Profile::Standard] {
            let budget = settings(profile).budget.unwrap().as_secs_f64();
            for nodes in [1, 4, 16] {
                for llc_mib in [32u64, 480, 1152, 1536] {
                    let shape = Shape {
                        cpu_nodes: nodes,
                        mem_nodes: nodes,
                        cpus: 384,
                        llc_bytes: llc_mib << 20,
                        clients: 2,
                    };
                    let (s, e, said) = fit(settings(profile), &shape);
                    assert!(
                        e.total() <= budget,
                        "{profile:?}, {nodes} nodes, {llc_mib} MiB: {e:?} over {budget} s"
                    );
                    assert_eq!(s.memory.budget_notes, said);
                    if llc_mib <= 32 {
                        assert!(said.is_empty(), "{profile:?} {nodes} {llc_mib}: {said:?}");
                    }
                }
            }
        }
        let huge = Shape {
            cpu_nodes: 1,
            mem_nodes: 1,
            cpus: 64,
            llc_bytes: 1536 << 20,
            clients: 2,
        };
        let (s, _, said) = fit(settings(Profile::Quick), &huge);
        assert!(!s.memory.tests.loaded && !s.memory.tests.curve, "{said:?}");
        assert!(said[0].contains("the loaded-latency sweep"), "{said:?}");
        assert!(said[0].contains("1536 MiB"), "{said:?}");
        // Sixteen nodes are 256 pairs: standard samples them, thorough measures all.
        let big = Shape {
            cpu_nodes: 16,
            mem_nodes: 16,
            cpus: 512,
            llc_bytes: 32 << 20,
            clients: 2,
        };
        let (s, _, _) = fit(settings(Profile::Standard), &big);
        assert!(
            s.memory
                .max_idle_pairs
                .is_some_and(|p| (1..256).contains(&p))
        );
        assert_eq!(
            fit(settings(Profile::Thorough), &big)
                .0
                .memory
                .max_idle_pairs,
            None
        );
    }

    #[test]
    fn standard_is_dcperfs_and_help_comes_from_the_table() {
        let s = settings(Profile::Standard);
        assert_eq!(s.sleep_time, Duration::from_secs(30));
        assert_eq!((s.ping_count, s.iperf_seconds), (10, 10));
        assert_eq!(s.memory.region_bytes, 512 << 20);
        assert_eq!(
            help::sleep_time(),
            "How long the nanosleep benchmark runs: seconds, or with a unit (`500ms`, `1m`); \
             default 30 s (check: 1 s, quick: 3 s, thorough: 60 s)"
        );
    }
}
