//! The simulator's findings by scenario tag: per simulation figures, paired differences, groups.

use std::collections::BTreeMap;

use h2htalk_stats::bootstrap::{Bootstrap, Replicates, percentile_interval, stream_seed};

use super::types::*;
use crate::compute::stat::MetricStat;
use crate::load::tags::{ProfileTags, RunTagData, SimulationFigures};

/// The statistic `f` of the column means of `rows` (one row per simulation), with a percentile
/// bootstrap interval: simulations are drawn with replacement (a row's columns together) and `f`
/// taken of each resample's column means. `n` is the number of rows; no interval under two. Also
/// the smallest value of `f` a two-sided test at 5% tells from 0 with power 0.8 at the bootstrap's
/// standard error (`f` is a ratio of sums, so there is no closed form); `None` with the interval.
pub(crate) fn simulation_stat(
    rows: &[Vec<f64>],
    f: impl Fn(&[f64]) -> Option<f64>,
    cfg: &Bootstrap,
    seed: u64,
) -> Option<(MetricStat, Option<f64>)> {
    let cols = rows.first()?.len();
    let means: Vec<f64> = (0..cols).map(|c| rows.iter().map(|r| r[c]).sum::<f64>() / rows.len() as f64).collect();
    let point = f(&means)?;
    let drawn: Vec<Vec<Option<f64>>> = rows.iter().map(|r| r.iter().copied().map(Some).collect()).collect();
    let reps = Replicates::draw(&drawn, cols, cfg.resamples, seed);
    let per_col: Vec<Vec<Option<f64>>> = (0..cols).map(|c| Replicates::pooled_means(&[&reps], c)).collect();
    let stats: Vec<Option<f64>> = (0..cfg.resamples)
        .map(|b| per_col.iter().map(|c| c[b]).collect::<Option<Vec<f64>>>().and_then(|m| f(&m)))
        .collect();
    let iv = percentile_interval(point, &stats, cfg);
    let se = h2htalk_stats::power::sd(&stats.iter().flatten().copied().collect::<Vec<f64>>());
    let detectable = se.filter(|_| iv.lo.is_some()).map(h2htalk_stats::power::min_detectable_from_se);
    Some((MetricStat { n: rows.len(), mean: point, lo: iv.lo, hi: iv.hi }, detectable))
}

/// `m[i] / m[i + 1]`, `None` when the denominator is 0.
pub(crate) fn ratio(m: &[f64], i: usize) -> Option<f64> {
    (m[i + 1] > 0.0).then(|| m[i] / m[i + 1])
}

pub(crate) fn b(v: bool) -> f64 {
    if v { 1.0 } else { 0.0 }
}

/// The simulator's contrasts: multi-session − single (recall of facts asked in a later session −
/// recall of facts asked in the session they were told, over the simulations that asked both) and
/// changing − stable (changed need met − hidden need met, over the simulations whose needs were
/// judged), each paired by simulation with a bootstrap interval resampling simulations.
pub fn simulator_differences(
    sims: &[SimulationFigures],
    cfg: &Bootstrap,
    seed_label: &str,
) -> Vec<SimulatorDifference> {
    let seed = |name: &str| stream_seed(cfg.seed, &["tags", "simulator", seed_label, name]);
    let recall: Vec<Vec<f64>> = sims
        .iter()
        .filter(|s| s.across_sessions.1 > 0 && s.same_session.1 > 0)
        .map(|s| {
            let (a, b) = (s.across_sessions, s.same_session);
            vec![a.0 as f64, a.1 as f64, b.0 as f64, b.1 as f64]
        })
        .collect();
    let needs: Vec<Vec<f64>> = sims.iter().filter_map(|s| s.needs).map(|(h, c)| vec![b(c), 1.0, b(h), 1.0]).collect();
    let without_distance = sims.iter().any(|s| s.all_facts.1 > s.same_session.1 + s.across_sessions.1);
    let specs = [
        (
            "multi_session-single_session",
            "multi-session − single",
            "recall_across_sessions",
            "recall_same_session",
            recall,
            if without_distance {
                "no simulation asked facts both within a session and across sessions (facts stored without their \
                 distance are left out)"
            } else {
                "no simulation asked facts both within a session and across sessions"
            },
        ),
        (
            "changing_need-stable_need",
            "changing − stable",
            "changed_need_met",
            "hidden_need_met",
            needs,
            "no simulation's needs were judged",
        ),
    ];
    specs
        .into_iter()
        .map(|(group, contrast, a, b_name, rows, why)| {
            let sums: Vec<f64> = (0..4).map(|c| rows.iter().map(|r| r[c]).sum()).collect();
            let side = |i: usize| if rows.is_empty() { None } else { ratio(&sums, i) };
            let stat = simulation_stat(&rows, |m| Some(ratio(m, 0)? - ratio(m, 2)?), cfg, seed(group));
            let d = stat.map(|s| s.0);
            SimulatorDifference {
                group,
                contrast,
                a,
                b: b_name,
                n: rows.len(),
                mean_a: side(0),
                mean_b: side(2),
                diff: d.map(|d| d.mean),
                lo: d.and_then(|d| d.lo),
                hi: d.and_then(|d| d.hi),
                excludes_zero: d.is_some_and(|d| d.lo.is_some_and(|lo| lo > 0.0) || d.hi.is_some_and(|hi| hi < 0.0)),
                detectable: stat.and_then(|s| s.1),
                note: d.is_none().then(|| why.to_string()),
            }
        })
        .collect()
}

