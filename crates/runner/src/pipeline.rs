//! The whole run from one entry point: plan (or rebuild a stored run from its specification) →
//! generate → score → assess → summarise → report.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use h2htalk_report::{ReportPaths, RunSummary};
use h2htalk_store::{RunSpec, RunStatus, Store};

use crate::assess::{Assessment, assess};
use crate::generate::{Counters, GenerateOptions, GenerationReport, generate};
use crate::models::CacheOptions;
use crate::plan::{NewRun, Planned, Resume, Suites, create, plan_resume, prepare};
use crate::progress::{Lane, Phase};
use crate::score::score_run;
use crate::scorer::{CacheState, ScoringService};
use crate::{Result, RunError};

/// Where a run goes and where it keeps its progress.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// The run store (SQLite).
    pub db: PathBuf,
    /// Where the run's report goes (default: `reports/RUN_ID/` beside the store).
    pub report_dir: Option<PathBuf>,
    /// Where the run keeps its phase and generation counters for a display (none: nobody watches).
    pub lane: Option<Arc<Lane>>,
    /// Told a sweep's lanes, one per model, once the sweep knows its models (to show them).
    pub on_lanes: Option<OnLanes>,
    /// The process's scoring service, shared by every run of a sweep (none: the run makes its own,
    /// without an encoding cache).
    pub scoring: Option<Arc<ScoringService>>,
    /// The suites loaded so far, shared by every run of a sweep (none: the run loads its own).
    pub suites: Option<Arc<Suites>>,
    /// How the answer cache is used (default: on).
    pub cache: CacheOptions,
    /// A sweep: how many of its runs plan, generate and score at once, the others waiting their
    /// turn (none: [`crate::sweep::PARALLEL_RUNS`]).
    pub parallel_runs: Option<usize>,
}

/// What a sweep tells its lanes to ([`RunOptions::on_lanes`]).
pub type OnLanes = Arc<dyn Fn(Vec<Arc<Lane>>) + Send + Sync>;

/// A new run, or a stored one to continue.
pub enum Start {
    New(Box<NewRun>),
    Resume(Resume),
}

/// What a run did.
pub struct Outcome {
    pub run_id: String,
    pub spec: RunSpec,
    pub status: RunStatus,
    /// What the generation phase of this call did (`None` when nothing was left to generate).
    pub generation: Option<GenerationReport>,
    /// Items still without a result.
    pub pending: usize,
    pub summary: RunSummary,
    /// Cost of the answers whose usage is known, under the run's prices; `None` when the model's
    /// price is not set.
    pub cost_usd: Option<f64>,
    pub assessment: Assessment,
    pub report: ReportPaths,
    /// The model's label, for messages.
    pub model: String,
    /// The encoding cache after this run scored (none: no cache, or no neural metrics).
    pub encoding_cache: Option<CacheState>,
}

