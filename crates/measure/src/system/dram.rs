//! The DIMMs and what they can deliver: `dmidecode -t memory` (SMBIOS type 17) gives each memory
//! device's size, data width, locator and configured speed. The theoretical peak is the sum over
//! memory channels of MT/s x data width; DIMMs sharing a channel share its bandwidth, so channels
//! are told apart by their locator with the DIMM's index on the channel removed
//! (`P0_Node0_Channel3_Dimm1` -> `P0_Node0_Channel3`, `DIMM_A2` -> `DIMM_A`).

use std::collections::BTreeMap;
use std::time::Duration;

/// What the DIMMs add up to.
#[derive(Debug, Clone, PartialEq)]
pub struct DramInfo {
    /// Populated memory devices.
    pub dimms: usize,
    /// Distinct memory channels they sit on.
    pub channels: usize,
    /// Memory type (`DDR5`, ...).
    pub kind: Option<String>,
    /// Configured speed, MT/s (the slowest populated DIMM).
    pub speed_mts: u32,
    /// Data width per DIMM, bits (64 without ECC bits).
    pub data_width_bits: u32,
    /// channels x MT/s x data width, MiB/s.
    pub theoretical_peak_mb_s: f64,
    /// The modules by kind: `16x Samsung M393A4K40EB3-CWE 32 GB @ 3200 MT/s`, kinds joined
    /// with `, ` (a machine's DIMMs in one line, to compare with its siblings').
    pub modules: String,
}

#[derive(Default)]
struct Device {
    size: Option<String>,
    width: Option<u32>,
    speed: Option<u32>,
    configured_speed: Option<u32>,
    locator: Option<String>,
    bank: Option<String>,
    kind: Option<String>,
    manufacturer: Option<String>,
    part: Option<String>,
}

fn leading_number(v: &str) -> Option<u32> {
    v.split_whitespace().next()?.parse().ok()
}

fn parse_devices(text: &str) -> Vec<Device> {
    let mut devices = Vec::new();
    let mut current: Option<Device> = None;
    for line in text.lines() {
        if line.trim() == "Memory Device" {
            devices.extend(current.take());
            current = Some(Device::default());
            continue;
        }
        if line.starts_with("Handle ") {
            devices.extend(current.take());
            continue;
        }
        let Some(d) = current.as_mut() else { continue };
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "Size" => d.size = Some(value.to_string()),
            "Data Width" => d.width = leading_number(value),
            "Speed" => d.speed = leading_number(value),
            "Configured Memory Speed" | "Configured Clock Speed" => {
                d.configured_speed = leading_number(value)
            }
            "Locator" => d.locator = Some(value.to_string()),
            "Bank Locator" => d.bank = Some(value.to_string()),
            "Type" => d.kind = Some(value.to_string()),
            "Manufacturer" => d.manufacturer = Some(value.to_string()),
            "Part Number" => d.part = Some(value.to_string()),
            _ => {}
        }
    }
    devices.extend(current);
    devices
}

/// The channel a DIMM sits on: its locator without the DIMM's index on the channel.
fn channel_key(d: &Device) -> String {
    let bank = d.bank.as_deref().unwrap_or("");
    let locator = d.locator.as_deref().unwrap_or("");
    let source = if bank.to_ascii_lowercase().contains("channel") {
        bank
    } else {
        locator
    };
    let lower = source.to_ascii_lowercase();
    if let Some(at) = lower.rfind("dimm").filter(|&at| at > 0) {
        return source[..at].trim_end_matches(['_', '-', ' ']).to_string();
    }
    source
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_string()
}

/// Why the DIMMs' peak is unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DramError {
    /// dmidecode is missing.
    #[error("dmidecode is not installed (apt-get install dmidecode) so the DIMMs' peak is unknown")]
    NotInstalled,
    /// dmidecode could not be run or failed; the text says how.
    #[error("{0}")]
    Failed(String),
    /// Its output gives no peak; the text says why.
    #[error("{0}")]
    Unknown(String),
}

/// Parses `dmidecode -t memory`. `Err` says why no peak can be given.
pub fn parse_dmidecode_memory(text: &str) -> Result<DramInfo, DramError> {
    let devices: Vec<Device> = parse_devices(text)
        .into_iter()
        .filter(|d| {
            d.size.as_deref().is_some_and(|s| {
                !s.starts_with("No Module")
                    && !s.starts_with('0')
                    && !s.eq_ignore_ascii_case("unknown")
            })
        })
        .collect();
    if devices.is_empty() {
        return Err(DramError::Unknown(
            "dmidecode lists no populated memory device".into(),
        ));
    }
    let speed = devices
        .iter()
        .filter_map(|d| d.configured_speed.or(d.speed))
        .filter(|&s| s > 0)
        .min()
        .ok_or_else(|| {
            DramError::Unknown(
                "dmidecode gives no memory speed (common in virtual machines)".into(),
            )
        })?;
    let width = devices
        .iter()
        .filter_map(|d| d.width)
        .filter(|&w| w > 0)
        .min()
        .unwrap_or(64);
    let mut channels: BTreeMap<String, usize> = BTreeMap::new();
    for d in &devices {
        *channels.entry(channel_key(d)).or_default() += 1;
    }
    // DDR4 and DDR5 take at most two DIMMs per channel: more means the locators do not name
    // channels, and a peak from them would be wrong.
    if let Some((name, n)) = channels.iter().find(|(_, n)| **n > 2) {
        return Err(DramError::Unknown(format!(
            "the channel layout is unknown: the locators put {n} DIMMs on '{name}'"
        )));
    }
    let bytes_per_s = channels.len() as f64 * f64::from(speed) * 1e6 * f64::from(width) / 8.0;
    Ok(DramInfo {
        modules: modules(&devices),
        dimms: devices.len(),
        channels: channels.len(),
        kind: devices[0].kind.clone(),
        speed_mts: speed,
        data_width_bits: width,
        theoretical_peak_mb_s: (bytes_per_s / (1024.0 * 1024.0)).round(),
    })
}

