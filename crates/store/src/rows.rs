//! The typed rows of the store: every status and outcome an enum, every structured column a typed
//! value. Decoding a column that holds anything else is an error naming the run, the item and the
//! column ([`crate::StoreError::Corrupt`]); nothing reads as empty, 0 or a default.

use std::collections::BTreeMap;

use h2htalk_data::suite::{Check, FormatCheckName, Lang, Risk};
use h2htalk_data::{ChatMessage, Family};
use h2htalk_llm::{FaultKind, FinishReason};
use serde::{Deserialize, Serialize};
use serde_json::Value;

text_enum!(
    /// Where a run stands.
    RunStatus {
        /// Started and not finished (or stopped by a crash: `--resume` continues it).
        Running = "running",
        /// Stopped with items left (a cost limit, an interruption).
        Incomplete = "incomplete",
        Complete = "complete",
        CompleteWithFailures = "complete_with_failures",
        /// Written by tools that build stores of stopped runs (the synthetic report store).
        Interrupted = "interrupted",
    }
);

text_enum!(
    /// How an item's generation ended.
    GenerationStatus { Generated = "generated", Failed = "failed" }
);

text_enum!(
    /// How an item was scored: `strict` scores an empty answer (at 0), `paper` drops it.
    ScoreOutcome { Scored = "scored", EmptyPrediction = "empty_prediction", Dropped = "dropped" }
);

impl ScoreOutcome {
    /// Whether the item carries metric values.
    pub fn has_values(self) -> bool {
        matches!(self, ScoreOutcome::Scored | ScoreOutcome::EmptyPrediction)
    }
}

text_enum!(
    /// A rubric judgment of one item.
    JudgeOutcome {
        Scored = "scored",
        JudgeParseFailed = "judge_parse_failed",
        JudgeFailed = "judge_failed",
        GenerationFailed = "generation_failed",
        EmptyAnswer = "empty_answer",
    }
);

text_enum!(
    /// A pairwise judgment of one item, both orders combined.
    PairOutcome {
        A = "a",
        B = "b",
        Tie = "tie",
        /// The two orders disagreed.
        Inconsistent = "inconsistent",
        JudgeParseFailed = "judge_parse_failed",
        JudgeFailed = "judge_failed",
        /// An answer is missing, failed or empty in either run.
        Missing = "missing",
    }
);

text_enum!(
    /// The SAP safety verdict on one safety item.
    Verdict {
        Pass = "pass",
        Fail = "fail",
        Undecided = "undecided",
        JudgeParseFailed = "judge_parse_failed",
        JudgeFailed = "judge_failed",
        GenerationFailed = "generation_failed",
    }
);

text_enum!(
    /// What a judge session judged.
    SessionKind {
        Rubric = "rubric",
        Safety = "safety",
        /// The judge validity check (references against degraded copies).
        Validity = "validity",
    }
);

text_enum!(
    /// How a simulated conversation ended.
    SimulationOutcome {
        Completed = "completed",
        SimulatorParseFailed = "simulator_parse_failed",
        SimulatorFailed = "simulator_failed",
        CompanionFailed = "companion_failed",
    }
);

pub use h2htalk_data::SAFETY_GROUP;

/// One item of a run: a scenario and the exact messages it was given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub scenario_id: String,
    /// A sub-task stem, or [`SAFETY_GROUP`].
    pub task: String,
    pub lang: Lang,
    pub ord: usize,
    pub prompt: Vec<ChatMessage>,
    pub reference: String,
}

/// One finished generation, or a failure with its reason.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    pub scenario_id: String,
    pub status: GenerationStatus,
    pub text: Option<String>,
    pub finish_reason: Option<FinishReason>,
    /// `None` when the server reported no usage: unknown, never 0.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub latency_ms: f64,
    pub attempts: u32,
    pub error_kind: Option<FaultKind>,
    pub error_message: Option<String>,
    /// Fault kinds met on the way (retried or not).
    pub faults: Vec<FaultKind>,
}

impl Generation {
    /// The answer of a generated item.
    pub fn answer(&self) -> Option<&str> {
        match self.status {
            GenerationStatus::Generated => self.text.as_deref(),
            GenerationStatus::Failed => None,
        }
    }

    /// `kind: message` of a failure.
    pub fn failure(&self) -> Option<String> {
        (self.status == GenerationStatus::Failed).then(|| {
            let kind = self.error_kind.map_or("failed", FaultKind::as_str);
            match &self.error_message {
                Some(m) => format!("{kind}: {m}"),
                None => kind.to_string(),
            }
        })
    }
}

/// One item's scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub scenario_id: String,
    pub outcome: ScoreOutcome,
    /// Metric name → value (finite); empty for a dropped item.
    pub metrics: BTreeMap<String, f64>,
    pub signature: String,
}

/// An item joined with its generation and score: the one view of a run's records.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub item: Item,
    pub generation: Option<Generation>,
    pub score: Option<Score>,
}

impl Record {
    pub fn answer(&self) -> Option<&str> {
        self.generation.as_ref().and_then(Generation::answer)
    }
}

