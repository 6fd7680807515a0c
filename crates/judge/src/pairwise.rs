//! Pairwise judging: two runs' answers to the same item shown to the judge in both orders (A/B and
//! B/A). The same winner both times wins; disagreeing orders are `inconsistent` (a tie for the
//! win rates and the ranking, counted on their own). Over several runs: win, tie and loss rates per
//! pair, overall and per family, the judge's position consistency, and a Bradley–Terry ranking
//! with bootstrap intervals over items.
//!
//! Every judgment is stored as it arrives, under a session that records the judge's settings and
//! prompt hash ([`Store::begin_pair_session`]). Judging the same runs again with the same judge,
//! settings and prompts asks only for what is not stored yet (items whose judge call failed, items
//! not reached before an interruption); [`load`] builds the same report from the store without
//! asking anything.
//!
//! Intervals: every proportion carries its 95% Wilson score interval; the Bradley–Terry scores a
//! 95% percentile bootstrap interval over items. None is given over fewer than two items.
//!
//! The judge card ([`JudgeBias`]): how often the longer answer and the answer shown first win, and
//! a Bradley–Terry ranking with the answers' length difference as a covariate (as Chatbot Arena's
//! style control), with the rank changes it causes.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;
use h2htalk_data::Family;
use h2htalk_data::suite::Lang;
use h2htalk_llm::ChatMessage;
use h2htalk_store::{Item, JudgeSession, PairJudgment, PairOutcome, Purpose, Record, Store};
use serde::{Deserialize, Serialize};

use crate::ask::{Asked, JudgeHandle, JudgeSettings, parse_strict};
use crate::judge::instructions;
use crate::texts::LangTexts;
use crate::{JudgeError, Result};
use h2htalk_stats::Proportion;
use h2htalk_stats::bt::{self, Comparison, Outcome, Ranking};
use h2htalk_stats::bt_controlled::{BiasFlags, length_bias};

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

/// Bootstrap resamples of the ranking when none are asked for.
pub const DEFAULT_BOOTSTRAP: usize = 1000;

/// How the intervals of a [`PairwiseReport`] are made (recorded in its JSON).
pub const INTERVALS: &str = "95% Wilson score intervals for proportions; a 95% percentile bootstrap over items \
                             for the Bradley-Terry scores; no interval over fewer than two items";

/// `k` of `n` with its 95% Wilson interval; no interval over fewer than two.
fn proportion(k: usize, n: usize) -> Proportion {
    Proportion::new(k, n)
}

/// The outcome seen from the other run.
fn flip(o: PairOutcome) -> PairOutcome {
    match o {
        PairOutcome::A => PairOutcome::B,
        PairOutcome::B => PairOutcome::A,
        other => other,
    }
}

/// Whether a stored judgment is final: asked again only when the judge call itself failed (or an
/// answer was missing, which is decided again without asking).
fn is_final(o: PairOutcome) -> bool {
    matches!(
        o,
        PairOutcome::A | PairOutcome::B | PairOutcome::Tie | PairOutcome::Inconsistent | PairOutcome::JudgeParseFailed
    )
}

/// A pair of runs as stored: the run ids in sorted order, so that `A B` and `B A` share their
/// judgments. `true` when `x` is the second.
fn stored_order<'a>(x: &'a str, y: &'a str) -> (&'a str, &'a str, bool) {
    if x <= y { (x, y, false) } else { (y, x, true) }
}

/// Win, tie and loss counts of one group of items, from `run_a`'s side.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    /// Items of this group in both runs.
    pub items: usize,
    /// Items whose two orders were both judged: `a_wins + b_wins + ties + inconsistent`.
    pub compared: usize,
    pub a_wins: usize,
    pub b_wins: usize,
    /// Both orders said `tie`.
    pub ties: usize,
    /// The two orders disagreed (the judge followed the position, not the answers): a tie in the
    /// rates and the ranking.
    pub inconsistent: usize,
    /// No usable answer from the judge after its retries.
    pub judge_parse_failed: usize,
    /// The judge call failed (network, server); asked again by the next comparison.
    pub judge_failed: usize,
    /// An answer missing, failed or empty in either run: not compared.
    pub missing: usize,
    /// In both runs but not judged yet (a comparison interrupted, or loaded before it ran).
    pub not_judged: usize,
    /// `a_wins / compared`.
    pub win: Proportion,
    /// `(ties + inconsistent) / compared`.
    pub tie: Proportion,
    /// `b_wins / compared`.
    pub loss: Proportion,
    /// `(a_wins + b_wins + ties) / compared`: how often both orders agreed.
    pub position_consistency: Proportion,
    /// `(a_wins + half of ties and inconsistent) / compared`; `None` when nothing was compared.
    pub a_win_rate: Option<f64>,
}

