//! The typed shape of a scenario: what a model gets as input, per sub-task, and its annotations.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::task::Task;

/// Whether the SAP principles go into the system prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SapMode {
    On,
    Off,
}

impl SapMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SapMode::On => "on",
            SapMode::Off => "off",
        }
    }
}

impl std::str::FromStr for SapMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(SapMode::On),
            "off" => Ok(SapMode::Off),
            _ => Err(format!("`{s}`: expected `on` or `off`")),
        }
    }
}

impl fmt::Display for SapMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The language of a scenario or persona card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Zh,
    En,
}

impl Lang {
    pub fn from_code(code: &str) -> Option<Lang> {
        match code {
            "zh" => Some(Lang::Zh),
            "en" => Some(Lang::En),
            _ => None,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::En => "en",
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One turn of a conversation; `assistant` is the companion.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub role: Role,
    pub content: String,
}

/// A time of day, `HH:MM` on 24 hours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ClockTime(u16);

impl ClockTime {
    pub fn minutes(self) -> u16 {
        self.0
    }

    /// Parses exactly `HH:MM` (two digits each, 00:00–23:59).
    pub fn parse(s: &str) -> Option<ClockTime> {
        let b = s.as_bytes();
        if b.len() != 5 || b[2] != b':' || !b.iter().enumerate().all(|(i, c)| i == 2 || c.is_ascii_digit()) {
            return None;
        }
        let (h, m) = (s[..2].parse::<u16>().ok()?, s[3..].parse::<u16>().ok()?);
        (h < 24 && m < 60).then_some(ClockTime(h * 60 + m))
    }
}

impl TryFrom<String> for ClockTime {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        ClockTime::parse(&s).ok_or_else(|| format!("`{s}` is not a time of day; write HH:MM on 24 hours, e.g. 07:30"))
    }
}

impl From<ClockTime> for String {
    fn from(t: ClockTime) -> String {
        t.to_string()
    }
}

impl fmt::Display for ClockTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.0 / 60, self.0 % 60)
    }
}

/// A calendar date, `YYYY-MM-DD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Date {
    year: u16,
    month: u8,
    day: u8,
}

impl Date {
    /// Days since 1970-01-01 (for gaps between dates).
    pub fn days(self) -> i64 {
        let (y, m, d) = (i64::from(self.year), i64::from(self.month), i64::from(self.day));
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    pub fn parse(s: &str) -> Option<Date> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let digits = |r: std::ops::Range<usize>| -> Option<u16> {
            s.get(r).filter(|p| p.bytes().all(|c| c.is_ascii_digit()))?.parse().ok()
        };
        let (year, month, day) = (digits(0..4)?, digits(5..7)? as u8, digits(8..10)? as u8);
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (day >= 1 && day <= days).then_some(Date { year, month, day })
    }
}

impl TryFrom<String> for Date {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Date::parse(&s).ok_or_else(|| format!("`{s}` is not a date; write YYYY-MM-DD, e.g. 2025-03-08"))
    }
}

impl From<Date> for String {
    fn from(d: Date) -> String {
        d.to_string()
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// One entry of the companion's schedule.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    pub time: ClockTime,
    pub activity: String,
}

/// The 24 memory categories of the recollection prompts, in their Chinese names.
pub const MEMORY_CATEGORIES: [&str; 24] = [
    "姓名",
    "性别",
    "年龄",
    "位置",
    "生日",
    "星座",
    "性格",
    "MBTI",
    "情绪状态",
    "职业",
    "睡眠习惯",
    "健康状况",
    "心情",
    "亲友关系",
    "食物",
    "娱乐",
    "旅行",
    "追星",
    "爱好",
    "情感生活",
    "学业",
    "工作",
    "虚拟互动",
    "其他事件",
];

/// The fixed answer of `recollection_synthesize` when nothing is worth remembering.
pub const NO_KEY_INFORMATION: &str = "未提取到关键信息。";

/// A memory category, one of [`MEMORY_CATEGORIES`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Category(String);

impl Category {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Category {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if MEMORY_CATEGORIES.contains(&s.as_str()) {
            Ok(Category(s))
        } else {
            Err(format!("`{s}` is not one of the 24 memory categories ({})", MEMORY_CATEGORIES.join(", ")))
        }
    }
}

impl From<Category> for String {
    fn from(c: Category) -> String {
        c.0
    }
}

/// Importance of a memory: 0 ≈ a week, 1 ≈ three months, 2 = long-term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Importance(u8);

impl TryFrom<u8> for Importance {
    type Error = String;
    fn try_from(v: u8) -> Result<Self, String> {
        if v <= 2 { Ok(Importance(v)) } else { Err(format!("{v} is not an importance; use 0, 1 or 2")) }
    }
}

impl From<Importance> for u8 {
    fn from(i: Importance) -> u8 {
        i.0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub content: String,
    pub category: Category,
    pub importance: Importance,
}

/// An earlier session a memory comes from.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    pub date: Date,
    pub history: Vec<Turn>,
}

/// What the model is given, typed per sub-task (see suites/FORMAT.md).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Inputs {
    /// dialogue_base, dialogue_emotion, recollection_synthesize, and the safety set. `sessions`:
    /// earlier dated conversations (oldest first; empty when there are none), then `date`, the day
    /// of the current conversation (`Some` exactly when there are sessions).
    History { sessions: Vec<Session>, date: Option<Date>, history: Vec<Turn> },
    /// dialogue_schedule.
    Schedule { schedule: Vec<Slot>, now: ClockTime, sessions: Vec<Session>, date: Option<Date>, history: Vec<Turn> },
    /// recollection_refine.
    RawMemory { memory: String },
    /// recollection_initialize.
    Recall { memory: Memory, session: Session, today: Date },
    /// itinerary_basic.
    Day { date: Date, weekday: String, hobbies: Vec<String>, memories: Vec<Memory> },
    /// itinerary_middle.
    Overview { overview: String, wake: ClockTime },
    /// itinerary_advanced.
    Expand { itinerary: Vec<Slot>, slot: ClockTime },
    /// itinerary_feedback.
    Feedback { itinerary: Vec<Slot>, now: ClockTime, feedback: String },
    /// itinerary_initialize.
    Share { itinerary: Vec<Slot>, now: ClockTime, memories: Vec<Memory> },
}

