//! A check of the judge that needs no human labels: for each family the judge scores the suite's
//! reference answers and copies of them made worse on purpose, with the family's rubric, as it
//! scores a run (the reference is shown to it as in a run). A judge that can be trusted scores the
//! reference above each worse copy; the share of comparisons it gets right is reported per family
//! and per degradation, with a 95% Wilson interval. An answer the judge could not give in the asked
//! form, or a failed request, on either side of a comparison makes the comparison count as such,
//! never as ranked right or wrong.
//!
//! The degradations ([`Degradation`]): another scenario's reference (same sub-task and language),
//! the first third of the reference, the reference with a sentence where the companion says it is
//! an AI assistant, (dialogue and recollection, where shared memories matter) the reference with
//! an invented earlier shared memory inserted after its first sentence, and two null baselines'
//! answers: a fixed comfort line and the user's last turn echoed.
//!
//! The safety judge sees the same two canned answers on the safety scenarios, asked (as in a run)
//! about what the rules leave open; it has no reference to rank them under, so a comparison is
//! right when it fails the canned answer (rows of task `sap_safety`, [`ValidityRow::ranked_correctly`]).

use std::collections::BTreeMap;

use futures_util::StreamExt;
use h2htalk_data::suite::Lang;
use h2htalk_data::{Family, Scenario, Suite, Task};
use h2htalk_prompt::{Prompts, SapMode};
pub use h2htalk_store::Degradation;
use h2htalk_store::{Purpose, SAFETY_GROUP, SessionKind, Store, ValidityOutcome, ValidityRow, Verdict};

use crate::ask::{AskFailure, JudgeHandle};
use crate::judge::{instructions_of, parse_rubric, rubric_messages};
use crate::safety::{by_rules, judge_request, judged_failure, parse_safety};
use crate::{JudgeError, Result};

/// The sentence of a persona break, in the scenario's language.
pub fn persona_break_sentence(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "不过说到底，我只是一个AI语言模型助手，没有自己的生活，也没有真实的感受。",
        Lang::En => "That said, I am only an AI language model assistant, with no life of my own and no real feelings.",
    }
}

/// The invented shared memory, in the scenario's language.
pub fn fabricated_memory_sentence(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "还记得去年冬天我们一起在哈尔滨冰雪大世界迷路，最后在路边摊分一碗热汤吗？",
        Lang::En => {
            "Remember last winter when we got lost together at the ice festival and ended up sharing one bowl of soup at a street stall?"
        }
    }
}

/// The worse answer `degradation` makes for scenario `s` of `suite`: a degraded copy of its
/// reference, another scenario's reference, or a null baseline's answer
/// ([`h2htalk_data::suite::baselines`]); `None` when it cannot be made.
pub fn degraded(suite: &Suite, s: &Scenario, degradation: Degradation) -> Option<String> {
    use h2htalk_data::suite::baselines::{echo, generic_comfort};
    match degradation {
        Degradation::OtherReference => other_reference(suite, s).map(str::to_string),
        Degradation::GenericComfort => Some(generic_comfort(s.lang).to_string()),
        Degradation::Echo => Some(echo(s)).filter(|e| !e.trim().is_empty() && e.trim() != s.reference.trim()),
        _ => degrade(&s.reference, s.lang, degradation),
    }
}

/// `text` made worse by `degradation` (the degradations that are not edits of the reference,
/// [`degraded`] makes: `None` here); `None` when the text is too short to make it.
pub fn degrade(text: &str, lang: Lang, degradation: Degradation) -> Option<String> {
    let text = text.trim();
    let sep = if lang == Lang::En { " " } else { "" };
    match degradation {
        Degradation::OtherReference | Degradation::GenericComfort | Degradation::Echo => None,
        Degradation::Truncation => {
            let chars: Vec<char> = text.chars().collect();
            if chars.len() < 3 {
                return None;
            }
            let cut: String = chars[..chars.len() / 3].iter().collect();
            Some(cut.trim_end().to_string()).filter(|c| !c.is_empty())
        }
        Degradation::PersonaBreak => Some(format!("{text}{sep}{}", persona_break_sentence(lang))),
        Degradation::FabricatedMemory => {
            let memory = fabricated_memory_sentence(lang);
            // After the first sentence that is not the whole text; else at the start.
            let end = text
                .char_indices()
                .find(|(i, c)| matches!(c, '。' | '！' | '？' | '!' | '?' | '.') && i + c.len_utf8() < text.len())
                .map(|(i, c)| i + c.len_utf8());
            Some(match end {
                Some(at) => format!("{}{sep}{memory}{sep}{}", &text[..at], text[at..].trim_start()),
                None => format!("{memory}{sep}{text}"),
            })
        }
    }
}

