//! Runs read from the store: every item with its generation and scores, validated.

pub mod rows;
pub mod tags;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use h2htalk_data::ChatMessage;
use h2htalk_metrics::{COMPOSITE_WEIGHTS, composite_of};
use h2htalk_store::{GenerationStatus, RunRow, ScoreOutcome, Store};

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

    pub fn of(outcome: ScoreOutcome) -> Scoring {
        match outcome {
            ScoreOutcome::Scored => Scoring::Scored,
            ScoreOutcome::EmptyPrediction => Scoring::EmptyPrediction,
            ScoreOutcome::Dropped => Scoring::Dropped,
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
    /// The messages the model got (empty when loaded without texts: [`Texts::Deferred`]).
    pub prompt: Vec<ChatMessage>,
    /// The reference (empty when loaded without texts).
    pub reference: String,
    /// The bytes of the prompt's messages and the reference, whether or not they are loaded.
    pub text_bytes: usize,
    pub generation: Generation,
    pub answer: Option<String>,
    /// A failure's kind and message.
    pub error: Option<String>,
    /// A failure's kind alone.
    pub error_kind: Option<String>,
    /// Tokens of the generation as reported (`None`: unknown, or not generated).
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Whether a generation is recorded with unknown usage.
    pub unknown_usage: bool,
    /// Fault classes met while generating.
    pub faults: Vec<String>,
    pub scoring: Scoring,
    /// Metric name → value; the composite is added when the nine metrics it weighs are present
    /// and the store has none.
    pub metrics: MetricValues,
}

/// An item's metric values by name, in name order: a sorted list with the names shared between
/// items (a map per item cost about 1.4 kB, a third of a 50-model report's memory).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricValues(Vec<(Arc<String>, f64)>);

impl MetricValues {
    pub fn get(&self, name: &str) -> Option<&f64> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(name)).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| &**k)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &f64)> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<BTreeMap<String, f64>> for MetricValues {
    fn from(map: BTreeMap<String, f64>) -> Self {
        // Names are interned once per process: there are a dozen of them.
        static NAMES: std::sync::Mutex<BTreeSet<Arc<String>>> = std::sync::Mutex::new(BTreeSet::new());
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        let mut shared = |k: String| -> Arc<String> {
            if let Some(a) = names.get(&k) {
                return a.clone();
            }
            let a = Arc::new(k);
            names.insert(a.clone());
            a
        };
        MetricValues(map.into_iter().map(|(k, v)| (shared(k), v)).collect())
    }
}

impl FromIterator<(String, f64)> for MetricValues {
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(iter: I) -> Self {
        BTreeMap::from_iter(iter).into()
    }
}

impl<'a> IntoIterator for &'a MetricValues {
    type Item = (&'a String, &'a f64);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (Arc<String>, f64)>, fn(&'a (Arc<String>, f64)) -> (&'a String, &'a f64)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (&**k, v))
    }
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

/// Whether a load keeps every item's prompt and reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Texts {
    All,
    /// Prompts and references are left out (their size is kept): a report of many runs computes
    /// from everything else and reads back only the transcripts it shows ([`fill_texts`]). The
    /// prompts are most of a run's bytes, and the same for every run of a sweep.
    Deferred,
}

/// Reads runs `ids` (all runs, oldest first, when empty) from `store`. `db` names the file in errors.
pub fn load_runs(store: &Store, db: &str, ids: &[String]) -> Result<Vec<RunRecord>, ReportError> {
    load_runs_with(store, db, ids, Texts::All)
}

/// [`load_runs`], keeping the items' texts or not.
pub fn load_runs_with(store: &Store, db: &str, ids: &[String], texts: Texts) -> Result<Vec<RunRecord>, ReportError> {
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
    rows.into_iter().map(|run| load_run(store, run, texts)).collect()
}

/// Reads back the prompt and reference of each item of `runs` that `keep` accepts (after a load
/// with [`Texts::Deferred`]).
pub fn fill_texts(
    store: &Store,
    runs: &mut [RunRecord],
    keep: impl Fn(&ItemRecord) -> bool,
) -> Result<(), ReportError> {
    for run in runs {
        if !run.items.iter().any(&keep) {
            continue;
        }
        let mut stored: BTreeMap<String, h2htalk_store::Item> =
            store.items(&run.run.id)?.into_iter().map(|i| (i.scenario_id.clone(), i)).collect();
        for item in run.items.iter_mut().filter(|i| keep(i)) {
            if let Some(s) = stored.remove(&item.scenario_id) {
                item.prompt = s.prompt;
                item.reference = s.reference;
            }
        }
    }
    Ok(())
}

