//! Proportions with their 95% Wilson score intervals.

use serde::Serialize;

/// `part / whole`, `None` when `whole` is 0 (a rate over nothing is not a number, never 0).
pub fn rate(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// A proportion with its 95% Wilson score interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Proportion {
    pub k: usize,
    pub n: usize,
    /// k / n; `None` when n is 0.
    pub rate: Option<f64>,
    /// The 95% Wilson score interval; `None` (not available) when n is below 2, as every interval
    /// h2htalk shows: over one item an interval claims what the data cannot say.
    pub ci95: Option<[f64; 2]>,
}

impl Proportion {
    /// `k` of `n`, with its interval when `n` is at least 2.
    pub fn new(k: usize, n: usize) -> Proportion {
        Proportion { k, n, rate: rate(k, n), ci95: if n >= 2 { wilson(k, n) } else { None } }
    }
}

/// The 95% Wilson score interval of k successes in n trials:
/// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n), z = 1.96; `None` when n is 0.
pub fn wilson(k: usize, n: usize) -> Option<[f64; 2]> {
    if n == 0 {
        return None;
    }
    let (k, n, z) = (k as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let center = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    Some([(center - half).max(0.0), (center + half).min(1.0)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_intervals() {
        // The old three-profile simulator: 2 of 3 needs met tells nothing apart.
        let [lo, hi] = wilson(2, 3).unwrap();
        assert!((lo - 0.2077).abs() < 1e-3 && (hi - 0.9385).abs() < 1e-3, "{lo} {hi}");
        let [lo, hi] = wilson(48, 96).unwrap();
        assert!((lo - 0.4019).abs() < 1e-3 && (hi - 0.5981).abs() < 1e-3, "{lo} {hi}");
        assert_eq!(wilson(0, 0), None);
        assert_eq!(wilson(0, 5).unwrap()[0], 0.0);
        assert_eq!(wilson(5, 5).unwrap()[1], 1.0);
    }

    #[test]
    fn no_interval_over_fewer_than_two() {
        assert_eq!(Proportion::new(1, 1).ci95, None);
        assert_eq!(Proportion::new(0, 0).rate, None);
        assert!(Proportion::new(1, 2).ci95.is_some());
    }
}
