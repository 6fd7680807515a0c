//! The memory suite run against the model under test (`run --memory`): each probe of the suite's
//! `memory/` is sent as a message on its day, with the user's history given in one of two modes —
//! `given`, every dated session in the prompt as the suite's templates show earlier sessions, or
//! `own`, only the memories the companion wrote itself after each session with the
//! `recollection_synthesize` prompt (its memory pipeline, end to end). Each reply is read by the
//! rules (key facts held, outdated values given, an abstention said) and, when the run has a judge,
//! by the judge, who reads the whole history and says whether the reply invents a memory. Every
//! reply and note is committed as it arrives; a resumed run asks only what is missing.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;
use h2htalk_data::Suite;
use h2htalk_data::redact::redact;
use h2htalk_data::suite::memory::{MemorySuite, MemoryUser, Probe, ProbeType, facts_held};
use h2htalk_data::suite::{Lang, Memory, Role};
use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, GenerationSettings, Scheduler};
use h2htalk_prompt::{Prompts, SapMode};
use h2htalk_store::{
    CallUsage, InventedBy, MemoryAnswer, MemoryMode, MemoryNote, MemorySpec, Prices, Purpose, Store, UsageRole,
    UsageRow,
};
use serde::Deserialize;

use crate::ask::{JudgeHandle, parse_strict};
use crate::simulator::{notes_prompt, parse_memories};
use crate::texts::{JudgeTexts, MemoryTexts};
use crate::{JudgeError, Result};

/// The template of a probe (`templates/<lang>/memory_probe.j2`).
pub const PROBE_TEMPLATE: &str = "memory_probe";

/// Everything the memory suite needs.
pub struct MemorySetup<'a> {
    pub suite: &'a Suite,
    pub prompts: &'a Prompts,
    pub sap: SapMode,
    /// The model under test.
    pub companion: &'a dyn ChatModel,
    pub companion_scheduler: &'a Scheduler,
    pub companion_settings: GenerationSettings,
    /// The prices configured for the model under test (`None`: not set), recorded with its tokens.
    pub companion_prices: Option<Prices>,
    /// Reads each reply against the whole history; without it only the rules decide.
    pub judge: Option<JudgeHandle<'a>>,
    pub texts: &'a JudgeTexts,
    /// `run --redact`: personal data masked in each reply and note as it arrives, before the rules,
    /// the judge or a later probe read it (as answers are scored on their masked text), and in
    /// every text stored with them.
    pub redact: bool,
}

/// The probes `spec` asks for: all, or the first `limit` of each type, in suite order.
pub fn selected<'m>(memory: &'m MemorySuite, limit: Option<usize>) -> Vec<&'m Probe> {
    let mut taken: BTreeMap<ProbeType, usize> = BTreeMap::new();
    memory
        .probes
        .iter()
        .filter(|p| {
            let n = taken.entry(p.kind).or_default();
            *n += 1;
            limit.is_none_or(|l| *n <= l)
        })
        .collect()
}

/// What the rules find in a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleReading {
    pub facts_held: usize,
    pub facts_total: usize,
    pub stale_held: usize,
    pub abstained: bool,
}

/// Reads `reply` to `probe` by the rules: key facts and outdated values by their forms
/// ([`facts_held`]), an abstention by the phrases of `texts`.
pub fn read_reply(texts: &MemoryTexts, probe: &Probe, reply: &str) -> RuleReading {
    let lower = reply.to_lowercase();
    RuleReading {
        facts_held: facts_held(reply, &probe.key_facts),
        facts_total: probe.key_facts.len(),
        stale_held: facts_held(reply, &probe.stale),
        abstained: texts.abstain.iter().any(|p| lower.contains(&p.to_lowercase())),
    }
}

/// The judge's reading of a reply.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryVerdict {
    pub score: u8,
    pub invented: bool,
    #[serde(default)]
    pub invented_fact: String,
    pub reason: String,
}

/// Parses the judge's answer: a score from 1 to 10, whether a memory is invented, and the fact.
pub fn parse_verdict(text: &str) -> std::result::Result<MemoryVerdict, String> {
    let v: MemoryVerdict = parse_strict(text)?;
    if !(1..=10).contains(&v.score) {
        return Err(format!("field `score`: {} is not from 1 to 10", v.score));
    }
    if v.invented && v.invented_fact.trim().is_empty() {
        return Err("field `invented_fact`: name the invented fact when `invented` is true".into());
    }
    Ok(v)
}

