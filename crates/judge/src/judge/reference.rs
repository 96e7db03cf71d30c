//! The one comparison of a figure with its reference. A reference is the median, the median
//! absolute deviation and the number of machines behind them, whether it comes from a machine's
//! siblings (`compare`), a learned baseline (`--baseline`) or the machine's own past runs
//! (`--history`): every path calls [`Reference::judge`], so the same figure gets the same
//! verdict by every path.
//!
//! A value is flagged when it is worse than the median (in the figure's direction) by more than
//! the rule's tolerance, and by more than the rule's `min_difference` (a noise floor in the
//! figure's unit), and, where the reference has [`MIN_MACHINES_FOR_Z`] machines or more and a
//! spread, when it is also an outlier (robust z-score beyond [`Z_LIMIT`], Iglewicz and Hoaglin).
//! A median of zero has no percentage: there the noise floor alone is the limit, and without one
//! any worse value is flagged.

use crate::stats::{mad, median};
use crate::wire::figures::Direction;
use crate::wire::rule::RuleSpec;

/// References of this many machines or more also need a robust z-score beyond [`Z_LIMIT`].
pub const MIN_MACHINES_FOR_Z: usize = 5;
/// The robust z-score beyond which a value is an outlier.
pub const Z_LIMIT: f64 = 3.5;
/// The constant that makes the MAD comparable with a standard deviation (0.6745 = Φ⁻¹(0.75)).
const MAD_SCALE: f64 = 0.6745;

/// What a figure is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    /// The median.
    pub median: f64,
    /// The median absolute deviation from the median.
    pub mad: f64,
    /// The machines behind it (not the values: 3 servers x 4 clients are 3 machines).
    pub machines: usize,
}

/// How a value stands against a reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Worse than the reference beyond the rule's tolerance, its noise floor and, where it
    /// applies, the outlier test.
    pub flagged: bool,
    /// `value - median` as a share of the median, %; `None` for a zero median.
    pub deviation_pct: Option<f64>,
    /// 0.6745 x (value - median) / MAD; `None` where the MAD is 0.
    pub robust_z: Option<f64>,
    /// The value at which the tolerance and the noise floor would flag it, in the figure's unit.
    pub limit: f64,
}

impl Reference {
    /// The reference of `values` measured on `machines` machines; `None` without a value.
    pub fn of(values: &[f64], machines: usize) -> Option<Reference> {
        let med = median(values)?;
        Some(Reference {
            median: med,
            mad: mad(values, med).unwrap_or(0.0),
            machines,
        })
    }

