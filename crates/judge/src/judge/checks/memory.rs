//! Memory rules: the remote/local latency ratio of each node pair (reported), repeats that
//! disagree by more than 10 % (warn: the machine was busy, or the figure is unstable), and the
//! latency steps of the cache curve against the cache sizes the kernel reports.

use super::{Thresholds, check, pass_or_warn};
use crate::units::format_binary_size;
use crate::wire::document::{Check, CheckId, Status};
use crate::wire::memory::{MemoryPart, MinAvgMax};
use crate::wire::system::SystemPart;

/// The best measured bandwidth (any mix, or the vector read kernel) against what the DIMMs can
/// deliver; skipped, with the reason, where dmidecode gave no peak or the system section is absent.
pub fn peak_vs_theoretical(
    m: &MemoryPart,
    system: Option<&SystemPart>,
    t: &Thresholds,
) -> Option<Check> {
    let name = CheckId::new("memory", "peak_vs_theoretical");
    let limit = t.peak_vs_theoretical_pct;
    let best = m
        .peak_bandwidth_mb_s
        .values()
        .copied()
        .chain(m.peak_read_simd_mb_s)
        .fold(f64::NAN, f64::max);
    if !best.is_finite() {
        return None;
    }
    let dram = match system {
        None => {
            return Some(check(
                &name,
                Status::Skip,
                None,
                limit,
                "run with the system section to know the DIMMs' peak".into(),
            ));
        }
        Some(s) => match (&s.dram, &s.dram_error) {
            (Some(d), _) => d,
            (None, why) => {
                let why = why.as_deref().unwrap_or("the DIMMs' peak is unknown");
                return Some(check(
                    &name,
                    Status::Skip,
                    None,
                    limit,
                    format!("cannot compare: {why}"),
                ));
            }
        },
    };
    let pct = crate::units::round_to(100.0 * best / dram.theoretical_peak_mb_s, 1);
    if pct > 100.0 {
        return Some(check(
            &name,
            Status::Skip,
            None,
            limit,
            format!(
                "cannot compare: the best {best:.0} MiB/s exceeds the {:.0} MiB/s computed from \
                 dmidecode ({} channel(s) of {} MT/s), so its DIMM list misses channels",
                dram.theoretical_peak_mb_s, dram.channels, dram.speed_mts
            ),
        ));
    }
    let detail = format!(
        "best {best:.0} MiB/s is {pct}% of the {:.0} MiB/s that {} channel(s) of {} MT/s x {} bit deliver",
        dram.theoretical_peak_mb_s, dram.channels, dram.speed_mts, dram.data_width_bits
    );
    let advice = format!(
        "{detail}: check that every channel is populated, the DIMMs run at their rated speed \
         (BIOS), and no other load ran; few cores cannot saturate many channels"
    );
    Some(pass_or_warn(&name, pct, limit, detail, advice))
}

/// Whether node `name` (`Node-3`) has no CPUs (CXL or HBM memory), where the system says.
fn memory_only(system: Option<&SystemPart>, name: &str) -> bool {
    let Some(id) = name
        .strip_prefix("Node-")
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return false;
    };
    system
        .and_then(|s| s.numa_nodes.iter().find(|n| n.id == id))
        .is_some_and(|n| n.cpu_count == 0)
}

/// Remote over local idle latency for every off-diagonal pair (FullRandom, else RandomInChunk):
/// above the limit fails. Memory-only nodes (CXL, HBM) have a limit of their own.
pub fn numa_ratios(m: &MemoryPart, system: Option<&SystemPart>, t: &Thresholds) -> Vec<Check> {
    let matrix = m
        .idle_latency
        .patterns
        .get("FullRandom")
        .or_else(|| m.idle_latency.patterns.get("RandomInChunk"));
    let Some(matrix) = matrix else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (cpu, row) in matrix {
        let Some(&local) = row.get(cpu) else { continue };
        for (mem, &ns) in row.iter().filter(|(mem, _)| *mem != cpu) {
            let ratio = crate::units::round_to(ns / local, 2);
            let (limit, kind) = if memory_only(system, mem) {
                (t.numa_ratio_memory_only, "a memory-only node")
            } else {
                (t.numa_ratio, "a node with CPUs")
            };
            let seen =
                format!("{cpu} reaches {mem}'s memory in {ns} ns, {ratio}x its local {local} ns");
            let (status, message) = if ratio > limit {
                (
                    Status::Fail,
                    format!(
                        "{seen}: above {limit}x for {kind}; check that every memory channel of \
                         {mem} is populated and the inter-socket links (UPI/xGMI) run at full \
                         width and speed (BIOS, dmesg)"
                    ),
                )
            } else {
                (Status::Pass, seen)
            };
            out.push(check(
                &CheckId::new("memory", "numa_ratio").on(format!("{cpu}>{mem}")),
                status,
                Some(ratio),
                limit,
                message,
            ));
        }
    }
    out
}

