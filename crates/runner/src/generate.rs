//! The generation phase: every pending item asked of the model through the scheduler, while a
//! writer thread commits each result as it arrives (a crash loses nothing that finished).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use h2htalk_data::redact::redact as redact_text;
use h2htalk_llm::{CallOutcome, ChatRequest, GenerationSettings};
use h2htalk_store::{Generation, GenerationStatus, Item, Prices, Store, StoreError};
use serde::Serialize;

use crate::models::Endpoint;

/// Live counters of a generation phase, for progress displays.
#[derive(Default)]
pub struct Counters {
    pub total: AtomicUsize,
    pub generated: AtomicUsize,
    pub failed: AtomicUsize,
    pub input_tokens: AtomicU64,
    pub output_tokens: AtomicU64,
    /// Cost in micro-dollars (of the answers whose usage is known).
    pub cost_micro_usd: AtomicU64,
    /// Answers whose server reported no token usage.
    pub unknown_usage: AtomicUsize,
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
    /// The model's prices; `None` (not set): nothing is counted as spent, and a cost limit is
    /// refused before generation.
    pub prices: Option<Prices>,
    /// Stop starting new items once the cost reaches this many USD (counting what the run had
    /// already spent, which the counters start from). An answer without usage stops the run too
    /// when tokens have a price: its cost is unknown, never free.
    pub max_cost: Option<f64>,
    /// The items are failed ones asked again: their earlier result is replaced.
    pub retry_failed: bool,
    /// Mask personal data ([`h2htalk_data::redact`]) in answers and error messages before they are stored.
    pub redact: bool,
}

/// How a generation phase ended.
#[derive(Debug, Clone, Serialize)]
pub struct GenerationReport {
    pub attempted: usize,
    pub generated: usize,
    pub failed: usize,
    /// Items left undone because the cost limit was reached (or could not be enforced).
    pub left_by_cost_limit: usize,
    /// Why the phase stopped early, when it did.
    pub stopped: Option<String>,
    pub faults: BTreeMap<String, u64>,
    pub elapsed_s: f64,
}

/// Items still to generate: those without a generation (or, with `retry_failed`, only the failed).
pub fn pending(store: &Store, run_id: &str, retry_failed: bool) -> Result<Vec<Item>, StoreError> {
    Ok(store
        .records(run_id)?
        .into_iter()
        .filter(|r| match &r.generation {
            None => !retry_failed,
            Some(g) => retry_failed && g.status == GenerationStatus::Failed,
        })
        .map(|r| r.item)
        .collect())
}

fn to_row(scenario_id: &str, out: &CallOutcome) -> Generation {
    let faults = out.faults.clone();
    let latency_ms = out.latency.as_secs_f64() * 1000.0;
    match &out.result {
        Ok(r) => Generation {
            scenario_id: scenario_id.to_string(),
            status: GenerationStatus::Generated,
            text: Some(r.text.clone()),
            finish_reason: Some(r.finish_reason.clone()),
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            latency_ms,
            attempts: out.attempts,
            error_kind: None,
            error_message: None,
            faults,
        },
        Err(e) => Generation {
            scenario_id: scenario_id.to_string(),
            status: GenerationStatus::Failed,
            text: None,
            finish_reason: None,
            input_tokens: Some(0),
            output_tokens: Some(0),
            latency_ms,
            attempts: out.attempts,
            error_kind: Some(e.kind),
            error_message: Some(e.message.clone()),
            faults,
        },
    }
}

/// Generates `items` through the model's `endpoints`, committing each result as it arrives through a writer thread
/// that owns the store. Stops taking new items once `max_cost` is reached.
#[allow(clippy::too_many_arguments)]
pub async fn generate(
    store_path: PathBuf,
    run_id: &str,
    endpoints: &[Endpoint],
    items: Vec<Item>,
    settings: GenerationSettings,
    options: GenerateOptions,
    counters: Arc<Counters>,
) -> Result<GenerationReport, StoreError> {
    let GenerateOptions { prices, max_cost, retry_failed, redact } = options;
    let started = Instant::now();
    counters.total.store(items.len(), Ordering::Relaxed);
    let (tx, rx) = mpsc::channel::<Generation>();
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
    let stop = Arc::new(AtomicBool::new(max_cost.is_some_and(|m| counters.cost_usd() >= m)));
    let unenforceable = Arc::new(AtomicBool::new(false));
    // Each endpoint has its own workers and gate; all take from one queue, so a slow or throttled
    // replica takes fewer items.
    let mut handles = Vec::new();
    // No more workers than items (a batched model takes tens of thousands at once).
    let workers = |e: &Endpoint| e.model.max_concurrency().clamp(1, counters.total.load(Ordering::Relaxed).max(1));
    for Endpoint { model, scheduler } in endpoints.iter().flat_map(|e| vec![e.clone(); workers(e)]) {
        let (queue, model, scheduler, tx, counters, stop, settings, unenforceable) = (
            queue.clone(),
            model.clone(),
            scheduler.clone(),
            tx.clone(),
            counters.clone(),
            stop.clone(),
            settings.clone(),
            unenforceable.clone(),
        );
        handles.push(tokio::spawn(async move {
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Some(item) = queue.lock().unwrap().pop_front() else { break };
                let request = ChatRequest { messages: item.prompt.clone(), settings: settings.clone() };
                let out = scheduler.call(model.as_ref(), &request).await;
                let mut row = to_row(&item.scenario_id, &out);
                if redact {
                    row.text = row.text.map(|t| redact_text(&t));
                    row.error_message = row.error_message.map(|t| redact_text(&t));
                }
                if row.status == GenerationStatus::Generated {
                    counters.generated.fetch_add(1, Ordering::Relaxed);
                } else {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                }
                match (row.input_tokens, row.output_tokens) {
                    (Some(i), Some(o)) => {
                        counters.input_tokens.fetch_add(i, Ordering::Relaxed);
                        counters.output_tokens.fetch_add(o, Ordering::Relaxed);
                        let micro = prices.map_or(0, |p| (p.cost(i, o) * 1e6).round() as u64);
                        let total = counters.cost_micro_usd.fetch_add(micro, Ordering::Relaxed) + micro;
                        if max_cost.is_some_and(|m| total as f64 / 1e6 >= m) {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    _ => {
                        counters.unknown_usage.fetch_add(1, Ordering::Relaxed);
                        if max_cost.is_some() && !prices.is_some_and(|p| p.free()) {
                            unenforceable.store(true, Ordering::Relaxed);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
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
    let stopped = (left > 0).then(|| {
        if unenforceable.load(Ordering::Relaxed) {
            "the server reported no token usage for an answer, so the cost limit cannot be enforced".to_string()
        } else {
            format!("the cost limit was reached (${:.4} spent)", counters.cost_usd())
        }
    });
    tokio::task::spawn_blocking(move || writer.join().expect("the store writer panicked")).await.expect("join")?;
    let mut faults = BTreeMap::new();
    for e in endpoints {
        for (k, v) in e.scheduler.stats.faults() {
            *faults.entry(k.as_str().to_string()).or_default() += v;
        }
    }
    Ok(GenerationReport {
        attempted: counters.done(),
        generated: counters.generated.load(Ordering::Relaxed),
        failed: counters.failed.load(Ordering::Relaxed),
        left_by_cost_limit: left,
        stopped,
        faults,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}
