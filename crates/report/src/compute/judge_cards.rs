//! The pairwise judges' cards over the report's runs: from the judgments `h2htalk compare` stored,
//! how often the longer answer and the answer shown first won, and the Bradley–Terry ranking with
//! the answers' length difference as a covariate beside the raw one (the same computation as
//! `compare`'s card, [`h2htalk_stats::bt_controlled::length_bias`]).

use std::collections::BTreeMap;

use h2htalk_stats::bt::{Comparison, Outcome, fit};
use h2htalk_stats::bt_controlled::{BiasFlags, length_bias};
use h2htalk_store::{PairOutcome, Store};
use serde::Serialize;

use crate::ReportError;
use crate::load::RunRecord;

/// A run's place with and without length held fixed.
#[derive(Clone, Debug, Serialize)]
pub struct CardRank {
    pub run: String,
    pub raw_rank: usize,
    pub controlled_rank: usize,
    /// Log-strength with length held fixed, centred on 0.
    pub controlled_score: f64,
}

/// One pairwise judge over the report's runs.
#[derive(Clone, Debug, Serialize)]
pub struct JudgeCard {
    pub judge: String,
    /// Compared items (judgments with a winner, a tie or disagreeing orders).
    pub comparisons: usize,
    /// The shares of the longer and the first-shown answer, their flags and γ.
    #[serde(flatten)]
    pub flags: BiasFlags,
    /// Every run, by raw rank.
    pub ranks: Vec<CardRank>,
}

impl std::ops::Deref for JudgeCard {
    type Target = BiasFlags;
    fn deref(&self) -> &BiasFlags {
        &self.flags
    }
}

/// Ranks (1 for the highest) of `scores`, ties broken by index.
fn ranks_of(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut ranks = vec![0; scores.len()];
    for (r, i) in order.into_iter().enumerate() {
        ranks[i] = r + 1;
    }
    ranks
}

/// The card of every judge that compared two or more of `runs` pairwise (none for fewer than two
/// runs).
pub fn judge_cards(store: &Store, runs: &[RunRecord]) -> Result<Vec<JudgeCard>, ReportError> {
    if runs.len() < 2 {
        return Ok(Vec::new());
    }
    let lengths: Vec<BTreeMap<&str, f64>> = runs
        .iter()
        .map(|r| {
            r.items
                .iter()
                .map(|i| (i.scenario_id.as_str(), i.answer.as_deref().map_or(0, |a| a.chars().count()) as f64))
                .collect()
        })
        .collect();
    // Per judge: comparisons with their lengths, and the single-order verdicts for the first shown.
    let mut by_judge: BTreeMap<String, (Vec<Comparison>, Vec<(f64, f64)>, usize, usize)> = BTreeMap::new();
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let (x, y) = (runs[i].run.id.as_str(), runs[j].run.id.as_str());
            // Judgments are stored under the pair's ids in sorted order.
            let (first, second, flipped) = if x <= y { (x, y, false) } else { (y, x, true) };
            for judge in store.pair_judges(first, second)? {
                let entry = by_judge.entry(judge.clone()).or_default();
                for row in store.pair_judgments(&judge, first, second)? {
                    let outcome = match (row.outcome, flipped) {
                        (PairOutcome::A, false) | (PairOutcome::B, true) => Outcome::AWins,
                        (PairOutcome::B, false) | (PairOutcome::A, true) => Outcome::BWins,
                        (PairOutcome::Tie | PairOutcome::Inconsistent, _) => Outcome::Tie,
                        _ => continue,
                    };
                    let len = |run: usize| lengths[run].get(row.scenario_id.as_str()).copied().unwrap_or(0.0);
                    entry.0.push(Comparison { item: row.scenario_id.clone(), a: i, b: j, outcome });
                    entry.1.push((len(i), len(j)));
                    for verdict in [&row.order_ab, &row.order_ba].into_iter().flatten() {
                        match verdict.get("winner").and_then(|w| w.as_str()) {
                            Some("A") => (entry.2, entry.3) = (entry.2 + 1, entry.3 + 1),
                            Some("B") => entry.3 += 1,
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    Ok(by_judge
        .into_iter()
        .filter(|(_, (c, ..))| !c.is_empty())
        .map(|(judge, (comparisons, lens, first_k, first_n))| {
            let length = length_bias(runs.len(), &comparisons, &lens);
            let raw = ranks_of(&fit(runs.len(), &comparisons));
            let adjusted = ranks_of(&length.controlled.scores);
            let mut ranks: Vec<CardRank> = runs
                .iter()
                .enumerate()
                .map(|(i, r)| CardRank {
                    run: r.run.id.clone(),
                    raw_rank: raw[i],
                    controlled_rank: adjusted[i],
                    controlled_score: length.controlled.scores[i],
                })
                .collect();
            ranks.sort_by_key(|c| c.raw_rank);
            JudgeCard { judge, comparisons: comparisons.len(), flags: BiasFlags::new(&length, first_k, first_n), ranks }
        })
        .collect())
}
