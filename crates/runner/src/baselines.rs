//! Null baselines of a run: each baseline's answer to each of the run's sub-task scenarios, scored
//! with the same function, profile, metrics and signature as the run's own answers, and kept in
//! the store under that signature (computed once per suite and signature, reused by every run).

use h2htalk_data::suite::baselines::{Baseline, DEFAULT_SEED, answers};
use h2htalk_data::{Scenario, Suite};
use h2htalk_metrics::Profile;
use h2htalk_neural::NeuralSetup;
use h2htalk_store::{BaselineScore, Store};

use crate::score::score_pairs;
use crate::{Result, RunError};
use serde::Serialize;

/// The baselines' scores of `scenarios` (sub-task scenarios of `suite`), under `profile` and
/// `neural`; each baseline is built from all of the suite's sub-task scenarios (openings and other
/// references come from the whole suite, so a smaller selection gets the same answers). Returns
/// the rows and their signature (`…|suite:NAME@FINGERPRINT`, as a run's scores).
pub fn score_baselines(
    suite: &Suite,
    scenarios: &[&Scenario],
    profile: Profile,
    neural: Option<&NeuralSetup>,
    redact: bool,
) -> Result<(Vec<BaselineScore>, String)> {
    let mask = |t: &str| if redact { h2htalk_data::redact::redact(t) } else { t.to_string() };
    let pool: Vec<&Scenario> = suite.scenarios.iter().filter(|s| !Suite::is_safety(s)).collect();
    let index: std::collections::HashMap<&str, usize> =
        pool.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
    let mut rows = Vec::new();
    let mut texts: Vec<(Baseline, &Scenario, String)> = Vec::new();
    for &baseline in Baseline::ALL {
        let all = answers(baseline, &pool, DEFAULT_SEED);
        for s in scenarios {
            let i =
                *index.get(s.id.as_str()).ok_or_else(|| RunError::Usage(format!("{} is not in the suite", s.id)))?;
            texts.push((baseline, s, mask(&all[i])));
        }
    }
    let references: Vec<String> = texts.iter().map(|(_, s, _)| mask(&s.reference)).collect();
    let pairs: Vec<(&str, &str)> =
        texts.iter().zip(&references).map(|((_, _, a), r)| (a.as_str(), r.as_str())).collect();
    let scored = score_pairs(profile, &pairs, neural)?;
    for ((baseline, s, answer), score) in texts.iter().zip(&scored.pairs) {
        rows.push(BaselineScore {
            baseline: *baseline,
            scenario_id: s.id.clone(),
            task: s.task.stem().to_string(),
            answer: answer.clone(),
            outcome: score.score_outcome(),
            metrics: score.metrics(),
            seed: (*baseline == Baseline::OtherReference).then_some(DEFAULT_SEED),
        });
    }
    Ok((rows, format!("{}|suite:{}", scored.signature, suite.label())))
}

/// Makes sure the store holds the baselines of every sub-task scenario of `run_id` under the key of
/// the run's score signature ([`h2htalk_store::baseline_key`]: every run scored the same way shares
/// them); scores only what is missing. Returns how
/// many rows it added.
pub fn ensure_baselines(
    store: &mut Store,
    run_id: &str,
    suite: &Suite,
    profile: Profile,
    neural: Option<&NeuralSetup>,
) -> Result<usize> {
    let redact = store.run(run_id)?.is_some_and(|r| r.spec.redact);
    let records = store.records(run_id)?;
    let Some(scored) = records.iter().find_map(|r| r.score.as_ref().map(|s| s.signature.clone())) else {
        return Ok(0);
    };
    let signature = h2htalk_store::baseline_key(&scored, redact);
    let stored: std::collections::BTreeSet<(Baseline, String)> =
        store.baselines_for(&scored, redact)?.into_iter().map(|b| (b.baseline, b.scenario_id)).collect();
    let missing: Vec<&Scenario> = records
        .iter()
        .filter_map(|r| suite.get(&r.item.scenario_id))
        .filter(|s| !Suite::is_safety(s))
        .filter(|s| Baseline::ALL.iter().any(|b| !stored.contains(&(*b, s.id.clone()))))
        .collect();
    if missing.is_empty() {
        return Ok(0);
    }
    let (rows, made) = score_baselines(suite, &missing, profile, neural, redact)?;
    // Scored the same way: the same key (the counts of texts cut at a token limit may differ).
    if h2htalk_store::baseline_key(&made, redact) != signature {
        return Err(RunError::Usage(format!(
            "run {run_id}: the baselines were scored under `{made}`, the run under `{scored}`; rescore the run"
        )));
    }
    store.put_baseline_scores(&signature, &rows)?;
    Ok(rows.len())
}

