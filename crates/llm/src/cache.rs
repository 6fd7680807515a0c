//! The answer cache: every call a model answered, kept under what determines its answer (the
//! model's identity, the exact messages, the generation settings, the sample index), so that a run
//! whose protocol differs only in what does not change a model's answers (judges, simulator,
//! metrics, report settings) takes them without a request.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::model::{BoxFuture, ChatError, ChatModel, ChatRequest, ChatResponse, FaultKind, ModelId};

/// How the cache is used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Answers are taken from the cache and new ones kept.
    #[default]
    On,
    /// Answers are taken from the cache; nothing is added.
    Read,
    /// The cache is neither read nor written.
    Off,
}

impl std::str::FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(CacheMode::On),
            "read" => Ok(CacheMode::Read),
            "off" => Ok(CacheMode::Off),
            _ => Err(format!("`{s}`: expected `on`, `read` or `off`")),
        }
    }
}

/// What a call's answer is kept under, field by field (a miss is explained by the field that
/// differs from the nearest kept call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheKey {
    /// `provider:name@endpoint`: the served model name and its endpoints, or a GGUF's SHA-256.
    pub model: String,
    /// SHA-256 of the exact messages (roles and contents, in order).
    pub messages: String,
    /// The generation settings as JSON (temperature, max_tokens, seed, top_p).
    pub settings: String,
    /// Which sample of the same request this is (0 for the first).
    pub sample: u32,
}

impl CacheKey {
    pub fn new(model: &str, request: &ChatRequest, sample: u32) -> CacheKey {
        let messages = serde_json::to_string(&request.messages).expect("messages serialise");
        let digest = Sha256::digest(messages.as_bytes());
        CacheKey {
            model: model.to_string(),
            messages: digest.iter().map(|b| format!("{b:02x}")).collect(),
            settings: serde_json::to_string(&request.settings).expect("settings serialise"),
            sample,
        }
    }

    /// The key as one string (what the cache is indexed by).
    pub fn digest(&self) -> String {
        let whole = json!([self.model, self.messages, self.settings, self.sample]).to_string();
        Sha256::digest(whole.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The identity a model's answers are cached under.
pub fn model_identity(id: &ModelId) -> String {
    format!("{}:{}@{}", id.provider, id.name, id.endpoint)
}

/// Where answers are kept (the run store); errors are messages for the user.
pub trait CallCache: Send + Sync {
    fn get(&self, key: &CacheKey) -> Result<Option<ChatResponse>, String>;
    fn put(&self, key: &CacheKey, response: &ChatResponse) -> Result<(), String>;
    /// Why `key` was not found: the field that differs from the nearest kept call.
    fn explain(&self, key: &CacheKey) -> Result<String, String>;
}

/// A model whose answers are looked up in a [`CallCache`] before it is asked.
pub struct CachedModel {
    inner: Arc<dyn ChatModel>,
    identity: String,
    cache: Arc<dyn CallCache>,
    how: CacheUse,
    /// Called with the explanation of each miss (`--explain-cache`).
    explain: Option<Explain>,
}

/// How a model's calls use the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUse {
    pub mode: CacheMode,
    /// Mask personal data in what is kept (a run made with `--redact`: nothing it stores may hold
    /// it); its answers are kept apart from unmasked ones.
    pub redact: bool,
    /// The sample index of the calls (a run of `--epochs`), part of the key.
    pub sample: u32,
}

/// What is told the explanation of each miss.
pub type Explain = Arc<dyn Fn(String) + Send + Sync>;

impl CachedModel {
    /// `identity`: what the answers are kept under ([`model_identity`] of the model as configured;
    /// a replica of it shares it).
    pub fn new(
        inner: Arc<dyn ChatModel>,
        identity: String,
        cache: Arc<dyn CallCache>,
        how: CacheUse,
        explain: Option<Explain>,
    ) -> CachedModel {
        let identity = if how.redact { format!("{identity}|redacted") } else { identity };
        CachedModel { inner, identity, cache, how, explain }
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, ChatError> {
        if self.how.mode == CacheMode::Off {
            return self.inner.chat(request).await;
        }
        let key = CacheKey::new(&self.identity, request, self.how.sample);
        let fault = |e: String| ChatError::new(FaultKind::Engine, format!("the answer cache: {e}"));
        if let Some(hit) = self.cache.get(&key).map_err(fault)? {
            return Ok(hit);
        }
        if let Some(explain) = &self.explain {
            explain(self.cache.explain(&key).map_err(fault)?);
        }
        let response = self.inner.chat(request).await?;
        // An empty answer is asked again by the scheduler: it is not kept.
        if self.how.mode == CacheMode::On && !response.text.trim().is_empty() {
            if self.how.redact {
                let masked = ChatResponse { text: h2htalk_data::redact::redact(&response.text), ..response.clone() };
                self.cache.put(&key, &masked).map_err(fault)?;
            } else {
                self.cache.put(&key, &response).map_err(fault)?;
            }
        }
        Ok(response)
    }
}

impl ChatModel for CachedModel {
    fn id(&self) -> ModelId {
        self.inner.id()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ChatError>> {
        Box::pin(self.call(request))
    }

    fn max_concurrency(&self) -> usize {
        self.inner.max_concurrency()
    }
}
