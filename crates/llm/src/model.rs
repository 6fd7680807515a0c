//! The one interface every model implements, and the values that cross it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A boxed, sendable future (the trait is used as `dyn ChatModel`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub use h2htalk_data::ChatMessage;

/// Generation settings; recorded with every run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenerationSettings {
    pub temperature: f32,
    pub max_tokens: u32,
    pub seed: Option<u64>,
    pub top_p: Option<f32>,
}

impl Default for GenerationSettings {
    fn default() -> Self {
        GenerationSettings { temperature: 0.0, max_tokens: 512, seed: Some(0), top_p: None }
    }
}

/// One request to a model.
#[derive(Clone, Debug)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub settings: GenerationSettings,
}

/// Why generation stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ContentFilter,
    Other(String),
}

impl FinishReason {
    pub fn parse(s: &str) -> FinishReason {
        match s {
            "stop" | "eos" | "end_turn" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(s) => s,
        }
    }
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    pub text: String,
    pub finish_reason: FinishReason,
    /// Tokens as the server reported them; `None` when it reported no usage (unknown, not 0).
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

impl ChatResponse {
    /// Input plus output tokens, counting an unknown side as 0 (for rate limits only).
    pub fn tokens_or_zero(&self) -> u64 {
        self.input_tokens.unwrap_or(0) + self.output_tokens.unwrap_or(0)
    }
}

/// The class of an infrastructure fault, counted and reported per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    RateLimited,
    ServerError,
    Timeout,
    Connection,
    MalformedResponse,
    EmptyContent,
    ContentFilter,
    ClientError,
    Engine,
}

impl FaultKind {
    pub const ALL: [FaultKind; 9] = [
        FaultKind::RateLimited,
        FaultKind::ServerError,
        FaultKind::Timeout,
        FaultKind::Connection,
        FaultKind::MalformedResponse,
        FaultKind::EmptyContent,
        FaultKind::ContentFilter,
        FaultKind::ClientError,
        FaultKind::Engine,
    ];

    pub fn parse(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::RateLimited => "rate_limited",
            FaultKind::ServerError => "server_error",
            FaultKind::Timeout => "timeout",
            FaultKind::Connection => "connection",
            FaultKind::MalformedResponse => "malformed_response",
            FaultKind::EmptyContent => "empty_content",
            FaultKind::ContentFilter => "content_filter",
            FaultKind::ClientError => "client_error",
            FaultKind::Engine => "engine",
        }
    }

    /// Whether trying again may help.
    pub fn is_transient(self) -> bool {
        !matches!(self, FaultKind::ClientError | FaultKind::ContentFilter)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed request: never an answer, never scored.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ChatError {
    pub kind: FaultKind,
    pub message: String,
    /// What the server asked us to wait (`Retry-After`), if anything.
    pub retry_after: Option<Duration>,
}

impl ChatError {
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Self {
        ChatError { kind, message: message.into(), retry_after: None }
    }
}

/// What a run records about the model: never a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelId {
    /// `openai` or `local`.
    pub provider: String,
    /// The model name (`gpt-4o-mini`, `gemma3-270m`, a file name).
    pub name: String,
    /// Base URL(s) or the model file's fingerprint.
    pub endpoint: String,
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.name)
    }
}

/// A chat model: an HTTP endpoint or an engine in this process.
pub trait ChatModel: Send + Sync {
    fn id(&self) -> ModelId;

    /// One completion. Infrastructure faults are errors; a model's answer (even an odd one) is not.
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ChatError>>;

    /// How many requests this model can usefully serve at once.
    fn max_concurrency(&self) -> usize {
        1
    }
}
