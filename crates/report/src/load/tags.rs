//! What the tag breakdown reads: each item's tags (through the run's suite), each simulation's
//! profile, and each item's assessments by measure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use h2htalk_data::suite::embedded;
use h2htalk_data::suite::profiles::Distance;
use h2htalk_store::{JudgeOutcome, NeedsOutcome, SessionKind, Simulation, Store, Verdict};
use serde_json::Value;

use crate::ReportError;
use crate::load::RunRecord;

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
    pub tags: Option<std::sync::Arc<BTreeMap<String, ItemTags>>>,
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
    /// Scenario id → whether its reference breaks a SAP rule; `None` for runs whose references
    /// were not looked at (stored before it was done).
    pub reference_breaks: Option<BTreeMap<String, bool>>,
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
/// (The tags are shared by every run of the suite: one copy, not one per run.)
type SuiteTags = (String, String, std::sync::Arc<BTreeMap<String, ItemTags>>, h2htalk_data::suite::Suite);

pub(crate) fn emotion_name(e: &h2htalk_data::suite::Emotion) -> String {
    serde_json::to_value(e).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| format!("{e:?}"))
}

pub(crate) fn read_suite_tags(dir: Option<&Path>, references: Option<&Path>) -> Result<SuiteTags, String> {
    let where_ = dir.map_or_else(|| "the embedded suite".to_string(), |d| d.display().to_string());
    let dir = embedded::or_embedded(dir).map_err(|e| format!("cannot write out the embedded suite: {e}"))?;
    let suite = h2htalk_data::load_suite_with(&dir, references)
        .map_err(|e| format!("cannot load the run's suite ({where_}): {e}"))?;
    let tags: BTreeMap<String, ItemTags> = suite
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
    Ok((suite.fingerprint().to_string(), suite.label(), std::sync::Arc::new(tags), suite))
}

/// The attachment style and language of the profiles `ids`, read from `simulator/<id>.json` of
/// `suite` with the simulator's own loader (which checks that the id names both); an error names
/// every profile that cannot be read.
pub(crate) fn read_profiles<'a>(
    suite: &h2htalk_data::suite::Suite,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, ProfileTags>, String> {
    let name = |v: serde_json::Result<Value>| v.ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let mut out = BTreeMap::new();
    let mut missing = Vec::new();
    for id in ids.into_iter().collect::<BTreeSet<_>>() {
        match suite.profile(id) {
            Ok(p) => {
                let tags = ProfileTags {
                    attachment: name(serde_json::to_value(p.attachment)),
                    lang: name(serde_json::to_value(p.lang)),
                };
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
        data.simulations = simulation_figures(&store.simulations(&r.run.id)?);
        if !data.simulations.is_empty() {
            // Profiles are not part of the suite's fingerprint: they are read even when it changed,
            // and the profile loader checks that each id still names its language and attachment.
            data.profiles = Some(match &*loaded {
                Ok((_, _, _, suite)) => read_profiles(suite, data.simulations.iter().map(|s| s.profile.as_str())),
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
        let references = store.reference_sap(&r.run.id)?;
        if !references.is_empty() {
            data.reference_breaks = Some(references.iter().map(|x| (x.scenario_id.clone(), x.breaks())).collect());
        }
        out.push(data);
    }
    Ok(out)
}

pub(crate) fn load_assessments(store: &Store, run_id: &str, data: &mut RunTagData) -> Result<(), ReportError> {
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

/// The figures of stored simulations.
pub fn simulation_figures(sims: &[Simulation]) -> Vec<SimulationFigures> {
    sims.iter()
        .map(|s| {
            let mut f =
                SimulationFigures { profile: s.profile.clone(), state_change: s.state_change(), ..Default::default() };
            for fact in s.facts.iter().filter(|f| f.asked) {
                let hit = usize::from(fact.recalled == Some(true));
                f.all_facts.0 += hit;
                f.all_facts.1 += 1;
                let side = match fact.distance {
                    Some(Distance::SameSession) => &mut f.same_session,
                    Some(_) => &mut f.across_sessions,
                    None => continue,
                };
                side.0 += hit;
                side.1 += 1;
            }
            if s.needs == NeedsOutcome::Judged
                && let (Some(h), Some(c)) = (s.hidden_need_met, s.changed_need_met)
            {
                f.needs = Some((h, c));
            }
            f
        })
        .collect()
}

/// Each scenario's tags as the report's tag tables name them (`implicit_need` or `explicit_need`,
/// `changing_need` or `stable_need`, `multi_session` or `single_session`, `emotion:NAME`), read from
/// the suite a run was made with (`spec.suite`); an error when it cannot be read or has changed
/// since (another fingerprint). The viewer filters by them, and the report's tag rows link to that.
pub fn scenario_tags(spec: &h2htalk_store::RunSpec) -> Result<BTreeMap<String, Vec<String>>, String> {
    let (fingerprint, label, tags, _) = read_suite_tags(spec.suite.dir.as_deref(), spec.suite.references.as_deref())?;
    if fingerprint != spec.suite.fingerprint {
        return Err(format!("the run's suite has changed since the run ({label}); its tags are not shown"));
    }
    Ok(tags
        .iter()
        .map(|(id, t)| (id.clone(), crate::compute::tags::groups_of(t, None).into_iter().map(|(g, _)| g).collect()))
        .collect())
}
