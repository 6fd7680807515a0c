//! The summary of one run: counts and means per group, tokens and failures. It is what `h2htalk
//! run` prints at the end and `runs show` prints, and it computes its means with the report's own
//! function ([`h2htalk_stats::bootstrap::mean`]) over the same items the report uses, so they cannot disagree.

use std::collections::BTreeMap;

use h2htalk_data::Task;
use h2htalk_store::{SAFETY_GROUP, Store};
use serde::Serialize;

use crate::ReportError;
use crate::load::{Generation, ItemRecord, RunRecord, Scoring, load_runs};

/// Counts and means of one group of a run's items.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub group: String,
    pub items: usize,
    pub generated: usize,
    pub failed: usize,
    /// Items with metric values (in `strict`, empty answers included, at 0).
    pub scored: usize,
    pub dropped: usize,
    /// Each metric's mean over the items that have it; a metric no item has is absent, never 0.
    pub means: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    /// The sub-tasks in their canonical order, then the SAP safety set if the run has it.
    pub groups: Vec<GroupSummary>,
    /// The eleven sub-tasks pooled (the paper's overall); the safety set stays apart, as in reports.
    pub overall: GroupSummary,
    /// Counts over every item of the run, the safety set included (no means).
    pub all: GroupSummary,
    /// Tokens of the answers whose usage is known.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Answers whose server reported no usage: their tokens and cost are unknown (not 0).
    pub unknown_usage: usize,
    pub failure_reasons: BTreeMap<String, usize>,
    /// Fault classes met while generating (retried or not), over every session of the run.
    pub faults_seen: BTreeMap<String, u64>,
}

fn group(name: &str, items: &[&ItemRecord], with_means: bool) -> GroupSummary {
    let mut g = GroupSummary {
        group: name.to_string(),
        items: items.len(),
        generated: 0,
        failed: 0,
        scored: 0,
        dropped: 0,
        means: BTreeMap::new(),
    };
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for i in items {
        match i.generation {
            Generation::Generated => g.generated += 1,
            Generation::Failed => g.failed += 1,
            Generation::Pending => {}
        }
        match i.scoring {
            Scoring::Dropped => g.dropped += 1,
            Scoring::Scored | Scoring::EmptyPrediction => {
                g.scored += 1;
                for (k, v) in &i.metrics {
                    values.entry(k).or_default().push(*v);
                }
            }
            Scoring::Unscored => {}
        }
    }
    if with_means {
        g.means = values
            .into_iter()
            .filter_map(|(k, v)| h2htalk_stats::bootstrap::mean(&v).map(|m| (k.to_string(), m)))
            .collect();
    }
    g
}

/// The summary of a loaded run.
pub fn summarize_record(run: &RunRecord) -> RunSummary {
    let mut names: Vec<&str> = Vec::new();
    for i in &run.items {
        if !names.contains(&i.task.as_str()) {
            names.push(&i.task);
        }
    }
    // Sub-tasks in their canonical order, the safety set last.
    names.sort_by_key(|n| Task::from_stem(n).map_or(usize::MAX, |t| Task::ALL.iter().position(|x| *x == t).unwrap()));
    let groups =
        names.iter().map(|n| group(n, &run.items.iter().filter(|i| i.task == *n).collect::<Vec<_>>(), true)).collect();
    let tasks: Vec<&ItemRecord> = run.items.iter().filter(|i| i.task != SAFETY_GROUP).collect();
    let all: Vec<&ItemRecord> = run.items.iter().collect();
    let mut failure_reasons = BTreeMap::new();
    let mut faults_seen = BTreeMap::new();
    let (mut input_tokens, mut output_tokens, mut unknown_usage) = (0, 0, 0);
    for i in &run.items {
        input_tokens += i.input_tokens.unwrap_or(0);
        output_tokens += i.output_tokens.unwrap_or(0);
        unknown_usage += usize::from(i.unknown_usage);
        if let Some(kind) = &i.error_kind {
            *failure_reasons.entry(kind.clone()).or_default() += 1;
        }
        for f in &i.faults {
            *faults_seen.entry(f.clone()).or_default() += 1;
        }
    }
    RunSummary {
        run_id: run.run.id.clone(),
        groups,
        overall: group("overall", &tasks, true),
        all: group("all", &all, false),
        input_tokens,
        output_tokens,
        unknown_usage,
        failure_reasons,
        faults_seen,
    }
}

/// The summary of run `run_id` in `store`.
pub fn summarize(store: &Store, run_id: &str) -> Result<RunSummary, ReportError> {
    let runs = load_runs(store, store.path(), &[run_id.to_string()])?;
    Ok(summarize_record(&runs[0]))
}