fn spread_check(figure: &str, s: &MinAvgMax, unit: &str, t: &Thresholds) -> Option<Check> {
    if s.min <= 0.0 {
        return None;
    }
    let ratio = crate::units::round_to(s.max / s.min, 3);
    let name = CheckId::new("memory", "repeat_spread").on(figure.to_string());
    let range = format!("{figure}: repeats {}..{} {unit}", s.min, s.max);
    Some(if ratio > t.repeat_spread {
        check(
            &name,
            Status::Warn,
            Some(ratio),
            t.repeat_spread,
            format!(
                "{range} (max/min {ratio}): the figure moved between repeats; something else was running, \
             or the machine (or its VM host) is noisy; rerun before trusting it"
            ),
        )
    } else {
        check(
            &name,
            Status::Pass,
            Some(ratio),
            t.repeat_spread,
            format!("{range} (max/min {ratio})"),
        )
    })
}

/// Working sets against the last-level cache: a chain under `factor` x one cache instance, or a
/// bandwidth test's regions under `factor` x the whole cache, measure the cache as much as
/// memory. The figure is kept (it is what the memory allowed); the check says how far short.
pub fn working_sets(m: &MemoryPart, t: &Thresholds) -> Vec<Check> {
    let (Some(instance), Some(total)) = (m.llc_bytes, m.llc_total_bytes) else {
        return Vec::new();
    };
    let factor = t.working_set_factor;
    let mib = |b: f64| crate::units::round_to(b / f64::from(1u32 << 20), 1);
    let mut parts: Vec<(&str, &str, f64, u64, String)> = Vec::new();
    if !m.idle_latency.patterns.is_empty() {
        parts.push((
            "idle_latency",
            "the idle-latency chain",
            (m.region_mib << 20) as f64,
            instance,
            "one instance of".into(),
        ));
    }
    if !m.peak_bandwidth_mb_s.is_empty() || m.memcpy_large_mb_s.is_some() {
        parts.push((
            "bandwidth",
            "peak bandwidth and memcpy, all threads together,",
            ((m.thread_region_mib * m.threads.max(1)) << 20) as f64,
            total,
            "all of".into(),
        ));
    }
    if !m.delay_latency_bandwidth.is_empty() && m.loaded_chain_mib > 0 {
        parts.push((
            "loaded_latency",
            "the loaded-latency chaser",
            (m.loaded_chain_mib << 20) as f64,
            instance,
            "one instance of".into(),
        ));
    }
    parts
        .into_iter()
        .map(|(rule, what, bytes, cache, which)| {
            let need = factor * cache as f64;
            let ratio = crate::units::round_to(bytes / cache.max(1) as f64, 2);
            let name = CheckId::new("memory", "working_set").on(rule.to_string());
            if bytes >= need {
                check(
                    &name,
                    Status::Pass,
                    Some(ratio),
                    factor,
                    format!(
                        "{what} used {} MiB, {ratio}x {which} the {} MiB last-level cache",
                        mib(bytes),
                        mib(cache as f64)
                    ),
                )
            } else {
                check(
                    &name,
                    Status::Warn,
                    Some(ratio),
                    factor,
                    format!(
                        "{what} used {} MiB, only {ratio}x {which} the {} MiB last-level cache \
                         (under {factor}x): the figure measures the cache as much as memory; the \
                         memory available (MemAvailable or the cgroup limit) was too small for \
                         {} MiB",
                        mib(bytes),
                        mib(cache as f64),
                        mib(need)
                    ),
                )
            }
        })
        .collect()
}

