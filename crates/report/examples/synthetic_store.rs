//! Writes synthetic runs into a run store, for the browser test and for trying reports at scale:
//! `cargo run -p h2htalk-report --example synthetic_store -- DB [--runs N] [--suite DIR] [--seed S]`.
//!
//! Each run covers the whole scenario suite with its safety set (real prompts rendered from the
//! suite's templates, real references). Its answers are made from the references: each clause of
//! the reference is kept with the model's skill, otherwise replaced by a clause of another
//! scenario of the same sub-task, so the texts are realistic Chinese (and English) of varied
//! quality. A few answers fail (with a reason) or are empty, as in real runs. The answers are scored
//! with the real lexical metrics under the `strict` profile. The provenance says `synthetic`.
//! Runs come in SAP on/off pairs of one synthetic model each. Every run also gets the assessments a
//! report shows ([`add_assessments`]): real format checks of its answers, synthetic rubric scores
//! and safety verdicts; the first four runs also get a second rubric judge (a panel, with its
//! agreement) and simulated conversations of real simulator profiles, and the first two a judge
//! validity check (the others show those sections as not run).

use std::path::PathBuf;

use h2htalk_data::{Suite, load_suite};
use h2htalk_llm::{FaultKind, FinishReason, GenerationSettings, ModelId};
use h2htalk_metrics::{Lexical, Outcome, Profile, Tokenizer, lexical_signature, score_pair};
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
    let judge_texts = h2htalk_judge::JudgeTexts::load(&suite_dir)?;
    let mut store = Store::open(&db)?;
    let tokenizer = Tokenizer::global();
    let profile = Profile::Strict;
    let signature = lexical_signature(profile);
    let mut rng = fastrand::Rng::with_seed(seed);
    let first = store.runs()?.into_iter().next().map(|r| r.spec);
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
        let mut provenance = RunSpec {
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
            model: ModelRequest {
                spec: h2htalk_llm::ModelRef::Named(format!("synthetic:{name}")),
                config: None,
                base_url: None,
                api_key_env: None,
                batch: false,
            },
            model_id: ModelId { provider: "synthetic".into(), name, endpoint: format!("synthetic://seed/{seed}") },
            model_config: Some(json!({"synthetic": true, "skill": skill})),
            settings: GenerationSettings::default(),
            prices: Some(Prices::default()),
            max_cost_usd: None,
            batch_price_factor: None,
            scoring: ScoringSpec {
                profile,
                signature: signature.clone(),
                metrics: MetricSet::Lexical,
                models: MetricModels::default(),
            },
            redact: false,
            judge: None,
            panel: vec![],
            judge_validity: None,
            simulation: None,
            memory: None,
            sample: 0,
        };
        // Under the protocol of the store's first run, when it has one, so that a report ranks the
        // synthetic runs with it (runs of different protocols are only ranked together when asked).
        if let Some(first) = &first {
            provenance.suite = first.suite.clone();
            provenance.selection = first.selection.clone();
            provenance.templates_hash = first.templates_hash.clone();
            provenance.judge_texts_hash = first.judge_texts_hash.clone();
            provenance.sap.version = first.sap.version.clone();
            provenance.sap.hash = first.sap.hash.clone();
            provenance.settings = first.settings.clone();
            provenance.scoring = first.scoring.clone();
            provenance.redact = first.redact;
            provenance.judge = first.judge.clone();
            provenance.simulation = first.simulation.clone();
        }
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
        add_assessments(&mut store, &id, &suite, &judge_texts, skill, r, &mut rng)?;
        total += items.len();
        println!("{id}: {} items, {} generated or failed, {} scored", items.len(), gens.len(), scores.len());
    }
    println!("{runs} synthetic runs, {total} items, in {}", db.display());
    Ok(())
}

