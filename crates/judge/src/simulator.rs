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

use std::path::{Path, PathBuf};

use h2htalk_data::redact::redact;
use h2htalk_data::suite::profiles::{At, Attachment, Direction, Distance, Fact, UserProfile};
use h2htalk_data::suite::{
    Inputs, Lang, Memory, NO_KEY_INFORMATION, Role, Scenario, Source, Tags, Turn, memory_blocks,
};
use h2htalk_data::{Suite, Task};
use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, GenerationSettings, Scheduler};
use h2htalk_prompt::{Prompts, SapMode};
use h2htalk_store::{
    CallUsage, NeedsOutcome, Prices, Purpose, SimulatedFact, SimulatedSession, SimulatedTurn, Simulation,
    SimulationOutcome, SimulationSettings, Store, UsageRole, UsageRow,
};
use minijinja::{Environment, UndefinedBehavior};
use serde::{Deserialize, Serialize};

use crate::ask::{AskFailure, JudgeHandle, ask_json, parse_strict};
use crate::texts::{JudgeTexts, SimulatorTexts};
use crate::{JudgeError, Result};

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
            let dir = h2htalk_data::suite::part_dir(suite_dir, h2htalk_data::suite::Part::Templates)?.join(lang.code());
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
    let id = format!("simulator:{}", profile.id);
    notes_prompt(suite, prompts, &id, &profile.companion_persona, profile.lang, sap, history)
}