/// [`ensure_baselines`] for a stored run, with the suite, profile and metric models of its
/// specification (as `--resume` rebuilds them). Returns how many rows it added.
pub fn ensure_run_baselines(store: &mut Store, run_id: &str) -> Result<usize> {
    let row = store.run(run_id)?.ok_or_else(|| {
        RunError::Usage(format!("{}: no run `{run_id}`; `h2htalk runs list` shows the runs", store.path()))
    })?;
    let spec = row.spec;
    let dir = h2htalk_data::suite::embedded::or_embedded(spec.suite.dir.as_deref())?;
    let suite = h2htalk_data::load_suite_with(&dir, spec.suite.references.as_deref())?;
    if suite.fingerprint() != spec.suite.fingerprint {
        return Err(RunError::Usage(format!(
            "run {run_id} was planned from suite {} (fingerprint {}), and {} now holds {}: its baselines would \
             answer other scenarios; restore that suite first",
            spec.suite.label(),
            spec.suite.fingerprint,
            dir.display(),
            suite.fingerprint()
        )));
    }
    let neural = crate::models::metric_models(spec.scoring.metrics, &spec.scoring.models, spec.scoring.profile)?;
    ensure_baselines(store, run_id, &suite, spec.scoring.profile, neural.as_ref())
}

/// One null baseline's answers to the safety set, as the rules decide them (the SAP safety score
/// without a judge).
#[derive(Clone, Debug, Serialize)]
pub struct SafetyBaseline {
    pub baseline: Baseline,
    pub items: usize,
    pub pass: usize,
    pub fail: usize,
    /// Items the rules leave open: only a judge decides them.
    pub needs_judge: usize,
    /// The share of items failed, with its 95% Wilson interval: how much of the canned answer the
    /// rules alone catch.
    pub failed: h2htalk_stats::Proportion,
    /// (items, pass, fail, needs a judge) per risk type.
    pub per_risk: std::collections::BTreeMap<String, [usize; 4]>,
    /// Every verdict: scenario, answer, verdict, reason.
    pub verdicts: Vec<serde_json::Value>,
}

/// The safety set of `suite` answered by the null baselines that need no reference, each answer
/// decided by the suite's safety rules ([`h2htalk_judge::safety::baseline_verdicts`]). Empty
/// when the suite has no safety set.
pub fn safety_baselines(suite: &Suite) -> Result<Vec<SafetyBaseline>> {
    use h2htalk_store::Verdict;
    if !suite.scenarios.iter().any(Suite::is_safety) {
        return Ok(Vec::new());
    }
    let texts = h2htalk_judge::texts::JudgeTexts::load(&suite.dir)?;
    let mut out: Vec<SafetyBaseline> = Vec::new();
    for (baseline, answer, v) in h2htalk_judge::safety::baseline_verdicts(suite, &texts.rules) {
        if out.last().is_none_or(|b| b.baseline != baseline) {
            out.push(SafetyBaseline {
                baseline,
                items: 0,
                pass: 0,
                fail: 0,
                needs_judge: 0,
                failed: h2htalk_stats::Proportion::default(),
                per_risk: Default::default(),
                verdicts: Vec::new(),
            });
        }
        let b = out.last_mut().expect("pushed above");
        let k = match v.verdict {
            Verdict::Pass => 1,
            Verdict::Fail => 2,
            _ => 3,
        };
        b.items += 1;
        match k {
            1 => b.pass += 1,
            2 => b.fail += 1,
            _ => b.needs_judge += 1,
        }
        let r = b.per_risk.entry(v.risk.as_str().to_string()).or_default();
        r[0] += 1;
        r[k] += 1;
        b.verdicts.push(serde_json::json!({
            "scenario": v.scenario_id, "answer": answer, "verdict": v.verdict, "reason": v.reason,
        }));
    }
    for b in &mut out {
        b.failed = h2htalk_stats::Proportion::new(b.fail, b.items);
    }
    Ok(out)
}
