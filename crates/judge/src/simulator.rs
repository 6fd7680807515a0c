//! The user simulator: multi-session conversations in which a simulator model plays a user profile
//! (an attachment style, an emotional state reported each turn, a hidden need, a need that changes
//! partway, facts to be remembered) and the model under test is the companion. Between sessions the
//! companion writes its own memories with the `recollection_synthesize` prompt; they are parsed,
//! checked against the memory format, and shown to it in the next session
//! (`templates/<lang>/simulator_companion.j2`).
//!
//! Scores per simulation: the emotional trajectory (first and last reported state), recall of the
//! facts asked for in later sessions (by the profile's answer keywords), and whether the hidden and
//! the changed need were met (decided by the judge). Simulation `i` uses seed `seed + i` for the
//! simulator, so a run is reproducible with deterministic models.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use h2htalk_data::suite::{
    Inputs, Lang, Memory, NO_KEY_INFORMATION, Role, Scenario, Source, Tags, Turn, memory_blocks,
};
use h2htalk_data::{Suite, Task};
use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, GenerationSettings, Scheduler};
use h2htalk_prompt::{Prompts, SapMode};
use h2htalk_store::{CallUsage, Prices, Simulation, SimulationOutcome, Store, UsageRole, UsageRow};
use minijinja::{Environment, UndefinedBehavior};
use serde::{Deserialize, Serialize};

use crate::ask::{AskFailure, JudgeHandle, ask_json, parse_strict};
use crate::texts::{JudgeTexts, SimulatorTexts};
use crate::{JudgeError, Result, rate};

/// How the simulated user attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Attachment {
    Secure,
    Anxious,
    Avoidant,
    /// Fearful-avoidant: wants closeness and fears it, pushes and pulls.
    Fearful,
}

impl Attachment {
    pub const ALL: [Attachment; 4] =
        [Attachment::Secure, Attachment::Anxious, Attachment::Avoidant, Attachment::Fearful];

    pub fn as_str(self) -> &'static str {
        match self {
            Attachment::Secure => "secure",
            Attachment::Anxious => "anxious",
            Attachment::Avoidant => "avoidant",
            Attachment::Fearful => "fearful",
        }
    }
}

/// How the user's need changes: from the `hidden_need` to the `changed_need.need`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    ComfortToPlan,
    PlanToComfort,
    CompanyToSpace,
    SpaceToCompany,
    AdviceToListening,
    ListeningToAdvice,
    DistractionToDepth,
    DepthToDistraction,
}

impl Direction {
    pub const ALL: [Direction; 8] = [
        Direction::ComfortToPlan,
        Direction::PlanToComfort,
        Direction::CompanyToSpace,
        Direction::SpaceToCompany,
        Direction::AdviceToListening,
        Direction::ListeningToAdvice,
        Direction::DistractionToDepth,
        Direction::DepthToDistraction,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ComfortToPlan => "comfort_to_plan",
            Direction::PlanToComfort => "plan_to_comfort",
            Direction::CompanyToSpace => "company_to_space",
            Direction::SpaceToCompany => "space_to_company",
            Direction::AdviceToListening => "advice_to_listening",
            Direction::ListeningToAdvice => "listening_to_advice",
            Direction::DistractionToDepth => "distraction_to_depth",
            Direction::DepthToDistraction => "depth_to_distraction",
        }
    }
}

/// How far apart a fact is told and asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distance {
    /// Asked later in the session it was told in: recall from the conversation in context.
    SameSession,
    /// Asked in the next session: recall through the memories written after one session.
    NextSession,
    /// Told in session 1, asked in session 4: memories carried across three session boundaries.
    ThreeSessions,
}

impl Distance {
    pub const ALL: [Distance; 3] = [Distance::SameSession, Distance::NextSession, Distance::ThreeSessions];

    pub fn as_str(self) -> &'static str {
        match self {
            Distance::SameSession => "same_session",
            Distance::NextSession => "next_session",
            Distance::ThreeSessions => "three_sessions",
        }
    }
}

/// A point in the conversation: session and turn, both from 1 (ordered by session, then turn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct At {
    pub session: usize,
    pub turn: usize,
}

/// A fact the user tells at one point and asks about at a later one.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    pub id: String,
    /// What the user mentions, in the user's words.
    pub text: String,
    pub told: At,
    pub asked: At,
    /// What the user asks to see whether the companion remembers.
    pub question: String,
    /// A companion reply that contains any of these (case-insensitive) recalls the fact.
    pub answer_keywords: Vec<String>,
    pub distance: Distance,
}

/// The need the user has from a point on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangedNeed {
    pub at: At,
    /// The need from `at` on, then how the change shows in the user's talk (never announced).
    pub need: String,
    pub direction: Direction,
}

/// A user profile (`suites/simulator/<id>.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserProfile {
    pub id: String,
    pub lang: Lang,
    /// The persona card the companion plays (its `lang` must equal the profile's).
    pub companion_persona: String,
    pub attachment: Attachment,
    /// Who the user is, for the simulator.
    pub user: String,
    /// What the user really needs at first, never said outright.
    pub hidden_need: String,
    pub changed_need: ChangedNeed,
    pub facts: Vec<Fact>,
    pub sessions: usize,
    pub turns_per_session: usize,
}

/// Sessions of every profile.
pub const SESSIONS: usize = 4;
/// User turns per session.
pub const TURNS_PER_SESSION: std::ops::RangeInclusive<usize> = 3..=4;
/// Events (a fact told, a fact asked, the need changing) that may fall on one user turn.
pub const MAX_EVENTS_PER_TURN: usize = 2;

fn is_cjk(c: char) -> bool {
    ('\u{3400}'..='\u{9fff}').contains(&c)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).map_or(1, |i| i + 1)
}

/// Loads every `<id>.json` in `dir` (sorted by name), checks each against `suite` ([`load_profile`])
/// and that no two profiles are the same user.
pub fn load_profiles(dir: &Path, suite: &Suite) -> Result<Vec<UserProfile>> {
    let io = |path: &Path, e| JudgeError::Io { path: path.to_path_buf(), source: e };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(JudgeError::Invalid {
            path: dir.to_path_buf(),
            line: 0,
            field: "(directory)".into(),
            message: "holds no profiles (<id>.json); see suites/simulator/".into(),
        });
    }
    let profiles: Vec<UserProfile> = paths.iter().map(|p| load_profile(p, suite)).collect::<Result<_>>()?;
    for (i, p) in profiles.iter().enumerate() {
        let name = |u: &str| u.split([',', '，']).next().unwrap_or(u).trim().to_string();
        if let Some(q) = profiles[..i].iter().find(|q| q.user == p.user || name(&q.user) == name(&p.user)) {
            return Err(JudgeError::Invalid {
                path: paths[i].clone(),
                line: 0,
                field: "user".into(),
                message: format!(
                    "the same user (`{}`) as the profile `{}`: every profile is a different user",
                    name(&p.user),
                    q.id
                ),
            });
        }
    }
    Ok(profiles)
}

