//! A latency histogram with bounded relative error: 64 linear sub-buckets per power of two (about
//! 1.6 % resolution), so percentiles of millions of I/Os cost 2.5 K counters per thread.

/// Sub-buckets per power of two.
const SUB: usize = 64;
const SUB_BITS: u32 = 6;
/// Powers of two covered above the linear range (up to 2^46 ns, about 20 hours).
const POWERS: usize = 41;

/// Counts of values (nanoseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; SUB * (POWERS + 1)],
            total: 0,
            max: 0,
        }
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS
    let mantissa = (v >> (exp - SUB_BITS)) as usize & (SUB - 1);
    ((exp - SUB_BITS + 1) as usize * SUB + mantissa).min(SUB * (POWERS + 1) - 1)
}

/// The smallest value that falls in bucket `i`.
fn lower_bound(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let exp = (i / SUB) as u32 + SUB_BITS - 1;
    let mantissa = (i % SUB) as u64;
    (1u64 << exp) | (mantissa << (exp - SUB_BITS))
}

impl Histogram {
    /// Counts one value.
    pub fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The largest value counted.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value below which `p` percent of the counts fall (the bucket's midpoint); `None` when
    /// empty.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let lo = lower_bound(i) as f64;
                let hi = lower_bound(i + 1) as f64;
                return Some(((lo + hi) / 2.0).min(self.max as f64));
            }
        }
        Some(self.max as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_tight() {
        for v in [0u64, 1, 63, 64, 65, 100, 1000, 123_456, 10_000_000_000] {
            let i = index(v);
            assert!(
                lower_bound(i) <= v && v < lower_bound(i + 1),
                "{v} in bucket {i}"
            );
            let width = (lower_bound(i + 1) - lower_bound(i)) as f64;
            assert!(width <= 1.0_f64.max(v as f64 / 32.0), "{v}: width {width}");
        }
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000); // 1 us .. 10 ms
        }
        let p50 = h.percentile(50.0).unwrap();
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.02, "{p50}");
        let p99 = h.percentile(99.0).unwrap();
        assert!((p99 / 9_900_000.0 - 1.0).abs() < 0.02, "{p99}");
        assert_eq!(h.max(), 10_000_000);
        assert!(Histogram::default().percentile(50.0).is_none());
        let mut other = Histogram::default();
        other.record(1);
        h.merge(&other);
        assert_eq!(h.count(), 10_001);
    }
}