/// The assessments of run `id` (number `r`): format checks by the judge crate's own checks, rubric
/// scores and safety verdicts of a synthetic judge drawn around `skill` (with a few unparsable
/// answers and failed requests, as real judges give); for the first four runs, a second judge that
/// mostly agrees with the first (a panel) and four simulated conversations; for the first two, the
/// judge validity check of the first judge (references against degraded copies, a few ties,
/// unparsable answers and failed requests).
fn add_assessments(
    store: &mut Store,
    id: &str,
    suite: &Suite,
    texts: &h2htalk_judge::JudgeTexts,
    skill: f64,
    r: usize,
    rng: &mut fastrand::Rng,
) -> Result<(), Box<dyn std::error::Error>> {
    use h2htalk_store::{JudgeOutcome, JudgeScore, SafetyVerdict, SessionKind, SimulationOutcome, Verdict};
    h2htalk_judge::check_run(store, id, suite)?;
    let judge = "synthetic:judge";
    let settings = json!({"synthetic": true});
    store.begin_judge_session(id, SessionKind::Rubric, judge, &settings, texts.hash())?;
    // The panel's second judge: the first judge's scores moved by at most one point, with its own
    // unparsable answers.
    let second = (r < 4).then_some("synthetic:judge-b");
    if let Some(b) = second {
        store.begin_judge_session(id, SessionKind::Rubric, b, &settings, texts.hash())?;
    }
    let records = store.records(id)?;
    let mut verdicts = Vec::new();
    for rec in &records {
        let item = &rec.item;
        let scenario = suite.get(&item.scenario_id).ok_or("a stored item is in the suite")?;
        let Some(answer) = rec.answer() else { continue };
        if item.task == "sap_safety" {
            let Some(risk) = scenario.tags.risk else { continue };
            let draw = rng.f64();
            let verdict = if answer.trim().is_empty() || draw < 0.02 {
                Verdict::Fail
            } else if draw < 0.04 {
                Verdict::JudgeParseFailed
            } else if draw < 0.05 {
                Verdict::Undecided
            } else if rng.f64() < skill + 0.1 {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            verdicts.push(SafetyVerdict {
                scenario_id: item.scenario_id.clone(),
                lang: item.lang,
                risk,
                verdict,
                rules: vec![],
                judgment: None,
                reason: Some("synthetic".into()),
            });
            continue;
        }
        let family = h2htalk_data::Family::of_group(&item.task).ok_or("a sub-task has a family")?;
        let criteria = texts.lang(item.lang).criteria(family);
        let draw = rng.f64();
        let mut row =
            JudgeScore { attempts: 1, ..JudgeScore::new(&item.scenario_id, &item.task, family, JudgeOutcome::Scored) };
        if answer.trim().is_empty() {
            row.outcome = JudgeOutcome::EmptyAnswer;
        } else if draw < 0.02 {
            row.outcome = JudgeOutcome::JudgeParseFailed;
            row.error = Some("the answer was not the asked JSON after 3 tries".into());
        } else if draw < 0.03 {
            row.outcome = JudgeOutcome::JudgeFailed;
            row.error = Some("server_error: HTTP 503".into());
        } else {
            let scores: std::collections::BTreeMap<String, u8> = criteria
                .iter()
                .map(|c| (c.id.clone(), (1.0 + 9.0 * skill + 2.0 * (rng.f64() - 0.5)).round().clamp(1.0, 10.0) as u8))
                .collect();
            row.mean = Some(scores.values().map(|v| f64::from(*v)).sum::<f64>() / scores.len() as f64);
            row.scores = Some(scores);
            row.reason = Some("synthetic".into());
        }
        store.put_judge_score(id, judge, &row)?;
        if let Some(b) = second {
            let mut row_b = row.clone();
            if row.outcome == JudgeOutcome::Scored && rng.f64() < 0.03 {
                row_b.outcome = JudgeOutcome::JudgeParseFailed;
                row_b.scores = None;
                row_b.mean = None;
                row_b.error = Some("the answer was not the asked JSON after 3 tries".into());
            } else if let Some(scores) = &row.scores {
                let moved: std::collections::BTreeMap<String, u8> = scores
                    .iter()
                    .map(|(c, v)| (c.clone(), (i16::from(*v) + rng.i16(-1..=1)).clamp(1, 10) as u8))
                    .collect();
                row_b.mean = Some(moved.values().map(|v| f64::from(*v)).sum::<f64>() / moved.len() as f64);
                row_b.scores = Some(moved);
            }
            store.put_judge_score(id, b, &row_b)?;
        }
    }
    if r < 2 {
        // The validity check of the first judge on every third sub-task item: the reference scores
        // about 7.5, a degraded copy less by an amount that depends on the degradation (a
        // persona break is the hardest to see), so shares differ between lines.
        use h2htalk_store::Degradation;
        use h2htalk_store::{ValidityOutcome, ValidityRow};
        let mut rows = Vec::new();
        for rec in records.iter().filter(|r| r.item.task != "sap_safety").step_by(3) {
            let item = &rec.item;
            let family = h2htalk_data::Family::of_group(&item.task).ok_or("a sub-task has a family")?;
            for d in Degradation::ALL.iter().copied().filter(|d| d.applies_to(family)) {
                let drop = match d {
                    Degradation::OtherReference => 3.0,
                    Degradation::Truncation => 2.0,
                    Degradation::PersonaBreak => 0.5,
                    Degradation::FabricatedMemory => 1.0,
                    Degradation::GenericComfort => 2.5,
                    Degradation::Echo => 1.5,
                } * (0.5 + skill);
                let draw = rng.f64();
                let (outcome, means) = if draw < 0.01 {
                    (ValidityOutcome::NotApplicable, None)
                } else if draw < 0.03 {
                    (ValidityOutcome::JudgeParseFailed, None)
                } else if draw < 0.04 {
                    (ValidityOutcome::JudgeFailed, None)
                } else {
                    let reference = (7.5 + 2.0 * (rng.f64() - 0.5) * 2.0).round().clamp(1.0, 10.0);
                    let degraded = (reference - drop + 3.0 * (rng.f64() - 0.5) * 2.0).round().clamp(1.0, 10.0);
                    (ValidityOutcome::Compared, Some((reference, degraded)))
                };
                rows.push(ValidityRow {
                    scenario_id: item.scenario_id.clone(),
                    degradation: d,
                    task: item.task.clone(),
                    family,
                    lang: item.lang,
                    outcome,
                    reference_mean: means.map(|m| m.0),
                    degraded_mean: means.map(|m| m.1),
                    error: matches!(outcome, ValidityOutcome::JudgeFailed).then(|| "server_error: HTTP 503".into()),
                });
            }
        }
        store.replace_validity(id, judge, &rows)?;
    }
    store.begin_judge_session(id, SessionKind::Safety, judge, &settings, texts.hash())?;
    store.replace_safety_verdicts(id, judge, &verdicts)?;
    if r < 4 {
        for idx in 0..4 {
            let mut state = 2 + rng.u8(0..2);
            let mut sessions: Vec<Vec<u8>> = Vec::new();
            for _ in 1..=3 {
                let turns: Vec<u8> = (0..3)
                    .map(|_| {
                        if rng.f64() < skill {
                            state = (state + 1).min(5);
                        } else if rng.f64() < 0.3 {
                            state = state.saturating_sub(1).max(1);
                        }
                        state
                    })
                    .collect();
                sessions.push(turns);
            }
            let judged = idx != 3;
            let recalled: Vec<bool> = (0..3).map(|_| rng.f64() < skill).collect();
            let facts: Vec<(&str, Option<&str>, bool, Option<bool>)> =
                ["same_session", "next_session", "three_sessions"]
                    .iter()
                    .zip(&recalled)
                    .map(|(d, r)| (*d, Some(*d), true, Some(*r)))
                    .collect();
            let needs = judged.then(|| (rng.f64() < skill, rng.f64() < skill * 0.8));
            let states: Vec<&[u8]> = sessions.iter().map(Vec::as_slice).collect();
            // Real profiles (simulator/<id>.json of the suite): the report groups the
            // conversations by their attachment style and language.
            let profile = [
                "en-shen-yan-anxious-01",
                "zh-shen-yan-secure-02",
                "en-xia-xiaoman-avoidant-03",
                "zh-xia-xiaoman-fearful-04",
            ][idx];
            let mut sim =
                h2htalk_testkit::simulation(idx, profile, SimulationOutcome::Completed, &states, &facts, needs);
            if !judged {
                sim.needs = h2htalk_store::NeedsOutcome::JudgeParseFailed;
            }
            sim.companion = id.to_string();
            sim.simulator = "synthetic:simulator".into();
            sim.judge = Some(judge.into());
            sim.created_at = h2htalk_store::now_utc();
            store.put_simulation(id, &sim)?;
        }
    }
    Ok(())
}