/// Whether each FullRandom chain lies on hugetlb pages, as mm-mem's (DCPerf's figure) does. On
/// THP or 4 KiB pages a chase over the whole region pays TLB misses mm-mem's does not, so the
/// figure is kept but flagged as not comparable.
pub fn full_random_pages(m: &MemoryPart) -> Vec<Check> {
    let chains = [
        (
            "idle_latency",
            "idle",
            m.page_size.idle_latency.get("FullRandom"),
        ),
        (
            "loaded_latency",
            "loaded",
            m.page_size.delay_latency_bandwidth.get("FullRandom"),
        ),
    ];
    chains
        .into_iter()
        .filter_map(|(rule, what, page)| {
            let page = page?;
            let name = CheckId::new("memory", "full_random_pages").on(rule.to_string());
            let hugetlb = matches!(page.as_str(), "1G" | "2M");
            let c = if hugetlb {
                check(
                    &name,
                    Status::Pass,
                    None,
                    0.0,
                    format!("the {what} FullRandom chain is on {page} hugetlb pages, as mm-mem's"),
                )
            } else {
                check(
                    &name,
                    Status::Warn,
                    None,
                    0.0,
                    format!(
                        "the {what} FullRandom chain is on {page} pages, not hugetlb pages as in \
                         DCPerf's mm-mem run: TLB misses add to its latency, so it is not \
                         comparable with DCPerf's figure; run as root with \
                         --memory-reserve-hugepages (pools restored afterwards) or reserve 1 GiB \
                         or 2 MiB pages in /sys/kernel/mm/hugepages beforehand"
                    ),
                )
            };
            Some(c.without_limit())
        })
        .collect()
}

/// A check per repeated figure (only when there were several repeats).
pub fn repeat_spreads(m: &MemoryPart, t: &Thresholds) -> Vec<Check> {
    if m.repeats.count < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (pattern, matrix) in &m.repeats.idle_latency {
        for (cpu, row) in matrix {
            for (mem, s) in row {
                out.extend(spread_check(
                    &format!("idle {pattern} {cpu}>{mem}"),
                    s,
                    "ns",
                    t,
                ));
            }
        }
    }
    for (mix, s) in &m.repeats.peak_bandwidth_mb_s {
        out.extend(spread_check(&format!("peak {mix}"), s, "MiB/s", t));
    }
    let others = [
        ("peak_read_simd", &m.repeats.peak_read_simd_mb_s),
        ("memcpy_medium", &m.repeats.memcpy_medium_mb_s),
        ("memcpy_large", &m.repeats.memcpy_large_mb_s),
    ];
    for (name, s) in others {
        if let Some(s) = s {
            out.extend(spread_check(name, s, "MiB/s", t));
        }
    }
    out
}

/// For each data or unified cache of size S: latency at the largest working set <= S/2 against
/// the smallest >= 2S. A cache that works shows a step; none suggests a smaller, shared or
/// misreported cache (common in VMs, whose reported L3 may be the host's, shared by tenants).
pub fn cache_steps(m: &MemoryPart, t: &Thresholds) -> Vec<Check> {
    let curve = &m.cache_latency_ns;
    let mut out = Vec::new();
    if curve.is_empty() {
        return out;
    }
    for (name, &size) in &m.cache_sizes_bytes {
        let check_name = CheckId::new("memory", "cache_step").on(name.to_string());
        let size = size as usize;
        let below = curve.iter().rev().find(|(ws, _)| *ws <= size / 2);
        let above = curve.iter().find(|(ws, _)| *ws >= size * 2);
        let (Some(&(ws_in, ns_in)), Some(&(ws_out, ns_out))) = (below, above) else {
            out.push(check(
                &check_name,
                Status::Skip,
                None,
                t.cache_step,
                format!(
                    "{name} ({}): the curve has no working sets on both sides of it",
                    format_binary_size(size as u64)
                ),
            ));
            continue;
        };
        let ratio = crate::units::round_to(ns_out / ns_in, 2);
        let detail = format!(
            "{name} ({}): {ns_in} ns at {} and {ns_out} ns at {}",
            format_binary_size(size as u64),
            format_binary_size(ws_in as u64),
            format_binary_size(ws_out as u64)
        );
        out.push(if ratio >= t.cache_step {
            check(&check_name, Status::Pass, Some(ratio), t.cache_step, format!("{detail}: a {ratio}x step"))
        } else {
            check(&check_name, Status::Warn, Some(ratio), t.cache_step, format!(
                "{detail}: no step ({ratio}x) where the cache ends; it may be smaller than reported, \
                 shared with other work, or partly disabled"
            ))
        });
    }
    out
}

#[cfg(test)]
mod tests;
