//! Planning a run: a new run's specification and items from what was asked, or a stored run's
//! specification and pending items for `--resume`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use h2htalk_data::redact::redact;
use h2htalk_data::suite::embedded;
use h2htalk_data::{SapMode, Suite, Task, load_suite_with};
use h2htalk_llm::GenerationSettings;
use h2htalk_metrics::{Profile, lexical_signature};
use h2htalk_prompt::Prompts;
use h2htalk_store::{
    Item, JudgeSpec, MemorySpec, MetricModels, MetricSet, ModelRequest, RunSpec, SAFETY_GROUP, SapRef, ScoringSpec,
    Selection, SimulationSpec, Store, SuiteRef, ValiditySpec,
};

use crate::models::{Resolved, resolve};
use crate::{Result, RunError};

/// Default answer length for local models: small models on CPUs are slow and rarely stop early.
pub const LOCAL_MAX_TOKENS: u32 = 64;

/// What a new run is asked to be.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NewRun {
    /// The suite directory; `None`: the suite embedded in the binary.
    pub suite_dir: Option<PathBuf>,
    /// The official data directory for a suite of `official` scenarios (default: found beside the
    /// suite, see `h2htalk_data::suite::default_references`).
    pub references: Option<PathBuf>,
    pub selection: Selection,
    pub sap: SapMode,
    pub model: ModelRequest,
    /// Overrides of the model entry's settings.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub profile: Profile,
    pub metrics: MetricSet,
    pub metric_models: MetricModels,
    pub max_cost_usd: Option<f64>,
    pub redact: bool,
    pub judge: Option<JudgeSpec>,
    /// Further judges: with `judge`, a panel.
    pub panel: Vec<JudgeSpec>,
    /// Run the judge validity check with every judge.
    pub judge_validity: Option<ValiditySpec>,
    pub simulation: Option<SimulationSpec>,
    /// The memory suite (`--memory`); absent in sweeps stored before it.
    #[serde(default)]
    pub memory: Option<MemorySpec>,
    /// Which sample of the protocol the run is (`--epochs`); absent (0) in sweeps stored before.
    #[serde(default)]
    pub sample: u32,
}

impl NewRun {
    /// The new run that would have the protocol of the stored `spec` (another sample of it, with
    /// `sample` set): what `run --epochs` gives a sweep of one model.
    pub fn from_spec(spec: &RunSpec) -> NewRun {
        NewRun {
            suite_dir: spec.suite.dir.clone(),
            references: spec.suite.references.clone(),
            selection: spec.selection.clone(),
            sap: spec.sap.mode,
            model: spec.model.clone(),
            max_tokens: Some(spec.settings.max_tokens),
            temperature: Some(spec.settings.temperature),
            profile: spec.scoring.profile,
            metrics: spec.scoring.metrics,
            metric_models: spec.scoring.models.clone(),
            max_cost_usd: spec.max_cost_usd,
            redact: spec.redact,
            judge: spec.judge.clone(),
            panel: spec.panel.clone(),
            judge_validity: spec.judge_validity.clone(),
            simulation: spec.simulation.clone(),
            memory: spec.memory.clone(),
            sample: spec.sample,
        }
    }
}

/// What `--resume` may change about a stored run.
#[derive(Clone, Debug, Default)]
pub struct Resume {
    pub run_id: String,
    /// Generate again only the items recorded as failed.
    pub retry_failed: bool,
    /// Read the official references from here instead of the recorded directory (recorded).
    pub references: Option<PathBuf>,
    /// Resolve the model through another endpoint, key or config (the model itself must be the same).
    pub model: ModelOverrides,
    /// A new cost limit (recorded with the run); otherwise the recorded one applies again.
    pub max_cost_usd: Option<f64>,
    /// Judge or simulate with these instead of the recorded ones (recorded with the run). A new
    /// `judge` replaces the recorded panel too (with `panel`, possibly empty).
    pub judge: Option<JudgeSpec>,
    pub panel: Vec<JudgeSpec>,
    /// Run the judge validity check (recorded with the run).
    pub judge_validity: Option<ValiditySpec>,
    pub simulation: Option<SimulationSpec>,
    /// Answer the memory suite (recorded with the run).
    pub memory: Option<MemorySpec>,
    /// What the command line asked for that a run cannot change; refused when it differs.
    pub metrics: Option<MetricSet>,
    pub metric_models: Option<MetricModels>,
    pub redact: bool,
}

/// Parts of the recorded model request that `--resume` replaces (each only when given).
#[derive(Clone, Debug, Default)]
pub struct ModelOverrides {
    pub spec: Option<h2htalk_llm::ModelRef>,
    pub config: Option<PathBuf>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
}

