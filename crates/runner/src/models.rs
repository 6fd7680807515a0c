//! Model specs (`local:...`, `openai:NAME`, a name in `h2htalk.toml`) resolved into chat models,
//! with their schedulers; and the neural metric models a run scores with.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use h2htalk_llm::config::command_line_model;
use h2htalk_llm::{
    BatchClient, BatchSettings, CacheMode, CacheUse, CachedModel, ChatModel, Config, Explain, ModelConfig, ModelRef,
    OpenAiClient, RateLimits, RetryPolicy, Scheduler, model_identity,
};
use h2htalk_metrics::Profile;
use h2htalk_neural::NeuralSetup;
use h2htalk_store::{MetricModels, MetricSet, ModelRequest, Prices, StoreCache, StoreJournal};
use serde_json::{Value, json};

use crate::{Result, RunError};

/// The embedded default model.
pub const DEFAULT_MODEL: &str = "local:gemma3-270m";

/// [`DEFAULT_MODEL`], typed.
pub fn default_model() -> ModelRef {
    ModelRef::parse(DEFAULT_MODEL).expect("the default model parses")
}

/// How the answer cache is used by a run's or a comparison's calls.
#[derive(Clone, Default)]
pub struct CacheOptions {
    pub mode: CacheMode,
    /// Told why each call was not found (`--explain-cache`).
    pub explain: Option<Explain>,
    /// The calls are a redacted run's: what is kept is masked, apart from unmasked answers.
    pub redact: bool,
    /// The sample index of the run's calls (`--epochs`), part of the cache key.
    pub sample: u32,
}

impl std::fmt::Debug for CacheOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheOptions")
            .field("mode", &self.mode)
            .field("explain", &self.explain.is_some())
            .field("redact", &self.redact)
            .field("sample", &self.sample)
            .finish()
    }
}

/// One endpoint of a model with the scheduler that adapts to it.
#[derive(Clone)]
pub struct Endpoint {
    pub model: Arc<dyn ChatModel>,
    pub scheduler: Arc<Scheduler>,
}

/// A resolved model and what a run records about its configuration.
pub struct Resolved {
    pub model: Arc<dyn ChatModel>,
    /// Generation settings, limits and prices; `None` for local models (defaults apply).
    pub config: Option<ModelConfig>,
    /// The client and its Batch API settings, when the model's requests go through batches.
    pub batch: Option<(Arc<OpenAiClient>, BatchSettings)>,
}

impl Resolved {
    /// The scheduler of this model's endpoints: its concurrency, retries and rate limits.
    /// A batched model's calls are not tried again: a failed line of a batch is a failed item, asked
    /// again by `--retry-failed` (the Batch API's own requests are retried when they fail).
    pub fn scheduler(&self) -> Scheduler {
        self.scheduler_for(self.batch.is_some())
    }

    /// The scheduler of calls made to the model directly, batched or not (a simulated
    /// conversation's turns, which cannot wait for a batch each).
    pub fn direct_scheduler(&self) -> Scheduler {
        self.scheduler_for(false)
    }

    fn scheduler_for(&self, batched: bool) -> Scheduler {
        let cfg = self.config.as_ref();
        let attempts = if batched { 1 } else { cfg.map_or(5, |c| c.max_attempts) };
        let policy = RetryPolicy { max_attempts: attempts, ..RetryPolicy::default() };
        let limits = RateLimits {
            requests_per_minute: cfg.and_then(|c| c.requests_per_minute),
            tokens_per_minute: cfg.and_then(|c| c.tokens_per_minute),
        };
        // A batched model's calls wait together: as many at once as a batch may hold.
        let concurrency = match (&self.batch, batched) {
            (Some((_, b)), true) => b.max_requests,
            _ => self.model.max_concurrency(),
        };
        Scheduler::new(concurrency, policy, limits)
    }

    /// The model to send the calls of `scope` (a run id, or a comparison's) to: through the Batch
    /// API for a batched model, its batches journaled in the store at `store`; the model itself
    /// otherwise; its answers looked up in and kept in the store's answer cache as `cache` says.
    pub fn model_for(&self, store: &Path, scope: &str, cache: &CacheOptions) -> Result<Arc<dyn ChatModel>> {
        let model = match &self.batch {
            None => self.model.clone(),
            Some((client, settings)) => {
                let id = client.id();
                let journal = StoreJournal {
                    path: store.to_path_buf(),
                    scope: scope.to_string(),
                    model: format!("{}@{}", id.name, id.endpoint),
                };
                Arc::new(BatchClient::new(client.clone(), settings.clone(), Arc::new(journal)))
            }
        };
        self.cached(model, store, scope, cache)
    }

    /// The model asked directly, never in batches (a simulated conversation's turns, which cannot
    /// wait for a batch each), with the answer cache as `cache` says.
    pub fn direct_model_for(&self, store: &Path, scope: &str, cache: &CacheOptions) -> Result<Arc<dyn ChatModel>> {
        self.cached(self.model.clone(), store, scope, cache)
    }

    /// `model` (this model, a replica or its batch client) behind the answer cache, its answers kept
    /// under this model's identity.
    fn cached(
        &self,
        model: Arc<dyn ChatModel>,
        store: &Path,
        scope: &str,
        cache: &CacheOptions,
    ) -> Result<Arc<dyn ChatModel>> {
        if cache.mode == CacheMode::Off {
            return Ok(model);
        }
        let identity = model_identity(&self.model.id());
        let kept = Arc::new(StoreCache::open(store, scope)?);
        let how = CacheUse { mode: cache.mode, redact: cache.redact, sample: cache.sample };
        Ok(Arc::new(CachedModel::new(model, identity, kept, how, cache.explain.clone())))
    }

