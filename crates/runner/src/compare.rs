//! Pairwise comparison of stored runs (`h2htalk compare`): the runs' protocols checked against each
//! other, the judge resolved as a run resolves its own, every pair judged in both orders (reusing
//! what this judge already stored) and ranked by Bradley–Terry.
//!
//! A sweep compares its runs by calling [`compare_runs`] with the ids of the runs it made; nothing
//! here knows about sweeps.

use std::fmt::Write as _;
use std::path::PathBuf;

use h2htalk_data::suite::embedded;
pub use h2htalk_judge::pairwise::DEFAULT_BOOTSTRAP;
use h2htalk_judge::pairwise::{JudgeBias, LONGER_PREFERRED_FLAG, PairReport, PairwiseReport, Tally, pairwise_run};
use h2htalk_judge::{JudgeHandle, JudgeSettings, JudgeTexts};
use h2htalk_stats::Proportion;
use h2htalk_store::protocol::ProtocolGroups;
use h2htalk_store::{CallUsage, JudgeSpec, ModelRequest, Prices, RunSpec, Store};
use serde::Serialize;

use crate::models::{CacheOptions, resolve};
use crate::{Result, RunError};

/// How to compare.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// The judge: its spec, endpoint, key variable, seed (also the bootstrap's) and answer length.
    pub judge: JudgeSpec,
    /// The model config file a judge named there is looked up in (default: ./h2htalk.toml).
    pub config: Option<PathBuf>,
    /// The suite whose judge texts are used (default: the first run's suite).
    pub suite_dir: Option<PathBuf>,
    /// Compare runs of different protocols (their differences are listed in the result).
    pub allow_mixed: bool,
    /// Bootstrap resamples of the Bradley–Terry intervals.
    pub bootstrap_samples: usize,
    /// The judgments go through the judge's Batch API, journaled under the compared runs.
    pub batch: bool,
    /// How the answer cache is used (default: on).
    pub cache: CacheOptions,
}

/// A comparison of runs.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// What differs between the runs' protocols; empty unless `allow_mixed` let them through.
    pub protocol_differences: Vec<String>,
    /// The judge's prices as configured (`None`: not set, as for `openai:NAME` on the command line).
    pub judge_prices: Option<Prices>,
    /// USD of this call's judge tokens; `None` when the price is not set or some answers came
    /// without usage (and tokens are not free): `judge_cost_note` says which.
    pub judge_cost_usd: Option<f64>,
    pub judge_cost_note: Option<String>,
    #[serde(flatten)]
    pub pairwise: PairwiseReport,
}

/// The stored specifications of `runs`, refusing a run not in the store.
fn specs(store: &Store, runs: &[String]) -> Result<Vec<RunSpec>> {
    runs.iter()
        .map(|r| {
            store.run(r)?.map(|row| row.spec).ok_or_else(|| {
                RunError::Usage(format!(
                    "run `{r}` is not in the store {}; `h2htalk runs list` shows the runs it holds",
                    store.path()
                ))
            })
        })
        .collect()
}

/// The runs' protocols compared with the report's check ([`h2htalk_store::protocol::ProtocolGroups`]):
/// one line per protocol after the first, naming its runs and every field that differs. Refused
/// (an error listing them) unless `allow_mixed`.
pub fn check_protocols(store: &Store, runs: &[String], allow_mixed: bool) -> Result<Vec<String>> {
    let specs = specs(store, runs)?;
    let groups = ProtocolGroups::of(runs.iter().map(String::as_str).zip(&specs));
    let lines = groups.differences();
    if groups.mixed() && !allow_mixed {
        return Err(RunError::Usage(format!(
            "these runs were made under {} different protocols, so their answers are not comparable item by item:\n  {}\n\
             compare them anyway with --allow-mixed",
            groups.groups.len(),
            lines.join("\n  ")
        )));
    }
    Ok(lines)
}

