//! Runs read from the store: every item with its generation and scores, validated.

use std::collections::{BTreeMap, BTreeSet};

use h2htalk_metrics::{COMPOSITE_WEIGHTS, composite_of};
use h2htalk_runner::store::{RunRow, Store};
use serde_json::Value;

use crate::ReportError;

/// Where an item's generation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// Not generated yet (the run was stopped; `--resume` finishes it).
    Pending,
    Generated,
    Failed,
}

/// Where an item's scoring stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scoring {
    /// No score row (not generated, failed, or generated but not scored yet).
    Unscored,
    /// Scored (`strict` also scores an empty answer, at 0: `EmptyPrediction`).
    Scored,
    EmptyPrediction,
    /// Not scored by the profile (an empty side).
    Dropped,
}

impl Scoring {
    pub fn name(self) -> &'static str {
        match self {
            Scoring::Unscored => "unscored",
            Scoring::Scored => "scored",
            Scoring::EmptyPrediction => "empty_prediction",
            Scoring::Dropped => "dropped",
        }
    }

    /// Whether the item carries metric values.
    pub fn has_values(self) -> bool {
        matches!(self, Scoring::Scored | Scoring::EmptyPrediction)
    }
}

/// One item of a run, joined from `items`, `generations` and `scores`.
#[derive(Clone, Debug)]
pub struct ItemRecord {
    pub scenario_id: String,
    pub task: String,
    pub lang: String,
    /// The messages the model got, as stored (JSON).
    pub prompt: String,
    pub reference: String,
    pub generation: Generation,
    pub answer: Option<String>,
    /// A failure's kind and message.
    pub error: Option<String>,
    pub scoring: Scoring,
    /// Metric name → value; the composite is added when the nine metrics it weighs are present
    /// and the store has none.
    pub metrics: BTreeMap<String, f64>,
}

/// A run with all its items.
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub run: RunRow,
    pub items: Vec<ItemRecord>,
    /// The scoring signatures of its scores (one, unless it was scored in parts).
    pub signatures: BTreeSet<String>,
    /// Whether the composite was computed here from the nine metrics (rather than stored).
    pub composite_computed: bool,
}

/// Reads runs `ids` (all runs, oldest first, when empty) from `store`. `db` names the file in errors.
pub fn load_runs(store: &Store, db: &str, ids: &[String]) -> Result<Vec<RunRecord>, ReportError> {
    let rows: Vec<RunRow> = if ids.is_empty() {
        let all = store.runs()?;
        if all.is_empty() {
            return Err(ReportError::NoRuns { db: db.to_string() });
        }
        all
    } else {
        let mut seen = BTreeSet::new();
        let mut rows = Vec::new();
        for id in ids {
            if !seen.insert(id.as_str()) {
                return Err(ReportError::Usage(format!("run `{id}` is named twice; name each run once")));
            }
            rows.push(store.run(id)?.ok_or_else(|| ReportError::NoRun { db: db.to_string(), id: id.clone() })?);
        }
        rows
    };
    rows.into_iter().map(|run| load_run(store, db, run)).collect()
}

