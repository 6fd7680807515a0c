//! Bradley–Terry with a covariate, as Chatbot Arena's style control: the chance that `a` beats `b`
//! is σ(θ_a − θ_b + γ·x), where x describes the pair (here the answers' length difference,
//! (len_a − len_b) / (len_a + len_b)). γ is how much the judge pays for the covariate; θ is the
//! strength left once it is paid for. Fitted by Newton's method on the log-likelihood, ties as half
//! a win each way, with the same weak prior as [`crate::bt::fit`] (half a win each way between every
//! pair, at x = 0) and one like it on γ (half a win each way at x = 1 between equal strengths).

use serde::Serialize;

use crate::bt::{Comparison, Outcome, PRIOR};

/// Strengths with the covariate held fixed, and the covariate's coefficient.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Controlled {
    /// Log-strengths centred on 0.
    pub scores: Vec<f64>,
    /// γ: the log-odds a full unit of the covariate adds (x = 1: `a`'s answer holds all the length).
    pub coefficient: f64,
}

/// Judges whose decided judgments the longer answer wins more often than this are flagged
/// (AlpacaEval's threshold).
pub const LONGER_PREFERRED_FLAG: f64 = 0.7;

/// Whether a judge favours a position: the 95% interval of the share of single-order verdicts won
/// by the answer shown first excludes one half.
pub fn favours_a_position(first_preferred: &crate::Proportion) -> bool {
    first_preferred.ci95.is_some_and(|[lo, hi]| lo > 0.5 || hi < 0.5)
}

/// A pairwise judge's length bias over `comparisons` among `n` models, with the answers' lengths of
/// each (`lengths[k]` = (len_a, len_b) in characters).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LengthBias {
    /// Of the decided comparisons (a or b won) between answers of different length, those the
    /// longer answer won.
    pub longer_preferred: crate::Proportion,
    /// Bradley–Terry with the length difference (len_a − len_b)/(len_a + len_b) as a covariate.
    pub controlled: Controlled,
}

/// What a pairwise judge's card says of its length and position bias.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BiasFlags {
    /// [`LengthBias::longer_preferred`].
    pub longer_preferred: crate::Proportion,
    /// `longer_preferred` above [`LONGER_PREFERRED_FLAG`].
    pub prefers_longer: bool,
    /// Of the single-order verdicts that named a winner, those that named the answer shown first.
    pub first_preferred: crate::Proportion,
    /// [`favours_a_position`].
    pub position_biased: bool,
    /// γ of the length-controlled fit: the log-odds the judge gives an answer holding all of a
    /// pair's length.
    pub length_coefficient: f64,
}

impl BiasFlags {
    /// The flags of `length` and of `first_k` of `first_n` single-order verdicts won by the answer
    /// shown first.
    pub fn new(length: &LengthBias, first_k: usize, first_n: usize) -> BiasFlags {
        let first_preferred = crate::Proportion::new(first_k, first_n);
        BiasFlags {
            prefers_longer: length.longer_preferred.rate.is_some_and(|r| r > LONGER_PREFERRED_FLAG),
            longer_preferred: length.longer_preferred.clone(),
            position_biased: favours_a_position(&first_preferred),
            first_preferred,
            length_coefficient: length.controlled.coefficient,
        }
    }
}

/// [`LengthBias`] of `comparisons`.
pub fn length_bias(n: usize, comparisons: &[Comparison], lengths: &[(f64, f64)]) -> LengthBias {
    assert_eq!(comparisons.len(), lengths.len(), "one pair of lengths per comparison");
    let (mut k, mut total) = (0, 0);
    for (c, &(la, lb)) in comparisons.iter().zip(lengths) {
        let a_won = match c.outcome {
            Outcome::AWins => true,
            Outcome::BWins => false,
            Outcome::Tie => continue,
        };
        if la != lb {
            total += 1;
            if a_won == (la > lb) {
                k += 1;
            }
        }
    }
    let x: Vec<f64> = lengths.iter().map(|&(la, lb)| if la + lb > 0.0 { (la - lb) / (la + lb) } else { 0.0 }).collect();
    LengthBias { longer_preferred: crate::Proportion::new(k, total), controlled: fit_controlled(n, comparisons, &x) }
}