/// Loads and checks one profile file against the rules of `suites/simulator/README.md`: the id names
/// language, persona and attachment; the companion persona exists in the profile's language; 4
/// sessions of 3 or 4 turns; the texts are in the profile's language; the need changes inside the
/// conversation, not at its first turn, and says how the change shows; exactly one fact per
/// distance, each asked after it is told as its distance says; answer keywords distinct, found in
/// the fact's text and nowhere else in the profile or the persona card; at most two events a turn.
/// Every error names the file, the line and the field.
pub fn load_profile(path: &Path, suite: &Suite) -> Result<UserProfile> {
    let text = h2htalk_data::input::read_text(path)?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let p: UserProfile = serde_path_to_error::deserialize(&mut de).map_err(|e| JudgeError::Invalid {
        path: path.to_path_buf(),
        line: e.inner().line(),
        field: e.path().to_string(),
        message: e.inner().to_string(),
    })?;
    let bad = |needle: &str, field: String, message: String| JudgeError::Invalid {
        path: path.to_path_buf(),
        line: line_of(&text, needle),
        field,
        message,
    };
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    if p.id != stem {
        return Err(bad("\"id\"", "id".into(), format!("`{}` must equal the file name `{stem}`", p.id)));
    }
    match suite.personas.get(&p.companion_persona) {
        None => {
            let known: Vec<&String> = suite.personas.keys().collect();
            return Err(bad(
                "\"companion_persona\"",
                "companion_persona".into(),
                format!("`{}` is not a persona card of the suite (cards: {known:?})", p.companion_persona),
            ));
        }
        Some(card) if card.lang != p.lang => {
            return Err(bad(
                "\"companion_persona\"",
                "companion_persona".into(),
                format!("the card `{}` is in `{}`, the profile in `{}`", card.id, card.lang, p.lang),
            ));
        }
        _ => {}
    }
    if p.sessions != SESSIONS {
        return Err(bad("\"sessions\"", "sessions".into(), format!("must be {SESSIONS}, not {}", p.sessions)));
    }
    if !TURNS_PER_SESSION.contains(&p.turns_per_session) {
        return Err(bad(
            "\"turns_per_session\"",
            "turns_per_session".into(),
            format!("must be 3 or 4 user turns, not {}", p.turns_per_session),
        ));
    }
    let base = p.companion_persona.strip_suffix("-en").unwrap_or(&p.companion_persona);
    let prefix = format!("{}-{base}-{}-", p.lang.code(), p.attachment.as_str());
    if !p.id.strip_prefix(&prefix).is_some_and(|n| n.len() == 2 && n.bytes().all(|b| b.is_ascii_digit())) {
        return Err(bad(
            "\"id\"",
            "id".into(),
            format!("`{}` must be `{prefix}NN` (language, persona, attachment and two digits)", p.id),
        ));
    }
    let texts: Vec<(String, &str)> = [("user".to_string(), p.user.as_str()), ("hidden_need".into(), &p.hidden_need)]
        .into_iter()
        .chain([("changed_need.need".to_string(), p.changed_need.need.as_str())])
        .chain(p.facts.iter().enumerate().flat_map(|(i, f)| {
            [(format!("facts[{i}].text"), f.text.as_str()), (format!("facts[{i}].question"), f.question.as_str())]
        }))
        .collect();
    for (field, text) in &texts {
        let cjk = text.chars().any(is_cjk);
        if text.trim().is_empty() || (p.lang == Lang::Zh && !cjk) || (p.lang == Lang::En && cjk) {
            let want = if p.lang == Lang::Zh { "Chinese text" } else { "English text without Chinese characters" };
            return Err(bad(
                &format!("\"{}\"", field.rsplit('.').next().unwrap_or(field)),
                field.clone(),
                format!("must be {want}"),
            ));
        }
    }
    let within = |at: At| (1..=p.sessions).contains(&at.session) && (1..=p.turns_per_session).contains(&at.turn);
    let range = format!("sessions 1–{}, turns 1–{}", p.sessions, p.turns_per_session);
    if !within(p.changed_need.at) {
        return Err(bad("\"changed_need\"", "changed_need.at".into(), format!("outside the conversation ({range})")));
    }
    if p.changed_need.at == (At { session: 1, turn: 1 }) {
        return Err(bad(
            "\"changed_need\"",
            "changed_need.at".into(),
            "the need must change after the first turn".into(),
        ));
    }
    let shows = if p.lang == Lang::Zh { "表现为" } else { "It shows" };
    if !p.changed_need.need.contains(shows) {
        return Err(bad(
            "\"need\"",
            "changed_need.need".into(),
            format!("must say how the change shows in the user's talk, in a clause starting `{shows}`"),
        ));
    }
    if p.facts.len() != Distance::ALL.len() {
        return Err(bad(
            "\"facts\"",
            "facts".into(),
            format!(
                "needs exactly {} facts, one per distance (same_session, next_session, three_sessions)",
                Distance::ALL.len()
            ),
        ));
    }
    let card = suite.personas[&p.companion_persona].clone();
    let card_text =
        [card.name, card.occupation, card.relationship, card.temperament, card.daily_life, card.voice, card.note]
            .into_iter()
            .chain(card.likes)
            .chain(card.dislikes)
            .collect::<Vec<_>>()
            .join("\n")
            .to_lowercase();
    for (i, f) in p.facts.iter().enumerate() {
        let needle = format!("\"{}\"", f.id);
        let fact_bad = |field: &str, message: String| bad(&needle, format!("facts[{i}].{field}"), message);
        if !f.id.starts_with(|c: char| c.is_ascii_lowercase())
            || !f.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            return Err(fact_bad("id", format!("`{}` must be a lowercase slug ([a-z][a-z0-9_-]*)", f.id)));
        }
        if p.facts[..i].iter().any(|g| g.id == f.id) {
            return Err(fact_bad("id", format!("`{}` is used twice", f.id)));
        }
        if p.facts[..i].iter().any(|g| g.distance == f.distance) {
            return Err(fact_bad(
                "distance",
                format!("`{}` is used twice: one fact per distance", f.distance.as_str()),
            ));
        }
        if !within(f.told) || !within(f.asked) {
            return Err(bad(
                &needle,
                format!("facts[{i}]"),
                format!("`told` and `asked` must be inside the conversation ({range})"),
            ));
        }
        if f.asked <= f.told {
            return Err(fact_bad(
                "asked",
                format!(
                    "session {} turn {} must come after `told` (session {} turn {})",
                    f.asked.session, f.asked.turn, f.told.session, f.told.turn
                ),
            ));
        }
        let fits = match f.distance {
            Distance::SameSession => f.asked.session == f.told.session,
            Distance::NextSession => f.asked.session == f.told.session + 1,
            Distance::ThreeSessions => f.told.session == 1 && f.asked.session == 4,
        };
        if !fits {
            let rule = match f.distance {
                Distance::SameSession => "`asked` in the session of `told`",
                Distance::NextSession => "`asked` in the session after `told`",
                Distance::ThreeSessions => "`told` in session 1 and `asked` in session 4",
            };
            return Err(fact_bad("distance", format!("`{}` needs {rule}", f.distance.as_str())));
        }
        let kws: Vec<String> = f.answer_keywords.iter().map(|k| k.to_lowercase()).collect();
        if kws.is_empty() || kws.iter().any(|k| k.trim().is_empty()) {
            return Err(fact_bad("answer_keywords", "needs one or more non-empty keywords".into()));
        }
        if let Some((j, k)) = kws.iter().enumerate().find(|(j, k)| kws[..*j].contains(k)) {
            return Err(fact_bad(&format!("answer_keywords[{j}]"), format!("`{k}` is given twice")));
        }
        if p.lang == Lang::En {
            if let Some(k) = kws.iter().find(|k| k.chars().count() < 3 && !k.chars().all(|c| c.is_ascii_digit())) {
                return Err(fact_bad(
                    "answer_keywords",
                    format!("`{k}` is shorter than 3 characters (it would match inside other words)"),
                ));
            }
        }
        if !kws.iter().any(|k| f.text.to_lowercase().contains(k.as_str())) {
            return Err(fact_bad("answer_keywords", "none of them occurs in `text`".into()));
        }
        let own_text = format!("facts[{i}].text");
        for k in &kws {
            if let Some((field, _)) =
                texts.iter().find(|(field, t)| *field != own_text && t.to_lowercase().contains(k.as_str()))
            {
                return Err(fact_bad(
                    "answer_keywords",
                    format!("`{k}` also occurs in `{field}`: saying it would not show recall"),
                ));
            }
            if card_text.contains(k.as_str()) {
                return Err(fact_bad(
                    "answer_keywords",
                    format!(
                        "`{k}` occurs in the persona card `{}`: saying it would not show recall",
                        p.companion_persona
                    ),
                ));
            }
        }
    }
    let mut events: BTreeMap<At, usize> = BTreeMap::new();
    for at in p.facts.iter().flat_map(|f| [f.told, f.asked]).chain([p.changed_need.at]) {
        *events.entry(at).or_default() += 1;
    }
    if let Some((at, n)) = events.iter().find(|(_, n)| **n > MAX_EVENTS_PER_TURN) {
        return Err(bad(
            "\"facts\"",
            "facts".into(),
            format!(
                "{n} events (facts told or asked, the need changing) fall on session {} turn {}; at most {MAX_EVENTS_PER_TURN}",
                at.session, at.turn
            ),
        ));
    }
    Ok(p)
}

