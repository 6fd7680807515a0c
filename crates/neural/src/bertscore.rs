//! BERTScore's greedy matching, as `bert_score` (0.3.13) computes it with `idf=False`.
//!
//! Every token vector is divided by its norm; each candidate token is matched to its most
//! similar reference token (precision) and each reference token to its most similar candidate
//! token (recall), over **all** positions including `[CLS]` and `[SEP]`; the means give `[CLS]`
//! and `[SEP]` weight 0 and every other token weight 1. F1 = 2PR/(P+R), 0 where undefined.
//! A text that has no token but the two special ones scores P = R = F1 = 0, as in `bert_score`.

/// BERTScore precision, recall and F1 of one pair.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prf {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

/// Token vectors of one text, each of unit length, with the token ids.
#[derive(Clone, Debug)]
pub struct TokenVectors {
    pub ids: Vec<u32>,
    /// The length of each vector.
    pub dim: usize,
    /// (tokens, dim), row-major, rows of unit norm.
    pub vectors: Vec<f32>,
}

/// Greedy matching of a candidate against a reference. `special` lists the ids weighted 0
/// (`bert_score` sets the weights of the tokenizer's `[SEP]` and `[CLS]` ids to 0).
///
/// # Panics
/// When the two texts' vectors differ in length or do not match their token counts.
pub fn greedy_match(candidate: &TokenVectors, reference: &TokenVectors, special: &[u32]) -> Prf {
    let (m, n, dim) = (candidate.ids.len(), reference.ids.len(), candidate.dim);
    assert!(
        dim == reference.dim && candidate.vectors.len() == m * dim && reference.vectors.len() == n * dim,
        "token vectors of inconsistent shapes"
    );
    if m <= 2 || n <= 2 {
        return Prf::default();
    }
    // sim (m×n) = candidate (m×dim) · referenceᵀ (dim×n).
    let mut sim = vec![0f32; m * n];
    // SAFETY: the shapes were checked above; every index gemm touches is inside its slice.
    unsafe {
        gemm::gemm(
            m,
            n,
            dim,
            sim.as_mut_ptr(),
            1,
            n as isize,
            false,
            candidate.vectors.as_ptr(),
            1,
            dim as isize,
            reference.vectors.as_ptr(),
            dim as isize,
            1,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
    let weighted = |id: &u32| !special.contains(id);
    let mut col_max = vec![f32::NEG_INFINITY; n];
    let (mut p_sum, mut p_count) = (0f64, 0usize);
    for (i, row) in sim.chunks_exact(n).enumerate() {
        let mut row_max = f32::NEG_INFINITY;
        for (c, &s) in col_max.iter_mut().zip(row) {
            row_max = row_max.max(s);
            *c = c.max(s);
        }
        if weighted(&candidate.ids[i]) {
            p_sum += row_max as f64;
            p_count += 1;
        }
    }
    let (mut r_sum, mut r_count) = (0f64, 0usize);
    for (j, c) in col_max.iter().enumerate() {
        if weighted(&reference.ids[j]) {
            r_sum += *c as f64;
            r_count += 1;
        }
    }
    let precision = if p_count == 0 { 0.0 } else { p_sum / p_count as f64 };
    let recall = if r_count == 0 { 0.0 } else { r_sum / r_count as f64 };
    let f1 = if precision + recall == 0.0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) };
    let f1 = if f1.is_nan() { 0.0 } else { f1 };
    Prf { precision, recall, f1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tv(ids: &[u32], rows: &[[f32; 2]]) -> TokenVectors {
        let flat: Vec<f32> = rows
            .iter()
            .flat_map(|r| {
                let n = (r[0] * r[0] + r[1] * r[1]).sqrt();
                [r[0] / n, r[1] / n]
            })
            .collect();
        TokenVectors { ids: ids.to_vec(), dim: 2, vectors: flat }
    }

    #[test]
    fn special_tokens_are_matched_but_weighted_zero() {
        // [CLS] a [SEP] against [CLS] b c [SEP]; CLS=1, SEP=2.
        let cand = tv(&[1, 10, 2], &[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
        let refr = tv(&[1, 11, 12, 2], &[[1.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]);
        let prf = greedy_match(&cand, &refr, &[1, 2]);
        // candidate token (0,1) best matches the reference [SEP] (0,1): 1.0
        assert!((prf.precision - 1.0).abs() < 1e-6);
        // reference tokens (1,0) -> best is candidate [CLS] (1,0): 1; (1,1)/√2 -> candidate [SEP]: 1
        assert!((prf.recall - 1.0).abs() < 1e-6);
        let empty = tv(&[1, 2], &[[1.0, 0.0], [0.0, 1.0]]);
        assert_eq!(greedy_match(&empty, &refr, &[1, 2]), Prf::default());
    }
}
