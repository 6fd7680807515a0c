//! A panel of judges: several judges score every answer of a run with the same rubric (each one's
//! judgments are stored under its own name). The panel's score of an item on a criterion is the
//! mean of the votes it got; a vote is a usable score, so an unparsable answer or a failed request
//! is no vote (counted apart, per judge), and neither is an answer that was never generated.
//! Agreement per criterion is Krippendorff's alpha (interval metric) over the items at least two
//! judges scored ([`h2htalk_stats::agreement`]).

use std::collections::BTreeMap;

use h2htalk_stats::agreement::{Metric, alpha};
use h2htalk_store::{JudgeOutcome, JudgeScore};
use serde::Serialize;

use super::rubric::{JudgeGroup, summarize as summarize_judge};

/// The agreement of the panel on one criterion (or on the items' means).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Agreement {
    pub metric: Metric,
    /// Krippendorff's alpha; `None` (shown "n/a") with fewer than two pairable items or no
    /// variation among the votes.
    pub alpha: Option<f64>,
    /// Items with votes from at least two judges: the only ones alpha counts.
    pub pairable_items: usize,
    /// The votes on those items.
    pub pairable_votes: usize,
}

/// One criterion of one family.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PanelCriterion {
    /// Mean over the items with at least one vote of the mean of their votes; `None` without votes.
    pub mean: Option<f64>,
    /// Each judge's mean over the items it scored; `None` when it scored none.
    pub per_judge: BTreeMap<String, Option<f64>>,
    pub agreement: Agreement,
}

/// What one judge did on one family: votes, and judgments that are no votes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JudgeVotes {
    /// Items scored (each is a vote on every criterion).
    pub scored: usize,
    /// Answers the judge could not give in the asked form: no vote.
    pub judge_parse_failed: usize,
    /// Requests that failed: no vote.
    pub judge_failed: usize,
}

/// The panel on one family (dialogue, recollection, itinerary).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PanelFamily {
    /// Items of the family with a generated, non-empty answer.
    pub items: usize,
    /// Items with at least one vote.
    pub rated: usize,
    /// Mean over the rated items of the mean of the judges' item means; `None` without votes.
    pub mean: Option<f64>,
    /// Agreement on the items' means (interval).
    pub agreement: Agreement,
    pub criteria: BTreeMap<String, PanelCriterion>,
    pub per_judge: BTreeMap<String, JudgeVotes>,
}

/// The panel's view of a run: every judge's scores, their mean, and their agreement.
#[derive(Clone, Debug, Serialize)]
pub struct PanelReport {
    pub run_id: String,
    /// The judges, in the order they first judged the run.
    pub judges: Vec<String>,
    /// Each judge's own summary (as `judge_run` reports it): per sub-task and overall.
    pub per_judge: BTreeMap<String, JudgeSummary>,
    /// By family name.
    pub families: BTreeMap<String, PanelFamily>,
}

/// One judge's summary of a run.
#[derive(Clone, Debug, Serialize)]
pub struct JudgeSummary {
    pub per_task: BTreeMap<String, JudgeGroup>,
    pub overall: JudgeGroup,
}

fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.into_iter().fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The panel summary of `run_id` from the rubric judgments of every judge that judged it, in the
/// order they first did (with one judge it is that judge's scores, and every alpha is `None`).
pub fn summarize(run_id: &str, judged: &[(String, Vec<JudgeScore>)]) -> PanelReport {
    let judges: Vec<String> = judged.iter().map(|(j, _)| j.clone()).collect();
    let mut per_judge = BTreeMap::new();
    let mut rows: Vec<(String, JudgeScore)> = Vec::new();
    for (j, scores) in judged {
        let (per_task, overall) = summarize_judge(scores);
        per_judge.insert(j.clone(), JudgeSummary { per_task, overall });
        rows.extend(scores.iter().cloned().map(|r| (j.clone(), r)));
    }
    // family → item → judge → the judgment.
    let mut by_family: BTreeMap<String, BTreeMap<String, BTreeMap<String, JudgeScore>>> = BTreeMap::new();
    for (j, r) in rows {
        if matches!(r.outcome, JudgeOutcome::GenerationFailed | JudgeOutcome::EmptyAnswer) {
            continue;
        }
        by_family
            .entry(r.family.name().to_string())
            .or_default()
            .entry(r.scenario_id.clone())
            .or_default()
            .insert(j, r);
    }
    let mut families = BTreeMap::new();
    for (family, items) in by_family {
        let mut votes: BTreeMap<String, JudgeVotes> =
            judges.iter().map(|j| (j.clone(), JudgeVotes::default())).collect();
        let mut criterion_names: Vec<String> = Vec::new();
        for judged in items.values() {
            for (j, r) in judged {
                let v = votes.entry(j.clone()).or_default();
                match r.outcome {
                    JudgeOutcome::Scored => v.scored += 1,
                    JudgeOutcome::JudgeParseFailed => v.judge_parse_failed += 1,
                    JudgeOutcome::JudgeFailed => v.judge_failed += 1,
                    _ => {}
                }
                for k in r.scores.iter().flat_map(|s| s.keys()) {
                    if !criterion_names.contains(k) {
                        criterion_names.push(k.clone());
                    }
                }
            }
        }
        // The votes of each item: judge → scores and mean, scored judgments only.
        let voted: Vec<Vec<(&String, &JudgeScore)>> = items
            .values()
            .map(|judged| judged.iter().filter(|(_, r)| r.outcome == JudgeOutcome::Scored).collect())
            .collect();
        let agreement_of = |units: Vec<Vec<f64>>| {
            let pairable: Vec<&Vec<f64>> = units.iter().filter(|u| u.len() >= 2).collect();
            Agreement {
                metric: Metric::Interval,
                alpha: alpha(&units, Metric::Interval),
                pairable_items: pairable.len(),
                pairable_votes: pairable.iter().map(|u| u.len()).sum(),
            }
        };
        let mut criteria = BTreeMap::new();
        for c in &criterion_names {
            let units: Vec<Vec<f64>> = voted
                .iter()
                .map(|v| v.iter().filter_map(|(_, r)| r.scores.as_ref()?.get(c).map(|x| f64::from(*x))).collect())
                .collect();
            let per_judge = judges
                .iter()
                .map(|j| {
                    let m = mean(voted.iter().flat_map(|v| {
                        v.iter()
                            .filter(|(name, _)| *name == j)
                            .filter_map(|(_, r)| r.scores.as_ref()?.get(c))
                            .map(|x| f64::from(*x))
                    }));
                    (j.clone(), m)
                })
                .collect();
            criteria.insert(
                c.clone(),
                PanelCriterion {
                    mean: mean(units.iter().filter_map(|u| mean(u.iter().copied()))),
                    per_judge,
                    agreement: agreement_of(units),
                },
            );
        }
        let item_means: Vec<Vec<f64>> = voted.iter().map(|v| v.iter().filter_map(|(_, r)| r.mean).collect()).collect();
        families.insert(
            family,
            PanelFamily {
                items: items.len(),
                rated: item_means.iter().filter(|u| !u.is_empty()).count(),
                mean: mean(item_means.iter().filter_map(|u| mean(u.iter().copied()))),
                agreement: agreement_of(item_means),
                criteria,
                per_judge: votes,
            },
        );
    }
    PanelReport { run_id: run_id.into(), judges, per_judge, families }
}
