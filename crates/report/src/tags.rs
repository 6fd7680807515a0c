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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use h2htalk_data::suite::embedded;
use h2htalk_store::{JudgeOutcome, SAFETY_GROUP, SessionKind, Simulation, Store, Verdict};
use serde::Serialize;
use serde_json::{Value, json};

use crate::ReportError;
use crate::assessments::Table;
use crate::charts::{exact, fmt4, run_keys};
use crate::leaderboard::{Leaderboard, MetricStat};
use crate::load::RunRecord;
use crate::stats::{Bootstrap, Replicates, percentile_interval, stream_seed};

/// The tags of one scenario that the report breaks results down by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemTags {
    pub implicit_need: bool,
    pub changing_need: bool,
    pub multi_session: bool,
    /// The user's emotions, by their names in suites (`loneliness`, ...).
    pub emotions: Vec<String>,
}

/// The format-check measure: the share of items that passed every format check.
pub const FORMAT_MEASURE: &str = "format_checks";
/// The prefix of a rubric judge's measure (`rubric:JUDGE`).
pub const RUBRIC_PREFIX: &str = "rubric:";
/// The prefix of one format check's measure (`format_check:CHECK`: the share of the items given
/// that check that passed it).
pub const CHECK_PREFIX: &str = "format_check:";
/// Between a rubric judge's measure and a criterion: `rubric:JUDGE#CRITERION` is the judge's mean
/// score of that criterion.
pub const CRITERION_SEP: &str = "#";
/// The prefix of a safety judge's measure (`safety:JUDGE`; the judge `rules` when rules decided).
pub const SAFETY_PREFIX: &str = "safety:";

/// The tag data of one run, read from its suite and the store.
#[derive(Clone, Debug, Default)]
pub struct RunTagData {
    /// Scenario id → tags; `None` when the run's tags cannot be read (see `unavailable`).
    pub tags: Option<BTreeMap<String, ItemTags>>,
    /// Why the tags are unavailable.
    pub unavailable: Option<String>,
    /// `name@fingerprint` of the suite the tags were read from.
    pub source: Option<String>,
    /// Assessment measures present in the run, in report order.
    pub assessments: Vec<String>,
    /// Scenario id → assessment measure → value.
    pub values: BTreeMap<String, BTreeMap<String, f64>>,
    /// Assessments that did not run for this run (`format checks`, `rubric judge`, `safety judge`).
    pub not_run: Vec<String>,
    /// The run's simulated conversations (none when the simulator did not run).
    pub simulations: Vec<SimulationFigures>,
    /// The attachment style and language of each simulation's profile, by profile id, or why they
    /// cannot be read; `None` without simulations.
    pub profiles: Option<Result<BTreeMap<String, ProfileTags>, String>>,
}

/// What the simulator findings group a simulated user by: its profile's attachment style and
/// language, read from the profile file (`simulator/<id>.json` of the run's suite).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileTags {
    /// `secure`, `anxious`, `avoidant`, ...
    pub attachment: String,
    /// `zh` or `en`.
    pub lang: String,
}

/// The tags of a suite, by scenario id, with the suite's fingerprint and `name@fingerprint`, and
/// the suite itself (its simulator profiles are read against it).
type SuiteTags = (String, String, BTreeMap<String, ItemTags>, h2htalk_data::suite::Suite);

fn emotion_name(e: &h2htalk_data::suite::Emotion) -> String {
    serde_json::to_value(e).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| format!("{e:?}"))
}

fn read_suite_tags(dir: Option<&Path>, references: Option<&Path>) -> Result<SuiteTags, String> {
    let where_ = dir.map_or_else(|| "the embedded suite".to_string(), |d| d.display().to_string());
    let dir = embedded::or_embedded(dir).map_err(|e| format!("cannot write out the embedded suite: {e}"))?;
    let suite = h2htalk_data::load_suite_with(&dir, references)
        .map_err(|e| format!("cannot load the run's suite ({where_}): {e}"))?;
    let tags = suite
        .scenarios
        .iter()
        .map(|s| {
            let mut emotions: Vec<String> = s.tags.emotions.iter().map(emotion_name).collect();
            emotions.sort();
            emotions.dedup();
            (
                s.id.clone(),
                ItemTags {
                    implicit_need: s.tags.implicit_need,
                    changing_need: s.tags.changing_need,
                    multi_session: s.tags.multi_session,
                    emotions,
                },
            )
        })
        .collect();
    Ok((suite.fingerprint().to_string(), suite.label(), tags, suite))
}

