//! The paper's composite score: a weighted sum of the nine metrics.
//!
//! Composite = 0.10·R1 + 0.15·R2 + 0.20·RL + 0.25·BERTScore + 0.20·Emb + 0.03·B1 + 0.03·B2 +
//! 0.02·B3 + 0.02·B4, from per-task means (overall: over all pooled pairs). The sum is linear, so
//! the mean of per-pair composites equals the composite of the means.

use crate::lexical::Lexical;

/// (metric name, weight), names as in JSON output; the weights sum to 1.
pub const COMPOSITE_WEIGHTS: [(&str, f64); 9] = [
    ("rouge1", 0.10),
    ("rouge2", 0.15),
    ("rougeL", 0.20),
    ("bertscore", 0.25),
    ("embedding", 0.20),
    ("bleu1", 0.03),
    ("bleu2", 0.03),
    ("bleu3", 0.02),
    ("bleu4", 0.02),
];

/// The composite of one pair (or of means), from its seven lexical metrics, BERTScore F1 and
/// embedding similarity.
pub fn composite(lexical: &Lexical, bertscore_f1: f64, embedding: f64) -> f64 {
    composite_of(|name| match name {
        "bertscore" => Some(bertscore_f1),
        "embedding" => Some(embedding),
        _ => Lexical::NAMES.iter().position(|n| *n == name).map(|i| lexical.values()[i]),
    })
    .expect("all nine metrics")
}

/// The composite from a lookup of the nine metric values by name; `None` if any is missing.
pub fn composite_of(value: impl Fn(&str) -> Option<f64>) -> Option<f64> {
    COMPOSITE_WEIGHTS.iter().map(|(name, w)| value(name).map(|v| w * v)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_sum_to_one_and_apply_by_name() {
        let total: f64 = COMPOSITE_WEIGHTS.iter().map(|(_, w)| w).sum();
        assert!((total - 1.0).abs() < 1e-12);
        let ones = Lexical { rouge1: 1.0, rouge2: 1.0, rouge_l: 1.0, bleu1: 1.0, bleu2: 1.0, bleu3: 1.0, bleu4: 1.0 };
        assert!((composite(&ones, 1.0, 1.0) - 1.0).abs() < 1e-12);
        let only_bleu4 = Lexical { bleu4: 1.0, ..Lexical::default() };
        assert!((composite(&only_bleu4, 0.0, 0.5) - (0.02 + 0.10)).abs() < 1e-12);
        assert_eq!(composite_of(|n| (n != "embedding").then_some(1.0)), None);
    }
}