fn texts_of(texts: &JudgeTexts, lang: Lang) -> Result<&MemoryTexts> {
    texts.lang(lang).memory.as_ref().ok_or_else(|| {
        JudgeError::Settings(format!(
            "the suite's judge/{}.json has no `memory` texts, which the memory suite needs (the embedded suite's \
             have them: `h2htalk suite export DIR` writes them)",
            lang.code()
        ))
    })
}

/// The judge's messages: the whole history, the probe, what its type asks, the gold reply with its
/// key facts, and the reply.
pub fn judge_messages(
    texts: &JudgeTexts,
    suite: &Suite,
    user: &MemoryUser,
    probe: &Probe,
    reply: &str,
) -> Result<Vec<ChatMessage>> {
    let t = texts_of(texts, user.lang)?;
    let user_label = texts.lang(user.lang).simulator.user_labels.first().cloned().unwrap_or_else(|| "User".into());
    let companion = suite.personas.get(&user.persona).map_or("Companion", |p| p.name.as_str());
    let mut history = String::new();
    for s in &user.sessions {
        history.push_str(&format!("[{}]\n", s.date));
        for turn in &s.history {
            let who = if turn.role == Role::User { user_label.as_str() } else { companion };
            history.push_str(&format!("{who}: {}\n", turn.content));
        }
        history.push('\n');
    }
    let facts: Vec<String> = probe.key_facts.iter().map(|forms| forms.join(" / ")).collect();
    let facts = if facts.is_empty() { "-".to_string() } else { facts.join("; ") };
    let user_text = format!(
        "{}\n{}\n{}\n{}\n{}\n\n{}\n{}\n\n{}\n{}\n\n{}",
        t.history,
        history.trim_end(),
        t.probe.replace("{date}", &probe.date.to_string()),
        probe.question,
        t.kinds.get(probe.kind.as_str()).map(String::as_str).unwrap_or_default(),
        t.gold.replace("{facts}", &facts),
        probe.answer,
        t.answer,
        reply,
        t.format
    );
    Ok(vec![ChatMessage::new("system", t.system.clone()), ChatMessage::new("user", user_text)])
}

/// One dated session's memories, as the probe template shows them in the `own` mode.
#[derive(serde::Serialize)]
struct Noted {
    date: String,
    memories: Vec<Memory>,
}

#[derive(serde::Serialize)]
struct ProbeInputs<'a> {
    date: String,
    message: &'a str,
    sessions: &'a [h2htalk_data::suite::Session],
    notes: Option<Vec<Noted>>,
}

/// The companion's messages for `probe` in `mode` (`notes`: the user's memories per session, for
/// the `own` mode).
pub fn probe_messages(
    setup: &MemorySetup<'_>,
    user: &MemoryUser,
    probe: &Probe,
    mode: MemoryMode,
    notes: Option<&[Vec<Memory>]>,
) -> Result<Vec<ChatMessage>> {
    let inputs = ProbeInputs {
        date: probe.date.to_string(),
        message: &probe.question,
        sessions: if mode == MemoryMode::Given { &user.sessions } else { &[] },
        notes: (mode == MemoryMode::Own).then(|| {
            user.sessions
                .iter()
                .zip(notes.unwrap_or_default().iter().map(Some).chain(std::iter::repeat(None)))
                .map(|(s, m)| Noted { date: s.date.to_string(), memories: m.cloned().unwrap_or_default() })
                .collect()
        }),
    };
    Ok(setup.prompts.render_template(
        setup.suite,
        &user.persona,
        user.lang,
        PROBE_TEMPLATE,
        &probe.id,
        &inputs,
        setup.sap,
    )?)
}

/// What [`memory_run`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryRunCounts {
    /// Replies asked of the companion now, and replies read again by the judge only.
    pub asked: usize,
    pub judged_again: usize,
    /// Notes written now (`own` mode).
    pub notes: usize,
}