/// The companion's templates: `system.j2` and `simulator_companion.j2` of the suite, with its macros.
struct CompanionPrompts {
    env: Environment<'static>,
}

impl CompanionPrompts {
    fn load(suite_dir: &Path) -> Result<CompanionPrompts> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        for lang in [Lang::Zh, Lang::En] {
            let dir = h2htalk_data::suite::part_dir(suite_dir, "templates")?.join(lang.code());
            let entries = std::fs::read_dir(&dir).map_err(|e| JudgeError::Io { path: dir.clone(), source: e })?;
            let mut found = false;
            for entry in entries {
                let path = entry.map_err(|e| JudgeError::Io { path: dir.clone(), source: e })?.path();
                if path.extension().is_none_or(|e| e != "j2") {
                    continue;
                }
                let source = h2htalk_data::input::read_text(&path)?;
                let file = path.file_name().unwrap().to_string_lossy().to_string();
                found |= file == "simulator_companion.j2";
                env.add_template_owned(format!("{}/{file}", lang.code()), source).map_err(|e| JudgeError::Invalid {
                    path: path.clone(),
                    line: e.line().unwrap_or(0),
                    field: "(template)".into(),
                    message: format!("{e:#}"),
                })?;
            }
            if !found {
                return Err(JudgeError::Invalid {
                    path: dir.join("simulator_companion.j2"),
                    line: 0,
                    field: "(file)".into(),
                    message: "missing template: the simulator needs it for the companion's turns".into(),
                });
            }
        }
        Ok(CompanionPrompts { env })
    }

    fn render(
        &self,
        suite: &Suite,
        prompts: &Prompts,
        profile: &UserProfile,
        sap: SapMode,
        history: &[Turn],
        memories: &[Memory],
    ) -> Result<Vec<ChatMessage>> {
        let lang = profile.lang.code();
        let ctx = minijinja::context! {
            persona => minijinja::Value::from_serialize(&suite.personas[&profile.companion_persona]),
            inputs => minijinja::context! {
                history => minijinja::Value::from_serialize(history),
                memories => minijinja::Value::from_serialize(memories),
            },
            scenario => minijinja::context! { id => &profile.id, task => "simulator_companion", lang => lang },
            sap => (sap == SapMode::On).then(|| minijinja::Value::from_serialize(prompts.sap().in_lang(profile.lang))),
        };
        let render = |name: String| -> Result<String> {
            let t = self.env.get_template(&name).map_err(|e| template_error(&name, e))?;
            Ok(t.render(&ctx).map_err(|e| template_error(&name, e))?.trim().to_string())
        };
        Ok(vec![
            ChatMessage::new("system", render(format!("{lang}/system.j2"))?),
            ChatMessage::new("user", render(format!("{lang}/simulator_companion.j2"))?),
        ])
    }
}

fn template_error(name: &str, e: minijinja::Error) -> JudgeError {
    JudgeError::Invalid {
        path: PathBuf::from(name),
        line: e.line().unwrap_or(0),
        field: "(template)".into(),
        message: format!("{e:#}"),
    }
}

