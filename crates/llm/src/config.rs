//! Model entries of `h2htalk.toml`, and model specs given on the command line.
//!
//! ```toml
//! [[model]]
//! name = "qwen-vllm"                      # what --model refers to
//! base_url = "http://127.0.0.1:8000/v1"   # or base_urls = ["...", "..."] for replicas
//! api_key_env = "VLLM_KEY"                # optional; the key is read from the environment only
//! model = "Qwen2.5-7B-Instruct"           # the name the server expects
//! temperature = 0.0
//! max_tokens = 512
//! seed = 0
//! max_concurrency = 16
//! requests_per_minute = 600
//! tokens_per_minute = 200000
//! price_input_per_million = 0.15          # USD, for cost accounting
//! price_output_per_million = 0.60
//! timeout_s = 120
//! max_attempts = 5
//! [model.headers]
//! X-Title = "h2htalk"
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::GenerationSettings;

/// One model entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub name: String,
    #[serde(default = "default_provider")]
    pub provider: String,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub base_urls: Vec<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The model name the endpoint expects (defaults to `name`).
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub temperature: f32,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default = "default_seed")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    #[serde(default)]
    pub tokens_per_minute: Option<u64>,
    #[serde(default)]
    pub price_input_per_million: f64,
    #[serde(default)]
    pub price_output_per_million: f64,
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

fn default_provider() -> String {
    "openai".into()
}
fn default_max_tokens() -> u32 {
    512
}
fn default_seed() -> Option<u64> {
    Some(0)
}
fn default_concurrency() -> usize {
    8
}
fn default_timeout() -> f64 {
    120.0
}
fn default_attempts() -> u32 {
    5
}

impl ModelConfig {
    /// An entry with every default, for a model named on the command line.
    pub fn named(name: &str) -> ModelConfig {
        toml::from_str(&format!("name = {}", toml::Value::String(name.into()))).expect("defaults parse")
    }

    pub fn base_urls(&self) -> Vec<String> {
        self.base_url.iter().chain(&self.base_urls).cloned().collect()
    }

    pub fn settings(&self) -> GenerationSettings {
        GenerationSettings {
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            seed: self.seed,
            top_p: self.top_p,
        }
    }

    /// Cost in USD of the given token counts.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.price_input_per_million + output_tokens as f64 * self.price_output_per_million)
            / 1e6
    }

    fn check(mut self) -> Result<ModelConfig, String> {
        if self.model.is_empty() {
            self.model = self.name.clone();
        }
        if self.provider != "openai" {
            return Err(format!(
                "provider `{}` is not known; use `openai` (local models are given as --model local:...)",
                self.provider
            ));
        }
        if self.base_urls().is_empty() {
            return Err("needs base_url or base_urls".into());
        }
        if self.max_concurrency == 0 || self.max_attempts == 0 || self.timeout_s <= 0.0 {
            return Err("max_concurrency, max_attempts and timeout_s must be positive".into());
        }
        Ok(self)
    }
}

/// The parsed config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub model: Vec<ModelConfig>,
}

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let err = |message: String| ConfigError { path: path.display().to_string(), message };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let mut config: Config = toml::from_str(&text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
        let mut names = std::collections::HashSet::new();
        for (i, m) in std::mem::take(&mut config.model).into_iter().enumerate() {
            let name = m.name.clone();
            if !names.insert(name.clone()) {
                return Err(err(format!("model[{i}] (`{name}`): the name is used twice")));
            }
            config.model.push(m.check().map_err(|m| err(format!("model[{i}] (`{name}`): {m}")))?);
        }
        Ok(config)
    }

    pub fn get(&self, name: &str) -> Option<&ModelConfig> {
        self.model.iter().find(|m| m.name == name)
    }
}

/// Builds an entry for `openai:NAME` given on the command line.
pub fn command_line_model(name: &str, base_url: &str, api_key_env: Option<&str>) -> Result<ModelConfig, String> {
    let mut m = ModelConfig::named(name);
    m.base_url = Some(base_url.to_string());
    m.api_key_env = api_key_env.map(str::to_string);
    m.check()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_entries_load_with_defaults_and_errors_name_the_problem() {
        let dir = std::env::temp_dir().join(format!("h2htalk-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("h2htalk.toml");
        std::fs::write(&path, "[[model]]\nname = \"a\"\nbase_urls = [\"http://x/v1\", \"http://y/v1\"]\nprice_output_per_million = 2.0\n[model.headers]\nX-T = \"1\"\n").unwrap();
        let c = Config::load(&path).unwrap();
        let a = c.get("a").unwrap();
        assert_eq!((a.model.as_str(), a.max_tokens, a.seed, a.base_urls().len()), ("a", 512, Some(0), 2));
        assert_eq!(a.cost(0, 1_000_000), 2.0);

        std::fs::write(&path, "[[model]]\nname = \"a\"\nbase_url = \"http://x\"\ntemprature = 1\n").unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(e.contains("h2htalk.toml") && e.contains("line 4") && e.contains("temprature"), "{e}");
        std::fs::write(&path, "[[model]]\nname = \"a\"\n").unwrap();
        assert!(Config::load(&path).unwrap_err().to_string().contains("model[0] (`a`): needs base_url"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