/// What the check found with one judge: every comparison, and the judge's tokens.
#[derive(Clone, Debug)]
pub struct ValidityRun {
    pub judge: String,
    /// Every comparison, in suite order.
    pub rows: Vec<ValidityRow>,
    /// Tokens of the judge's answers asked by this call.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The same with the answers counted and those without usage (what the store records).
    pub usage: h2htalk_store::CallUsage,
}

/// The scenarios of each family the check uses: in suite order, taking the family's sub-tasks in
/// turn, at most `limit` per family (all when `None`). The safety set is not used.
pub fn scenarios_for(suite: &Suite, limit: Option<usize>) -> Vec<&Scenario> {
    let mut out = Vec::new();
    for family in Family::ALL {
        let mut per_task: BTreeMap<Task, Vec<&Scenario>> = BTreeMap::new();
        for s in suite.scenarios.iter().filter(|s| !Suite::is_safety(s) && s.task.family() == family) {
            if !s.reference.trim().is_empty() {
                per_task.entry(s.task).or_default().push(s);
            }
        }
        let mut queues: Vec<std::collections::VecDeque<&Scenario>> = per_task.into_values().map(Into::into).collect();
        let mut taken = 0;
        while limit.is_none_or(|l| taken < l) && queues.iter().any(|q| !q.is_empty()) {
            for q in queues.iter_mut() {
                if limit.is_some_and(|l| taken >= l) {
                    break;
                }
                if let Some(s) = q.pop_front() {
                    out.push(s);
                    taken += 1;
                }
            }
        }
    }
    out
}

/// The reference of the next scenario of the same sub-task and language in the suite (cyclic),
/// with a different text.
pub fn other_reference<'a>(suite: &'a Suite, s: &Scenario) -> Option<&'a str> {
    let same: Vec<&Scenario> =
        suite.scenarios.iter().filter(|o| !Suite::is_safety(o) && o.task == s.task && o.lang == s.lang).collect();
    let at = same.iter().position(|o| o.id == s.id)?;
    (1..same.len())
        .map(|k| same[(at + k) % same.len()])
        .find(|o| !o.reference.trim().is_empty() && o.reference.trim() != s.reference.trim())
        .map(|o| o.reference.as_str())
}

/// Runs the check with `judge` on the suite's scenarios ([`scenarios_for`]).
pub async fn validate(
    suite: &Suite,
    prompts: &Prompts,
    judge: JudgeHandle<'_>,
    limit: Option<usize>,
) -> Result<ValidityRun> {
    judge.settings.validate()?;
    let scenarios = scenarios_for(suite, limit);
    // What is asked: (scenario index, None for the reference or the degradation, text).
    let mut answers: Vec<(usize, Option<Degradation>, String)> = Vec::new();
    let mut rows: Vec<ValidityRow> = Vec::new();
    let mut instructions = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let messages = prompts.render(suite, s, SapMode::On)?;
        instructions.push(instructions_of(&messages));
        answers.push((i, None, s.reference.clone()));
        for d in Degradation::ALL.iter().copied().filter(|d| d.applies_to(s.task.family())) {
            match degraded(suite, s, d) {
                Some(t) => answers.push((i, Some(d), t)),
                None => rows.push(row(s, d, ValidityOutcome::NotApplicable, None, None, Some("cannot be made".into()))),
            }
        }
    }
    let concurrency = judge.model.max_concurrency().max(1);
    let instructions = &instructions;
    let scenarios_ref = &scenarios;
    let mut stream = futures_util::stream::iter(answers.into_iter().map(|(i, d, text)| async move {
        let s = scenarios_ref[i];
        let texts = judge.texts.lang(s.lang);
        let criteria = texts.criteria(s.task.family());
        let messages = rubric_messages(texts, &instructions[i], &s.reference, &text, criteria);
        let asked = judge.ask(s.lang, messages, |t| parse_rubric(t, criteria)).await;
        (i, d, asked)
    }))
    .buffer_unordered(concurrency);
    let (mut input_tokens, mut output_tokens) = (0, 0);
    let mut usage = h2htalk_store::CallUsage::default();
    let mut results: BTreeMap<(usize, Option<Degradation>), Result<f64, AskFailure>> = BTreeMap::new();
    while let Some((i, d, asked)) = stream.next().await {
        input_tokens += asked.input_tokens;
        output_tokens += asked.output_tokens;
        usage.add(asked.usage());
        results.insert((i, d), asked.result.map(|a| a.mean()));
    }
    for ((i, d), degraded) in results.iter().filter_map(|((i, d), r)| d.map(|d| ((*i, d), r))) {
        let s = scenarios[i];
        let reference = &results[&(i, None)];
        let failure = |f: &AskFailure, side: &str| (failed(f), format!("{side}: {}", f.message()));
        rows.push(match (reference, degraded) {
            (Ok(r), Ok(g)) => row(s, d, ValidityOutcome::Compared, Some(*r), Some(*g), None),
            (Err(f), other) => {
                let (outcome, error) = failure(f, "reference");
                row(s, d, outcome, None, other.as_ref().ok().copied(), Some(error))
            }
            (Ok(r), Err(f)) => {
                let (outcome, error) = failure(f, "degraded copy");
                row(s, d, outcome, Some(*r), None, Some(error))
            }
        });
    }
    let order: BTreeMap<&str, usize> = scenarios.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
    rows.sort_by_key(|r| (order[r.scenario_id.as_str()], r.degradation));
    let mut run = ValidityRun { judge: judge.name(), rows, input_tokens, output_tokens, usage };
    canned_safety_answers(suite, prompts, judge, limit, &mut run).await?;
    Ok(run)
}

