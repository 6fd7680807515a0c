//! One rubric judge's judgments of a run, counted and averaged per sub-task and overall.

use std::collections::BTreeMap;

use h2htalk_store::{JudgeOutcome, JudgeScore};
use serde::Serialize;

/// Rubric judgments of one group (a sub-task, `sap_safety`, or all).
#[derive(Clone, Debug, Default, Serialize)]
pub struct JudgeGroup {
    pub items: usize,
    pub scored: usize,
    pub judge_parse_failed: usize,
    pub judge_failed: usize,
    pub generation_failed: usize,
    pub empty_answer: usize,
    /// Mean score per criterion over the scored items.
    pub criteria: BTreeMap<String, f64>,
    /// Mean of the items' mean scores; `None` when nothing was scored.
    pub mean: Option<f64>,
}

/// Per criterion (sum, count), and the sum of item means.
type Sums = (BTreeMap<String, (f64, usize)>, f64);

/// Per-task and overall summaries of one judge's rubric judgments of a run.
pub fn summarize(rows: &[JudgeScore]) -> (BTreeMap<String, JudgeGroup>, JudgeGroup) {
    let mut per_task: BTreeMap<String, JudgeGroup> = BTreeMap::new();
    let mut overall = JudgeGroup::default();
    let mut sums: BTreeMap<String, Sums> = BTreeMap::new();
    let mut all_sums: Sums = Default::default();
    for row in rows {
        let group = per_task.entry(row.task.clone()).or_default();
        for g in [&mut *group, &mut overall] {
            g.items += 1;
            match row.outcome {
                JudgeOutcome::Scored => g.scored += 1,
                JudgeOutcome::JudgeParseFailed => g.judge_parse_failed += 1,
                JudgeOutcome::JudgeFailed => g.judge_failed += 1,
                JudgeOutcome::GenerationFailed => g.generation_failed += 1,
                JudgeOutcome::EmptyAnswer => g.empty_answer += 1,
            }
        }
        // The store refuses a scored row without scores and mean.
        if let (JudgeOutcome::Scored, Some(scores), Some(mean)) = (row.outcome, &row.scores, row.mean) {
            let entry = sums.entry(row.task.clone()).or_default();
            for s in [entry, &mut all_sums] {
                for (k, v) in scores {
                    let c = s.0.entry(k.clone()).or_default();
                    c.0 += f64::from(*v);
                    c.1 += 1;
                }
                s.1 += mean;
            }
        }
    }
    let finish = |g: &mut JudgeGroup, s: &Sums| {
        g.criteria = s.0.iter().map(|(k, (sum, n))| (k.clone(), sum / *n as f64)).collect();
        g.mean = (g.scored > 0).then(|| s.1 / g.scored as f64);
    };
    for (task, g) in per_task.iter_mut() {
        finish(g, &sums.get(task).cloned().unwrap_or_default());
    }
    finish(&mut overall, &all_sums);
    (per_task, overall)
}
