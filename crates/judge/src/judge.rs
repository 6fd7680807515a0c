//! The rubric judge: each answer of a run scored 1–10 on its family's criteria, with a short reason,
//! by any chat model, at a pinned temperature and seed. An answer the judge cannot give in the
//! asked JSON after the allowed tries is counted as `judge_parse_failed`, a failed request as
//! `judge_failed`: neither is ever a score.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;
use h2htalk_data::Family;
use h2htalk_llm::ChatMessage;
use h2htalk_store::{GenerationStatus, Item, JudgeOutcome, JudgeScore, Purpose, SessionKind, Store};
use serde::{Deserialize, Serialize};

use crate::ask::{JudgeHandle, JudgeSettings, parse_strict};
use crate::texts::{Criterion, LangTexts};
use crate::{JudgeError, Result};

/// The instructions an item's model was given, as the judge reads them.
pub(crate) fn instructions(item: &Item) -> String {
    instructions_of(&item.prompt)
}

/// Messages as the judge reads them: each under its role in brackets.
pub fn instructions_of(messages: &[ChatMessage]) -> String {
    messages.iter().map(|m| format!("[{}]\n{}", m.role, m.content)).collect::<Vec<_>>().join("\n\n")
}

/// The messages asking the judge to score `answer` on `criteria`.
pub fn rubric_messages(
    texts: &LangTexts,
    instructions: &str,
    reference: &str,
    answer: &str,
    criteria: &[Criterion],
) -> Vec<ChatMessage> {
    let t = &texts.rubric;
    let lines: Vec<String> = criteria.iter().map(|c| format!("- {}", c.text)).collect::<Vec<_>>();
    let ids: Vec<String> = criteria.iter().map(|c| format!("\"{}\": <1-10>", c.id)).collect();
    let user = format!(
        "{}\n{instructions}\n\n{}\n{reference}\n\n{}\n<<<\n{answer}\n>>>\n\n{}\n{}\n\n{}\n{{\"scores\": {{{}}}, \"reason\": \"...\"}}",
        t.head,
        t.reference,
        t.answer,
        t.rubric,
        lines.join("\n"),
        t.format,
        ids.join(", "),
    );
    vec![ChatMessage::new("system", t.system.clone()), ChatMessage::new("user", user)]
}

/// A judge's rubric answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RubricAnswer {
    pub scores: BTreeMap<String, u8>,
    pub reason: String,
}

impl RubricAnswer {
    pub fn mean(&self) -> f64 {
        self.scores.values().map(|&v| f64::from(v)).sum::<f64>() / self.scores.len() as f64
    }
}

/// Parses a rubric answer strictly: exactly the criteria asked, integers 1–10, a reason.
pub fn parse_rubric(text: &str, criteria: &[Criterion]) -> std::result::Result<RubricAnswer, String> {
    let a: RubricAnswer = parse_strict(text)?;
    let want: BTreeSet<&str> = criteria.iter().map(|c| c.id.as_str()).collect();
    let got: BTreeSet<&str> = a.scores.keys().map(String::as_str).collect();
    if let Some(missing) = want.difference(&got).next() {
        return Err(format!("field `scores.{missing}` is missing"));
    }
    if let Some(extra) = got.difference(&want).next() {
        return Err(format!("field `scores.{extra}` is not a criterion of this rubric"));
    }
    if let Some((k, v)) = a.scores.iter().find(|(_, v)| !(1..=10).contains(*v)) {
        return Err(format!("field `scores.{k}`: {v} is outside 1–10"));
    }
    if a.reason.trim().is_empty() {
        return Err("field `reason` is empty".into());
    }
    Ok(a)
}

