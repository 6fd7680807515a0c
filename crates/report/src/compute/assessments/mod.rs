//! Every assessment of a run beside the overlap metrics: format checks, the rubric judge (each
//! judge apart), the SAP safety score (and its SAP on − off difference per model), the user
//! simulator, the memory suite, and tokens and cost.
//!
//! One typed value per run ([`RunAssessment`]) is computed here from the rows the store holds;
//! `leaderboard.json` serialises it, and `leaderboard.md`, `leaderboard.csv`, `report.html` and
//! `runs show` are all written from its tables ([`crate::render::tables`]), so a figure cannot differ between them.
//!
//! Counts come from the rows alone ([`crate::compute::rubric`], [`crate::compute::panel`],
//! [`crate::compute::validity`], [`crate::compute::safety_counts`]); every mean carries its 95%
//! bootstrap interval (items resampled within their sub-task, [`h2htalk_stats::bootstrap`]), every
//! rate its Wilson interval ([`h2htalk_stats::Proportion`]).
//!
//! A section with no stored rows is `{"status": "not run"}`, never a 0; a judge answer that could
//! not be parsed and a failed judge request are counted apart and never as scores; an interval over
//! fewer than two items is `null` ("n/a").

mod sections;
#[cfg(test)]
mod tests;
mod types;

use h2htalk_stats::bootstrap::Bootstrap;
use h2htalk_store::{JudgeScore, Store};
pub use sections::simulator_section;
use sections::{
    format_section, judge_section, memory_section, reference_sap_section, safety_section, sap_safety, usage_section,
};

use crate::ReportError;
use crate::compute::panel;
use crate::compute::validity::ValidityReport;
use crate::load::RunRecord;
use crate::load::rows::{StoredRows, load_rows};
pub use types::*;

/// The assessments of `runs`, read from `store`.
pub fn assess(store: &Store, runs: &[RunRecord], cfg: &Bootstrap) -> Result<Assessments, ReportError> {
    // One run's rows at a time: a sweep of many runs never holds them all.
    let mut out = build_with(runs, |run| load_rows(store, run), cfg)?;
    // Sets rated by people are the report's when all their runs are in it (`runs show` of one run
    // shows a rubric set of that run alone).
    let ids: Vec<String> = runs.iter().map(|r| r.run.id.clone()).collect();
    out.human = crate::compute::human::human_agreements(store, &ids, cfg)?;
    out.judge_cards = crate::compute::judge_cards::judge_cards(store, runs)?;
    Ok(out)
}

/// The assessments of `runs` from their stored rows (`rows[i]` belongs to `runs[i]`).
pub fn build(runs: &[RunRecord], rows: &[StoredRows], cfg: &Bootstrap) -> Result<Assessments, ReportError> {
    assert_eq!(runs.len(), rows.len(), "one set of rows per run");
    let mut rows = rows.iter();
    build_with(runs, |_| Ok(rows.next().expect("one set of rows per run").clone()), cfg)
}

/// The assessments of `runs`, each run's rows got from `rows_of` in turn and dropped once its
/// assessment is made (only its safety verdicts are kept, for the SAP on − off pairs).
fn build_with(
    runs: &[RunRecord],
    mut rows_of: impl FnMut(&RunRecord) -> Result<StoredRows, ReportError>,
    cfg: &Bootstrap,
) -> Result<Assessments, ReportError> {
    let mut out = Assessments::default();
    let mut safety = Vec::with_capacity(runs.len());
    for run in runs {
        let rows = rows_of(run)?;
        out.runs.push(assess_run(run, &rows, cfg)?);
        safety.push(rows.safety);
    }
    out.sap_safety = sap_safety(runs, &safety, cfg);
    Ok(out)
}

fn assess_run(run: &RunRecord, rows: &StoredRows, cfg: &Bootstrap) -> Result<RunAssessment, ReportError> {
    let id = run.run.id.as_str();
    let judged: Vec<(String, Vec<JudgeScore>)> =
        rows.judges.iter().map(|j| (j.judge.clone(), j.rows.clone())).collect();
    Ok(RunAssessment {
        run: id.to_string(),
        format_checks: format_section(run, &rows.format_checks, cfg),
        judge: judge_section(run, &rows.judges, cfg),
        safety: safety_section(id, &rows.safety, cfg),
        simulator: simulator_section(id, &rows.simulations, cfg),
        usage: usage_section(run, rows),
        panel: if judged.len() >= 2 {
            Section::Run(PanelSection { report: panel::summarize(id, &judged) })
        } else {
            Section::NotRun
        },
        baselines: crate::compute::baselines::baselines_section(run, &rows.baselines, cfg),
        memory: memory_section(id, &rows.memory, &rows.memory_notes, cfg),
        reference_sap: reference_sap_section(run, &rows.reference_sap),
        judge_validity: if rows.validity.is_empty() {
            Section::NotRun
        } else {
            Section::Run(ValiditySection {
                judges: rows
                    .validity
                    .iter()
                    .map(|(judge, v)| ValidityJudge {
                        judge: judge.clone(),
                        families: ValidityReport::from_rows(judge, v.clone()).families,
                    })
                    .collect(),
            })
        },
    })
}
