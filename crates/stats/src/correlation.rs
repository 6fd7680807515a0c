//! Spearman's rank correlation, with a percentile bootstrap interval over the pairs (items).

use crate::bootstrap::{Bootstrap, Interval, percentile_interval};

/// Average ranks (1-based) of `xs`, ties sharing the mean of their places.
fn average_ranks(xs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut ranks = vec![0.0; xs.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && xs[order[j + 1]] == xs[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's ρ of `pairs` (Pearson's correlation of their average ranks); `None` under three
/// pairs or when either side does not vary.
pub fn spearman(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 3 {
        return None;
    }
    let rx = average_ranks(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let ry = average_ranks(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    let n = pairs.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in rx.iter().zip(&ry) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Spearman's ρ of `pairs` with a percentile bootstrap interval from `cfg.resamples` resamples of the
/// pairs, seeded by `seed` (a resample where either side does not vary gives no replicate); `None`
/// when ρ itself is undefined.
pub fn spearman_interval(pairs: &[(f64, f64)], cfg: &Bootstrap, seed: u64) -> Option<Interval> {
    let rho = spearman(pairs)?;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut sample = Vec::with_capacity(pairs.len());
    let replicates: Vec<Option<f64>> = (0..cfg.resamples)
        .map(|_| {
            sample.clear();
            sample.extend((0..pairs.len()).map(|_| pairs[rng.usize(..pairs.len())]));
            spearman(&sample)
        })
        .collect();
    Some(percentile_interval(rho, &replicates, cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_is_one_for_a_monotone_relation_and_handles_ties() {
        let pairs: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, (i as f64).exp())).collect();
        assert!((spearman(&pairs).unwrap() - 1.0).abs() < 1e-12);
        let reversed: Vec<(f64, f64)> = pairs.iter().map(|(x, y)| (*x, -y)).collect();
        assert!((spearman(&reversed).unwrap() + 1.0).abs() < 1e-12);
        // Ties: ranks 1.5, 1.5, 3, 4 against 1, 2, 3, 4.
        let tied = [(1.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.0)];
        let rho = spearman(&tied).unwrap();
        assert!((rho - 0.9486832980505138).abs() < 1e-12, "{rho}");
        assert_eq!(spearman(&[(1.0, 2.0), (1.0, 3.0), (1.0, 4.0)]), None, "a side that does not vary");
        assert_eq!(spearman(&[(1.0, 2.0), (2.0, 3.0)]), None, "under three pairs");
    }

    #[test]
    fn the_interval_covers_the_point_and_narrows_with_more_items() {
        let cfg = Bootstrap { resamples: 500, ..Bootstrap::default() };
        let noisy = |n: usize| -> Vec<(f64, f64)> {
            let mut rng = fastrand::Rng::with_seed(3);
            (0..n).map(|i| (i as f64, i as f64 + 20.0 * rng.f64())).collect()
        };
        let small = spearman_interval(&noisy(20), &cfg, 1).unwrap();
        let large = spearman_interval(&noisy(400), &cfg, 1).unwrap();
        for i in [&small, &large] {
            assert!(i.lo.unwrap() <= i.mean && i.mean <= i.hi.unwrap(), "{i:?}");
        }
        assert!(large.hi.unwrap() - large.lo.unwrap() < small.hi.unwrap() - small.lo.unwrap());
    }
}
