//! Repeated samples (`sweep --epochs N`): the runs of one model, SAP mode and protocol that differ
//! only in their sample index are one group. Per group, over the items every sample scored, on the
//! ranking metric: the mean of the items' means with a two-stage bootstrap interval (items drawn
//! with replacement, then each drawn item's samples drawn with replacement), the clustered standard
//! error (items as clusters), the within-item standard deviation, the share of the variance that lies
//! between samples of the same item, and a rank among the groups whose interval includes the
//! sampling noise (the same two-stage resamples).

use std::collections::{BTreeMap, BTreeSet};

use h2htalk_stats::bootstrap::{Bootstrap, quantile, rank_intervals, stream_seed};
use serde::Serialize;

use crate::load::RunRecord;

/// One model's samples.
#[derive(Clone, Debug, Serialize)]
pub struct SampleGroup {
    /// `model · SAP mode`.
    pub label: String,
    /// The runs, in sample order.
    pub runs: Vec<String>,
    pub samples: usize,
    /// Items with the metric in every sample.
    pub items: usize,
    pub metric: String,
    /// The mean over items of each item's mean over samples.
    pub mean: f64,
    /// Two-stage bootstrap interval of `mean`; `None` under two items.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Standard error of `mean` with items as clusters; `None` under two items.
    pub clustered_se: Option<f64>,
    /// √(mean over items of the variance between an item's samples).
    pub within_item_sd: f64,
    /// The mean within-item variance over the total variance: how much of the spread is sampling
    /// noise; `None` when the values do not vary.
    pub between_samples_share: Option<f64>,
    /// 1 for the highest mean among the groups.
    pub rank: usize,
    pub rank_lo: Option<usize>,
    pub rank_hi: Option<usize>,
    /// Each item's mean over the samples (JSON only), and its standard deviation between them.
    pub item_means: BTreeMap<String, ItemMean>,
}

/// One item's samples.
#[derive(Clone, Debug, Serialize)]
pub struct ItemMean {
    pub mean: f64,
    pub sd: f64,
}

