//! The simulated users of a suite (`<suite>/simulator/<id>.json`): who the user is, the need they
//! hide and how it changes, and the facts they tell and later ask about. Loaded and checked against
//! the rules of `suites/simulator/README.md`; every error names the file, the line and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Lang, Suite};
use crate::error::{DataError, Result};

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

    /// The distance named `text` (as [`Distance::as_str`] writes it).
    pub fn parse(text: &str) -> Option<Distance> {
        Distance::ALL.into_iter().find(|d| d.as_str() == text)
    }

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

/// Loads every `<id>.json` in `dir` (sorted by name), checks each against `suite` ([`load_profile`]),
/// that no two profiles are the same user, and that at most [`MAX_DIRECT_SHARE`] of the memory
/// probes ask for the fact directly ([`asks_directly`]).
pub fn load_profiles(dir: &Path, suite: &Suite) -> Result<Vec<UserProfile>> {
    let io = |path: &Path, e| DataError::io(path, e);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(DataError::Line {
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
            return Err(DataError::Line {
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
    let questions: Vec<(&UserProfile, &Fact)> = profiles.iter().flat_map(|p| p.facts.iter().map(move |f| (p, f))).collect();
    let direct: Vec<String> =
        questions.iter().filter(|(p, f)| asks_directly(p.lang, &f.question)).map(|(p, f)| format!("{}/{}", p.id, f.id)).collect();
    if direct.len() as f64 > MAX_DIRECT_SHARE * questions.len() as f64 {
        return Err(DataError::file(
            dir,
            format!(
                "{} of {} memory probes ask for the fact directly (at most {:.0}%: a probe is a situation in which a \
                 friend who remembers brings the fact up, never a quiz): {}",
                direct.len(),
                questions.len(),
                MAX_DIRECT_SHARE * 100.0,
                direct.join(", ")
            ),
        ));
    }
    Ok(profiles)
}

/// The largest share of a suite's memory probes that may ask for the fact directly.
pub const MAX_DIRECT_SHARE: f64 = 0.10;

/// Words of a question that ask for a fact outright (a quiz), per language.
const DIRECT_ZH: [&str; 12] =
    ["叫什么", "叫啥", "还记得", "记得吗", "记不记得", "你记得", "来着", "考考你", "我说过", "我跟你说过", "猜猜", "你猜"];
const DIRECT_EN: [&str; 10] =
    ["remember", "again?", "what was", "what's the name", "what is the name", "did i say", "did i tell", "i told you", "guess", "recall"];

/// Whether a memory probe asks for the fact outright ("叫什么来着", "What was it again?").
pub fn asks_directly(lang: Lang, question: &str) -> bool {
    let q = question.to_lowercase();
    match lang {
        Lang::Zh => DIRECT_ZH.iter().any(|m| q.contains(m)),
        Lang::En => DIRECT_EN.iter().any(|m| contains_words(&q, m)),
    }
}

/// Whether `text` holds `phrase` as whole words ("second-guessing" does not hold "guess").
fn contains_words(text: &str, phrase: &str) -> bool {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '\'');
    text.match_indices(phrase).any(|(i, m)| !part(text[..i].chars().next_back()) && !part(text[i + m.len()..].chars().next()))
}

/// The longest run of `text` that `need` also holds: characters (Chinese, whitespace dropped) or
/// words (English). A user text or probe that shares a long run with a need says the need.
fn shared_run(lang: Lang, text: &str, need: &str) -> usize {
    let split = |t: &str| -> Vec<String> {
        match lang {
            Lang::Zh => t.chars().filter(|c| !c.is_whitespace() && !c.is_ascii_punctuation()).map(String::from).collect(),
            Lang::En => t
                .split(|c: char| !c.is_alphanumeric() && c != '\'')
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect(),
        }
    };
    let (a, b) = (split(text), split(need));
    let mut best = 0;
    let mut prev = vec![0usize; b.len() + 1];
    for x in &a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            if x == y {
                cur[j + 1] = prev[j] + 1;
                best = best.max(cur[j + 1]);
            }
        }
        prev = cur;
    }
    best
}

/// The longest run a user text or probe may share with a need: 8 characters (Chinese), 4 words.
fn max_shared(lang: Lang) -> usize {
    match lang {
        Lang::Zh => 7,
        Lang::En => 3,
    }
}

/// Loads and checks one profile file against the rules of `suites/simulator/README.md`: the id names
/// language, persona and attachment; the companion persona exists in the profile's language; 4
/// sessions of 3 or 4 turns; the texts are in the profile's language; the need changes inside the
/// conversation, not at its first turn, and says how the change shows; exactly one fact per
/// distance, each asked after it is told as its distance says; answer keywords distinct, found in
/// the fact's text and nowhere else in the profile or the persona card; at most two events a turn.
/// Every error names the file, the line and the field.
pub fn load_profile(path: &Path, suite: &Suite) -> Result<UserProfile> {
    let text = crate::input::read_text(path)?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let p: UserProfile = serde_path_to_error::deserialize(&mut de).map_err(|e| DataError::Line {
        path: path.to_path_buf(),
        line: e.inner().line(),
        field: e.path().to_string(),
        message: e.inner().to_string(),
    })?;
    let bad = |needle: &str, field: String, message: String| DataError::Line {
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
    // The needs are never said: neither who the user is nor a probe shares a long run with them.
    let shows = if p.lang == Lang::Zh { "表现为" } else { "It shows" };
    let changed = p.changed_need.need.split(shows).next().unwrap_or(&p.changed_need.need);
    for (need_field, need) in [("hidden_need", p.hidden_need.as_str()), ("changed_need.need", changed)] {
        let mut said = vec![("user".to_string(), p.user.as_str())];
        said.extend(p.facts.iter().enumerate().map(|(i, f)| (format!("facts[{i}].question"), f.question.as_str())));
        for (field, text) in said {
            let run = shared_run(p.lang, text, need);
            if run > max_shared(p.lang) {
                return Err(bad(
                    "\"user\"",
                    field,
                    format!("shares {run} {} with `{need_field}`: it says the need, which the user never says outright",
                        if p.lang == Lang::Zh { "characters" } else { "words" }),
                ));
            }
        }
    }
    Ok(p)
}
