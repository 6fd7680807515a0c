//! Bradley–Terry ranking of models from pairwise comparisons, fitted with the MM algorithm
//! (Hunter 2004), with percentile bootstrap intervals over items (seeded, so reproducible).
//!
//! A tie counts as half a win for each side. Every pair of models also gets a weak prior of half a
//! win each way (`PRIOR`), so that a model that never wins still has a finite strength and models
//! never compared directly stay on one scale.

use serde::Serialize;

use crate::bootstrap::quantile;

/// Half a win each way between every pair of models.
pub const PRIOR: f64 = 0.5;

/// The result of one comparison between models `a` and `b` (indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    AWins,
    BWins,
    Tie,
}

/// One comparison on one item.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The item compared on (the unit the bootstrap resamples).
    pub item: String,
    pub a: usize,
    pub b: usize,
    pub outcome: Outcome,
}

/// Fits strengths to `comparisons` among `n` models; returns log-strengths centred on 0 (a model
/// with score s beats one with score t with probability 1 / (1 + e^(t − s))).
pub fn fit(n: usize, comparisons: &[Comparison]) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    // wins[i][j]: how often i beat j (ties half), plus the prior.
    let mut wins = vec![vec![PRIOR; n]; n];
    for (i, row) in wins.iter_mut().enumerate() {
        row[i] = 0.0;
    }
    for c in comparisons {
        match c.outcome {
            Outcome::AWins => wins[c.a][c.b] += 1.0,
            Outcome::BWins => wins[c.b][c.a] += 1.0,
            Outcome::Tie => {
                wins[c.a][c.b] += 0.5;
                wins[c.b][c.a] += 0.5;
            }
        }
    }
    let total_wins: Vec<f64> = wins.iter().map(|row| row.iter().sum()).collect();
    let mut p = vec![1.0f64; n];
    for _ in 0..100_000 {
        let mut next = vec![0.0f64; n];
        for i in 0..n {
            let denom: f64 = (0..n).filter(|&j| j != i).map(|j| (wins[i][j] + wins[j][i]) / (p[i] + p[j])).sum();
            next[i] = total_wins[i] / denom;
        }
        // Normalise to a geometric mean of 1.
        let log_mean = next.iter().map(|v| v.ln()).sum::<f64>() / n as f64;
        for v in &mut next {
            *v /= log_mean.exp();
        }
        let change = next.iter().zip(&p).map(|(a, b)| (a.ln() - b.ln()).abs()).fold(0.0, f64::max);
        p = next;
        if change < 1e-12 {
            break;
        }
    }
    p.iter().map(|v| v.ln()).collect()
}

/// A model's place in the ranking.
#[derive(Clone, Debug, Serialize)]
pub struct Ranked {
    pub name: String,
    /// 1 for the strongest.
    pub rank: usize,
    /// Log-strength, centred on 0 over the models.
    pub score: f64,
    /// The bootstrap interval of `score` (`None` without bootstrap samples or with fewer than two
    /// items compared).
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub wins: f64,
    pub losses: f64,
    pub ties: f64,
}

/// A Bradley–Terry ranking with its bootstrap settings.
#[derive(Clone, Debug, Serialize)]
pub struct Ranking {
    pub models: Vec<Ranked>,
    pub comparisons: usize,
    pub items: usize,
    pub bootstrap_samples: usize,
    pub seed: u64,
    /// The coverage of the intervals (0.95).
    pub level: f64,
}