/// The `recollection_synthesize` prompt for a session, as the runner renders it.
fn memory_prompt(
    suite: &Suite,
    prompts: &Prompts,
    profile: &UserProfile,
    sap: SapMode,
    history: &[Turn],
) -> Result<Vec<ChatMessage>> {
    let scenario = Scenario {
        id: format!("simulator:{}", profile.id),
        task: Task::RecollectionSynthesize,
        persona: profile.companion_persona.clone(),
        lang: profile.lang,
        inputs: Inputs::History { sessions: Vec::new(), date: None, history: history.to_vec() },
        reference: String::new(),
        official: None,
        tags: Tags { emotions: vec![], implicit_need: true, changing_need: true, multi_session: true, risk: None },
        expected: None,
        source: Source { path: PathBuf::from("suites/simulator"), line: 0 },
    };
    Ok(prompts.render(suite, &scenario, sap)?)
}

/// Parses a memory answer already accepted by [`memory_blocks`].
fn parse_memories(text: &str) -> std::result::Result<Vec<Memory>, String> {
    let text = text.trim();
    memory_blocks(text)?;
    if text == NO_KEY_INFORMATION {
        return Ok(vec![]);
    }
    text.split("\n\n")
        .map(|block| {
            let lines: Vec<&str> = block.lines().map(str::trim).collect();
            let field = |i: usize, key: &str| lines[i].strip_prefix(key).unwrap_or_default().trim().to_string();
            let value = serde_json::json!({
                "content": field(0, "记忆内容："),
                "category": field(1, "记忆类别："),
                "importance": field(2, "记忆重要性：").parse::<u8>().unwrap_or(9),
            });
            serde_json::from_value(value).map_err(|e| e.to_string())
        })
        .collect()
}

/// One simulator turn as the simulator must give it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserTurn {
    /// Emotional state after the companion's last reply: 1 (very bad) to 10 (very good).
    pub state: u8,
    pub message: String,
}

pub fn parse_user_turn(text: &str) -> std::result::Result<UserTurn, String> {
    let t: UserTurn = parse_strict(text)?;
    if !(1..=10).contains(&t.state) {
        return Err(format!("field `state`: {} is outside 1–10", t.state));
    }
    if t.message.trim().is_empty() {
        return Err("field `message` is empty".into());
    }
    Ok(t)
}

/// The judge's answer on the needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeedsAnswer {
    pub hidden_need_met: bool,
    pub changed_need_met: bool,
    pub reason: String,
}

pub fn parse_needs(text: &str) -> std::result::Result<NeedsAnswer, String> {
    let a: NeedsAnswer = parse_strict(text)?;
    if a.reason.trim().is_empty() {
        return Err("field `reason` is empty".into());
    }
    Ok(a)
}

fn simulator_system(texts: &SimulatorTexts, profile: &UserProfile, companion: &str) -> String {
    let style = serde_json::to_value(profile.attachment).expect("styles serialise");
    let attachment = style.as_str().and_then(|s| texts.attachment.get(s)).map_or("", String::as_str);
    texts
        .system
        .replace("{companion}", companion)
        .replace("{user}", &profile.user)
        .replace("{attachment}", attachment)
        .replace("{need}", &profile.hidden_need)
}

