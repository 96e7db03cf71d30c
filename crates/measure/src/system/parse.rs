//! Pure parsers from the text of /proc and /sys files to plain values. Nothing here reads a file,
//! so every function is tested on fixtures. The formats are the kernel's documented ones:
//! Documentation/ABI/stable/sysfs-devices-system-cpu (cpu lists, caches), Documentation/filesystems/
//! proc.rst (meminfo, cpuinfo), admin-guide/mm/transhuge.rst (THP), os-release(5).

use std::collections::BTreeMap;

/// Parses a kernel CPU or node list such as `0-3,8-11,16` (also `0-31:2/4` is not used by these
/// files and is rejected). An empty or whitespace-only list is empty. Returns `None` on bad text.
pub fn parse_cpulist(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// Formats CPU ids as a compact kernel-style list (`0-3,8`), the inverse of [`parse_cpulist`].
pub fn format_cpulist(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Parses `/proc/meminfo` (and the per-node `node*/meminfo`, whose lines start with `Node N`)
/// into a map from field name to value in KiB (or a plain count for the HugePages_ fields).
pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    let mut fields = BTreeMap::new();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        // Per-node files: "Node 0 MemTotal:       32768 kB".
        let key = key.split_whitespace().last().unwrap_or("");
        if let Some(value) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) {
            fields.insert(key.to_string(), value);
        }
    }
    fields
}

/// What /proc/cpuinfo says about the processor model. x86 has `model name`; arm64 has only the
/// MIDR fields (`CPU implementer`, `CPU part`), which [`arm_core_name`] turns into a name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuModel {
    /// `model name` (x86) or a name derived from the MIDR fields (arm64).
    pub name: Option<String>,
    /// `vendor_id` (x86) or the implementer's name (arm64).
    pub vendor: Option<String>,
    /// Whether the `hypervisor` CPU flag is set: the machine is a virtual machine.
    pub hypervisor: bool,
    /// Feature flags of the first processor (`flags` on x86, `Features` on arm64).
    pub flags: Vec<String>,
}

/// Parses the first processor block of /proc/cpuinfo.
pub fn parse_cpuinfo(text: &str) -> CpuModel {
    let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
    for line in text.lines() {
        if line.trim().is_empty() && !fields.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            fields.entry(k.trim()).or_insert(v.trim());
        }
    }
    let flags: Vec<String> = fields
        .get("flags")
        .or_else(|| fields.get("Features"))
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let implementer = fields.get("CPU implementer").and_then(|v| parse_hex(v));
    let part = fields.get("CPU part").and_then(|v| parse_hex(v));
    let name = fields
        .get("model name")
        .map(|s| s.to_string())
        .or_else(|| Some(arm_core_name(implementer?, part?)));
    let vendor = fields
        .get("vendor_id")
        .map(|s| s.to_string())
        .or_else(|| implementer.map(|i| arm_implementer_name(i).to_string()));
    CpuModel {
        name,
        vendor,
        hypervisor: flags.iter().any(|f| f == "hypervisor"),
        flags,
    }
}

fn parse_hex(text: &str) -> Option<u32> {
    u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// The implementer code of an arm64 MIDR (`CPU implementer`), as a company name.
pub fn arm_implementer_name(implementer: u32) -> &'static str {
    match implementer {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x51 => "Qualcomm",
        0x61 => "Apple",
        0xc0 => "Ampere",
        _ => "unknown",
    }
}

/// A readable core name for an arm64 MIDR, e.g. `ARM Neoverse-V2`; unknown parts keep their codes.
pub fn arm_core_name(implementer: u32, part: u32) -> String {
    let core = match (implementer, part) {
        (0x41, 0xd0c) => Some("Neoverse-N1"),
        (0x41, 0xd40) => Some("Neoverse-V1"),
        (0x41, 0xd49) => Some("Neoverse-N2"),
        (0x41, 0xd4f) => Some("Neoverse-V2"),
        (0x41, 0xd84) => Some("Neoverse-V3"),
        (0x41, 0xd8e) => Some("Neoverse-N3"),
        (0x41, 0xd0b) => Some("Cortex-A76"),
        (0x41, 0xd41) => Some("Cortex-A78"),
        (0xc0, 0xac3) => Some("AmpereOne"),
        (0xc0, 0xac4) => Some("AmpereOne-2"),
        (0x43, 0x0af) => Some("ThunderX2"),
        (0x48, 0xd01) => Some("Kunpeng-920"),
        _ => None,
    };
    let vendor = arm_implementer_name(implementer);
    match core {
        Some(core) => format!("{vendor} {core}"),
        None => format!("{vendor} part 0x{part:03x} (implementer 0x{implementer:02x})"),
    }
}