/// Ranks `names` by Bradley–Terry strength from `comparisons`, with a `level` percentile interval
/// from `samples` bootstrap resamples of the items (with replacement), seeded by `seed`. A resample
/// draws whole items: every comparison made on a drawn item (all pairs of models) comes with it.
/// With fewer than two items there are no intervals.
pub fn rank(names: &[String], comparisons: &[Comparison], samples: usize, seed: u64, level: f64) -> Ranking {
    let n = names.len();
    let scores = fit(n, comparisons);
    let mut items: Vec<&str> = comparisons.iter().map(|c| c.item.as_str()).collect();
    items.sort_unstable();
    items.dedup();
    let by_item: Vec<Vec<&Comparison>> =
        items.iter().map(|it| comparisons.iter().filter(|c| c.item == *it).collect()).collect();
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(samples); n];
    let mut rng = fastrand::Rng::with_seed(seed);
    // An interval from resampling fewer than two items says nothing: none is given.
    if items.len() >= 2 {
        for _ in 0..samples {
            let mut sample = Vec::with_capacity(comparisons.len());
            for _ in 0..items.len() {
                sample.extend(by_item[rng.usize(..items.len())].iter().map(|c| (*c).clone()));
            }
            for (i, s) in fit(n, &sample).into_iter().enumerate() {
                draws[i].push(s);
            }
        }
    }
    let mut tallies = vec![(0.0, 0.0, 0.0); n];
    for c in comparisons {
        match c.outcome {
            Outcome::AWins => {
                tallies[c.a].0 += 1.0;
                tallies[c.b].1 += 1.0;
            }
            Outcome::BWins => {
                tallies[c.b].0 += 1.0;
                tallies[c.a].1 += 1.0;
            }
            Outcome::Tie => {
                tallies[c.a].2 += 1.0;
                tallies[c.b].2 += 1.0;
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let tail = (1.0 - level) / 2.0;
    let models = order
        .iter()
        .enumerate()
        .map(|(r, &i)| {
            let (low, high) = if draws[i].is_empty() {
                (None, None)
            } else {
                let mut d = draws[i].clone();
                d.sort_by(f64::total_cmp);
                (Some(quantile(&d, tail)), Some(quantile(&d, 1.0 - tail)))
            };
            Ranked {
                name: names[i].clone(),
                rank: r + 1,
                score: scores[i],
                low,
                high,
                wins: tallies[i].0,
                losses: tallies[i].1,
                ties: tallies[i].2,
            }
        })
        .collect();
    Ranking { models, comparisons: comparisons.len(), items: items.len(), bootstrap_samples: samples, seed, level }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Comparisons drawn from known strengths: every pair of models compared on every item.
    fn synthetic(truth: &[f64], items: usize, seed: u64) -> Vec<Comparison> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut out = Vec::new();
        for it in 0..items {
            for a in 0..truth.len() {
                for b in a + 1..truth.len() {
                    let p_a = 1.0 / (1.0 + (truth[b] - truth[a]).exp());
                    let roll = rng.f64();
                    // A tie band of 10% around the decision point.
                    let outcome = if (roll - p_a).abs() < 0.05 {
                        Outcome::Tie
                    } else if roll < p_a {
                        Outcome::AWins
                    } else {
                        Outcome::BWins
                    };
                    out.push(Comparison { item: format!("item-{it}"), a, b, outcome });
                }
            }
        }
        out
    }

    #[test]
    fn known_ordering_is_recovered_with_intervals() {
        let truth = [1.5, 0.5, -0.5, -1.5];
        let names: Vec<String> = ["w", "x", "y", "z"].iter().map(|s| s.to_string()).collect();
        // Give the models in a shuffled order so the ranking cannot come from the input order.
        let perm = [2, 0, 3, 1];
        let shuffled: Vec<f64> = perm.iter().map(|&i| truth[i]).collect();
        let shuffled_names: Vec<String> = perm.iter().map(|&i| names[i].clone()).collect();
        let comps = synthetic(&shuffled, 300, 7);
        let ranking = rank(&shuffled_names, &comps, 200, 11, 0.95);
        let order: Vec<&str> = ranking.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(order, ["w", "x", "y", "z"]);
        for m in &ranking.models {
            let t = truth[names.iter().position(|n| *n == m.name).unwrap()];
            let (lo, hi) = (m.low.unwrap(), m.high.unwrap());
            assert!(lo < m.score && m.score < hi, "{m:?}");
            // The estimate is near the truth (the prior shrinks it a little towards 0).
            assert!((m.score - t).abs() < 0.3, "{} estimated {} for {t}", m.name, m.score);
        }
        // Seeded: the same inputs give the same intervals.
        let again = rank(&shuffled_names, &comps, 200, 11, 0.95);
        assert_eq!(format!("{:?}", again.models), format!("{:?}", ranking.models));
    }

    #[test]
    fn equal_models_tie_and_a_model_that_never_wins_stays_finite() {
        let comps: Vec<Comparison> =
            (0..20).map(|i| Comparison { item: format!("{i}"), a: 0, b: 1, outcome: Outcome::AWins }).collect();
        let s = fit(2, &comps);
        assert!(s[0] > 0.0 && s[1] < 0.0 && s[1].is_finite());
        // 20.5 wins to 0.5: the strength ratio is the odds.
        assert!(((s[0] - s[1]) - (20.5f64 / 0.5).ln()).abs() < 1e-9);
        let ties: Vec<Comparison> =
            (0..10).map(|i| Comparison { item: format!("{i}"), a: 0, b: 1, outcome: Outcome::Tie }).collect();
        let s = fit(2, &ties);
        assert!(s[0].abs() < 1e-9 && s[1].abs() < 1e-9);
    }

    #[test]
    fn one_item_gives_no_interval() {
        let names: Vec<String> = vec!["a".into(), "b".into()];
        let one = [Comparison { item: "x".into(), a: 0, b: 1, outcome: Outcome::AWins }];
        let r = rank(&names, &one, 100, 1, 0.95);
        assert_eq!(r.items, 1);
        assert!(r.models.iter().all(|m| m.low.is_none() && m.high.is_none()), "{:?}", r.models);
        let two: Vec<Comparison> = ["x", "y"]
            .iter()
            .map(|i| Comparison { item: i.to_string(), a: 0, b: 1, outcome: Outcome::AWins })
            .collect();
        let r = rank(&names, &two, 100, 1, 0.95);
        assert!(r.models.iter().all(|m| m.low.is_some() && m.high.is_some()), "{:?}", r.models);
    }
}