/// Compares every pair of `runs` (stored run ids, at least two) with the judge of `options`:
/// protocols checked first, then each pair judged in both orders, judgments this judge already
/// stored with the same settings and prompts reused, and the runs ranked. This is the entry point
/// for `h2htalk compare` and for a sweep's comparison of its runs.
pub async fn compare_runs(store: &mut Store, runs: &[String], options: &CompareOptions) -> Result<Comparison> {
    if runs.len() < 2 {
        return Err(RunError::Usage("compare needs at least two runs (`h2htalk runs list` shows them)".into()));
    }
    let specs = specs(store, runs)?;
    let protocol_differences = check_protocols(store, runs, options.allow_mixed)?;
    let j = &options.judge;
    if matches!(j.spec, h2htalk_llm::ModelRef::OpenAi(_)) && j.base_url.is_none() {
        return Err(RunError::Usage(format!(
            "--judge {}: give the judge's endpoint with --judge-base-url URL (e.g. http://127.0.0.1:8000/v1), or \
             name a judge of the model config file",
            j.spec
        )));
    }
    let request = ModelRequest {
        spec: j.spec.clone(),
        config: options.config.clone(),
        base_url: j.base_url.clone(),
        api_key_env: j.api_key_env.clone(),
        batch: options.batch,
    };
    let resolved = resolve(&request).map_err(|e| RunError::Model(format!("--judge {}: {e}", j.spec)))?;
    let scope = format!("compare:{}", runs.join(","));
    // A redacted run's answers are judged: what is kept of the judgments is masked too.
    let cache = CacheOptions { redact: specs.iter().any(|s| s.redact), ..options.cache.clone() };
    let model = resolved.model_for(std::path::Path::new(store.path()), &scope, &cache)?;
    let scheduler = resolved.scheduler();
    let mut settings = JudgeSettings::pinned(j.seed);
    if let Some(n) = j.max_tokens {
        settings.generation.max_tokens = n;
    }
    let suite_dir = embedded::or_embedded(options.suite_dir.as_deref().or(specs[0].suite.dir.as_deref()))?;
    let texts = JudgeTexts::load(&suite_dir)?;
    let handle = JudgeHandle {
        model: model.as_ref(),
        scheduler: &scheduler,
        settings: &settings,
        texts: &texts,
        prices: crate::assess::helper_prices(&j.spec, &resolved),
    };
    let pairwise = pairwise_run(store, runs, handle, options.bootstrap_samples, j.seed).await?;
    let usage = CallUsage {
        calls: 0,
        input_tokens: pairwise.input_tokens,
        output_tokens: pairwise.output_tokens,
        unknown_usage: pairwise.unknown_usage,
    };
    let (judge_cost_usd, judge_cost_note) = cost(handle.prices, usage);
    Ok(Comparison { protocol_differences, judge_prices: handle.prices, judge_cost_usd, judge_cost_note, pairwise })
}

/// The cost of `usage` at `prices`: `None` with the reason when the price is not set, or some
/// answers came without usage and tokens are not free (never a 0 for an unknown cost).
pub fn cost(prices: Option<Prices>, usage: CallUsage) -> (Option<f64>, Option<String>) {
    match prices {
        None => (None, Some("price not set".into())),
        Some(p) if usage.unknown_usage > 0 && !p.free() => (
            None,
            Some(format!(
                "unknown: {} answer(s) without usage; the known tokens cost {:.4} USD",
                usage.unknown_usage,
                p.cost(usage.input_tokens, usage.output_tokens)
            )),
        ),
        Some(p) => (Some(p.cost(usage.input_tokens, usage.output_tokens)), None),
    }
}

/// `0.0123 USD`, or the reason there is no cost.
pub fn cost_text(cost: Option<f64>, note: Option<&str>) -> String {
    cost.map_or_else(|| note.unwrap_or("unknown").to_string(), |c| format!("{c:.4} USD"))
}

fn pct(x: f64) -> String {
    format!("{:.1}", x * 100.0)
}