/// Fits `comparisons` among `n` models with `covariate[k]` describing comparison `k`.
pub fn fit_controlled(n: usize, comparisons: &[Comparison], covariate: &[f64]) -> Controlled {
    assert_eq!(comparisons.len(), covariate.len(), "one covariate per comparison");
    if n == 0 {
        return Controlled { scores: Vec::new(), coefficient: 0.0 };
    }
    // (a, b, x, y, weight): y = 1 when a won.
    let mut obs: Vec<(usize, usize, f64, f64, f64)> = Vec::with_capacity(comparisons.len() * 2 + n * n);
    for (c, &x) in comparisons.iter().zip(covariate) {
        match c.outcome {
            Outcome::AWins => obs.push((c.a, c.b, x, 1.0, 1.0)),
            Outcome::BWins => obs.push((c.a, c.b, x, 0.0, 1.0)),
            Outcome::Tie => {
                obs.push((c.a, c.b, x, 1.0, 0.5));
                obs.push((c.a, c.b, x, 0.0, 0.5));
            }
        }
    }
    for a in 0..n {
        for b in a + 1..n {
            obs.push((a, b, 0.0, 1.0, PRIOR));
            obs.push((a, b, 0.0, 0.0, PRIOR));
        }
    }
    // And half a win each way at x = 1 between equals, so that γ stays finite when the covariate
    // alone decides every comparison.
    obs.push((0, 0, 1.0, 1.0, PRIOR));
    obs.push((0, 0, 1.0, 0.0, PRIOR));
    // Parameters: θ_1..θ_{n−1} (θ_0 = 0), then γ.
    let dim = n;
    let gamma = dim - 1;
    let index = |model: usize| (model > 0).then(|| model - 1);
    let mut theta = vec![0.0f64; n];
    let mut g = 0.0f64;
    for _ in 0..200 {
        let mut grad = vec![0.0f64; dim];
        let mut hess = vec![vec![0.0f64; dim]; dim];
        for &(a, b, x, y, w) in &obs {
            let z = theta[a] - theta[b] + g * x;
            let p = 1.0 / (1.0 + (-z).exp());
            let r = w * (y - p);
            let q = w * p * (1.0 - p);
            // v = e_a − e_b + x·e_γ over the free parameters.
            let v: [(Option<usize>, f64); 3] = [(index(a), 1.0), (index(b), -1.0), (Some(gamma), x)];
            for &(i, vi) in &v {
                let Some(i) = i else { continue };
                grad[i] += r * vi;
                for &(j, vj) in &v {
                    if let Some(j) = j {
                        hess[i][j] += q * vi * vj;
                    }
                }
            }
        }
        // The covariate may never vary (every x = 0): keep γ at 0 rather than solve a singular system.
        if hess[gamma][gamma] < 1e-12 {
            hess[gamma][gamma] = 1.0;
            grad[gamma] = 0.0;
        }
        let Some(step) = solve(hess, grad) else { break };
        for m in 1..n {
            theta[m] += step[m - 1];
        }
        g += step[gamma];
        if step.iter().all(|s| s.abs() < 1e-10) {
            break;
        }
    }
    let mean = theta.iter().sum::<f64>() / n as f64;
    Controlled { scores: theta.iter().map(|t| t - mean).collect(), coefficient: g }
}

/// Solves `a · x = b` (a symmetric positive definite) by Gaussian elimination with pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..n {
            let f = a[row][col] / a[col][col];
            if f != 0.0 {
                for k in col..n {
                    a[row][k] -= f * a[col][k];
                }
                b[row] -= f * b[col];
            }
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bt::fit;

    fn comparison(item: usize, a: usize, b: usize, outcome: Outcome) -> Comparison {
        Comparison { item: format!("i{item}"), a, b, outcome }
    }

    #[test]
    fn without_a_varying_covariate_it_is_the_plain_fit() {
        let cs: Vec<Comparison> = (0..30)
            .map(|i| comparison(i, i % 3, (i + 1) % 3, if i % 4 == 0 { Outcome::BWins } else { Outcome::AWins }))
            .collect();
        let plain = fit(3, &cs);
        let controlled = fit_controlled(3, &cs, &vec![0.0; cs.len()]);
        assert_eq!(controlled.coefficient, 0.0);
        for (p, c) in plain.iter().zip(&controlled.scores) {
            assert!((p - c).abs() < 1e-6, "{plain:?} vs {:?}", controlled.scores);
        }
    }

    #[test]
    fn a_judge_that_only_rewards_length_leaves_no_strength_once_length_is_controlled() {
        // Model 0 writes the longer answer on 160 items, model 1 on 40; the longer answer wins nine
        // times in ten either way. Model 0 looks strong until length is paid for.
        let mut cs = Vec::new();
        let mut xs = Vec::new();
        for (longer_a, items) in [(true, 160), (false, 40)] {
            for i in 0..items {
                let longer_wins = i % 10 != 0;
                let x = if longer_a { 0.4 } else { -0.4 };
                let a_wins = longer_a == longer_wins;
                cs.push(comparison(cs.len(), 0, 1, if a_wins { Outcome::AWins } else { Outcome::BWins }));
                xs.push(x);
            }
        }
        let plain = fit(2, &cs);
        assert!(plain[0] - plain[1] > 0.7, "raw: model 0 well ahead: {plain:?}");
        let c = fit_controlled(2, &cs, &xs);
        assert!(c.coefficient > 3.0, "length pays: {}", c.coefficient);
        assert!((c.scores[0] - c.scores[1]).abs() < 0.5, "no strength left: {:?}", c.scores);
    }
}