/// Parses a sysfs cache size such as `32K`, `2048K` or `32M` into bytes.
pub fn parse_cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, scale) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1024 * 1024),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    digits.trim().parse::<u64>().ok().map(|v| v * scale)
}

/// Picks the selected word in a sysfs choice list such as `always [madvise] never`.
pub fn parse_bracketed_choice(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = start + text[start..].find(']')?;
    Some(text[start + 1..end].to_string())
}

/// Parses os-release(5) `KEY=value` lines, removing the optional quotes.
pub fn parse_os_release(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(k, _)| !k.trim_start().starts_with('#'))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
                .unwrap_or(v);
            (k.trim().to_string(), v.to_string())
        })
        .collect()
}

/// Parses a PCIe link speed from sysfs (`16.0 GT/s PCIe`, `8 GT/s`, or `Unknown`) into GT/s.
pub fn parse_pcie_speed(text: &str) -> Option<f64> {
    let number = text.split_whitespace().next()?;
    number.parse::<f64>().ok().filter(|v| *v > 0.0)
}

/// Parses a single integer file such as `speed` or `nr_hugepages`. The kernel reports `-1` (or
/// fails the read) for NICs without a link; those become `None`.
pub fn parse_int(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_round_trip() {
        assert_eq!(
            parse_cpulist("0-3,8-9,16\n").unwrap(),
            vec![0, 1, 2, 3, 8, 9, 16]
        );
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpulist("\n").unwrap(), Vec::<usize>::new());
        assert!(parse_cpulist("3-1").is_none());
        assert!(parse_cpulist("a").is_none());
        assert_eq!(format_cpulist(&[0, 1, 2, 3, 8, 9, 16]), "0-3,8-9,16");
        assert_eq!(format_cpulist(&[]), "");
        let big: Vec<usize> = (0..96).chain(192..288).collect();
        assert_eq!(format_cpulist(&big), "0-95,192-287");
        assert_eq!(parse_cpulist(&format_cpulist(&big)).unwrap(), big);
    }

    #[test]
    fn meminfo_reads_system_and_node_files() {
        let sys = "MemTotal:       24684096 kB\nMemFree:        23000000 kB\n\
                   SwapTotal:             0 kB\nHugePages_Total:       2\nHugepagesize:       2048 kB\n";
        let m = parse_meminfo(sys);
        assert_eq!(m["MemTotal"], 24_684_096);
        assert_eq!(m["HugePages_Total"], 2);
        assert_eq!(m["Hugepagesize"], 2048);
        let node = "Node 1 MemTotal:       792723456 kB\nNode 1 MemFree:        790000000 kB\n";
        assert_eq!(parse_meminfo(node)["MemTotal"], 792_723_456);
    }

    #[test]
    fn cpuinfo_x86_gives_model_and_hypervisor() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n\
                    flags\t\t: fpu sse2 hypervisor avx2\n\nprocessor\t: 1\nmodel name\t: other\n";
        let m = parse_cpuinfo(text);
        assert_eq!(m.name.as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(m.vendor.as_deref(), Some("GenuineIntel"));
        assert!(m.hypervisor);
        assert!(m.flags.iter().any(|f| f == "avx2"));
    }

    #[test]
    fn cpuinfo_arm64_names_the_core_from_midr() {
        let text = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve2\n\
                    CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n\
                    CPU part\t: 0xd4f\nCPU revision\t: 0\n";
        let m = parse_cpuinfo(text);
        assert_eq!(m.name.as_deref(), Some("ARM Neoverse-V2"));
        assert_eq!(m.vendor.as_deref(), Some("ARM"));
        assert!(!m.hypervisor);
        assert_eq!(
            arm_core_name(0x41, 0xfff),
            "ARM part 0xfff (implementer 0x41)"
        );
    }

    #[test]
    fn cache_sizes_and_choices() {
        assert_eq!(parse_cache_size("48K\n"), Some(48 * 1024));
        assert_eq!(parse_cache_size("266240K"), Some(266_240 * 1024));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("x"), None);
        assert_eq!(
            parse_bracketed_choice("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(parse_bracketed_choice("always madvise never"), None);
    }

    #[test]
    fn os_release_unquotes() {
        let m =
            parse_os_release("ID=debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n# c\n");
        assert_eq!(m["ID"], "debian");
        assert_eq!(m["PRETTY_NAME"], "Debian GNU/Linux 12 (bookworm)");
    }

    #[test]
    fn pcie_speeds_and_ints() {
        assert_eq!(parse_pcie_speed("16.0 GT/s PCIe\n"), Some(16.0));
        assert_eq!(parse_pcie_speed("2.5 GT/s"), Some(2.5));
        assert_eq!(parse_pcie_speed("Unknown"), None);
        assert_eq!(parse_int("-1\n"), Some(-1));
        assert_eq!(parse_int("25000"), Some(25_000));
    }
}
