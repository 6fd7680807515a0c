//! Chat models for h2htalk.
//!
//! - [`ChatModel`]: the one trait every model implements; [`OpenAiClient`] for OpenAI-compatible
//!   endpoints here, the local GGUF engine in `h2htalk-local`.
//! - [`ModelRef`]: how a model is named (`local:...`, `openai:NAME`, a config entry), parsed once.
//! - [`config`]: model entries of `h2htalk.toml` (keys come from the environment only).
//! - [`BatchClient`]: the same requests through a provider's Batch API, journaled so that a
//!   stopped run polls its batches again instead of paying twice.
//! - [`CachedModel`]: answers kept under the model, messages, settings and sample, reused without a
//!   request by a run whose protocol changes nothing a model answers.
//! - [`Scheduler`]: adaptive concurrency, rate limits, retries with jittered backoff.
//! - Infrastructure faults are [`ChatError`]s with a [`FaultKind`]: retried, and if they persist
//!   recorded as failures, never as answers.

mod batch;
mod cache;
pub mod config;
mod model;
mod model_ref;
mod openai;
mod schedule;

pub use batch::{BatchClient, BatchJournal, BatchSettings, JournalBatch, custom_id};
pub use cache::{CacheKey, CacheMode, CacheUse, CachedModel, CallCache, Explain, model_identity};
pub use config::{Config, ConfigError, ModelConfig};
pub use model::*;
pub use model_ref::ModelRef;
pub use openai::{ClientError, OpenAiClient, parse_completion};
pub use schedule::{CallOutcome, RateLimits, RetryPolicy, Scheduler, Stats};