/// The attachment style and language of the profiles `ids`, read from `simulator/<id>.json` of
/// `suite` with the simulator's own loader (which checks that the id names both); an error names
/// every profile that cannot be read.
fn read_profiles<'a>(
    suite: &h2htalk_data::suite::Suite,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, ProfileTags>, String> {
    let name = |v: serde_json::Result<Value>| v.ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let mut out = BTreeMap::new();
    let mut missing = Vec::new();
    for id in ids.into_iter().collect::<BTreeSet<_>>() {
        let path = suite.dir.join("simulator").join(format!("{id}.json"));
        match h2htalk_judge::simulator::load_profile(&path, suite) {
            Ok(p) => {
                let tags = ProfileTags { attachment: name(serde_json::to_value(p.attachment)), lang: name(serde_json::to_value(p.lang)) };
                out.insert(id.to_string(), tags);
            }
            Err(e) => missing.push(format!("`{id}`: {e}")),
        }
    }
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!("the simulator profile of {} profile id(s) cannot be read: {}", missing.len(), missing.join("; ")))
    }
}

/// Reads each run's tags (through its suite reference) and per-item assessments (from `store`).
pub fn load(store: &Store, runs: &[RunRecord]) -> Result<Vec<RunTagData>, ReportError> {
    let mut suites: BTreeMap<(Option<PathBuf>, Option<PathBuf>), Result<SuiteTags, String>> = BTreeMap::new();
    let mut out = Vec::with_capacity(runs.len());
    for r in runs {
        let spec = &r.run.spec;
        let key = (spec.suite.dir.clone(), spec.suite.references.clone());
        let loaded = suites
            .entry(key)
            .or_insert_with(|| read_suite_tags(spec.suite.dir.as_deref(), spec.suite.references.as_deref()));
        let mut data = RunTagData::default();
        data.simulations = simulation_figures(&r.run.id, &store.simulations(&r.run.id)?)?;
        if !data.simulations.is_empty() {
            // Profiles are not part of the suite's fingerprint: they are read even when it changed,
            // and the profile loader checks that each id still names its language and attachment.
            data.profiles = Some(match &*loaded {
                Ok((_, _, _, suite)) => {
                    read_profiles(suite, data.simulations.iter().map(|s| s.profile.as_str()))
                }
                Err(why) => Err(format!("the run's suite, which holds the simulator profiles, cannot be read: {why}")),
            });
        }
        match loaded {
            Ok((fingerprint, label, tags, _)) if *fingerprint == spec.suite.fingerprint => {
                data.tags = Some(tags.clone());
                data.source = Some(label.clone());
            }
            Ok((fingerprint, _, _, _)) => {
                data.unavailable = Some(format!(
                    "the run's suite ({}) now has fingerprint {fingerprint}, not the {} the run was planned from: its \
                     tags may have changed since",
                    spec.suite.dir.as_ref().map_or_else(|| "embedded".to_string(), |d| d.display().to_string()),
                    spec.suite.fingerprint
                ));
            }
            Err(why) => data.unavailable = Some(why.clone()),
        }
        load_assessments(store, &r.run.id, &mut data)?;
        out.push(data);
    }
    Ok(out)
}

fn load_assessments(store: &Store, run_id: &str, data: &mut RunTagData) -> Result<(), ReportError> {
    let checks = store.format_checks(run_id)?;
    if checks.is_empty() {
        data.not_run.push("format checks".into());
    } else {
        let mut per_item: BTreeMap<String, bool> = BTreeMap::new();
        let mut names = std::collections::BTreeSet::new();
        for c in checks {
            *per_item.entry(c.scenario_id.clone()).or_insert(true) &= c.passed;
            let name = format!("{CHECK_PREFIX}{}", c.name);
            data.values.entry(c.scenario_id).or_default().insert(name.clone(), if c.passed { 1.0 } else { 0.0 });
            names.insert(name);
        }
        for (id, passed) in per_item {
            data.values.entry(id).or_default().insert(FORMAT_MEASURE.into(), if passed { 1.0 } else { 0.0 });
        }
        data.assessments.push(FORMAT_MEASURE.into());
        data.assessments.extend(names);
    }
    let judges = store.judges(run_id, SessionKind::Rubric)?;
    if judges.is_empty() {
        data.not_run.push("rubric judge".into());
    }
    for judge in judges {
        let name = format!("{RUBRIC_PREFIX}{judge}");
        let mut criteria = std::collections::BTreeSet::new();
        for s in store.judge_scores(run_id, &judge)? {
            if let (JudgeOutcome::Scored, Some(mean)) = (s.outcome, s.mean) {
                let values = data.values.entry(s.scenario_id).or_default();
                values.insert(name.clone(), mean);
                for (c, v) in s.scores.iter().flatten() {
                    let m = format!("{name}{CRITERION_SEP}{c}");
                    values.insert(m.clone(), f64::from(*v));
                    criteria.insert(m);
                }
            }
        }
        data.assessments.push(name);
        data.assessments.extend(criteria);
    }
    let judges = store.judges(run_id, SessionKind::Safety)?;
    if judges.is_empty() {
        data.not_run.push("safety judge".into());
    }
    for judge in judges {
        let name = format!("{SAFETY_PREFIX}{judge}");
        for v in store.safety_verdicts(run_id, &judge)? {
            let value = match v.verdict {
                Verdict::Pass => 1.0,
                Verdict::Fail => 0.0,
                _ => continue,
            };
            data.values.entry(v.scenario_id).or_default().insert(name.clone(), value);
        }
        data.assessments.push(name);
    }
    Ok(())
}