impl Tally {
    fn count(&mut self, outcome: Option<PairOutcome>) {
        self.items += 1;
        match outcome {
            None => self.not_judged += 1,
            Some(PairOutcome::A) => self.a_wins += 1,
            Some(PairOutcome::B) => self.b_wins += 1,
            Some(PairOutcome::Tie) => self.ties += 1,
            Some(PairOutcome::Inconsistent) => self.inconsistent += 1,
            Some(PairOutcome::JudgeParseFailed) => self.judge_parse_failed += 1,
            Some(PairOutcome::JudgeFailed) => self.judge_failed += 1,
            Some(PairOutcome::Missing) => self.missing += 1,
        }
    }

    fn finish(&mut self) {
        let n = self.a_wins + self.b_wins + self.ties + self.inconsistent;
        self.compared = n;
        self.win = proportion(self.a_wins, n);
        self.tie = proportion(self.ties + self.inconsistent, n);
        self.loss = proportion(self.b_wins, n);
        self.position_consistency = proportion(self.a_wins + self.b_wins + self.ties, n);
        self.a_win_rate =
            (n > 0).then(|| (self.a_wins as f64 + 0.5 * (self.ties + self.inconsistent) as f64) / n as f64);
    }
}

/// Two runs compared by one judge.
#[derive(Clone, Debug, Serialize)]
pub struct PairReport {
    pub run_a: String,
    pub run_b: String,
    /// The judge's settings and prompt hash for this pair, and when it started; `None` when this
    /// judge never judged the pair.
    pub session: Option<JudgeSession>,
    /// Over every item of `run_a` also in `run_b`.
    pub overall: Tally,
    /// Per family (only families with items).
    pub families: BTreeMap<Family, Tally>,
    /// Of the single-order verdicts that named a winner, those that named the answer shown first
    /// (about half for a judge without position bias).
    pub first_shown_preferred: Proportion,
    /// Items asked of the judge by this call.
    pub asked: usize,
    /// Items whose judgment was already stored (same judge, settings and prompts).
    pub reused: usize,
}

pub use h2htalk_stats::bt_controlled::LONGER_PREFERRED_FLAG;

/// How far a judge's verdicts follow what is not the answers' quality: their length and their
/// position (the judge card).
#[derive(Clone, Debug, Serialize)]
pub struct JudgeBias {
    /// The shares of the longer and the first-shown answer, their flags and γ.
    #[serde(flatten)]
    pub flags: BiasFlags,
    /// The runs ranked once length is paid for, with their raw rank beside.
    pub length_controlled: Vec<ControlledRank>,
}

impl std::ops::Deref for JudgeBias {
    type Target = BiasFlags;
    fn deref(&self) -> &BiasFlags {
        &self.flags
    }
}

/// A run's place in the length-controlled ranking.
#[derive(Clone, Debug, Serialize)]
pub struct ControlledRank {
    pub name: String,
    pub rank: usize,
    /// Log-strength with length held fixed, centred on 0.
    pub score: f64,
    /// Its rank in the raw Bradley–Terry ranking.
    pub raw_rank: usize,
}

impl JudgeBias {
    /// The runs whose rank length control changes.
    pub fn rank_changes(&self) -> Vec<&ControlledRank> {
        self.length_controlled.iter().filter(|c| c.rank != c.raw_rank).collect()
    }
}

