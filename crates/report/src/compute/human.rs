//! Judges against people: for a set of items people rated (`h2htalk annotate`), how well each judge
//! agrees with them, beside how well the people agree with one another, each with its interval.
//!
//! - Rubric sets: a rater's value of an item is the mean of the criteria they scored (1–10), the
//!   judge's its mean score of the same answer. Judge–human: Krippendorff's alpha (interval metric)
//!   and Spearman's ρ over the (item, rater) pairs, each pair a unit of two values. Human–human:
//!   alpha over the items two or more people rated (each person a value), ρ over every pair of
//!   people on an item.
//! - Pairwise sets: a verdict is 1 (the first run better), 0 (the second) or ½ (a tie; the judge's
//!   disagreeing orders count as a tie, as in its ranking). Agreement: the share of (item, rater)
//!   pairs where the judge's verdict equals the person's (Wilson interval), and alpha (nominal).
//!   Human–human: the share of pairs of people on an item who agree, and alpha.
//!
//! Intervals are 95% percentile bootstrap intervals over units (alpha, ρ) or Wilson intervals
//! (shares); none under two units.

use std::collections::BTreeMap;

use h2htalk_stats::Proportion;
use h2htalk_stats::agreement::{Metric, alpha_interval};
use h2htalk_stats::bootstrap::{Bootstrap, Interval, stream_seed};
use h2htalk_stats::correlation::spearman_interval;
use h2htalk_store::{AnnotationKind, AnnotationSet, JudgeOutcome, PairOutcome, SessionKind, Store};
use serde::Serialize;

use crate::ReportError;

/// One agreement: between a judge and people, or among people.
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    /// `judge:NAME` or `people`.
    pub between: String,
    /// The units compared ((item, rater) pairs for a judge; items rated twice or more for people).
    pub units: usize,
    /// Krippendorff's alpha with its interval; `None` when undefined (under two units, no variation).
    pub alpha: Option<Interval>,
    /// Rubric: Spearman's ρ with its interval.
    pub spearman: Option<Interval>,
    /// Pairwise: the share of exact agreements.
    pub agreement: Option<Proportion>,
}

/// A rated set and how its judges and people agree.
#[derive(Clone, Debug, Serialize)]
pub struct HumanAgreement {
    pub set: String,
    pub kind: AnnotationKind,
    pub items: usize,
    /// Items with at least one rating, the people who rated and their ratings.
    pub rated_items: usize,
    pub raters: Vec<String>,
    pub ratings: usize,
    /// Each judge that judged the set's answers, then `people`.
    pub agreements: Vec<Agreement>,
}

/// The agreement tables of every rated set in `store` whose items belong to `runs` (every set when
/// `runs` is empty).
pub fn human_agreements(store: &Store, runs: &[String], cfg: &Bootstrap) -> Result<Vec<HumanAgreement>, ReportError> {
    let mut out = Vec::new();
    for name in store.annotation_sets()? {
        let set = store.annotation_set(&name)?.expect("a listed set exists");
        let in_runs = |r: &str| runs.is_empty() || runs.iter().any(|x| x == r);
        if !set.items.iter().all(|i| in_runs(&i.run_a) && i.run_b.as_deref().is_none_or(in_runs)) {
            continue;
        }
        if let Some(a) = agreement_of(store, &set, cfg)? {
            out.push(a);
        }
    }
    Ok(out)
}