/// `k/n rate% [low, high]`, or `n/a` over nothing; the interval `n/a` over fewer than two.
fn prop(p: &Proportion) -> String {
    match p.rate {
        None => "n/a".into(),
        Some(r) => {
            let ci = p.ci95.map_or_else(|| "[n/a]".to_string(), |[lo, hi]| format!("[{}, {}]", pct(lo), pct(hi)));
            format!("{}/{} {}% {ci}", p.k, p.n, pct(r))
        }
    }
}

fn tally_row(out: &mut String, group: &str, t: &Tally) {
    let _ = writeln!(
        out,
        "  {group:<13} {:>5} {:>5}  {:<24} {:<24} {:<24} {:<24} {:>5} {:>5} {:>5} {:>5}",
        t.items,
        t.compared,
        prop(&t.win),
        prop(&t.tie),
        prop(&t.loss),
        prop(&t.position_consistency),
        t.judge_parse_failed,
        t.judge_failed,
        t.missing,
        t.not_judged,
    );
}

fn pair_table(out: &mut String, p: &PairReport) {
    let _ = writeln!(
        out,
        "\n{} (A) vs {} (B): {} item(s) in both; {} asked now, {} taken from the store",
        p.run_a, p.run_b, p.overall.items, p.asked, p.reused
    );
    let _ = writeln!(
        out,
        "  {:<13} {:>5} {:>5}  {:<24} {:<24} {:<24} {:<24} {:>5} {:>5} {:>5} {:>5}",
        "family",
        "items",
        "cmp",
        "A wins",
        "ties (incl. inconsist.)",
        "B wins",
        "both orders agree",
        "unpar",
        "fail",
        "miss",
        "todo"
    );
    for (family, t) in &p.families {
        tally_row(out, family.name(), t);
    }
    tally_row(out, "overall", &p.overall);
    let _ = writeln!(
        out,
        "  A's win rate (ties half): {}; inconsistent orders {}; verdicts for the answer shown first: {}",
        p.overall.a_win_rate.map_or_else(|| "n/a".to_string(), |r| format!("{}%", pct(r))),
        p.overall.inconsistent,
        prop(&p.first_shown_preferred)
    );
}

impl Comparison {
    /// The comparison as text for the terminal.
    pub fn table(&self) -> String {
        let r = &self.pairwise;
        let mut out = String::new();
        let settings = r.settings.as_ref().map_or_else(
            || "settings differ between pairs".to_string(),
            |s| {
                format!(
                    "seed {}, temperature {}, max tokens {}",
                    s.generation.seed.map_or_else(|| "none".to_string(), |x| x.to_string()),
                    s.generation.temperature,
                    s.generation.max_tokens
                )
            },
        );
        let _ = writeln!(
            out,
            "judge {} ({settings}; prompts {}); {} run(s), {} pair(s); {} item(s) asked now, {} taken from the store; \
             judge tokens {} in / {} out{}, cost {}; recorded with each pair's first run (purpose pairwise:OTHER)",
            r.judge,
            r.prompt_hash.as_deref().unwrap_or("differ between pairs"),
            r.runs.len(),
            r.pairs.len(),
            r.asked,
            r.reused,
            r.input_tokens,
            r.output_tokens,
            if r.unknown_usage > 0 { format!(" ({} answer(s) without usage)", r.unknown_usage) } else { String::new() },
            cost_text(self.judge_cost_usd, self.judge_cost_note.as_deref())
        );
        if !self.protocol_differences.is_empty() {
            let _ = writeln!(out, "mixed protocols (--allow-mixed):");
            for d in &self.protocol_differences {
                let _ = writeln!(out, "  {d}");
            }
        }
        let _ = writeln!(out, "counts k/n, rates in % with 95% Wilson intervals; todo = not judged yet");
        for p in &r.pairs {
            pair_table(&mut out, p);
        }
        let k = &r.ranking;
        let _ = writeln!(
            out,
            "\nBradley-Terry ranking over {} compared item(s) ({} comparisons; log-strength, {}% bootstrap interval over \
             items, {} resamples, seed {}):",
            k.items,
            k.comparisons,
            k.level * 100.0,
            k.bootstrap_samples,
            k.seed
        );
        let _ = writeln!(
            out,
            "  {:>4}  {:<28} {:>7}  {:<18} {:>6} {:>6} {:>6}",
            "rank", "run", "score", "95% interval", "wins", "losses", "ties"
        );
        for m in &k.models {
            let ci = match (m.low, m.high) {
                (Some(lo), Some(hi)) => format!("[{lo:+.3}, {hi:+.3}]"),
                _ => "n/a".to_string(),
            };
            let _ = writeln!(
                out,
                "  {:>4}  {:<28} {:>+7.3}  {:<18} {:>6} {:>6} {:>6}",
                m.rank, m.name, m.score, ci, m.wins, m.losses, m.ties
            );
        }
        judge_card(&mut out, &r.bias);
        out
    }
}

