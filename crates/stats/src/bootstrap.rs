//! Bootstrap statistics: means with percentile confidence intervals from resampled scenarios
//! (stratified by sub-task), paired differences between two runs, and rank intervals.
//!
//! Every resampling stream is seeded from the report's seed and a label (the run id and the
//! stratum), so a number does not change when other runs are added to a report.

use serde::Serialize;

/// The resamples of a report when none are given.
pub const DEFAULT_RESAMPLES: usize = 1000;
/// The seed of a report when none is given.
pub const DEFAULT_SEED: u64 = 20_250_703;

/// How intervals are computed.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Bootstrap {
    /// Resamples per interval (at least 1,000 in reports).
    pub resamples: usize,
    pub seed: u64,
    /// The interval's coverage, 0.95 for 95%.
    pub confidence: f64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap { resamples: DEFAULT_RESAMPLES, seed: DEFAULT_SEED, confidence: 0.95 }
    }
}

impl Bootstrap {
    /// The lower and upper quantiles of the interval, e.g. 0.025 and 0.975.
    pub fn quantiles(&self) -> (f64, f64) {
        let tail = (1.0 - self.confidence) / 2.0;
        (tail, 1.0 - tail)
    }
}

/// A point estimate with its confidence interval. The bounds are `None` (null in JSON, "n/a" in
/// text) when no stratum of the estimate holds [`MIN_ITEMS_FOR_INTERVAL`] items: resampling one
/// item always draws the same value, so a group of one item, or of strata of one item each (the
/// quick start's families: one scenario per sub-task), would get a zero-width interval that claims
/// a certainty the data do not give.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Interval {
    pub mean: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

/// The fewest items with a value that at least one stratum must hold for an interval.
pub const MIN_ITEMS_FOR_INTERVAL: usize = 2;

/// The mean of `xs`, `None` when empty (never a silent 0).
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The `q` quantile of sorted values by linear interpolation between order statistics (numpy's
/// default, "type 7").
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of no values");
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (i, frac) = (h.floor() as usize, h - h.floor());
    if i + 1 < sorted.len() { sorted[i] + frac * (sorted[i + 1] - sorted[i]) } else { sorted[i] }
}

