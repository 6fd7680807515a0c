//! The run specification: everything that defines a run, as one typed value. It is written to the
//! store when a run starts and read back by `--resume`, which rebuilds the run from it.

use std::path::PathBuf;

use h2htalk_data::{SapMode, Task};
use h2htalk_llm::{GenerationSettings, ModelSpec};
use h2htalk_metrics::Profile;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Prices in USD per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Prices {
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_per_million + output as f64 * self.output_per_million) / 1e6
    }

    /// Whether tokens cost nothing (a local model): unknown usage is then free.
    pub fn free(&self) -> bool {
        self.input_per_million == 0.0 && self.output_per_million == 0.0
    }
}

/// Which scenarios a run takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selection {
    /// Sub-tasks to run (all when empty).
    pub tasks: Vec<Task>,
    /// At most this many scenarios per sub-task.
    pub limit: Option<usize>,
    /// Include the SAP safety set.
    pub safety: bool,
}

/// The suite a run was planned from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteRef {
    /// The directory, or `None` for the suite embedded in the binary.
    pub dir: Option<PathBuf>,
    pub fingerprint: String,
    /// The suite's name (`suite.json`); runs stored before names were recorded have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The official data directory the references of `official` scenarios were read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<PathBuf>,
}

impl SuiteRef {
    /// The suite's name and fingerprint as a scoring signature names them
    /// (`official-backfill@sha256:...`; `h2htalk@...` for a run stored before names were recorded).
    pub fn label(&self) -> String {
        format!("{}@{}", self.name.as_deref().unwrap_or(h2htalk_data::suite::DEFAULT_NAME), self.fingerprint)
    }
}

/// The SAP module a run used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SapRef {
    pub mode: SapMode,
    pub version: String,
    pub hash: String,
}

/// How the model under test was asked for (what `--resume` resolves again; never a key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// `local:...`, `openai:NAME` or a name in the config file.
    pub spec: String,
    pub config: Option<PathBuf>,
    pub base_url: Option<String>,
    /// The name of the environment variable holding the key (never the key).
    pub api_key_env: Option<String>,
}

/// The metrics a run is scored with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricSet {
    /// ROUGE and BLEU.
    Lexical,
    /// The lexical metrics, BERTScore, embedding similarity and the paper's composite.
    All,
}

impl std::str::FromStr for MetricSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "lexical" => Ok(MetricSet::Lexical),
            "all" => Ok(MetricSet::All),
            _ => Err(format!("`{s}`: expected `all` or `lexical`")),
        }
    }
}

impl MetricSet {
    pub fn name(self) -> &'static str {
        match self {
            MetricSet::Lexical => "lexical",
            MetricSet::All => "all",
        }
    }
}

/// The neural metric models (defaults: m3e-small from the setup script).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricModels {
    pub bertscore_model: Option<PathBuf>,
    pub bertscore_layer: Option<usize>,
    pub embedding_model: Option<PathBuf>,
}

impl MetricModels {
    pub fn any(&self) -> bool {
        self.bertscore_model.is_some() || self.bertscore_layer.is_some() || self.embedding_model.is_some()
    }
}

/// How a run is scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoringSpec {
    pub profile: Profile,
    /// The lexical scoring signature (the neural one is in each score row).
    pub signature: String,
    pub metrics: MetricSet,
    pub models: MetricModels,
}

/// The LLM judge of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSpec {
    pub spec: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub seed: u64,
    pub max_tokens: Option<u32>,
}

/// The user simulator of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationSpec {
    /// How many conversations.
    pub n: usize,
    /// The model that plays the user (`None`: the judge).
    pub simulator: Option<String>,
}

/// Everything that defines a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub h2htalk_version: String,
    pub suite: SuiteRef,
    pub selection: Selection,
    pub templates_hash: String,
    /// The judge's, safety rules' and simulator's texts (`judge/*.json`, `rules/safety.json`);
    /// `None` for runs stored before they were data.
    pub judge_texts_hash: Option<String>,
    pub sap: SapRef,
    pub model: ModelRequest,
    /// The model as resolved: provider, name, endpoint.
    pub model_id: ModelSpec,
    /// The model's config entry (header names only, never values or keys); `None` for local models.
    pub model_config: Option<Value>,
    pub settings: GenerationSettings,
    pub prices: Prices,
    /// Stop starting new items once the run's cost reaches this many USD.
    pub max_cost_usd: Option<f64>,
    pub scoring: ScoringSpec,
    /// Personal data masked before storage.
    pub redact: bool,
    pub judge: Option<JudgeSpec>,
    pub simulation: Option<SimulationSpec>,
}

impl RunSpec {
    /// The specification of a run stored by h2htalk before schema 2, from its provenance. Fields
    /// that release did not record take the values it used (`scoring.metrics` absent: lexical;
    /// `redact` absent: off); any other missing or unreadable field is an error naming it.
    pub fn from_v1_provenance(p: &Value) -> Result<RunSpec, String> {
        fn field<T: serde::de::DeserializeOwned>(p: &Value, pointer: &str) -> Result<T, String> {
            let v = p.pointer(pointer).ok_or_else(|| format!("field `{pointer}` is missing"))?;
            serde_json::from_value(v.clone()).map_err(|e| format!("field `{pointer}`: {e}"))
        }
        fn optional<T: serde::de::DeserializeOwned>(p: &Value, pointer: &str) -> Result<Option<T>, String> {
            match p.pointer(pointer) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| format!("field `{pointer}`: {e}")),
            }
        }
        let model_id: ModelSpec = field(p, "/model")?;
        let tasks: Vec<String> = field(p, "/selection/tasks")?;
        let tasks = tasks
            .iter()
            .map(|t| Task::from_stem(t).ok_or_else(|| format!("field `/selection/tasks`: unknown sub-task `{t}`")))
            .collect::<Result<_, _>>()?;
        let profile: String = field(p, "/scoring/profile")?;
        let model = match optional::<ModelRequest>(p, "/model_request")? {
            Some(m) => m,
            None => ModelRequest {
                spec: format!("{}:{}", model_id.provider, model_id.name),
                config: None,
                base_url: None,
                api_key_env: None,
            },
        };
        Ok(RunSpec {
            h2htalk_version: field(p, "/h2htalk_version")?,
            suite: SuiteRef {
                dir: Some(field(p, "/suite/dir")?),
                fingerprint: field(p, "/suite/fingerprint")?,
                name: None,
                references: None,
            },
            selection: Selection { tasks, limit: optional(p, "/selection/limit")?, safety: field(p, "/selection/safety")? },
            templates_hash: field(p, "/templates_hash")?,
            judge_texts_hash: None,
            sap: SapRef { mode: field(p, "/sap/mode")?, version: field(p, "/sap/version")?, hash: field(p, "/sap/hash")? },
            model,
            model_id,
            model_config: optional(p, "/model_config")?,
            settings: field(p, "/settings")?,
            prices: field(p, "/prices")?,
            max_cost_usd: optional(p, "/max_cost_usd")?,
            scoring: ScoringSpec {
                profile: profile.parse().map_err(|e| format!("field `/scoring/profile`: {e}"))?,
                signature: field(p, "/scoring/signature")?,
                metrics: optional(p, "/scoring/metrics")?.unwrap_or(MetricSet::Lexical),
                models: optional(p, "/scoring/models")?.unwrap_or_default(),
            },
            redact: optional(p, "/redact")?.unwrap_or(false),
            judge: None,
            simulation: None,
        })
    }
}