/// Pairwise judgments of several runs by one judge.
#[derive(Clone, Debug, Serialize)]
pub struct PairwiseReport {
    pub judge: String,
    /// The judge's settings and prompt hash when every pair was judged with the same ones.
    pub settings: Option<JudgeSettings>,
    pub prompt_hash: Option<String>,
    pub runs: Vec<String>,
    /// Every pair of `runs`, in the order given (`run_a` named before `run_b`).
    pub pairs: Vec<PairReport>,
    /// Bradley–Terry over the runs (named by run id), from the compared items of every pair.
    pub ranking: Ranking,
    /// The judge's length and position bias, and the ranking with length controlled.
    pub bias: JudgeBias,
    /// How the intervals are made ([`INTERVALS`]).
    pub intervals: &'static str,
    /// Items asked of the judge by this call, and items whose judgment was already stored.
    pub asked: usize,
    pub reused: usize,
    /// Tokens of this call's judge answers (answers without reported usage count in `unknown_usage`).
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub unknown_usage: u64,
}

fn answer(r: &Record) -> Option<&str> {
    r.answer().filter(|t| !t.trim().is_empty())
}

/// Refuses fewer than two runs, a run named twice and a run not in the store.
fn check_runs(store: &Store, runs: &[String]) -> Result<()> {
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
    Ok(())
}

