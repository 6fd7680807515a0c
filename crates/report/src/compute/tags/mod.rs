//! The paper's findings per run: every metric and assessment broken down by the scenarios' tags
//! (implicit against explicit need, changing against stable need, multi-session against single,
//! each emotion), and the differences implicit − explicit, changing − stable, multi-session −
//! single, all with percentile bootstrap intervals.
//!
//! Tags are not stored with a run's items: they are read from the suite the run was planned from
//! (its recorded directory, or the embedded suite), and only when that suite still has the
//! fingerprint the run recorded. Otherwise the run's tags are shown as unavailable, with the reason.
//!
//! Measures: the overlap metrics of each item (the leaderboard's metrics), and where they ran the
//! per-item assessments in the store: `format_checks` (1 when the item passed every format check,
//! else 0), `rubric:JUDGE` (the judge's rubric mean, 1–10; parse and infrastructure failures are no
//! vote), `safety:JUDGE` (1 pass, 0 fail; undecided and failed verdicts are no vote). Safety-set
//! items count only for the safety measures; sub-task items for the others (as in `overall`).
//!
//! Intervals: items are resampled with replacement within their sub-task (a group pools its
//! resampled sub-tasks, as the leaderboard does). A difference resamples each side on its own
//! (unpaired: the two sides are different scenarios), resample by resample. An interval over fewer
//! than two items is not available (`null`; "n/a" in text).

mod simulator;
mod types;

use std::collections::{BTreeMap, BTreeSet};

use h2htalk_stats::bootstrap::{Bootstrap, Replicates, percentile_interval, stream_seed};
use h2htalk_store::SAFETY_GROUP;

use crate::compute::leaderboard::Leaderboard;
use crate::load::RunRecord;
use crate::load::tags::{RunTagData, SAFETY_PREFIX};
use simulator::simulator_tags;
pub use simulator::*;
use types::FIXED_GROUPS;
pub(crate) use types::groups_of;
pub use types::*;

/// The breakdown and differences of one run's `items` over `measures`. `seed_label` (the run id)
/// seeds the resampling streams, so a run's figures do not change when other runs are added.
pub fn breakdown(
    items: &[TagItem],
    measures: &[String],
    cfg: &Bootstrap,
    seed_label: &str,
) -> (Vec<TagGroup>, Vec<TagDifference>) {
    // group → (kind, stratum → rows)
    let mut members: BTreeMap<String, (&'static str, BTreeMap<&str, Vec<Vec<Option<f64>>>>)> = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for it in items {
        for (g, kind) in groups_of(it.tags, it.reference_breaks) {
            *counts.entry(g.clone()).or_default() += 1;
            members
                .entry(g)
                .or_insert((kind, BTreeMap::new()))
                .1
                .entry(it.stratum)
                .or_default()
                .push(it.values.clone());
        }
    }
    let mut order: Vec<String> =
        FIXED_GROUPS.iter().map(|g| g.to_string()).filter(|g| members.contains_key(g)).collect();
    order.extend(members.keys().filter(|g| g.starts_with("emotion:")).cloned());
    let mut groups = Vec::new();
    // group → measure → (n, mean, standard deviation, replicates)
    type Measured = (usize, Option<f64>, Option<f64>, Vec<Option<f64>>);
    let mut reps_of: BTreeMap<String, Vec<Measured>> = BTreeMap::new();
    for name in order {
        let (kind, strata) = &members[&name];
        let reps: Vec<Replicates> = strata
            .iter()
            .map(|(s, rows)| {
                Replicates::draw(
                    rows,
                    measures.len(),
                    cfg.resamples,
                    stream_seed(cfg.seed, &["tags", seed_label, &name, s]),
                )
            })
            .collect();
        let refs: Vec<&Replicates> = reps.iter().collect();
        let mut stats = BTreeMap::new();
        let mut per_measure = Vec::with_capacity(measures.len());
        for (m, measure) in measures.iter().enumerate() {
            let values: Vec<f64> = strata.values().flat_map(|rows| rows.iter().filter_map(|r| r[m])).collect();
            let point = h2htalk_stats::bootstrap::mean(&values);
            let r = Replicates::pooled_means(&refs, m);
            if let Some(mean) = point {
                let iv = percentile_interval(mean, &r, cfg);
                stats.insert(measure.clone(), TagStat { n: values.len(), mean, lo: iv.lo, hi: iv.hi });
            }
            per_measure.push((values.len(), point, h2htalk_stats::power::sd(&values), r));
        }
        groups.push(TagGroup { group: name.clone(), kind, items: counts[&name], measures: stats });
        reps_of.insert(name, per_measure);
    }
    let mut diffs = Vec::new();
    for (contrast, a, b) in CONTRASTS {
        let (Some(ra), Some(rb)) = (reps_of.get(a), reps_of.get(b)) else { continue };
        for (m, measure) in measures.iter().enumerate() {
            let ((n_a, pa, sd_a, reps_a), (n_b, pb, sd_b, reps_b)) = (&ra[m], &rb[m]);
            if pa.is_none() && pb.is_none() {
                continue;
            }
            let diff = pa.zip(*pb).map(|(x, y)| x - y);
            let iv = diff.filter(|_| *n_a >= 2 && *n_b >= 2).and_then(|d| {
                let r: Vec<Option<f64>> =
                    reps_a.iter().zip(reps_b).map(|(x, y)| x.zip(*y).map(|(x, y)| x - y)).collect();
                Some(percentile_interval(d, &r, cfg))
            });
            diffs.push(TagDifference {
                contrast,
                a,
                b,
                measure: measure.clone(),
                n_a: *n_a,
                n_b: *n_b,
                diff,
                lo: iv.and_then(|i| i.lo),
                hi: iv.and_then(|i| i.hi),
                excludes_zero: iv.is_some_and(|i| i.lo.is_some_and(|lo| lo > 0.0) || i.hi.is_some_and(|hi| hi < 0.0)),
                detectable: sd_a
                    .zip(*sd_b)
                    .and_then(|(sa, sb)| h2htalk_stats::power::min_detectable_between(*n_a, sa, *n_b, sb)),
            });
        }
    }
    (groups, diffs)
}