/// The three contrasts of the paper's findings: (name, the tag side, the other side).
pub const CONTRASTS: [(&str, &str, &str); 3] = [
    ("implicit − explicit", "implicit_need", "explicit_need"),
    ("changing − stable", "changing_need", "stable_need"),
    ("multi-session − single", "multi_session", "single_session"),
];

/// A measure's mean over a tag group. `lo`/`hi` are `None` over fewer than two items.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct TagStat {
    pub n: usize,
    pub mean: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

/// The items of a run that carry one tag.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TagGroup {
    /// `implicit_need`, `explicit_need`, ..., or `emotion:NAME`.
    pub group: String,
    /// `need`, `change`, `session` or `emotion`.
    pub kind: &'static str,
    /// Items of the run with the tag (generated or not).
    pub items: usize,
    /// Measure → mean; a measure without a value in the group is absent (never a 0).
    pub measures: BTreeMap<String, TagStat>,
}

/// One contrast of one measure: `a` − `b` with an unpaired bootstrap interval.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TagDifference {
    pub contrast: &'static str,
    pub a: &'static str,
    pub b: &'static str,
    pub measure: String,
    pub n_a: usize,
    pub n_b: usize,
    /// `None` when a side has no value of the measure.
    pub diff: Option<f64>,
    /// `None` when a side has fewer than two items.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Whether the interval lies wholly above or below 0.
    pub excludes_zero: bool,
}

/// The tag breakdown of one run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunTags {
    pub run: String,
    pub label: String,
    pub model: String,
    /// Whether the run's tags could be read.
    pub available: bool,
    /// Why not.
    pub unavailable: Option<String>,
    /// `name@fingerprint` of the suite the tags were read from.
    pub source: Option<String>,
    /// The measures of this run, in report order.
    pub measures: Vec<String>,
    /// Assessments that did not run for this run.
    pub not_run: Vec<String>,
    /// Items whose scenario the suite does not have (no tags).
    pub untagged: usize,
    pub groups: Vec<TagGroup>,
    pub differences: Vec<TagDifference>,
    /// The user simulator's findings: its contrasts and its measures per attachment style and
    /// language (`{"status": "not run"}` without simulations).
    pub simulator: SimulatorTags,
}

/// The user simulator's findings of one run, beside the scenarios' tags.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "status")]
pub enum SimulatorTags {
    #[serde(rename = "not run")]
    NotRun,
    #[serde(rename = "run")]
    Run(SimulatorFindings),
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimulatorFindings {
    /// Simulations stored for the run.
    pub simulations: usize,
    /// Multi-session − single (recall), changing − stable (needs met).
    pub differences: Vec<SimulatorDifference>,
    /// Per attachment style (`attachment:NAME`), then per language (`lang:NAME`) of the profiles;
    /// empty when `groups_unavailable`.
    pub groups: Vec<SimulatorGroup>,
    /// Why the profiles' attachment styles and languages cannot be read.
    pub groups_unavailable: Option<String>,
}

/// One of the paper's contrasts measured by the simulator, paired by simulation: `mean_a` −
/// `mean_b` over the `n` simulations that have both sides, with a percentile bootstrap interval
/// resampling those simulations (both sides of a simulation together).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimulatorDifference {
    /// `multi_session-single_session` or `changing_need-stable_need` (the CSV's group).
    pub group: &'static str,
    /// `multi-session − single` or `changing − stable`, as in [`CONTRASTS`].
    pub contrast: &'static str,
    /// `recall_across_sessions` / `recall_same_session`, or `changed_need_met` / `hidden_need_met`.
    pub a: &'static str,
    pub b: &'static str,
    /// Simulations with both sides (facts asked within and across sessions; needs judged).
    pub n: usize,
    /// Each side over those simulations (recall: facts recalled / asked, pooled).
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    pub diff: Option<f64>,
    /// `None` over fewer than two simulations.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub excludes_zero: bool,
    /// Why there is no difference, when there is none.
    pub note: Option<String>,
}

/// The simulator's measures over the simulations of one attachment style or language.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimulatorGroup {
    /// `attachment:anxious`, `lang:en`, ...
    pub group: String,
    /// `attachment` or `lang`.
    pub kind: &'static str,
    pub simulations: usize,
    /// `recall` (facts recalled / asked), `hidden_need_met`, `changed_need_met` (shares of the
    /// simulations whose needs were judged), `state_change` (last − first state, 1–5 scale); `n`
    /// counts simulations; a measure without a value in the group is absent.
    pub measures: BTreeMap<String, MetricStat>,
}

/// The simulator's measures, in report order.
pub const SIMULATOR_MEASURES: [&str; 4] = ["recall", "hidden_need_met", "changed_need_met", "state_change"];

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TagReport {
    pub method: &'static str,
    /// Every measure of any run, in report order.
    pub measures: Vec<String>,
    pub runs: Vec<RunTags>,
}

