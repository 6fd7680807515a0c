//! Deterministic format checks: each sub-task's output constraints (suites/FORMAT.md) checked one
//! by one on a model's answer, with the rules of `h2htalk_data` (the same ones that hold our
//! references to them). Reported per item and per task.

use std::collections::BTreeMap;

use h2htalk_data::{Scenario, Suite};
use h2htalk_store::{FormatCheck, GenerationStatus, Store};
use serde::Serialize;

use crate::{JudgeError, Result};

/// One check on one answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    /// `not_empty`, `length`, `action`, `timed_plan`, `sub_schedule` or `memory_format`.
    pub name: String,
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
    if Suite::is_safety(scenario) { "sap_safety".into() } else { scenario.task.stem().into() }
}

/// Checks `answer` against the constraints of `scenario`'s sub-task.
pub fn check_answer(scenario: &Scenario, answer: &str) -> ItemChecks {
    let results = scenario
        .format_checks(answer)
        .into_iter()
        .map(|(name, r)| CheckResult { name: name.into(), passed: r.is_ok(), message: r.err() })
        .collect();
    ItemChecks { scenario_id: scenario.id.clone(), task: group_of(scenario), results }
}

/// Passed and failed counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
}

impl Counts {
    fn add(&mut self, passed: bool) {
        if passed { self.passed += 1 } else { self.failed += 1 }
    }

    /// passed / (passed + failed); `None` when nothing was checked.
    pub fn rate(&self) -> Option<f64> {
        crate::rate(self.passed, self.passed + self.failed)
    }
}

/// Format checks of one sub-task (or of the safety set).
#[derive(Clone, Debug, Default, Serialize)]
pub struct TaskChecks {
    /// Items of the run in this group.
    pub items: usize,
    /// Items whose generation failed: not checked, counted here.
    pub generation_failed: usize,
    /// Items that passed every check, and those that did not.
    pub all_checks: Counts,
    /// passed / checked items, `None` when none was checked.
    pub pass_rate: Option<f64>,
    /// Per check name.
    pub by_check: BTreeMap<String, Counts>,
}

/// Format checks of a run.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub run_id: String,
    pub per_task: BTreeMap<String, TaskChecks>,
    pub overall: TaskChecks,
    pub items: Vec<ItemChecks>,
}

/// Checks every generated answer of `run_id` against its scenario in `suite`, stores one row per
/// item and check (replacing earlier checks of the run), and summarises per task.
pub fn check_run(store: &mut Store, run_id: &str, suite: &Suite) -> Result<CheckReport> {
    if store.run(run_id)?.is_none() {
        return Err(JudgeError::UnknownRun(run_id.into()));
    }
    let records = store.records(run_id)?;
    let mut report =
        CheckReport { run_id: run_id.into(), per_task: BTreeMap::new(), overall: TaskChecks::default(), items: vec![] };
    for record in &records {
        let item = &record.item;
        let scenario = suite.get(&item.scenario_id).ok_or_else(|| JudgeError::UnknownScenario {
            run: run_id.into(),
            scenario: item.scenario_id.clone(),
            suite: suite.dir.display().to_string(),
        })?;
        let group = report.per_task.entry(item.task.clone()).or_default();
        group.items += 1;
        report.overall.items += 1;
        let text = match &record.generation {
            Some(g) if g.status == GenerationStatus::Generated => g.text.clone().unwrap_or_default(),
            _ => {
                group.generation_failed += 1;
                report.overall.generation_failed += 1;
                continue;
            }
        };
        let checks = check_answer(scenario, &text);
        for g in [&mut *group, &mut report.overall] {
            g.all_checks.add(checks.passed());
            for r in &checks.results {
                g.by_check.entry(r.name.clone()).or_default().add(r.passed);
            }
        }
        report.items.push(checks);
    }
    for g in report.per_task.values_mut().chain([&mut report.overall]) {
        g.pass_rate = g.all_checks.rate();
    }
    let rows: Vec<FormatCheck> = report
        .items
        .iter()
        .flat_map(|it| {
            it.results.iter().map(|r| FormatCheck {
                scenario_id: it.scenario_id.clone(),
                task: it.task.clone(),
                name: r.name.clone(),
                passed: r.passed,
                message: r.message.clone(),
            })
        })
        .collect();
    store.replace_format_checks(run_id, &rows)?;
    Ok(report)
}