/// The tag report of `runs` (with `data` from [`load`], in the same order), over the leaderboard's
/// overlap `metrics` and each run's assessments.
pub fn build(lb: &Leaderboard, runs: &[RunRecord], data: &[RunTagData], cfg: &Bootstrap) -> TagReport {
    let mut all: Vec<String> = lb.metrics.clone();
    for d in data {
        for a in &d.assessments {
            if !all.contains(a) {
                all.push(a.clone());
            }
        }
    }
    let mut out = Vec::new();
    for (r, d) in runs.iter().zip(data) {
        let stats = lb.runs.iter().find(|s| s.id == r.run.id);
        let present: BTreeSet<&String> = r.items.iter().flat_map(|i| i.metrics.keys()).collect();
        let measures: Vec<String> =
            all.iter().filter(|m| present.contains(m) || d.assessments.contains(m)).cloned().collect();
        let mut rt = RunTags {
            run: r.run.id.clone(),
            label: stats.map_or_else(|| r.run.id.clone(), |s| s.label.clone()),
            model: r.run.spec.model_id.to_string(),
            available: d.tags.is_some(),
            unavailable: d.unavailable.clone(),
            source: d.source.clone(),
            measures: measures.clone(),
            not_run: d.not_run.clone(),
            untagged: 0,
            groups: vec![],
            differences: vec![],
            simulator: simulator_tags(&r.run.id, d, cfg),
        };
        if let Some(tags) = &d.tags {
            let mut items = Vec::new();
            for it in &r.items {
                let Some(t) = tags.get(&it.scenario_id) else {
                    rt.untagged += 1;
                    continue;
                };
                let safety = it.task == SAFETY_GROUP;
                let assessed = d.values.get(&it.scenario_id);
                let values = measures
                    .iter()
                    .map(|m| {
                        let is_safety = m.starts_with(SAFETY_PREFIX);
                        if safety != is_safety {
                            return None;
                        }
                        it.metrics.get(m).or_else(|| assessed.and_then(|a| a.get(m))).copied()
                    })
                    .collect();
                let reference_breaks = d.reference_breaks.as_ref().and_then(|r| r.get(&it.scenario_id).copied());
                items.push(TagItem { stratum: &it.task, tags: t, reference_breaks, values });
            }
            let (groups, differences) = breakdown(&items, &measures, cfg, &r.run.id);
            rt.groups = groups;
            rt.differences = differences;
        }
        out.push(rt);
    }
    TagReport {
        method: "percentile bootstrap; items resampled with replacement within each sub-task; a difference \
                 resamples its two sides independently (unpaired); no interval over fewer than two items",
        measures: all,
        runs: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tags::{ItemTags, ProfileTags, SimulationFigures};

    fn tags(implicit: bool, changing: bool, multi: bool, emotions: &[&str]) -> ItemTags {
        ItemTags {
            implicit_need: implicit,
            changing_need: changing,
            multi_session: multi,
            emotions: emotions.iter().map(|e| e.to_string()).collect(),
        }
    }

    fn cfg() -> Bootstrap {
        Bootstrap::default()
    }

    #[test]
    fn references_that_break_sap_are_a_contrast_only_where_they_were_looked_at() {
        let t = tags(false, false, false, &[]);
        let item = |b: Option<bool>, v: f64| TagItem {
            stratum: "dialogue_emotion",
            tags: &t,
            reference_breaks: b,
            values: vec![Some(v)],
        };
        let looked = vec![item(Some(true), 0.1), item(Some(true), 0.2), item(Some(false), 0.5), item(Some(false), 0.6)];
        let (groups, diffs) = breakdown(&looked, &["rougeL".to_string()], &cfg(), "r");
        let g = |name: &str| groups.iter().find(|g| g.group == name).unwrap();
        assert_eq!((g("reference_breaks_sap").items, g("reference_keeps_sap").items), (2, 2));
        assert_eq!(g("reference_breaks_sap").kind, "reference");
        let d = diffs.iter().find(|d| d.contrast == REFERENCE_CONTRAST).unwrap();
        assert!((d.diff.unwrap() + 0.4).abs() < 1e-12, "{:?}", d.diff);
        // A run whose references were not looked at has neither group nor the contrast.
        let old = vec![item(None, 0.1), item(None, 0.5)];
        let (groups, diffs) = breakdown(&old, &["rougeL".to_string()], &cfg(), "r");
        assert!(groups.iter().all(|g| g.kind != "reference"));
        assert!(diffs.iter().all(|d| d.contrast != REFERENCE_CONTRAST));
    }

    #[test]
    fn groups_have_the_means_of_their_items_and_one_item_has_no_interval() {
        let implicit = tags(true, false, false, &["grief"]);
        let explicit = tags(false, false, false, &["calm"]);
        let lonely = tags(false, true, false, &["calm", "loneliness"]);
        let items = vec![
            TagItem {
                stratum: "dialogue_base",
                tags: &implicit,
                reference_breaks: None,
                values: vec![Some(0.2), Some(7.0)],
            },
            TagItem {
                stratum: "dialogue_base",
                tags: &implicit,
                reference_breaks: None,
                values: vec![Some(0.4), None],
            },
            TagItem {
                stratum: "dialogue_emotion",
                tags: &implicit,
                reference_breaks: None,
                values: vec![Some(0.6), Some(9.0)],
            },
            TagItem {
                stratum: "dialogue_base",
                tags: &explicit,
                reference_breaks: None,
                values: vec![Some(0.5), Some(8.0)],
            },
            TagItem {
                stratum: "dialogue_emotion",
                tags: &lonely,
                reference_breaks: None,
                values: vec![Some(0.9), None],
            },
        ];
        let measures = vec!["rougeL".to_string(), "rubric:j".to_string()];
        let (groups, diffs) = breakdown(&items, &measures, &cfg(), "run");
        let names: Vec<&str> = groups.iter().map(|g| g.group.as_str()).collect();
        assert_eq!(
            names,
            [
                "implicit_need",
                "explicit_need",
                "changing_need",
                "stable_need",
                "single_session",
                "emotion:calm",
                "emotion:grief",
                "emotion:loneliness"
            ]
        );
        let g = |n: &str| groups.iter().find(|g| g.group == n).unwrap();
        let imp = g("implicit_need");
        assert_eq!(imp.items, 3);
        assert_eq!(imp.measures["rougeL"].n, 3);
        assert!((imp.measures["rougeL"].mean - 0.4).abs() < 1e-12);
        assert!(imp.measures["rougeL"].lo.unwrap() <= 0.4 && imp.measures["rougeL"].hi.unwrap() >= 0.4);
        assert_eq!(imp.measures["rubric:j"].n, 2);
        assert_eq!(imp.measures["rubric:j"].mean, 8.0);
        // One item: a mean, no interval.
        let lonely = &g("emotion:loneliness").measures["rougeL"];
        assert_eq!((lonely.n, lonely.mean, lonely.lo, lonely.hi), (1, 0.9, None, None));
        // A measure without any value in a group is absent, not 0.
        assert!(!g("emotion:loneliness").measures.contains_key("rubric:j"));
        assert_eq!(g("changing_need").items, 1);

        // The explicit items are one per sub-task: every resample draws both, so the group has a
        // mean and no interval (an interval of [0.7, 0.7] would claim certainty), and neither has
        // implicit − explicit (0.4 − 0.7 for rougeL).
        let exp = &g("explicit_need").measures["rougeL"];
        assert_eq!((exp.n, exp.lo, exp.hi), (2, None, None));
        let d = diffs.iter().find(|d| d.a == "implicit_need" && d.measure == "rougeL").unwrap();
        assert!((d.diff.unwrap() + 0.3).abs() < 1e-12);
        assert_eq!((d.n_a, d.n_b, d.lo, d.hi, d.excludes_zero), (3, 2, None, None, false));
        assert!(d.detectable.is_some(), "both sides have two items: a spread, so a detectable figure");
        // changing − stable: 0.9 − 0.425; one changing item: no interval.
        let d = diffs.iter().find(|d| d.a == "changing_need" && d.measure == "rougeL").unwrap();
        assert!((d.diff.unwrap() - 0.475).abs() < 1e-12);
        assert_eq!((d.n_a, d.n_b, d.lo, d.hi, d.excludes_zero, d.detectable), (1, 4, None, None, false, None));
        // No multi-session item: no multi-session contrast at all.
        assert!(diffs.iter().all(|d| d.a != "multi_session"));
        // Deterministic with the seed.
        assert_eq!(breakdown(&items, &measures, &cfg(), "run"), (groups, diffs));
    }

    #[test]
    fn a_clear_difference_excludes_zero_and_noise_does_not() {
        let imp = tags(true, true, true, &["stress"]);
        let exp = tags(false, false, false, &["stress"]);
        let mut items = Vec::new();
        for i in 0..60 {
            let v = (i % 10) as f64 / 100.0;
            items.push(TagItem {
                stratum: if i % 2 == 0 { "a" } else { "b" },
                tags: &imp,
                reference_breaks: None,
                values: vec![Some(0.3 + v), Some(v)],
            });
            items.push(TagItem {
                stratum: if i % 2 == 0 { "a" } else { "b" },
                tags: &exp,
                reference_breaks: None,
                values: vec![Some(0.6 + v), Some(0.09 - v)],
            });
        }
        let measures = vec!["composite".to_string(), "noise".to_string()];
        let (_, diffs) = breakdown(&items, &measures, &cfg(), "r");
        assert_eq!(diffs.len(), 6, "three contrasts × two measures");
        for d in &diffs {
            let (lo, hi) = (d.lo.unwrap(), d.hi.unwrap());
            assert!(lo <= d.diff.unwrap() && d.diff.unwrap() <= hi, "{d:?}");
            assert_eq!((d.n_a, d.n_b), (60, 60));
            // Both sides spread as (i % 10) / 100: 2.80 · √(2 · sd² / 60), about 0.015.
            let sd = h2htalk_stats::power::sd(&(0..60).map(|i| (i % 10) as f64 / 100.0).collect::<Vec<_>>()).unwrap();
            let expected = h2htalk_stats::power::min_detectable_between(60, sd, 60, sd).unwrap();
            assert!((d.detectable.unwrap() - expected).abs() < 1e-12 && expected < 0.02, "{d:?}");
            if d.measure == "composite" {
                assert!((d.diff.unwrap() + 0.3).abs() < 1e-9, "{d:?}");
                assert!(d.excludes_zero && hi < 0.0, "{d:?}");
            } else {
                // Both sides have mean 0.045: the difference is 0 and its interval straddles it.
                assert!(d.diff.unwrap().abs() < 1e-9 && lo < 0.0 && hi > 0.0 && !d.excludes_zero, "{d:?}");
            }
        }
    }

    #[test]
    fn a_side_without_values_gives_no_difference() {
        let imp = tags(true, false, false, &["calm"]);
        let exp = tags(false, false, false, &["calm"]);
        let items = vec![
            TagItem { stratum: "a", tags: &imp, reference_breaks: None, values: vec![Some(0.5), None] },
            TagItem { stratum: "a", tags: &imp, reference_breaks: None, values: vec![Some(0.7), None] },
            TagItem { stratum: "a", tags: &exp, reference_breaks: None, values: vec![Some(0.1), Some(1.0)] },
            TagItem { stratum: "a", tags: &exp, reference_breaks: None, values: vec![Some(0.3), Some(0.0)] },
        ];
        let measures = vec!["m".to_string(), "format_checks".to_string()];
        let (_, diffs) = breakdown(&items, &measures, &cfg(), "r");
        let f = diffs.iter().find(|d| d.a == "implicit_need" && d.measure == "format_checks").unwrap();
        assert_eq!((f.diff, f.lo, f.hi, f.n_a, f.n_b), (None, None, None, 0, 2));
        let m = diffs.iter().find(|d| d.a == "implicit_need" && d.measure == "m").unwrap();
        assert!((m.diff.unwrap() - 0.4).abs() < 1e-12 && m.lo.is_some());
        // Every item is stable and single-session: those contrasts have no other side.
        assert!(diffs.iter().all(|d| d.a == "implicit_need"));
    }

    fn sim(
        profile: &str,
        same: (usize, usize),
        across: (usize, usize),
        needs: Option<(bool, bool)>,
    ) -> SimulationFigures {
        SimulationFigures {
            profile: profile.into(),
            same_session: same,
            across_sessions: across,
            all_facts: (same.0 + across.0, same.1 + across.1),
            needs,
            state_change: Some(1),
        }
    }

    #[test]
    fn the_simulator_contrasts_pair_simulations_and_a_clear_difference_excludes_zero() {
        // 40 simulations: within a session 36 of 40 facts recalled (0.9), across sessions 20 of 80
        // (0.25); changed need met in 10 of 40 (0.25), hidden need in 30 (0.75).
        let sims: Vec<SimulationFigures> = (0..40)
            .map(|i| {
                let same = (usize::from(i % 10 != 0), 1);
                let across = (usize::from(i % 2 == 0), 2);
                sim(if i % 2 == 0 { "a" } else { "b" }, same, across, Some((i % 4 != 3, i % 4 == 0)))
            })
            .collect();
        let d = simulator_differences(&sims, &cfg(), "r");
        let recall = &d[0];
        assert_eq!(
            (recall.group, recall.a, recall.b, recall.n),
            ("multi_session-single_session", "recall_across_sessions", "recall_same_session", 40)
        );
        assert!((recall.mean_a.unwrap() - 0.25).abs() < 1e-12 && (recall.mean_b.unwrap() - 0.9).abs() < 1e-12);
        assert!((recall.diff.unwrap() + 0.65).abs() < 1e-12);
        let (lo, hi) = (recall.lo.unwrap(), recall.hi.unwrap());
        assert!(lo < -0.65 && -0.65 < hi && hi < 0.0 && recall.excludes_zero, "{recall:?}");
        // The detectable difference is 2.80 bootstrap standard errors: about 2.80 / 3.92 of the
        // interval's width for a near-normal bootstrap.
        let (det, width) = (recall.detectable.unwrap(), hi - lo);
        assert!(det > 0.5 * width && det < 0.9 * width, "{det} against a width of {width}");
        let needs = &d[1];
        assert_eq!((needs.a, needs.b, needs.n), ("changed_need_met", "hidden_need_met", 40));
        assert!(
            (needs.diff.unwrap() + 0.5).abs() < 1e-12 && needs.hi.unwrap() < 0.0 && needs.excludes_zero,
            "{needs:?}"
        );
        // Deterministic with the seed.
        assert_eq!(simulator_differences(&sims, &cfg(), "r"), d);

        // Equal rates on both sides: the difference is 0 and its interval straddles it.
        let even: Vec<SimulationFigures> = (0..40)
            .map(|i| {
                sim(
                    "a",
                    (usize::from(i % 2 == 0), 1),
                    (usize::from(i % 4 < 2) * 2 - usize::from(i % 8 == 1), 2),
                    Some((i % 2 == 0, i % 3 == 0 || i % 6 == 1)),
                )
            })
            .collect();
        for d in simulator_differences(&even, &cfg(), "r") {
            let (lo, hi) = (d.lo.unwrap(), d.hi.unwrap());
            assert!(lo < d.diff.unwrap() && d.diff.unwrap() < hi && lo < 0.0 && hi > 0.0 && !d.excludes_zero, "{d:?}");
        }
    }

    #[test]
    fn simulator_contrasts_need_both_sides_and_two_simulations_for_an_interval() {
        // The first asked no fact across sessions (stopped early) and its needs were not judged: it
        // is left out of both contrasts; one simulation remains: values, no interval.
        let sims = vec![sim("a", (1, 1), (0, 0), None), sim("a", (0, 1), (2, 2), Some((false, true)))];
        let d = simulator_differences(&sims, &cfg(), "r");
        assert_eq!((d[0].n, d[0].diff, d[0].lo, d[0].hi, d[0].excludes_zero), (1, Some(1.0), None, None, false));
        assert_eq!((d[0].detectable, d[1].detectable), (None, None));
        assert_eq!((d[1].n, d[1].diff, d[1].lo, d[1].hi), (1, Some(1.0), None, None));
        // No judged simulation: no difference, and why.
        let d = simulator_differences(&sims[..1], &cfg(), "r");
        assert_eq!((d[1].n, d[1].diff, d[1].mean_a), (0, None, None));
        assert_eq!(d[1].note.as_deref(), Some("no simulation's needs were judged"));
        assert!(d[0].diff.is_none() && d[0].note.is_some());
    }

    #[test]
    fn simulator_groups_by_attachment_and_language() {
        let profiles = BTreeMap::from([
            ("a".to_string(), ProfileTags { attachment: "anxious".into(), lang: "en".into() }),
            ("b".to_string(), ProfileTags { attachment: "secure".into(), lang: "en".into() }),
        ]);
        let sims = vec![
            sim("a", (1, 1), (1, 2), Some((true, false))),
            sim("a", (0, 1), (0, 2), Some((true, true))),
            sim("b", (1, 1), (2, 2), None),
            // A profile not in the map is in no group.
            sim("c", (1, 1), (2, 2), None),
        ];
        let g = simulator_groups(&sims, &profiles, &cfg(), "r");
        let names: Vec<&str> = g.iter().map(|g| g.group.as_str()).collect();
        assert_eq!(names, ["attachment:anxious", "attachment:secure", "lang:en"]);
        let anxious = &g[0];
        assert_eq!((anxious.kind, anxious.simulations), ("attachment", 2));
        // Recall pooled over facts: 2 of 6.
        assert!((anxious.measures["recall"].mean - 2.0 / 6.0).abs() < 1e-12 && anxious.measures["recall"].lo.is_some());
        assert_eq!((anxious.measures["hidden_need_met"].mean, anxious.measures["changed_need_met"].mean), (1.0, 0.5));
        // One simulation: no interval; needs not judged: no figure (never 0).
        let secure = &g[1];
        assert_eq!((secure.measures["recall"].mean, secure.measures["recall"].lo), (1.0, None));
        assert!(!secure.measures.contains_key("hidden_need_met"));
        assert_eq!((g[2].kind, g[2].simulations, g[2].measures["state_change"].n), ("lang", 3, 3));
    }

    #[test]
    fn no_items_no_groups() {
        let (g, d) = breakdown(&[], &["m".to_string()], &cfg(), "r");
        assert!(g.is_empty() && d.is_empty());
    }
}