/// An item as the breakdown sees it: its stratum (sub-task), tags and values (one per measure).
pub struct TagItem<'a> {
    pub stratum: &'a str,
    pub tags: &'a ItemTags,
    pub values: Vec<Option<f64>>,
}

/// The groups an item belongs to.
fn groups_of(t: &ItemTags) -> Vec<(String, &'static str)> {
    let mut g = vec![
        ((if t.implicit_need { "implicit_need" } else { "explicit_need" }).to_string(), "need"),
        ((if t.changing_need { "changing_need" } else { "stable_need" }).to_string(), "change"),
        ((if t.multi_session { "multi_session" } else { "single_session" }).to_string(), "session"),
    ];
    g.extend(t.emotions.iter().map(|e| (format!("emotion:{e}"), "emotion")));
    g
}

const FIXED_GROUPS: [&str; 6] =
    ["implicit_need", "explicit_need", "changing_need", "stable_need", "multi_session", "single_session"];

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
        for (g, kind) in groups_of(it.tags) {
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
    // group → measure → (n, mean, replicates)
    let mut reps_of: BTreeMap<String, Vec<(usize, Option<f64>, Vec<Option<f64>>)>> = BTreeMap::new();
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
            let point = crate::stats::mean(&values);
            let r = Replicates::pooled_means(&refs, m);
            if let Some(mean) = point {
                let iv = percentile_interval(mean, values.len(), &r, cfg);
                stats.insert(
                    measure.clone(),
                    TagStat { n: values.len(), mean, lo: iv.and_then(|i| i.lo), hi: iv.and_then(|i| i.hi) },
                );
            }
            per_measure.push((values.len(), point, r));
        }
        groups.push(TagGroup { group: name.clone(), kind, items: counts[&name], measures: stats });
        reps_of.insert(name, per_measure);
    }
    let mut diffs = Vec::new();
    for (contrast, a, b) in CONTRASTS {
        let (Some(ra), Some(rb)) = (reps_of.get(a), reps_of.get(b)) else { continue };
        for (m, measure) in measures.iter().enumerate() {
            let ((n_a, pa, reps_a), (n_b, pb, reps_b)) = (&ra[m], &rb[m]);
            if pa.is_none() && pb.is_none() {
                continue;
            }
            let diff = pa.zip(*pb).map(|(x, y)| x - y);
            let iv = diff.filter(|_| *n_a >= 2 && *n_b >= 2).and_then(|d| {
                let r: Vec<Option<f64>> =
                    reps_a.iter().zip(reps_b).map(|(x, y)| x.zip(*y).map(|(x, y)| x - y)).collect();
                percentile_interval(d, (*n_a).min(*n_b), &r, cfg)
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
            });
        }
    }
    (groups, diffs)
}

/// One stored simulation as the findings read it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimulationFigures {
    pub profile: String,
    /// Facts asked in the session they were told: (recalled, asked).
    pub same_session: (usize, usize),
    /// Facts asked one or three sessions after they were told: (recalled, asked).
    pub across_sessions: (usize, usize),
    /// Every fact asked, with or without a recorded distance: (recalled, asked).
    pub all_facts: (usize, usize),
    /// (hidden need met, changed need met) when the needs were judged.
    pub needs: Option<(bool, bool)>,
    pub state_change: Option<i32>,
}

/// Reads the figures of `sims` from their stored results.
pub fn simulation_figures(run_id: &str, sims: &[Simulation]) -> Result<Vec<SimulationFigures>, ReportError> {
    sims.iter()
        .map(|s| {
            let r: crate::assessments::StoredResult = serde_json::from_value(s.result.clone()).map_err(|e| {
                ReportError::Render(format!(
                    "run `{run_id}`: simulation {}: column `simulations.result` is not what the simulator writes ({e})",
                    s.idx
                ))
            })?;
            let mut f = SimulationFigures { profile: s.profile.clone(), state_change: r.state_change, ..Default::default() };
            for fact in r.facts.iter().filter(|f| f.asked) {
                let hit = usize::from(fact.recalled == Some(true));
                f.all_facts.0 += hit;
                f.all_facts.1 += 1;
                let side = match fact.distance.as_deref() {
                    Some("same_session") => &mut f.same_session,
                    Some(_) => &mut f.across_sessions,
                    None => continue,
                };
                side.0 += hit;
                side.1 += 1;
            }
            if r.needs_outcome == "judged"
                && let (Some(h), Some(c)) = (r.hidden_need_met, r.changed_need_met)
            {
                f.needs = Some((h, c));
            }
            Ok(f)
        })
        .collect()
}