/// The `recollection_synthesize` prompt of one session's `history`, as the runner renders it for
/// a scenario `id` of that sub-task: how the companion writes its own memories after a session.
pub(crate) fn notes_prompt(
    suite: &Suite,
    prompts: &Prompts,
    id: &str,
    persona: &str,
    lang: Lang,
    sap: SapMode,
    history: &[Turn],
) -> Result<Vec<ChatMessage>> {
    let scenario = Scenario {
        id: id.to_string(),
        task: Task::RecollectionSynthesize,
        persona: persona.to_string(),
        lang,
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
pub(crate) fn parse_memories(text: &str) -> std::result::Result<Vec<Memory>, String> {
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
    /// `run --redact`: personal data masked in every text stored (what was said, the memories,
    /// errors and the judge's reason).
    pub redact: bool,
}

/// The sessions with personal data masked in what the user and the companion said, the memories
/// shown and written, and the errors (`run --redact`).
fn redacted(sessions: &[SimulatedSession]) -> Vec<SimulatedSession> {
    let opt = |t: &mut Option<String>| *t = t.as_deref().map(redact);
    let mut sessions = sessions.to_vec();
    for s in &mut sessions {
        for t in &mut s.turns {
            t.user = redact(&t.user);
            opt(&mut t.companion);
            opt(&mut t.companion_role_break);
        }
        for m in &mut s.memories_shown {
            m.content = redact(&m.content);
        }
        opt(&mut s.memory_answer);
        opt(&mut s.memory_error);
    }
    sessions
}

/// One simulated conversation and what it found (stored as a [`Simulation`]).
#[derive(Clone, Debug)]
pub struct SimulationResult {
    pub idx: usize,
    pub profile: String,
    pub lang: Lang,
    pub attachment: Attachment,
    pub direction: Direction,
    pub seed: u64,
    pub outcome: SimulationOutcome,
    pub error: Option<String>,
    /// Every state the simulated user reported, in order.
    pub states: Vec<u8>,
    pub first_state: Option<u8>,
    pub last_state: Option<u8>,
    /// last − first.
    pub state_change: Option<i32>,
    pub facts: Vec<SimulatedFact>,
    /// Sessions whose memory answer broke the format.
    pub memory_format_failures: usize,
    pub needs_outcome: NeedsOutcome,
    pub hidden_need_met: Option<bool>,
    pub changed_need_met: Option<bool>,
    pub needs_reason: Option<String>,
    pub sessions: Vec<SimulatedSession>,
    pub simulator_calls: u32,
    /// Simulated user turns rejected as role breaks ([`simulator_role_break`]) and retried.
    pub simulator_role_breaks: usize,
    /// Companion replies that broke role ([`companion_role_break`]).
    pub companion_role_breaks: usize,
    /// Tokens of this conversation's calls: the simulated user's, the companion's, the needs judge's.
    pub usage: ConversationUsage,
}

/// Tokens of one simulated conversation's calls, by who made them.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConversationUsage {
    pub simulator: CallUsage,
    pub companion: CallUsage,
    pub judge: CallUsage,
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
        outcome: SimulationOutcome::Completed,
        error: None,
        states: vec![],
        first_state: None,
        last_state: None,
        state_change: None,
        facts: profile
            .facts
            .iter()
            .map(|f| SimulatedFact {
                id: f.id.clone(),
                distance: Some(f.distance),
                asked: false,
                recalled: None,
                in_memory: None,
            })
            .collect(),
        memory_format_failures: 0,
        needs_outcome: NeedsOutcome::NotReached,
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
        let mut record = SimulatedSession {
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
                        AskFailure::ParseFailed { .. } => SimulationOutcome::SimulatorParseFailed,
                        AskFailure::Infra { .. } => SimulationOutcome::SimulatorFailed,
                    };
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
                    r.outcome = SimulationOutcome::CompanionFailed;
                    r.error = Some(format!("session {s}, turn {t}: {e}"));
                    record.turns.push(SimulatedTurn {
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
            record.turns.push(SimulatedTurn {
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
                    r.outcome = SimulationOutcome::CompanionFailed;
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
    if r.outcome == SimulationOutcome::Completed {
        match setup.judge {
            None => r.needs_outcome = NeedsOutcome::NoJudge,
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
                        r.needs_outcome = NeedsOutcome::Judged;
                        r.hidden_need_met = Some(a.hidden_need_met);
                        r.changed_need_met = Some(a.changed_need_met);
                        r.needs_reason = Some(a.reason);
                    }
                    Err(f) => {
                        r.needs_outcome = match f {
                            AskFailure::ParseFailed { .. } => NeedsOutcome::JudgeParseFailed,
                            AskFailure::Infra { .. } => NeedsOutcome::JudgeFailed,
                        };
                        r.needs_reason = Some(f.message());
                    }
                }
            }
        }
    }
    Ok(r)
}

/// Runs `n` simulations (profile `i mod len`, seed `seed + i`) and stores each under `run_id` as
/// it ends (replacing the run's earlier simulations), with the tokens of its calls. The report
/// crate summarises the stored simulations.
pub async fn simulate(
    store: &mut Store,
    run_id: &str,
    setup: &SimulationSetup<'_>,
    profiles: &[UserProfile],
    n: usize,
    seed: u64,
) -> Result<Vec<SimulationResult>> {
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
    let companion = setup.companion.id().to_string();
    let simulator = setup.simulator.id().to_string();
    let judge = setup.judge.map(|j| j.name());
    let mask = |t: &Option<String>| if setup.redact { t.as_deref().map(redact) } else { t.clone() };
    let mut results = Vec::new();
    for i in 0..n {
        let profile = &profiles[i % profiles.len()];
        let sim_seed = seed.wrapping_add(i as u64);
        let r = run_one(setup, &companion_prompts, profile, i, sim_seed).await?;
        let settings = SimulationSettings {
            simulator: GenerationSettings { seed: Some(sim_seed), ..setup.simulator_settings.clone() },
            companion: setup.companion_settings.clone(),
            sap: setup.sap,
            prompt_hash: setup.texts.hash().to_string(),
        };
        store.put_simulation(
            run_id,
            &Simulation {
                idx: i,
                profile: r.profile.clone(),
                seed: sim_seed,
                companion: companion.clone(),
                simulator: simulator.clone(),
                judge: judge.clone(),
                outcome: r.outcome,
                error: mask(&r.error),
                created_at: h2htalk_store::now_utc(),
                settings: Some(settings),
                facts: r.facts.clone(),
                needs: r.needs_outcome,
                hidden_need_met: r.hidden_need_met,
                changed_need_met: r.changed_need_met,
                needs_reason: mask(&r.needs_reason),
                memory_format_failures: r.memory_format_failures,
                simulator_role_breaks: Some(r.simulator_role_breaks),
                companion_role_breaks: Some(r.companion_role_breaks),
                sessions: if setup.redact { redacted(&r.sessions) } else { r.sessions.clone() },
            },
        )?;
        let helpers = [
            (UsageRole::Simulator, &simulator, Purpose::User, r.usage.simulator, setup.simulator_prices),
            (UsageRole::Companion, &companion, Purpose::Conversation, r.usage.companion, setup.companion_prices),
        ];
        for (role, model, purpose, usage, prices) in helpers {
            if usage != CallUsage::default() {
                store.add_usage(run_id, &UsageRow { role, model: model.clone(), purpose, usage, prices })?;
            }
        }
        if let Some(j) = &setup.judge
            && r.usage.judge != CallUsage::default()
        {
            j.record(store, run_id, Purpose::Needs, r.usage.judge)?;
        }
        results.push(r);
    }
    Ok(results)
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
    fn redacted_sessions_mask_every_text_and_keep_the_rest() {
        let memories = parse_memories("记忆内容：手机号13812345678\n记忆类别：工作\n记忆重要性：1").unwrap();
        let session = SimulatedSession {
            session: 2,
            turns: vec![SimulatedTurn {
                user: "我的邮箱是 amy@example.com".into(),
                state: 4,
                companion: Some("好的，我记下了 13812345678".into()),
                companion_role_break: Some("它说了 amy@example.com".into()),
            }],
            memories_shown: memories,
            memory_answer: Some("记忆内容：邮箱 amy@example.com".into()),
            memory_error: Some("格式错误：13812345678".into()),
        };
        let masked = redacted(std::slice::from_ref(&session));
        let t = &masked[0].turns[0];
        assert_eq!(t.user, "我的邮箱是 [EMAIL]");
        assert_eq!(t.companion.as_deref(), Some("好的，我记下了 [PHONE]"));
        assert_eq!(t.companion_role_break.as_deref(), Some("它说了 [EMAIL]"));
        assert_eq!(masked[0].memories_shown[0].content, "手机号[PHONE]");
        assert_eq!(masked[0].memory_answer.as_deref(), Some("记忆内容：邮箱 [EMAIL]"));
        assert_eq!(masked[0].memory_error.as_deref(), Some("格式错误：[PHONE]"));
        assert_eq!((masked[0].session, t.state, masked[0].memories_shown.len()), (2, 4, 1));
    }

    #[test]
    fn user_turns_need_a_state_in_range() {
        assert_eq!(parse_user_turn("{\"state\": 4, \"message\": \"hi\"}").unwrap().state, 4);
        assert!(parse_user_turn("{\"state\": 0, \"message\": \"hi\"}").is_err());
        assert!(parse_user_turn("{\"state\": 4, \"message\": \" \"}").is_err());
        assert!(parse_user_turn("state 4: hi").is_err());
    }
}