/// The simulator's measures per attachment style, then per language, of the profiles.
pub fn simulator_groups(
    sims: &[SimulationFigures],
    profiles: &BTreeMap<String, ProfileTags>,
    cfg: &Bootstrap,
    seed_label: &str,
) -> Vec<SimulatorGroup> {
    let mut members: BTreeMap<(u8, String), Vec<&SimulationFigures>> = BTreeMap::new();
    for s in sims {
        if let Some(p) = profiles.get(&s.profile) {
            members.entry((0, format!("attachment:{}", p.attachment))).or_default().push(s);
            members.entry((1, format!("lang:{}", p.lang))).or_default().push(s);
        }
    }
    members
        .into_iter()
        .map(|((kind, group), sims)| {
            let seed = |m: &str| stream_seed(cfg.seed, &["tags", "simulator", seed_label, &group, m]);
            let mut measures = BTreeMap::new();
            let recall: Vec<Vec<f64>> = sims
                .iter()
                .filter(|s| s.all_facts.1 > 0)
                .map(|s| vec![s.all_facts.0 as f64, s.all_facts.1 as f64])
                .collect();
            let hidden: Vec<Vec<f64>> = sims.iter().filter_map(|s| s.needs).map(|(h, _)| vec![b(h), 1.0]).collect();
            let changed: Vec<Vec<f64>> = sims.iter().filter_map(|s| s.needs).map(|(_, c)| vec![b(c), 1.0]).collect();
            let change: Vec<Vec<f64>> =
                sims.iter().filter_map(|s| s.state_change).map(|c| vec![f64::from(c), 1.0]).collect();
            for (name, rows) in SIMULATOR_MEASURES.iter().zip([recall, hidden, changed, change]) {
                if let Some((st, _)) = simulation_stat(&rows, |m| ratio(m, 0), cfg, seed(name)) {
                    measures.insert(name.to_string(), st);
                }
            }
            SimulatorGroup {
                group,
                kind: if kind == 0 { "attachment" } else { "lang" },
                simulations: sims.len(),
                measures,
            }
        })
        .collect()
}

/// The simulator findings of one run from its [`RunTagData`].
pub(crate) fn simulator_tags(run_id: &str, d: &RunTagData, cfg: &Bootstrap) -> SimulatorTags {
    if d.simulations.is_empty() {
        return SimulatorTags::NotRun;
    }
    let sims = &d.simulations;
    let (groups, groups_unavailable) = match &d.profiles {
        Some(Ok(p)) => (simulator_groups(sims, p, cfg, run_id), None),
        Some(Err(why)) => (vec![], Some(why.clone())),
        None => (vec![], Some("the profiles were not read".to_string())),
    };
    SimulatorTags::Run(SimulatorFindings {
        simulations: sims.len(),
        differences: simulator_differences(sims, cfg, run_id),
        groups,
        groups_unavailable,
    })
}