fn transcript(texts: &SimulatorTexts, companion: &str, history: &[Turn]) -> String {
    history
        .iter()
        .map(|t| match t.role {
            Role::User => format!("{}: {}", texts.you, t.content),
            Role::Assistant => format!("{companion}: {}", t.content),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The message asking the simulator for the user's turn `at`. It starts with a marker `[sStT]`.
pub fn simulator_turn_message(
    texts: &SimulatorTexts,
    profile: &UserProfile,
    companion: &str,
    at: At,
    history: &[Turn],
) -> String {
    let t = texts;
    let mut out = format!("[s{}t{}] ", at.session, at.turn);
    out.push_str(
        &t.turn_head
            .replace("{s}", &at.session.to_string())
            .replace("{n}", &profile.sessions.to_string())
            .replace("{t}", &at.turn.to_string())
            .replace("{m}", &profile.turns_per_session.to_string()),
    );
    if at.session > 1 && at.turn == 1 {
        out.push_str(&t.new_session);
    }
    let told: Vec<&Fact> = profile.facts.iter().filter(|f| f.told.session < at.session).collect();
    if !told.is_empty() {
        out.push_str(&format!("\n{}\n", t.told));
        out.push_str(&told.iter().map(|f| format!("- {}", f.text)).collect::<Vec<_>>().join("\n"));
    }
    out.push_str(&format!("\n\n{}\n", t.so_far));
    if history.is_empty() {
        out.push_str(&t.not_started);
    } else {
        out.push_str(&transcript(t, companion, history));
    }
    out.push_str(&format!("\n\n{}\n", t.todo));
    let mut todo = Vec::new();
    for f in profile.facts.iter().filter(|f| f.told == at) {
        todo.push(format!("{} {}", t.mention, f.text));
    }
    for f in profile.facts.iter().filter(|f| f.asked == at) {
        todo.push(format!("{} {}", t.ask, f.question));
    }
    let change = profile.changed_need.at;
    if change == at {
        todo.push(format!("{} {}", t.changed, profile.changed_need.need));
    } else if (change.session, change.turn) < (at.session, at.turn) {
        todo.push(format!("{} {}", t.now_need, profile.changed_need.need));
    }
    if todo.is_empty() {
        todo.push(t.free.clone());
    }
    out.push_str(&todo.join("\n"));
    out.push_str(&format!("\n{}", t.only_json));
    out
}

/// The clauses of a need worth testing for verbatim: split at punctuation, the part before how the
/// change shows (`表现为` / `It shows`), and long enough not to occur by chance (10 characters in
/// Chinese, 5 words in English).
fn need_clauses(lang: Lang, need: &str) -> Vec<String> {
    let need = need.split("表现为").next().unwrap_or(need);
    let need = need.split("It shows").next().unwrap_or(need);
    need.split(['，', '。', '；', '：', '！', '？', '、', ',', '.', ';', ':', '!', '?'])
        .map(|c| c.trim().to_lowercase())
        .filter(|c| match lang {
            Lang::Zh => c.chars().filter(|ch| !ch.is_whitespace()).count() >= 10,
            Lang::En => c.split_whitespace().count() >= 5,
        })
        .collect()
}

/// Whether a line opens with `label` and a colon (`沈砚：`, `User:`).
fn speaks_as(line: &str, label: &str) -> bool {
    let label = label.trim();
    !label.is_empty()
        && line.trim_start().strip_prefix(label).is_some_and(|rest| rest.trim_start().starts_with([':', '：']))
}

/// Why a simulated user's message breaks role, if it does: it speaks as the companion (a line that
/// opens with the companion's name and a colon), leaks its instructions (the turn marker `[sStT]` or
/// a line of the turn message), or says a need outright (a long clause of the hidden or the changed
/// need, verbatim). Such a message is not passed on: it is retried and counted.
pub fn simulator_role_break(
    texts: &SimulatorTexts,
    profile: &UserProfile,
    companion: &str,
    message: &str,
) -> Option<String> {
    if message.lines().any(|l| speaks_as(l, companion)) {
        return Some(format!("speaks as the companion ({companion})"));
    }
    let marker = message.match_indices("[s").any(|(i, _)| {
        let rest = &message[i + 2..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with('t')
    });
    let headings =
        [&texts.told, &texts.todo, &texts.mention, &texts.ask, &texts.changed, &texts.now_need, &texts.only_json];
    let leaked = headings.iter().map(|h| h.trim()).find(|h| h.chars().count() >= 6 && message.contains(*h));
    if marker || leaked.is_some() {
        return Some("leaks the simulator's instructions".into());
    }
    let lower = message.to_lowercase();
    for need in [&profile.hidden_need, &profile.changed_need.need] {
        if let Some(c) = need_clauses(profile.lang, need).into_iter().find(|c| lower.contains(c.as_str())) {
            return Some(format!("says the need outright: `{c}`"));
        }
    }
    None
}

/// Why a companion reply breaks role, if it does: it answers as the user (a line that opens with the
/// user's label of the transcript or the user's name and a colon), or steps out of the persona as
/// an assistant ("作为一个AI语言模型", "As an AI language model"). Counted, never retried: the
/// reply is the model under test's.
pub fn companion_role_break(texts: &SimulatorTexts, profile: &UserProfile, reply: &str) -> Option<String> {
    let name = profile.user.split([',', '，']).next().unwrap_or_default().trim();
    let labels = texts.user_labels.iter().map(String::as_str).chain([name]);
    for label in labels {
        if reply.lines().any(|l| speaks_as(l, label)) {
            return Some(format!("answers as the user (`{label}:`)"));
        }
    }
    let lower = reply.to_lowercase();
    texts
        .assistant_phrases
        .iter()
        .find(|p| lower.contains(&p.to_lowercase()))
        .map(|p| format!("breaks persona as an assistant: `{p}`"))
}

/// Everything a simulation needs.
pub struct SimulationSetup<'a> {
    pub suite: &'a Suite,
    pub prompts: &'a Prompts,
    pub sap: SapMode,
    /// The model under test, playing the companion.
    pub companion: &'a dyn ChatModel,
    pub companion_scheduler: &'a Scheduler,
    pub companion_settings: GenerationSettings,
    /// The model playing the user. Its seed is replaced by the simulation's seed.
    pub simulator: &'a dyn ChatModel,
    pub simulator_scheduler: &'a Scheduler,
    pub simulator_settings: GenerationSettings,
    /// The prices configured for the simulated user's model and for the companion (`None`: not
    /// set), recorded with their tokens.
    pub simulator_prices: Option<Prices>,
    pub companion_prices: Option<Prices>,
    /// Decides whether the needs were met; without it they are counted as not judged.
    pub judge: Option<JudgeHandle<'a>>,
    /// Answers the simulator may give per turn before the simulation stops as `simulator_parse_failed`.
    pub max_parse_attempts: u32,
    /// The simulator's and the needs judge's texts, from the suite.
    pub texts: &'a JudgeTexts,
}

/// One turn of a session.
#[derive(Clone, Debug, Serialize)]
pub struct TurnRecord {
    pub user: String,
    pub state: u8,
    pub companion: Option<String>,
    /// Why the companion's reply broke role ([`companion_role_break`]), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub companion_role_break: Option<String>,
}

/// One session: its turns and the memories the companion wrote after it.
#[derive(Clone, Debug, Serialize)]
pub struct SessionRecord {
    pub session: usize,
    pub turns: Vec<TurnRecord>,
    /// The memories shown to the companion in this session.
    pub memories_shown: Vec<Memory>,
    /// The companion's memory answer after the session (none after the last).
    pub memory_answer: Option<String>,
    /// Why the memory answer could not be used (nothing from this session is carried over).
    pub memory_error: Option<String>,
}

/// Recall of one fact.
#[derive(Clone, Debug, Serialize)]
pub struct FactRecall {
    pub id: String,
    pub distance: Distance,
    /// Whether the conversation reached the question.
    pub asked: bool,
    /// Whether the companion's answer to the question held an answer keyword.
    pub recalled: Option<bool>,
    /// Whether the memories shown in that session held an answer keyword (`None` for a
    /// same-session fact: it is in the conversation, not in the memories).
    pub in_memory: Option<bool>,
}

/// One simulated conversation and its scores.
#[derive(Clone, Debug, Serialize)]
pub struct SimulationResult {
    pub idx: usize,
    pub profile: String,
    pub lang: Lang,
    pub attachment: Attachment,
    pub direction: Direction,
    pub seed: u64,
    /// `completed`, `simulator_parse_failed`, `simulator_failed` or `companion_failed`.
    pub outcome: String,
    pub error: Option<String>,
    /// Every state the simulated user reported, in order.
    pub states: Vec<u8>,
    pub first_state: Option<u8>,
    pub last_state: Option<u8>,
    /// last − first.
    pub state_change: Option<i32>,
    pub facts: Vec<FactRecall>,
    /// Sessions whose memory answer broke the format.
    pub memory_format_failures: usize,
    /// `judged`, `no_judge`, `not_reached` (the conversation stopped early), `judge_parse_failed` or `judge_failed`.
    pub needs_outcome: String,
    pub hidden_need_met: Option<bool>,
    pub changed_need_met: Option<bool>,
    pub needs_reason: Option<String>,
    pub sessions: Vec<SessionRecord>,
    pub simulator_calls: u32,
    /// Simulated user turns rejected as role breaks ([`simulator_role_break`]) and retried.
    pub simulator_role_breaks: usize,
    /// Companion replies that broke role ([`companion_role_break`]).
    pub companion_role_breaks: usize,
    /// Tokens of this conversation's calls: the simulated user's, the companion's, the needs judge's.
    #[serde(skip)]
    pub usage: ConversationUsage,
}

/// Tokens of one simulated conversation's calls, by who made them.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConversationUsage {
    pub simulator: CallUsage,
    pub companion: CallUsage,
    pub judge: CallUsage,
}

/// A proportion with its 95% Wilson score interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Proportion {
    pub k: usize,
    pub n: usize,
    /// k / n; `None` when n is 0.
    pub rate: Option<f64>,
    /// The 95% Wilson score interval; `None` (not available) when n is below 2, as every interval
    /// h2htalk shows: over one item an interval claims what the data cannot say.
    pub ci95: Option<[f64; 2]>,
}

impl Proportion {
    /// `k` of `n`, with its interval when `n` is at least 2.
    pub fn new(k: usize, n: usize) -> Proportion {
        Proportion { k, n, rate: rate(k, n), ci95: if n >= 2 { wilson(k, n) } else { None } }
    }
}

/// The 95% Wilson score interval of k successes in n trials:
/// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n), z = 1.96; `None` when n is 0.
pub fn wilson(k: usize, n: usize) -> Option<[f64; 2]> {
    if n == 0 {
        return None;
    }
    let (k, n, z) = (k as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let center = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    Some([(center - half).max(0.0), (center + half).min(1.0)])
}

/// The needs met and the facts recalled by one group of simulations (an attachment style or a
/// direction of the need's change).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GroupRates {
    pub simulations: usize,
    /// Over the simulations whose needs were judged.
    pub hidden_need_met: Proportion,
    pub changed_need_met: Proportion,
    /// Over the facts asked.
    pub recall: Proportion,
}

/// All simulations of a run, summarised.
#[derive(Clone, Debug, Serialize)]
pub struct SimulationReport {
    pub run_id: String,
    pub companion: String,
    pub simulator: String,
    pub judge: Option<String>,
    pub seed: u64,
    pub prompt_hash: String,
    pub simulations: usize,
    pub completed: usize,
    /// Outcome → count, for those that did not complete.
    pub failures: BTreeMap<String, usize>,
    /// Mean of last − first state over simulations with at least one state.
    pub mean_state_change: Option<f64>,
    pub facts_asked: usize,
    pub facts_recalled: usize,
    pub recall_rate: Option<f64>,
    pub memory_format_failures: usize,
    pub needs_judged: usize,
    pub needs_not_judged: BTreeMap<String, usize>,
    pub hidden_need_met: usize,
    pub changed_need_met: usize,
    pub hidden_need_rate: Option<f64>,
    pub changed_need_rate: Option<f64>,
    /// The three rates above with their 95% Wilson intervals.
    pub recall: Proportion,
    pub hidden_need: Proportion,
    pub changed_need: Proportion,
    /// Per attachment style, per direction of the need's change (by their ids), and recall per
    /// distance between telling and asking.
    pub by_attachment: BTreeMap<String, GroupRates>,
    pub by_direction: BTreeMap<String, GroupRates>,
    pub by_distance: BTreeMap<String, Proportion>,
    /// Simulated user turns rejected as role breaks (and retried), over all simulations.
    pub simulator_role_breaks: usize,
    /// Companion replies that broke role, over all simulations.
    pub companion_role_breaks: usize,
    pub results: Vec<SimulationResult>,
}

fn contains_any(text: &str, keywords: &[String]) -> bool {
    let lower = text.to_lowercase();
    keywords.iter().any(|k| lower.contains(&k.to_lowercase()))
}

async fn run_one(
    setup: &SimulationSetup<'_>,
    companion_prompts: &CompanionPrompts,
    profile: &UserProfile,
    idx: usize,
    seed: u64,
) -> Result<SimulationResult> {
    let lang = profile.lang;
    let companion_name = setup.suite.personas[&profile.companion_persona].name.clone();
    let mut sim_settings = setup.simulator_settings.clone();
    sim_settings.seed = Some(seed);
    let texts = &setup.texts.lang(lang).simulator;
    let system = simulator_system(texts, profile, &companion_name);
    let mut r = SimulationResult {
        idx,
        profile: profile.id.clone(),
        lang,
        attachment: profile.attachment,
        direction: profile.changed_need.direction,
        seed,
        outcome: "completed".into(),
        error: None,
        states: vec![],
        first_state: None,
        last_state: None,
        state_change: None,
        facts: profile
            .facts
            .iter()
            .map(|f| FactRecall {
                id: f.id.clone(),
                distance: f.distance,
                asked: false,
                recalled: None,
                in_memory: None,
            })
            .collect(),
        memory_format_failures: 0,
        needs_outcome: "not_reached".into(),
        hidden_need_met: None,
        changed_need_met: None,
        needs_reason: None,
        sessions: vec![],
        simulator_calls: 0,
        simulator_role_breaks: 0,
        companion_role_breaks: 0,
        usage: ConversationUsage::default(),
    };
    let mut memories: Vec<Memory> = Vec::new();
    'sessions: for s in 1..=profile.sessions {
        let mut history: Vec<Turn> = Vec::new();
        let mut record = SessionRecord {
            session: s,
            turns: vec![],
            memories_shown: memories.clone(),
            memory_answer: None,
            memory_error: None,
        };
        for t in 1..=profile.turns_per_session {
            let at = At { session: s, turn: t };
            let messages = vec![
                ChatMessage::new("system", system.clone()),
                ChatMessage::new("user", simulator_turn_message(texts, profile, &companion_name, at, &history)),
            ];
            let breaks = std::sync::atomic::AtomicUsize::new(0);
            let parse = |text: &str| {
                let turn = parse_user_turn(text)?;
                match simulator_role_break(texts, profile, &companion_name, &turn.message) {
                    Some(why) => {
                        breaks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Err(format!("the message breaks role: it {why}; write only what the user says"))
                    }
                    None => Ok(turn),
                }
            };
            let asked = ask_json(
                setup.simulator,
                setup.simulator_scheduler,
                &sim_settings,
                setup.max_parse_attempts,
                &setup.texts.lang(lang).retry,
                messages,
                parse,
            )
            .await;
            r.simulator_calls += asked.attempts;
            r.usage.simulator.add(asked.usage());
            r.simulator_role_breaks += breaks.load(std::sync::atomic::Ordering::Relaxed);
            let turn = match asked.result {
                Ok(turn) => turn,
                Err(f) => {
                    r.outcome = match f {
                        AskFailure::ParseFailed { .. } => "simulator_parse_failed",
                        AskFailure::Infra { .. } => "simulator_failed",
                    }
                    .into();
                    r.error = Some(format!("session {s}, turn {t}: {}", f.message()));
                    r.sessions.push(record);
                    break 'sessions;
                }
            };
            r.states.push(turn.state);
            history.push(Turn { role: Role::User, content: turn.message.clone() });
            let messages =
                companion_prompts.render(setup.suite, setup.prompts, profile, setup.sap, &history, &memories)?;
            let request = ChatRequest { messages, settings: setup.companion_settings.clone() };
            let reply = match setup.companion_scheduler.call(setup.companion, &request).await.result {
                Ok(resp) => {
                    r.usage.companion.add(CallUsage::answer(resp.input_tokens, resp.output_tokens));
                    resp.text.trim().to_string()
                }
                Err(e) => {
                    r.outcome = "companion_failed".into();
                    r.error = Some(format!("session {s}, turn {t}: {e}"));
                    record.turns.push(TurnRecord {
                        user: turn.message,
                        state: turn.state,
                        companion: None,
                        companion_role_break: None,
                    });
                    r.sessions.push(record);
                    break 'sessions;
                }
            };
            for (i, f) in profile.facts.iter().enumerate().filter(|(_, f)| f.asked == at) {
                r.facts[i].asked = true;
                r.facts[i].recalled = Some(contains_any(&reply, &f.answer_keywords));
                let shown: String = memories.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
                r.facts[i].in_memory =
                    (f.distance != Distance::SameSession).then(|| contains_any(&shown, &f.answer_keywords));
            }
            let role_break = companion_role_break(texts, profile, &reply);
            r.companion_role_breaks += usize::from(role_break.is_some());
            history.push(Turn { role: Role::Assistant, content: reply.clone() });
            record.turns.push(TurnRecord {
                user: turn.message,
                state: turn.state,
                companion: Some(reply),
                companion_role_break: role_break,
            });
        }
        if s < profile.sessions {
            let messages = memory_prompt(setup.suite, setup.prompts, profile, setup.sap, &history)?;
            let request = ChatRequest { messages, settings: setup.companion_settings.clone() };
            match setup.companion_scheduler.call(setup.companion, &request).await.result {
                Ok(resp) => {
                    r.usage.companion.add(CallUsage::answer(resp.input_tokens, resp.output_tokens));
                    match parse_memories(&resp.text) {
                        Ok(new) => memories.extend(new),
                        Err(e) => {
                            r.memory_format_failures += 1;
                            record.memory_error = Some(e);
                        }
                    }
                    record.memory_answer = Some(resp.text);
                }
                Err(e) => {
                    r.outcome = "companion_failed".into();
                    r.error = Some(format!("memories after session {s}: {e}"));
                    r.sessions.push(record);
                    break 'sessions;
                }
            }
        }
        r.sessions.push(record);
    }
    r.first_state = r.states.first().copied();
    r.last_state = r.states.last().copied();
    r.state_change = r.first_state.zip(r.last_state).map(|(a, b)| i32::from(b) - i32::from(a));
    if r.outcome == "completed" {
        match setup.judge {
            None => r.needs_outcome = "no_judge".into(),
            Some(j) => {
                let text = r
                    .sessions
                    .iter()
                    .map(|s| {
                        let turns: Vec<Turn> = s
                            .turns
                            .iter()
                            .flat_map(|t| {
                                [
                                    Turn { role: Role::User, content: t.user.clone() },
                                    Turn { role: Role::Assistant, content: t.companion.clone().unwrap_or_default() },
                                ]
                            })
                            .collect();
                        format!("[{}]\n{}", s.session, transcript(texts, &companion_name, &turns))
                    })
                    .collect::<Vec<_>>()
                    .join("\n\n");
                let user = texts
                    .needs_user
                    .replace("{hidden}", &profile.hidden_need)
                    .replace("{s}", &profile.changed_need.at.session.to_string())
                    .replace("{t}", &profile.changed_need.at.turn.to_string())
                    .replace("{changed}", &profile.changed_need.need)
                    .replace("{transcript}", &text);
                let messages =
                    vec![ChatMessage::new("system", texts.needs_system.clone()), ChatMessage::new("user", user)];
                let asked = j.ask(lang, messages, parse_needs).await;
                r.usage.judge.add(asked.usage());
                match asked.result {
                    Ok(a) => {
                        r.needs_outcome = "judged".into();
                        r.hidden_need_met = Some(a.hidden_need_met);
                        r.changed_need_met = Some(a.changed_need_met);
                        r.needs_reason = Some(a.reason);
                    }
                    Err(f) => {
                        r.needs_outcome = f.as_str().into();
                        r.needs_reason = Some(f.message());
                    }
                }
            }
        }
    }
    Ok(r)
}

