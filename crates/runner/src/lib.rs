//! The H2HTalk pipeline as a library: a [`RunSpec`] is planned into items (scenario × prompt),
//! generated through the scheduler with every answer committed as it arrives, scored, assessed
//! (format checks, SAP safety score, judge, simulator) and reported. `h2htalk run`, `--resume` and
//! any command that runs models call [`pipeline::execute`].
//!
//! - [`plan`]: a new run's specification and items, or a stored run's, for `--resume`.
//! - [`generate`]: the generation phase and its counters.
//! - [`score`]: the one scoring function for pairs (`h2htalk score` and runs).
//! - [`baselines`]: the null baselines of a run, scored as its answers are.
//! - [`assess`]: format checks, the SAP safety score, the LLM judge and the user simulator.
//! - [`annotate`]: blinded items for people to rate, and their ratings read back.
//! - [`compare`]: pairwise comparison of stored runs by a judge, with a Bradley–Terry ranking.
//! - [`models`]: model specs resolved into chat models.
//! - [`progress`]: the progress display of a generation phase, and of a sweep.
//! - [`sweep`]: several models under one protocol, reusing stored runs.

pub mod annotate;
pub mod assess;
pub mod baselines;
pub mod compare;
pub mod export;
pub mod generate;
pub mod models;
pub mod pipeline;
pub mod plan;
pub mod progress;
pub mod score;
pub mod scorer;
pub mod sweep;

pub use h2htalk_store::{RunSpec, SAFETY_GROUP};
pub use pipeline::{Outcome, RunOptions, execute};
pub use plan::{NewRun, Resume};

/// Why a run could not go on. Failures of single items are not errors: they are recorded and
/// counted.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] h2htalk_store::StoreError),
    #[error(transparent)]
    Data(#[from] h2htalk_data::DataError),
    #[error(transparent)]
    Prompt(#[from] h2htalk_prompt::PromptError),
    #[error(transparent)]
    Judge(#[from] h2htalk_judge::JudgeError),
    #[error("writing the run's report: {0}")]
    Report(#[from] h2htalk_report::ReportError),
    #[error("loading the neural metric models: {0}; or add `--metrics lexical` to score without them")]
    MetricModels(h2htalk_neural::NeuralError),
    #[error("computing the neural metrics: {0}")]
    Neural(h2htalk_neural::NeuralError),
    #[error(transparent)]
    Config(#[from] h2htalk_llm::ConfigError),
    #[error(transparent)]
    Client(#[from] h2htalk_llm::ClientError),
    #[error("{0}")]
    Model(String),
    /// A request that cannot be run, with what to do.
    #[error("{0}")]
    Usage(String),
}

pub type Result<T, E = RunError> = std::result::Result<T, E>;
