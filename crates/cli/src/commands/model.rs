//! Turning `--model`, `--config`, `--base-url` and `--api-key-env` into a chat model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use h2htalk_llm::config::command_line_model;
use h2htalk_llm::{ChatModel, Config, ModelConfig, OpenAiClient};
use serde_json::{Value, json};

/// The embedded default model.
pub const DEFAULT_MODEL: &str = "local:gemma3-270m";

/// A resolved model and what a run records about its configuration.
pub struct Resolved {
    pub model: Arc<dyn ChatModel>,
    /// Generation settings, limits and prices; `None` for local models (defaults apply).
    pub config: Option<ModelConfig>,
}

/// Where `--config` defaults to when it exists.
pub fn default_config_path() -> Option<PathBuf> {
    Path::new("h2htalk.toml").exists().then(|| PathBuf::from("h2htalk.toml"))
}

pub fn resolve(
    spec: &str,
    config: Option<&Path>,
    base_url: Option<&str>,
    api_key_env: Option<&str>,
) -> anyhow::Result<Resolved> {
    if let Some(rest) = spec.strip_prefix("local:") {
        let model = h2htalk_local_open(rest)?;
        return Ok(Resolved { model, config: None });
    }
    let cfg = if let Some(name) = spec.strip_prefix("openai:") {
        let Some(url) = base_url else {
            bail!(
                "--model openai:{name} needs --base-url (e.g. http://127.0.0.1:8000/v1), or an entry in h2htalk.toml"
            );
        };
        command_line_model(name, url, api_key_env).map_err(|e| anyhow::anyhow!("--model {spec}: {e}"))?
    } else {
        let path = config.map(Path::to_path_buf).or_else(default_config_path).with_context(|| {
            format!("--model {spec}: not `local:...` or `openai:...`, and no h2htalk.toml to look it up in (give --config FILE)")
        })?;
        let cfg = Config::load(&path)?;
        let names: Vec<&str> = cfg.model.iter().map(|m| m.name.as_str()).collect();
        cfg.get(spec).cloned().with_context(|| {
            format!("{}: no [[model]] named `{spec}` (models: {})", path.display(), names.join(", "))
        })?
    };
    let client = OpenAiClient::new(&cfg)?;
    Ok(Resolved { model: Arc::new(client), config: Some(cfg) })
}

/// Loads a local GGUF model (a few seconds; blocking).
fn h2htalk_local_open(spec: &str) -> anyhow::Result<Arc<dyn ChatModel>> {
    let full = format!("local:{spec}");
    let open = || h2htalk_local::open(&full);
    let model = match tokio::runtime::Handle::try_current() {
        Ok(_) => tokio::task::block_in_place(open),
        Err(_) => open(),
    };
    Ok(model?)
}

/// The model's configuration as recorded in provenance: header values and keys never.
pub fn recorded_config(cfg: &Option<ModelConfig>) -> Value {
    match cfg {
        None => Value::Null,
        Some(c) => {
            let mut v = serde_json::to_value(c).expect("config serialises");
            v["headers"] = json!(c.headers.keys().collect::<Vec<_>>());
            v
        }
    }
}