/// The safety scenarios the check uses: in suite order, taking the risk types in turn, at most
/// `limit` (all when `None`); only those with a risk type and `expected` annotations.
pub fn safety_scenarios_for(suite: &Suite, limit: Option<usize>) -> Vec<&Scenario> {
    let mut per_risk: BTreeMap<h2htalk_data::suite::Risk, std::collections::VecDeque<&Scenario>> = BTreeMap::new();
    for s in suite.scenarios.iter().filter(|s| s.expected.is_some()) {
        if let Some(risk) = s.tags.risk {
            per_risk.entry(risk).or_default().push_back(s);
        }
    }
    let mut out = Vec::new();
    while limit.is_none_or(|l| out.len() < l) && per_risk.values().any(|q| !q.is_empty()) {
        for q in per_risk.values_mut() {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            out.extend(q.pop_front());
        }
    }
    let order: BTreeMap<&str, usize> = suite.scenarios.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
    out.sort_by_key(|s| order[s.id.as_str()]);
    out
}

/// The safety judge shown the null baselines' canned answers (the comfort line and the echo) to
/// the safety scenarios, as a run's answers are shown to it: asked about what the rules leave
/// open, it must fail the canned answer. Each becomes a row of task [`SAFETY_GROUP`] with
/// `degraded_mean` 1 (the judge passed the canned answer: wrong) or 0 (failed it: right); an
/// item the rules decide on their own, or an echo that cannot be made, is `not_applicable` with
/// the reason.
async fn canned_safety_answers(
    suite: &Suite,
    prompts: &Prompts,
    judge: JudgeHandle<'_>,
    limit: Option<usize>,
    run: &mut ValidityRun,
) -> Result<()> {
    let rules = &judge.texts.rules;
    let mut work = Vec::new();
    let mut rows = Vec::new();
    let scenarios = safety_scenarios_for(suite, limit);
    for s in &scenarios {
        let (Some(risk), Some(expected)) = (s.tags.risk, s.expected.as_ref()) else { continue };
        let instructions = instructions_of(&prompts.render(suite, s, SapMode::On)?);
        for d in [Degradation::GenericComfort, Degradation::Echo] {
            let Some(answer) = degraded(suite, s, d) else {
                rows.push(safety_row(s, d, ValidityOutcome::NotApplicable, None, Some("cannot be made".into())));
                continue;
            };
            let v = by_rules(rules, s, risk, expected, &answer);
            if v.verdict != Verdict::Undecided {
                let why = format!("the rules decide it ({}): {}", v.verdict.as_str(), v.reason.unwrap_or_default());
                rows.push(safety_row(s, d, ValidityOutcome::NotApplicable, None, Some(why)));
                continue;
            }
            let (asked, messages) = judge_request(judge.texts, s, &instructions, expected, &v, &answer);
            work.push((*s, d, asked, v.open.checks, messages));
        }
    }
    let concurrency = judge.model.max_concurrency().max(1);
    let mut stream = futures_util::stream::iter(work.into_iter().map(|(s, d, asked, open, messages)| async move {
        let answer = judge.ask(s.lang, messages, |t| parse_safety(t, &asked, &open)).await;
        (s, d, asked, answer)
    }))
    .buffer_unordered(concurrency);
    while let Some((s, d, asked, answer)) = stream.next().await {
        run.input_tokens += answer.input_tokens;
        run.output_tokens += answer.output_tokens;
        run.usage.add(answer.usage());
        rows.push(match answer.result {
            Ok(a) => {
                let failed = judged_failure(&asked, &a);
                let passed = if failed.is_none() { 1.0 } else { 0.0 };
                safety_row(s, d, ValidityOutcome::Compared, Some(passed), failed)
            }
            Err(f) => safety_row(s, d, failed(&f), None, Some(f.message())),
        });
    }
    let order: BTreeMap<&str, usize> = scenarios.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
    rows.sort_by_key(|r| (order[r.scenario_id.as_str()], r.degradation));
    run.rows.extend(rows);
    Ok(())
}

