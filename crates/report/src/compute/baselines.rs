//! Where "no skill at all" sits: per sub-task, each null baseline's mean on the run's items, the
//! strongest of them, the run's paired difference to it with its interval and the smallest
//! difference those items can show, and the normalised score (run − baseline) / (1 − baseline).
//! A run whose difference is not shown above zero is flagged.

use std::collections::BTreeMap;

use h2htalk_data::SAFETY_GROUP;
use h2htalk_stats::bootstrap::{Bootstrap, Paired, paired_bootstrap, stream_seed};
use serde::Serialize;

use super::assessments::Section;
use super::stat::MetricStat;
use crate::load::{BaselineRecord, RunRecord};

/// The metrics a comparison with the baselines is made on, in order of preference.
const PREFERRED: [&str; 4] = ["composite", "bertscore", "embedding", "rougeL"];

/// One group (a sub-task, or `overall` where each item is compared with its sub-task's strongest).
#[derive(Clone, Debug, Serialize)]
pub struct BaselineGroup {
    pub group: String,
    /// The run's mean over the items it shares with the baselines.
    pub run: Option<MetricStat>,
    /// Each baseline's mean over the same items.
    pub baselines: BTreeMap<String, MetricStat>,
    /// The baseline with the highest mean (per sub-task; `overall` names none).
    pub strongest: Option<String>,
    /// run − strongest, paired by scenario.
    pub difference: Option<Paired>,
    /// The smallest paired difference these items can show (5%, power 0.8) at the observed spread
    /// of the paired differences; `None` with fewer than two.
    pub detectable: Option<f64>,
    /// (run − strongest) / (1 − strongest); `None` when the strongest is 1 or a mean is missing.
    pub normalized: Option<f64>,
    /// Whether the difference's interval lies above 0 (the run is shown to beat the strongest
    /// baseline); `false` is the flag.
    pub above: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct BaselineSection {
    /// The metric compared on.
    pub metric: String,
    pub groups: Vec<BaselineGroup>,
    /// Sub-tasks where the run is not shown above the strongest baseline.
    pub not_above: Vec<String>,
}

/// The metric a run is compared with its baselines on: the first of [`PREFERRED`] its items have.
fn metric_of(run: &RunRecord) -> Option<&'static str> {
    PREFERRED.into_iter().find(|m| run.items.iter().any(|i| i.metrics.contains_key(*m)))
}

/// The baseline section of `run` from the baselines stored under its scores' signatures.
pub fn baselines_section(run: &RunRecord, baselines: &[BaselineRecord], cfg: &Bootstrap) -> Section<BaselineSection> {
    let Some(metric) = metric_of(run) else { return Section::NotRun };
    if baselines.is_empty() {
        return Section::NotRun;
    }
    let mut by_item: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for b in baselines {
        for i in &b.items {
            if let Some(v) = i.metrics.get(metric) {
                by_item.entry((i.scenario_id.as_str(), b.baseline.as_str())).or_insert(*v);
            }
        }
    }
    let names: Vec<&str> =
        baselines.iter().map(|b| b.baseline.as_str()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let mut tasks: BTreeMap<&str, Vec<(&str, f64)>> = BTreeMap::new();
    for item in run.items.iter().filter(|i| i.task != SAFETY_GROUP) {
        if let Some(v) = item.metrics.get(metric) {
            tasks.entry(item.task.as_str()).or_default().push((item.scenario_id.as_str(), *v));
        }
    }
    let id = run.run.id.as_str();
    let stat = |values: Vec<f64>, labels: &[&str]| -> Option<MetricStat> {
        let iv = h2htalk_stats::bootstrap::stratified_mean(&[values.clone()], cfg, stream_seed(cfg.seed, labels))?;
        Some(MetricStat { n: values.len(), mean: iv.mean, lo: iv.lo, hi: iv.hi })
    };
    let compare = |group: &str, pairs: Vec<(usize, f64, f64)>, strongest: Option<String>, baselines| {
        let difference = paired_bootstrap(&pairs, cfg, stream_seed(cfg.seed, &["baselines", id, group]));
        let run_mean = stat(pairs.iter().map(|p| p.1).collect(), &["baselines", id, group, "run"]);
        let base_mean = difference.as_ref().map(|d| d.mean_b);
        BaselineGroup {
            group: group.to_string(),
            run: run_mean,
            baselines,
            strongest,
            detectable: difference.as_ref().and_then(|d| d.detectable),
            normalized: match (difference.as_ref(), base_mean) {
                (Some(d), Some(b)) if b < 1.0 => Some((d.mean_a - b) / (1.0 - b)),
                _ => None,
            },
            above: difference.as_ref().is_some_and(|d| d.diff.lo.is_some_and(|lo| lo > 0.0)),
            difference,
        }
    };
    let mut groups = Vec::new();
    let mut overall: Vec<(usize, f64, f64)> = Vec::new();
    for (t, (task, items)) in tasks.iter().enumerate() {
        let mut baselines = BTreeMap::new();
        for name in &names {
            let values: Vec<f64> = items.iter().filter_map(|(sid, _)| by_item.get(&(*sid, *name)).copied()).collect();
            if let Some(s) = stat(values, &["baselines", id, task, name]) {
                baselines.insert(name.to_string(), s);
            }
        }
        let strongest = baselines
            .iter()
            .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean).then_with(|| b.0.cmp(a.0)))
            .map(|(n, _)| n.clone());
        let pairs: Vec<(usize, f64, f64)> = match &strongest {
            Some(s) => {
                items.iter().filter_map(|(sid, v)| by_item.get(&(*sid, s.as_str())).map(|b| (t, *v, *b))).collect()
            }
            None => vec![],
        };
        overall.extend(pairs.iter().copied());
        groups.push(compare(task, pairs, strongest, baselines));
    }
    let not_above: Vec<String> = groups.iter().filter(|g| !g.above).map(|g| g.group.clone()).collect();
    groups.push(compare("overall", overall, None, BTreeMap::new()));
    Section::Run(BaselineSection { metric: metric.to_string(), groups, not_above })
}