    /// Judges `value` by `rule`, in `direction`.
    pub fn judge(&self, value: f64, direction: Direction, rule: &RuleSpec) -> Verdict {
        let floor = rule.min_difference.unwrap_or(0.0);
        let relative = self.median.abs() * rule.tolerance_pct / 100.0;
        // Worse by more than both the tolerance and the floor; a zero median leaves the floor.
        let margin = if self.median == 0.0 {
            floor
        } else {
            relative.max(floor)
        };
        let limit = match direction {
            Direction::Higher => self.median - margin,
            Direction::Lower => self.median + margin,
        };
        let worse = direction.is_worse(value, self.median);
        let beyond = (value - self.median).abs() > margin;
        let robust_z = (self.mad > 0.0).then(|| MAD_SCALE * (value - self.median) / self.mad);
        let z_applies = self.machines >= MIN_MACHINES_FOR_Z && robust_z.is_some();
        let outlier = !z_applies || robust_z.is_some_and(|z| z.abs() > Z_LIMIT);
        Verdict {
            flagged: worse && beyond && outlier,
            deviation_pct: (self.median != 0.0)
                .then(|| 100.0 * (value - self.median) / self.median.abs()),
            robust_z,
            limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rule::Severity;

    fn rule(tolerance_pct: f64, min_difference: Option<f64>) -> RuleSpec {
        RuleSpec {
            metrics: ".".into(),
            direction: None,
            tolerance_pct,
            severity: Severity::Fail,
            min_difference,
        }
    }

    fn reference(median: f64, mad: f64, machines: usize) -> Reference {
        Reference {
            median,
            mad,
            machines,
        }
    }

    #[test]
    fn beyond_the_tolerance_in_the_worse_direction_is_flagged() {
        let r = reference(100.0, 0.0, 3);
        let ten = rule(10.0, None);
        let v = r.judge(89.0, Direction::Higher, &ten);
        assert!(v.flagged);
        assert_eq!(v.deviation_pct, Some(-11.0));
        assert_eq!(v.limit, 90.0);
        assert!(!r.judge(91.0, Direction::Higher, &ten).flagged, "within");
        // "Worse by more than the tolerance": exactly at the limit is not flagged.
        assert!(
            !r.judge(90.0, Direction::Higher, &ten).flagged,
            "at the limit"
        );
        assert!(
            !r.judge(110.0, Direction::Lower, &ten).flagged,
            "at the limit"
        );
        assert!(!r.judge(130.0, Direction::Higher, &ten).flagged, "better");
        assert!(r.judge(111.0, Direction::Lower, &ten).flagged, "direction");
        assert!(!r.judge(89.0, Direction::Lower, &ten).flagged, "direction");
    }

    #[test]
    fn in_five_machines_or_more_only_an_outlier_is_flagged() {
        // 12 % below the median is past the 10 % tolerance...
        let ten = rule(10.0, None);
        let noisy = reference(30_000.0, 3_000.0, 6);
        let v = noisy.judge(26_400.0, Direction::Higher, &ten);
        assert_eq!(v.deviation_pct, Some(-12.0));
        // ... but |z| = 0.81 in a noisy fleet: not an outlier.
        assert!((v.robust_z.unwrap() + 0.8094).abs() < 1e-3);
        assert!(!v.flagged);
        // The same value in a quiet fleet is (|z| = 4.86).
        let quiet = reference(30_000.0, 500.0, 6);
        assert!(quiet.judge(26_400.0, Direction::Higher, &ten).flagged);
        // With four machines the tolerance alone decides, noisy or not.
        assert!(
            reference(30_000.0, 3_000.0, 4)
                .judge(26_400.0, Direction::Higher, &ten)
                .flagged
        );
        // "Beyond" the z limit: exactly at it is not an outlier (a MAD of MAD_SCALE makes z the
        // plain difference, exactly).
        let unit = reference(100.0, MAD_SCALE, 6);
        let one = rule(1.0, None);
        let at = unit.judge(100.0 - Z_LIMIT, Direction::Higher, &one);
        assert_eq!(at.robust_z, Some(-Z_LIMIT));
        assert!(!at.flagged, "|z| at the limit");
        assert!(
            unit.judge(100.0 - Z_LIMIT - 0.5, Direction::Higher, &one)
                .flagged
        );
        // A MAD of 0 has no z-score: the tolerance decides in a large group too.
        let flat = reference(30_000.0, 0.0, 8).judge(26_000.0, Direction::Higher, &ten);
        assert!(flat.flagged && flat.robust_z.is_none());
    }

    #[test]
    fn the_noise_floor_and_zero_medians() {
        // 0.03 ms over 0.05 ms is 60 % worse, but under the 0.05 ms floor.
        let ping = rule(50.0, Some(0.05));
        assert!(
            !reference(0.05, 0.0, 3)
                .judge(0.08, Direction::Lower, &ping)
                .flagged
        );
        assert!(
            reference(0.05, 0.0, 3)
                .judge(0.11, Direction::Lower, &ping)
                .flagged
        );
        // IRQ 40 % against a fleet median of 0 %: flagged by the floor, with no percentage.
        let irq = rule(30.0, Some(5.0));
        let v = reference(0.0, 0.0, 6).judge(40.0, Direction::Lower, &irq);
        assert!(v.flagged);
        assert_eq!((v.deviation_pct, v.limit), (None, 5.0));
        assert!(
            !reference(0.0, 0.0, 6)
                .judge(4.0, Direction::Lower, &irq)
                .flagged
        );
        // Without a floor, a zero median flags any worse value.
        assert!(
            reference(0.0, 0.0, 2)
                .judge(0.1, Direction::Lower, &rule(30.0, None))
                .flagged
        );
    }

    #[test]
    fn a_reference_counts_machines_not_values() {
        let r = Reference::of(&[1.0, 2.0, 3.0, 4.0, 100.0], 2).unwrap();
        assert_eq!((r.median, r.mad, r.machines), (3.0, 1.0, 2));
        assert!(Reference::of(&[], 0).is_none());
    }
}
