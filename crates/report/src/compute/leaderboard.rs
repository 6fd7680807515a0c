//! The leaderboard: per sub-task, per family and overall means of every metric with bootstrap
//! intervals and coverage, a ranking with rank intervals, paired comparisons and SAP on/off pairs.
//! Every output (Markdown, CSV, JSON, HTML) is written from this one value.

use std::collections::{BTreeMap, BTreeSet};

use h2htalk_data::{Family, Task};
use h2htalk_stats::bootstrap::{
    Bootstrap, Paired, Replicates, paired_bootstrap, percentile_interval, rank_intervals, stream_seed,
};
use serde::Serialize;
use serde_json::Value;

pub use super::stat::{Coverage, GroupKind, MetricStat};
use crate::load::{BaselineRecord, Generation, ItemRecord, RunRecord, Scoring, order_metrics};

#[derive(Clone, Debug, Serialize)]
pub struct GroupStats {
    pub group: String,
    pub kind: GroupKind,
    pub coverage: Coverage,
    /// Metric name → mean; a metric with no value in the group is absent (never a 0).
    pub metrics: BTreeMap<String, MetricStat>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunStats {
    pub id: String,
    /// A short unique name for tables and charts.
    pub label: String,
    pub created_at: String,
    pub status: String,
    /// `provider:name` from the run specification.
    pub model: String,
    /// `on` or `off` from the run specification.
    pub sap: Option<String>,
    /// The run's protocol fingerprint (`protocol:sha256:...`, see [`h2htalk_store::Protocol`]).
    pub protocol: String,
    /// The run specification.
    pub provenance: Value,
    pub signatures: Vec<String>,
    pub composite_computed: bool,
    pub groups: Vec<GroupStats>,
}

impl RunStats {
    pub fn group(&self, name: &str) -> Option<&GroupStats> {
        self.groups.iter().find(|g| g.group == name)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RankEntry {
    pub rank: usize,
    pub run: String,
    pub label: String,
    pub n: usize,
    pub mean: f64,
    /// `None` over fewer than two items.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// The interval of the run's rank over the bootstrap resamples; `None` (n/a) when the run's
    /// mean has no interval.
    pub rank_lo: Option<usize>,
    pub rank_hi: Option<usize>,
}

/// A paired comparison `a` − `b` on the items both runs scored.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub group: String,
    pub metric: String,
    #[serde(flatten)]
    pub paired: Paired,
}

/// SAP on against SAP off for one model (the latest run of each).
#[derive(Clone, Debug, Serialize)]
pub struct SapPair {
    pub model: String,
    pub on: String,
    pub off: String,
    /// `on` − `off`, per group.
    pub comparisons: Vec<Comparison>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BootstrapInfo {
    pub resamples: usize,
    pub seed: u64,
    pub confidence: f64,
    pub method: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct Leaderboard {
    pub schema: &'static str,
    pub h2htalk_version: &'static str,
    pub bootstrap: BootstrapInfo,
    /// The runs are of different protocols (allowed with `--allow-mixed`); every run's label then
    /// names its protocol.
    pub mixed_protocols: bool,
    /// The metric runs are ranked and compared by.
    pub rank_metric: Option<String>,
    /// Every metric present in any run, in report order.
    pub metrics: Vec<String>,
    /// The sub-tasks present, in canonical order, with their families.
    pub tasks: Vec<(String, String)>,
    pub runs: Vec<RunStats>,
    pub ranking: Vec<RankEntry>,
    /// The null baselines over the runs' items (`status` is `baseline`; never ranked), filled by
    /// the report writer from the store ([`baseline_stats`]); empty where none were scored.
    pub baselines: Vec<RunStats>,
    /// Runs left out of the ranking, with the reason.
    pub unranked: Vec<(String, String)>,
    /// Each ranked run against the next one.
    pub comparisons: Vec<Comparison>,
    pub sap: Vec<SapPair>,
    /// Format checks, judge scores, the safety score, the simulator, tokens and cost per run
    /// ([`crate::assessments`]); filled from the store by [`crate::write_report_with`] (empty when
    /// the leaderboard is built from loaded runs alone).
    pub assessments: crate::assessments::Assessments,
    /// The breakdown by scenario tags ([`crate::tags`]); filled by the report writer, which reads
    /// the tags and assessments (`None` from [`build`] alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<crate::tags::TagReport>,
    /// Models answered several times (`--epochs`): their samples' figures on the ranking metric
    /// ([`crate::compute::epochs`]); absent when no model has two samples.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub epochs: Vec<crate::compute::epochs::SampleGroup>,
}

pub const SCHEMA: &str = "h2htalk-leaderboard/1";

/// The strata of a run: the sub-tasks present (canonical order), then other sets (by name).
fn strata(items: &[ItemRecord]) -> Vec<String> {
    let names: BTreeSet<&str> = items.iter().map(|i| i.task.as_str()).collect();
    let mut out: Vec<String> =
        Task::ALL.iter().filter(|t| names.contains(t.stem())).map(|t| t.stem().to_string()).collect();
    out.extend(names.iter().filter(|n| Task::from_stem(n).is_none()).map(|n| n.to_string()));
    out
}

fn coverage_of<'a>(items: impl Iterator<Item = &'a crate::load::ItemRecord>) -> Coverage {
    let mut c = Coverage::default();
    for i in items {
        c.items += 1;
        match i.generation {
            Generation::Pending => c.pending += 1,
            Generation::Generated => c.generated += 1,
            Generation::Failed => c.failed += 1,
        }
        match i.scoring {
            Scoring::Scored => c.scored += 1,
            Scoring::EmptyPrediction => {
                c.scored += 1;
                c.empty_predictions += 1;
            }
            Scoring::Dropped => c.dropped += 1,
            Scoring::Unscored => c.unscored += usize::from(i.generation == Generation::Generated),
        }
    }
    c
}

struct Stratum {
    name: String,
    coverage: Coverage,
    /// Scored items × metrics.
    rows: Vec<Vec<Option<f64>>>,
    reps: Replicates,
}

fn group_stats(
    name: &str,
    kind: GroupKind,
    members: &[&Stratum],
    metrics: &[String],
    cfg: &Bootstrap,
) -> (GroupStats, Vec<Vec<Option<f64>>>) {
    let mut coverage = Coverage::default();
    for s in members {
        coverage.add(&s.coverage);
    }
    let reps: Vec<&Replicates> = members.iter().map(|s| &s.reps).collect();
    let mut out = BTreeMap::new();
    let mut replicates = Vec::with_capacity(metrics.len());
    for (m, metric) in metrics.iter().enumerate() {
        let values: Vec<f64> = members.iter().flat_map(|s| s.rows.iter().filter_map(|r| r[m])).collect();
        let r = Replicates::pooled_means(&reps, m);
        if let Some(point) = h2htalk_stats::bootstrap::mean(&values) {
            let iv = percentile_interval(point, &r, cfg);
            out.insert(metric.clone(), MetricStat { n: values.len(), mean: point, lo: iv.lo, hi: iv.hi });
        }
        replicates.push(r);
    }
    (GroupStats { group: name.to_string(), kind, coverage, metrics: out }, replicates)
}

/// Statistics of one run's items (`id` seeds the resampling); also the overall replicates of each
/// metric (for rank intervals).
fn run_stats(
    id: &str,
    all: &[ItemRecord],
    metrics: &[String],
    cfg: &Bootstrap,
) -> (Vec<GroupStats>, Vec<Vec<Option<f64>>>) {
    let strata: Vec<Stratum> = strata(all)
        .into_iter()
        .map(|name| {
            let items: Vec<_> = all.iter().filter(|i| i.task == name).collect();
            let rows: Vec<Vec<Option<f64>>> = items
                .iter()
                .filter(|i| i.scoring.has_values())
                .map(|i| metrics.iter().map(|m| i.metrics.get(m).copied()).collect())
                .collect();
            let reps = Replicates::draw(&rows, metrics.len(), cfg.resamples, stream_seed(cfg.seed, &[id, &name]));
            Stratum { coverage: coverage_of(items.into_iter()), name, rows, reps }
        })
        .collect();
    let mut groups = Vec::new();
    let tasks: Vec<&Stratum> = strata.iter().filter(|s| Task::from_stem(&s.name).is_some()).collect();
    for s in &tasks {
        groups.push(group_stats(&s.name, GroupKind::Task, &[s], metrics, cfg).0);
    }
    for f in Family::ALL {
        let members: Vec<&Stratum> =
            tasks.iter().copied().filter(|s| Task::from_stem(&s.name).is_some_and(|t| t.family() == f)).collect();
        if !members.is_empty() {
            groups.push(group_stats(f.name(), GroupKind::Family, &members, metrics, cfg).0);
        }
    }
    let mut overall_reps = vec![vec![None; cfg.resamples]; metrics.len()];
    if !tasks.is_empty() {
        let (g, reps) = group_stats("overall", GroupKind::Overall, &tasks, metrics, cfg);
        groups.push(g);
        overall_reps = reps;
    }
    for s in strata.iter().filter(|s| Task::from_stem(&s.name).is_none()) {
        groups.push(group_stats(&s.name, GroupKind::Set, &[s], metrics, cfg).0);
    }
    (groups, overall_reps)
}

/// Items both runs scored with `metric` in `group` (a sub-task, family, `overall` or a set name):
/// (stratum, value in a, value in b).
fn shared_pairs(a: &RunRecord, b: &RunRecord, group: &str, metric: &str) -> Vec<(usize, f64, f64)> {
    let in_group = |task: &str| match group {
        "overall" => Task::from_stem(task).is_some(),
        g => task == g || Task::from_stem(task).is_some_and(|t| t.family().name() == g),
    };
    let bv: BTreeMap<(&str, &str), f64> = b
        .items
        .iter()
        .filter(|i| in_group(&i.task))
        .filter_map(|i| i.metrics.get(metric).map(|v| ((i.task.as_str(), i.scenario_id.as_str()), *v)))
        .collect();
    let mut strata: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for i in a.items.iter().filter(|i| in_group(&i.task)) {
        if let (Some(va), Some(vb)) = (i.metrics.get(metric), bv.get(&(i.task.as_str(), i.scenario_id.as_str()))) {
            let s = strata.iter().position(|s| *s == i.task).unwrap_or_else(|| {
                strata.push(&i.task);
                strata.len() - 1
            });
            out.push((s, *va, *vb));
        }
    }
    out
}

fn compare(a: &RunRecord, b: &RunRecord, group: &str, metric: &str, cfg: &Bootstrap) -> Option<Comparison> {
    let pairs = shared_pairs(a, b, group, metric);
    let seed = stream_seed(cfg.seed, &["paired", &a.run.id, &b.run.id, group, metric]);
    paired_bootstrap(&pairs, cfg, seed).map(|paired| Comparison {
        a: a.run.id.clone(),
        b: b.run.id.clone(),
        group: group.to_string(),
        metric: metric.to_string(),
        paired,
    })
}

/// A paired comparison of two loaded runs on `group` and `metric` (public for callers that compare
/// runs outside a report).
pub fn compare_runs(a: &RunRecord, b: &RunRecord, group: &str, metric: &str, cfg: &Bootstrap) -> Option<Comparison> {
    compare(a, b, group, metric, cfg)
}

/// Builds the leaderboard of `runs`. `rank_metric` defaults to the first of composite, bertscore,
/// embedding, rougeL and then the report order that every run has over its sub-tasks.
pub fn build(
    runs: &[RunRecord],
    cfg: &Bootstrap,
    rank_metric: Option<&str>,
) -> Result<Leaderboard, crate::ReportError> {
    if cfg.resamples == 0 || !(cfg.confidence > 0.0 && cfg.confidence < 1.0) {
        return Err(crate::ReportError::Usage(format!(
            "bootstrap needs resamples > 0 and 0 < confidence < 1 (got {} and {})",
            cfg.resamples, cfg.confidence
        )));
    }
    let metrics = order_metrics(runs.iter().flat_map(|r| r.items.iter().flat_map(|i| i.metrics.keys())));
    let protocols: BTreeSet<String> = runs.iter().map(|r| r.run.spec.protocol().fingerprint()).collect();
    let mixed = protocols.len() > 1;
    let mut stats = Vec::new();
    let mut overall_reps = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for r in runs {
        let model = r.run.spec.model_id.to_string();
        let sap = Some(r.run.spec.sap.mode.as_str().to_string());
        let mut label = format!("{model} · SAP {}", sap.as_deref().unwrap_or("?"));
        if mixed {
            label += &format!(" · protocol {}", r.run.spec.protocol().short());
        }
        labels.push(label);
        let (groups, reps) = run_stats(&r.run.id, &r.items, &metrics, cfg);
        overall_reps.push(reps);
        stats.push(RunStats {
            id: r.run.id.clone(),
            label: String::new(),
            created_at: r.run.created_at.clone(),
            status: r.run.status.as_str().to_string(),
            model,
            sap,
            protocol: r.run.spec.protocol().fingerprint(),
            provenance: serde_json::to_value(&r.run.spec).expect("a run specification serialises"),
            signatures: r.signatures.iter().cloned().collect(),
            composite_computed: r.composite_computed,
            groups,
        });
    }
    for (i, s) in stats.iter_mut().enumerate() {
        let dup = labels.iter().filter(|l| **l == labels[i]).count() > 1;
        s.label = if dup { format!("{} · {}", labels[i], s.id) } else { labels[i].clone() };
    }

    let overall_mean = |s: &RunStats, m: &str| s.group("overall").and_then(|g| g.metrics.get(m)).copied();
    let rank_metric = match rank_metric {
        Some(m) => {
            if !metrics.iter().any(|x| x == m) {
                return Err(crate::ReportError::Usage(format!(
                    "no run has metric `{m}`; the metrics present are: {}",
                    metrics.join(", ")
                )));
            }
            Some(m.to_string())
        }
        None => {
            // The composite, else the paper's heaviest single metrics, else the report order.
            let preferred = ["composite", "bertscore", "embedding", "rougeL"];
            let candidates = preferred.iter().map(|p| p.to_string()).chain(metrics.iter().cloned());
            let all: Vec<String> = candidates.filter(|m| metrics.contains(m)).collect();
            all.iter().find(|m| stats.iter().all(|s| overall_mean(s, m).is_some())).or_else(|| all.first()).cloned()
        }
    };

    let mut ranking = Vec::new();
    let mut unranked = Vec::new();
    let mut comparisons = Vec::new();
    if let Some(metric) = &rank_metric {
        let m = metrics.iter().position(|x| x == metric).expect("rank metric is listed");
        let ranked: Vec<usize> = (0..stats.len()).filter(|r| overall_mean(&stats[*r], metric).is_some()).collect();
        for (r, s) in stats.iter().enumerate() {
            if !ranked.contains(&r) {
                let why = if s.group("overall").is_none() {
                    "no sub-task items".to_string()
                } else {
                    format!("no `{metric}` values over the sub-tasks")
                };
                unranked.push((s.id.clone(), why));
            }
        }
        let points: Vec<f64> = ranked.iter().map(|r| overall_mean(&stats[*r], metric).unwrap().mean).collect();
        let reps: Vec<Vec<Option<f64>>> = ranked.iter().map(|r| overall_reps[*r][m].clone()).collect();
        let intervals = rank_intervals(&points, &reps, cfg);
        let ranks = h2htalk_stats::bootstrap::ranks(&points);
        for (k, r) in ranked.iter().enumerate() {
            let st = overall_mean(&stats[*r], metric).unwrap();
            ranking.push(RankEntry {
                rank: ranks[k],
                run: stats[*r].id.clone(),
                label: stats[*r].label.clone(),
                n: st.n,
                mean: st.mean,
                lo: st.lo,
                hi: st.hi,
                rank_lo: intervals[k].map(|i| i.0),
                rank_hi: intervals[k].map(|i| i.1),
            });
        }
        ranking.sort_by(|a, b| a.rank.cmp(&b.rank).then_with(|| a.run.cmp(&b.run)));
        let index = |id: &str| runs.iter().position(|r| r.run.id == id).expect("ranked runs exist");
        for w in ranking.windows(2) {
            if let Some(c) = compare(&runs[index(&w[0].run)], &runs[index(&w[1].run)], "overall", metric, cfg) {
                comparisons.push(c);
            }
        }
    }

    // SAP on/off: the latest run of each mode per model (runs are oldest first).
    let mut by_model: BTreeMap<String, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let key = serde_json::to_string(&r.run.spec.model_id).expect("a model spec serialises");
        let e = by_model.entry(key).or_default();
        match stats[i].sap.as_deref() {
            Some("on") if e.0.is_none_or(|j| runs[j].run.created_at <= r.run.created_at) => e.0 = Some(i),
            Some("off") if e.1.is_none_or(|j| runs[j].run.created_at <= r.run.created_at) => e.1 = Some(i),
            _ => {}
        }
    }
    let mut sap = Vec::new();
    if let Some(metric) = &rank_metric {
        for (on, off) in by_model.into_values().filter_map(|(a, b)| a.zip(b)) {
            let groups: Vec<String> =
                stats[on].groups.iter().filter(|g| g.kind != GroupKind::Task).map(|g| g.group.clone()).collect();
            let comparisons: Vec<Comparison> =
                groups.iter().filter_map(|g| compare(&runs[on], &runs[off], g, metric, cfg)).collect();
            sap.push(SapPair {
                model: stats[on].model.clone(),
                on: stats[on].id.clone(),
                off: stats[off].id.clone(),
                comparisons,
            });
        }
    }

