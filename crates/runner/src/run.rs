//! A run: plan the items (scenario × prompt), generate with a model through the scheduler while a
//! writer thread commits every result as it arrives, then score what was generated.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use h2htalk_data::{Suite, Task};
use h2htalk_llm::{CallOutcome, ChatMessage, ChatModel, ChatRequest, GenerationSettings, ModelSpec, Scheduler};
use h2htalk_metrics::{Lexical, Outcome, Profile, Tokenizer, composite, lexical_signature, score_pair};
use h2htalk_neural::{NeuralScores, NeuralSetup};
use serde::Serialize;
use serde_json::{Value, json};

use crate::prompt::{Prompts, SapMode};
use crate::store::{GenerationRow, ItemRow, ScoreRow, Store, StoreError};

/// The group (the `task` of its items) of the SAP safety set.
pub const SAFETY_GROUP: &str = "sap_safety";

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct Selection {
    /// Sub-tasks to run (all when empty).
    pub tasks: Vec<Task>,
    /// At most this many scenarios per sub-task.
    pub limit: Option<usize>,
    /// Include the SAP safety set.
    pub safety: bool,
}

/// Prices in USD per million tokens.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Prices {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Prices {
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_per_million + output as f64 * self.output_per_million) / 1e6
    }
}

/// The provenance of a run: everything needed to say what produced its numbers (never a key).
#[allow(clippy::too_many_arguments)]
pub fn provenance(
    suite: &Suite,
    prompts: &Prompts,
    model: &ModelSpec,
    settings: &GenerationSettings,
    selection: &Selection,
    sap: SapMode,
    profile: Profile,
    prices: Prices,
    max_cost: Option<f64>,
) -> Value {
    json!({
        "h2htalk_version": h2htalk_metrics::VERSION,
        "suite": {"dir": suite.dir.display().to_string(), "fingerprint": suite.fingerprint()},
        "templates_hash": prompts.template_hash(),
        "sap": {"mode": sap, "version": prompts.sap().version, "hash": prompts.sap().hash()},
        "model": model,
        "settings": settings,
        "selection": {
            "tasks": selection.tasks.iter().map(|t| t.stem()).collect::<Vec<_>>(),
            "limit": selection.limit,
            "safety": selection.safety,
        },
        "scoring": {"profile": profile.name(), "signature": lexical_signature(profile)},
        "prices": prices,
        "max_cost_usd": max_cost,
    })
}

/// The items of a run, in order: sub-task scenarios (suite order, `limit` per sub-task), then the
/// safety set if selected; each with its rendered prompt.
pub fn plan_items(
    suite: &Suite,
    prompts: &Prompts,
    selection: &Selection,
    sap: SapMode,
) -> Result<Vec<ItemRow>, crate::PromptError> {
    let mut per_task: BTreeMap<Task, usize> = BTreeMap::new();
    let mut items = Vec::new();
    for s in &suite.scenarios {
        let safety = Suite::is_safety(s);
        if safety && !selection.safety {
            continue;
        }
        if !safety {
            if !selection.tasks.is_empty() && !selection.tasks.contains(&s.task) {
                continue;
            }
            let n = per_task.entry(s.task).or_default();
            if selection.limit.is_some_and(|l| *n >= l) {
                continue;
            }
            *n += 1;
        }
        let messages = prompts.render(suite, s, sap)?;
        items.push(ItemRow {
            scenario_id: s.id.clone(),
            task: if safety { SAFETY_GROUP.into() } else { s.task.stem().into() },
            lang: s.lang.code().into(),
            ord: items.len(),
            prompt: serde_json::to_string(&messages).expect("messages serialise"),
            reference: s.reference.clone(),
        });
    }
    Ok(items)
}

/// A new run id: time and a random suffix.
pub fn new_run_id() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    let t = crate::store::format_utc(secs).replace(['-', ':'], "");
    format!("r{}-{:04x}", t.trim_end_matches('Z').replace('T', "-"), fastrand::u16(..))
}

/// Live counters of a generation phase, for progress displays.
#[derive(Default)]
pub struct Counters {
    pub total: AtomicUsize,
    pub generated: AtomicUsize,
    pub failed: AtomicUsize,
    pub input_tokens: AtomicU64,
    pub output_tokens: AtomicU64,
    /// Cost in micro-dollars.
    pub cost_micro_usd: AtomicU64,
}