/// The statistic `f` of the column means of `rows` (one row per simulation), with a percentile
/// bootstrap interval: simulations are drawn with replacement (a row's columns together) and `f`
/// taken of each resample's column means. `n` is the number of rows; no interval under two.
fn simulation_stat(rows: &[Vec<f64>], f: impl Fn(&[f64]) -> Option<f64>, cfg: &Bootstrap, seed: u64) -> Option<MetricStat> {
    let cols = rows.first()?.len();
    let means: Vec<f64> = (0..cols).map(|c| rows.iter().map(|r| r[c]).sum::<f64>() / rows.len() as f64).collect();
    let point = f(&means)?;
    let drawn: Vec<Vec<Option<f64>>> = rows.iter().map(|r| r.iter().copied().map(Some).collect()).collect();
    let reps = Replicates::draw(&drawn, cols, cfg.resamples, seed);
    let per_col: Vec<Vec<Option<f64>>> = (0..cols).map(|c| Replicates::pooled_means(&[&reps], c)).collect();
    let stats: Vec<Option<f64>> = (0..cfg.resamples)
        .map(|b| per_col.iter().map(|c| c[b]).collect::<Option<Vec<f64>>>().and_then(|m| f(&m)))
        .collect();
    let iv = percentile_interval(point, rows.len(), &stats, cfg);
    Some(MetricStat { n: rows.len(), mean: point, lo: iv.and_then(|i| i.lo), hi: iv.and_then(|i| i.hi) })
}

/// `m[i] / m[i + 1]`, `None` when the denominator is 0.
fn ratio(m: &[f64], i: usize) -> Option<f64> {
    (m[i + 1] > 0.0).then(|| m[i] / m[i + 1])
}

fn b(v: bool) -> f64 {
    if v { 1.0 } else { 0.0 }
}

/// The simulator's contrasts: multi-session − single (recall of facts asked in a later session −
/// recall of facts asked in the session they were told, over the simulations that asked both) and
/// changing − stable (changed need met − hidden need met, over the simulations whose needs were
/// judged), each paired by simulation with a bootstrap interval resampling simulations.
pub fn simulator_differences(sims: &[SimulationFigures], cfg: &Bootstrap, seed_label: &str) -> Vec<SimulatorDifference> {
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
            let d = simulation_stat(&rows, |m| Some(ratio(m, 0)? - ratio(m, 2)?), cfg, seed(group));
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
            let recall: Vec<Vec<f64>> =
                sims.iter().filter(|s| s.all_facts.1 > 0).map(|s| vec![s.all_facts.0 as f64, s.all_facts.1 as f64]).collect();
            let hidden: Vec<Vec<f64>> = sims.iter().filter_map(|s| s.needs).map(|(h, _)| vec![b(h), 1.0]).collect();
            let changed: Vec<Vec<f64>> = sims.iter().filter_map(|s| s.needs).map(|(_, c)| vec![b(c), 1.0]).collect();
            let change: Vec<Vec<f64>> = sims.iter().filter_map(|s| s.state_change).map(|c| vec![f64::from(c), 1.0]).collect();
            for (name, rows) in SIMULATOR_MEASURES.iter().zip([recall, hidden, changed, change]) {
                if let Some(st) = simulation_stat(&rows, |m| ratio(m, 0), cfg, seed(name)) {
                    measures.insert(name.to_string(), st);
                }
            }
            SimulatorGroup { group, kind: if kind == 0 { "attachment" } else { "lang" }, simulations: sims.len(), measures }
        })
        .collect()
}

/// The simulator findings of one run from its [`RunTagData`].
fn simulator_tags(run_id: &str, d: &RunTagData, cfg: &Bootstrap) -> SimulatorTags {
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
                items.push(TagItem { stratum: &it.task, tags: t, values });
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

/// The section of the simulator findings' figures (`run|tag_simulator|group|key`; the CSV's kind).
pub const SIMULATOR_SECTION: &str = "tag_simulator";

fn side_label(side: &str) -> &'static str {
    match side {
        "recall_across_sessions" => "recall of facts asked in a later session",
        "recall_same_session" => "recall of facts asked in the session they were told",
        "changed_need_met" => "changed need met",
        "hidden_need_met" => "hidden (first) need met",
        _ => "",
    }
}