/// A rubric judgment of one item by one judge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeScore {
    pub scenario_id: String,
    pub task: String,
    pub family: Family,
    pub outcome: JudgeOutcome,
    /// Criterion → 1..=10, for a scored item.
    pub scores: Option<BTreeMap<String, u8>>,
    pub mean: Option<f64>,
    pub reason: Option<String>,
    pub attempts: u32,
    pub raw: Option<String>,
    pub error: Option<String>,
}

impl JudgeScore {
    /// A judgment of `outcome` with nothing else recorded yet (no scores, reason, answer or
    /// error; no attempt).
    pub fn new(scenario_id: &str, task: &str, family: Family, outcome: JudgeOutcome) -> JudgeScore {
        JudgeScore {
            scenario_id: scenario_id.into(),
            task: task.into(),
            family,
            outcome,
            scores: None,
            mean: None,
            reason: None,
            attempts: 0,
            raw: None,
            error: None,
        }
    }
}

/// One format check of one item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FormatCheck {
    pub scenario_id: String,
    pub task: String,
    pub name: FormatCheckName,
    pub passed: bool,
    pub message: Option<String>,
}

/// A pairwise judgment of one item of two runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairJudgment {
    pub scenario_id: String,
    pub outcome: PairOutcome,
    /// The judge's answer (or its failure) with run A shown first, and with run B first.
    pub order_ab: Option<Value>,
    pub order_ba: Option<Value>,
    pub error: Option<String>,
}

/// The safety verdict on one safety item by one judge (`rules` when the rules alone decided).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SafetyVerdict {
    pub scenario_id: String,
    pub lang: Lang,
    pub risk: Risk,
    pub verdict: Verdict,
    /// What each of the item's rule checks found.
    pub rules: Vec<RuleResult>,
    /// The judge's answer about the statements the rules left to it (`None` when the rules decided
    /// alone, or no judge was asked).
    pub judgment: Option<Value>,
    pub reason: Option<String>,
}

impl SafetyVerdict {
    /// Who decided the verdict: a judgment or a judge failure means the judge, `undecided` means it
    /// needs one, and a pass or fail without a judgment was the rules' alone.
    pub fn decided_by(&self) -> DecidedBy {
        match self.verdict {
            Verdict::GenerationFailed => DecidedBy::Nobody,
            Verdict::Undecided | Verdict::JudgeFailed | Verdict::JudgeParseFailed => DecidedBy::Judge,
            Verdict::Pass | Verdict::Fail if self.judgment.is_some() => DecidedBy::Judge,
            Verdict::Pass | Verdict::Fail => DecidedBy::Rules,
        }
    }
}

text_enum!(
    /// Who decided a safety verdict.
    DecidedBy {
        /// A rule failed, or the rules decided every check and every statement of `expected`.
        Rules = "rules",
        /// Some check or statement is left to the judge (asked, or missing: then `undecided`).
        Judge = "judge",
        /// The answer was not generated: nothing to decide.
        Nobody = "nobody",
    }
);

text_enum!(
    /// What a safety rule found.
    RuleOutcome {
        Pass = "pass",
        Fail = "fail",
        /// The rule cannot decide this answer; the judge does.
        Undecided = "undecided",
    }
);

/// One safety rule applied to one answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleResult {
    pub check: Check,
    pub outcome: RuleOutcome,
    /// The words that decided it, or why it could not.
    pub evidence: String,
}

text_enum!(
    /// One comparison of the judge validity check: a reference and one degraded copy of it.
    ValidityOutcome {
        /// Both were scored: `reference_mean` and `degraded_mean` hold the rubric means (on the
        /// safety set, `degraded_mean` alone: 1 passed, 0 failed).
        Compared = "compared",
        /// The judge's answer on either could not be used.
        JudgeParseFailed = "judge_parse_failed",
        /// The request for either failed.
        JudgeFailed = "judge_failed",
        /// This degradation cannot be made for the scenario (no other reference of its sub-task and
        /// language, or no memory to invent in its family).
        NotApplicable = "not_applicable",
    }
);

text_enum!(
    /// How the judge validity check makes a reference worse.
    Degradation {
        /// Another scenario's reference of the same sub-task and language: fluent, but not an answer
        /// to this conversation.
        OtherReference = "other_reference",
        /// The first third of the reference.
        Truncation = "truncation",
        /// The reference and a sentence in which the companion says it is an AI assistant.
        PersonaBreak = "persona_break",
        /// The reference with an invented earlier shared memory after its first sentence.
        FabricatedMemory = "fabricated_memory",
        /// The null baseline's fixed comfort line of the language, whatever was said: a judge that
        /// rates a canned line well is caught.
        GenericComfort = "generic_comfort",
        /// The null baseline's echo: the user's last turn (or the input the answer is made from)
        /// given back.
        Echo = "echo",
    }
);

impl Degradation {
    /// Whether the degradation is made for a family: an invented memory only where shared
    /// memories are part of the answer (dialogue, recollection).
    pub fn applies_to(self, family: Family) -> bool {
        self != Degradation::FabricatedMemory || family != Family::Itinerary
    }
}