impl Counters {
    pub fn done(&self) -> usize {
        self.generated.load(Ordering::Relaxed) + self.failed.load(Ordering::Relaxed)
    }

    pub fn cost_usd(&self) -> f64 {
        self.cost_micro_usd.load(Ordering::Relaxed) as f64 / 1e6
    }
}

/// How a generation phase runs, beyond the model and its settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct GenerateOptions {
    pub prices: Prices,
    /// Stop starting new items once the cost reaches this many USD.
    pub max_cost: Option<f64>,
    /// The items are failed ones asked again: their earlier result is replaced.
    pub retry_failed: bool,
    /// Mask personal data ([`crate::redact`]) in answers and error messages before they are stored.
    pub redact: bool,
}

/// How a generation phase ended.
#[derive(Debug, Clone, Serialize)]
pub struct GenerationReport {
    pub attempted: usize,
    pub generated: usize,
    pub failed: usize,
    /// Items left undone because the cost limit was reached.
    pub left_by_cost_limit: usize,
    pub faults: BTreeMap<String, u64>,
    pub elapsed_s: f64,
}

/// Items still to generate: those without a generation (or, with `retry_failed`, only the failed).
pub fn pending(store: &Store, run_id: &str, retry_failed: bool) -> Result<Vec<ItemRow>, StoreError> {
    let done: BTreeMap<String, String> =
        store.generations(run_id)?.into_iter().map(|g| (g.scenario_id, g.status)).collect();
    Ok(store
        .items(run_id)?
        .into_iter()
        .filter(|i| match done.get(&i.scenario_id) {
            None => !retry_failed,
            Some(status) => retry_failed && status == "failed",
        })
        .collect())
}

fn to_row(scenario_id: &str, out: &CallOutcome) -> GenerationRow {
    let faults = serde_json::to_string(&out.faults).expect("fault kinds serialise");
    let latency_ms = out.latency.as_secs_f64() * 1000.0;
    match &out.result {
        Ok(r) => GenerationRow {
            scenario_id: scenario_id.to_string(),
            status: "generated".into(),
            text: Some(r.text.clone()),
            finish_reason: Some(r.finish_reason.as_str().to_string()),
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            latency_ms,
            attempts: out.attempts,
            error_kind: None,
            error_message: None,
            faults,
        },
        Err(e) => GenerationRow {
            scenario_id: scenario_id.to_string(),
            status: "failed".into(),
            text: None,
            finish_reason: None,
            input_tokens: 0,
            output_tokens: 0,
            latency_ms,
            attempts: out.attempts,
            error_kind: Some(e.kind.as_str().to_string()),
            error_message: Some(e.message.clone()),
            faults,
        },
    }
}