    let present: BTreeSet<&str> = runs.iter().flat_map(|r| r.items.iter().map(|i| i.task.as_str())).collect();
    let tasks = Task::ALL
        .iter()
        .filter(|t| present.contains(t.stem()))
        .map(|t| (t.stem().to_string(), t.family().name().to_string()))
        .collect();
    Ok(Leaderboard {
        schema: SCHEMA,
        h2htalk_version: h2htalk_metrics::VERSION,
        bootstrap: BootstrapInfo {
            resamples: cfg.resamples,
            seed: cfg.seed,
            confidence: cfg.confidence,
            method: "percentile bootstrap; scenarios resampled with replacement within each sub-task \
                     (families and overall pool the resampled sub-tasks); paired tests resample shared \
                     scenarios with both runs' values together",
        },
        mixed_protocols: mixed,
        metrics,
        tasks,
        runs: stats,
        ranking,
        baselines: Vec::new(),
        unranked,
        comparisons,
        sap,
        assessments: Default::default(),
        tags: None,
        epochs: match &rank_metric {
            Some(m) => crate::compute::epochs::sample_groups(runs, m, cfg),
            None => Vec::new(),
        },
        rank_metric,
    })
}

/// The statistics of each null baseline ([`crate::load::baselines`]) over `metrics`, as rows
/// marked `baseline` (id `baseline:NAME`, one signature each; the signature is named in the label
/// when the report holds more than one).
pub fn baseline_stats(baselines: &[BaselineRecord], metrics: &[String], cfg: &Bootstrap) -> Vec<RunStats> {
    let signatures: BTreeSet<&str> = baselines.iter().map(|b| b.signature.as_str()).collect();
    baselines
        .iter()
        .map(|b| {
            let id = format!("baseline:{}", b.baseline);
            let mut label = format!("baseline · {}", b.baseline);
            if signatures.len() > 1 {
                label += &format!(" · {}", b.signature);
            }
            let (groups, _) = run_stats(&format!("{id}|{}", b.signature), &b.items, metrics, cfg);
            RunStats {
                id,
                label,
                created_at: String::new(),
                status: "baseline".into(),
                model: format!("baseline:{}", b.baseline),
                sap: None,
                protocol: String::new(),
                provenance: Value::Null,
                signatures: vec![b.signature.clone()],
                composite_computed: b.composite_computed,
                groups,
            }
        })
        .collect()
}
