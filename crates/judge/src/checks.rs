//! Deterministic format checks: each sub-task's output constraints (suites/FORMAT.md) checked one
//! by one on a model's answer, with the rules of `h2htalk_data` (the same ones that hold our
//! references to them). Stored per item and check; the report crate counts them.

use h2htalk_data::suite::FormatCheckName;
use h2htalk_data::{Scenario, Suite};
use h2htalk_store::{FormatCheck, GenerationStatus, Store};
use serde::Serialize;

use crate::{JudgeError, Result};

/// One check on one answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    pub name: FormatCheckName,
    pub passed: bool,
    /// What is wrong, when it failed.
    pub message: Option<String>,
}

/// The checks of one item.
#[derive(Clone, Debug, Serialize)]
pub struct ItemChecks {
    pub scenario_id: String,
    /// The sub-task stem, or `sap_safety`.
    pub task: String,
    pub results: Vec<CheckResult>,
}

impl ItemChecks {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.passed)
    }
}

/// The group an item is reported in: its sub-task, or `sap_safety`.
pub fn group_of(scenario: &Scenario) -> String {
    if Suite::is_safety(scenario) { h2htalk_data::SAFETY_GROUP.into() } else { scenario.task.stem().into() }
}

/// Checks `answer` against the constraints of `scenario`'s sub-task.
pub fn check_answer(scenario: &Scenario, answer: &str) -> ItemChecks {
    let results = scenario
        .format_checks(answer)
        .into_iter()
        .map(|(name, r)| CheckResult { name, passed: r.is_ok(), message: r.err() })
        .collect();
    ItemChecks { scenario_id: scenario.id.clone(), task: group_of(scenario), results }
}

/// Checks every generated answer of `run_id` against its scenario in `suite` and stores one row
/// per item and check (replacing earlier checks of the run); returns the checks of each answer
/// (items whose generation failed have none). The report crate summarises the stored rows.
pub fn check_run(store: &mut Store, run_id: &str, suite: &Suite) -> Result<Vec<ItemChecks>> {
    if store.run(run_id)?.is_none() {
        return Err(JudgeError::UnknownRun(run_id.into()));
    }
    let mut items = Vec::new();
    for record in &store.records(run_id)? {
        let item = &record.item;
        let scenario = suite.get(&item.scenario_id).ok_or_else(|| JudgeError::UnknownScenario {
            run: run_id.into(),
            scenario: item.scenario_id.clone(),
            suite: suite.dir.display().to_string(),
        })?;
        if let Some(g) = record.generation.as_ref().filter(|g| g.status == GenerationStatus::Generated) {
            items.push(check_answer(scenario, g.text.as_deref().unwrap_or_default()));
        }
    }
    let rows: Vec<FormatCheck> = items
        .iter()
        .flat_map(|it| {
            it.results.iter().map(|r| FormatCheck {
                scenario_id: it.scenario_id.clone(),
                task: it.task.clone(),
                name: r.name,
                passed: r.passed,
                message: r.message.clone(),
            })
        })
        .collect();
    store.replace_format_checks(run_id, &rows)?;
    Ok(items)
}
