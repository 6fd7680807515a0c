//! The typed value of every assessment of a run: format checks, rubric judges, the panel, the judge
//! validity check, the SAP safety score, the user simulator, tokens and cost.

use std::collections::BTreeMap;

use h2htalk_stats::Proportion;
use h2htalk_stats::bootstrap::Paired;
use h2htalk_store::Prices;
use serde::Serialize;

use crate::compute::panel::PanelReport;
use crate::compute::safety_counts::SafetyCounts;
use crate::compute::stat::{GroupKind, MetricStat};
use crate::compute::validity::ValidityCell;

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
    pub fn is_not_run(&self) -> bool {
        matches!(self, Section::NotRun)
    }

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
    /// How the judge's scores follow the answers' length (the judge card); `None` under three scored
    /// items or when scores or lengths do not vary.
    pub length_bias: Option<LengthBias>,
}

/// Spearman's ρ between each scored item's mean score and its answer's length in characters, with
/// its bootstrap interval over items (`lo`/`hi` null when no resample gave a value). A judge that
/// rewards length shows ρ well above 0; the answers' own quality may too, so it is a flag to read
/// with the pairwise length-controlled ranking, not a verdict.
#[derive(Clone, Debug, Serialize)]
pub struct LengthBias {
    pub items: usize,
    pub spearman: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
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
    pub(crate) fn models(&self) -> &[HelperModelUsage] {
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
    /// The null baselines on the run's items, and the run against the strongest.
    pub baselines: Section<crate::compute::baselines::BaselineSection>,
    /// The memory suite (`run --memory`); left out of the JSON when it did not run, as in reports
    /// written before it.
    #[serde(skip_serializing_if = "Section::is_not_run")]
    pub memory: Section<MemorySection>,
    /// How many of the run's references themselves break a SAP rule, per sub-task; left out of
    /// the JSON for runs stored before the references were looked at.
    #[serde(skip_serializing_if = "Section::is_not_run")]
    pub reference_sap: Section<ReferenceSapSection>,
}

// ---- SAP and the references ---------------------------------------------------------------

/// The references of a run's items that break a SAP rule, per sub-task (then `overall`, the
/// sub-tasks pooled; the safety set is a group of its own).
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceSapSection {
    pub groups: Vec<ReferenceSapGroup>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReferenceSapGroup {
    pub group: String,
    pub items: usize,
    /// References with a presence phrase or a bracketed bodily action (a hug, holding a hand).
    pub bodily_presence: usize,
    pub exclusivity: usize,
    pub dependence: usize,
    /// References that break any of the three (Wilson interval).
    pub any: Proportion,
}

// ---- the memory suite ---------------------------------------------------------------------

/// The memory suite's results of a run: per history mode, per probe type and over all types.
#[derive(Clone, Debug, Serialize)]
pub struct MemorySection {
    pub modes: Vec<MemoryModeResult>,
    /// The judges that read the replies (none: only the rules decided).
    pub judges: Vec<String>,
    /// The `own` mode's notes: sessions noted, notes that broke the memory format (no memories
    /// taken from them), notes whose call failed.
    pub notes: Option<MemoryNotesCount>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemoryModeResult {
    /// `given` or `own`.
    pub mode: String,
    /// One row per probe type, in the suite's order, then `all`.
    pub rows: Vec<MemoryRow>,
}

/// The figures of one probe type (or `all`) in one mode.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryRow {
    pub kind: String,
    pub probes: usize,
    /// Probes without a reply (the call failed): never scored.
    pub failed: usize,
    /// Correct by the rules (every key fact held; abstention: said it was never told), over the
    /// replies (Wilson interval).
    pub correct: Proportion,
    /// Key facts held per reply, over the replies of probes with key facts (bootstrap interval).
    pub fact_recall: Option<MetricStat>,
    /// The judge's score, 1–10, over the replies it scored (bootstrap interval).
    pub judge: Option<MetricStat>,
    /// Replies that invent a memory, over those decided (the judge's verdict where it read the
    /// reply, else the rules' on abstention probes); a hard failure, counted apart.
    pub invented: Proportion,
    /// Replies nobody could decide on (no judge, not an abstention probe, or the judge failed).
    pub invented_undecided: usize,
    /// `knowledge_update`: replies that give an outdated value without the latest.
    pub stale: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemoryNotesCount {
    pub sessions: usize,
    pub memories: usize,
    pub format_errors: usize,
    pub failed: usize,
}

/// The panel of a run's judges.
#[derive(Clone, Debug, Serialize)]
pub struct PanelSection {
    #[serde(flatten)]
    pub report: PanelReport,
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
    pub families: BTreeMap<String, BTreeMap<String, ValidityCell>>,
}

/// The assessments of a report's runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Assessments {
    pub runs: Vec<RunAssessment>,
    /// For each model with runs of both SAP modes (the latest of each): the safety score on − off.
    pub sap_safety: Vec<SafetyOnOff>,
    /// Judges against people, per set of items people rated whose runs are all in the report
    /// (absent when there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub human: Vec<crate::compute::human::HumanAgreement>,
    /// The card of every pairwise judge that compared runs of the report (absent when none did).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judge_cards: Vec<crate::compute::judge_cards::JudgeCard>,
}

impl Assessments {
    pub fn run(&self, id: &str) -> Option<&RunAssessment> {
        self.runs.iter().find(|r| r.run == id)
    }
}