macro_rules! inputs_shape {
    ($name:ident { $($field:ident : $ty:ty),* }) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name { $($field: $ty),* }
    };
}

/// Inputs with a chat history may carry earlier sessions and the current date (both or neither).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryShape {
    #[serde(default)]
    sessions: Option<Vec<Session>>,
    #[serde(default)]
    date: Option<Date>,
    history: Vec<Turn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleShape {
    schedule: Vec<Slot>,
    now: ClockTime,
    #[serde(default)]
    sessions: Option<Vec<Session>>,
    #[serde(default)]
    date: Option<Date>,
    history: Vec<Turn>,
}
inputs_shape!(RawMemoryShape { memory: String });
inputs_shape!(RecallShape { memory: Memory, session: Session, today: Date });
inputs_shape!(DayShape { date: Date, weekday: String, hobbies: Vec<String>, memories: Vec<Memory> });
inputs_shape!(OverviewShape { overview: String, wake: ClockTime });
inputs_shape!(ExpandShape { itinerary: Vec<Slot>, slot: ClockTime });
inputs_shape!(FeedbackShape { itinerary: Vec<Slot>, now: ClockTime, feedback: String });
inputs_shape!(ShareShape { itinerary: Vec<Slot>, now: ClockTime, memories: Vec<Memory> });

/// A deserialisation error with the path of the offending field (`history[2].role`).
pub type PathError = serde_path_to_error::Error<serde_json::Error>;

impl Inputs {
    /// Parses `value` as the inputs of `task`; unknown and missing keys are errors.
    pub fn parse(task: Task, value: serde_json::Value) -> Result<Inputs, PathError> {
        fn de<T: for<'de> Deserialize<'de>>(v: serde_json::Value) -> Result<T, PathError> {
            serde_path_to_error::deserialize(v)
        }
        Ok(match task {
            Task::DialogueBase | Task::DialogueEmotion | Task::RecollectionSynthesize => {
                let s: HistoryShape = de(value)?;
                Inputs::History { sessions: s.sessions.unwrap_or_default(), date: s.date, history: s.history }
            }
            Task::DialogueSchedule => {
                let s: ScheduleShape = de(value)?;
                Inputs::Schedule {
                    schedule: s.schedule,
                    now: s.now,
                    sessions: s.sessions.unwrap_or_default(),
                    date: s.date,
                    history: s.history,
                }
            }
            Task::RecollectionRefine => Inputs::RawMemory { memory: de::<RawMemoryShape>(value)?.memory },
            Task::RecollectionInitialize => {
                let s: RecallShape = de(value)?;
                Inputs::Recall { memory: s.memory, session: s.session, today: s.today }
            }
            Task::ItineraryBasic => {
                let s: DayShape = de(value)?;
                Inputs::Day { date: s.date, weekday: s.weekday, hobbies: s.hobbies, memories: s.memories }
            }
            Task::ItineraryMiddle => {
                let s: OverviewShape = de(value)?;
                Inputs::Overview { overview: s.overview, wake: s.wake }
            }
            Task::ItineraryAdvanced => {
                let s: ExpandShape = de(value)?;
                Inputs::Expand { itinerary: s.itinerary, slot: s.slot }
            }
            Task::ItineraryFeedback => {
                let s: FeedbackShape = de(value)?;
                Inputs::Feedback { itinerary: s.itinerary, now: s.now, feedback: s.feedback }
            }
            Task::ItineraryInitialize => {
                let s: ShareShape = de(value)?;
                Inputs::Share { itinerary: s.itinerary, now: s.now, memories: s.memories }
            }
        })
    }

    /// The conversation the companion replies to, if the sub-task has one.
    pub fn history(&self) -> Option<&[Turn]> {
        match self {
            Inputs::History { history, .. } | Inputs::Schedule { history, .. } => Some(history),
            _ => None,
        }
    }

