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

/// The key baselines are stored under for runs scored under `signature`: the signature itself, or
/// with `|redacted` for a redacted run (its baselines are masked and scored against masked
/// references, as its answers were).
pub fn baseline_key(signature: &str, redacted: bool) -> String {
    if redacted { format!("{signature}|redacted") } else { signature.to_string() }
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
