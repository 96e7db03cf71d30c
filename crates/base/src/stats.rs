//! Small statistics over samples: min/avg/max, ping's mdev, median and spread. Pure functions.

/// min, mean and max of `samples`; `None` when empty.
pub fn min_avg_max(samples: &[f64]) -> Option<(f64, f64, f64)> {
    if samples.is_empty() {
        return None;
    }
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let avg = samples.iter().sum::<f64>() / samples.len() as f64;
    Some((min, avg, max))
}

/// ping's mdev: sqrt(mean(x^2) - mean(x)^2), the population standard deviation.
pub fn mdev(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let mean_sq = samples.iter().map(|x| x * x).sum::<f64>() / n;
    Some((mean_sq - mean * mean).max(0.0).sqrt())
}

/// The median; the mean of the middle two for an even count. `None` when empty.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    // A selection, not a sort: a fleet's reference is the median of 10,000 values, per figure.
    let mut v = samples.to_vec();
    let mid = v.len() / 2;
    let (below, &mut upper, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    Some(if samples.len() % 2 == 0 {
        let lower = below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .unwrap_or(upper);
        (lower + upper) / 2.0
    } else {
        upper
    })
}

/// The `q` quantile (0 to 1), linear between the two nearest values. `None` when empty.
pub fn quantile(samples: &[f64], q: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    // A selection, not a sort (as the median): the two order statistics around the quantile.
    let mut v = samples.to_vec();
    let at = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    let (below, &mut upper, _) = v.select_nth_unstable_by(hi, f64::total_cmp);
    let lower = if lo == hi {
        upper
    } else {
        below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .unwrap_or(upper)
    };
    Some(lower + (upper - lower) * (at - lo as f64))
}

/// The median absolute deviation from `median`: a spread that outliers barely move.
pub fn mad(samples: &[f64], median_of_samples: f64) -> Option<f64> {
    let deviations: Vec<f64> = samples
        .iter()
        .map(|x| (x - median_of_samples).abs())
        .collect();
    median(&deviations)
}

/// max / min of positive samples: how far apart repeats are (1.0 = identical).
pub fn spread(samples: &[f64]) -> Option<f64> {
    let (min, _, max) = min_avg_max(samples)?;
    (min > 0.0).then(|| max / min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mad_ignores_one_outlier() {
        let v = [10.0, 11.0, 9.0, 10.0, 100.0];
        let m = median(&v).unwrap();
        assert_eq!(m, 10.0);
        assert_eq!(mad(&v, m), Some(1.0));
        assert_eq!(mad(&[], 0.0), None);
    }

    #[test]
    fn summaries() {
        assert_eq!(min_avg_max(&[2.0, 1.0, 3.0]), Some((1.0, 2.0, 3.0)));
        assert_eq!(min_avg_max(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(spread(&[1.0, 1.1]), Some(1.1));
        assert_eq!(spread(&[0.0, 1.0]), None);
    }

    /// The selections give the sorted definition's median and quantiles, to the bit, on
    /// generated samples (repeats, zeros of both signs, odd and even counts).
    #[test]
    fn median_is_the_sorted_middle() {
        // A generator of its own (a leaf imports no sibling): xorshift, fixed seed.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut below = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..2000 {
            let n = 1 + below(40) as usize;
            let v: Vec<f64> = (0..n)
                .map(|_| match below(4) {
                    0 => -0.0,
                    1 => below(5) as f64,
                    _ => below(1_000_000) as f64 / 7.0,
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let mid = n / 2;
            let want = if n % 2 == 0 {
                (sorted[mid - 1] + sorted[mid]) / 2.0
            } else {
                sorted[mid]
            };
            assert_eq!(median(&v).map(f64::to_bits), Some(want.to_bits()), "{v:?}");
            for q in [0.0, 0.25, 0.5, 0.75, 0.9, 1.0] {
                let at = q * (n - 1) as f64;
                let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
                let want = sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64);
                let got = quantile(&v, q).map(f64::to_bits);
                assert_eq!(got, Some(want.to_bits()), "{q} of {v:?}");
            }
        }
    }

    #[test]
    fn mdev_matches_ping() {
        // ping: rtt 1, 2, 3 ms -> mdev 0.816 ms.
        let m = mdev(&[1.0, 2.0, 3.0]).unwrap();
        assert!((m - 0.816_496_58).abs() < 1e-6);
        assert_eq!(mdev(&[5.0]), Some(0.0));
    }
}
