//! Pairwise judging: two runs' answers to the same item shown to the judge in both orders (A/B and
//! B/A). The same winner both times wins; disagreeing orders are `inconsistent` (a tie for the
//! win rates and the ranking, counted on their own). Over several runs: win rates per pair and a
//! Bradley–Terry ranking with bootstrap intervals over items.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use h2htalk_data::Family;
use h2htalk_data::suite::Lang;
use h2htalk_llm::ChatMessage;
use h2htalk_store::{Item, PairJudgment, PairOutcome, Record, Store};
use serde::{Deserialize, Serialize};

use crate::ask::{Asked, JudgeHandle, JudgeSettings, parse_strict};
use crate::bt::{self, Comparison, Outcome, Ranking};
use crate::judge::{family_of, instructions};
use crate::texts::LangTexts;
use crate::{JudgeError, Result};

/// Which answer the judge preferred, as shown to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Winner {
    A,
    B,
    #[serde(rename = "tie")]
    Tie,
}

/// A judge's pairwise answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairAnswer {
    pub winner: Winner,
    pub reason: String,
}

pub fn parse_pair(text: &str) -> std::result::Result<PairAnswer, String> {
    let a: PairAnswer = parse_strict(text)?;
    if a.reason.trim().is_empty() {
        return Err("field `reason` is empty".into());
    }
    Ok(a)
}

/// The messages asking which of two answers is better.
pub fn pair_messages(
    texts: &LangTexts,
    family: Family,
    instructions: &str,
    first: &str,
    second: &str,
) -> Vec<ChatMessage> {
    let t = &texts.pairwise;
    let aspects: Vec<String> = texts.criteria(family).iter().map(|c| format!("- {}", c.text)).collect();
    let user = format!(
        "{}\n{instructions}\n\n## A\n<<<\n{first}\n>>>\n\n## B\n<<<\n{second}\n>>>\n\n{}\n{}\n\n{}\n{{\"winner\": \"A\", \"reason\": \"...\"}}",
        t.head,
        t.weigh,
        aspects.join("\n"),
        t.format,
    );
    vec![ChatMessage::new("system", t.system.clone()), ChatMessage::new("user", user)]
}

/// The combined verdict of both orders, in terms of the runs.
pub fn combine(ab: Winner, ba: Winner) -> PairOutcome {
    // In the B/A order, "A" is the second run's answer.
    let ba_in_run_terms = match ba {
        Winner::A => Winner::B,
        Winner::B => Winner::A,
        Winner::Tie => Winner::Tie,
    };
    match (ab, ba_in_run_terms) {
        (Winner::A, Winner::A) => PairOutcome::A,
        (Winner::B, Winner::B) => PairOutcome::B,
        (Winner::Tie, Winner::Tie) => PairOutcome::Tie,
        _ => PairOutcome::Inconsistent,
    }
}

/// Two runs compared.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PairReport {
    pub run_a: String,
    pub run_b: String,
    /// Items of `run_a` also in `run_b`.
    pub items: usize,
    pub a_wins: usize,
    pub b_wins: usize,
    pub ties: usize,
    /// The two orders disagreed (a tie in the rates).
    pub inconsistent: usize,
    pub judge_parse_failed: usize,
    pub judge_failed: usize,
    /// An answer missing, failed or empty in either run: not compared.
    pub missing: usize,
    /// (a wins + half of ties and inconsistent) / compared; `None` when nothing was compared.
    pub a_win_rate: Option<f64>,
}