/// The simulator findings of one run as tables of figures, the same in Markdown, HTML, CSV and
/// `runs show`: the contrasts (group `multi_session-single_session` / `changing_need-stable_need`,
/// keys the two sides, `simulations` and `difference`) and the measures per attachment style and
/// language (group `attachment:NAME` / `lang:NAME`, keys `simulations` and the measures).
pub fn simulator_tables(r: &RunTags, pct: &str) -> Vec<Table> {
    use crate::assessments::{count_cell, not_run, stat_cell, text_cell, value_cell};
    let sec = SIMULATOR_SECTION;
    let f = match &r.simulator {
        SimulatorTags::NotRun => return vec![not_run(sec, "User simulator by tag")],
        SimulatorTags::Run(f) => f,
    };
    let rows = f
        .differences
        .iter()
        .map(|d| {
            let stat = d.diff.map(|mean| MetricStat { n: d.n, mean, lo: d.lo, hi: d.hi });
            let mut diff = stat_cell(sec, d.group, "difference", stat.as_ref());
            if d.excludes_zero {
                diff.text.push_str(" *");
            }
            if let Some(note) = &d.note {
                diff.text = format!("n/a ({note})");
            }
            vec![
                text_cell(d.contrast),
                text_cell(side_label(d.a)),
                value_cell(sec, d.group, d.a, d.mean_a, Some(d.n)),
                text_cell(side_label(d.b)),
                value_cell(sec, d.group, d.b, d.mean_b, Some(d.n)),
                count_cell(sec, d.group, "simulations", d.n),
                diff,
            ]
        })
        .collect();
    let contrasts = Table {
        section: sec.into(),
        title: "User simulator: the paper's contrasts".into(),
        head: ["contrast", "tag side", "value", "other side", "value", "simulations"]
            .map(String::from)
            .into_iter()
            .chain([format!("difference [{pct}% CI]")])
            .collect(),
        rows,
        not_run: false,
        note: Some(format!(
            "Paired by simulation: each side over the simulations that have both (recall: facts recalled / facts \
             asked, pooled; needs: share of the simulations whose needs were judged); the interval resamples those \
             simulations, both sides of each together. `*`: the interval excludes 0. {} simulation(s) in all.",
            f.simulations
        )),
    };
    let mut head: Vec<String> = vec!["group".into(), "simulations".into()];
    head.extend(
        ["recall", "hidden need met", "changed need met", "state change (last − first)"]
            .iter()
            .map(|m| format!("{m} [{pct}% CI] n")),
    );
    let rows = match &f.groups_unavailable {
        Some(why) => vec![vec![text_cell(format!("unavailable: {why}"))]],
        None => f
            .groups
            .iter()
            .map(|g| {
                let mut row = vec![text_cell(&g.group), count_cell(sec, &g.group, "simulations", g.simulations)];
                row.extend(SIMULATOR_MEASURES.iter().map(|m| stat_cell(sec, &g.group, m, g.measures.get(*m))));
                row
            })
            .collect(),
    };
    let groups = Table {
        section: sec.into(),
        title: "User simulator by attachment style and language of the profile".into(),
        head,
        rows,
        not_run: false,
        note: Some(
            "n: simulations (recall: those that asked a fact; needs: those whose needs were judged). Intervals resample \
             the group's simulations; n/a under two."
                .into(),
        ),
    };
    vec![contrasts, groups]
}

fn opt4(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), fmt4)
}

fn interval_text(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", fmt4(lo), fmt4(hi)),
        _ => "[n/a]".into(),
    }
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown section: the differences of every run, then each run's groups.
pub fn to_markdown(lb: &Leaderboard) -> String {
    use std::fmt::Write;
    let Some(t) = &lb.tags else { return String::new() };
    let pct = (lb.bootstrap.confidence * 1000.0).round() / 10.0;
    let mut o = String::new();
    let _ = writeln!(o, "## Findings by tag\n");
    let _ = writeln!(o, "{pct}% intervals ({}). `*`: the interval excludes 0.\n", t.method);
    let _ = writeln!(o, "### Differences per run\n");
    let _ = writeln!(o, "| run | model · SAP | contrast | measure | n (tag / other) | difference [{pct}% CI] |");
    let _ = writeln!(o, "|---|---|---|---|---|---|");
    for r in &t.runs {
        if !r.available {
            let _ = writeln!(o, "| `{}` | {} | – | – | – | tags unavailable |", r.run, md(&r.label));
            continue;
        }
        for d in &r.differences {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} / {} | {} {}{} |",
                r.run,
                md(&r.label),
                d.contrast,
                md(&d.measure),
                d.n_a,
                d.n_b,
                opt4(d.diff),
                interval_text(d.lo, d.hi),
                if d.excludes_zero { " *" } else { "" }
            );
        }
    }
    let _ = writeln!(o);
    let pct_text = crate::pct(lb.bootstrap.confidence);
    for r in &t.runs {
        let _ = writeln!(o, "### Tags of `{}`: {}\n", r.run, md(&r.label));
        if let Some(why) = &r.unavailable {
            let _ = writeln!(o, "Tags unavailable: {}.\n", md(why));
        } else {
            scenario_tags_markdown(&mut o, r);
        }
        for table in simulator_tables(r, &pct_text) {
            o.push_str(&crate::assessments::table_markdown(&table));
        }
    }
    o
}

