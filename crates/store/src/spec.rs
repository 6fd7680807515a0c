//! The run specification: everything that defines a run, as one typed value. It is written to the
//! store when a run starts and read back by `--resume`, which rebuilds the run from it.

use std::path::PathBuf;

use h2htalk_data::{SapMode, Task};
use h2htalk_llm::{GenerationSettings, ModelId, ModelRef};
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
    pub spec: ModelRef,
    pub config: Option<PathBuf>,
    pub base_url: Option<String>,
    /// The name of the environment variable holding the key (never the key).
    pub api_key_env: Option<String>,
    /// Its requests go through the provider's Batch API (`--batch`; a config entry's `batch = true`
    /// does the same). Absent (off) in runs stored before batches.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
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
    pub spec: ModelRef,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub seed: u64,
    pub max_tokens: Option<u32>,
}

/// The judge validity check of a run: the judges rate the suite's references against degraded
/// copies of them (another scenario's reference, a truncation, a persona break, an invented memory).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValiditySpec {
    /// At most this many scenarios per family (all when `None`).
    pub limit: Option<usize>,
}

/// The user simulator of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationSpec {
    /// How many conversations.
    pub n: usize,
    /// The model that plays the user (`None`: the judge).
    pub simulator: Option<ModelRef>,
}

