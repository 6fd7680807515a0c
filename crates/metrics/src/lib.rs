//! H2HTalk's lexical metrics, equal to the official evaluator's to 1e-9 per pair.
//!
//! - [`Tokenizer`]: Python jieba 0.42.1 precise-mode tokens (Python's dictionary route on a trie
//!   prepared at build time, jieba-rs's HMM, and the corrections that make it agree with Python).
//! - [`bleu`]: nltk `sentence_bleu`, method1 smoothing, the evaluator's four weight vectors.
//! - [`rouge`]: the evaluator's ROUGE-1/2/L F1.
//! - [`score_pair`] under a [`Profile`] (`paper` or `strict`), and [`lexical_signature`].
//! - [`composite`]: the paper's weighted composite of the nine metrics.
//!
//! Light dependencies only: this crate builds and tests in seconds.

pub mod bleu;
mod composite;
mod dict;
mod fsum;
mod lexical;
mod ngrams;
pub mod rouge;
mod signature;
mod summary;
pub mod text;
mod tokenize;

pub use composite::{COMPOSITE_WEIGHTS, composite, composite_of};
pub use fsum::fsum;
pub use lexical::{DropReason, Lexical, Outcome, Profile, score_pair};
pub use signature::{VERSION, lexical_signature};
pub use summary::{Group, Summary};
pub use tokenize::{JIEBA_RS_VERSION, PYTHON_JIEBA_VERSION, Tokenizer};
