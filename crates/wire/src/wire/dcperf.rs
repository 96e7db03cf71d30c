//! DCPerf's own health_check metrics, as its parser writes them (and as its README shows them),
//! for the readers: `compare` and `baseline` take upstream runs beside ours. Only reading:
//! numbers may arrive as strings (the README's example), keys under either spelling
//! (`iperf3_bandwidth` / `"iperf3 bandwidth"`, `delay_bandwidth_latency` /
//! `delay_latency_bandwidth`), and on aarch64 `idle_latency.avg_latency` is one number.

use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use std::collections::BTreeMap;
use std::fmt;

/// A number that may be a JSON number, a numeric string, or null (then `None`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Lenient(pub Option<f64>);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lenient;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, a number in a string, or null")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Lenient, E> {
                Ok(Lenient(v.is_finite().then_some(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Lenient, E> {
                let t = v.trim();
                if t.is_empty() {
                    return Ok(Lenient(None));
                }
                t.parse::<f64>()
                    .map(|x| Lenient(x.is_finite().then_some(x)))
                    .map_err(|_| E::custom(format!("'{v}' is not a number")))
            }
            fn visit_unit<E>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_none<E>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// DCPerf's `metrics` object.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpstreamMetrics {
    /// Average ping RTT per client.
    #[serde(default)]
    pub ping: Vec<UpstreamPing>,
    /// Bandwidth per client.
    #[serde(default, alias = "iperf3 bandwidth")]
    pub iperf3_bandwidth: Vec<UpstreamBandwidth>,
    /// The nanosleep benchmark.
    #[serde(default)]
    pub sleepbench: UpstreamSleep,
    /// mm-mem's figures (x86) or ARM's loaded-latency (aarch64).
    #[serde(default)]
    pub memory: UpstreamMemory,
}

/// One ping entry.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpstreamPing {
    /// The client (DCPerf's parser leaves a trailing space on it).
    pub hostname: String,
    /// Average RTT, ms.
    #[serde(default)]
    pub latency: Lenient,
}

/// One bandwidth entry.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpstreamBandwidth {
    /// The client.
    pub hostname: String,
    /// Gbit/s.
    #[serde(default)]
    pub bandwidth: Lenient,
}

/// DCPerf's sleepbench keys.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpstreamSleep {
    /// Calls per second, all threads.
    #[serde(default, rename = "calls per second")]
    pub calls_per_second: Lenient,
    /// Idle time, %.
    #[serde(default, rename = "idle%")]
    pub idle_pct: Lenient,
    /// Kernel time, %.
    #[serde(default, rename = "sys%")]
    pub sys_pct: Lenient,
    /// Interrupt time, %.
    #[serde(default, rename = "irq%")]
    pub irq_pct: Lenient,
    /// 100 - idle%.
    #[serde(default)]
    pub total: Lenient,
}

/// An `idle_latency` entry: a node matrix (x86) or one number (aarch64's `avg_latency`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum IdleEntry {
    /// CPU node -> memory node -> ns.
    Matrix(BTreeMap<String, BTreeMap<String, Lenient>>),
    /// One latency, ns.
    Average(Lenient),
}

/// One sweep row: delay, bandwidth, latency.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct UpstreamRow(pub Lenient, pub Lenient, pub Lenient);

impl UpstreamRow {
    /// The delay as the sweep names it.
    pub fn delay(&self) -> Option<u64> {
        self.0.0.filter(|d| *d >= 0.0).map(|d| d as u64)
    }
}

/// DCPerf's memory keys.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpstreamMemory {
    /// MiB/s per mix.
    #[serde(default)]
    pub peak_bandwidth_mb_s: BTreeMap<String, Lenient>,
    /// Per pattern.
    #[serde(default)]
    pub idle_latency: BTreeMap<String, IdleEntry>,
    /// The loaded-latency sweep per pattern.
    #[serde(default, alias = "delay_latency_bandwidth")]
    pub delay_bandwidth_latency: BTreeMap<String, Vec<UpstreamRow>>,
    /// 128 MiB memcpy, MiB/s.
    #[serde(default)]
    pub memcpy_large_mb_s: Lenient,
    /// 16 KiB memcpy, MiB/s.
    #[serde(default)]
    pub memcpy_medium_mb_s: Lenient,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstream_example_reads_with_string_numbers_and_either_spelling() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/upstream-health-check-metrics.json"
        ))
        .unwrap();
        let env: serde_json::Value = serde_json::from_str(&text).unwrap();
        let m: UpstreamMetrics = serde_json::from_value(env["metrics"].clone()).unwrap();
        assert_eq!(m.ping[0].hostname, "127.0.0.1 ");
        assert_eq!(m.ping[0].latency.0, Some(0.042));
        assert_eq!(m.iperf3_bandwidth[0].bandwidth.0, Some(18.5));
        assert_eq!(m.memory.delay_bandwidth_latency["FullRandom"].len(), 24);
        let readme_style: UpstreamMetrics = serde_json::from_str(
            r#"{"iperf3 bandwidth": [{"hostname": "c1", "bandwidth": "36.8", "unit": "Gbps"}],
                "sleepbench": {"calls per second": "61701.9", "total": "13.78"},
                "memory": {"delay_latency_bandwidth": {"FullRandom": [["1", "43.5", "170.9"]]},
                           "idle_latency": {"avg_latency": 179.5}}}"#,
        )
        .unwrap();
        assert_eq!(readme_style.iperf3_bandwidth[0].bandwidth.0, Some(36.8));
        assert_eq!(readme_style.sleepbench.calls_per_second.0, Some(61701.9));
        let row = readme_style.memory.delay_bandwidth_latency["FullRandom"][0];
        assert_eq!((row.delay(), row.2.0), (Some(1), Some(170.9)));
        assert!(matches!(
            readme_style.memory.idle_latency["avg_latency"],
            IdleEntry::Average(Lenient(Some(_)))
        ));
        assert!(serde_json::from_str::<Lenient>(r#""fast""#).is_err());
    }
}
