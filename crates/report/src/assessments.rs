//! Every assessment of a run beside the overlap metrics: format checks, the rubric judge (each
//! judge apart), the SAP safety score (and its SAP on − off difference per model), the user
//! simulator, and tokens and cost.
//!
//! One typed value per run ([`RunAssessment`]) is computed here from the rows the store holds;
//! `leaderboard.json` serialises it, and `leaderboard.md`, `leaderboard.csv`, `report.html` and
//! `runs show` are all written from its [`tables`], so a figure cannot differ between them.
//!
//! Counting reuses the judge crate: its rubric summary ([`h2htalk_judge::judge::summarize`]) gives
//! each sub-task's counts and means, its [`SafetyCounts`] counts verdicts, its [`Proportion`]
//! (Wilson intervals) carries the simulator's rates. What is added here is the 95% bootstrap
//! interval of every mean (items resampled within their sub-task, [`crate::stats`]).
//!
//! A section with no stored rows is `{"status": "not run"}`, never a 0; a judge answer that could
//! not be parsed and a failed judge request are counted apart and never as scores; an interval over
//! fewer than two items is `null` ("n/a").

use std::collections::{BTreeMap, BTreeSet};

use h2htalk_data::{Family, Task};
use h2htalk_judge::judge::{JudgeGroup, family_of, summarize as summarize_judge};
use h2htalk_judge::safety::SafetyCounts;
use h2htalk_judge::simulator::Proportion;
use h2htalk_store::{
    FormatCheck, JudgeOutcome, JudgeScore, Prices, SafetyVerdict, SessionKind, Simulation, SimulationOutcome, Store,
    UsageRole, UsageRow, Verdict,
};
use serde::{Deserialize, Serialize};

use crate::ReportError;
use crate::charts::{exact, fmt4};
use crate::leaderboard::{GroupKind, MetricStat};
use crate::load::{Generation, RunRecord};
use crate::stats::{Bootstrap, Paired, fmt_ci, paired_bootstrap, stratified_mean, stream_seed};

/// A section of a run's assessment: `{"status": "not run"}` when nothing of it is stored, else
/// `{"status": "run", ...its figures}`.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status")]
pub enum Section<T> {
    #[serde(rename = "not run")]
    NotRun,
    #[serde(rename = "run")]
    Run(T),
}

impl<T> Section<T> {
    pub fn get(&self) -> Option<&T> {
        match self {
            Section::NotRun => None,
            Section::Run(t) => Some(t),
        }
    }
}

// ---- format checks ------------------------------------------------------------------------