/// A planned run: its specification, the items still to generate, and the resolved model.
pub struct Planned {
    pub run_id: String,
    pub spec: RunSpec,
    pub suite: Arc<Suite>,
    pub prompts: Prompts,
    /// The judge's texts and rules of the suite (their hash is in the specification).
    pub judge_texts: h2htalk_judge::JudgeTexts,
    pub resolved: Resolved,
    pub pending: Vec<Item>,
    pub retry_failed: bool,
}

/// The items of a run, in order: sub-task scenarios (suite order, `limit` per sub-task), then the
/// safety set if selected; each with its rendered prompt.
pub fn plan_items(suite: &Suite, prompts: &Prompts, selection: &Selection, sap: SapMode) -> Result<Vec<Item>> {
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
        items.push(Item {
            scenario_id: s.id.clone(),
            task: if safety { SAFETY_GROUP.into() } else { s.task.stem().into() },
            lang: s.lang,
            ord: items.len(),
            prompt: prompts.render(suite, s, sap)?,
            reference: s.reference.clone(),
        });
    }
    Ok(items)
}

/// A new run id: time and a random suffix.
pub fn new_run_id() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    let t = h2htalk_store::format_utc(secs).replace(['-', ':'], "");
    format!("r{}-{:04x}", t.trim_end_matches('Z').replace('T', "-"), fastrand::u16(..))
}

/// Plans a new run and stores it (with its items) under a new id.
pub fn plan_new(store: &mut Store, new: &NewRun) -> Result<Planned> {
    create(store, prepare(new, &Suites::default())?)
}

/// Stores a prepared run (with its items) under a new id.
pub fn create(store: &mut Store, prepared: Planned) -> Result<Planned> {
    let run_id = new_run_id();
    store.create_run(&run_id, &prepared.spec, &prepared.pending)?;
    Ok(Planned { run_id, ..prepared })
}

/// The suites a process has loaded, by directory and references: every run that plans from the
/// same ones (the runs of a sweep) shares one copy.
#[derive(Default)]
pub struct Suites(Mutex<Vec<((PathBuf, Option<PathBuf>), Arc<Suite>)>>);

impl Suites {
    /// The suite in `dir` with the official `references`, loaded on the first call.
    pub fn load(&self, dir: &Path, references: Option<&Path>) -> Result<Arc<Suite>> {
        let key = (dir.to_path_buf(), references.map(Path::to_path_buf));
        let mut loaded = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, suite)) = loaded.iter().find(|(k, _)| *k == key) {
            return Ok(suite.clone());
        }
        let suite = Arc::new(load_suite_with(dir, references)?);
        loaded.push((key, suite.clone()));
        Ok(suite)
    }
}

/// A new run's specification and items, with its model resolved, before anything is stored (its
/// `run_id` is empty until [`create`]): what a sweep compares with stored runs to reuse them. The
/// suite comes from `suites`.
pub fn prepare(new: &NewRun, suites: &Suites) -> Result<Planned> {
    let dir = embedded::or_embedded(new.suite_dir.as_deref())?;
    let suite = suites.load(&dir, new.references.as_deref())?;
    let prompts = Prompts::load(&dir)?;
    let judge_texts = h2htalk_judge::JudgeTexts::load(&dir)?;
    if new.simulation.as_ref().is_some_and(|s| s.n > 0) && !suite.has_profiles() {
        return Err(RunError::Usage(format!(
            "{}: this suite has no simulator profiles (simulator/); --simulate needs a suite that has, such as the \
             embedded one",
            dir.display()
        )));
    }
    if new.memory.is_some() && !suite.has_memory() {
        return Err(RunError::Usage(format!(
            "{}: this suite has no memory suite (memory/); --memory needs a suite that has, such as the embedded one",
            dir.display()
        )));
    }
    let resolved = resolve(&new.model)?;
    let mut settings = resolved
        .config
        .as_ref()
        .map(|c| c.settings())
        .unwrap_or_else(|| GenerationSettings { max_tokens: LOCAL_MAX_TOKENS, ..GenerationSettings::default() });
    if let Some(m) = new.max_tokens {
        settings.max_tokens = m;
    }
    if let Some(t) = new.temperature {
        settings.temperature = t;
    }
    let mut items = plan_items(&suite, &prompts, &new.selection, new.sap)?;
    if new.redact {
        for item in &mut items {
            for m in &mut item.prompt {
                m.content = redact(&m.content);
            }
            item.reference = redact(&item.reference);
        }
    }
    if items.is_empty() {
        return Err(RunError::Usage("the selection has no scenarios (check --tasks and --limit)".into()));
    }
    let spec = RunSpec {
        h2htalk_version: h2htalk_metrics::VERSION.to_string(),
        suite: SuiteRef {
            dir: new.suite_dir.clone(),
            fingerprint: suite.fingerprint().to_string(),
            name: Some(suite.name.clone()),
            references: suite.official.as_ref().map(|o| o.dir.clone()),
        },
        selection: new.selection.clone(),
        templates_hash: prompts.template_hash().to_string(),
        judge_texts_hash: Some(judge_texts.hash().to_string()),
        sap: SapRef { mode: new.sap, version: prompts.sap().version.clone(), hash: prompts.sap().hash() },
        model: new.model.clone(),
        model_id: resolved.model.id(),
        model_config: resolved.recorded_config(),
        settings,
        prices: resolved.prices(),
        max_cost_usd: new.max_cost_usd,
        batch_price_factor: resolved.batch_price_factor(),
        scoring: ScoringSpec {
            profile: new.profile,
            signature: lexical_signature(new.profile),
            metrics: new.metrics,
            models: new.metric_models.clone(),
        },
        redact: new.redact,
        judge: new.judge.clone(),
        panel: new.panel.clone(),
        judge_validity: new.judge_validity.clone(),
        simulation: new.simulation.clone(),
        memory: new.memory.clone(),
        sample: new.sample,
    };
    Ok(Planned {
        run_id: String::new(),
        spec,
        suite,
        prompts,
        judge_texts,
        resolved,
        pending: items,
        retry_failed: false,
    })
}