/// Runs the pipeline: every stage from one call, the store opened once.
pub async fn execute(start: Start, options: &RunOptions, on_start: impl FnOnce(&str, usize, &str)) -> Result<Outcome> {
    let lane = options.lane.clone();
    let phase = |p: Phase| {
        if let Some(l) = &lane {
            l.set(p)
        }
    };
    phase(Phase::Plan);
    let service = options.scoring.clone().unwrap_or_else(|| ScoringService::new(None));
    let suites = options.suites.clone().unwrap_or_default();
    let mut store = Store::open(&options.db)?;
    let (planned, neural) = match start {
        Start::New(new) => new_run(&mut store, prepare(&new, &suites)?, &service)?,
        Start::Resume(r) => {
            let planned = plan_resume(&mut store, &r, &suites)?;
            crate::assess::validate(planned.spec.judge.as_ref(), planned.spec.simulation.as_ref())?;
            let neural = service.models(&planned.spec.scoring)?;
            (planned, neural)
        }
    };
    let Planned { run_id, spec, suite, prompts, judge_texts, resolved, pending: items, retry_failed } = planned;
    let cache = CacheOptions { redact: spec.redact, sample: spec.sample, ..options.cache.clone() };
    let model = resolved.model.id().to_string();
    on_start(&run_id, items.len(), &model);

    let generation = if items.is_empty() {
        None
    } else {
        phase(Phase::Generate);
        let endpoints = resolved.endpoints(&options.db, &run_id, &cache)?;
        let schedulers: Vec<_> = endpoints.iter().map(|e| e.scheduler.clone()).collect();
        let counters = Arc::new(Counters::default());
        counters.total.store(items.len(), Ordering::Relaxed);
        if let (Some(limit), None) = (spec.max_cost_usd, spec.prices) {
            return Err(RunError::Usage(format!(
                "a cost limit (${limit}) needs the model's prices, and {} has none set: give its [[model]] entry \
                 price_input_per_million and price_output_per_million (0 for a free model)",
                spec.model_id
            )));
        }
        // A resumed run knows what it has spent: the cost limit counts on from there.
        let spent = spent_usd(&store, &run_id, &spec)?;
        counters.cost_micro_usd.store((spent * 1e6).round() as u64, Ordering::Relaxed);
        if let Some(l) = &lane {
            l.attach(counters.clone(), schedulers);
        }
        let result = generate(
            PathBuf::from(store.path()),
            &run_id,
            &endpoints,
            items,
            spec.request_settings(),
            GenerateOptions { prices: spec.prices, max_cost: spec.max_cost_usd, retry_failed, redact: spec.redact },
            counters,
        )
        .await;
        Some(result?)
    };

    let pending = crate::generate::pending(&store, &run_id, false)?.len();
    phase(Phase::Score);
    // In the process's turn: one run's encodings in memory at a time.
    service.in_turn(|| {
        score_run(&mut store, &run_id, spec.scoring.profile, neural.as_deref(), &spec.suite.label())?;
        crate::baselines::ensure_baselines(&mut store, &run_id, &suite, spec.scoring.profile, neural.as_deref())
    })?;
    let encoding_cache = neural.as_ref().and(service.cache_state());
    let assessment =
        assess(&mut store, &run_id, &spec, &suite, &prompts, &judge_texts, &resolved, &options.cache, lane.as_deref())
            .await?;
    phase(Phase::Report);
    let summary = h2htalk_report::summarize(&store, &run_id)?;
    let status = if pending > 0 {
        RunStatus::Incomplete
    } else if summary.all.failed > 0 {
        RunStatus::CompleteWithFailures
    } else {
        RunStatus::Complete
    };
    store.set_status(&run_id, status)?;
    let cost_usd = spec.prices.map(|p| p.cost(summary.input_tokens, summary.output_tokens));
    let report_dir = options
        .report_dir
        .clone()
        .unwrap_or_else(|| options.db.parent().unwrap_or(std::path::Path::new(".")).join("reports").join(&run_id));
    let report = h2htalk_report::write_report(&store, std::slice::from_ref(&run_id), &report_dir)?;
    phase(Phase::Done);
    Ok(Outcome {
        run_id,
        spec,
        status,
        generation,
        pending,
        summary,
        cost_usd,
        assessment,
        report,
        model,
        encoding_cache,
    })
}

/// Refuses what cannot run before a run row exists (the assessment's settings, the metric
/// models), then stores the prepared run.
fn new_run(
    store: &mut Store,
    prepared: Planned,
    service: &ScoringService,
) -> Result<(Planned, Option<Arc<h2htalk_neural::NeuralSetup>>)> {
    let spec = &prepared.spec;
    crate::assess::validate(spec.judge.as_ref(), spec.simulation.as_ref())?;
    crate::assess::validate_panel(&spec.judges())?;
    if spec.judge.is_none() && (!spec.panel.is_empty() || spec.judge_validity.is_some()) {
        return Err(RunError::Usage("--judge-validity and a panel need --judge SPEC".into()));
    }
    let neural = service.models(&spec.scoring)?;
    Ok((create(store, prepared)?, neural))
}

/// What a run has spent so far on the answers whose usage is known.
fn spent_usd(store: &Store, run_id: &str, spec: &RunSpec) -> Result<f64> {
    let (mut input, mut output) = (0, 0);
    for g in store.generations(run_id)? {
        input += g.input_tokens.unwrap_or(0);
        output += g.output_tokens.unwrap_or(0);
    }
    Ok(spec.prices.map_or(0.0, |p| p.cost(input, output)))
}

impl From<h2htalk_neural::NeuralError> for RunError {
    fn from(e: h2htalk_neural::NeuralError) -> Self {
        RunError::Neural(e)
    }
}