/// One comparison of the judge validity check by one judge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidityRow {
    pub scenario_id: String,
    pub degradation: Degradation,
    pub task: String,
    pub family: Family,
    pub lang: Lang,
    pub outcome: ValidityOutcome,
    pub reference_mean: Option<f64>,
    pub degraded_mean: Option<f64>,
    pub error: Option<String>,
}

impl ValidityRow {
    /// Whether the reference was ranked above the degraded copy; `None` when not compared. A row
    /// of the safety set (task [`SAFETY_GROUP`]) has no reference: its `degraded_mean` is 1 when
    /// the safety judge passed the canned answer and 0 when it failed it, and failing it is right.
    pub fn ranked_correctly(&self) -> Option<bool> {
        match (self.outcome, self.reference_mean, self.degraded_mean) {
            (ValidityOutcome::Compared, _, Some(d)) if self.task == SAFETY_GROUP => Some(d == 0.0),
            (ValidityOutcome::Compared, Some(r), Some(d)) => Some(r > d),
            _ => None,
        }
    }

    /// The group the row is counted in: its family, or [`SAFETY_GROUP`] for the safety set.
    pub fn group(&self) -> &str {
        if self.task == SAFETY_GROUP { SAFETY_GROUP } else { self.family.name() }
    }
}

text_enum!(
    /// Who made the calls of a [`UsageRow`]: the judge (rubric, safety, validity, needs), the
    /// simulated user, or the model under test playing the companion in simulated conversations.
    UsageRole { Judge = "judge", Simulator = "simulator", Companion = "companion" }
);

/// Tokens of some calls. An answer whose server reported no usage counts in `unknown_usage`, and
/// its tokens in neither sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallUsage {
    /// Answers received.
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub unknown_usage: u64,
}

impl CallUsage {
    pub fn add(&mut self, other: CallUsage) {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.unknown_usage += other.unknown_usage;
    }

    /// One answer with the usage its server reported (`None`: not reported).
    pub fn answer(input_tokens: Option<u64>, output_tokens: Option<u64>) -> CallUsage {
        match (input_tokens, output_tokens) {
            (Some(i), Some(o)) => CallUsage { calls: 1, input_tokens: i, output_tokens: o, unknown_usage: 0 },
            _ => CallUsage { calls: 1, input_tokens: 0, output_tokens: 0, unknown_usage: 1 },
        }
    }
}

/// What a helper model's calls of a run were for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Purpose {
    /// The judge's rubric scores.
    Rubric,
    /// The judge's SAP safety verdicts.
    Safety,
    /// The judge validity check.
    Validity,
    /// Whether a simulated user's needs were met (the judge).
    Needs,
    /// The simulated user's turns.
    User,
    /// The model under test as the companion of simulated conversations.
    Conversation,
    /// The memory suite: the companion's replies to its probes, or the judge's reading of them
    /// (the role tells which).
    Memory,
    /// The memory suite's `own` mode: the memories the companion writes after each session.
    MemoryNotes,
    /// Pairwise judgments of this run against another run (`h2htalk compare`), recorded with the
    /// pair's first run.
    Pairwise { against: String },
}

impl Purpose {
    /// As stored: `rubric`, …, `pairwise:OTHER_RUN`.
    pub fn to_text(&self) -> String {
        match self {
            Purpose::Rubric => "rubric".into(),
            Purpose::Safety => "safety".into(),
            Purpose::Validity => "validity".into(),
            Purpose::Needs => "needs".into(),
            Purpose::User => "user".into(),
            Purpose::Conversation => "conversation".into(),
            Purpose::Memory => "memory".into(),
            Purpose::MemoryNotes => "memory_notes".into(),
            Purpose::Pairwise { against } => format!("pairwise:{against}"),
        }
    }

    pub fn parse(text: &str) -> Option<Purpose> {
        Some(match text {
            "rubric" => Purpose::Rubric,
            "safety" => Purpose::Safety,
            "validity" => Purpose::Validity,
            "needs" => Purpose::Needs,
            "user" => Purpose::User,
            "conversation" => Purpose::Conversation,
            "memory" => Purpose::Memory,
            "memory_notes" => Purpose::MemoryNotes,
            _ => Purpose::Pairwise { against: text.strip_prefix("pairwise:").filter(|r| !r.is_empty())?.to_string() },
        })
    }
}

impl PartialEq<&str> for Purpose {
    fn eq(&self, other: &&str) -> bool {
        self.to_text() == *other
    }
}

impl std::fmt::Display for Purpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl Serialize for Purpose {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
}

impl<'de> Deserialize<'de> for Purpose {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Purpose, D::Error> {
        let text = String::deserialize(d)?;
        Purpose::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a known purpose")))
    }
}

/// The tokens of a run's calls by one helper model for one purpose, with the prices configured for
/// that model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageRow {
    pub role: UsageRole,
    pub model: String,
    pub purpose: Purpose,
    pub usage: CallUsage,
    /// `None`: no price is configured for the model (an `openai:NAME` given on the command line).
    pub prices: Option<crate::spec::Prices>,
}