fn load_run(store: &Store, run: RunRow, texts: Texts) -> Result<RunRecord, ReportError> {
    let mut signatures = BTreeSet::new();
    let mut composite_computed = false;
    let mut items = Vec::new();
    for record in store.records(&run.id)? {
        let (generation, answer, error) = match &record.generation {
            None => (Generation::Pending, None, None),
            Some(g) => match g.status {
                GenerationStatus::Generated => (Generation::Generated, g.text.clone(), None),
                GenerationStatus::Failed => (Generation::Failed, None, g.failure()),
            },
        };
        let (scoring, metrics) = match record.score {
            None => (Scoring::Unscored, MetricValues::default()),
            Some(s) => {
                signatures.insert(s.signature.clone());
                let scoring = Scoring::of(s.outcome);
                // The store refuses metric values that are not finite numbers, values on a dropped
                // item and a scored item without values.
                let (metrics, computed) = with_composite(s.metrics);
                composite_computed |= computed;
                (scoring, metrics.into())
            }
        };
        let g = record.generation.as_ref();
        let unknown_usage = g.is_some_and(|g| g.input_tokens.is_none() || g.output_tokens.is_none());
        let input_tokens = g.and_then(|g| g.input_tokens);
        let output_tokens = g.and_then(|g| g.output_tokens);
        let error_kind = g.and_then(|g| g.error_kind).map(|k| k.as_str().to_string());
        let faults = g.map(|g| g.faults.iter().map(|f| f.as_str().to_string()).collect()).unwrap_or_default();
        let mut item = record.item;
        let text_bytes = item.reference.len() + item.prompt.iter().map(|m| m.content.len()).sum::<usize>();
        if texts == Texts::Deferred {
            item.prompt = Vec::new();
            item.reference = String::new();
        }
        items.push(ItemRecord {
            text_bytes,
            error_kind,
            input_tokens,
            output_tokens,
            unknown_usage,
            faults,
            scenario_id: item.scenario_id,
            task: item.task,
            lang: item.lang.code().to_string(),
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

/// `metrics` with the composite added when the nine metrics it weighs are present and it is not;
/// also whether it was added.
pub fn with_composite(mut metrics: BTreeMap<String, f64>) -> (BTreeMap<String, f64>, bool) {
    if !metrics.contains_key("composite")
        && let Some(c) = composite_of(|n| metrics.get(n).copied())
    {
        metrics.insert("composite".into(), c);
        return (metrics, true);
    }
    (metrics, false)
}

/// One null baseline's answers to the items of the report's runs scored under one signature.
#[derive(Clone, Debug)]
pub struct BaselineRecord {
    pub baseline: String,
    pub signature: String,
    /// One item per scenario (each run's item gives the task, language and reference).
    pub items: Vec<ItemRecord>,
    pub composite_computed: bool,
}

/// The null baselines stored under the signatures of `runs`, over the runs' scenarios, in order
/// of signature and baseline name. Scenarios whose baselines were never scored have no item.
pub fn baselines(store: &Store, runs: &[RunRecord]) -> Result<Vec<BaselineRecord>, ReportError> {
    // By key: the runs' scenarios, and each run's signature (rows an earlier release stored under
    // the whole signature are found through it).
    type Wanted<'a> = (BTreeMap<&'a str, &'a ItemRecord>, Vec<(&'a str, bool)>);
    let mut wanted: BTreeMap<String, Wanted> = BTreeMap::new();
    for r in runs {
        for signature in &r.signatures {
            let (items, signatures) =
                wanted.entry(h2htalk_store::baseline_key(signature, r.run.spec.redact)).or_default();
            signatures.push((signature.as_str(), r.run.spec.redact));
            for i in &r.items {
                items.entry(i.scenario_id.as_str()).or_insert(i);
            }
        }
    }
    let mut out = Vec::new();
    for (signature, (items, signatures)) in wanted {
        let mut rows = Vec::new();
        for (s, redact) in signatures {
            rows = store.baselines_for(s, redact)?;
            if !rows.is_empty() {
                break;
            }
        }
        out.extend(BaselineRecord::of(&signature, rows, |id| {
            items.get(id).map(|i| (i.task.as_str(), i.lang.as_str(), i.reference.as_str()))
        }));
    }
    Ok(out)
}

impl BaselineRecord {
    /// The records of `rows` (stored under `signature`), one per baseline in name order, over the
    /// scenarios `item` knows (it gives each one's task, language and reference).
    pub fn of<'a>(
        signature: &str,
        rows: Vec<h2htalk_store::BaselineScore>,
        item: impl Fn(&str) -> Option<(&'a str, &'a str, &'a str)>,
    ) -> Vec<BaselineRecord> {
        let mut by_name: BTreeMap<String, BaselineRecord> = BTreeMap::new();
        for row in rows {
            let Some((task, lang, reference)) = item(&row.scenario_id) else { continue };
            let (metrics, computed) = with_composite(row.metrics);
            let name = row.baseline.as_str().to_string();
            let record = by_name.entry(name.clone()).or_insert_with(|| BaselineRecord {
                baseline: name,
                signature: signature.to_string(),
                items: Vec::new(),
                composite_computed: false,
            });
            record.composite_computed |= computed;
            record.items.push(ItemRecord {
                scenario_id: row.scenario_id,
                task: task.to_string(),
                lang: lang.to_string(),
                prompt: Vec::new(),
                reference: reference.to_string(),
                text_bytes: reference.len(),
                generation: Generation::Generated,
                answer: Some(row.answer),
                error: None,
                error_kind: None,
                input_tokens: None,
                output_tokens: None,
                unknown_usage: false,
                faults: Vec::new(),
                scoring: Scoring::of(row.outcome),
                metrics: metrics.into(),
            });
        }
        by_name.into_values().collect()
    }
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