/// Rebuilds a stored run from its specification, with the items it still needs.
pub fn plan_resume(store: &mut Store, resume: &Resume, suites: &Suites) -> Result<Planned> {
    let id = &resume.run_id;
    let row = store.run(id)?.ok_or_else(|| {
        RunError::Usage(format!("{}: no run `{id}`; `h2htalk runs list` shows the runs", store.path()))
    })?;
    let mut spec = row.spec;
    if let Some(asked) = resume.metrics.filter(|m| *m != spec.scoring.metrics) {
        return Err(RunError::Usage(format!(
            "run {id} is scored with --metrics {}, not {}; a run keeps its metric set",
            spec.scoring.metrics.name(),
            asked.name()
        )));
    }
    if let Some(models) = resume.metric_models.as_ref().filter(|m| m.any() && **m != spec.scoring.models) {
        return Err(RunError::Usage(format!(
            "run {id} is scored with other metric models ({:?}, not {models:?}); a run keeps its metric models",
            spec.scoring.models
        )));
    }
    if resume.redact && !spec.redact {
        return Err(RunError::Usage(format!(
            "run {id} was made without --redact; a run keeps its setting (start a new run with --redact)"
        )));
    }
    let o = &resume.model;
    let request = ModelRequest {
        spec: o.spec.clone().unwrap_or_else(|| spec.model.spec.clone()),
        config: o.config.clone().or_else(|| spec.model.config.clone()),
        base_url: o.base_url.clone().or_else(|| spec.model.base_url.clone()),
        api_key_env: o.api_key_env.clone().or_else(|| spec.model.api_key_env.clone()),
        // A run keeps how it sent its requests: a batched run polls its batches again.
        batch: spec.model.batch,
    };
    let resolved = resolve(&request)?;
    let now = resolved.model.id();
    if now.provider != spec.model_id.provider || now.name != spec.model_id.name {
        return Err(RunError::Usage(format!(
            "run {id} was made with {}, not {now}; resume it with the same model",
            spec.model_id
        )));
    }
    spec.model = request;
    if resume.max_cost_usd.is_some() {
        spec.max_cost_usd = resume.max_cost_usd;
    }
    if resume.judge.is_some() {
        spec.judge = resume.judge.clone();
        spec.panel = resume.panel.clone();
    }
    if resume.judge_validity.is_some() {
        spec.judge_validity = resume.judge_validity.clone();
    }
    if resume.simulation.is_some() {
        spec.simulation = resume.simulation.clone();
    }
    if resume.memory.is_some() {
        spec.memory = resume.memory.clone();
    }
    if resume.references.is_some() {
        spec.suite.references = resume.references.clone();
    }
    store.set_spec(id, &spec)?;
    let suite_dir = embedded::or_embedded(spec.suite.dir.as_deref())?;
    let suite = suites.load(&suite_dir, spec.suite.references.as_deref())?;
    if spec.suite.dir.is_none() && suite.fingerprint() != spec.suite.fingerprint {
        return Err(RunError::Usage(format!(
            "run {id} was planned from the suite embedded in another h2htalk build (fingerprint {}, this build \
             carries {}); resume it with that build",
            spec.suite.fingerprint,
            suite.fingerprint()
        )));
    }
    let prompts = Prompts::load(&suite_dir)?;
    let judge_texts = h2htalk_judge::JudgeTexts::load(&suite_dir)?;
    let pending = crate::generate::pending(store, id, resume.retry_failed)?;
    Ok(Planned {
        run_id: id.clone(),
        spec,
        suite,
        prompts,
        judge_texts,
        resolved,
        pending,
        retry_failed: resume.retry_failed,
    })
}
