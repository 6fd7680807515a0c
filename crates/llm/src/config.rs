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
//! price_input_per_million = 0.15          # USD, for cost accounting; not set: the cost is
//! price_output_per_million = 0.60         # unknown (never 0); give both (one alone: the other is 0)
//! timeout_s = 120
//! max_attempts = 5
//! batch = false                           # true: through the Batch API (also --batch)
//! batch_price_factor = 0.5                # batched tokens cost this share of the prices
//! batch_poll_s = 30                       # seconds between polls of a batch
//! batch_completion_window = "24h"
//! batch_max_requests = 50000
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
    /// USD per million input tokens; `None` (not set) is not 0: costs are then unknown.
    #[serde(default)]
    pub price_input_per_million: Option<f64>,
    #[serde(default)]
    pub price_output_per_million: Option<f64>,
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Send this model's requests through the provider's Batch API (`--batch` turns it on too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
    /// What a batched token costs, as a share of the prices above (default 0.5, OpenAI's discount).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_price_factor: Option<f64>,
    /// Seconds between two polls of a batch (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_poll_s: Option<f64>,
    /// The completion window a batch asks for (default `24h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_completion_window: Option<String>,
    /// At most this many requests in one batch (default 50,000, OpenAI's limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_max_requests: Option<usize>,
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

    /// The entry's prices (input, output) in USD per million tokens; `None` when neither is set.
    /// One given alone leaves the other at 0.
    pub fn prices(&self) -> Option<(f64, f64)> {
        match (self.price_input_per_million, self.price_output_per_million) {
            (None, None) => None,
            (i, o) => Some((i.unwrap_or(0.0), o.unwrap_or(0.0))),
        }
    }

    /// The Batch API settings, when this model's requests go through it.
    pub fn batch_settings(&self) -> Option<crate::batch::BatchSettings> {
        self.batch.then(|| crate::batch::BatchSettings {
            price_factor: self.batch_price_factor.unwrap_or(0.5),
            poll: std::time::Duration::from_secs_f64(self.batch_poll_s.unwrap_or(30.0)),
            completion_window: self.batch_completion_window.clone().unwrap_or_else(|| "24h".into()),
            max_requests: self.batch_max_requests.unwrap_or(50_000),
        })
    }

    /// Cost in USD of the given token counts; `None` when no price is set.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        self.prices().map(|(i, o)| (input_tokens as f64 * i + output_tokens as f64 * o) / 1e6)
    }

    /// Checks the entry; a problem comes back as (field, message).
    fn check(mut self) -> Result<ModelConfig, (&'static str, String)> {
        if self.model.is_empty() {
            self.model = self.name.clone();
        }
        if self.provider != "openai" {
            return Err((
                "provider",
                format!("`{}` is not known; use `openai` (local models are given as --model local:...)", self.provider),
            ));
        }
        if self.base_urls().is_empty() {
            return Err(("base_url", "missing; give base_url or base_urls".into()));
        }
        for (field, bad) in [
            ("max_concurrency", self.max_concurrency == 0),
            ("max_attempts", self.max_attempts == 0),
            ("timeout_s", !(self.timeout_s > 0.0 && self.timeout_s.is_finite())),
            ("batch_price_factor", self.batch_price_factor.is_some_and(|f| !(f > 0.0 && f.is_finite()))),
            ("batch_poll_s", self.batch_poll_s.is_some_and(|s| !(s > 0.0 && s.is_finite()))),
            ("batch_max_requests", self.batch_max_requests == Some(0)),
        ] {
            if bad {
                return Err((field, "must be positive".into()));
            }
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

/// A config file that cannot be used: the file, and where known the line and the field.
#[derive(Debug, thiserror::Error)]
#[error(
    "{path}{}{}: {message}",
    line.map(|l| format!(":{l}")).unwrap_or_default(),
    field.as_ref().map(|f| format!(": field `{f}`")).unwrap_or_default()
)]
pub struct ConfigError {
    pub path: String,
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

/// Deeper nesting of arrays and inline tables than any config needs; refused before parsing.
const MAX_DEPTH: usize = 64;

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let err = |line: Option<usize>, field: Option<String>, message: String| ConfigError {
            path: path.display().to_string(),
            line,
            field,
            message,
        };
        if path.is_dir() {
            return Err(err(None, None, "is a directory, expected a TOML file of [[model]] entries".into()));
        }
        let bytes = h2htalk_data::input::read_file(path).map_err(|e| match e {
            h2htalk_data::DataError::File { message, .. } => err(None, None, message),
            h2htalk_data::DataError::Io { source, .. } => err(None, None, format!("cannot read: {source}")),
            other => err(None, None, other.to_string()),
        })?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            let line = line_at(&bytes, e.valid_up_to());
            err(Some(line), Some("(line)".into()), "invalid UTF-8; save the file as UTF-8".into())
        })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let offset = bytes.len() - text.len();
        let line_of = |at: usize| line_at(&bytes, at + offset);
        if let Some(at) = text.find('\u{feff}') {
            return Err(err(
                Some(line_of(at)),
                Some("(line)".into()),
                "a byte-order mark (U+FEFF) in the middle of the file (were files concatenated?); remove it".into(),
            ));
        }
        if let Some(at) = too_deep(text) {
            return Err(err(
                Some(line_of(at)),
                Some("(line)".into()),
                format!("arrays or inline tables nested more than {MAX_DEPTH} deep"),
            ));
        }
        let parsed = toml::de::Deserializer::parse(text).and_then(Config::deserialize);
        let mut config = parsed.map_err(|e| {
            let at = e.span().map(|s| s.start);
            let message = e.message().trim_end().to_string();
            err(at.map(line_of), Some(at.map_or("(file)".into(), |at| field_at(text, at, &message))), message)
        })?;
        if config.model.is_empty() {
            return Err(err(
                None,
                None,
                "holds no [[model]] entry; add one (see the README's `h2htalk.toml` example)".into(),
            ));
        }
        let mut names = std::collections::HashMap::new();
        for (i, m) in std::mem::take(&mut config.model).into_iter().enumerate() {
            let name = m.name.clone();
            if let Some(first) = names.insert(name.clone(), i) {
                let line = key_line(text, i, "name");
                return Err(err(
                    line.map(line_of),
                    Some(format!("model[{i}].name")),
                    format!("`{name}` is used twice (also model[{first}]); model names must be unique"),
                ));
            }
            match m.check() {
                Ok(m) => config.model.push(m),
                Err((field, message)) => {
                    let line = key_line(text, i, field);
                    return Err(err(line.map(line_of), Some(format!("model[{i}].{field}")), message));
                }
            }
        }
        Ok(config)
    }

    pub fn get(&self, name: &str) -> Option<&ModelConfig> {
        self.model.iter().find(|m| m.name == name)
    }
}