/// Pairwise judgments of several runs.
#[derive(Clone, Debug, Serialize)]
pub struct PairwiseReport {
    pub judge: String,
    pub settings: JudgeSettings,
    pub prompt_hash: String,
    pub runs: Vec<String>,
    pub pairs: Vec<PairReport>,
    /// Bradley–Terry over the runs (named by run id).
    pub ranking: Ranking,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

fn answer(r: &Record) -> Option<&str> {
    r.answer().filter(|t| !t.trim().is_empty())
}

/// Compares every pair of `runs` item by item (both orders), stores each judgment (replacing this
/// judge's earlier ones for the same pair), and ranks the runs.
pub async fn pairwise_run(
    store: &mut Store,
    runs: &[String],
    judge: JudgeHandle<'_>,
    bootstrap_samples: usize,
    seed: u64,
) -> Result<PairwiseReport> {
    judge.settings.validate()?;
    if runs.len() < 2 {
        return Err(JudgeError::Settings("pairwise judging needs at least two runs".into()));
    }
    for (i, r) in runs.iter().enumerate() {
        if runs[..i].contains(r) {
            return Err(JudgeError::Settings(format!("run `{r}` is named twice")));
        }
        if store.run(r)?.is_none() {
            return Err(JudgeError::UnknownRun(r.clone()));
        }
    }
    let name = judge.name();
    let mut data: Vec<Vec<Record>> = Vec::new();
    for r in runs {
        data.push(store.records(r)?);
    }
    let mut pairs = Vec::new();
    let mut comparisons = Vec::new();
    let (mut input_tokens, mut output_tokens) = (0, 0);
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let mut pair = PairReport { run_a: runs[i].clone(), run_b: runs[j].clone(), ..Default::default() };
            let in_b: BTreeMap<&str, &Record> = data[j].iter().map(|r| (r.item.scenario_id.as_str(), r)).collect();
            let mut work: Vec<(&Item, Family, String, String)> = Vec::new();
            for (record, other) in data[i].iter().filter_map(|r| in_b.get(r.item.scenario_id.as_str()).map(|o| (r, *o))) {
                let item = &record.item;
                pair.items += 1;
                let family = family_of(&item.task).ok_or_else(|| {
                    JudgeError::Settings(format!("run `{}`: item `{}` has an unknown task", runs[i], item.scenario_id))
                })?;
                match (answer(record), answer(other)) {
                    (Some(a), Some(b)) => work.push((item, family, a.to_string(), b.to_string())),
                    _ => {
                        pair.missing += 1;
                        let row = PairJudgment {
                            scenario_id: item.scenario_id.clone(),
                            outcome: PairOutcome::Missing,
                            order_ab: None,
                            order_ba: None,
                            error: Some("an answer is missing, failed or empty".into()),
                        };
                        store.put_pair_judgment(&name, &runs[i], &runs[j], &row)?;
                    }
                }
            }
            let ask = |lang: Lang, messages: Vec<ChatMessage>| judge.ask(lang, messages, parse_pair);
            let concurrency = (judge.model.max_concurrency() / 2).max(1);
            let mut stream = futures_util::stream::iter(work.iter().map(|(item, family, a, b)| {
                let lang = item.lang;
                let context = instructions(item);
                let texts = judge.texts.lang(lang);
                let ab = ask(lang, pair_messages(texts, *family, &context, a, b));
                let ba = ask(lang, pair_messages(texts, *family, &context, b, a));
                async move {
                    let (ab, ba) = futures_util::future::join(ab, ba).await;
                    (*item, ab, ba)
                }
            }))
            .buffer_unordered(concurrency);
            while let Some((item, ab, ba)) = stream.next().await {
                let (ab, ba): (Asked<PairAnswer>, Asked<PairAnswer>) = (ab, ba);
                input_tokens += ab.input_tokens + ba.input_tokens;
                output_tokens += ab.output_tokens + ba.output_tokens;
                let (outcome, error) = match (&ab.result, &ba.result) {
                    (Ok(x), Ok(y)) => (combine(x.winner, y.winner), None),
                    (Err(f), _) | (_, Err(f)) => (f.pair_outcome(), Some(f.message())),
                };
                let bt_outcome = match outcome {
                    PairOutcome::A => {
                        pair.a_wins += 1;
                        Some(Outcome::AWins)
                    }
                    PairOutcome::B => {
                        pair.b_wins += 1;
                        Some(Outcome::BWins)
                    }
                    PairOutcome::Tie => {
                        pair.ties += 1;
                        Some(Outcome::Tie)
                    }
                    PairOutcome::Inconsistent => {
                        pair.inconsistent += 1;
                        Some(Outcome::Tie)
                    }
                    PairOutcome::JudgeParseFailed => {
                        pair.judge_parse_failed += 1;
                        None
                    }
                    PairOutcome::JudgeFailed => {
                        pair.judge_failed += 1;
                        None
                    }
                    PairOutcome::Missing => unreachable!("both answers are present here"),
                };
                if let Some(o) = bt_outcome {
                    comparisons.push(Comparison { item: item.scenario_id.clone(), a: i, b: j, outcome: o });
                }
                let show = |x: &Asked<PairAnswer>| match &x.result {
                    Ok(a) => serde_json::to_value(a).ok(),
                    Err(f) => serde_json::to_value(f).ok(),
                };
                let row = PairJudgment {
                    scenario_id: item.scenario_id.clone(),
                    outcome,
                    order_ab: show(&ab),
                    order_ba: show(&ba),
                    error,
                };
                store.put_pair_judgment(&name, &runs[i], &runs[j], &row)?;
            }
            let compared = pair.a_wins + pair.b_wins + pair.ties + pair.inconsistent;
            pair.a_win_rate = (compared > 0)
                .then(|| (pair.a_wins as f64 + 0.5 * (pair.ties + pair.inconsistent) as f64) / compared as f64);
            pairs.push(pair);
        }
    }
    // Comparisons in a fixed order, so the bootstrap does not depend on arrival order.
    comparisons.sort_by(|x, y| (x.a, x.b, &x.item).cmp(&(y.a, y.b, &y.item)));
    let ranking = bt::rank(runs, &comparisons, bootstrap_samples, seed, 0.95);
    Ok(PairwiseReport {
        judge: name,
        settings: judge.settings.clone(),
        prompt_hash: judge.texts.hash().to_string(),
        runs: runs.to_vec(),
        pairs,
        ranking,
        input_tokens,
        output_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders_must_agree() {
        assert_eq!(combine(Winner::A, Winner::B), "a");
        assert_eq!(combine(Winner::B, Winner::A), "b");
        assert_eq!(combine(Winner::Tie, Winner::Tie), "tie");
        // Position bias: "A" both times means the judge preferred whatever came first.
        assert_eq!(combine(Winner::A, Winner::A), "inconsistent");
        assert_eq!(combine(Winner::A, Winner::Tie), "inconsistent");
        assert!(parse_pair("{\"winner\": \"C\", \"reason\": \"x\"}").is_err());
        assert_eq!(parse_pair("{\"winner\": \"tie\", \"reason\": \"same\"}").unwrap().winner, Winner::Tie);
    }
}
