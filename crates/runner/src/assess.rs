//! What a run does after the overlap metrics: format checks (always), the SAP safety score (when
//! the safety set ran), the LLM judge (`judge` in the run specification) or a panel of judges
//! (`judge` and `panel`) with their agreement, the judge validity check (`judge_validity`) and the
//! user simulator (`simulation`) and the memory suite (`memory`).

use h2htalk_data::Suite;
use h2htalk_judge::{
    JudgeHandle, JudgeSettings, JudgeTexts, MemorySetup, SimulationSetup, check_run, judge_run, memory_run,
    reference_sap_run, safety_run, simulate, validity_run,
};
use h2htalk_llm::{GenerationSettings, ModelRef, Scheduler};
use h2htalk_prompt::Prompts;
use h2htalk_report::compute::validity::ValidityReport;
use h2htalk_report::{Bootstrap, RunAssessment};
use h2htalk_store::{JudgeSpec, ModelRequest, Prices, RunSpec, SAFETY_GROUP, SimulationSpec, Store};

use crate::models::{CacheOptions, Resolved, resolve};
use crate::progress::{Lane, Phase};
use crate::{Result, RunError};

/// Everything the assessment found, read back from the store with the report's own computation
/// (what `runs show` and the report print, so that the figures cannot differ).
#[derive(serde::Serialize)]
pub struct Assessment {
    #[serde(flatten)]
    pub summary: RunAssessment,
}

struct Opened {
    resolved: Resolved,
    scheduler: Scheduler,
    /// The prices configured for it, recorded with its tokens: a `[[model]]` entry's prices, 0 for a
    /// local model; `None` (not set) for `openai:NAME` given on the command line, which has none.
    prices: Option<Prices>,
}

/// A judge or simulator model: its own base URL and key, else those of the model under test.
fn open(spec: &ModelRef, base_url: Option<&str>, api_key_env: Option<&str>, run: &ModelRequest) -> Result<Opened> {
    let request = ModelRequest {
        spec: spec.clone(),
        config: run.config.clone(),
        base_url: base_url.map(str::to_string).or_else(|| run.base_url.clone()),
        api_key_env: api_key_env.map(str::to_string).or_else(|| run.api_key_env.clone()),
        // `--batch` sends the judges' requests through batches too, where they have a Batch API.
        batch: run.batch && !matches!(spec, ModelRef::Local(_)),
    };
    let resolved = resolve(&request)?;
    let scheduler = resolved.scheduler();
    let prices = helper_prices(spec, &resolved);
    Ok(Opened { resolved, scheduler, prices })
}

/// The prices of a helper model (a judge, the simulated user) as configured: a `[[model]]`
/// entry's (`None` when it sets none), 0 for a local model, `None` (not set) for `openai:NAME` given
/// on the command line.
pub fn helper_prices(spec: &ModelRef, resolved: &Resolved) -> Option<Prices> {
    if matches!(spec, ModelRef::OpenAi(_)) { None } else { resolved.prices() }
}

/// Refuses combinations that cannot work, before anything is generated.
pub fn validate(judge: Option<&JudgeSpec>, simulation: Option<&SimulationSpec>) -> Result<()> {
    if let Some(sim) = simulation
        && sim.n > 0
        && sim.simulator.is_none()
        && judge.is_none()
    {
        return Err(RunError::Usage(
            "--simulate needs a model to play the user: give --simulator SPEC or --judge SPEC".into(),
        ));
    }
    Ok(())
}

/// Refuses a panel that names one judge twice (their judgments would be stored as one judge's).
pub fn validate_panel(judges: &[&JudgeSpec]) -> Result<()> {
    for (i, j) in judges.iter().enumerate() {
        if judges[..i].iter().any(|k| k.spec == j.spec) {
            return Err(RunError::Usage(format!(
                "--judge {} is given twice; each judge of a panel must be a different model (a judge's scores are \
                 stored under its name)",
                j.spec
            )));
        }
    }
    Ok(())
}

/// The judge's settings from its specification: temperature 0, its seed, its token limit.
pub fn judge_settings(j: &JudgeSpec) -> JudgeSettings {
    let mut settings = JudgeSettings::pinned(j.seed);
    if let Some(n) = j.max_tokens {
        settings.generation.max_tokens = n;
    }
    settings
}