/// The memory suite of a run (`run --memory`): its probes answered with the history given in the
/// chosen modes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// `given` (the dated sessions in the prompt), `own` (the memories the companion wrote after
    /// each session), or both, in that order.
    pub modes: Vec<crate::memory::MemoryMode>,
    /// At most this many probes of each type (the first of each, in suite order); all when `None`.
    pub limit: Option<usize>,
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
    pub model_id: ModelId,
    /// The model's config entry (header names only, never values or keys); `None` for local models.
    pub model_config: Option<Value>,
    pub settings: GenerationSettings,
    /// The model's prices; `None` (`null`): not set, so its cost is unknown (never 0). Runs stored
    /// before "not set" was recorded hold the 0 an unset price defaulted to, read as 0.
    pub prices: Option<Prices>,
    /// Stop starting new items once the run's cost reaches this many USD.
    pub max_cost_usd: Option<f64>,
    /// The run's answers came through the Batch API, whose tokens cost this share of the model's
    /// list prices; `prices` holds the discounted prices. Absent when the run sent no batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_price_factor: Option<f64>,
    pub scoring: ScoringSpec,
    /// Personal data masked before storage.
    pub redact: bool,
    /// The first judge: it scores every answer, decides the safety statements rules cannot, and
    /// plays the user when no simulator is given.
    pub judge: Option<JudgeSpec>,
    /// Further judges: with `judge` they form a panel, each scoring every answer. Absent (empty) in
    /// runs stored before panels, which still load and resume.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub panel: Vec<JudgeSpec>,
    /// The judge validity check, run with every judge when set; absent in runs stored before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_validity: Option<ValiditySpec>,
    pub simulation: Option<SimulationSpec>,
    /// The memory suite, when the run answers it; absent in runs stored before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySpec>,
    /// Which sample of the protocol this run is (`--epochs`: run k of K answers every item again,
    /// its requests seeded `seed + k`); 0, and absent, for the first and for runs stored before
    /// epochs. Not part of the protocol: the samples of a model are one protocol, grouped by it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sample: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl RunSpec {
    /// The generation settings of this run's requests: the protocol's, with the seed moved on by
    /// the sample index (a server that takes no seed answers alike; the answer cache tells the
    /// samples apart by index).
    pub fn request_settings(&self) -> GenerationSettings {
        let mut s = self.settings.clone();
        s.seed = s.seed.map(|seed| seed.wrapping_add(u64::from(self.sample)));
        s
    }

    /// Every judge of the run: `judge`, then the rest of the panel.
    pub fn judges(&self) -> Vec<&JudgeSpec> {
        self.judge.iter().chain(&self.panel).collect()
    }

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
        let model_id: ModelId = field(p, "/model")?;
        let tasks: Vec<String> = field(p, "/selection/tasks")?;
        let tasks = tasks
            .iter()
            .map(|t| Task::from_stem(t).ok_or_else(|| format!("field `/selection/tasks`: unknown sub-task `{t}`")))
            .collect::<Result<_, _>>()?;
        let profile: String = field(p, "/scoring/profile")?;
        let model = match optional::<ModelRequest>(p, "/model_request")? {
            Some(m) => m,
            None => ModelRequest {
                spec: ModelRef::parse(&format!("{}:{}", model_id.provider, model_id.name))?,
                config: None,
                base_url: None,
                api_key_env: None,
                batch: false,
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
            selection: Selection {
                tasks,
                limit: optional(p, "/selection/limit")?,
                safety: field(p, "/selection/safety")?,
            },
            templates_hash: field(p, "/templates_hash")?,
            judge_texts_hash: None,
            sap: SapRef {
                mode: field(p, "/sap/mode")?,
                version: field(p, "/sap/version")?,
                hash: field(p, "/sap/hash")?,
            },
            model,
            model_id,
            model_config: optional(p, "/model_config")?,
            settings: field(p, "/settings")?,
            prices: field(p, "/prices")?,
            max_cost_usd: optional(p, "/max_cost_usd")?,
            batch_price_factor: None,
            scoring: ScoringSpec {
                profile: profile.parse().map_err(|e| format!("field `/scoring/profile`: {e}"))?,
                signature: field(p, "/scoring/signature")?,
                metrics: optional(p, "/scoring/metrics")?.unwrap_or(MetricSet::Lexical),
                models: optional(p, "/scoring/models")?.unwrap_or_default(),
            },
            redact: optional(p, "/redact")?.unwrap_or(false),
            judge: None,
            panel: vec![],
            judge_validity: None,
            simulation: None,
            memory: None,
            sample: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A specification as the release before panels wrote it: one `judge`, no `panel`, no
    /// `judge_validity`.
    const BEFORE_PANELS: &str = r#"{"h2htalk_version":"0.9.0","suite":{"dir":"suites","fingerprint":"sha256:ab","name":"h2htalk"},
        "selection":{"tasks":["dialogue_base"],"limit":2,"safety":true},"templates_hash":"sha256:cd",
        "judge_texts_hash":"sha256:ef","sap":{"mode":"on","version":"1","hash":"sha256:01"},
        "model":{"spec":"openai:m","config":null,"base_url":"http://127.0.0.1:1/v1","api_key_env":null},
        "model_id":{"provider":"openai","name":"m","endpoint":"http://127.0.0.1:1/v1"},"model_config":null,
        "settings":{"temperature":0.0,"max_tokens":512,"seed":0,"top_p":null},
        "prices":{"input_per_million":0.0,"output_per_million":0.0},"max_cost_usd":null,
        "scoring":{"profile":"strict","signature":"sig","metrics":"all",
                   "models":{"bertscore_model":null,"bertscore_layer":null,"embedding_model":null}},
        "redact":false,
        "judge":{"spec":"openai:j","base_url":"http://127.0.0.1:2/v1","api_key_env":null,"seed":3,"max_tokens":null},
        "simulation":null}"#;

    #[test]
    fn prices_not_set_are_null_and_stored_zero_prices_read_as_zero() {
        // Stored before "not set" was recorded: the 0 an unset price defaulted to reads as 0.
        let old: RunSpec = serde_json::from_str(BEFORE_PANELS).unwrap();
        assert_eq!(old.prices, Some(Prices::default()));
        let mut spec = old.clone();
        spec.prices = None;
        let json = serde_json::to_value(&spec).unwrap();
        assert!(json["prices"].is_null(), "{json}");
        let back: RunSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back.prices, None);
    }

    #[test]
    fn a_specification_from_before_panels_still_loads_and_round_trips() {
        let spec: RunSpec = serde_json::from_str(BEFORE_PANELS).unwrap();
        assert_eq!(spec.judge.as_ref().unwrap().spec, "openai:j");
        assert!(spec.panel.is_empty() && spec.judge_validity.is_none());
        assert_eq!(spec.judges().len(), 1);
        // Written back, it is what that release wrote (no new keys), so that release reads it too.
        let back: serde_json::Value = serde_json::to_value(&spec).unwrap();
        let before: serde_json::Value = serde_json::from_str(BEFORE_PANELS).unwrap();
        assert_eq!(back, before);
    }

    #[test]
    fn a_panel_is_recorded_in_order_after_the_first_judge() {
        let mut spec: RunSpec = serde_json::from_str(BEFORE_PANELS).unwrap();
        let mut second = spec.judge.clone().unwrap();
        second.spec = "openai:k".parse().unwrap();
        spec.panel.push(second);
        spec.judge_validity = Some(ValiditySpec { limit: Some(4) });
        let back: RunSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        let names: Vec<String> = back.judges().iter().map(|j| j.spec.to_string()).collect();
        assert_eq!(names, ["openai:j", "openai:k"]);
        // An unknown field is still refused.
        let bad = BEFORE_PANELS.replace("\"redact\":false", "\"redact\":false,\"judgez\":[]");
        assert!(serde_json::from_str::<RunSpec>(&bad).unwrap_err().to_string().contains("judgez"));
    }
}
