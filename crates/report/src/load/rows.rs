//! The stored rows of a run that its assessments are computed from.

use std::collections::BTreeMap;

use h2htalk_store::{
    FormatCheck, JudgeScore, MemoryAnswer, MemoryNote, ReferenceSap, SafetyVerdict, SessionKind, Simulation, Store,
    UsageRow, ValidityRow,
};

use crate::compute::rubric::{JudgeGroup, summarize};

use crate::ReportError;

/// The rows of one run that the assessments are computed from.
#[derive(Clone, Debug)]
pub struct StoredRows {
    pub format_checks: Vec<FormatCheck>,
    /// Per rubric judge, in the order they first judged the run: its rows, and their per-task
    /// summary.
    pub judges: Vec<StoredJudge>,
    /// Per judge that ran the judge validity check, by name: its comparisons.
    pub validity: Vec<(String, Vec<ValidityRow>)>,
    /// Per safety judge (or `rules`): its verdicts.
    pub safety: Vec<(String, Vec<SafetyVerdict>)>,
    pub simulations: Vec<Simulation>,
    /// The tokens of the run's helper calls (none for runs stored before they were recorded).
    pub usage: Vec<UsageRow>,
    /// The null baselines scored under the run's score signatures, over its scenarios (none
    /// before they existed).
    pub baselines: Vec<super::BaselineRecord>,
    /// The memory suite's replies and the `own` mode's notes (none when it did not run).
    pub memory: Vec<MemoryAnswer>,
    pub memory_notes: Vec<MemoryNote>,
    /// What the SAP rules found in the run's references (none when they were not looked at).
    pub reference_sap: Vec<ReferenceSap>,
}

#[derive(Clone, Debug)]
pub struct StoredJudge {
    pub judge: String,
    pub rows: Vec<JudgeScore>,
    pub per_task: BTreeMap<String, JudgeGroup>,
}

/// Reads the rows of `run` the assessments need.
pub fn load_rows(store: &Store, run: &super::RunRecord) -> Result<StoredRows, ReportError> {
    let run_id = run.run.id.as_str();
    let mut judges = Vec::new();
    for judge in store.judges(run_id, SessionKind::Rubric)? {
        let rows = store.judge_scores(run_id, &judge)?;
        let (per_task, _) = summarize(&rows);
        judges.push(StoredJudge { judge, rows, per_task });
    }
    let mut validity = Vec::new();
    for judge in store.validity_judges(run_id)? {
        let rows = store.validity(run_id, &judge)?;
        validity.push((judge, rows));
    }
    let mut safety = Vec::new();
    for judge in store.judges(run_id, SessionKind::Safety)? {
        let rows = store.safety_verdicts(run_id, &judge)?;
        safety.push((judge, rows));
    }
    Ok(StoredRows {
        format_checks: store.format_checks(run_id)?,
        judges,
        validity,
        safety,
        simulations: store.simulations(run_id)?,
        usage: store.usage(run_id)?,
        baselines: super::baselines(store, std::slice::from_ref(run))?,
        memory: store.memory_answers(run_id)?,
        memory_notes: store.memory_notes(run_id)?,
        reference_sap: store.reference_sap(run_id)?,
    })
}