/// The judge card: length and position bias, and the ranking with length controlled.
fn judge_card(out: &mut String, b: &JudgeBias) {
    let flag = if b.prefers_longer {
        format!(" — prefers the longer answer more than {}% of the time", pct(LONGER_PREFERRED_FLAG))
    } else {
        String::new()
    };
    let position = if b.position_biased { " — the judge favours a position (the interval excludes 50%)" } else { "" };
    let _ = writeln!(
        out,
        "\njudge card: the longer answer won {} of the decided judgments between answers of different length{flag}; \
         the answer shown first won {} of the single-order verdicts{position}",
        prop(&b.longer_preferred),
        prop(&b.first_preferred)
    );
    let changes = b.rank_changes();
    let _ = writeln!(
        out,
        "length-controlled Bradley-Terry (length difference (len_A - len_B)/(len_A + len_B) as a covariate, \
         coefficient {:+.3}): {}",
        b.length_coefficient,
        if changes.is_empty() {
            "no rank changes".to_string()
        } else {
            format!("{} run(s) change rank", changes.len())
        }
    );
    let _ = writeln!(out, "  {:>4}  {:<28} {:>7}  {:>8}", "rank", "run", "score", "raw rank");
    for c in &b.length_controlled {
        let _ = writeln!(out, "  {:>4}  {:<28} {:>+7.3}  {:>8}", c.rank, c.name, c.score, c.raw_rank);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2htalk_data::{SapMode, Task};

    #[test]
    fn the_full_protocol_is_checked_naming_what_differs() {
        let a = h2htalk_testkit::spec("openai", "test", SapMode::On);
        // What the old check (suite, selection, templates) let through: other generation settings
        // and other judge texts.
        let mut b = a.clone();
        b.settings.max_tokens += 1;
        b.judge_texts_hash = Some("sha256:other".into());
        // The model under test and the SAP mode are what a comparison varies, never a difference.
        let mut c = a.clone();
        c.model.spec = "openai:other".parse().unwrap();
        c.sap.mode = SapMode::Off;
        let mut d = a.clone();
        d.selection.tasks = vec![Task::DialogueBase];
        let g = ProtocolGroups::of([("a", &a), ("b", &b), ("c", &c), ("d", &d)]);
        assert!(g.mixed());
        let lines = g.differences();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("run(s) b (protocol ") && lines[0].contains("differ from run(s) a, c"),
            "{lines:?}"
        );
        assert!(lines[0].contains("settings (") && lines[0].contains("judge_texts_hash ("), "{lines:?}");
        assert!(!lines[0].contains("selection"), "{lines:?}");
        assert!(lines[1].starts_with("run(s) d ") && lines[1].contains("selection ("), "{lines:?}");
        assert!(!ProtocolGroups::of([("a", &a), ("c", &c)]).mixed());
    }
}