fn load_run(store: &Store, db: &str, run: RunRow) -> Result<RunRecord, ReportError> {
    let invalid = |scenario: &str, field: &str, message: String| ReportError::Invalid {
        db: db.to_string(),
        run: run.id.clone(),
        scenario: scenario.to_string(),
        field: field.to_string(),
        message,
    };
    let mut gens: BTreeMap<String, _> =
        store.generations(&run.id)?.into_iter().map(|g| (g.scenario_id.clone(), g)).collect();
    let mut scores: BTreeMap<String, _> =
        store.scores(&run.id)?.into_iter().map(|s| (s.scenario_id.clone(), s)).collect();
    let mut signatures = BTreeSet::new();
    let mut composite_computed = false;
    let mut items = Vec::new();
    for item in store.items(&run.id)? {
        let (generation, answer, error) = match gens.remove(&item.scenario_id) {
            None => (Generation::Pending, None, None),
            Some(g) => match g.status.as_str() {
                "generated" => (Generation::Generated, Some(g.text.unwrap_or_default()), None),
                "failed" => {
                    let kind = g.error_kind.unwrap_or_else(|| "unknown".into());
                    let msg = g.error_message.map(|m| format!("{kind}: {m}")).unwrap_or(kind);
                    (Generation::Failed, None, Some(msg))
                }
                other => {
                    return Err(invalid(&item.scenario_id, "generations.status", format!("unknown status `{other}`")));
                }
            },
        };
        let (scoring, metrics) = match scores.remove(&item.scenario_id) {
            None => (Scoring::Unscored, BTreeMap::new()),
            Some(s) => {
                signatures.insert(s.signature.clone());
                let scoring = match s.outcome.as_str() {
                    "scored" => Scoring::Scored,
                    "empty_prediction" => Scoring::EmptyPrediction,
                    "dropped" => Scoring::Dropped,
                    other => {
                        return Err(invalid(&item.scenario_id, "scores.outcome", format!("unknown outcome `{other}`")));
                    }
                };
                let value: Value = serde_json::from_str(&s.metrics).map_err(|e| {
                    invalid(&item.scenario_id, "scores.metrics", format!("not JSON ({e}); rescore the run"))
                })?;
                let Value::Object(map) = value else {
                    return Err(invalid(
                        &item.scenario_id,
                        "scores.metrics",
                        "not a JSON object; rescore the run".into(),
                    ));
                };
                let mut metrics = BTreeMap::new();
                for (k, v) in map {
                    match v.as_f64() {
                        Some(x) if x.is_finite() => {
                            metrics.insert(k, x);
                        }
                        _ => {
                            return Err(invalid(
                                &item.scenario_id,
                                &format!("scores.metrics.{k}"),
                                format!("`{v}` is not a finite number; rescore the run"),
                            ));
                        }
                    }
                }
                if scoring.has_values() && metrics.is_empty() {
                    return Err(invalid(
                        &item.scenario_id,
                        "scores.metrics",
                        format!("outcome `{}` without metric values; rescore the run", s.outcome),
                    ));
                }
                if !scoring.has_values() && !metrics.is_empty() {
                    return Err(invalid(
                        &item.scenario_id,
                        "scores.metrics",
                        "a dropped item carries metric values; rescore the run".into(),
                    ));
                }
                if !metrics.contains_key("composite")
                    && let Some(c) = composite_of(|n| metrics.get(n).copied())
                {
                    metrics.insert("composite".into(), c);
                    composite_computed = true;
                }
                (scoring, metrics)
            }
        };
        items.push(ItemRecord {
            scenario_id: item.scenario_id,
            task: item.task,
            lang: item.lang,
            prompt: item.prompt,
            reference: item.reference,
            generation,
            answer,
            error,
            scoring,
            metrics,
        });
    }
    Ok(RunRecord { run, items, signatures, composite_computed })
}

/// Metric names in report order: the composite, the neural metrics, the lexical metrics, then any
/// other name alphabetically.
pub fn order_metrics<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    const PREFERRED: [&str; 13] = [
        "composite",
        "bertscore",
        "bertscore_p",
        "bertscore_r",
        "embedding",
        "rouge1",
        "rouge2",
        "rougeL",
        "bleu1",
        "bleu2",
        "bleu3",
        "bleu4",
        "judge",
    ];
    let set: BTreeSet<&String> = names.into_iter().collect();
    let mut out: Vec<String> =
        PREFERRED.iter().filter(|p| set.iter().any(|s| s.as_str() == **p)).map(|s| s.to_string()).collect();
    out.extend(set.into_iter().filter(|s| !PREFERRED.contains(&s.as_str())).cloned());
    debug_assert!(COMPOSITE_WEIGHTS.iter().all(|(n, _)| PREFERRED.contains(n)));
    out
}