/// Compares every pair of `runs` item by item (both orders), storing each judgment as it arrives,
/// and ranks the runs. Judgments this judge already stored for a pair with the same settings and
/// prompts are reused, not asked again (those whose judge call failed are asked again); with other
/// settings or prompts the pair is judged afresh.
pub async fn pairwise_run(
    store: &mut Store,
    runs: &[String],
    judge: JudgeHandle<'_>,
    bootstrap_samples: usize,
    seed: u64,
) -> Result<PairwiseReport> {
    judge.settings.validate()?;
    check_runs(store, runs)?;
    let name = judge.name();
    let settings = serde_json::to_value(judge.settings).expect("judge settings serialise");
    let prompt_hash = judge.texts.hash().to_string();
    let mut data: BTreeMap<&str, Vec<Record>> = BTreeMap::new();
    for r in runs {
        data.insert(r, store.records(r)?);
    }
    let mut counts: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    let (mut input_tokens, mut output_tokens, mut unknown_usage) = (0, 0, 0u64);
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            // Judged and stored in the stored order: "A" is the first run of the sorted pair.
            let (first, second, _) = stored_order(&runs[i], &runs[j]);
            store.begin_pair_session(&name, first, second, &settings, &prompt_hash)?;
            let done: BTreeSet<String> = store
                .pair_judgments(&name, first, second)?
                .into_iter()
                .filter(|r| is_final(r.outcome))
                .map(|r| r.scenario_id)
                .collect();
            let in_second: BTreeMap<&str, &Record> =
                data[second].iter().map(|r| (r.item.scenario_id.as_str(), r)).collect();
            let (mut asked, mut reused) = (0, 0);
            let mut work: Vec<(&Item, Family, &str, &str)> = Vec::new();
            for (record, other) in
                data[first].iter().filter_map(|r| in_second.get(r.item.scenario_id.as_str()).map(|o| (r, *o)))
            {
                let item = &record.item;
                let family = Family::of_group(&item.task).ok_or_else(|| {
                    JudgeError::Settings(format!("run `{first}`: item `{}` has an unknown task", item.scenario_id))
                })?;
                match (answer(record), answer(other)) {
                    (Some(_), Some(_)) if done.contains(&item.scenario_id) => reused += 1,
                    (Some(a), Some(b)) => work.push((item, family, a, b)),
                    _ => {
                        let row = PairJudgment {
                            scenario_id: item.scenario_id.clone(),
                            outcome: PairOutcome::Missing,
                            order_ab: None,
                            order_ba: None,
                            error: Some("an answer is missing, failed or empty".into()),
                        };
                        store.put_pair_judgment(&name, first, second, &row)?;
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
            // This pair's tokens: recorded with the pair's first run (in stored order), see below.
            let mut pair_usage = h2htalk_store::CallUsage::default();
            while let Some((item, ab, ba)) = stream.next().await {
                let (ab, ba): (Asked<PairAnswer>, Asked<PairAnswer>) = (ab, ba);
                asked += 1;
                pair_usage.add(ab.usage());
                pair_usage.add(ba.usage());
                input_tokens += ab.input_tokens + ba.input_tokens;
                output_tokens += ab.output_tokens + ba.output_tokens;
                unknown_usage += u64::from(ab.unknown_usage + ba.unknown_usage);
                let (outcome, error) = match (&ab.result, &ba.result) {
                    (Ok(x), Ok(y)) => (combine(x.winner, y.winner), None),
                    (Err(f), _) | (_, Err(f)) => (f.pair_outcome(), Some(f.message())),
                };
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
                store.put_pair_judgment(&name, first, second, &row)?;
            }
            // A pair's judgments belong to both runs; their tokens are counted once, with the pair's
            // first run in stored order, under the purpose `pairwise:SECOND` (the report shows them
            // apart from the run's own cost).
            if pair_usage != h2htalk_store::CallUsage::default() {
                judge.record(store, first, Purpose::Pairwise { against: second.to_string() }, pair_usage)?;
            }
            counts.insert((runs[i].clone(), runs[j].clone()), (asked, reused));
        }
    }
    let mut report = load_with(store, &name, runs, bootstrap_samples, seed)?;
    for p in &mut report.pairs {
        let (asked, reused) = counts.get(&(p.run_a.clone(), p.run_b.clone())).copied().unwrap_or_default();
        p.asked = asked;
        p.reused = reused;
    }
    report.asked = report.pairs.iter().map(|p| p.asked).sum();
    report.reused = report.pairs.iter().map(|p| p.reused).sum();
    report.input_tokens = input_tokens;
    report.output_tokens = output_tokens;
    report.unknown_usage = unknown_usage;
    Ok(report)
}

/// [`load_with`] with [`DEFAULT_BOOTSTRAP`] resamples and seed 0.
pub fn load(store: &Store, judge: &str, runs: &[String]) -> Result<PairwiseReport> {
    load_with(store, judge, runs, DEFAULT_BOOTSTRAP, 0)
}

/// The pairwise report of `runs` by `judge` (`provider:model`, as [`PairwiseReport::judge`] names
/// it) from what the store holds, asking no model: for reports. Items of a pair the judge has not
/// judged count as `not_judged`; a pair never judged has no `session`. Judgments stored by a
/// release that did not record sessions are not read (their settings are unknown).
pub fn load_with(
    store: &Store,
    judge: &str,
    runs: &[String],
    bootstrap_samples: usize,
    seed: u64,
) -> Result<PairwiseReport> {
    check_runs(store, runs)?;
    let mut items: Vec<Vec<Item>> = Vec::new();
    // Each run's answer lengths in characters, by scenario (0 for a failed or missing answer).
    let mut lengths: Vec<BTreeMap<String, usize>> = Vec::new();
    for r in runs {
        items.push(store.items(r)?);
        let records = store.records(r)?;
        lengths.push(
            records
                .iter()
                .map(|rec| (rec.item.scenario_id.clone(), rec.answer().map_or(0, |t| t.chars().count())))
                .collect(),
        );
    }
    let mut pairs = Vec::new();
    // Each comparison with its answers' lengths.
    let mut comparisons: Vec<(Comparison, (f64, f64))> = Vec::new();
    let (mut all_first_k, mut all_first_n) = (0, 0);
    let mut sessions: Vec<(String, String)> = Vec::new();
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let (first, second, flipped) = stored_order(&runs[i], &runs[j]);
            let session = store.pair_session(judge, first, second)?;
            let mut rows: BTreeMap<String, PairJudgment> = BTreeMap::new();
            if let Some(s) = &session {
                sessions.push((s.settings.to_string(), s.prompt_hash.clone()));
                for mut row in store.pair_judgments(judge, first, second)? {
                    if flipped {
                        row.outcome = flip(row.outcome);
                        std::mem::swap(&mut row.order_ab, &mut row.order_ba);
                    }
                    rows.insert(row.scenario_id.clone(), row);
                }
            }
            let in_b: BTreeSet<&str> = items[j].iter().map(|it| it.scenario_id.as_str()).collect();
            let mut overall = Tally::default();
            let mut families: BTreeMap<Family, Tally> = BTreeMap::new();
            let (mut first_k, mut first_n) = (0, 0);
            for item in items[i].iter().filter(|it| in_b.contains(it.scenario_id.as_str())) {
                let family = Family::of_group(&item.task).ok_or_else(|| {
                    JudgeError::Settings(format!("run `{}`: item `{}` has an unknown task", runs[i], item.scenario_id))
                })?;
                let row = rows.get(&item.scenario_id);
                let outcome = row.map(|r| r.outcome);
                overall.count(outcome);
                families.entry(family).or_default().count(outcome);
                let bt_outcome = match outcome {
                    Some(PairOutcome::A) => Some(Outcome::AWins),
                    Some(PairOutcome::B) => Some(Outcome::BWins),
                    Some(PairOutcome::Tie | PairOutcome::Inconsistent) => Some(Outcome::Tie),
                    _ => None,
                };
                let len = |run: usize| lengths[run].get(&item.scenario_id).copied().unwrap_or(0) as f64;
                if let Some(o) = bt_outcome {
                    let c = Comparison { item: item.scenario_id.clone(), a: i, b: j, outcome: o };
                    comparisons.push((c, (len(i), len(j))));
                }
                for verdict in row.into_iter().flat_map(|r| [&r.order_ab, &r.order_ba]).flatten() {
                    match serde_json::from_value::<PairAnswer>(verdict.clone()).map(|a| a.winner) {
                        Ok(Winner::A) => (first_k, first_n) = (first_k + 1, first_n + 1),
                        Ok(Winner::B) => first_n += 1,
                        _ => {}
                    }
                }
            }
            overall.finish();
            families.values_mut().for_each(Tally::finish);
            (all_first_k, all_first_n) = (all_first_k + first_k, all_first_n + first_n);
            let reused = overall.items - overall.not_judged - overall.missing - overall.judge_failed;
            pairs.push(PairReport {
                run_a: runs[i].clone(),
                run_b: runs[j].clone(),
                session,
                overall,
                families,
                first_shown_preferred: proportion(first_k, first_n),
                asked: 0,
                reused,
            });
        }
    }
    // Comparisons in a fixed order, so the bootstrap does not depend on the store's order.
    comparisons.sort_by(|(x, _), (y, _)| (x.a, x.b, &x.item).cmp(&(y.a, y.b, &y.item)));
    let (comparisons, lengths): (Vec<Comparison>, Vec<(f64, f64)>) = comparisons.into_iter().unzip();
    let ranking = bt::rank(runs, &comparisons, bootstrap_samples, seed, 0.95);
    let length = length_bias(runs.len(), &comparisons, &lengths);
    let controlled = &length.controlled;
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| controlled.scores[b].total_cmp(&controlled.scores[a]).then(a.cmp(&b)));
    let length_controlled = order
        .iter()
        .enumerate()
        .map(|(r, &i)| ControlledRank {
            name: runs[i].clone(),
            rank: r + 1,
            score: controlled.scores[i],
            raw_rank: ranking.models.iter().find(|m| m.name == runs[i]).map_or(0, |m| m.rank),
        })
        .collect();
    let bias = JudgeBias { flags: BiasFlags::new(&length, all_first_k, all_first_n), length_controlled };
    sessions.sort();
    sessions.dedup();
    let (settings, prompt_hash) = match sessions.as_slice() {
        [(s, h)] => (serde_json::from_str(s).ok(), Some(h.clone())),
        _ => (None, None),
    };
    Ok(PairwiseReport {
        judge: judge.to_string(),
        settings,
        prompt_hash,
        runs: runs.to_vec(),
        reused: pairs.iter().map(|p| p.reused).sum(),
        pairs,
        ranking,
        bias,
        intervals: INTERVALS,
        asked: 0,
        input_tokens: 0,
        output_tokens: 0,
        unknown_usage: 0,
    })
}

/// The judges that judged at least one pair of `runs` pairwise, in first-seen order.
pub fn judges(store: &Store, runs: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let (first, second, _) = stored_order(&runs[i], &runs[j]);
            for judge in store.pair_judges(first, second)? {
                if !out.contains(&judge) {
                    out.push(judge);
                }
            }
        }
    }
    Ok(out)
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