/// The 1-based line of byte `at`.
fn line_at(bytes: &[u8], at: usize) -> usize {
    bytes[..at.min(bytes.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Where brackets or braces (outside strings and comments) first nest deeper than [`MAX_DEPTH`].
fn too_deep(text: &str) -> Option<usize> {
    let (mut depth, mut quote, mut comment, mut escaped) = (0usize, None::<char>, false, false);
    for (i, c) in text.char_indices() {
        if comment {
            comment = c != '\n';
            continue;
        }
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q || c == '\n' {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '#' => comment = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Some(i);
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                '\n' => {}
                _ => {}
            },
        }
    }
    None
}

/// The byte offsets of the `[[model]]` header lines.
fn entry_headers(text: &str) -> Vec<usize> {
    let mut at = 0;
    let mut out = Vec::new();
    for line in text.split_inclusive('\n') {
        let t = line.split('#').next().unwrap_or("").trim();
        if t.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")).map(str::trim) == Some("model") {
            out.push(at);
        }
        at += line.len();
    }
    out
}

/// The byte offset of the line `key = ...` in entry `i`, or of the entry's header when the key is
/// not written there; `None` when the entries are not written as `[[model]]` tables.
fn key_line(text: &str, i: usize, key: &str) -> Option<usize> {
    let headers = entry_headers(text);
    let start = *headers.get(i)?;
    let end = headers.get(i + 1).copied().unwrap_or(text.len());
    let mut at = start;
    for line in text[start..end].split_inclusive('\n') {
        let t = line.trim_start();
        let quoted = format!("\"{key}\"");
        if t.strip_prefix(key)
            .or_else(|| t.strip_prefix(quoted.as_str()))
            .is_some_and(|r| r.trim_start().starts_with('='))
        {
            return Some(at);
        }
        at += line.len();
    }
    Some(start)
}

/// The field a parse or type error at byte `at` is about: `model[i].key` (or
/// `model[i].headers.key`) from the entry and the key written on that line, the field a
/// "missing field" / "unknown field" message names, or `(line)` for a syntax error.
fn field_at(text: &str, at: usize, message: &str) -> String {
    let named = |prefix: &str| message.strip_prefix(prefix).and_then(|m| m.split('`').next()).map(str::to_string);
    let headers = entry_headers(text);
    let entry = headers.iter().rposition(|&h| h <= at);
    let line_start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let section = text[..line_start].lines().rev().map(str::trim).find(|l| l.starts_with('[')).unwrap_or("");
    let in_headers = section.starts_with("[model.headers") || section.starts_with("[ model.headers");
    let scope = match entry {
        Some(i) if in_headers => format!("model[{i}].headers."),
        Some(i) => format!("model[{i}]."),
        None => String::new(),
    };
    if let Some(f) = named("missing field `").or_else(|| named("unknown field `")) {
        return format!("{scope}{f}");
    }
    let line = text[line_start..].lines().next().unwrap_or("");
    match line.split_once('=') {
        Some((key, _)) if !line.trim_start().starts_with('[') && !key.trim().is_empty() => {
            format!("{scope}{}", key.trim().trim_matches('"'))
        }
        _ => "(line)".into(),
    }
}

/// Builds an entry for `openai:NAME` given on the command line.
pub fn command_line_model(name: &str, base_url: &str, api_key_env: Option<&str>) -> Result<ModelConfig, String> {
    let mut m = ModelConfig::named(name);
    m.base_url = Some(base_url.to_string());
    m.api_key_env = api_key_env.map(str::to_string);
    m.check().map_err(|(field, message)| format!("{field}: {message}"))
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
        assert_eq!((a.cost(0, 1_000_000), a.prices()), (Some(2.0), Some((0.0, 2.0))));
        // No price given: not set, which is not 0 (a free model says `= 0`).
        std::fs::write(&path, "[[model]]\nname = \"b\"\nbase_url = \"http://x\"\n[[model]]\nname = \"f\"\nbase_url = \"http://x\"\nprice_input_per_million = 0\nprice_output_per_million = 0\n").unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!((c.get("b").unwrap().prices(), c.get("b").unwrap().cost(10, 10)), (None, None));
        assert_eq!((c.get("f").unwrap().prices(), c.get("f").unwrap().cost(10, 10)), (Some((0.0, 0.0)), Some(0.0)));

        std::fs::write(&path, "[[model]]\nname = \"a\"\nbase_url = \"http://x\"\ntemprature = 1\n").unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(e.contains("h2htalk.toml:4: field `model[0].temprature`: unknown field"), "{e}");
        std::fs::write(&path, "[[model]]\nname = \"a\"\n").unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(e.contains("h2htalk.toml:1: field `model[0].base_url`: missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
