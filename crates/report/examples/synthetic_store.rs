//! Writes synthetic runs into a run store, for the browser test and for trying reports at scale:
//! `cargo run -p h2htalk-report --example synthetic_store -- DB [--runs N] [--suite DIR] [--seed S]`.
//!
//! Each run covers the whole scenario suite with its safety set (real prompts rendered from the
//! suite's templates, real references). Its answers are made from the references: each clause of
//! the reference is kept with the model's skill, otherwise replaced by a clause of another
//! scenario of the same sub-task, so the texts are realistic Chinese (and English) of varied
//! quality. A few answers fail (with a reason) or are empty, as in real runs. The answers are scored
//! with the real lexical metrics under the `strict` profile. The provenance says `synthetic`.
//! Runs come in SAP on/off pairs of one synthetic model each.

use std::path::PathBuf;

use h2htalk_data::{Suite, load_suite};
use h2htalk_metrics::{Lexical, Outcome, Profile, Tokenizer, lexical_signature, score_pair};
use h2htalk_llm::{FaultKind, FinishReason, GenerationSettings, ModelSpec};
use h2htalk_prompt::{Prompts, SapMode};
use h2htalk_store::{
    Generation as GenerationRow, GenerationStatus, Item as ItemRow, MetricModels, MetricSet, ModelRequest, Prices,
    RunSpec, RunStatus, SapRef, Score as ScoreRow, ScoreOutcome, ScoringSpec, Selection, Store, SuiteRef,
};
use serde_json::json;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn clauses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if "，。！？；、,.!?;\n".contains(c) {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut db: Option<PathBuf> = None;
    let mut runs = 18usize;
    let mut seed = 7u64;
    let mut suite_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().ok_or("--runs needs a number")?.parse()?,
            "--seed" => seed = args.next().ok_or("--seed needs a number")?.parse()?,
            "--suite" => suite_dir = args.next().ok_or("--suite needs a directory")?.into(),
            _ if db.is_none() && !a.starts_with('-') => db = Some(a.into()),
            _ => {
                return Err(format!(
                    "unexpected argument `{a}`; usage: synthetic_store DB [--runs N] [--suite DIR] [--seed S]"
                )
                .into());
            }
        }
    }
    let db = db.ok_or("usage: synthetic_store DB [--runs N] [--suite DIR] [--seed S]")?;
    let suite = load_suite(&suite_dir)?;
    let prompts = Prompts::load(&suite_dir)?;
    let mut store = Store::open(&db)?;
    let tokenizer = Tokenizer::global();
    let profile = Profile::Strict;
    let signature = lexical_signature(profile);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut total = 0;
    for r in 0..runs {
        let model = r / 2;
        let sap = if r % 2 == 0 { SapMode::On } else { SapMode::Off };
        // Skill from 0.25 to 0.85 across models; SAP on helps a little.
        let skill =
            0.25 + 0.6 * (model as f64 / (runs / 2).max(1) as f64) + if sap == SapMode::On { 0.03 } else { 0.0 };
        let id = format!("synthetic-{seed}-{r:02}");
        let mut items = Vec::new();
        for s in &suite.scenarios {
            let safety = Suite::is_safety(s);
            let messages = prompts.render(&suite, s, sap)?;
            items.push(ItemRow {
                scenario_id: s.id.clone(),
                task: if safety { "sap_safety".into() } else { s.task.stem().into() },
                lang: s.lang,
                ord: items.len(),
                prompt: messages,
                reference: s.reference.clone(),
            });
        }
        let name = format!("model-{}", (b'a' + model as u8) as char);
        let provenance = RunSpec {
            h2htalk_version: h2htalk_metrics::VERSION.to_string(),
            suite: SuiteRef {
                dir: Some(suite.dir.clone()),
                fingerprint: suite.fingerprint().to_string(),
                name: Some(suite.name.clone()),
                references: None,
            },
            selection: Selection { tasks: vec![], limit: None, safety: true },
            templates_hash: prompts.template_hash().to_string(),
            judge_texts_hash: None,
            sap: SapRef { mode: sap, version: prompts.sap().version.clone(), hash: prompts.sap().hash() },
            model: ModelRequest { spec: format!("synthetic:{name}"), config: None, base_url: None, api_key_env: None },
            model_id: ModelSpec { provider: "synthetic".into(), name, endpoint: format!("synthetic://seed/{seed}") },
            model_config: Some(json!({"synthetic": true, "skill": skill})),
            settings: GenerationSettings::default(),
            prices: Prices::default(),
            max_cost_usd: None,
            scoring: ScoringSpec {
                profile,
                signature: signature.clone(),
                metrics: MetricSet::Lexical,
                models: MetricModels::default(),
            },
            redact: false,
            judge: None,
            simulation: None,
        };
        store.create_run(&id, &provenance, &items)?;
        // The last run stops early: its last 20 items stay pending.
        let stop_at = if r + 1 == runs { items.len().saturating_sub(20) } else { items.len() };
        let mut gens = Vec::new();
        let mut scores = Vec::new();
        for it in &items[..stop_at] {
            let draw = rng.f64();
            let (status, text, error) = if draw < 0.01 {
                (
                    GenerationStatus::Failed,
                    None,
                    Some((FaultKind::ContentFilter, "the provider refused the answer (finish_reason content_filter)")),
                )
            } else if draw < 0.015 {
                (GenerationStatus::Generated, Some(String::new()), None)
            } else {
                let same_task: Vec<&ItemRow> =
                    items.iter().filter(|o| o.task == it.task && o.lang == it.lang).collect();
                let mut out = String::new();
                for c in clauses(&it.reference) {
                    if rng.f64() < skill {
                        out.push_str(&c);
                    } else {
                        let other = same_task[rng.usize(..same_task.len())];
                        let oc = clauses(&other.reference);
                        out.push_str(&oc[rng.usize(..oc.len())]);
                    }
                }
                (GenerationStatus::Generated, Some(out), None)
            };
            gens.push(GenerationRow {
                scenario_id: it.scenario_id.clone(),
                status,
                text: text.clone(),
                finish_reason: text.as_ref().map(|_| FinishReason::Stop),
                input_tokens: Some(it.prompt.iter().map(|m| m.content.chars().count() as u64).sum::<u64>() / 2),
                output_tokens: Some(text.as_ref().map_or(0, |t| t.chars().count() as u64)),
                latency_ms: 200.0 + 800.0 * rng.f64(),
                attempts: 1,
                error_kind: error.map(|e| e.0),
                error_message: error.map(|e| e.1.to_string()),
                faults: vec![],
            });
            if let Some(text) = text {
                let outcome = score_pair(tokenizer, profile, &text, &it.reference);
                let metrics = match outcome.scores() {
                    Some(s) => Lexical::NAMES.iter().zip(s.values()).map(|(n, v)| ((*n).to_string(), v)).collect(),
                    None => Default::default(),
                };
                let outcome = match outcome {
                    Outcome::Scored(_) => ScoreOutcome::Scored,
                    Outcome::EmptyPrediction => ScoreOutcome::EmptyPrediction,
                    Outcome::Dropped(_) => ScoreOutcome::Dropped,
                };
                scores.push(ScoreRow {
                    scenario_id: it.scenario_id.clone(),
                    outcome,
                    metrics,
                    signature: signature.clone(),
                });
            }
        }
        store.put_generations(&id, &gens, false)?;
        store.put_scores(&id, &scores)?;
        store.set_status(&id, if stop_at < items.len() { RunStatus::Interrupted } else { RunStatus::Complete })?;
        total += items.len();
        println!("{id}: {} items, {} generated or failed, {} scored", items.len(), gens.len(), scores.len());
    }
    println!("{runs} synthetic runs, {total} items, in {}", db.display());
    Ok(())
}