/// The sample groups of `runs` on `metric` (none when no model has two samples).
pub fn sample_groups(runs: &[RunRecord], metric: &str, cfg: &Bootstrap) -> Vec<SampleGroup> {
    // Group key: the model (a local model is its file), the SAP mode and the protocol.
    let mut groups: BTreeMap<(String, String, String), Vec<&RunRecord>> = BTreeMap::new();
    for r in runs {
        let s = &r.run.spec;
        let id = &s.model_id;
        let model = if id.provider == "local" { format!("{id}@{}", id.endpoint) } else { id.to_string() };
        groups.entry((model, s.sap.mode.as_str().to_string(), s.protocol().fingerprint())).or_default().push(r);
    }
    let mut out: Vec<(SampleGroup, Vec<Vec<f64>>)> = Vec::new();
    for ((_, sap, _), mut members) in groups {
        members.sort_by_key(|r| (r.run.spec.sample, r.run.created_at.clone()));
        // One run per sample index (the first stored of each).
        members.dedup_by_key(|r| r.run.spec.sample);
        if members.len() < 2 {
            continue;
        }
        let values: Vec<BTreeMap<&str, f64>> = members
            .iter()
            .map(|r| r.items.iter().filter_map(|i| Some((i.scenario_id.as_str(), *i.metrics.get(metric)?))).collect())
            .collect();
        let shared: BTreeSet<&str> =
            values[0].keys().copied().filter(|k| values.iter().all(|v| v.contains_key(k))).collect();
        if shared.is_empty() {
            continue;
        }
        // y[i][k]: item i, sample k.
        let y: Vec<Vec<f64>> = shared.iter().map(|k| values.iter().map(|v| v[k]).collect()).collect();
        let label = format!("{} · SAP {sap}", members[0].run.spec.model_id);
        let mut g = summarise(label, members.iter().map(|r| r.run.id.clone()).collect(), metric, &y);
        g.item_means = shared
            .iter()
            .zip(&y)
            .map(|(id, item)| {
                let k = item.len() as f64;
                let mean = item.iter().sum::<f64>() / k;
                let sd = (item.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
                (id.to_string(), ItemMean { mean, sd })
            })
            .collect();
        out.push((g, y));
    }
    if out.is_empty() {
        return Vec::new();
    }
    // Two-stage bootstrap replicates of every group's mean.
    let replicates: Vec<Vec<Option<f64>>> = out
        .iter()
        .map(|(g, y)| {
            let mut rng = fastrand::Rng::with_seed(stream_seed(cfg.seed, &["epochs", &g.runs[0]]));
            let (n, k) = (y.len(), y[0].len());
            (0..cfg.resamples)
                .map(|_| {
                    (n >= 2).then(|| {
                        let mut sum = 0.0;
                        for _ in 0..n {
                            let item = &y[rng.usize(..n)];
                            for _ in 0..k {
                                sum += item[rng.usize(..k)];
                            }
                        }
                        sum / (n * k) as f64
                    })
                })
                .collect()
        })
        .collect();
    let points: Vec<f64> = out.iter().map(|(g, _)| g.mean).collect();
    let ranks = h2htalk_stats::bootstrap::ranks(&points);
    let intervals = rank_intervals(&points, &replicates, cfg);
    let (lq, hq) = cfg.quantiles();
    out.into_iter()
        .zip(replicates)
        .zip(ranks.into_iter().zip(intervals))
        .map(|(((mut g, _), reps), (rank, interval))| {
            let mut v: Vec<f64> = reps.into_iter().flatten().collect();
            if !v.is_empty() {
                v.sort_by(f64::total_cmp);
                (g.lo, g.hi) = (Some(quantile(&v, lq)), Some(quantile(&v, hq)));
            }
            g.rank = rank;
            (g.rank_lo, g.rank_hi) = (interval.map(|i| i.0), interval.map(|i| i.1));
            g
        })
        .collect()
}

/// The point figures of one group from its values `y[item][sample]` (at least one item, two samples).
fn summarise(label: String, runs: Vec<String>, metric: &str, y: &[Vec<f64>]) -> SampleGroup {
    let (n, k) = (y.len(), y[0].len());
    let all = (n * k) as f64;
    let mean = y.iter().flatten().sum::<f64>() / all;
    let within: f64 = y
        .iter()
        .map(|item| {
            let m = item.iter().sum::<f64>() / k as f64;
            item.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (k - 1) as f64
        })
        .sum::<f64>()
        / n as f64;
    let total = y.iter().flatten().map(|v| (v - mean).powi(2)).sum::<f64>() / (all - 1.0);
    let clustered_se = (n >= 2).then(|| {
        let s: f64 = y.iter().map(|item| item.iter().map(|v| v - mean).sum::<f64>().powi(2)).sum();
        (s * n as f64 / (n - 1) as f64).sqrt() / all
    });
    SampleGroup {
        label,
        runs,
        samples: k,
        items: n,
        metric: metric.to_string(),
        mean,
        lo: None,
        hi: None,
        clustered_se,
        within_item_sd: within.sqrt(),
        between_samples_share: (total > 0.0).then(|| (within / total).min(1.0)),
        rank: 0,
        rank_lo: None,
        rank_hi: None,
        item_means: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_of_a_small_group_are_those_worked_by_hand() {
        // Two items, two samples: (1, 3) and (5, 5).
        let g = summarise("m".into(), vec!["a".into(), "b".into()], "x", &[vec![1.0, 3.0], vec![5.0, 5.0]]);
        assert_eq!((g.items, g.samples, g.mean), (2, 2, 3.5));
        // Within-item variances 2 and 0: mean 1.
        assert!((g.within_item_sd - 1.0).abs() < 1e-12);
        // Total variance of 1, 3, 5, 5 (n−1): 11/3.
        assert!((g.between_samples_share.unwrap() - 3.0 / 11.0).abs() < 1e-12);
        // Cluster sums of deviations: (1−3.5)+(3−3.5) = −3 and 3: √(18·2/1)/4 = 1.5.
        assert!((g.clustered_se.unwrap() - 1.5).abs() < 1e-12);
    }
}