/// Generates `items` with `model`, committing each result as it arrives through a writer thread
/// that owns the store. Stops taking new items once `max_cost` is reached.
#[allow(clippy::too_many_arguments)]
pub async fn generate(
    store_path: PathBuf,
    run_id: &str,
    model: Arc<dyn ChatModel>,
    scheduler: Arc<Scheduler>,
    items: Vec<ItemRow>,
    settings: GenerationSettings,
    options: GenerateOptions,
    counters: Arc<Counters>,
) -> Result<GenerationReport, StoreError> {
    let GenerateOptions { prices, max_cost, retry_failed, redact } = options;
    let started = Instant::now();
    counters.total.store(items.len(), Ordering::Relaxed);
    let (tx, rx) = mpsc::channel::<GenerationRow>();
    let writer_run = run_id.to_string();
    let writer = std::thread::spawn(move || -> Result<(), StoreError> {
        let mut store = Store::open(&store_path)?;
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            batch.extend(rx.try_iter().take(511));
            store.put_generations(&writer_run, &batch, retry_failed)?;
        }
        Ok(())
    });

    let queue = Arc::new(Mutex::new(items.into_iter().collect::<VecDeque<_>>()));
    let stop = Arc::new(AtomicBool::new(false));
    let workers = model.max_concurrency().max(1);
    let mut handles = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (queue, model, scheduler, tx, counters, stop, settings) = (
            queue.clone(),
            model.clone(),
            scheduler.clone(),
            tx.clone(),
            counters.clone(),
            stop.clone(),
            settings.clone(),
        );
        handles.push(tokio::spawn(async move {
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Some(item) = queue.lock().unwrap().pop_front() else { break };
                let messages: Vec<ChatMessage> =
                    serde_json::from_str(&item.prompt).expect("prompts are stored as messages");
                let request = ChatRequest { messages, settings: settings.clone() };
                let out = scheduler.call(model.as_ref(), &request).await;
                let mut row = to_row(&item.scenario_id, &out);
                if redact {
                    row.text = row.text.map(|t| crate::redact::redact(&t));
                    row.error_message = row.error_message.map(|t| crate::redact::redact(&t));
                }
                if row.status == "generated" {
                    counters.generated.fetch_add(1, Ordering::Relaxed);
                } else {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                }
                counters.input_tokens.fetch_add(row.input_tokens, Ordering::Relaxed);
                counters.output_tokens.fetch_add(row.output_tokens, Ordering::Relaxed);
                let micro = (prices.cost(row.input_tokens, row.output_tokens) * 1e6).round() as u64;
                let total = counters.cost_micro_usd.fetch_add(micro, Ordering::Relaxed) + micro;
                if max_cost.is_some_and(|m| total as f64 / 1e6 >= m) {
                    stop.store(true, Ordering::Relaxed);
                }
                if tx.send(row).is_err() {
                    break; // the writer failed; its error is reported below
                }
            }
        }));
    }
    drop(tx);
    for h in handles {
        h.await.expect("a generation worker panicked");
    }
    let left = queue.lock().unwrap().len();
    tokio::task::spawn_blocking(move || writer.join().expect("the store writer panicked")).await.expect("join")?;
    let faults = scheduler.stats.faults().into_iter().map(|(k, v)| (k.as_str().to_string(), v)).collect();
    Ok(GenerationReport {
        attempted: counters.done(),
        generated: counters.generated.load(Ordering::Relaxed),
        failed: counters.failed.load(Ordering::Relaxed),
        left_by_cost_limit: left,
        faults,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

/// Why scoring stopped.
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("computing the neural metrics: {0}")]
    Neural(#[from] h2htalk_neural::NeuralError),
}

/// Scores every generated item that has no score yet under `profile`: the lexical metrics, and
/// with `neural` also BERTScore (P, R, F1), embedding similarity and the paper's composite. Each
/// score row carries the signature of how it was computed. Returns how many items were scored.
pub fn score(
    store: &mut Store,
    run_id: &str,
    profile: Profile,
    neural: Option<&NeuralSetup>,
) -> Result<usize, ScoreError> {
    let scored: HashSet<String> = store.scores(run_id)?.into_iter().map(|s| s.scenario_id).collect();
    let references: BTreeMap<String, String> =
        store.items(run_id)?.into_iter().map(|i| (i.scenario_id, i.reference)).collect();
    let todo: Vec<(String, String)> = store
        .generations(run_id)?
        .into_iter()
        .filter(|g| g.status == "generated" && !scored.contains(&g.scenario_id))
        .map(|g| (g.scenario_id, g.text.unwrap_or_default()))
        .collect();
    let tokenizer = Tokenizer::global();
    let lexical: Vec<Outcome> =
        todo.iter().map(|(id, text)| score_pair(tokenizer, profile, text, &references[id])).collect();
    let (neural_scores, signature) = match neural {
        None => (vec![None; todo.len()], lexical_signature(profile)),
        Some(setup) => {
            let pairs: Vec<(&str, &str)> =
                todo.iter().map(|(id, text)| (text.as_str(), references[id].as_str())).collect();
            let run = setup.score_pairs(profile, &pairs)?;
            let signature = format!("{}|{}", lexical_signature(profile), setup.signature(&run));
            (run.scores, signature)
        }
    };
    let with_neural = neural.is_some();
    let rows: Vec<ScoreRow> = todo
        .into_iter()
        .zip(lexical)
        .zip(neural_scores)
        .map(|(((scenario_id, _), outcome), neural)| {
            let mut metrics = serde_json::Map::new();
            if let Some(s) = outcome.scores() {
                metrics.extend(Lexical::NAMES.iter().zip(s.values()).map(|(n, v)| ((*n).to_string(), json!(v))));
                if let Some(n) = neural {
                    metrics
                        .extend(NeuralScores::NAMES.iter().zip(n.values()).map(|(k, v)| ((*k).to_string(), json!(v))));
                    metrics.insert("composite".into(), json!(composite(&s, n.bertscore, n.embedding)));
                }
            }
            if with_neural {
                assert_eq!(outcome.scores().is_some(), neural.is_some(), "the lexical and neural drop rules agree");
            }
            let outcome = match outcome {
                Outcome::Scored(_) => "scored",
                Outcome::EmptyPrediction => "empty_prediction",
                Outcome::Dropped(_) => "dropped",
            };
            ScoreRow {
                scenario_id,
                outcome: outcome.into(),
                metrics: Value::Object(metrics).to_string(),
                signature: signature.clone(),
            }
        })
        .collect();
    store.put_scores(run_id, &rows)?;
    Ok(rows.len())
}

/// Per-group counts and means of a run, from the store.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub group: String,
    pub items: usize,
    pub generated: usize,
    pub failed: usize,
    pub scored: usize,
    pub dropped: usize,
    pub means: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    /// The sub-tasks in their canonical order, then the SAP safety set if the run has it.
    pub groups: Vec<GroupSummary>,
    /// The eleven sub-tasks pooled (the paper's overall); the safety set stays apart, as in reports.
    pub overall: GroupSummary,
    /// Counts over every item of the run, the safety set included (no means).
    pub all: GroupSummary,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub failure_reasons: BTreeMap<String, usize>,
    /// Fault classes met while generating (retried or not), over every session of the run.
    pub faults_seen: BTreeMap<String, u64>,
}

