//! Null baselines' scores (`baseline_scores`): each baseline's answer to each scenario, scored
//! under one signature (which names the suite and how scores were computed), kept once per store
//! and reused by every run of that signature.

use std::collections::BTreeMap;

use h2htalk_data::suite::baselines::Baseline;
use rusqlite::params;
use serde::Serialize;

use crate::rows::ScoreOutcome;
use crate::{Store, StoreError, StoreResult};

pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS baseline_scores (
    signature TEXT NOT NULL,
    baseline TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    task TEXT NOT NULL,
    answer TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('scored', 'empty_prediction', 'dropped')),
    metrics TEXT NOT NULL,
    seed INTEGER,
    PRIMARY KEY (signature, baseline, scenario_id)
);
";

/// One baseline's answer to one scenario and its scores.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BaselineScore {
    pub baseline: Baseline,
    pub scenario_id: String,
    pub task: String,
    pub answer: String,
    pub outcome: ScoreOutcome,
    pub metrics: BTreeMap<String, f64>,
    /// The shuffle's seed (`other_reference`).
    pub seed: Option<u64>,
}

/// The key baselines are stored under for runs scored under `signature`: the signature without
/// what depends on the texts scored rather than on how (the counts of texts cut at a model's token
/// limit, `(truncated:N)`, which differ between runs of one protocol and between a run and its
/// baselines), with `|redacted` for a redacted run (its baselines are masked and scored against
/// masked references, as its answers were). Every run scored the same way shares one key.
pub fn baseline_key(signature: &str, redacted: bool) -> String {
    let method = without_counts(signature);
    if redacted { format!("{method}|redacted") } else { method }
}

/// The key a release before the counts were left out stored baselines under: the whole signature.
pub fn legacy_baseline_key(signature: &str, redacted: bool) -> String {
    if redacted { format!("{signature}|redacted") } else { signature.to_string() }
}

/// `signature` with each `(truncated:N)` removed.
fn without_counts(signature: &str) -> String {
    const MARK: &str = "(truncated:";
    let mut out = String::with_capacity(signature.len());
    let mut rest = signature;
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(')') {
            out.push_str(&rest[..at]);
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..at + MARK.len()]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

impl Store {
    /// Stores baseline scores under `signature` (replacing rows of the same baseline and scenario).
    pub fn put_baseline_scores(&mut self, signature: &str, rows: &[BaselineScore]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        for r in rows {
            tx.execute(
                "INSERT OR REPLACE INTO baseline_scores (signature, baseline, scenario_id, task, answer, outcome, metrics, \
                 seed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    signature,
                    r.baseline.as_str(),
                    r.scenario_id,
                    r.task,
                    r.answer,
                    r.outcome.as_str(),
                    serde_json::to_string(&r.metrics).expect("metrics serialise"),
                    r.seed.map(|s| s as i64)
                ],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// The baselines of runs scored under `signature` (a run's score signature): those under its
    /// [`baseline_key`], else those an earlier release stored under its [`legacy_baseline_key`].
    pub fn baselines_for(&self, signature: &str, redacted: bool) -> StoreResult<Vec<BaselineScore>> {
        let rows = self.baseline_scores(&baseline_key(signature, redacted))?;
        if !rows.is_empty() {
            return Ok(rows);
        }
        self.baseline_scores(&legacy_baseline_key(signature, redacted))
    }

    /// Every baseline score stored under `signature` (none in a store written before baselines).
    pub fn baseline_scores(&self, signature: &str) -> StoreResult<Vec<BaselineScore>> {
        if !self.has_table("baseline_scores")? {
            return Ok(vec![]);
        }
        type Raw = (String, String, String, String, String, String, Option<i64>);
        let raw: Vec<Raw> = self.all(
            "SELECT baseline, scenario_id, task, answer, outcome, metrics, seed FROM baseline_scores WHERE signature = ?1 \
             ORDER BY baseline, scenario_id",
            [signature],
            |r| r.try_into(),
        )?;
        let d = self.decoder("(baselines)");
        raw.into_iter()
            .map(|(baseline, scenario_id, task, answer, outcome, metrics, seed)| {
                Ok(BaselineScore {
                    baseline: d.text(&scenario_id, "baseline_scores.baseline", &baseline, Baseline::parse)?,
                    outcome: d.text(&scenario_id, "baseline_scores.outcome", &outcome, ScoreOutcome::parse)?,
                    metrics: crate::runs::decode_metrics(&d, &scenario_id, &metrics)?,
                    seed: seed.map(|s| s as u64),
                    scenario_id,
                    task,
                    answer,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_leaves_out_the_truncation_counts() {
        let sig =
            "profile:paper|bertscore:m@1:L4/4:cut128:max512tok(truncated:0)|emb:m@1:max512tok(truncated:12)|suite:x";
        assert_eq!(
            baseline_key(sig, false),
            "profile:paper|bertscore:m@1:L4/4:cut128:max512tok|emb:m@1:max512tok|suite:x"
        );
        assert_eq!(baseline_key(sig, true), format!("{}|redacted", baseline_key(sig, false)));
        assert_eq!(legacy_baseline_key(sig, false), sig);
        // Not a count: kept as it is.
        assert_eq!(baseline_key("a(truncated:)b(truncated:x)", false), "a(truncated:)b(truncated:x)");
        assert_eq!(baseline_key("lexical only", false), "lexical only");
    }

    /// Rows an earlier release stored under a run's whole signature are still found; rows under
    /// the key come first.
    #[test]
    fn baselines_stored_under_the_whole_signature_are_still_found() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("h.db")).unwrap();
        let row = |answer: &str| BaselineScore {
            baseline: Baseline::Echo,
            scenario_id: "dialogue_base-001".into(),
            task: "dialogue_base".into(),
            answer: answer.into(),
            outcome: ScoreOutcome::Scored,
            metrics: [("rougeL".to_string(), 0.25)].into(),
            seed: None,
        };
        let sig = "p|emb:m@1:max512tok(truncated:3)|suite:x";
        assert!(store.baselines_for(sig, false).unwrap().is_empty());
        store.put_baseline_scores(&legacy_baseline_key(sig, false), &[row("old")]).unwrap();
        assert_eq!(store.baselines_for(sig, false).unwrap(), [row("old")]);
        assert!(store.baselines_for(sig, true).unwrap().is_empty(), "a redacted run has its own");
        store.put_baseline_scores(&baseline_key(sig, false), &[row("new")]).unwrap();
        assert_eq!(store.baselines_for(sig, false).unwrap(), [row("new")]);
        // Another count, the same way of scoring: the same rows.
        assert_eq!(store.baselines_for("p|emb:m@1:max512tok(truncated:0)|suite:x", false).unwrap(), [row("new")]);
    }
}
