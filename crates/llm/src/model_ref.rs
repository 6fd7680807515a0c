//! How a model is named: on the command line, in a sweep, in a run specification. Parsed once,
//! here; everything after sees the typed value.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A model as the user names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ModelRef {
    /// `local:NAME` (the embedded model, `local:gemma3-270m`) or `local:PATH.gguf`: run in this
    /// process. Holds what follows `local:`.
    Local(String),
    /// `openai:NAME`: a model of an OpenAI-compatible endpoint given with its base URL.
    OpenAi(String),
    /// The name of a `[[model]]` entry of the model config (`h2htalk.toml`).
    Named(String),
}

impl ModelRef {
    /// Parses `local:...`, `openai:NAME` or a config entry's name.
    pub fn parse(text: &str) -> Result<ModelRef, String> {
        let text = text.trim();
        let nonempty = |rest: &str, what: &str| {
            if rest.trim().is_empty() {
                Err(format!("`{text}`: give {what} after the colon"))
            } else {
                Ok(rest.to_string())
            }
        };
        if let Some(rest) = text.strip_prefix("local:") {
            return nonempty(rest, "the embedded model's name or a .gguf path").map(ModelRef::Local);
        }
        if let Some(rest) = text.strip_prefix("openai:") {
            return nonempty(rest, "the served model's name").map(ModelRef::OpenAi);
        }
        if text.is_empty() {
            return Err("an empty model name: give `local:...`, `openai:NAME` or a name in h2htalk.toml".into());
        }
        Ok(ModelRef::Named(text.to_string()))
    }

    /// Whether the model runs in this process.
    pub fn is_local(&self) -> bool {
        matches!(self, ModelRef::Local(_))
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelRef::Local(rest) => write!(f, "local:{rest}"),
            ModelRef::OpenAi(name) => write!(f, "openai:{name}"),
            ModelRef::Named(name) => f.write_str(name),
        }
    }
}

impl std::str::FromStr for ModelRef {
    type Err = String;
    fn from_str(s: &str) -> Result<ModelRef, String> {
        ModelRef::parse(s)
    }
}

impl TryFrom<String> for ModelRef {
    type Error = String;
    fn try_from(s: String) -> Result<ModelRef, String> {
        ModelRef::parse(&s)
    }
}

impl From<ModelRef> for String {
    fn from(m: ModelRef) -> String {
        m.to_string()
    }
}

impl PartialEq<&str> for ModelRef {
    fn eq(&self, other: &&str) -> bool {
        self.to_string() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_and_prints_back() {
        for text in ["local:gemma3-270m", "local:/models/q.gguf", "openai:gpt-4o-mini", "qwen-vllm"] {
            assert_eq!(ModelRef::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(ModelRef::parse("openai:x").unwrap(), ModelRef::OpenAi("x".into()));
        assert!(ModelRef::parse("local:").unwrap_err().contains("after the colon"));
        assert!(ModelRef::parse("openai: ").is_err() && ModelRef::parse("").is_err());
        // Stored as the text the user gave.
        let json = serde_json::to_string(&ModelRef::parse("local:gemma3-270m").unwrap()).unwrap();
        assert_eq!(json, "\"local:gemma3-270m\"");
    }
}