/// The modules counted by manufacturer, part number, size and speed.
fn modules(devices: &[Device]) -> String {
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for d in devices {
        let words: Vec<&str> = [
            d.manufacturer.as_deref(),
            d.part.as_deref(),
            d.size.as_deref(),
        ]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|w| !w.is_empty() && !w.eq_ignore_ascii_case("unknown"))
        .collect();
        let mut kind = words.join(" ");
        if let Some(speed) = d.configured_speed.or(d.speed) {
            kind.push_str(&format!(" @ {speed} MT/s"));
        }
        *kinds.entry(kind.trim().to_string()).or_default() += 1;
    }
    kinds
        .into_iter()
        .map(|(k, n)| format!("{n}x {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `dmidecode -t memory` (2 s limit) and parses it.
pub fn read_dram() -> Result<DramInfo, DramError> {
    let path = which::which("dmidecode").map_err(|_| DramError::NotInstalled)?;
    let output = crate::command::run(&path, &["-t", "memory"], Duration::from_secs(2)).map_err(
        |e| match e {
            crate::command::CommandError::Timeout { .. } => {
                DramError::Failed("dmidecode took longer than 2 s".into())
            }
            e => DramError::Failed(e.to_string()),
        },
    )?;
    if !output.success() {
        return Err(DramError::Failed(format!(
            "dmidecode failed ({}); it needs root to read the DMI tables",
            output.stderr_text()
        )));
    }
    parse_dmidecode_memory(&String::from_utf8_lossy(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_CHANNELS_FOUR_DIMMS: &str = "\
# dmidecode 3.4
Handle 0x0011, DMI type 17, 92 bytes
Memory Device
\tTotal Width: 72 bits
\tData Width: 64 bits
\tSize: 32 GB
\tLocator: DIMM_A1
\tBank Locator: P0_Node0_Channel0_Dimm0
\tType: DDR5
\tSpeed: 5600 MT/s
\tConfigured Memory Speed: 4800 MT/s

Handle 0x0012, DMI type 17, 92 bytes
Memory Device
\tData Width: 64 bits
\tSize: 32 GB
\tLocator: DIMM_A2
\tBank Locator: P0_Node0_Channel0_Dimm1
\tType: DDR5
\tConfigured Memory Speed: 4800 MT/s

Handle 0x0013, DMI type 17, 92 bytes
Memory Device
\tData Width: 64 bits
\tSize: 32 GB
\tLocator: DIMM_B1
\tBank Locator: P0_Node0_Channel1_Dimm0
\tType: DDR5
\tConfigured Memory Speed: 4800 MT/s

Handle 0x0014, DMI type 17, 92 bytes
Memory Device
\tData Width: 64 bits
\tSize: 32 GB
\tLocator: DIMM_B2
\tBank Locator: P0_Node0_Channel1_Dimm1
\tType: DDR5
\tConfigured Memory Speed: 4400 MT/s

Handle 0x0015, DMI type 17, 92 bytes
Memory Device
\tData Width: Unknown
\tSize: No Module Installed
\tLocator: DIMM_C1
\tBank Locator: P0_Node0_Channel2_Dimm0
";

    #[test]
    fn dimms_sharing_a_channel_count_once() {
        let d = parse_dmidecode_memory(TWO_CHANNELS_FOUR_DIMMS).unwrap();
        assert_eq!(
            (d.dimms, d.channels, d.speed_mts, d.data_width_bits),
            (4, 2, 4400, 64)
        );
        assert_eq!(d.kind.as_deref(), Some("DDR5"));
        // 2 channels x 4400 MT/s x 8 B = 70.4 GB/s = 67 139 MiB/s.
        assert_eq!(d.theoretical_peak_mb_s, 67_139.0);
    }

    #[test]
    fn locators_without_a_bank_channel() {
        let text = "Memory Device\n\tSize: 16 GB\n\tLocator: DIMM_A2\n\tBank Locator: BANK 0\n\tSpeed: 3200 MT/s\n\
                    Memory Device\n\tSize: 16 GB\n\tLocator: DIMM_B1\n\tBank Locator: BANK 1\n\tSpeed: 3200 MT/s\n";
        let d = parse_dmidecode_memory(text).unwrap();
        assert_eq!(d.channels, 2);
    }

    #[test]
    fn locators_that_do_not_name_channels_give_no_peak() {
        let dimm = |i: u32| {
            format!(
                "Memory Device\n\tSize: 16 GB\n\tLocator: DIMM{i}\n\tBank Locator: NODE 0\n\tSpeed: 3200 MT/s\n"
            )
        };
        let text: String = (0..3).map(|_| dimm(0)).collect();
        assert!(
            parse_dmidecode_memory(&text)
                .unwrap_err()
                .to_string()
                .contains("channel layout is unknown")
        );
    }

    #[test]
    fn virtual_machines_give_no_speed() {
        let qemu =
            "Memory Device\n\tSize: 24 GB\n\tLocator: DIMM 0\n\tSpeed: Unknown\n\tType: RAM\n";
        assert!(
            parse_dmidecode_memory(qemu)
                .unwrap_err()
                .to_string()
                .contains("no memory speed")
        );
        assert!(
            parse_dmidecode_memory("")
                .unwrap_err()
                .to_string()
                .contains("no populated")
        );
    }
}
