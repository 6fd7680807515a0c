//! Krippendorff's alpha: the agreement of several raters, chance-corrected, over units that any
//! subset of the raters rated (Krippendorff, *Computing Krippendorff's Alpha-Reliability*, 2011).
//! Only pairable values count: a unit rated by fewer than two raters adds nothing, and a rater who
//! abstained (or whose answer could not be used) is simply absent from that unit.
//!
//! No maintained Rust crate computes it (the Python `krippendorff` package is the reference
//! implementation); this one is checked against the worked example of the paper in the tests below.

use serde::Serialize;

/// How far apart two values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Equal or not.
    Nominal,
    /// Ranks: the distance grows with how many values lie between the two.
    Ordinal,
    /// The squared difference.
    Interval,
}

/// Alpha over `units`, each the values the raters who rated it gave. `None` when fewer than two
/// units are pairable, or when the pairable values do not vary (no expected disagreement: alpha is
/// undefined, never 1 or 0).
pub fn alpha(units: &[Vec<f64>], metric: Metric) -> Option<f64> {
    let units: Vec<&Vec<f64>> = units.iter().filter(|u| u.len() >= 2).collect();
    if units.len() < 2 {
        return None;
    }
    // The distinct values and how often each is pairable (n_c).
    let mut values: Vec<f64> = units.iter().flat_map(|u| u.iter().copied()).collect();
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len() as f64;
    values.sort_by(f64::total_cmp);
    let mut distinct: Vec<(f64, f64)> = Vec::new();
    for v in &values {
        match distinct.last_mut() {
            Some((last, count)) if last == v => *count += 1.0,
            _ => distinct.push((*v, 1.0)),
        }
    }
    let index = |v: f64| distinct.iter().position(|(d, _)| *d == v).expect("a pairable value");
    let delta = |a: usize, b: usize| -> f64 {
        let (c, k) = (distinct[a], distinct[b]);
        match metric {
            Metric::Nominal => f64::from(u8::from(a != b)),
            Metric::Interval => (c.0 - k.0).powi(2),
            Metric::Ordinal => {
                if a == b {
                    return 0.0;
                }
                let (lo, hi) = (a.min(b), a.max(b));
                let between: f64 = distinct[lo..=hi].iter().map(|(_, count)| count).sum();
                (between - (c.1 + k.1) / 2.0).powi(2)
            }
        }
    };
    // Observed disagreement: every ordered pair of values within a unit, weighted 1/(m_u - 1).
    let mut observed = 0.0;
    for u in &units {
        let idx: Vec<usize> = u.iter().map(|v| index(*v)).collect();
        let m = idx.len() as f64;
        let mut sum = 0.0;
        for (i, a) in idx.iter().enumerate() {
            for (j, b) in idx.iter().enumerate() {
                if i != j {
                    sum += delta(*a, *b);
                }
            }
        }
        observed += sum / (m - 1.0);
    }
    observed /= n;
    // Expected disagreement: every ordered pair of pairable values, n_c * n_k.
    let mut expected = 0.0;
    for a in 0..distinct.len() {
        for b in 0..distinct.len() {
            if a != b {
                expected += distinct[a].1 * distinct[b].1 * delta(a, b);
            }
        }
    }
    expected /= n * (n - 1.0);
    (expected > 0.0).then(|| 1.0 - observed / expected)
}

/// Alpha over `units` with a percentile bootstrap interval from `cfg.resamples` resamples of the
/// units, seeded by `seed` (a resample where alpha is undefined gives no replicate); `None` when
/// alpha itself is undefined.
pub fn alpha_interval(
    units: &[Vec<f64>],
    metric: Metric,
    cfg: &crate::bootstrap::Bootstrap,
    seed: u64,
) -> Option<crate::bootstrap::Interval> {
    let point = alpha(units, metric)?;
    let mut rng = fastrand::Rng::with_seed(seed);
    let replicates: Vec<Option<f64>> = (0..cfg.resamples)
        .map(|_| {
            let sample: Vec<Vec<f64>> = (0..units.len()).map(|_| units[rng.usize(..units.len())].clone()).collect();
            alpha(&sample, metric)
        })
        .collect();
    Some(crate::bootstrap::percentile_interval(point, &replicates, cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reliability data of Krippendorff (2011), section C: four observers, twelve units,
    /// values 1-5, `None` where an observer gave no value.
    fn example() -> Vec<Vec<f64>> {
        let observers: [[Option<u8>; 12]; 4] = [
            [Some(1), Some(2), Some(3), Some(3), Some(2), Some(1), Some(4), Some(1), Some(2), None, None, None],
            [Some(1), Some(2), Some(3), Some(3), Some(2), Some(2), Some(4), Some(1), Some(2), Some(5), None, Some(3)],
            [None, Some(3), Some(3), Some(3), Some(2), Some(3), Some(4), Some(2), Some(2), Some(5), Some(1), None],
            [Some(1), Some(2), Some(3), Some(3), Some(2), Some(4), Some(4), Some(1), Some(2), Some(5), Some(1), None],
        ];
        (0..12).map(|u| observers.iter().filter_map(|o| o[u]).map(f64::from).collect()).collect()
    }

    #[test]
    fn krippendorffs_worked_example() {
        // The paper's results: nominal 0.743, ordinal 0.815, interval 0.849.
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        assert_eq!(alpha(&example(), Metric::Nominal).map(round), Some(0.743));
        assert_eq!(alpha(&example(), Metric::Ordinal).map(round), Some(0.815));
        assert_eq!(alpha(&example(), Metric::Interval).map(round), Some(0.849));
    }

    #[test]
    fn degenerate_data_has_no_alpha() {
        assert_eq!(alpha(&[vec![3.0, 3.0], vec![3.0, 3.0]], Metric::Interval), None);
        assert_eq!(alpha(&[vec![3.0, 4.0], vec![5.0]], Metric::Interval), None);
        assert_eq!(alpha(&[], Metric::Ordinal), None);
        // Perfect agreement with variation is 1; the lone value of unit 3 is not pairable.
        assert_eq!(alpha(&[vec![2.0, 2.0], vec![7.0, 7.0], vec![1.0]], Metric::Interval), Some(1.0));
    }
}
