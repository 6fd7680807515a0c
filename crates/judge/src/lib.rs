//! Scoring companions beyond overlap metrics (issue #8):
//!
//! - [`checks`]: deterministic format checks per sub-task, per item and per task ([`check_run`]).
//! - [`judge`]: an LLM judge with a rubric per family ([`judge_run`]), and pairwise comparison of runs
//!   in both orders with win rates and a Bradley–Terry ranking with bootstrap intervals
//!   ([`pairwise_run`], [`bt`]).
//! - [`safety`]: the SAP safety score on the safety set, by rules where a rule can decide and by the
//!   judge for the rest ([`safety_run`]); reported on its own, never averaged into the composite.
//! - [`panel`]: several judges at once: each judge's scores, their mean, and their agreement
//!   (Krippendorff's alpha per criterion, [`agreement`]).
//! - [`validity`]: a check of the judge without human labels: references against degraded copies.
//! - [`simulator`]: multi-session conversations with a simulated user whose memories the model under
//!   test writes itself ([`simulate`]).
//!
//! Everything is kept in the run store ([`h2htalk_store`]), through its typed rows. A judge
//! or simulator failure is recorded with its reason and counted; it never becomes a score.

pub mod agreement;
pub mod ask;
pub mod bt;
pub mod checks;
pub mod judge;
pub mod pairwise;
pub mod panel;
pub mod safety;
pub mod simulator;
pub mod texts;
pub mod validity;

use std::path::PathBuf;

pub use ask::{AskFailure, JudgeHandle, JudgeSettings};
pub use checks::{CheckReport, CheckResult, ItemChecks, check_answer, check_run};
pub use judge::{JudgeReport, judge_run};
pub use pairwise::{PairwiseReport, pairwise_run};
pub use panel::PanelReport;
pub use safety::{SafetyReport, safety_run};
pub use simulator::{SimulationReport, SimulationSetup, UserProfile, load_profiles, simulate};
pub use texts::JudgeTexts;
pub use validity::{ValidityReport, validity_run};

/// `part / whole`, `None` when `whole` is 0 (a rate over nothing is not a number, never 0).
pub fn rate(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

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