/// The agreement of one set; `None` when nobody rated it yet.
pub fn agreement_of(
    store: &Store,
    set: &AnnotationSet,
    cfg: &Bootstrap,
) -> Result<Option<HumanAgreement>, ReportError> {
    let ratings = store.human_ratings(&set.name)?;
    if ratings.is_empty() {
        return Ok(None);
    }
    let items: BTreeMap<&str, _> = set.items.iter().map(|i| (i.item.as_str(), i)).collect();
    // Each person's value of each item (rubric: the mean of the criteria they scored; pairwise: the
    // verdict seen from the first run).
    let mut human: BTreeMap<&str, BTreeMap<&str, f64>> = BTreeMap::new();
    let mut sums: BTreeMap<(&str, &str), (f64, usize)> = BTreeMap::new();
    for r in &ratings {
        let Some(it) = items.get(r.item.as_str()) else { continue };
        let v = match set.kind {
            AnnotationKind::Rubric => r.value,
            AnnotationKind::Pairwise if it.swapped => 1.0 - r.value,
            AnnotationKind::Pairwise => r.value,
        };
        let e = sums.entry((r.item.as_str(), r.rater.as_str())).or_default();
        *e = (e.0 + v, e.1 + 1);
    }
    for ((item, rater), (sum, n)) in sums {
        human.entry(item).or_default().insert(rater, sum / n as f64);
    }
    let raters: Vec<String> = {
        let mut r: Vec<String> = ratings.iter().map(|r| r.rater.clone()).collect();
        r.sort();
        r.dedup();
        r
    };
    // Every judge's value of each item.
    let mut judges: BTreeMap<String, BTreeMap<&str, f64>> = BTreeMap::new();
    for it in &set.items {
        match (set.kind, it.run_b.as_deref()) {
            (AnnotationKind::Rubric, _) => {
                for judge in store.judges(&it.run_a, SessionKind::Rubric)? {
                    let scored = store.judge_scores(&it.run_a, &judge)?.into_iter().find(|s| {
                        s.scenario_id == it.scenario_id && s.outcome == JudgeOutcome::Scored && s.mean.is_some()
                    });
                    if let Some(s) = scored {
                        judges.entry(judge).or_default().insert(it.item.as_str(), s.mean.expect("checked"));
                    }
                }
            }
            (AnnotationKind::Pairwise, Some(run_b)) => {
                for (first, second, flipped) in [(it.run_a.as_str(), run_b, false), (run_b, it.run_a.as_str(), true)] {
                    for judge in store.pair_judges(first, second)? {
                        let row = store
                            .pair_judgments(&judge, first, second)?
                            .into_iter()
                            .find(|p| p.scenario_id == it.scenario_id);
                        let v = match row.map(|p| p.outcome) {
                            Some(PairOutcome::A) => 1.0,
                            Some(PairOutcome::B) => 0.0,
                            Some(PairOutcome::Tie | PairOutcome::Inconsistent) => 0.5,
                            _ => continue,
                        };
                        let v = if flipped { 1.0 - v } else { v };
                        judges.entry(judge).or_default().insert(it.item.as_str(), v);
                    }
                }
            }
            (AnnotationKind::Pairwise, None) => {}
        }
    }
    let metric = match set.kind {
        AnnotationKind::Rubric => Metric::Interval,
        AnnotationKind::Pairwise => Metric::Nominal,
    };
    let measure = |between: String, units: Vec<Vec<f64>>, pairs: Vec<(f64, f64)>| -> Agreement {
        let seed = stream_seed(cfg.seed, &["human", &set.name, &between]);
        let (spearman, agreement) = match set.kind {
            AnnotationKind::Rubric => (spearman_interval(&pairs, cfg, seed), None),
            AnnotationKind::Pairwise => {
                let same = pairs.iter().filter(|(a, b)| (a - b).abs() < 1e-9).count();
                (None, Some(Proportion::new(same, pairs.len())))
            }
        };
        Agreement { between, units: units.len(), alpha: alpha_interval(&units, metric, cfg, seed), spearman, agreement }
    };
    let mut agreements = Vec::new();
    for (judge, values) in &judges {
        let mut units = Vec::new();
        let mut pairs = Vec::new();
        for (item, people) in &human {
            let Some(j) = values.get(item) else { continue };
            for h in people.values() {
                units.push(vec![*j, *h]);
                pairs.push((*j, *h));
            }
        }
        if !units.is_empty() {
            agreements.push(measure(format!("judge:{judge}"), units, pairs));
        }
    }
    let mut units = Vec::new();
    let mut pairs = Vec::new();
    for people in human.values().filter(|p| p.len() >= 2) {
        let vs: Vec<f64> = people.values().copied().collect();
        for i in 0..vs.len() {
            for j in i + 1..vs.len() {
                pairs.push((vs[i], vs[j]));
            }
        }
        units.push(vs);
    }
    agreements.push(measure("people".into(), units, pairs));
    Ok(Some(HumanAgreement {
        set: set.name.clone(),
        kind: set.kind,
        items: set.items.len(),
        rated_items: human.len(),
        raters,
        ratings: ratings.len(),
        agreements,
    }))
}
