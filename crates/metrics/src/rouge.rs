//! ROUGE-1/2/L F1 as the official evaluator's own implementation computes them: clipped n-gram
//! overlap (0 when either side has fewer than n tokens), and the LCS of the whole token sequences.
//! No stemming, no lowercasing.

fn f1(overlap: usize, hyp_total: usize, ref_total: usize) -> f64 {
    let recall = if ref_total == 0 { 0.0 } else { overlap as f64 / ref_total as f64 };
    let precision = if hyp_total == 0 { 0.0 } else { overlap as f64 / hyp_total as f64 };
    if precision + recall == 0.0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) }
}

/// ROUGE-N F1.
pub fn rouge_n(hyp: &[&str], reference: &[&str], n: usize) -> f64 {
    if hyp.len() < n || reference.len() < n {
        return 0.0;
    }
    let overlap = crate::ngrams::clipped_overlap(hyp, reference, n) as usize;
    f1(overlap, hyp.len() - n + 1, reference.len() - n + 1)
}

/// Length of the longest common subsequence, in O(len(b)) memory.
pub fn lcs_len(a: &[&str], b: &[&str]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diag = 0; // row[j - 1] of the previous row
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[b.len()]
}

/// ROUGE-L F1.
pub fn rouge_l(hyp: &[&str], reference: &[&str]) -> f64 {
    if hyp.is_empty() || reference.is_empty() {
        return 0.0;
    }
    f1(lcs_len(hyp, reference), hyp.len(), reference.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcs_and_f1() {
        assert_eq!(lcs_len(&["a", "b", "c", "d"], &["a", "c", "d", "b"]), 3);
        assert_eq!(rouge_l(&["a", "b"], &["a", "b"]), 1.0);
        assert_eq!(rouge_n(&["a"], &["a", "b"], 2), 0.0);
        // 2 of 3 unigrams overlap both ways: P = R = 2/3.
        assert!((rouge_n(&["a", "b", "x"], &["b", "a", "y"], 1) - 2.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn overlap_is_clipped() {
        // hyp "a a a" vs ref "a b": overlap 1, P = 1/3, R = 1/2.
        let want = 2.0 * (1.0 / 3.0) * 0.5 / (1.0 / 3.0 + 0.5);
        assert_eq!(rouge_n(&["a", "a", "a"], &["a", "b"], 1), want);
    }
}