/// Opens a judge model: its own base URL and key, else those of `run` (the model under test, or
/// for `judge validate` a request holding only the config file).
fn open_judge(j: &JudgeSpec, run: &ModelRequest) -> Result<Opened> {
    open(&j.spec, j.base_url.as_deref(), j.api_key_env.as_deref(), run)
        .map_err(|e| RunError::Model(format!("--judge {}: {e}", j.spec)))
}

/// `h2htalk judge validate`: the judge validity check of one judge on a suite (the embedded one when
/// `suite_dir` is `None`); `config` is the model config file. With `with_run` (a store and a run in
/// it) the comparisons and the judge's tokens are stored with that run, as `run --judge-validity`
/// stores them, and the suite defaults to the run's; without, nothing is stored (no run to count
/// them with). Returns the report and the judge's prices (`None`: not set).
pub async fn validate_judge(
    judge: &JudgeSpec,
    config: Option<std::path::PathBuf>,
    suite_dir: Option<&std::path::Path>,
    references: Option<&std::path::Path>,
    limit: Option<usize>,
    with_run: Option<(&mut Store, &str)>,
) -> Result<(ValidityReport, Option<Prices>)> {
    let run_spec = match &with_run {
        Some((store, run_id)) => Some(
            store
                .run(run_id)?
                .ok_or_else(|| {
                    RunError::Usage(format!(
                        "--run {run_id}: no such run in {}; `h2htalk runs list` shows the runs",
                        store.path()
                    ))
                })?
                .spec,
        ),
        None => None,
    };
    let suite_dir = suite_dir.or_else(|| run_spec.as_ref().and_then(|s| s.suite.dir.as_deref()));
    let references = references.or_else(|| run_spec.as_ref().and_then(|s| s.suite.references.as_deref()));
    let dir = h2htalk_data::suite::embedded::or_embedded(suite_dir)?;
    let suite = h2htalk_data::load_suite_with(&dir, references)?;
    let prompts = Prompts::load(&dir)?;
    let texts = JudgeTexts::load(&dir)?;
    let request = ModelRequest { spec: judge.spec.clone(), config, base_url: None, api_key_env: None, batch: false };
    let opened = open_judge(judge, &request)?;
    let settings = judge_settings(judge);
    let handle = JudgeHandle {
        model: opened.resolved.model.as_ref(),
        scheduler: &opened.scheduler,
        settings: &settings,
        texts: &texts,
        prices: opened.prices,
    };
    let run = match with_run {
        Some((store, run_id)) => validity_run(store, run_id, &suite, &prompts, handle, limit).await?,
        None => h2htalk_judge::validity::validate(&suite, &prompts, handle, limit).await?,
    };
    let mut report = ValidityReport::from_rows(&run.judge, run.rows);
    report.input_tokens = run.input_tokens;
    report.output_tokens = run.output_tokens;
    report.usage = run.usage;
    Ok((report, opened.prices))
}