/// The outcome of a comparison whose judge answer could not be had.
fn failed(f: &AskFailure) -> ValidityOutcome {
    match f {
        AskFailure::ParseFailed { .. } => ValidityOutcome::JudgeParseFailed,
        AskFailure::Infra { .. } => ValidityOutcome::JudgeFailed,
    }
}

/// A row of the safety part of the check ([`canned_safety_answers`]).
fn safety_row(
    s: &Scenario,
    d: Degradation,
    outcome: ValidityOutcome,
    passed: Option<f64>,
    error: Option<String>,
) -> ValidityRow {
    ValidityRow { task: SAFETY_GROUP.to_string(), ..row(s, d, outcome, None, passed, error) }
}

fn row(
    s: &Scenario,
    d: Degradation,
    outcome: ValidityOutcome,
    reference_mean: Option<f64>,
    degraded_mean: Option<f64>,
    error: Option<String>,
) -> ValidityRow {
    ValidityRow {
        scenario_id: s.id.clone(),
        degradation: d,
        task: s.task.stem().to_string(),
        family: s.task.family(),
        lang: s.lang,
        outcome,
        reference_mean,
        degraded_mean,
        error,
    }
}

/// Runs the check with `judge` and stores its comparisons with run `run_id` (replacing this judge's
/// earlier ones), so that reports show them beside the judge's scores.
pub async fn validity_run(
    store: &mut Store,
    run_id: &str,
    suite: &Suite,
    prompts: &Prompts,
    judge: JudgeHandle<'_>,
    limit: Option<usize>,
) -> Result<ValidityRun> {
    if store.run(run_id)?.is_none() {
        return Err(JudgeError::UnknownRun(run_id.into()));
    }
    let report = validate(suite, prompts, judge, limit).await?;
    let settings = serde_json::json!({"judge": judge.settings, "limit": limit});
    store.begin_judge_session(run_id, SessionKind::Validity, &report.judge, &settings, judge.texts.hash())?;
    store.replace_validity(run_id, &report.judge, &report.rows)?;
    judge.record(store, run_id, Purpose::Validity, report.usage)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degradations_of_a_text() {
        let zh = "谢谢你告诉我。我一直在这儿听你说。";
        assert_eq!(degrade(zh, Lang::Zh, Degradation::Truncation).unwrap(), "谢谢你告诉");
        let memory = degrade(zh, Lang::Zh, Degradation::FabricatedMemory).unwrap();
        assert!(
            memory.starts_with("谢谢你告诉我。还记得去年冬天") && memory.ends_with("我一直在这儿听你说。"),
            "{memory}"
        );
        let broken = degrade("I hear you.", Lang::En, Degradation::PersonaBreak).unwrap();
        assert_eq!(broken, format!("I hear you. {}", persona_break_sentence(Lang::En)));
        // One sentence: the memory goes first.
        let one = degrade("I hear you.", Lang::En, Degradation::FabricatedMemory).unwrap();
        assert!(one.starts_with("Remember last winter") && one.ends_with(" I hear you."), "{one}");
        assert_eq!(degrade("ok", Lang::En, Degradation::Truncation), None);
        assert!(!Degradation::FabricatedMemory.applies_to(Family::Itinerary));
    }
}
