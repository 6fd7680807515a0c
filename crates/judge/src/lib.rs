//! Scoring companions beyond overlap metrics: each part judges and writes typed rows to the store
//! ([`h2htalk_store`]); the report crate summarises them, and nothing here formats terminal text.
//!
//! - [`checks`]: deterministic format checks per sub-task, per item ([`check_run`]).
//! - [`judge`]: an LLM judge with a rubric per family ([`judge_run`]), and pairwise comparison of runs
//!   in both orders with win rates and a Bradley–Terry ranking with bootstrap intervals
//!   ([`pairwise_run`], [`h2htalk_stats::bt`]).
//! - [`safety`]: the SAP safety score on the safety set, by rules where a rule can decide and by the
//!   judge for the rest ([`safety_run`]); reported on its own, never averaged into the composite.
//!   Several judges at once form a panel: each judge's scores are stored under its own name.
//! - [`validity`]: a check of the judge without human labels: references against degraded copies.
//! - [`simulator`]: multi-session conversations with a simulated user whose memories the model under
//!   test writes itself ([`simulate`]).
//! - [`memory`]: the memory suite's probes answered by the model under test with the history given
//!   or with its own memories, read by rules and the judge ([`memory_run`]).
//!
//! A judge or simulator failure is recorded with its reason and counted; it never becomes a score.

pub mod ask;
pub mod checks;
pub mod judge;
pub mod memory;
pub mod pairwise;
pub mod safety;
pub mod simulator;
pub mod texts;
pub mod validity;

use std::path::PathBuf;

pub use ask::{AskFailure, JudgeHandle, JudgeSettings};
pub use checks::{CheckResult, ItemChecks, check_answer, check_run};
pub use h2htalk_data::suite::profiles::{UserProfile, load_profiles};
pub use judge::{JudgeReport, judge_run};
pub use memory::{MemorySetup, memory_run};
pub use pairwise::{PairwiseReport, pairwise_run};
pub use safety::{SafetyReport, reference_sap_run, safety_run};
pub use simulator::{SimulationResult, SimulationSetup, simulate};
pub use texts::JudgeTexts;
pub use validity::{ValidityRun, validity_run};

/// Errors of the judge crate. Judge and simulator answers that cannot be used are not errors: they
/// are recorded and counted per item.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Store(#[from] h2htalk_store::StoreError),
    #[error(transparent)]
    Prompt(#[from] h2htalk_prompt::PromptError),
    #[error(transparent)]
    Data(#[from] h2htalk_data::DataError),
    #[error("run `{0}` is not in the store; `h2htalk runs list` shows the runs it holds")]
    UnknownRun(String),
    #[error(
        "run `{run}`: item `{scenario}` is not in the suite at {suite}; judge a run with the suite it was made from"
    )]
    UnknownScenario { run: String, scenario: String, suite: String },
    #[error("{}: cannot read: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}:{line}: field `{field}`: {message}", path.display())]
    Invalid { path: PathBuf, line: usize, field: String, message: String },
    #[error("{0}")]
    Settings(String),
}

pub type Result<T, E = JudgeError> = std::result::Result<T, E>;