/// A rubric judgment of a run.
#[derive(Clone, Debug, Serialize)]
pub struct JudgeReport {
    pub run_id: String,
    pub judge: String,
    pub settings: JudgeSettings,
    pub prompt_hash: String,
    /// Whether earlier judgments by the same judge were dropped because its settings or prompts changed.
    pub restarted: bool,
    /// Items judged by this call (the rest were judged before and kept).
    pub judged_now: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Items read from the store at a time by [`judge_run`].
const JUDGE_PAGE: usize = 512;

/// Judges every answer of `run_id` that this judge has not judged yet (an item recorded as
/// `judge_failed` or `generation_failed` is looked at again, so a `--retry-failed` run gets judged),
/// committing each judgment as it arrives. The report crate summarises the stored judgments.
pub async fn judge_run(store: &mut Store, run_id: &str, judge: JudgeHandle<'_>) -> Result<JudgeReport> {
    judge.settings.validate()?;
    if store.run(run_id)?.is_none() {
        return Err(JudgeError::UnknownRun(run_id.into()));
    }
    let name = judge.name();
    let hash = judge.texts.hash().to_string();
    let settings = serde_json::to_value(judge.settings).expect("settings serialise");
    let restarted = store.begin_judge_session(run_id, SessionKind::Rubric, &name, &settings, &hash)?;
    let done = store.judged_items(run_id, &name)?;
    let (mut judged_now, mut input_tokens, mut output_tokens) = (0, 0, 0);
    let concurrency = judge.model.max_concurrency().max(1);
    // A page of items at a time: a sweep judges several runs at once, and a run's prompts are
    // most of its bytes.
    let mut after = None;
    loop {
        let records = store.records_page(run_id, after, JUDGE_PAGE)?;
        let Some(last) = records.last() else { break };
        after = Some(last.item.ord);
        let mut work = Vec::new();
        for record in records.iter().filter(|r| !done.contains(&r.item.scenario_id)) {
            let item = &record.item;
            let family = Family::of_group(&item.task).ok_or_else(|| {
                JudgeError::Settings(format!(
                    "run `{run_id}`: item `{}` has an unknown task `{}`",
                    item.scenario_id, item.task
                ))
            })?;
            let mut row = JudgeScore::new(&item.scenario_id, &item.task, family, JudgeOutcome::GenerationFailed);
            match &record.generation {
                Some(g) if g.status == GenerationStatus::Generated => {
                    let text = g.text.clone().unwrap_or_default();
                    if text.trim().is_empty() {
                        row.outcome = JudgeOutcome::EmptyAnswer;
                        store.put_judge_score(run_id, &name, &row)?;
                    } else {
                        work.push((item, family, text));
                    }
                }
                g => {
                    row.error = Some(match g {
                        Some(g) => g.failure().unwrap_or_default(),
                        None => "no generation recorded".into(),
                    });
                    store.put_judge_score(run_id, &name, &row)?;
                }
            }
        }
        judged_now += work.len();
        let mut stream = futures_util::stream::iter(work.into_iter().map(|(item, family, text)| async move {
            let lang = item.lang;
            let texts = judge.texts.lang(lang);
            let criteria = texts.criteria(family);
            let messages = rubric_messages(texts, &instructions(item), &item.reference, &text, criteria);
            let asked = judge.ask(lang, messages, |t| parse_rubric(t, criteria)).await;
            (item, family, asked)
        }))
        .buffer_unordered(concurrency);
        while let Some((item, family, asked)) = stream.next().await {
            input_tokens += asked.input_tokens;
            output_tokens += asked.output_tokens;
            judge.record(store, run_id, Purpose::Rubric, asked.usage())?;
            let mut row = JudgeScore {
                attempts: asked.attempts,
                raw: asked.raw,
                ..JudgeScore::new(&item.scenario_id, &item.task, family, JudgeOutcome::Scored)
            };
            match asked.result {
                Ok(a) => {
                    row.mean = Some(a.mean());
                    row.scores = Some(a.scores);
                    row.reason = Some(a.reason);
                }
                Err(f) => {
                    row.outcome = f.judge_outcome();
                    row.error = Some(f.message());
                }
            }
            store.put_judge_score(run_id, &name, &row)?;
        }
    }
    Ok(JudgeReport {
        run_id: run_id.into(),
        judge: name,
        settings: judge.settings.clone(),
        prompt_hash: hash,
        restarted,
        judged_now,
        input_tokens,
        output_tokens,
    })
}