pub fn summarize(store: &Store, run_id: &str) -> Result<RunSummary, StoreError> {
    let items = store.items(run_id)?;
    let gens: BTreeMap<String, GenerationRow> =
        store.generations(run_id)?.into_iter().map(|g| (g.scenario_id.clone(), g)).collect();
    let scores: BTreeMap<String, ScoreRow> =
        store.scores(run_id)?.into_iter().map(|s| (s.scenario_id.clone(), s)).collect();
    let mut order: Vec<String> = Vec::new();
    // Per metric, the sum and the number of items that have it.
    type Sums = BTreeMap<String, (f64, usize)>;
    let mut groups: BTreeMap<String, (GroupSummary, Sums)> = BTreeMap::new();
    let empty = |name: &str| GroupSummary {
        group: name.into(),
        items: 0,
        generated: 0,
        failed: 0,
        scored: 0,
        dropped: 0,
        means: BTreeMap::new(),
    };
    let mut overall = (empty("overall"), Sums::new());
    let mut all = (empty("all"), Sums::new());
    let mut failure_reasons = BTreeMap::new();
    let mut faults_seen = BTreeMap::new();
    let (mut input_tokens, mut output_tokens) = (0, 0);
    for item in &items {
        if !groups.contains_key(&item.task) {
            order.push(item.task.clone());
        }
        let group = groups.entry(item.task.clone()).or_insert_with(|| (empty(&item.task), BTreeMap::new()));
        let mut targets = vec![group, &mut all];
        if item.task != SAFETY_GROUP {
            targets.push(&mut overall);
        }
        for (g, sums) in targets {
            g.items += 1;
            match gens.get(&item.scenario_id) {
                Some(r) if r.status == "generated" => g.generated += 1,
                Some(_) => g.failed += 1,
                None => {}
            }
            if let Some(s) = scores.get(&item.scenario_id) {
                if s.outcome == "dropped" {
                    g.dropped += 1;
                } else {
                    g.scored += 1;
                    let metrics: BTreeMap<String, f64> = serde_json::from_str(&s.metrics).map_err(|e| StoreError {
                        path: store.path().to_string(),
                        message: format!("run {run_id}, item {}: column `metrics`: {e}", s.scenario_id),
                    })?;
                    for (k, v) in metrics {
                        let (sum, n) = sums.entry(k).or_default();
                        *sum += v;
                        *n += 1;
                    }
                }
            }
        }
        if let Some(r) = gens.get(&item.scenario_id) {
            input_tokens += r.input_tokens;
            output_tokens += r.output_tokens;
            if let Some(kind) = &r.error_kind {
                *failure_reasons.entry(kind.clone()).or_default() += 1;
            }
            let faults: Vec<String> = serde_json::from_str(&r.faults).map_err(|e| StoreError {
                path: store.path().to_string(),
                message: format!("run {run_id}, item {}: column `faults`: {e}", r.scenario_id),
            })?;
            for fault in faults {
                *faults_seen.entry(fault).or_default() += 1;
            }
        }
    }
    let finish = |(mut g, sums): (GroupSummary, Sums)| {
        g.means = sums.into_iter().map(|(k, (sum, n))| (k, sum / n as f64)).collect();
        g
    };
    let mut groups_out = Vec::new();
    for name in order {
        groups_out.push(finish(groups.remove(&name).unwrap()));
    }
    // Sub-tasks in their canonical order, the safety set last.
    groups_out.sort_by_key(|g| {
        Task::from_stem(&g.group).map_or(usize::MAX, |t| Task::ALL.iter().position(|x| *x == t).unwrap())
    });
    Ok(RunSummary {
        run_id: run_id.to_string(),
        groups: groups_out,
        overall: finish(overall),
        all: GroupSummary { means: BTreeMap::new(), ..all.0 },
        input_tokens,
        output_tokens,
        failure_reasons,
        faults_seen,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store with one run whose items `s0`, `s1`… are generated and scored with `metrics`; the
    /// last `safety` of them belong to the safety set.
    fn store_with_scores(metrics: &[&str], safety: usize) -> (tempfile::TempDir, Store) {
        let dir = tempfile::TempDir::new().unwrap();
        let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
        let item = |i: usize| ItemRow {
            scenario_id: format!("s{i}"),
            task: if i + safety >= metrics.len() { SAFETY_GROUP.into() } else { "dialogue_base".into() },
            lang: "zh".into(),
            ord: i,
            prompt: "[]".into(),
            reference: "参考".into(),
        };
        let items: Vec<ItemRow> = (0..metrics.len()).map(item).collect();
        store.create_run("r", &serde_json::json!({}), &items).unwrap();
        let generated = |i: usize| GenerationRow {
            scenario_id: format!("s{i}"),
            status: "generated".into(),
            text: Some("回答".into()),
            finish_reason: Some("stop".into()),
            input_tokens: 1,
            output_tokens: 1,
            latency_ms: 1.0,
            attempts: 1,
            error_kind: None,
            error_message: None,
            faults: "[]".into(),
        };
        store.put_generations("r", &(0..metrics.len()).map(generated).collect::<Vec<_>>(), false).unwrap();
        let rows: Vec<ScoreRow> = metrics
            .iter()
            .enumerate()
            .map(|(i, m)| ScoreRow {
                scenario_id: format!("s{i}"),
                outcome: "scored".into(),
                metrics: m.to_string(),
                signature: String::new(),
            })
            .collect();
        store.put_scores("r", &rows).unwrap();
        (dir, store)
    }

    #[test]
    fn each_mean_divides_by_the_items_that_have_the_metric() {
        let (_dir, store) = store_with_scores(&[r#"{"a": 1.0, "b": 2.0}"#, r#"{"a": 3.0}"#], 0);
        let summary = summarize(&store, "r").unwrap();
        assert_eq!(summary.overall.scored, 2);
        assert_eq!(summary.overall.means["a"], 2.0);
        assert_eq!(summary.overall.means["b"], 2.0);
        assert_eq!(summary.groups[0].means, summary.overall.means);
    }

    #[test]
    fn a_stored_metrics_value_that_does_not_parse_is_an_error() {
        let (_dir, store) = store_with_scores(&[r#"{"a": 1.0}"#, r#"{"a": "#], 0);
        let err = summarize(&store, "r").unwrap_err().to_string();
        assert!(err.contains("item s1: column `metrics`"), "{err}");
    }

    #[test]
    fn the_safety_set_counts_in_all_items_but_not_in_overall() {
        let (_dir, store) = store_with_scores(&[r#"{"a": 1.0}"#, r#"{"a": 3.0}"#, r#"{"a": 100.0}"#], 1);
        let summary = summarize(&store, "r").unwrap();
        let groups: Vec<(&str, usize)> = summary.groups.iter().map(|g| (g.group.as_str(), g.items)).collect();
        assert_eq!(groups, [("dialogue_base", 2), (SAFETY_GROUP, 1)]);
        assert_eq!((summary.overall.items, summary.overall.scored), (2, 2));
        assert_eq!(summary.overall.means["a"], 2.0);
        assert_eq!((summary.all.items, summary.all.generated, summary.all.scored), (3, 3, 3));
        assert!(summary.all.means.is_empty());
    }
}