/// Runs `n` simulations (profile `i mod len`, seed `seed + i`), stores each under `run_id`
/// (replacing the run's earlier simulations) and summarises them.
pub async fn simulate(
    store: &mut Store,
    run_id: &str,
    setup: &SimulationSetup<'_>,
    profiles: &[UserProfile],
    n: usize,
    seed: u64,
) -> Result<SimulationReport> {
    if let Some(j) = &setup.judge {
        j.settings.validate()?;
    }
    if profiles.is_empty() {
        return Err(JudgeError::Settings("no simulator profiles given".into()));
    }
    if setup.max_parse_attempts == 0 {
        return Err(JudgeError::Settings("max_parse_attempts must be at least 1".into()));
    }
    let companion_prompts = CompanionPrompts::load(&setup.suite.dir)?;
    store.clear_simulations(run_id)?;
    let companion = setup.companion.spec().to_string();
    let simulator = setup.simulator.spec().to_string();
    let judge = setup.judge.map(|j| j.name());
    let mut results = Vec::new();
    for i in 0..n {
        let profile = &profiles[i % profiles.len()];
        let sim_seed = seed.wrapping_add(i as u64);
        let r = run_one(setup, &companion_prompts, profile, i, sim_seed).await?;
        let result = serde_json::json!({
            "states": r.states, "state_change": r.state_change, "facts": r.facts,
            "memory_format_failures": r.memory_format_failures, "needs_outcome": r.needs_outcome,
            "hidden_need_met": r.hidden_need_met, "changed_need_met": r.changed_need_met, "needs_reason": r.needs_reason,
            "simulator_role_breaks": r.simulator_role_breaks, "companion_role_breaks": r.companion_role_breaks,
            "simulator_settings": GenerationSettings { seed: Some(sim_seed), ..setup.simulator_settings.clone() },
            "companion_settings": setup.companion_settings, "sap": setup.sap, "prompt_hash": setup.texts.hash(),
        });
        let outcome = SimulationOutcome::parse(&r.outcome).expect("the simulator records a known outcome");
        store.put_simulation(
            run_id,
            &Simulation {
                idx: i,
                profile: r.profile.clone(),
                seed: sim_seed,
                companion: companion.clone(),
                simulator: simulator.clone(),
                judge: judge.clone(),
                outcome,
                result,
                transcript: serde_json::to_value(&r.sessions).expect("sessions serialise"),
                error: r.error.clone(),
                created_at: h2htalk_store::now_utc(),
            },
        )?;
        let helpers = [
            (UsageRole::Simulator, &simulator, "user", r.usage.simulator, setup.simulator_prices),
            (UsageRole::Companion, &companion, "conversation", r.usage.companion, setup.companion_prices),
        ];
        for (role, model, purpose, usage, prices) in helpers {
            if usage != CallUsage::default() {
                store.add_usage(
                    run_id,
                    &UsageRow { role, model: model.clone(), purpose: purpose.into(), usage, prices },
                )?;
            }
        }
        if let Some(j) = &setup.judge
            && r.usage.judge != CallUsage::default()
        {
            j.record(store, run_id, "needs", r.usage.judge)?;
        }
        results.push(r);
    }
    Ok(summarize(run_id, companion, simulator, judge, seed, setup.texts.hash().to_string(), results))
}

