//! The clipped n-gram overlap that BLEU and ROUGE-N share.

use rustc_hash::FxHashMap;

/// The sum, over the distinct n-grams of `reference`, of the smaller of its count in `hyp` and in
/// `reference`: nltk `modified_precision`'s clipped matches and the official ROUGE-N's overlap
/// (0 when either side has fewer than `n` tokens). The counts are integers, so the map's order
/// cannot change the result; n-grams of `hyp` absent from `reference` add 0 and are not stored.
pub(crate) fn clipped_overlap(hyp: &[&str], reference: &[&str], n: usize) -> u64 {
    debug_assert!(n > 0);
    let mut counts: FxHashMap<&[&str], (u64, u64)> = FxHashMap::default();
    counts.reserve(reference.len());
    for g in reference.windows(n) {
        counts.entry(g).or_default().0 += 1;
    }
    for g in hyp.windows(n) {
        if let Some(c) = counts.get_mut(g) {
            c.1 += 1;
        }
    }
    counts.values().map(|&(in_ref, in_hyp)| in_ref.min(in_hyp)).sum()
}
