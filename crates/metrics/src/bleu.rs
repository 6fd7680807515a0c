//! Sentence BLEU as nltk 3.10 `sentence_bleu` computes it with one reference and
//! `SmoothingFunction().method1`, for the four weight vectors the official evaluator uses.

use crate::fsum::fsum;

/// nltk method1's epsilon: a zero n-gram match count becomes `0.1 / denominator`.
pub const EPSILON: f64 = 0.1;

/// The weight vectors of BLEU-1..4 in the official evaluator. BLEU-3 is (0.33, 0.33, 0.34), as
/// the evaluator writes it, not thirds.
pub const WEIGHTS: [[f64; 4]; 4] =
    [[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.33, 0.33, 0.34, 0.0], [0.25, 0.25, 0.25, 0.25]];

/// Clipped n-gram matches and the hypothesis n-gram count (at least 1), as nltk's
/// `modified_precision` returns them, unnormalised.
fn modified_precision(hyp: &[&str], reference: &[&str], n: usize) -> (u64, u64) {
    if hyp.len() < n {
        return (0, 1);
    }
    let clipped = crate::ngrams::clipped_overlap(hyp, reference, n);
    (clipped, (hyp.len() - n + 1) as u64)
}

/// BLEU-1..4 of `hyp` against `reference` (token lists).
pub fn bleu(hyp: &[&str], reference: &[&str]) -> [f64; 4] {
    let p: [(u64, u64); 4] = std::array::from_fn(|i| modified_precision(hyp, reference, i + 1));
    if p[0].0 == 0 {
        return [0.0; 4];
    }
    let (c, r) = (hyp.len(), reference.len());
    let bp = if c > r {
        1.0
    } else if c == 0 {
        0.0
    } else {
        (1.0 - r as f64 / c as f64).exp()
    };
    let smoothed: [f64; 4] =
        p.map(|(num, den)| if num == 0 { (num as f64 + EPSILON) / den as f64 } else { num as f64 / den as f64 });
    WEIGHTS.map(|w| {
        let terms: Vec<f64> = w.iter().zip(smoothed).filter(|(_, p)| *p > 0.0).map(|(w, p)| w * p.ln()).collect();
        bp * fsum(&terms).exp()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_texts_score_one_and_disjoint_texts_zero() {
        let a = ["我", "会", "一直", "陪着", "你"];
        for v in bleu(&a, &a) {
            assert!((v - 1.0).abs() < 1e-12, "{v}");
        }
        assert_eq!(bleu(&["甲"], &["乙"]), [0.0; 4]);
    }

    #[test]
    fn a_missing_order_is_smoothed_over_its_own_denominator() {
        // hyp "a b c", ref "a c b": 3/3 unigrams, 0/2 bigrams -> 0.1/2, 0/1 trigrams -> 0.1/1.
        let b = bleu(&["a", "b", "c"], &["a", "c", "b"]);
        assert_eq!(b[0], 1.0);
        assert!((b[1] - (0.5f64 * (0.05f64).ln()).exp()).abs() < 1e-15);
        let b3 = (0.33 * 1f64.ln() + 0.33 * 0.05f64.ln() + 0.34 * 0.1f64.ln()).exp();
        assert!((b[2] - b3).abs() < 1e-15);
    }
}