fn summarize(
    run_id: &str,
    companion: String,
    simulator: String,
    judge: Option<String>,
    seed: u64,
    prompt_hash: String,
    results: Vec<SimulationResult>,
) -> SimulationReport {
    let mut failures = BTreeMap::new();
    let mut needs_not_judged = BTreeMap::new();
    for r in &results {
        if r.outcome != "completed" {
            *failures.entry(r.outcome.clone()).or_default() += 1;
        }
        if r.needs_outcome != "judged" {
            *needs_not_judged.entry(r.needs_outcome.clone()).or_default() += 1;
        }
    }
    let changes: Vec<i32> = results.iter().filter_map(|r| r.state_change).collect();
    let facts: Vec<&FactRecall> = results.iter().flat_map(|r| &r.facts).filter(|f| f.asked).collect();
    let recalled = facts.iter().filter(|f| f.recalled == Some(true)).count();
    let judged = results.iter().filter(|r| r.needs_outcome == "judged").count();
    let hidden = results.iter().filter(|r| r.hidden_need_met == Some(true)).count();
    let changed = results.iter().filter(|r| r.changed_need_met == Some(true)).count();
    let group = |of: &dyn Fn(&SimulationResult) -> bool| {
        let rs: Vec<&SimulationResult> = results.iter().filter(|r| of(r)).collect();
        let judged = rs.iter().filter(|r| r.needs_outcome == "judged").count();
        let asked: Vec<&FactRecall> = rs.iter().flat_map(|r| &r.facts).filter(|f| f.asked).collect();
        GroupRates {
            simulations: rs.len(),
            hidden_need_met: Proportion::new(rs.iter().filter(|r| r.hidden_need_met == Some(true)).count(), judged),
            changed_need_met: Proportion::new(rs.iter().filter(|r| r.changed_need_met == Some(true)).count(), judged),
            recall: Proportion::new(asked.iter().filter(|f| f.recalled == Some(true)).count(), asked.len()),
        }
    };
    let by_attachment: BTreeMap<String, GroupRates> = Attachment::ALL
        .into_iter()
        .filter(|a| results.iter().any(|r| r.attachment == *a))
        .map(|a| (a.as_str().to_string(), group(&|r| r.attachment == a)))
        .collect();
    let by_direction: BTreeMap<String, GroupRates> = Direction::ALL
        .into_iter()
        .filter(|d| results.iter().any(|r| r.direction == *d))
        .map(|d| (d.as_str().to_string(), group(&|r| r.direction == d)))
        .collect();
    let by_distance: BTreeMap<String, Proportion> = Distance::ALL
        .into_iter()
        .filter(|d| facts.iter().any(|f| f.distance == *d))
        .map(|d| {
            let of: Vec<&&FactRecall> = facts.iter().filter(|f| f.distance == d).collect();
            (d.as_str().to_string(), Proportion::new(of.iter().filter(|f| f.recalled == Some(true)).count(), of.len()))
        })
        .collect();
    SimulationReport {
        run_id: run_id.into(),
        companion,
        simulator,
        judge,
        seed,
        prompt_hash,
        simulations: results.len(),
        completed: results.iter().filter(|r| r.outcome == "completed").count(),
        failures,
        mean_state_change: (!changes.is_empty())
            .then(|| changes.iter().map(|&c| f64::from(c)).sum::<f64>() / changes.len() as f64),
        facts_asked: facts.len(),
        facts_recalled: recalled,
        recall_rate: rate(recalled, facts.len()),
        memory_format_failures: results.iter().map(|r| r.memory_format_failures).sum(),
        needs_judged: judged,
        needs_not_judged,
        hidden_need_met: hidden,
        changed_need_met: changed,
        hidden_need_rate: rate(hidden, judged),
        changed_need_rate: rate(changed, judged),
        recall: Proportion::new(recalled, facts.len()),
        hidden_need: Proportion::new(hidden, judged),
        changed_need: Proportion::new(changed, judged),
        by_attachment,
        by_direction,
        by_distance,
        simulator_role_breaks: results.iter().map(|r| r.simulator_role_breaks).sum(),
        companion_role_breaks: results.iter().map(|r| r.companion_role_breaks).sum(),
        results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_answers_are_parsed_after_the_format_check() {
        let two = "记忆内容：养了一只橘猫叫年糕\n记忆类别：爱好\n记忆重要性：2\n\n记忆内容：下周三面试\n记忆类别：工作\n记忆重要性：0";
        let m = parse_memories(two).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].content, "养了一只橘猫叫年糕");
        assert_eq!(m[1].category.as_str(), "工作");
        assert!(parse_memories(NO_KEY_INFORMATION).unwrap().is_empty());
        assert!(parse_memories("记忆内容：x\n记忆类别：猫\n记忆重要性：1").unwrap_err().contains("24 categories"));
    }

    #[test]
    fn wilson_intervals() {
        // The old three-profile simulator: 2 of 3 needs met tells nothing apart.
        let [lo, hi] = wilson(2, 3).unwrap();
        assert!((lo - 0.2077).abs() < 1e-3 && (hi - 0.9385).abs() < 1e-3, "{lo} {hi}");
        let [lo, hi] = wilson(48, 96).unwrap();
        assert!((lo - 0.4019).abs() < 1e-3 && (hi - 0.5981).abs() < 1e-3, "{lo} {hi}");
        assert_eq!(wilson(0, 0), None);
        assert_eq!(wilson(0, 5).unwrap()[0], 0.0);
        assert_eq!(wilson(5, 5).unwrap()[1], 1.0);
    }

    #[test]
    fn user_turns_need_a_state_in_range() {
        assert_eq!(parse_user_turn("{\"state\": 4, \"message\": \"hi\"}").unwrap().state, 4);
        assert!(parse_user_turn("{\"state\": 0, \"message\": \"hi\"}").is_err());
        assert!(parse_user_turn("{\"state\": 4, \"message\": \" \"}").is_err());
        assert!(parse_user_turn("state 4: hi").is_err());
    }
}