    /// What a batched token costs as a share of the list prices (`None`: not batched).
    pub fn batch_price_factor(&self) -> Option<f64> {
        self.batch.as_ref().map(|(_, s)| s.price_factor)
    }

    /// Where the items go: one endpoint per replica (`base_urls`), each with its own client and
    /// scheduler, so that a throttled or failing replica slows only itself; one endpoint otherwise,
    /// and for a batched model (its batches go to the first base URL, journaled under `scope` in
    /// the store at `store`).
    pub fn endpoints(&self, store: &Path, scope: &str, cache: &CacheOptions) -> Result<Vec<Endpoint>> {
        let replicas = self.config.as_ref().map(|c| c.base_urls()).unwrap_or_default();
        if replicas.len() < 2 || self.batch.is_some() {
            let model = self.model_for(store, scope, cache)?;
            return Ok(vec![Endpoint { model, scheduler: Arc::new(self.scheduler()) }]);
        }
        let cfg = self.config.as_ref().expect("replicas come from a config");
        replicas
            .into_iter()
            .map(|url| {
                let one = ModelConfig { base_url: Some(url), base_urls: Vec::new(), ..cfg.clone() };
                let model: Arc<dyn ChatModel> = Arc::new(OpenAiClient::new(&one)?);
                let resolved = Resolved { model: model.clone(), config: Some(one), batch: None };
                // Every replica keeps its answers under the model's identity.
                let model = self.cached(model, store, scope, cache)?;
                Ok(Endpoint { model, scheduler: Arc::new(resolved.scheduler()) })
            })
            .collect()
    }

    /// The model's prices: a config entry's as given (`None` when it sets none, as for
    /// `openai:NAME` on the command line), 0 for a local model (free); for a batched model, times
    /// its batch price factor.
    pub fn prices(&self) -> Option<Prices> {
        let factor = self.batch_price_factor().unwrap_or(1.0);
        match &self.config {
            None => Some(Prices::default()),
            Some(c) => {
                c.prices().map(|(i, o)| Prices { input_per_million: i * factor, output_per_million: o * factor })
            }
        }
    }

    /// The model's configuration as recorded with a run: header values and keys never.
    pub fn recorded_config(&self) -> Option<Value> {
        self.config.as_ref().map(|c| {
            let mut v = serde_json::to_value(c).expect("config serialises");
            v["headers"] = json!(c.headers.keys().collect::<Vec<_>>());
            v
        })
    }
}

/// Where `--config` defaults to when it exists.
pub fn default_config_path() -> Option<PathBuf> {
    Path::new("h2htalk.toml").exists().then(|| PathBuf::from("h2htalk.toml"))
}

/// Resolves a model request into a chat model.
pub fn resolve(request: &ModelRequest) -> Result<Resolved> {
    let spec = &request.spec;
    let mut cfg = match spec {
        ModelRef::Local(_) if request.batch => {
            return Err(RunError::Usage(format!(
                "--batch sends requests through an OpenAI-compatible Batch API; {spec} is a local model, which has none"
            )));
        }
        ModelRef::Local(_) => return Ok(Resolved { model: local_open(spec)?, config: None, batch: None }),
        ModelRef::OpenAi(name) => {
            let Some(url) = request.base_url.as_deref() else {
                return Err(RunError::Usage(format!(
                    "--model openai:{name} needs --base-url (e.g. http://127.0.0.1:8000/v1), or an entry in h2htalk.toml"
                )));
            };
            command_line_model(name, url, request.api_key_env.as_deref())
                .map_err(|e| RunError::Model(format!("--model {spec}: {e}")))?
        }
        ModelRef::Named(name) => {
            let path = request.config.clone().or_else(default_config_path).ok_or_else(|| {
                RunError::Usage(format!(
                    "--model {spec}: not `local:...` or `openai:...`, and no h2htalk.toml to look it up in (give --config FILE)"
                ))
            })?;
            let cfg = Config::load(&path)?;
            let names: Vec<&str> = cfg.model.iter().map(|m| m.name.as_str()).collect();
            cfg.get(name).cloned().ok_or_else(|| {
                RunError::Usage(format!(
                    "{}: no [[model]] named `{name}` (models: {})",
                    path.display(),
                    names.join(", ")
                ))
            })?
        }
    };
    cfg.batch |= request.batch;
    let client = Arc::new(OpenAiClient::new(&cfg)?);
    let batch = cfg.batch_settings().map(|s| (client.clone(), s));
    Ok(Resolved { model: client, config: Some(cfg), batch })
}

/// Loads a local GGUF model (a few seconds; blocking).
fn local_open(spec: &ModelRef) -> Result<Arc<dyn ChatModel>> {
    let open = || h2htalk_local::open(spec);
    let model = match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(open),
        _ => open(),
    };
    model.map_err(|e| RunError::Model(e.to_string()))
}

/// The neural metric models of `metrics` (none for `lexical`), loaded before anything is
/// generated so that a missing model stops the run at once.
pub fn metric_models(metrics: MetricSet, models: &MetricModels, profile: Profile) -> Result<Option<NeuralSetup>> {
    match metrics {
        MetricSet::All => NeuralSetup::load(
            profile,
            models.bertscore_model.as_deref(),
            models.bertscore_layer,
            models.embedding_model.as_deref(),
        )
        .map(Some)
        .map_err(RunError::MetricModels),
        MetricSet::Lexical if models.any() => Err(RunError::Usage(
            "--bertscore-model, --bertscore-layer and --embedding-model apply to --metrics all".into(),
        )),
        MetricSet::Lexical => Ok(None),
    }
}