/// Runs the assessment of `run_id`; `companion` is the model under test.
pub async fn assess(
    store: &mut Store,
    run_id: &str,
    spec: &RunSpec,
    suite: &Suite,
    prompts: &Prompts,
    texts: &JudgeTexts,
    companion: &Resolved,
    cache: &CacheOptions,
    lane: Option<&Lane>,
) -> Result<Assessment> {
    let phase = |p: Phase| {
        if let Some(l) = lane {
            l.set(p)
        }
    };
    check_run(store, run_id, suite)?;
    reference_sap_run(store, run_id, &texts.rules)?;
    let judge_spec = spec.judge.as_ref();
    let specs = spec.judges();
    validate_panel(&specs)?;
    let all_settings: Vec<JudgeSettings> = specs.iter().map(|j| judge_settings(j)).collect();
    let settings = all_settings.first().cloned().unwrap_or_else(|| JudgeSettings::pinned(0));
    let opened: Vec<Opened> = specs.iter().map(|j| open_judge(j, &spec.model)).collect::<Result<_>>()?;
    // A batched judge's calls go through batches journaled with the run.
    let db = std::path::PathBuf::from(store.path());
    let models: Vec<_> = opened.iter().map(|j| j.resolved.model_for(&db, run_id, cache)).collect::<Result<_>>()?;
    let handles: Vec<JudgeHandle> = opened
        .iter()
        .zip(&models)
        .zip(&all_settings)
        .map(|((j, model), settings)| JudgeHandle {
            model: model.as_ref(),
            scheduler: &j.scheduler,
            settings,
            texts,
            prices: j.prices,
        })
        .collect();
    // The first judge decides the safety statements and plays the user when no simulator is given.
    let judge = opened.first();
    let handle = handles.first().copied();
    if handle.is_some() {
        phase(Phase::Judge);
    }
    let has_safety = store.items(run_id)?.iter().any(|i| i.task == SAFETY_GROUP);
    if has_safety {
        safety_run(store, run_id, suite, texts, handle).await?;
    }
    for h in &handles {
        judge_run(store, run_id, *h).await?;
    }
    if let Some(v) = &spec.judge_validity {
        for h in &handles {
            validity_run(store, run_id, suite, prompts, *h, v.limit).await?;
        }
    }
    // Conversations and the memory suite's own mode wait for each answer of the companion: it is
    // asked directly, never through batches, within its configuration's retries and rate limits.
    let simulating = spec.simulation.as_ref().filter(|s| s.n > 0);
    let direct = match simulating.is_some() || spec.memory.is_some() {
        true => Some((companion.direct_model_for(&db, run_id, cache)?, companion.direct_scheduler())),
        false => None,
    };
    if let (Some(sim_spec), Some((companion_model, companion_scheduler))) = (simulating, &direct) {
        phase(Phase::Simulate);
        let own = match &sim_spec.simulator {
            Some(s) => {
                Some(open(s, None, None, &spec.model).map_err(|e| RunError::Model(format!("--simulator {s}: {e}")))?)
            }
            None => None,
        };
        let sim = own.as_ref().or(judge).ok_or_else(|| {
            RunError::Usage("--simulate needs a model to play the user: give --simulator SPEC or --judge SPEC".into())
        })?;
        let profiles = suite.profiles()?;
        // Conversations go turn by turn, each turn waiting for the last: never through batches.
        let sim_scheduler = sim.resolved.direct_scheduler();
        let simulator = sim.resolved.direct_model_for(&db, run_id, cache)?;
        let setup = SimulationSetup {
            suite,
            prompts,
            sap: spec.sap.mode,
            companion: companion_model.as_ref(),
            companion_scheduler,
            companion_settings: spec.request_settings(),
            simulator: simulator.as_ref(),
            simulator_scheduler: &sim_scheduler,
            simulator_settings: GenerationSettings {
                temperature: 0.7,
                max_tokens: settings.generation.max_tokens,
                ..GenerationSettings::default()
            },
            simulator_prices: sim.prices,
            companion_prices: spec.prices,
            judge: handle,
            max_parse_attempts: settings.max_parse_attempts,
            texts,
            redact: spec.redact,
        };
        simulate(store, run_id, &setup, &profiles, sim_spec.n, judge_spec.map_or(0, |j| j.seed)).await?;
    }
    if let (Some(mem_spec), Some((companion_model, companion_scheduler))) = (&spec.memory, &direct) {
        phase(Phase::Memory);
        let memory = suite.memory()?.ok_or_else(|| {
            RunError::Usage(format!(
                "{}: this suite has no memory suite (memory/); --memory needs a suite that has",
                suite.dir.display()
            ))
        })?;
        let setup = MemorySetup {
            suite,
            prompts,
            sap: spec.sap.mode,
            companion: companion_model.as_ref(),
            companion_scheduler,
            companion_settings: spec.request_settings(),
            companion_prices: spec.prices,
            judge: handle,
            texts,
            redact: spec.redact,
        };
        memory_run(store, run_id, &setup, &memory, mem_spec).await?;
    }
    Ok(Assessment { summary: h2htalk_report::assess_run(store, run_id, &Bootstrap::default())? })
}