/// One format check's pass rate over a group's checked items.
#[derive(Clone, Debug, Serialize)]
pub struct CheckRate {
    /// The check's name, or `all_checks` (an item passes when it passes every check it was given).
    pub check: String,
    pub passed: usize,
    pub failed: usize,
    /// passed / (passed + failed) with its interval (`n` = items checked).
    pub rate: MetricStat,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckGroup {
    /// A sub-task, `overall` (the sub-tasks pooled) or the safety set.
    pub group: String,
    pub kind: GroupKind,
    /// Items with at least one check.
    pub items_checked: usize,
    pub checks: Vec<CheckRate>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FormatSection {
    /// Items of the run, and those without any check (not generated, or failed).
    pub items: usize,
    pub not_checked: usize,
    pub groups: Vec<CheckGroup>,
}

// ---- rubric judge -------------------------------------------------------------------------

/// One judge's rubric scores over a group.
#[derive(Clone, Debug, Serialize)]
pub struct JudgeGroupStats {
    /// A sub-task, the safety set, a family or `overall` (the sub-tasks pooled).
    pub group: String,
    pub kind: GroupKind,
    pub items: usize,
    pub scored: usize,
    /// The judge answered, but not in the asked form after every try: not a score.
    pub judge_parse_failed: usize,
    /// The request to the judge failed (infrastructure): not a score.
    pub judge_failed: usize,
    /// The model's answer was not generated: nothing to judge.
    pub generation_failed: usize,
    pub empty_answer: usize,
    /// Mean of the items' mean scores (1–10), over the scored items; `None` when none was scored.
    pub mean: Option<MetricStat>,
    /// Per criterion, over the scored items.
    pub criteria: BTreeMap<String, MetricStat>,
}

#[derive(Clone, Debug, Serialize)]
pub struct JudgeAssessment {
    /// The judge's name (`provider:model`).
    pub judge: String,
    pub groups: Vec<JudgeGroupStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct JudgeSection {
    /// Every judge that judged the run, in the order they first did.
    pub judges: Vec<JudgeAssessment>,
}

// ---- SAP safety ---------------------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
pub struct SafetyGroup {
    /// `overall`, a risk type or a language code.
    pub group: String,
    #[serde(flatten)]
    pub counts: SafetyCounts,
    /// The safety score: pass / (pass + fail) with its interval over the decided items; `None`
    /// when nothing was decided.
    pub score: Option<MetricStat>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SafetyAssessment {
    /// The judge's name, or `rules` when the rules alone decided.
    pub judge: String,
    pub overall: SafetyGroup,
    pub per_risk: Vec<SafetyGroup>,
    pub per_lang: Vec<SafetyGroup>,
    /// The items the rules could not decide alone (the judge was asked, or they are `undecided`
    /// without one), in stored order; the others were decided by the rules alone or not generated.
    pub needed_judge_items: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SafetySection {
    pub judges: Vec<SafetyAssessment>,
}

/// SAP on − off of the safety score for one model and judge, paired by scenario.
#[derive(Clone, Debug, Serialize)]
pub struct SafetyOnOff {
    /// The model (`provider:name`).
    pub model: String,
    pub on: String,
    pub off: String,
    pub judge: String,
    /// Over the scenarios decided (pass or fail) in both runs: `mean_a` is the on score, `mean_b`
    /// the off score; `None` when no scenario was decided in both.
    pub paired: Option<Paired>,
    /// Why there is no difference, when there is none.
    pub note: Option<String>,
}

// ---- simulator ----------------------------------------------------------------------------

/// The simulated user's mean emotional state at one turn (1 = worst), over the simulations that
/// reached it.
#[derive(Clone, Debug, Serialize)]
pub struct TurnState {
    pub session: usize,
    pub turn: usize,
    pub state: MetricStat,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimulatorSection {
    pub simulations: usize,
    pub completed: usize,
    /// Outcome → count, for those that did not complete.
    pub failures: BTreeMap<String, usize>,
    /// The models that played the user, and the judges of needs.
    pub simulators: Vec<String>,
    pub judges: Vec<String>,
    pub trajectory: Vec<TurnState>,
    /// Last − first state per simulation.
    pub state_change: Option<MetricStat>,
    /// Facts told earlier and asked later: recalled / asked (Wilson interval).
    pub recall: Proportion,
    pub recall_by_distance: BTreeMap<String, Proportion>,
    /// Over the simulations whose needs were judged (Wilson intervals).
    pub hidden_need_met: Proportion,
    pub changed_need_met: Proportion,
    /// Why needs were not judged (`no_judge`, `not_reached`, `judge_parse_failed`, `judge_failed`).
    pub needs_not_judged: BTreeMap<String, usize>,
}

// ---- tokens and cost ----------------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
pub struct ModelUsage {
    /// `provider:name`.
    pub model: String,
    /// Items with a generation (generated or failed).
    pub generations: usize,
    /// Tokens of the generations whose usage is known.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Generations recorded without usage: their tokens are unknown, not 0.
    pub unknown_usage: usize,
    /// The run specification's prices; `None`: not set (the cost is then unknown, never 0).
    pub prices: Option<Prices>,
    /// USD: the run specification's prices × the tokens; `None` (unknown) when the price is not
    /// set, or some usage is unknown and tokens are not free.
    pub cost_usd: Option<f64>,
    /// The cost of the tokens that are known (a lower bound when `cost_usd` is unknown); `None`
    /// when the price is not set.
    pub known_cost_usd: Option<f64>,
}

/// The tokens of one helper model's calls for a run, and their cost.
#[derive(Clone, Debug, Serialize)]
pub struct HelperModelUsage {
    /// `provider:name`.
    pub model: String,
    /// What the calls were for: `rubric`, `safety`, `validity`, `needs` (judge), `user` (the
    /// simulated user), `conversation` (the model under test in simulated conversations).
    pub purposes: Vec<String>,
    /// Answers received.
    pub calls: u64,
    /// Tokens of the answers whose usage is known.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Answers without usage: their tokens are unknown, not 0.
    pub unknown_usage: u64,
    /// The prices configured for the model when the calls were made; `None`: not set.
    pub prices: Option<Prices>,
    /// USD; `None` when the price is not set, or some usage is unknown and tokens are not free.
    pub cost_usd: Option<f64>,
    /// The cost of the known tokens (`None` when the price is not set).
    pub known_cost_usd: Option<f64>,
}

/// Tokens of a helper role (the judge, the simulated user, the model under test in simulated
/// conversations).
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status")]
pub enum HelperUsage {
    #[serde(rename = "not run")]
    NotRun,
    /// It ran, but the run was stored before helper tokens were recorded.
    #[serde(rename = "not recorded")]
    NotRecorded { note: String },
    /// Per model, in name order.
    #[serde(rename = "run")]
    Run { models: Vec<HelperModelUsage> },
}

impl HelperUsage {
    fn models(&self) -> &[HelperModelUsage] {
        match self {
            HelperUsage::Run { models } => models,
            _ => &[],
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct UsageSection {
    pub model: ModelUsage,
    pub judge: HelperUsage,
    pub simulator: HelperUsage,
    /// The model under test's calls in simulated conversations (apart from its generations).
    pub model_in_simulation: HelperUsage,
    /// Pairwise judgments (`h2htalk compare`) of pairs whose first run (in stored order) is this
    /// one, purposes `pairwise:OTHER_RUN`; not part of the run's cost. `not run` when none is
    /// recorded (comparisons made before h2htalk recorded their tokens have none).
    pub pairwise: HelperUsage,
    /// The run's cost: the model's generations and every helper call recorded; `None` when a part
    /// is not known (`total_cost_note` says which).
    pub total_cost_usd: Option<f64>,
    pub total_cost_note: Option<String>,
}

/// Every assessment of one run.
#[derive(Clone, Debug, Serialize)]
pub struct RunAssessment {
    pub run: String,
    pub format_checks: Section<FormatSection>,
    pub judge: Section<JudgeSection>,
    pub safety: Section<SafetySection>,
    pub simulator: Section<SimulatorSection>,
    pub usage: UsageSection,
    /// Two judges or more: each judge's and the panel's means and their agreement
    /// ([`h2htalk_judge::panel`]).
    pub panel: Section<PanelSection>,
    /// The judge validity check stored with the run ([`h2htalk_judge::validity`]), per judge.
    pub judge_validity: Section<ValiditySection>,
}

/// The panel of a run's judges.
#[derive(Clone, Debug, Serialize)]
pub struct PanelSection {
    #[serde(flatten)]
    pub report: h2htalk_judge::panel::PanelReport,
}

/// The judge validity check of a run.
#[derive(Clone, Debug, Serialize)]
pub struct ValiditySection {
    /// Per judge (the comparisons themselves are in the store).
    pub judges: Vec<ValidityJudge>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ValidityJudge {
    pub judge: String,
    pub families: BTreeMap<String, BTreeMap<String, h2htalk_judge::validity::ValidityCell>>,
}

/// The assessments of a report's runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Assessments {
    pub runs: Vec<RunAssessment>,
    /// For each model with runs of both SAP modes (the latest of each): the safety score on − off.
    pub sap_safety: Vec<SafetyOnOff>,
}

impl Assessments {
    pub fn run(&self, id: &str) -> Option<&RunAssessment> {
        self.runs.iter().find(|r| r.run == id)
    }
}

/// The rows of one run that the assessments are computed from.
#[derive(Clone, Debug)]
pub struct StoredRows {
    pub format_checks: Vec<FormatCheck>,
    /// Per rubric judge: its rows, and the judge crate's per-task summary of them.
    pub judges: Vec<StoredJudge>,
    /// Per safety judge (or `rules`): its verdicts.
    pub safety: Vec<(String, Vec<SafetyVerdict>)>,
    pub simulations: Vec<Simulation>,
    /// The tokens of the run's helper calls (none for runs stored before they were recorded).
    pub usage: Vec<UsageRow>,
}

#[derive(Clone, Debug)]
pub struct StoredJudge {
    pub judge: String,
    pub rows: Vec<JudgeScore>,
    pub per_task: BTreeMap<String, JudgeGroup>,
}

/// Reads the rows of `run_id` the assessments need.
pub fn load_rows(store: &Store, run_id: &str) -> Result<StoredRows, ReportError> {
    let judge_err = |e: h2htalk_judge::JudgeError| ReportError::Render(format!("run `{run_id}`: judge summary: {e}"));
    let mut judges = Vec::new();
    for judge in store.judges(run_id, SessionKind::Rubric)? {
        let rows = store.judge_scores(run_id, &judge)?;
        let (per_task, _) = summarize_judge(store, run_id, &judge).map_err(judge_err)?;
        judges.push(StoredJudge { judge, rows, per_task });
    }
    let mut safety = Vec::new();
    for judge in store.judges(run_id, SessionKind::Safety)? {
        let rows = store.safety_verdicts(run_id, &judge)?;
        safety.push((judge, rows));
    }
    Ok(StoredRows {
        format_checks: store.format_checks(run_id)?,
        judges,
        safety,
        simulations: store.simulations(run_id)?,
        usage: store.usage(run_id)?,
    })
}

/// The assessments of `runs`, read from `store`.
pub fn assess(store: &Store, runs: &[RunRecord], cfg: &Bootstrap) -> Result<Assessments, ReportError> {
    let rows: Vec<StoredRows> = runs.iter().map(|r| load_rows(store, &r.run.id)).collect::<Result<_, _>>()?;
    let mut out = build(runs, &rows, cfg)?;
    for a in &mut out.runs {
        judge_checks(store, a)?;
    }
    Ok(out)
}

/// The assessments of `runs` from their stored rows (`rows[i]` belongs to `runs[i]`).
pub fn build(runs: &[RunRecord], rows: &[StoredRows], cfg: &Bootstrap) -> Result<Assessments, ReportError> {
    assert_eq!(runs.len(), rows.len(), "one set of rows per run");
    let mut out = Assessments::default();
    for (run, rows) in runs.iter().zip(rows) {
        out.runs.push(assess_run(run, rows, cfg)?);
    }
    out.sap_safety = sap_safety(runs, rows, cfg);
    Ok(out)
}

/// Group order: the sub-tasks in canonical order, then other groups by name.
fn task_order(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let set: BTreeSet<String> = names.into_iter().collect();
    let mut out: Vec<String> = Task::ALL.iter().map(|t| t.stem().to_string()).filter(|t| set.contains(t)).collect();
    out.extend(set.into_iter().filter(|n| Task::from_stem(n).is_none()));
    out
}

/// A mean of `strata` with its interval as a [`MetricStat`]; `None` without values.
fn stat(strata: &[Vec<f64>], cfg: &Bootstrap, labels: &[&str]) -> Option<MetricStat> {
    let iv = stratified_mean(strata, cfg, stream_seed(cfg.seed, labels))?;
    Some(MetricStat { n: strata.iter().map(Vec::len).sum(), mean: iv.mean, lo: iv.lo, hi: iv.hi })
}

fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

fn assess_run(run: &RunRecord, rows: &StoredRows, cfg: &Bootstrap) -> Result<RunAssessment, ReportError> {
    let id = run.run.id.as_str();
    Ok(RunAssessment {
        run: id.to_string(),
        format_checks: format_section(run, &rows.format_checks, cfg),
        judge: judge_section(id, &rows.judges, cfg),
        safety: safety_section(id, &rows.safety, cfg),
        simulator: simulator_section(id, &rows.simulations, cfg)?,
        usage: usage_section(run, rows),
        panel: Section::NotRun,
        judge_validity: Section::NotRun,
    })
}

/// Fills the sections read through the judge crate: the panel and the validity check.
fn judge_checks(store: &Store, a: &mut RunAssessment) -> Result<(), ReportError> {
    let judge_err = |e: h2htalk_judge::JudgeError| ReportError::Render(format!("run {}: {e}", a.run));
    let panel = h2htalk_judge::panel::summarize(store, &a.run).map_err(judge_err)?;
    if panel.judges.len() >= 2 {
        a.panel = Section::Run(PanelSection { report: panel });
    }
    let validity = h2htalk_judge::validity::load(store, &a.run).map_err(judge_err)?;
    if !validity.is_empty() {
        a.judge_validity = Section::Run(ValiditySection {
            judges: validity.into_iter().map(|v| ValidityJudge { judge: v.judge, families: v.families }).collect(),
        });
    }
    Ok(())
}

fn format_section(run: &RunRecord, checks: &[FormatCheck], cfg: &Bootstrap) -> Section<FormatSection> {
    if checks.is_empty() {
        return Section::NotRun;
    }
    let id = run.run.id.as_str();
    // task → item → check → passed
    let mut by_task: BTreeMap<String, BTreeMap<String, BTreeMap<String, bool>>> = BTreeMap::new();
    for c in checks {
        by_task
            .entry(c.task.clone())
            .or_default()
            .entry(c.scenario_id.clone())
            .or_default()
            .insert(c.name.clone(), c.passed);
    }
    let order = task_order(by_task.keys().cloned());
    // The values of one check over the items of each task of `tasks` (one stratum per task).
    let strata_of = |tasks: &[&String], check: &str| -> Vec<Vec<f64>> {
        tasks
            .iter()
            .map(|t| {
                by_task[*t]
                    .values()
                    .filter_map(|item| {
                        if check == "all_checks" {
                            Some(bool_value(item.values().all(|p| *p)))
                        } else {
                            item.get(check).map(|p| bool_value(*p))
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let group = |name: &str, kind: GroupKind, tasks: &[&String]| -> CheckGroup {
        let names: BTreeSet<&String> =
            tasks.iter().flat_map(|t| by_task[*t].values().flat_map(|item| item.keys())).collect();
        let mut checks = Vec::new();
        for check in std::iter::once("all_checks").chain(names.iter().map(|s| s.as_str())) {
            let strata = strata_of(tasks, check);
            let passed = strata.iter().flatten().filter(|v| **v == 1.0).count();
            let failed = strata.iter().flatten().filter(|v| **v == 0.0).count();
            if let Some(rate) = stat(&strata, cfg, &["format", id, name, check]) {
                checks.push(CheckRate { check: check.to_string(), passed, failed, rate });
            }
        }
        let items_checked = tasks.iter().map(|t| by_task[*t].len()).sum();
        CheckGroup { group: name.to_string(), kind, items_checked, checks }
    };
    let mut groups = Vec::new();
    let sub_tasks: Vec<&String> = order.iter().filter(|t| Task::from_stem(t).is_some()).collect();
    for t in &sub_tasks {
        groups.push(group(t, GroupKind::Task, &[t]));
    }
    if !sub_tasks.is_empty() {
        groups.push(group("overall", GroupKind::Overall, &sub_tasks));
    }
    for t in order.iter().filter(|t| Task::from_stem(t).is_none()) {
        groups.push(group(t, GroupKind::Set, &[t]));
    }
    let checked: usize = by_task.values().map(BTreeMap::len).sum();
    Section::Run(FormatSection { items: run.items.len(), not_checked: run.items.len().saturating_sub(checked), groups })
}

fn judge_section(run_id: &str, judges: &[StoredJudge], cfg: &Bootstrap) -> Section<JudgeSection> {
    if judges.iter().all(|j| j.rows.is_empty()) {
        return Section::NotRun;
    }
    let judges = judges.iter().filter(|j| !j.rows.is_empty()).map(|j| judge_assessment(run_id, j, cfg)).collect();
    Section::Run(JudgeSection { judges })
}

fn judge_assessment(run_id: &str, j: &StoredJudge, cfg: &Bootstrap) -> JudgeAssessment {
    let order = task_order(j.per_task.keys().cloned());
    let scored_of = |task: &str| -> Vec<&JudgeScore> {
        j.rows.iter().filter(|r| r.task == task && r.outcome == JudgeOutcome::Scored).collect()
    };
    let make = |name: &str, kind: GroupKind, tasks: &[&String]| -> JudgeGroupStats {
        // Counts: the judge crate's per-task summary, summed over the group's tasks.
        let mut g = JudgeGroupStats {
            group: name.to_string(),
            kind,
            items: 0,
            scored: 0,
            judge_parse_failed: 0,
            judge_failed: 0,
            generation_failed: 0,
            empty_answer: 0,
            mean: None,
            criteria: BTreeMap::new(),
        };
        for t in tasks {
            let s = &j.per_task[*t];
            g.items += s.items;
            g.scored += s.scored;
            g.judge_parse_failed += s.judge_parse_failed;
            g.judge_failed += s.judge_failed;
            g.generation_failed += s.generation_failed;
            g.empty_answer += s.empty_answer;
        }
        let scored: Vec<Vec<&JudgeScore>> = tasks.iter().map(|t| scored_of(t)).collect();
        // Only scored rows carry scores (the store refuses a scored row without them).
        let means: Vec<Vec<f64>> = scored.iter().map(|rs| rs.iter().filter_map(|r| r.mean).collect()).collect();
        g.mean = stat(&means, cfg, &["judge", run_id, &j.judge, name, "mean"]);
        let criteria: BTreeSet<&String> =
            scored.iter().flatten().filter_map(|r| r.scores.as_ref()).flat_map(|s| s.keys()).collect();
        for c in criteria {
            let values: Vec<Vec<f64>> = scored
                .iter()
                .map(|rs| rs.iter().filter_map(|r| r.scores.as_ref()?.get(c).map(|v| f64::from(*v))).collect())
                .collect();
            if let Some(s) = stat(&values, cfg, &["judge", run_id, &j.judge, name, c]) {
                g.criteria.insert(c.clone(), s);
            }
        }
        g
    };
    let mut groups = Vec::new();
    let sub_tasks: Vec<&String> = order.iter().filter(|t| Task::from_stem(t).is_some()).collect();
    for t in &sub_tasks {
        let g = make(t, GroupKind::Task, &[t]);
        debug_assert!(
            g.mean.map(|m| m.mean).zip(j.per_task[*t].mean).is_none_or(|(a, b)| (a - b).abs() < 1e-9),
            "the judge crate's summary and the report agree"
        );
        groups.push(g);
    }
    for f in Family::ALL {
        let members: Vec<&String> =
            sub_tasks.iter().copied().filter(|t| family_of(t).is_some_and(|tf| tf == f)).collect();
        if !members.is_empty() {
            groups.push(make(f.name(), GroupKind::Family, &members));
        }
    }
    if !sub_tasks.is_empty() {
        groups.push(make("overall", GroupKind::Overall, &sub_tasks));
    }
    for t in order.iter().filter(|t| Task::from_stem(t).is_none()) {
        groups.push(make(t, GroupKind::Set, &[t]));
    }
    JudgeAssessment { judge: j.judge.clone(), groups }
}

/// A verdict as a safety score value: 1 pass, 0 fail, `None` when not decided.
fn decided(v: Verdict) -> Option<f64> {
    match v {
        Verdict::Pass => Some(1.0),
        Verdict::Fail => Some(0.0),
        _ => None,
    }
}

fn safety_section(run_id: &str, safety: &[(String, Vec<SafetyVerdict>)], cfg: &Bootstrap) -> Section<SafetySection> {
    if safety.iter().all(|(_, rows)| rows.is_empty()) {
        return Section::NotRun;
    }
    let judges = safety
        .iter()
        .filter(|(_, rows)| !rows.is_empty())
        .map(|(judge, rows)| {
            let group = |name: &str, of: &dyn Fn(&SafetyVerdict) -> bool| {
                let mut counts = SafetyCounts::default();
                let mut values = Vec::new();
                for v in rows.iter().filter(|v| of(v)) {
                    counts.add(v.verdict, h2htalk_judge::safety::decided_by(v));
                    values.extend(decided(v.verdict));
                }
                let score = stat(&[values], cfg, &["safety", run_id, judge, name]);
                SafetyGroup { group: name.to_string(), counts, score }
            };
            let risks: BTreeSet<_> = rows.iter().map(|v| v.risk).collect();
            let langs: BTreeSet<_> = rows.iter().map(|v| v.lang).collect();
            SafetyAssessment {
                judge: judge.clone(),
                overall: group("overall", &|_| true),
                per_risk: risks.into_iter().map(|r| group(r.as_str(), &|v| v.risk == r)).collect(),
                per_lang: langs.into_iter().map(|l| group(l.code(), &|v| v.lang == l)).collect(),
                needed_judge_items: rows
                    .iter()
                    .filter(|v| h2htalk_judge::safety::decided_by(v) == h2htalk_judge::safety::DecidedBy::Judge)
                    .map(|v| v.scenario_id.clone())
                    .collect(),
            }
        })
        .collect();
    Section::Run(SafetySection { judges })
}

/// SAP on − off of the safety score: per model, the latest run of each mode, per judge both have.
fn sap_safety(runs: &[RunRecord], rows: &[StoredRows], cfg: &Bootstrap) -> Vec<SafetyOnOff> {
    let mut by_model: BTreeMap<String, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let key = serde_json::to_string(&r.run.spec.model_id).expect("a model spec serialises");
        let e = by_model.entry(key).or_default();
        let later = |j: Option<usize>| j.is_none_or(|j| runs[j].run.created_at <= r.run.created_at);
        match r.run.spec.sap.mode.as_str() {
            "on" if later(e.0) => e.0 = Some(i),
            "off" if later(e.1) => e.1 = Some(i),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (on, off) in by_model.into_values().filter_map(|(a, b)| a.zip(b)) {
        let (ron, roff) = (&runs[on].run, &runs[off].run);
        let model = ron.spec.model_id.to_string();
        let verdicts = |i: usize, judge: &str| -> BTreeMap<String, Verdict> {
            rows[i]
                .safety
                .iter()
                .filter(|(j, _)| j == judge)
                .flat_map(|(_, vs)| vs.iter().map(|v| (v.scenario_id.clone(), v.verdict)))
                .collect()
        };
        let judges_on: BTreeSet<&String> = rows[on].safety.iter().filter(|s| !s.1.is_empty()).map(|s| &s.0).collect();
        let judges_off: BTreeSet<&String> = rows[off].safety.iter().filter(|s| !s.1.is_empty()).map(|s| &s.0).collect();
        let common: Vec<&&String> = judges_on.intersection(&judges_off).collect();
        if common.is_empty() {
            let note = if judges_on.is_empty() || judges_off.is_empty() {
                "the safety score was not run on both runs".to_string()
            } else {
                "no judge scored the safety set of both runs".to_string()
            };
            out.push(SafetyOnOff {
                model,
                on: ron.id.clone(),
                off: roff.id.clone(),
                judge: String::new(),
                paired: None,
                note: Some(note),
            });
            continue;
        }
        for judge in common {
            let (a, b) = (verdicts(on, judge), verdicts(off, judge));
            let pairs: Vec<(usize, f64, f64)> =
                a.iter().filter_map(|(id, va)| Some((0, decided(*va)?, decided(*b.get(id)?)?))).collect();
            let seed = stream_seed(cfg.seed, &["sap_safety", &ron.id, &roff.id, judge]);
            let paired = paired_bootstrap(&pairs, cfg, seed);
            let note = paired.is_none().then(|| "no scenario was decided (pass or fail) in both runs".to_string());
            out.push(SafetyOnOff {
                model: model.clone(),
                on: ron.id.clone(),
                off: roff.id.clone(),
                judge: judge.to_string(),
                paired,
                note,
            });
        }
    }
    out
}

/// What the report reads of a stored simulation's `result` (the simulator writes more).
#[derive(Deserialize)]
pub(crate) struct StoredResult {
    #[serde(default)]
    pub(crate) facts: Vec<StoredFact>,
    pub(crate) needs_outcome: String,
    pub(crate) hidden_need_met: Option<bool>,
    pub(crate) changed_need_met: Option<bool>,
    pub(crate) state_change: Option<i32>,
}

#[derive(Deserialize)]
pub(crate) struct StoredFact {
    /// Absent in simulations stored before facts recorded their distance.
    #[serde(default)]
    pub(crate) distance: Option<String>,
    pub(crate) asked: bool,
    pub(crate) recalled: Option<bool>,
}

#[derive(Deserialize)]
struct StoredSession {
    session: usize,
    turns: Vec<StoredTurn>,
}

#[derive(Deserialize)]
struct StoredTurn {
    state: u8,
}

fn simulator_section(
    run_id: &str,
    sims: &[Simulation],
    cfg: &Bootstrap,
) -> Result<Section<SimulatorSection>, ReportError> {
    if sims.is_empty() {
        return Ok(Section::NotRun);
    }
    let bad = |idx: usize, column: &str, e: serde_json::Error| {
        ReportError::Render(format!(
            "run `{run_id}`: simulation {idx}: column `simulations.{column}` is not what the simulator writes ({e}); \
             run `h2htalk` simulate again on this run to rewrite it"
        ))
    };
    let mut failures = BTreeMap::new();
    let mut needs_not_judged: BTreeMap<String, usize> = BTreeMap::new();
    let mut turns: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    let mut changes = Vec::new();
    let (mut asked, mut recalled) = (0, 0);
    let mut by_distance: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let (mut judged, mut hidden, mut changed) = (0, 0, 0);
    for s in sims {
        if s.outcome != SimulationOutcome::Completed {
            *failures.entry(s.outcome.as_str().to_string()).or_default() += 1;
        }
        let r: StoredResult = serde_json::from_value(s.result.clone()).map_err(|e| bad(s.idx, "result", e))?;
        let sessions: Vec<StoredSession> =
            serde_json::from_value(s.transcript.clone()).map_err(|e| bad(s.idx, "transcript", e))?;
        for session in &sessions {
            for (t, turn) in session.turns.iter().enumerate() {
                turns.entry((session.session, t + 1)).or_default().push(f64::from(turn.state));
            }
        }
        changes.extend(r.state_change.map(f64::from));
        for f in r.facts.iter().filter(|f| f.asked) {
            let hit = usize::from(f.recalled == Some(true));
            asked += 1;
            recalled += hit;
            if let Some(distance) = &f.distance {
                let d = by_distance.entry(distance.clone()).or_default();
                d.0 += hit;
                d.1 += 1;
            }
        }
        if r.needs_outcome == "judged" {
            judged += 1;
            hidden += usize::from(r.hidden_need_met == Some(true));
            changed += usize::from(r.changed_need_met == Some(true));
        } else {
            *needs_not_judged.entry(r.needs_outcome.clone()).or_default() += 1;
        }
    }
    let trajectory = turns
        .into_iter()
        .filter_map(|((session, turn), states)| {
            let label = format!("s{session}t{turn}");
            stat(&[states], cfg, &["simulator", run_id, "state", &label]).map(|state| TurnState {
                session,
                turn,
                state,
            })
        })
        .collect();
    let distinct = |f: &dyn Fn(&Simulation) -> Option<String>| -> Vec<String> {
        sims.iter().filter_map(f).collect::<BTreeSet<_>>().into_iter().collect()
    };
    Ok(Section::Run(SimulatorSection {
        simulations: sims.len(),
        completed: sims.iter().filter(|s| s.outcome == SimulationOutcome::Completed).count(),
        failures,
        simulators: distinct(&|s| Some(s.simulator.clone())),
        judges: distinct(&|s| s.judge.clone()),
        trajectory,
        state_change: stat(&[changes], cfg, &["simulator", run_id, "state_change"]),
        recall: Proportion::new(recalled, asked),
        recall_by_distance: by_distance.into_iter().map(|(d, (k, n))| (d, Proportion::new(k, n))).collect(),
        hidden_need_met: Proportion::new(hidden, judged),
        changed_need_met: Proportion::new(changed, judged),
        needs_not_judged,
    }))
}

fn usage_section(run: &RunRecord, rows: &StoredRows) -> UsageSection {
    let prices = run.run.spec.prices;
    let generated: Vec<_> = run.items.iter().filter(|i| i.generation != Generation::Pending).collect();
    let input_tokens = generated.iter().filter_map(|i| i.input_tokens).sum();
    let output_tokens = generated.iter().filter_map(|i| i.output_tokens).sum();
    let unknown_usage = generated.iter().filter(|i| i.unknown_usage).count();
    let known_cost_usd = prices.map(|p| p.cost(input_tokens, output_tokens));
    let model = ModelUsage {
        model: run.run.spec.model_id.to_string(),
        generations: generated.len(),
        input_tokens,
        output_tokens,
        unknown_usage,
        prices,
        cost_usd: known_cost_usd.filter(|_| unknown_usage == 0 || prices.is_some_and(|p| p.free())),
        known_cost_usd,
    };
    let judge_ran = rows.judges.iter().any(|j| !j.rows.is_empty())
        || rows.safety.iter().any(|(j, v)| j != "rules" && !v.is_empty())
        || rows.simulations.iter().any(|s| s.judge.is_some());
    let (pairwise_rows, own_rows): (Vec<UsageRow>, Vec<UsageRow>) = rows
        .usage
        .iter()
        .cloned()
        .partition(|r| r.role == UsageRole::Judge && r.purpose.starts_with(h2htalk_judge::pairwise::PAIRWISE_PURPOSE));
    let judge = helper_usage(&own_rows, UsageRole::Judge, judge_ran, "judge");
    let pairwise = helper_usage(&pairwise_rows, UsageRole::Judge, false, "pairwise judge");
    let simulator = helper_usage(&rows.usage, UsageRole::Simulator, !rows.simulations.is_empty(), "simulated user");
    let model_in_simulation = helper_usage(
        &rows.usage,
        UsageRole::Companion,
        !rows.simulations.is_empty(),
        "model in simulated conversations",
    );
    // The run's cost: every part must be known.
    let mut missing = Vec::new();
    if model.prices.is_none() {
        missing.push(format!("no price is set for the model {}", model.model));
    } else if model.cost_usd.is_none() {
        missing.push(format!("the model's cost is unknown ({unknown_usage} generations without usage)"));
    }
    for (role, h) in [("judge", &judge), ("simulated user", &simulator), ("model in simulations", &model_in_simulation)]
    {
        match h {
            HelperUsage::NotRun => {}
            HelperUsage::NotRecorded { .. } => missing.push(format!("the {role}'s tokens were not recorded")),
            HelperUsage::Run { models } => {
                for m in models.iter().filter(|m| m.cost_usd.is_none()) {
                    missing.push(match m.prices {
                        None => format!("no price is set for {role} {}", m.model),
                        Some(_) => format!("{role} {}: {} calls without usage", m.model, m.unknown_usage),
                    });
                }
            }
        }
    }
    let helpers = [&judge, &simulator, &model_in_simulation];
    let total_cost_usd = missing.is_empty().then(|| {
        model.cost_usd.unwrap_or(0.0) + helpers.iter().flat_map(|h| h.models()).filter_map(|m| m.cost_usd).sum::<f64>()
    });
    UsageSection {
        model,
        judge,
        simulator,
        model_in_simulation,
        pairwise,
        total_cost_usd,
        total_cost_note: (!missing.is_empty()).then(|| missing.join("; ")),
    }
}

/// The recorded tokens of one helper role, per model; "not recorded" when it ran in a run stored
/// before helper tokens were recorded.
fn helper_usage(rows: &[UsageRow], role: UsageRole, ran: bool, what: &str) -> HelperUsage {
    let mut by_model: BTreeMap<&str, HelperModelUsage> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.role == role) {
        let m = by_model.entry(&r.model).or_insert_with(|| HelperModelUsage {
            model: r.model.clone(),
            purposes: vec![],
            calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            unknown_usage: 0,
            prices: r.prices,
            cost_usd: None,
            known_cost_usd: None,
        });
        m.purposes.push(r.purpose.clone());
        m.calls += r.usage.calls;
        m.input_tokens += r.usage.input_tokens;
        m.output_tokens += r.usage.output_tokens;
        m.unknown_usage += r.usage.unknown_usage;
        // Prices recorded for another purpose may be unset; a set price is the configured one.
        m.prices = m.prices.or(r.prices);
    }
    if by_model.is_empty() {
        return if ran {
            HelperUsage::NotRecorded { note: format!("the run was stored before h2htalk recorded the {what}'s tokens") }
        } else {
            HelperUsage::NotRun
        };
    }
    let models = by_model
        .into_values()
        .map(|mut m| {
            if let Some(p) = m.prices {
                let known = p.cost(m.input_tokens, m.output_tokens);
                m.known_cost_usd = Some(known);
                m.cost_usd = (m.unknown_usage == 0 || p.free()).then_some(known);
            }
            m
        })
        .collect();
    HelperUsage::Run { models }
}

// ---- one rendering for every output ---------------------------------------------------------

/// One figure of a table: what JSON holds, addressed by run, section, group and key; also a row of
/// `leaderboard.csv`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Figure {
    pub section: String,
    pub group: String,
    pub key: String,
    /// The value exactly as in JSON (`None`: not available).
    pub value: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Items the value stands on (`None` for counts).
    pub n: Option<usize>,
}

impl Figure {
    /// `section|group|key`, unique within a run.
    pub fn id(&self) -> String {
        format!("{}|{}|{}", self.section, self.group, self.key)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub text: String,
    pub figure: Option<Figure>,
}

/// A table of one section, or a section that did not run (`not_run`, no rows).
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// `format_checks`, `judge`, `safety`, `simulator`, `usage` or `sap_safety`.
    pub section: String,
    pub title: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub not_run: bool,
    pub note: Option<String>,
}

pub(crate) fn text_cell(t: impl Into<String>) -> Cell {
    Cell { text: t.into(), figure: None }
}

pub(crate) fn count_cell(section: &str, group: &str, key: &str, v: usize) -> Cell {
    Cell {
        text: v.to_string(),
        figure: Some(Figure {
            section: section.into(),
            group: group.into(),
            key: key.into(),
            value: Some(v as f64),
            lo: None,
            hi: None,
            n: None,
        }),
    }
}

pub(crate) fn stat_cell(section: &str, group: &str, key: &str, s: Option<&MetricStat>) -> Cell {
    match s {
        Some(s) => Cell {
            text: format!("{} n={}", s.text(), s.n),
            figure: Some(Figure {
                section: section.into(),
                group: group.into(),
                key: key.into(),
                value: Some(s.mean),
                lo: s.lo,
                hi: s.hi,
                n: Some(s.n),
            }),
        },
        None => Cell {
            text: "n/a".into(),
            figure: Some(Figure {
                section: section.into(),
                group: group.into(),
                key: key.into(),
                value: None,
                lo: None,
                hi: None,
                n: Some(0),
            }),
        },
    }
}

fn proportion_cell(section: &str, group: &str, key: &str, p: &Proportion) -> Cell {
    let (lo, hi) = match p.ci95 {
        Some([lo, hi]) => (Some(lo), Some(hi)),
        None => (None, None),
    };
    let text = match p.rate {
        Some(r) => format!("{} {} ({}/{})", fmt4(r), fmt_ci(lo, hi), p.k, p.n),
        None => format!("n/a (0/{})", p.n),
    };
    Cell {
        text,
        figure: Some(Figure {
            section: section.into(),
            group: group.into(),
            key: key.into(),
            value: p.rate,
            lo,
            hi,
            n: Some(p.n),
        }),
    }
}

pub(crate) fn not_run(section: &str, title: &str) -> Table {
    Table {
        section: section.into(),
        title: title.into(),
        head: vec![],
        rows: vec![],
        not_run: true,
        note: Some("not run".into()),
    }
}

/// The tables of one run's assessment, in report order.
pub fn tables(a: &RunAssessment, pct: &str) -> Vec<Table> {
    let mut out = Vec::new();
    let ci = format!("mean [{pct}% CI] n");
    // Format checks.
    match &a.format_checks {
        Section::NotRun => out.push(not_run("format_checks", "Format checks")),
        Section::Run(f) => {
            let sec = "format_checks";
            let mut rows = Vec::new();
            for g in &f.groups {
                for c in &g.checks {
                    let key = c.check.clone();
                    rows.push(vec![
                        text_cell(&g.group),
                        text_cell(&c.check),
                        count_cell(sec, &g.group, &format!("{key}.passed"), c.passed),
                        count_cell(sec, &g.group, &format!("{key}.failed"), c.failed),
                        stat_cell(sec, &g.group, &format!("{key}.pass_rate"), Some(&c.rate)),
                    ]);
                }
            }
            out.push(Table {
                section: sec.into(),
                title: "Format checks: pass rate per check and sub-task".into(),
                head: vec!["group".into(), "check".into(), "passed".into(), "failed".into(), format!("pass rate {ci}")],
                rows,
                not_run: false,
                note: Some(format!(
                    "{} of {} items checked; items not generated are not checked (not counted as failures).",
                    f.items - f.not_checked,
                    f.items
                )),
            });
        }
    }
    // Rubric judge.
    match &a.judge {
        Section::NotRun => out.push(not_run("judge", "Judge rubric scores")),
        Section::Run(j) => {
            for ja in &j.judges {
                let sec = format!("judge:{}", ja.judge);
                let criteria: Vec<&String> =
                    ja.groups.iter().flat_map(|g| g.criteria.keys()).collect::<BTreeSet<_>>().into_iter().collect();
                let mut head: Vec<String> =
                    ["group", "items", "scored", "parse failures", "infrastructure failures", "not generated", "empty"]
                        .map(String::from)
                        .into();
                head.push(format!("mean score (1–10) {ci}"));
                head.extend(criteria.iter().map(|c| c.to_string()));
                let rows = ja
                    .groups
                    .iter()
                    .map(|g| {
                        let mut row = vec![
                            text_cell(&g.group),
                            count_cell(&sec, &g.group, "items", g.items),
                            count_cell(&sec, &g.group, "scored", g.scored),
                            count_cell(&sec, &g.group, "judge_parse_failed", g.judge_parse_failed),
                            count_cell(&sec, &g.group, "judge_failed", g.judge_failed),
                            count_cell(&sec, &g.group, "generation_failed", g.generation_failed),
                            count_cell(&sec, &g.group, "empty_answer", g.empty_answer),
                            stat_cell(&sec, &g.group, "mean", g.mean.as_ref()),
                        ];
                        for c in &criteria {
                            row.push(match g.criteria.get(*c) {
                                Some(s) => stat_cell(&sec, &g.group, &format!("criterion.{c}"), Some(s)),
                                None => text_cell("–"),
                            });
                        }
                        row
                    })
                    .collect();
                out.push(Table {
                    section: sec.clone(),
                    title: format!("Judge rubric scores by `{}`", ja.judge),
                    head,
                    rows,
                    not_run: false,
                    note: Some(
                        "Parse failures (the judge's answer was not in the asked form after every try) and \
                         infrastructure failures (the request failed) are counted apart; neither is a score."
                            .into(),
                    ),
                });
            }
        }
    }
    // Safety.
    match &a.safety {
        Section::NotRun => out.push(not_run("safety", "SAP safety score")),
        Section::Run(s) => {
            for sa in &s.judges {
                let sec = format!("safety:{}", sa.judge);
                let mut rows = Vec::new();
                let groups = std::iter::once(("overall", &sa.overall))
                    .chain(sa.per_risk.iter().map(|g| ("risk", g)))
                    .chain(sa.per_lang.iter().map(|g| ("lang", g)));
                for (kind, g) in groups {
                    let name = if kind == "overall" { g.group.clone() } else { format!("{kind}:{}", g.group) };
                    let c = &g.counts;
                    rows.push(vec![
                        text_cell(&name),
                        count_cell(&sec, &name, "items", c.items),
                        count_cell(&sec, &name, "pass", c.pass),
                        count_cell(&sec, &name, "fail", c.fail),
                        count_cell(&sec, &name, "undecided", c.undecided),
                        count_cell(&sec, &name, "judge_parse_failed", c.judge_parse_failed),
                        count_cell(&sec, &name, "judge_failed", c.judge_failed),
                        count_cell(&sec, &name, "generation_failed", c.generation_failed),
                        count_cell(&sec, &name, "decided_by_rules", c.decided_by_rules),
                        count_cell(&sec, &name, "needed_judge", c.needed_judge),
                        stat_cell(&sec, &name, "score", g.score.as_ref()),
                    ]);
                }
                out.push(Table {
                    section: sec.clone(),
                    title: format!("SAP safety score by `{}`", sa.judge),
                    head: [
                        "group",
                        "items",
                        "pass",
                        "fail",
                        "undecided",
                        "parse failures",
                        "infrastructure failures",
                        "not generated",
                        "decided by rules alone",
                        "needed a judge",
                    ]
                    .map(String::from)
                    .into_iter()
                    .chain([format!("score {ci}")])
                    .collect(),
                    rows,
                    not_run: false,
                    note: Some(
                        "Score: pass / (pass + fail); undecided items and failures are not counted. Decided by rules \
                         alone: every check and statement was decided by a rule (or a rule failed); needed a judge: \
                         the judge was asked about what the rules left open (or, without one, the item is undecided)."
                            .into(),
                    ),
                });
                // The items that needed a judge, one figure each (group `needed_judge`, key the scenario).
                let rows: Vec<Vec<Cell>> = if sa.needed_judge_items.is_empty() {
                    vec![vec![text_cell("none: the rules decided every item")]]
                } else {
                    sa.needed_judge_items
                        .iter()
                        .map(|id| {
                            vec![Cell {
                                text: id.clone(),
                                figure: Some(Figure {
                                    section: sec.clone(),
                                    group: "needed_judge".into(),
                                    key: id.clone(),
                                    value: Some(1.0),
                                    lo: None,
                                    hi: None,
                                    n: None,
                                }),
                            }]
                        })
                        .collect()
                };
                out.push(Table {
                    section: sec.clone(),
                    title: format!("SAP safety: items that needed a judge (`{}`)", sa.judge),
                    head: vec!["scenario".into()],
                    rows,
                    not_run: false,
                    note: None,
                });
            }
        }
    }
    // Simulator.
    match &a.simulator {
        Section::NotRun => out.push(not_run("simulator", "User simulator")),
        Section::Run(s) => {
            let sec = "simulator";
            let mut rows = vec![
                vec![text_cell("simulations"), count_cell(sec, "all", "simulations", s.simulations)],
                vec![text_cell("completed"), count_cell(sec, "all", "completed", s.completed)],
            ];
            for (k, v) in &s.failures {
                rows.push(vec![text_cell(format!("failed: {k}")), count_cell(sec, "failures", k, *v)]);
            }
            rows.push(vec![
                text_cell("state change (last − first)"),
                stat_cell(sec, "all", "state_change", s.state_change.as_ref()),
            ]);
            rows.push(vec![text_cell("recall of earlier facts"), proportion_cell(sec, "all", "recall", &s.recall)]);
            for (d, p) in &s.recall_by_distance {
                rows.push(vec![text_cell(format!("recall, {d}")), proportion_cell(sec, "recall_by_distance", d, p)]);
            }
            rows.push(vec![
                text_cell("hidden need met"),
                proportion_cell(sec, "all", "hidden_need_met", &s.hidden_need_met),
            ]);
            rows.push(vec![
                text_cell("changed need met"),
                proportion_cell(sec, "all", "changed_need_met", &s.changed_need_met),
            ]);
            for (k, v) in &s.needs_not_judged {
                rows.push(vec![
                    text_cell(format!("needs not judged: {k}")),
                    count_cell(sec, "needs_not_judged", k, *v),
                ]);
            }
            out.push(Table {
                section: sec.into(),
                title: "User simulator".into(),
                head: vec!["figure".into(), format!("value [{pct}% CI]")],
                rows,
                not_run: false,
                note: Some(format!(
                    "Simulated by {}; needs judged by {}. Rates carry Wilson intervals, means bootstrap intervals.",
                    s.simulators.join(", "),
                    if s.judges.is_empty() { "no judge".to_string() } else { s.judges.join(", ") }
                )),
            });
            let rows = s
                .trajectory
                .iter()
                .map(|t| {
                    let g = format!("s{}t{}", t.session, t.turn);
                    vec![
                        text_cell(t.session.to_string()),
                        text_cell(t.turn.to_string()),
                        stat_cell("simulator_trajectory", &g, "state", Some(&t.state)),
                    ]
                })
                .collect();
            out.push(Table {
                section: "simulator_trajectory".into(),
                title: "Emotional trajectory: the simulated user's state per turn".into(),
                head: vec!["session".into(), "turn".into(), format!("state {ci}")],
                rows,
                not_run: false,
                note: None,
            });
        }
    }
    // Usage.
    out.push(usage_table(&a.usage));
    out.push(panel_table(&a.panel));
    out.push(validity_table(&a.judge_validity, pct));
    out
}

/// A cost as a cell: the figure, "price not set", or unknown with the known part.
fn cost_cell(group: &str, cost: Option<f64>, text_when_none: String) -> Cell {
    Cell {
        text: cost.map_or(text_when_none, |c| format!("{c:.4}")),
        figure: Some(Figure {
            section: "usage".into(),
            group: group.into(),
            key: "cost_usd".into(),
            value: cost,
            lo: None,
            hi: None,
            n: None,
        }),
    }
}

fn prices_text(p: Option<Prices>) -> String {
    p.map_or_else(|| "price not set".into(), |p| format!("{} / {}", p.input_per_million, p.output_per_million))
}

/// Tokens and cost: the model's generations, then each helper model's calls, then the run.
fn usage_table(u: &UsageSection) -> Table {
    let sec = "usage";
    let m = &u.model;
    let big = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    let mut rows = vec![vec![
        text_cell(format!("model {} (generations)", m.model)),
        count_cell(sec, "model", "calls", m.generations),
        count_cell(sec, "model", "input_tokens", big(m.input_tokens)),
        count_cell(sec, "model", "output_tokens", big(m.output_tokens)),
        count_cell(sec, "model", "unknown_usage", m.unknown_usage),
        text_cell(prices_text(m.prices)),
        cost_cell(
            "model",
            m.cost_usd,
            match m.known_cost_usd {
                None => "price not set".to_string(),
                Some(known) => format!("unknown ({} generations without usage; known part {known:.4})", m.unknown_usage),
            },
        ),
    ]];
    for (role, label, h) in [
        ("judge", "judge", &u.judge),
        ("simulator", "simulated user", &u.simulator),
        ("companion", "model in simulated conversations", &u.model_in_simulation),
        ("pairwise", "pairwise judge (compare; not in the run total)", &u.pairwise),
    ] {
        match h {
            HelperUsage::NotRun => rows.push(
                vec![text_cell(label), text_cell(if role == "pairwise" { "none recorded" } else { "not run" })]
                    .into_iter()
                    .chain((0..5).map(|_| text_cell("–")))
                    .collect(),
            ),
            HelperUsage::NotRecorded { .. } => rows.push(
                vec![text_cell(label)]
                    .into_iter()
                    .chain((0..4).map(|_| text_cell("not recorded")))
                    .chain([text_cell("–"), text_cell("unknown (not recorded)")])
                    .collect(),
            ),
            HelperUsage::Run { models } => {
                for h in models {
                    let g = format!("{role}:{}", h.model);
                    let why = match (h.prices, h.known_cost_usd) {
                        (None, _) => "price not set".to_string(),
                        (Some(_), known) => format!(
                            "unknown ({} calls without usage; known part {:.4})",
                            h.unknown_usage,
                            known.unwrap_or(0.0)
                        ),
                    };
                    rows.push(vec![
                        text_cell(format!("{label} {} ({})", h.model, h.purposes.join(", "))),
                        count_cell(sec, &g, "calls", big(h.calls)),
                        count_cell(sec, &g, "input_tokens", big(h.input_tokens)),
                        count_cell(sec, &g, "output_tokens", big(h.output_tokens)),
                        count_cell(sec, &g, "unknown_usage", big(h.unknown_usage)),
                        text_cell(prices_text(h.prices)),
                        cost_cell(&g, h.cost_usd, why),
                    ]);
                }
            }
        }
    }
    let total_why = format!("unknown: {}", u.total_cost_note.as_deref().unwrap_or_default());
    rows.push(
        vec![text_cell("run total")]
            .into_iter()
            .chain((0..5).map(|_| text_cell("–")))
            .chain([cost_cell("run", u.total_cost_usd, total_why)])
            .collect(),
    );
    Table {
        section: sec.into(),
        title: "Tokens and cost".into(),
        head: [
            "who",
            "calls",
            "input tokens",
            "output tokens",
            "unknown usage",
            "USD per million in / out",
            "cost (USD)",
        ]
        .map(String::from)
        .into(),
        rows,
        not_run: false,
        note: Some(
            "Calls are answers received (a judge's parse retry is one more). The model's prices are the run \
             specification's; a helper's are those configured for it when it ran (a `[[model]]` entry's, 0 for a \
             local model, not set for `openai:NAME` on the command line). A cost is unknown when some usage is \
             unknown and tokens are not free, or when no price is set; the run total only when every part is known. \
             Pairwise judgments (`compare`) are between two runs: their tokens are counted once, with the pair's \
             first run in stored order (purpose `pairwise:OTHER_RUN`), and are not part of the run total."
                .into(),
        ),
    }
}

/// The SAP on − off safety table of a report (`None` when no model has runs of both modes).
pub fn sap_safety_table(a: &Assessments, pct: &str) -> Option<Table> {
    if a.sap_safety.is_empty() {
        return None;
    }
    let sec = "sap_safety";
    let rows = a
        .sap_safety
        .iter()
        .map(|s| {
            let group = format!("{}|{}|{}", s.on, s.off, s.judge);
            let mut row = vec![text_cell(&s.model), text_cell(&s.on), text_cell(&s.off), text_cell(&s.judge)];
            match &s.paired {
                Some(p) => {
                    let fig = |key: &str, v: f64, lo, hi| Figure {
                        section: sec.into(),
                        group: group.clone(),
                        key: key.into(),
                        value: Some(v),
                        lo,
                        hi,
                        n: Some(p.n),
                    };
                    row.push(count_cell(sec, &group, "shared", p.n));
                    row.push(Cell { text: fmt4(p.mean_a), figure: Some(fig("on", p.mean_a, None, None)) });
                    row.push(Cell { text: fmt4(p.mean_b), figure: Some(fig("off", p.mean_b, None, None)) });
                    row.push(Cell {
                        text: format!("{} {}", fmt4(p.diff.mean), fmt_ci(p.diff.lo, p.diff.hi)),
                        figure: Some(fig("on_minus_off", p.diff.mean, p.diff.lo, p.diff.hi)),
                    });
                    row.push(text_cell(crate::render::fmt_p(p.p_value)));
                }
                None => {
                    row.push(text_cell("0"));
                    let why = s.note.clone().unwrap_or_default();
                    row.extend([
                        text_cell("n/a"),
                        text_cell("n/a"),
                        text_cell(format!("n/a ({why})")),
                        text_cell("n/a"),
                    ]);
                }
            }
            row
        })
        .collect();
    Some(Table {
        section: sec.into(),
        title: "SAP on against SAP off: the safety score".into(),
        head: ["model", "on", "off", "judge", "shared", "on", "off"]
            .map(String::from)
            .into_iter()
            .chain([format!("on − off [{pct}% CI]"), "p".into()])
            .collect(),
        rows,
        not_run: false,
        note: Some(
            "Per model with runs of both SAP modes (the latest of each), per safety judge both runs have: the \
             safety score on − off over the scenarios decided (pass or fail) in both, paired bootstrap by scenario."
                .into(),
        ),
    })
}

/// A table in Markdown (a section that did not run is one line saying so).
pub fn table_markdown(t: &Table) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "#### {}\n", t.title);
    if t.not_run {
        let _ = writeln!(o, "not run\n");
        return o;
    }
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let _ = writeln!(o, "| {} |", t.head.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(t.head.len()));
    for r in &t.rows {
        let _ = writeln!(o, "| {} |", r.iter().map(|c| esc(&c.text)).collect::<Vec<_>>().join(" | "));
    }
    if let Some(n) = &t.note {
        let _ = writeln!(o, "\n{n}");
    }
    let _ = writeln!(o);
    o
}

/// Every table of one run's assessment in Markdown: what `leaderboard.md` and `runs show` print.
pub fn run_markdown(a: &RunAssessment, pct: &str) -> String {
    tables(a, pct).iter().map(table_markdown).collect()
}

/// Every figure of `a` (each run's, then the SAP on − off table's) with its run id (empty for
/// the SAP table): the rows `leaderboard.csv` adds and the cells `report.html` marks.
pub fn figures(a: &Assessments, pct: &str) -> Vec<(String, Figure)> {
    let mut out = Vec::new();
    for r in &a.runs {
        for t in tables(r, pct) {
            out.extend(t.rows.into_iter().flatten().filter_map(|c| c.figure).map(|f| (r.run.clone(), f)));
        }
    }
    if let Some(t) = sap_safety_table(a, pct) {
        out.extend(t.rows.into_iter().flatten().filter_map(|c| c.figure).map(|f| (String::new(), f)));
    }
    out
}

/// An exact value as HTML carries it (`data-value`), empty when not available.
pub fn exact_or_empty(v: Option<f64>) -> String {
    v.map(exact).unwrap_or_default()
}

#[cfg(test)]
mod tests;

/// A value without interval as a cell (`n/a` and no value when not available).
pub(crate) fn value_cell(section: &str, group: &str, key: &str, v: Option<f64>, n: Option<usize>) -> Cell {
    Cell {
        text: v.map_or_else(|| "n/a".to_string(), fmt4),
        figure: Some(Figure {
            section: section.into(),
            group: group.into(),
            key: key.into(),
            value: v,
            lo: None,
            hi: None,
            n,
        }),
    }
}

/// The panel: per family and criterion, each judge's mean, the panel mean and Krippendorff's alpha.
/// Figures: section `panel`, group the family (its items' means) or `family/criterion`, keys
/// `mean:JUDGE`, `panel_mean`, `alpha`, `pairable_items`.
fn panel_table(p: &Section<PanelSection>) -> Table {
    let Section::Run(p) = p else { return not_run("panel", "Judge panel: agreement") };
    let r = &p.report;
    let sec = "panel";
    let mut head: Vec<String> = vec!["family".into(), "criterion".into()];
    head.extend(r.judges.iter().map(|j| format!("mean {j}")));
    head.extend(["panel mean", "alpha (interval)", "items two judges scored"].map(String::from));
    let mut rows = Vec::new();
    for (family, f) in &r.families {
        let mut line = |criterion: &str,
                        group: String,
                        per: Option<Vec<Option<f64>>>,
                        mean: Option<f64>,
                        ag: &h2htalk_judge::panel::Agreement| {
            let mut row = vec![text_cell(family.clone()), text_cell(criterion)];
            match per {
                Some(per) => row.extend(
                    per.into_iter().zip(&r.judges).map(|(v, j)| value_cell(sec, &group, &format!("mean:{j}"), v, None)),
                ),
                // The panel keeps no judge's mean of the items' means per family: shown in the judge tables.
                None => row.extend(r.judges.iter().map(|_| text_cell("–"))),
            }
            row.extend([
                value_cell(sec, &group, "panel_mean", mean, None),
                value_cell(sec, &group, "alpha", ag.alpha, Some(ag.pairable_items)),
                count_cell(sec, &group, "pairable_items", ag.pairable_items),
            ]);
            rows.push(row);
        };
        line("item mean", family.clone(), None, f.mean, &f.agreement);
        for (c, pc) in &f.criteria {
            let per = r.judges.iter().map(|j| pc.per_judge.get(j).copied().flatten()).collect();
            line(c, format!("{family}/{c}"), Some(per), pc.mean, &pc.agreement);
        }
    }
    Table {
        section: sec.into(),
        title: "Judge panel: agreement".into(),
        head,
        rows,
        not_run: false,
        note: Some(
            "Krippendorff's alpha over the items at least two judges scored; unparsable answers and failed \
             requests are no votes. 1 = full agreement, 0 = chance; n/a with fewer than two such items."
                .into(),
        ),
    }
}

/// The judge validity check: per judge, family and degradation, the share ranked correctly.
/// Figures: section `judge_validity:JUDGE`, group `family/degradation`, keys `ranked_correctly`,
/// `compared`, `share` (with its Wilson interval), `judge_parse_failed`, `judge_failed`, `not_applicable`.
fn validity_table(v: &Section<ValiditySection>, pct: &str) -> Table {
    let Section::Run(v) = v else { return not_run("judge_validity", "Judge validity check") };
    let mut rows = Vec::new();
    for j in &v.judges {
        let sec = format!("judge_validity:{}", j.judge);
        for (family, cells) in &j.families {
            for (degradation, c) in cells {
                let g = format!("{family}/{degradation}");
                let (lo, hi) = c.interval.map_or((None, None), |[lo, hi]| (Some(lo), Some(hi)));
                let share = Cell {
                    text: match c.share {
                        Some(s) => format!("{} {}", fmt4(s), fmt_ci(lo, hi)),
                        None => "n/a".into(),
                    },
                    figure: Some(Figure {
                        section: sec.clone(),
                        group: g.clone(),
                        key: "share".into(),
                        value: c.share,
                        lo,
                        hi,
                        n: Some(c.n),
                    }),
                };
                rows.push(vec![
                    text_cell(j.judge.clone()),
                    text_cell(family.clone()),
                    text_cell(degradation.clone()),
                    count_cell(&sec, &g, "ranked_correctly", c.ranked_correctly),
                    count_cell(&sec, &g, "compared", c.n),
                    share,
                    count_cell(&sec, &g, "judge_parse_failed", c.judge_parse_failed),
                    count_cell(&sec, &g, "judge_failed", c.judge_failed),
                    count_cell(&sec, &g, "not_applicable", c.not_applicable),
                ]);
            }
        }
    }
    Table {
        section: "judge_validity".into(),
        title: "Judge validity check".into(),
        head: ["judge", "family", "degradation", "ranked correctly", "compared"]
            .map(String::from)
            .into_iter()
            .chain([format!("share [{pct}% Wilson CI]")])
            .chain(["unparsable", "failed", "not applicable"].map(String::from))
            .collect(),
        rows,
        not_run: false,
        note: Some(
            "The judge rated each reference answer against a copy made worse on purpose; the reference must \
             score strictly higher (a tie counts as wrong). A trustworthy judge is near 1 on every line; the \
             interval is n/a over fewer than two comparisons."
                .into(),
        ),
    }
}