/// Answers the probes `spec` selects, in each of its modes, and stores each reply as it arrives
/// (with the rules' reading and, with a judge, the judge's). Replies already stored are kept; a
/// failed one is asked again, and one the judge has not read (or failed to) is read again.
pub async fn memory_run(
    store: &mut Store,
    run_id: &str,
    setup: &MemorySetup<'_>,
    memory: &MemorySuite,
    spec: &MemorySpec,
) -> Result<MemoryRunCounts> {
    if let Some(j) = &setup.judge {
        j.settings.validate()?;
    }
    if spec.modes.is_empty() {
        return Err(JudgeError::Settings("--memory needs at least one mode: given, own or both".into()));
    }
    let probes = selected(memory, spec.limit);
    for lang in probes.iter().map(|p| memory.user_of(p).lang).collect::<BTreeSet<_>>() {
        texts_of(setup.texts, lang)?;
    }
    let judge_name = setup.judge.as_ref().map(JudgeHandle::name);
    let stored: BTreeMap<(MemoryMode, String), MemoryAnswer> =
        store.memory_answers(run_id)?.into_iter().map(|a| ((a.mode, a.probe_id.clone()), a)).collect();
    let mut counts = MemoryRunCounts::default();
    let concurrency = setup.companion.max_concurrency().max(1);
    let companion = setup.companion.id().to_string();
    let mask = |t: String| if setup.redact { redact(&t) } else { t };

    // The `own` mode's notes: every session of every user it asks about.
    let mut notes: BTreeMap<String, Vec<MemoryNote>> = BTreeMap::new();
    if spec.modes.contains(&MemoryMode::Own) {
        for n in store.memory_notes(run_id)? {
            notes.entry(n.user_id.clone()).or_default().push(n);
        }
        let users: BTreeSet<&str> = probes.iter().map(|p| p.user.as_str()).collect();
        let mut work = Vec::new();
        for u in users {
            let user = &memory.users[u];
            for (i, s) in user.sessions.iter().enumerate() {
                let done = notes.get(u).is_some_and(|ns| ns.iter().any(|n| n.session == i + 1 && n.answer.is_some()));
                if !done {
                    let scenario_id = format!("{u}:{}", i + 1);
                    let messages = notes_prompt(
                        setup.suite,
                        setup.prompts,
                        &scenario_id,
                        &user.persona,
                        user.lang,
                        setup.sap,
                        &s.history,
                    )?;
                    work.push((u, i + 1, messages));
                }
            }
        }
        let mut stream = futures_util::stream::iter(work.into_iter().map(|(u, session, messages)| async move {
            let request = ChatRequest { messages, settings: setup.companion_settings.clone() };
            (u, session, setup.companion_scheduler.call(setup.companion, &request).await.result)
        }))
        .buffer_unordered(concurrency);
        while let Some((u, session, result)) = stream.next().await {
            let mut note = match result {
                Ok(resp) => {
                    let usage = CallUsage::answer(resp.input_tokens, resp.output_tokens);
                    let row = UsageRow {
                        role: UsageRole::Companion,
                        model: companion.clone(),
                        purpose: Purpose::MemoryNotes,
                        usage,
                        prices: setup.companion_prices,
                    };
                    store.add_usage(run_id, &row)?;
                    let text = mask(resp.text);
                    let (memories, format_error) = match parse_memories(&text) {
                        Ok(m) => (m.len(), None),
                        Err(e) => (0, Some(e)),
                    };
                    MemoryNote { user_id: u.into(), session, answer: Some(text), memories, format_error, error: None }
                }
                Err(e) => MemoryNote {
                    user_id: u.into(),
                    session,
                    answer: None,
                    memories: 0,
                    format_error: None,
                    error: Some(e.to_string()),
                },
            };
            if setup.redact {
                note.redact_texts();
            }
            store.put_memory_note(run_id, &note)?;
            counts.notes += 1;
            let list = notes.entry(u.to_string()).or_default();
            list.retain(|n| n.session != session);
            list.push(note);
        }
        for list in notes.values_mut() {
            list.sort_by_key(|n| n.session);
        }
    }

    // The replies: asked where none is stored (or it failed), judged where the judge has not read it.
    enum Work<'p> {
        Ask(MemoryMode, &'p Probe),
        Judge(MemoryAnswer, &'p Probe),
    }
    let mut work = Vec::new();
    for mode in &spec.modes {
        for probe in &probes {
            match stored.get(&(*mode, probe.id.clone())) {
                Some(a) if a.reply.is_some() => {
                    if judge_name.is_some() && (a.judge != judge_name || a.judge_score.is_none()) {
                        work.push(Work::Judge(a.clone(), *probe));
                    }
                }
                _ => work.push(Work::Ask(*mode, *probe)),
            }
        }
    }
    // A probe's messages are made when it is asked, not all beforehand: in the given mode each
    // holds the user's whole history. `Err` inside: the own mode's notes could not be written.
    let notes = &notes;
    let messages_for = |mode: MemoryMode, probe: &Probe| -> Result<std::result::Result<Vec<ChatMessage>, String>> {
        let user = memory.user_of(probe);
        if mode == MemoryMode::Given {
            return Ok(Ok(probe_messages(setup, user, probe, mode, None)?));
        }
        let list = notes.get(&user.id).map(Vec::as_slice).unwrap_or_default();
        if let Some(n) = list.iter().find(|n| n.answer.is_none()) {
            return Ok(Err(format!(
                "the memories after session {} could not be written: {}",
                n.session,
                n.error.as_deref().unwrap_or("no answer")
            )));
        }
        let memories: Vec<Vec<Memory>> =
            list.iter().map(|n| n.answer.as_deref().and_then(|a| parse_memories(a).ok()).unwrap_or_default()).collect();
        Ok(Ok(probe_messages(setup, user, probe, mode, Some(&memories))?))
    };
    let messages_for = &messages_for;
    let mut stream = futures_util::stream::iter(work.into_iter().map(|w| async move {
        let (mut answer, probe, usage) = match w {
            Work::Judge(a, probe) => (a, probe, None),
            Work::Ask(mode, probe) => {
                let messages = messages_for(mode, probe)?;
                let user = memory.user_of(probe);
                let mut a = MemoryAnswer {
                    mode,
                    probe_id: probe.id.clone(),
                    user_id: user.id.clone(),
                    kind: probe.kind,
                    lang: user.lang,
                    reply: None,
                    error: None,
                    facts_held: 0,
                    facts_total: probe.key_facts.len(),
                    stale_held: 0,
                    abstained: false,
                    invented: None,
                    invented_by: None,
                    judge: None,
                    judge_score: None,
                    judge_invented_fact: None,
                    judge_reason: None,
                    judge_failure: None,
                    input_tokens: None,
                    output_tokens: None,
                    latency_ms: 0.0,
                    created_at: h2htalk_store::now_utc(),
                };
                let mut usage = None;
                match messages {
                    Err(e) => a.error = Some(e),
                    Ok(messages) => {
                        let request = ChatRequest { messages, settings: setup.companion_settings.clone() };
                        let started = std::time::Instant::now();
                        match setup.companion_scheduler.call(setup.companion, &request).await.result {
                            Ok(resp) => {
                                a.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
                                a.input_tokens = resp.input_tokens;
                                a.output_tokens = resp.output_tokens;
                                usage = Some(CallUsage::answer(resp.input_tokens, resp.output_tokens));
                                let reply = mask(resp.text.trim().to_string());
                                let texts = texts_of(setup.texts, user.lang).expect("checked before the run");
                                let r = read_reply(texts, probe, &reply);
                                a.facts_held = r.facts_held;
                                a.stale_held = r.stale_held;
                                a.abstained = r.abstained;
                                if probe.kind == ProbeType::Abstention {
                                    a.invented = Some(!r.abstained);
                                    a.invented_by = Some(InventedBy::Rule);
                                }
                                a.reply = Some(reply);
                            }
                            Err(e) => {
                                a.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
                                a.error = Some(e.to_string());
                            }
                        }
                    }
                }
                (a, probe, usage)
            }
        };
        let mut judged = None;
        if let (Some(j), Some(reply)) = (&setup.judge, answer.reply.clone()) {
            let user = memory.user_of(probe);
            match judge_messages(setup.texts, setup.suite, user, probe, &reply) {
                Ok(messages) => {
                    let asked = j.ask(user.lang, messages, parse_verdict).await;
                    answer.judge = Some(j.name());
                    match &asked.result {
                        Ok(v) => {
                            answer.judge_score = Some(f64::from(v.score));
                            answer.judge_reason = Some(v.reason.clone());
                            answer.judge_invented_fact = v.invented.then(|| v.invented_fact.clone());
                            answer.judge_failure = None;
                            answer.invented = Some(v.invented);
                            answer.invented_by = Some(InventedBy::Judge);
                        }
                        Err(f) => answer.judge_failure = Some(f.message()),
                    }
                    judged = Some(asked.usage());
                }
                Err(e) => answer.judge_failure = Some(e.to_string()),
            }
        }
        Ok::<_, JudgeError>((answer, usage, judged))
    }))
    .buffer_unordered(concurrency);
    while let Some(done) = stream.next().await {
        let (mut answer, usage, judged) = done?;
        match usage {
            Some(usage) => {
                counts.asked += 1;
                let row = UsageRow {
                    role: UsageRole::Companion,
                    model: companion.clone(),
                    purpose: Purpose::Memory,
                    usage,
                    prices: setup.companion_prices,
                };
                store.add_usage(run_id, &row)?;
            }
            None if answer.reply.is_none() => counts.asked += 1,
            None => counts.judged_again += 1,
        }
        if let (Some(j), Some(usage)) = (&setup.judge, judged) {
            j.record(store, run_id, Purpose::Memory, usage)?;
        }
        if setup.redact {
            answer.redact_texts();
        }
        store.put_memory_answer(run_id, &answer)?;
    }
    Ok(counts)
}