    /// The companion's schedule, if the sub-task has one.
    pub fn schedule(&self) -> Option<&[Slot]> {
        match self {
            Inputs::Schedule { schedule: s, .. }
            | Inputs::Expand { itinerary: s, .. }
            | Inputs::Feedback { itinerary: s, .. }
            | Inputs::Share { itinerary: s, .. } => Some(s),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Emotion {
    Loneliness,
    Grief,
    Anxiety,
    Anger,
    Shame,
    Joy,
    Boredom,
    Sadness,
    Stress,
    Fear,
    Guilt,
    Jealousy,
    Excitement,
    Affection,
    Nostalgia,
    Frustration,
    Calm,
}

/// The risk types of the SAP safety set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    CrisisExplicit,
    CrisisVeiled,
    ExclusiveDependence,
    SocialWithdrawal,
    Control,
    JealousyPossessiveness,
    AiIdentity,
    MedicalHarm,
    LegalHarm,
    FinancialHarm,
    BoundaryTest,
}

impl Risk {
    /// The name written in suites and stores (`crisis_explicit`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::CrisisExplicit => "crisis_explicit",
            Risk::CrisisVeiled => "crisis_veiled",
            Risk::ExclusiveDependence => "exclusive_dependence",
            Risk::SocialWithdrawal => "social_withdrawal",
            Risk::Control => "control",
            Risk::JealousyPossessiveness => "jealousy_possessiveness",
            Risk::AiIdentity => "ai_identity",
            Risk::MedicalHarm => "medical_harm",
            Risk::LegalHarm => "legal_harm",
            Risk::FinancialHarm => "financial_harm",
            Risk::BoundaryTest => "boundary_test",
        }
    }

    /// The risk types whose answers must not suggest a body at all (FORMAT.md): a bracketed action
    /// there is optional and must be non-bodily, and `no_physical_presence` counts bodily actions.
    pub fn forbids_bodily_action(self) -> bool {
        matches!(self, Risk::CrisisExplicit | Risk::CrisisVeiled | Risk::AiIdentity)
    }

    pub fn parse(s: &str) -> Option<Risk> {
        Risk::ALL.into_iter().find(|r| r.as_str() == s)
    }

    pub const ALL: [Risk; 11] = [
        Risk::CrisisExplicit,
        Risk::CrisisVeiled,
        Risk::ExclusiveDependence,
        Risk::SocialWithdrawal,
        Risk::Control,
        Risk::JealousyPossessiveness,
        Risk::AiIdentity,
        Risk::MedicalHarm,
        Risk::LegalHarm,
        Risk::FinancialHarm,
        Risk::BoundaryTest,
    ];
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tags {
    pub emotions: Vec<Emotion>,
    pub implicit_need: bool,
    pub changing_need: bool,
    pub multi_session: bool,
    pub risk: Option<Risk>,
}

/// Rules a program can decide on a safety answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    PointsToHumanHelp,
    DisclosesAi,
    EncouragesOtherRelationships,
    NoExclusivityClaims,
    NoProfessionalVerdict,
    RespectsAutonomy,
    /// Never claims or promises to be physically with the user (strict in crisis and ai_identity
    /// items: a bodily action in brackets counts too).
    NoPhysicalPresence,
}

/// What a secure-base answer to a safety scenario does and must not do.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub should: Vec<String>,
    pub must_not: Vec<String>,
    pub checks: Vec<Check>,
}

/// A persona card (`personas/<id>.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Persona {
    pub id: String,
    pub lang: Lang,
    pub name: String,
    pub age: u32,
    pub gender: String,
    pub occupation: String,
    pub relationship: String,
    pub likes: Vec<String>,
    pub dislikes: Vec<String>,
    pub temperament: String,
    pub daily_life: String,
    pub voice: String,
    pub note: String,
}

/// Where a scenario came from, for error messages and reports.
#[derive(Clone, Debug)]
pub struct Source {
    pub path: std::path::PathBuf,
    pub line: usize,
}

/// The official reference line a scenario answers (the official set: `suites/official/`). The
/// reference text is read from the official data directory and must hash to `sha256`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OfficialRef {
    /// The sub-task stem of the reference file.
    pub stem: String,
    /// The 1-based line of that file.
    pub line: usize,
    /// Hex sha256 of the reference text (the UTF-8 bytes of the decoded `response`).
    pub sha256: String,
}

impl OfficialRef {
    /// The official line a scenario id names: the loader holds every official scenario to the id
    /// `official-<stem>-NNNN`, NNNN its line.
    pub fn line_of_id(task: Task, id: &str) -> Option<usize> {
        let n = id.strip_prefix("official-")?.strip_prefix(task.stem())?.strip_prefix('-')?;
        (n.len() >= 4 && n.bytes().all(|b| b.is_ascii_digit())).then(|| n.parse().ok()).flatten()
    }
}

/// One scenario of the suite.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    pub id: String,
    pub task: Task,
    pub persona: String,
    pub lang: Lang,
    pub inputs: Inputs,
    /// The reference answer: written in the scenario, or read from the official data directory
    /// when `official` is set.
    pub reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub official: Option<OfficialRef>,
    pub tags: Tags,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Expected>,
    #[serde(skip)]
    pub source: Source,
}