/// A 64-bit seed for one resampling stream: FNV-1a over the labels, mixed with the report's seed.
pub fn stream_seed(seed: u64, labels: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for label in labels {
        for b in label.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Bootstrap replicates of one stratum: for each resample and metric, the sum and count of the
/// values of the drawn items (an item without a value for a metric adds nothing to it).
#[derive(Clone, Debug)]
pub struct Replicates {
    metrics: usize,
    resamples: usize,
    sums: Vec<f64>,
    counts: Vec<u32>,
    /// Per metric, the stratum's items with a value.
    present: Vec<usize>,
}

impl Replicates {
    /// Draws `resamples` resamples of `rows` (items × metrics) with replacement, each of the
    /// stratum's size, from a stream seeded with `seed`.
    pub fn draw(rows: &[Vec<Option<f64>>], metrics: usize, resamples: usize, seed: u64) -> Replicates {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut sums = vec![0.0; resamples * metrics];
        let mut counts = vec![0u32; resamples * metrics];
        if !rows.is_empty() {
            for b in 0..resamples {
                let (s, c) = (&mut sums[b * metrics..(b + 1) * metrics], &mut counts[b * metrics..(b + 1) * metrics]);
                for _ in 0..rows.len() {
                    let row = &rows[rng.usize(..rows.len())];
                    for (m, v) in row.iter().enumerate() {
                        if let Some(v) = v {
                            s[m] += v;
                            c[m] += 1;
                        }
                    }
                }
            }
        }
        let present = (0..metrics).map(|m| rows.iter().filter(|r| r[m].is_some()).count()).collect();
        Replicates { metrics, resamples, sums, counts, present }
    }

    /// The replicate means of metric `m` pooled over `strata` (each stratum resampled on its own),
    /// one per resample; a resample in which no drawn item has the metric gives `None`. All are
    /// `None` when no stratum holds [`MIN_ITEMS_FOR_INTERVAL`] items with the metric: every resample
    /// would then draw the same items, and their spread (none) says nothing.
    pub fn pooled_means(strata: &[&Replicates], m: usize) -> Vec<Option<f64>> {
        let resamples = strata.first().map_or(0, |s| s.resamples);
        if !strata.iter().any(|s| s.present[m] >= MIN_ITEMS_FOR_INTERVAL) {
            return vec![None; resamples];
        }
        (0..resamples)
            .map(|b| {
                let (mut sum, mut count) = (0.0, 0u64);
                for s in strata {
                    debug_assert_eq!(s.resamples, resamples);
                    sum += s.sums[b * s.metrics + m];
                    count += u64::from(s.counts[b * s.metrics + m]);
                }
                (count > 0).then(|| sum / count as f64)
            })
            .collect()
    }
}

/// The percentile interval of replicate means around `point`; replicates without a value are left
/// out. Bounds of `None` when no replicate has one (see [`Replicates::pooled_means`]).
pub fn percentile_interval(point: f64, replicates: &[Option<f64>], cfg: &Bootstrap) -> Interval {
    let mut v: Vec<f64> = replicates.iter().flatten().copied().collect();
    if v.is_empty() {
        return Interval { mean: point, lo: None, hi: None };
    }
    v.sort_by(f64::total_cmp);
    let (lq, hq) = cfg.quantiles();
    Interval { mean: point, lo: Some(quantile(&v, lq)), hi: Some(quantile(&v, hq)) }
}

/// The mean of `values` with its bootstrap interval (one stratum).
pub fn bootstrap_mean(values: &[f64], cfg: &Bootstrap) -> Option<Interval> {
    stratified_mean(&[values.to_vec()], cfg, stream_seed(cfg.seed, &["mean"]))
}

/// The mean of the values of all `strata` pooled, with its bootstrap interval: each stratum is
/// resampled on its own (its size kept), streams seeded from `seed` and the stratum's index.
/// `None` when there is no value.
pub fn stratified_mean(strata: &[Vec<f64>], cfg: &Bootstrap, seed: u64) -> Option<Interval> {
    let all: Vec<f64> = strata.iter().flatten().copied().collect();
    let point = mean(&all)?;
    let reps: Vec<Replicates> = strata
        .iter()
        .enumerate()
        .map(|(i, values)| {
            let rows: Vec<Vec<Option<f64>>> = values.iter().map(|v| vec![Some(*v)]).collect();
            let seed = if i == 0 { seed } else { stream_seed(seed, &[&i.to_string()]) };
            Replicates::draw(&rows, 1, cfg.resamples, seed)
        })
        .collect();
    let refs: Vec<&Replicates> = reps.iter().collect();
    Some(percentile_interval(point, &Replicates::pooled_means(&refs, 0), cfg))
}

/// A paired bootstrap comparison of two runs (`a` − `b`) on the items both scored.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Paired {
    /// Shared items compared.
    pub n: usize,
    pub mean_a: f64,
    pub mean_b: f64,
    /// mean(a − b) with its interval.
    pub diff: Interval,
    /// Two-sided bootstrap p-value of "no difference": twice the smaller share of resampled mean
    /// differences on either side of 0 (with the +1 correction), at most 1; `None` (like the
    /// interval) when no stratum holds two pairs.
    pub p_value: Option<f64>,
    /// The smallest mean difference these pairs can show (two-sided 5%, power 0.8) at their
    /// observed spread ([`crate::power::min_detectable_difference`]); `None` under two pairs.
    pub detectable: Option<f64>,
}

/// Compares paired values: `pairs[i] = (stratum, a_i, b_i)`; items are resampled within their
/// stratum (the sub-task), both runs' values of an item together. `None` with no pairs.
pub fn paired_bootstrap(pairs: &[(usize, f64, f64)], cfg: &Bootstrap, seed: u64) -> Option<Paired> {
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len();
    let mean_a = pairs.iter().map(|p| p.1).sum::<f64>() / n as f64;
    let mean_b = pairs.iter().map(|p| p.2).sum::<f64>() / n as f64;
    let point = pairs.iter().map(|p| p.1 - p.2).sum::<f64>() / n as f64;
    let mut strata: std::collections::BTreeMap<usize, Vec<Vec<Option<f64>>>> = Default::default();
    for (s, a, b) in pairs {
        strata.entry(*s).or_default().push(vec![Some(a - b)]);
    }
    let reps: Vec<Replicates> = strata
        .iter()
        .map(|(s, rows)| Replicates::draw(rows, 1, cfg.resamples, stream_seed(seed, &[&s.to_string()])))
        .collect();
    let refs: Vec<&Replicates> = reps.iter().collect();
    let replicates = Replicates::pooled_means(&refs, 0);
    let diff = percentile_interval(point, &replicates, cfg);
    let values: Vec<f64> = replicates.into_iter().flatten().collect();
    let below = values.iter().filter(|d| **d <= 0.0).count();
    let above = values.iter().filter(|d| **d >= 0.0).count();
    let p = 2.0 * (below.min(above) + 1) as f64 / (values.len() + 1) as f64;
    let p_value = (!values.is_empty()).then_some(p.min(1.0));
    let diffs: Vec<f64> = pairs.iter().map(|p| p.1 - p.2).collect();
    let detectable = crate::power::sd(&diffs).and_then(|sd| crate::power::min_detectable_difference(n, sd));
    Some(Paired { n, mean_a, mean_b, diff, p_value, detectable })
}

/// Ranks (1 = best, higher is better; ties share the better rank) of `values`.
pub fn ranks(values: &[f64]) -> Vec<usize> {
    values.iter().map(|v| 1 + values.iter().filter(|w| *w > v).count()).collect()
}

/// Rank intervals: for each resample, rank the runs' replicate means (a run without a replicate
/// value keeps its point estimate), and take the interval's quantiles of each run's ranks. `None`
/// for a run without any replicate value (no stratum of two items): its own spread is unknown.
#[allow(clippy::needless_range_loop)] // `b` indexes the inner vectors of `replicates`
pub fn rank_intervals(points: &[f64], replicates: &[Vec<Option<f64>>], cfg: &Bootstrap) -> Vec<Option<(usize, usize)>> {
    let k = points.len();
    let resamples = replicates.first().map_or(0, Vec::len);
    let mut per_run: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); k];
    for b in 0..resamples {
        let vals: Vec<f64> = (0..k).map(|r| replicates[r][b].unwrap_or(points[r])).collect();
        for (r, rank) in ranks(&vals).into_iter().enumerate() {
            per_run[r].push(rank as f64);
        }
    }
    let (lq, hq) = cfg.quantiles();
    per_run
        .into_iter()
        .enumerate()
        .map(|(r, mut v)| {
            if v.is_empty() || replicates[r].iter().all(Option::is_none) {
                return None;
            }
            v.sort_by(f64::total_cmp);
            Some((quantile(&v, lq).floor() as usize, quantile(&v, hq).ceil() as usize))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Bootstrap {
        Bootstrap::default()
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!((quantile(&v, 0.5) - 2.5).abs() < 1e-12);
        // numpy.quantile([1,2,3,4], 0.025) = 1.075
        assert!((quantile(&v, 0.025) - 1.075).abs() < 1e-12);
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
    }

    #[test]
    fn bootstrap_is_deterministic_with_a_seed_and_contains_the_mean() {
        let values: Vec<f64> = (0..200).map(|i| ((i * 37) % 101) as f64 / 100.0).collect();
        let a = bootstrap_mean(&values, &cfg()).unwrap();
        let b = bootstrap_mean(&values, &cfg()).unwrap();
        assert_eq!(a, b);
        let m = values.iter().sum::<f64>() / 200.0;
        assert_eq!(a.mean, m);
        let (lo, hi) = (a.lo.unwrap(), a.hi.unwrap());
        assert!(lo < m && m < hi, "{a:?}");
        // The standard error of this mean is about 0.29/sqrt(200) = 0.02: the 95% interval is
        // about ±0.04 wide on each side.
        assert!(hi - lo > 0.05 && hi - lo < 0.12, "{a:?}");
        let other = bootstrap_mean(&values, &Bootstrap { seed: 7, ..cfg() }).unwrap();
        assert_ne!(a, other, "a different seed draws different resamples");
    }

    #[test]
    fn a_constant_has_a_zero_width_interval_and_no_values_no_interval() {
        let a = bootstrap_mean(&[0.25; 30], &cfg()).unwrap();
        assert_eq!((a.mean, a.lo, a.hi), (0.25, Some(0.25), Some(0.25)));
        assert_eq!(bootstrap_mean(&[], &cfg()), None);
    }

    #[test]
    fn one_item_has_no_interval() {
        // Resampling one item always draws it: [v, v] would claim certainty. Not available.
        let a = bootstrap_mean(&[0.3107], &cfg()).unwrap();
        assert_eq!((a.mean, a.lo, a.hi), (0.3107, None, None));
        let two = bootstrap_mean(&[0.2, 0.4], &cfg()).unwrap();
        assert!(two.lo.is_some() && two.hi.is_some());
        let p = paired_bootstrap(&[(0, 0.5, 0.2)], &cfg(), 1).unwrap();
        assert_eq!((p.n, p.diff.lo, p.diff.hi, p.p_value, p.detectable), (1, None, None, None, None));
        assert!((p.diff.mean - 0.3).abs() < 1e-12);
    }

    #[test]
    fn strata_are_resampled_apart() {
        // As in pooled_strata_resample_within_each_stratum: 10 zeros and 30 ones, each kept in size.
        let iv = stratified_mean(&[vec![0.0; 10], vec![1.0; 30]], &cfg(), 5).unwrap();
        assert_eq!((iv.mean, iv.lo, iv.hi), (0.75, Some(0.75), Some(0.75)));
        assert_eq!(stratified_mean(&[vec![], vec![]], &cfg(), 5), None);
    }

    #[test]
    fn pooled_strata_resample_within_each_stratum() {
        // Two strata of constants: every resample keeps 10 items of 0 and 30 of 1, so the pooled
        // mean is exactly 0.75 in every replicate.
        let zeros = vec![vec![Some(0.0)]; 10];
        let ones = vec![vec![Some(1.0)]; 30];
        let a = Replicates::draw(&zeros, 1, 500, 1);
        let b = Replicates::draw(&ones, 1, 500, 2);
        let means = Replicates::pooled_means(&[&a, &b], 0);
        assert_eq!(means.len(), 500);
        assert!(means.iter().all(|m| *m == Some(0.75)));
    }

    #[test]
    fn missing_values_count_for_nothing() {
        let rows = vec![vec![Some(1.0), None], vec![Some(3.0), None]];
        let r = Replicates::draw(&rows, 2, 100, 3);
        let m0 = Replicates::pooled_means(&[&r], 0);
        assert!(m0.iter().all(|m| m.is_some_and(|m| (1.0..=3.0).contains(&m))));
        assert!(Replicates::pooled_means(&[&r], 1).iter().all(Option::is_none));
        let none = percentile_interval(0.0, &Replicates::pooled_means(&[&r], 1), &cfg());
        assert_eq!((none.lo, none.hi), (None, None));
    }

    #[test]
    fn identical_runs_show_no_difference() {
        let pairs: Vec<(usize, f64, f64)> = (0..100).map(|i| (i % 3, i as f64 / 100.0, i as f64 / 100.0)).collect();
        let p = paired_bootstrap(&pairs, &cfg(), 9).unwrap();
        assert_eq!(p.n, 100);
        assert_eq!(p.mean_a, p.mean_b);
        assert_eq!((p.diff.mean, p.diff.lo, p.diff.hi), (0.0, Some(0.0), Some(0.0)));
        assert_eq!(p.p_value, Some(1.0));
        assert_eq!(paired_bootstrap(&[], &cfg(), 9), None);
    }

    #[test]
    fn a_consistent_difference_is_significant() {
        // b = a - 0.1 ± a little noise: the difference is 0.1 and far from 0.
        let pairs: Vec<(usize, f64, f64)> = (0..120)
            .map(|i| (i % 4, (i % 10) as f64 / 10.0, (i % 10) as f64 / 10.0 - 0.1 + ((i % 3) as f64 - 1.0) * 0.01))
            .collect();
        let p = paired_bootstrap(&pairs, &cfg(), 9).unwrap();
        assert!((p.diff.mean - 0.1).abs() < 1e-9, "{p:?}");
        assert!(p.diff.lo.unwrap() > 0.09 && p.diff.hi.unwrap() < 0.11, "{p:?}");
        assert!(p.p_value.unwrap() < 0.01, "{p:?}");
        let sd = crate::power::sd(&pairs.iter().map(|p| p.1 - p.2).collect::<Vec<_>>()).unwrap();
        assert_eq!(p.detectable, crate::power::min_detectable_difference(120, sd));
        assert!(p.detectable.unwrap() < 0.01, "{p:?}");
        // Determinism: the same seed gives the same numbers.
        assert_eq!(paired_bootstrap(&pairs, &cfg(), 9), Some(p));
    }

    #[test]
    fn ranks_and_rank_intervals() {
        assert_eq!(ranks(&[0.5, 0.9, 0.5, 0.1]), [2, 1, 2, 4]);
        // Run 0 always wins, runs 1 and 2 swap places half the time.
        let reps = vec![
            vec![Some(0.9); 100],
            (0..100).map(|b| Some(if b % 2 == 0 { 0.5 } else { 0.4 })).collect(),
            (0..100).map(|b| Some(if b % 2 == 0 { 0.4 } else { 0.5 })).collect(),
        ];
        let iv = rank_intervals(&[0.9, 0.45, 0.44], &reps, &cfg());
        assert_eq!(iv, [Some((1, 1)), Some((2, 3)), Some((2, 3))]);
        // A run without replicates (strata of one item) has no rank interval.
        let none = vec![reps[0].clone(), vec![None; 100]];
        assert_eq!(rank_intervals(&[0.9, 0.45], &none, &cfg()), [Some((1, 1)), None]);
    }

    #[test]
    fn strata_of_one_item_each_have_no_interval() {
        // The quick start's families: three sub-tasks of one scenario each. Every resample draws
        // the same three items, so a [m, m] interval would claim certainty.
        let iv = stratified_mean(&[vec![0.2], vec![0.3], vec![0.4]], &cfg(), 5).unwrap();
        assert!((iv.mean - 0.3).abs() < 1e-12);
        assert_eq!((iv.lo, iv.hi), (None, None));
        let p = paired_bootstrap(&[(0, 0.5, 0.2), (1, 0.4, 0.3), (2, 0.1, 0.3)], &cfg(), 1).unwrap();
        assert_eq!((p.n, p.diff.lo, p.diff.hi, p.p_value), (3, None, None, None));
        // One stratum of two items is enough for an interval.
        let iv = stratified_mean(&[vec![0.2], vec![0.3, 0.5]], &cfg(), 5).unwrap();
        assert!(iv.lo.unwrap() < iv.hi.unwrap(), "{iv:?}");
        // Rows that lack the metric do not count: two items, one with a value, is one item.
        let rows = vec![vec![Some(0.5)], vec![None]];
        let r = Replicates::draw(&rows, 1, 50, 1);
        assert!(Replicates::pooled_means(&[&r], 0).iter().all(Option::is_none));
    }
}