/// One run's tag groups in Markdown.
fn scenario_tags_markdown(o: &mut String, r: &RunTags) {
    use std::fmt::Write;
    {
        let mut notes = Vec::new();
        if let Some(s) = &r.source {
            notes.push(format!("tags from {s}"));
        }
        if !r.not_run.is_empty() {
            notes.push(format!("not run: {}", r.not_run.join(", ")));
        }
        if r.untagged > 0 {
            notes.push(format!("{} item(s) without tags", r.untagged));
        }
        if !notes.is_empty() {
            let _ = writeln!(o, "{}.\n", md(&notes.join("; ")));
        }
        let _ = write!(o, "| tag | items |");
        for m in &r.measures {
            let _ = write!(o, " {} |", md(m));
        }
        let _ = write!(o, "\n|---|---:|");
        for _ in &r.measures {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        for g in &r.groups {
            let _ = write!(o, "| {} | {} |", g.group, g.items);
            for m in &r.measures {
                let cell = match g.measures.get(m) {
                    Some(s) => format!("{} {} n={}", fmt4(s.mean), interval_text(s.lo, s.hi), s.n),
                    None => "–".into(),
                };
                let _ = write!(o, " {cell} |");
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o);
    }
}

fn opt_exact(v: Option<f64>) -> String {
    v.map(exact).unwrap_or_default()
}

/// CSV rows for `leaderboard.csv`, in its columns: kind `tag` (one row per run, tag group and
/// measure; `items` is the group's item count) and `tag_difference` (group `A-B`, `n` the items of
/// both sides, `mean` the difference), then the simulator findings (kind `tag_simulator`, one row
/// per figure of [`simulator_tables`]). An interval that is not available is left empty.
pub fn csv_rows(lb: &Leaderboard) -> Vec<Vec<String>> {
    let Some(t) = &lb.tags else { return vec![] };
    let pct = crate::pct(lb.bootstrap.confidence);
    let mut rows = Vec::new();
    for r in &t.runs {
        let s = lb.runs.iter().find(|s| s.id == r.run);
        let head = |group: String, kind: &str| {
            vec![
                r.run.clone(),
                r.label.clone(),
                r.model.clone(),
                s.and_then(|s| s.sap.clone()).unwrap_or_default(),
                group,
                kind.to_string(),
            ]
        };
        for g in &r.groups {
            for m in &r.measures {
                if let Some(st) = g.measures.get(m) {
                    let mut row = head(format!("tag:{}", g.group), "tag");
                    row.extend([m.clone(), st.n.to_string(), exact(st.mean), opt_exact(st.lo), opt_exact(st.hi)]);
                    row.push(g.items.to_string());
                    row.extend(std::iter::repeat_n(String::new(), 7));
                    rows.push(row);
                }
            }
        }
        for d in &r.differences {
            let mut row = head(format!("{}-{}", d.a, d.b), "tag_difference");
            row.extend([
                d.measure.clone(),
                (d.n_a + d.n_b).to_string(),
                opt_exact(d.diff),
                opt_exact(d.lo),
                opt_exact(d.hi),
            ]);
            row.extend(std::iter::repeat_n(String::new(), 8));
            rows.push(row);
        }
        // The simulator findings, one row per figure as the assessments' (kind `tag_simulator`).
        for table in simulator_tables(r, &pct) {
            for f in table.rows.into_iter().flatten().filter_map(|c| c.figure) {
                let mut row = head(f.group.clone(), &f.section);
                row.extend([
                    f.key.clone(),
                    f.n.map(|n| n.to_string()).unwrap_or_default(),
                    opt_exact(f.value),
                    opt_exact(f.lo),
                    opt_exact(f.hi),
                ]);
                row.extend(std::iter::repeat_n(String::new(), 8));
                rows.push(row);
            }
        }
    }
    rows
}

/// The HTML view of the tag section (the template `tags.html` places it).
pub fn html_view(lb: &Leaderboard) -> Value {
    let Some(t) = &lb.tags else { return json!(null) };
    let pct = crate::pct(lb.bootstrap.confidence);
    let keys = run_keys(lb);
    let key_of = |id: &str| keys.iter().find(|k| k.id == id).map_or("?".to_string(), |k| k.key.clone());
    let order = |id: &str| keys.iter().position(|k| k.id == id).unwrap_or(usize::MAX);
    let mut runs: Vec<&RunTags> = t.runs.iter().collect();
    runs.sort_by_key(|r| order(&r.run));
    // Columns of the difference table: the measures any available run has, in report order.
    let diff_measures: Vec<&String> =
        t.measures.iter().filter(|m| runs.iter().any(|r| r.differences.iter().any(|d| &d.measure == *m))).collect();
    let mut diff_rows = Vec::new();
    for r in &runs {
        if !r.available {
            diff_rows
                .push(json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "unavailable": r.unavailable}));
            continue;
        }
        for (contrast, a, b) in CONTRASTS {
            let cells: Vec<Value> = diff_measures
                .iter()
                .map(|m| match r.differences.iter().find(|d| d.contrast == contrast && &d.measure == *m) {
                    Some(d) => json!({
                        "measure": m,
                        "text": opt4(d.diff),
                        "ci": interval_text(d.lo, d.hi),
                        "diff": opt_exact(d.diff), "lo": opt_exact(d.lo), "hi": opt_exact(d.hi),
                        "n": format!("{} / {}", d.n_a, d.n_b),
                        "sig": d.excludes_zero,
                    }),
                    None => json!({"measure": m, "none": true}),
                })
                .collect();
            if r.differences.iter().any(|d| d.contrast == contrast) {
                diff_rows.push(json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "contrast": contrast,
                                      "a": a, "b": b, "cells": cells}));
            } else {
                diff_rows.push(json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "contrast": contrast,
                                      "a": a, "b": b, "missing": format!("no items tagged {a} or none tagged {b}")}));
            }
        }
    }
    let run_views: Vec<Value> = runs
        .iter()
        .map(|r| {
            let groups: Vec<Value> = r
                .groups
                .iter()
                .map(|g| {
                    let cells: Vec<Value> = r
                        .measures
                        .iter()
                        .map(|m| match g.measures.get(m) {
                            Some(s) => json!({"measure": m, "text": fmt4(s.mean), "ci": interval_text(s.lo, s.hi),
                                              "n": s.n, "mean": exact(s.mean), "lo": opt_exact(s.lo), "hi": opt_exact(s.hi)}),
                            None => json!({"measure": m, "none": true}),
                        })
                        .collect();
                    json!({"group": g.group, "kind": g.kind, "items": g.items, "cells": cells})
                })
                .collect();
            let simulator: Vec<Value> =
                simulator_tables(r, &pct).iter().map(|t| crate::render::table_view(&r.run, t)).collect();
            json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "available": r.available,
                   "unavailable": r.unavailable, "source": r.source, "not_run": r.not_run, "untagged": r.untagged,
                   "measures": r.measures, "groups": groups, "simulator": simulator})
        })
        .collect();
    json!({"method": t.method, "diff_measures": diff_measures, "diff_rows": diff_rows, "runs": run_views})
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn groups_have_the_means_of_their_items_and_one_item_has_no_interval() {
        let implicit = tags(true, false, false, &["grief"]);
        let explicit = tags(false, false, false, &["calm"]);
        let lonely = tags(false, true, false, &["calm", "loneliness"]);
        let items = vec![
            TagItem { stratum: "dialogue_base", tags: &implicit, values: vec![Some(0.2), Some(7.0)] },
            TagItem { stratum: "dialogue_base", tags: &implicit, values: vec![Some(0.4), None] },
            TagItem { stratum: "dialogue_emotion", tags: &implicit, values: vec![Some(0.6), Some(9.0)] },
            TagItem { stratum: "dialogue_base", tags: &explicit, values: vec![Some(0.5), Some(8.0)] },
            TagItem { stratum: "dialogue_emotion", tags: &lonely, values: vec![Some(0.9), None] },
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

        // implicit − explicit: 0.4 − 0.7 for rougeL, with an interval around it.
        let d = diffs.iter().find(|d| d.a == "implicit_need" && d.measure == "rougeL").unwrap();
        assert!((d.diff.unwrap() + 0.3).abs() < 1e-12);
        assert_eq!((d.n_a, d.n_b), (3, 2));
        assert!(d.lo.unwrap() <= -0.3 + 1e-12 && d.hi.unwrap() >= -0.3 - 1e-12, "{d:?}");
        // changing − stable: 0.9 − 0.425; one changing item: no interval.
        let d = diffs.iter().find(|d| d.a == "changing_need" && d.measure == "rougeL").unwrap();
        assert!((d.diff.unwrap() - 0.475).abs() < 1e-12);
        assert_eq!((d.n_a, d.n_b, d.lo, d.hi, d.excludes_zero), (1, 4, None, None, false));
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
                values: vec![Some(0.3 + v), Some(v)],
            });
            items.push(TagItem {
                stratum: if i % 2 == 0 { "a" } else { "b" },
                tags: &exp,
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
            TagItem { stratum: "a", tags: &imp, values: vec![Some(0.5), None] },
            TagItem { stratum: "a", tags: &imp, values: vec![Some(0.7), None] },
            TagItem { stratum: "a", tags: &exp, values: vec![Some(0.1), Some(1.0)] },
            TagItem { stratum: "a", tags: &exp, values: vec![Some(0.3), Some(0.0)] },
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

    fn sim(profile: &str, same: (usize, usize), across: (usize, usize), needs: Option<(bool, bool)>) -> SimulationFigures {
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
        assert_eq!((recall.group, recall.a, recall.b, recall.n), ("multi_session-single_session", "recall_across_sessions", "recall_same_session", 40));
        assert!((recall.mean_a.unwrap() - 0.25).abs() < 1e-12 && (recall.mean_b.unwrap() - 0.9).abs() < 1e-12);
        assert!((recall.diff.unwrap() + 0.65).abs() < 1e-12);
        let (lo, hi) = (recall.lo.unwrap(), recall.hi.unwrap());
        assert!(lo < -0.65 && -0.65 < hi && hi < 0.0 && recall.excludes_zero, "{recall:?}");
        let needs = &d[1];
        assert_eq!((needs.a, needs.b, needs.n), ("changed_need_met", "hidden_need_met", 40));
        assert!((needs.diff.unwrap() + 0.5).abs() < 1e-12 && needs.hi.unwrap() < 0.0 && needs.excludes_zero, "{needs:?}");
        // Deterministic with the seed.
        assert_eq!(simulator_differences(&sims, &cfg(), "r"), d);

        // Equal rates on both sides: the difference is 0 and its interval straddles it.
        let even: Vec<SimulationFigures> = (0..40)
            .map(|i| sim("a", (usize::from(i % 2 == 0), 1), (usize::from(i % 4 < 2) * 2 - usize::from(i % 8 == 1), 2), Some((i % 2 == 0, i % 3 == 0 || i % 6 == 1))))
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
