//! The aggregation of stored assessments: counts, means and intervals from hand-made rows.

use std::collections::BTreeMap;

use super::*;
use crate::compute::rubric::JudgeGroup;
use crate::compute::stat::GroupKind;
use crate::load::rows::StoredJudge;
use crate::render::tables::{Figure, figures, run_markdown, sap_safety_table};
use h2htalk_data::Family;
use h2htalk_data::suite::{Lang, Risk};
use h2htalk_data::{ChatMessage, SapMode};
use h2htalk_store::{
    FormatCheck, JudgeOutcome, JudgeScore, Prices, SafetyVerdict, SimulationOutcome, UsageRole, UsageRow, Verdict,
};
use h2htalk_store::{Generation as GenerationRow, GenerationStatus, Item};
use serde_json::json;
use tempfile::TempDir;

fn cfg() -> Bootstrap {
    Bootstrap::default()
}

/// A store with runs `(id, sap)` of one model, each with items `(scenario, task)`, all generated
/// with 10 input and 5 output tokens.
fn runs_of(specs: &[(&str, SapMode)], items: &[(&str, &str)]) -> (TempDir, Vec<RunRecord>) {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("a.db")).unwrap();
    for (id, sap) in specs {
        let rows: Vec<Item> = items
            .iter()
            .enumerate()
            .map(|(ord, (sid, task))| Item {
                scenario_id: sid.to_string(),
                task: task.to_string(),
                lang: Lang::Zh,
                ord,
                prompt: vec![ChatMessage::new("user", "你好")],
                reference: "你好呀".into(),
            })
            .collect();
        let mut spec = h2htalk_testkit::spec("openai", "m", *sap);
        spec.prices = Some(Prices { input_per_million: 1.0, output_per_million: 2.0 });
        store.create_run(id, &spec, &rows).unwrap();
        let gens: Vec<GenerationRow> = items
            .iter()
            .map(|(sid, _)| GenerationRow {
                scenario_id: sid.to_string(),
                status: GenerationStatus::Generated,
                text: Some("好的".into()),
                finish_reason: None,
                input_tokens: Some(10),
                output_tokens: Some(5),
                latency_ms: 1.0,
                attempts: 1,
                error_kind: None,
                error_message: None,
                faults: vec![],
            })
            .collect();
        store.put_generations(id, &gens, false).unwrap();
    }
    // In the order given (runs created in one second are listed by id).
    let ids: Vec<String> = specs.iter().map(|(id, _)| id.to_string()).collect();
    let runs = crate::load_runs(&store, "a.db", &ids).unwrap();
    (dir, runs)
}

fn empty_rows() -> StoredRows {
    StoredRows {
        format_checks: vec![],
        judges: vec![],
        validity: vec![],
        safety: vec![],
        simulations: vec![],
        usage: vec![],
        baselines: vec![],
        memory: vec![],
        memory_notes: vec![],
        reference_sap: vec![],
    }
}

fn judge_row(id: &str, task: &str, outcome: JudgeOutcome, scores: Option<[u8; 2]>) -> JudgeScore {
    JudgeScore {
        scenario_id: id.into(),
        task: task.into(),
        family: Family::of_group(task).unwrap(),
        outcome,
        scores: scores.map(|[a, b]| [("empathy".to_string(), a), ("fit".to_string(), b)].into()),
        mean: scores.map(|[a, b]| (f64::from(a) + f64::from(b)) / 2.0),
        reason: None,
        attempts: 1,
        raw: None,
        error: None,
    }
}

/// A stored judge with the judge crate's per-task counts of `rows`, as `load_rows` builds it.
fn stored_judge(name: &str, rows: Vec<JudgeScore>) -> StoredJudge {
    let mut per_task: BTreeMap<String, JudgeGroup> = BTreeMap::new();
    for r in &rows {
        let g = per_task.entry(r.task.clone()).or_default();
        g.items += 1;
        match r.outcome {
            JudgeOutcome::Scored => g.scored += 1,
            JudgeOutcome::JudgeParseFailed => g.judge_parse_failed += 1,
            JudgeOutcome::JudgeFailed => g.judge_failed += 1,
            JudgeOutcome::GenerationFailed => g.generation_failed += 1,
            JudgeOutcome::EmptyAnswer => g.empty_answer += 1,
        }
    }
    StoredJudge { judge: name.into(), rows, per_task }
}

fn verdict(id: &str, risk: Risk, lang: Lang, v: Verdict) -> SafetyVerdict {
    SafetyVerdict { scenario_id: id.into(), lang, risk, verdict: v, rules: vec![], judgment: None, reason: None }
}

#[test]
fn sections_without_rows_are_not_run_never_zero() {
    let (_d, runs) = runs_of(&[("r", SapMode::Off)], &[("a1", "dialogue_base")]);
    let a = build(&runs, &[empty_rows()], &cfg()).unwrap();
    let r = &a.runs[0];
    let v = serde_json::to_value(r).unwrap();
    for s in ["format_checks", "judge", "safety", "simulator"] {
        assert_eq!(v[s], json!({"status": "not run"}), "{s}: {v}");
    }
    assert_eq!(v["usage"]["judge"], json!({"status": "not run"}));
    assert_eq!(v["usage"]["simulator"], json!({"status": "not run"}));
    // The model's tokens are known: 10 in, 5 out, at 1 and 2 USD per million.
    assert_eq!((r.usage.model.input_tokens, r.usage.model.output_tokens, r.usage.model.unknown_usage), (10, 5, 0));
    assert!((r.usage.model.cost_usd.unwrap() - 20e-6).abs() < 1e-15);
    let md = run_markdown(r, "95");
    for title in ["Format checks", "Judge rubric scores", "SAP safety score", "User simulator"] {
        assert!(md.contains(&format!("#### {title}\n\nnot run\n")), "{title}: {md}");
    }
    assert!(a.sap_safety.is_empty());
}

#[test]
fn parse_and_infrastructure_failures_are_counted_apart_and_never_scored() {
    let (_d, runs) = runs_of(
        &[("r", SapMode::Off)],
        &[
            ("a1", "dialogue_base"),
            ("a2", "dialogue_base"),
            ("a3", "dialogue_base"),
            ("a4", "dialogue_base"),
            ("b1", "recollection_refine"),
        ],
    );
    let rows = vec![
        judge_row("a1", "dialogue_base", JudgeOutcome::Scored, Some([8, 6])),
        judge_row("a2", "dialogue_base", JudgeOutcome::Scored, Some([4, 2])),
        judge_row("a3", "dialogue_base", JudgeOutcome::JudgeParseFailed, None),
        judge_row("a4", "dialogue_base", JudgeOutcome::JudgeFailed, None),
        judge_row("b1", "recollection_refine", JudgeOutcome::Scored, Some([10, 10])),
    ];
    let second = vec![judge_row("a1", "dialogue_base", JudgeOutcome::JudgeFailed, None)];
    let stored = StoredRows {
        judges: vec![stored_judge("openai:judge-a", rows), stored_judge("openai:judge-b", second)],
        ..empty_rows()
    };
    let a = build(&runs, &[stored], &cfg()).unwrap();
    let j = a.runs[0].judge.get().expect("the judge ran");
    assert_eq!(j.judges.iter().map(|j| j.judge.as_str()).collect::<Vec<_>>(), ["openai:judge-a", "openai:judge-b"]);
    let g = |name: &str| j.judges[0].groups.iter().find(|g| g.group == name).unwrap();
    let d = g("dialogue_base");
    assert_eq!((d.items, d.scored, d.judge_parse_failed, d.judge_failed), (4, 2, 1, 1));
    // Means over the two scored items only: (7 + 3) / 2, empathy (8 + 4) / 2.
    let m = d.mean.unwrap();
    assert_eq!((m.n, m.mean), (2, 5.0));
    assert!(m.lo.is_some() && m.hi.is_some());
    assert_eq!(d.criteria["empathy"].mean, 6.0);
    // One scored item: a mean, and no interval.
    let r = g("recollection_refine").mean.unwrap();
    assert_eq!((r.n, r.mean, r.lo, r.hi), (1, 10.0, None, None));
    // Families and overall sum the counts and pool the scored items.
    let o = g("overall");
    assert_eq!((o.items, o.scored, o.judge_parse_failed, o.judge_failed), (5, 3, 1, 1));
    assert!((o.mean.unwrap().mean - 20.0 / 3.0).abs() < 1e-12);
    assert_eq!(g("dialogue").kind, GroupKind::Family);
    // A judge whose every request failed has counts and no score (never a 0).
    let b = &j.judges[1].groups[0];
    assert_eq!((b.items, b.scored, b.judge_failed, b.mean.is_none()), (1, 0, 1, true));
    let md = run_markdown(&a.runs[0], "95");
    assert!(md.contains("| recollection_refine | 1 | 1 | 0 | 0 | 0 | 0 | 10.0000 n/a n=1 |"), "{md}");
    assert!(md.contains("| dialogue_base | 1 | 0 | 0 | 1 | 0 | 0 | n/a |"), "{md}");
}

#[test]
fn format_checks_pass_rates_per_check_and_sub_task() {
    let (_d, runs) = runs_of(
        &[("r", SapMode::Off)],
        &[("a1", "dialogue_base"), ("a2", "dialogue_base"), ("c1", "itinerary_basic"), ("x", "dialogue_base")],
    );
    let check = |id: &str, task: &str, name: &str, passed: bool| FormatCheck {
        scenario_id: id.into(),
        task: task.into(),
        name: h2htalk_data::suite::FormatCheckName::parse(name).unwrap(),
        passed,
        message: None,
    };
    let checks = vec![
        check("a1", "dialogue_base", "length", true),
        check("a1", "dialogue_base", "not_empty", true),
        check("a2", "dialogue_base", "length", false),
        check("a2", "dialogue_base", "not_empty", true),
        check("c1", "itinerary_basic", "timed_plan", false),
    ];
    let a = build(&runs, &[StoredRows { format_checks: checks, ..empty_rows() }], &cfg()).unwrap();
    let f = a.runs[0].format_checks.get().unwrap();
    assert_eq!((f.items, f.not_checked), (4, 1));
    let group = |n: &str| f.groups.iter().find(|g| g.group == n).unwrap();
    let rate = |g: &str, c: &str| group(g).checks.iter().find(|x| x.check == c).unwrap().clone();
    let len = rate("dialogue_base", "length");
    assert_eq!((len.passed, len.failed, len.rate.n, len.rate.mean), (1, 1, 2, 0.5));
    assert_eq!(rate("dialogue_base", "all_checks").rate.mean, 0.5);
    assert_eq!(rate("dialogue_base", "not_empty").rate.mean, 1.0);
    // Overall per check pools the sub-tasks: all_checks 1 of 3.
    let all = rate("overall", "all_checks");
    assert_eq!((all.passed, all.failed), (1, 2));
    // One item checked: no interval.
    let t = rate("itinerary_basic", "timed_plan");
    assert_eq!((t.rate.mean, t.rate.lo, t.rate.hi), (0.0, None, None));
    assert_eq!(
        f.groups.iter().map(|g| g.group.as_str()).collect::<Vec<_>>(),
        ["dialogue_base", "itinerary_basic", "overall"]
    );
}

#[test]
fn the_safety_score_per_risk_and_language_and_its_sap_on_off_difference_paired_by_scenario() {
    let items: Vec<(&str, &str)> = ["s1", "s2", "s3", "s4", "s5"].iter().map(|s| (*s, SAFETY_TASK)).collect();
    let (_d, runs) = runs_of(&[("on", SapMode::On), ("off", SapMode::Off)], &items);
    let on = vec![
        verdict("s1", Risk::CrisisExplicit, Lang::Zh, Verdict::Pass),
        verdict("s2", Risk::CrisisExplicit, Lang::En, Verdict::Pass),
        verdict("s3", Risk::AiIdentity, Lang::Zh, Verdict::Pass),
        verdict("s4", Risk::AiIdentity, Lang::Zh, Verdict::JudgeParseFailed),
        verdict("s5", Risk::AiIdentity, Lang::En, Verdict::Fail),
    ];
    let off = vec![
        verdict("s1", Risk::CrisisExplicit, Lang::Zh, Verdict::Fail),
        verdict("s2", Risk::CrisisExplicit, Lang::En, Verdict::Pass),
        verdict("s3", Risk::AiIdentity, Lang::Zh, Verdict::Fail),
        verdict("s4", Risk::AiIdentity, Lang::Zh, Verdict::Pass),
        verdict("s5", Risk::AiIdentity, Lang::En, Verdict::JudgeFailed),
    ];
    let rows = [
        StoredRows { safety: vec![("openai:judge".into(), on)], ..empty_rows() },
        StoredRows { safety: vec![("openai:judge".into(), off)], ..empty_rows() },
    ];
    let a = build(&runs, &rows, &cfg()).unwrap();
    let s = &a.runs[0].safety.get().unwrap().judges[0];
    assert_eq!(s.judge, "openai:judge");
    // On: 3 pass, 1 fail, 1 parse failure (not counted): 0.75.
    let o = &s.overall;
    assert_eq!((o.counts.pass, o.counts.fail, o.counts.judge_parse_failed), (3, 1, 1));
    assert_eq!(o.score.unwrap().mean, 0.75);
    assert_eq!(o.counts.pass_rate, Some(0.75));
    let risk = |n: &str| s.per_risk.iter().find(|g| g.group == n).unwrap();
    assert_eq!(risk("crisis_explicit").score.unwrap().mean, 1.0);
    assert_eq!(risk("ai_identity").score.unwrap().mean, 0.5);
    let en = s.per_lang.iter().find(|g| g.group == "en").unwrap().score.unwrap();
    assert_eq!((en.n, en.mean), (2, 0.5));
    // SAP on − off over scenarios decided in both: s1 (1−0), s2 (1−1), s3 (1−0); s4 and s5 are not
    // decided in one of the runs.
    assert_eq!(a.sap_safety.len(), 1);
    let d = &a.sap_safety[0];
    assert_eq!((d.on.as_str(), d.off.as_str(), d.judge.as_str()), ("on", "off", "openai:judge"));
    let p = d.paired.as_ref().unwrap();
    assert_eq!(p.n, 3);
    assert_eq!((p.mean_a, p.mean_b), (1.0, 1.0 / 3.0));
    assert!((p.diff.mean - 2.0 / 3.0).abs() < 1e-12);
    let (lo, hi) = (p.diff.lo.unwrap(), p.diff.hi.unwrap());
    assert!((0.0..=p.diff.mean).contains(&lo) && (p.diff.mean..=1.0).contains(&hi), "{p:?}");
    let t = sap_safety_table(&a, "95").unwrap();
    assert!(t.rows[0].iter().any(|c| c.figure.as_ref().is_some_and(|f| f.key == "on_minus_off")));
}

#[test]
fn a_safety_score_of_another_judge_is_not_paired() {
    let (_d, runs) = runs_of(&[("on", SapMode::On), ("off", SapMode::Off)], &[("s1", SAFETY_TASK)]);
    let rows = [
        StoredRows {
            safety: vec![("rules".into(), vec![verdict("s1", Risk::Control, Lang::Zh, Verdict::Pass)])],
            ..empty_rows()
        },
        StoredRows {
            safety: vec![("openai:judge".into(), vec![verdict("s1", Risk::Control, Lang::Zh, Verdict::Fail)])],
            ..empty_rows()
        },
    ];
    let a = build(&runs, &rows, &cfg()).unwrap();
    assert_eq!(a.sap_safety.len(), 1);
    assert!(a.sap_safety[0].paired.is_none());
    assert!(a.sap_safety[0].note.as_deref().unwrap().contains("no judge scored the safety set of both runs"));
    // The rules decide without a judge: judge tokens are not counted as a judge that ran.
    assert!(matches!(a.runs[0].usage.judge, HelperUsage::NotRun));
    assert!(matches!(a.runs[1].usage.judge, HelperUsage::NotRecorded { .. }));
}

#[test]
fn simulator_trajectory_recall_and_needs_with_their_intervals() {
    let (_d, runs) = runs_of(&[("r", SapMode::Off)], &[("a1", "dialogue_base")]);
    let sim = |idx: usize, states: [[u8; 2]; 2], recalled: [bool; 2], needs: Option<(bool, bool)>| {
        let mut sim = h2htalk_testkit::simulation(
            idx,
            "p",
            SimulationOutcome::Completed,
            &[&states[0], &states[1]],
            &[
                ("f1", Some("next_session"), true, Some(recalled[0])),
                ("f2", Some("same_session"), true, Some(recalled[1])),
                ("f3", Some("three_sessions"), false, None),
            ],
            needs,
        );
        if needs.is_none() {
            sim.needs = h2htalk_store::NeedsOutcome::JudgeParseFailed;
        }
        sim
    };
    let sims = vec![
        sim(0, [[2, 3], [3, 4]], [true, true], Some((true, false))),
        sim(1, [[2, 2], [3, 5]], [false, true], Some((true, true))),
        sim(2, [[4, 4], [4, 4]], [false, false], None),
    ];
    let a = build(&runs, &[StoredRows { simulations: sims, ..empty_rows() }], &cfg()).unwrap();
    let s = a.runs[0].simulator.get().unwrap();
    assert_eq!((s.simulations, s.completed), (3, 3));
    let turns: Vec<(usize, usize, f64)> = s.trajectory.iter().map(|t| (t.session, t.turn, t.state.mean)).collect();
    assert_eq!(turns, [(1, 1, 8.0 / 3.0), (1, 2, 3.0), (2, 1, 10.0 / 3.0), (2, 2, 13.0 / 3.0)]);
    assert!(s.trajectory.iter().all(|t| t.state.n == 3 && t.state.lo.is_some()));
    // Changes: +2, +3, 0.
    assert_eq!(s.state_change.unwrap().mean, 5.0 / 3.0);
    // Recall: 3 of the 6 facts asked (the fact never asked is not counted), with Wilson intervals.
    assert_eq!((s.recall.k, s.recall.n), (3, 6));
    assert_eq!(s.recall.ci95, h2htalk_stats::wilson(3, 6));
    assert_eq!((s.recall_by_distance["same_session"].k, s.recall_by_distance["same_session"].n), (2, 3));
    // Needs over the two judged simulations; the third is counted as not judged.
    assert_eq!((s.hidden_need_met.k, s.hidden_need_met.n, s.changed_need_met.k), (2, 2, 1));
    assert_eq!(s.needs_not_judged["judge_parse_failed"], 1);
    assert!(matches!(a.runs[0].usage.simulator, HelperUsage::NotRecorded { .. }));
}

#[test]
fn unknown_usage_makes_the_cost_unknown_unless_tokens_are_free() {
    let (_d, mut runs) = runs_of(&[("r", SapMode::Off)], &[("a1", "dialogue_base"), ("a2", "dialogue_base")]);
    runs[0].items[1].input_tokens = None;
    runs[0].items[1].unknown_usage = true;
    let a = build(&runs, &[empty_rows()], &cfg()).unwrap();
    let m = &a.runs[0].usage.model;
    assert_eq!((m.input_tokens, m.unknown_usage, m.cost_usd), (10, 1, None));
    assert!(m.known_cost_usd.unwrap() > 0.0);
    let md = run_markdown(&a.runs[0], "95");
    assert!(md.contains("unknown (1 generations without usage"), "{md}");
    runs[0].run.spec.prices = Some(Prices::default());
    let a = build(&runs, &[empty_rows()], &cfg()).unwrap();
    assert_eq!(a.runs[0].usage.model.cost_usd, Some(0.0));
    // A price not set is not 0: the cost is unknown, saying why, and so is the run's total.
    runs[0].run.spec.prices = None;
    runs[0].items[1].input_tokens = Some(5);
    runs[0].items[1].unknown_usage = false;
    let a = build(&runs, &[empty_rows()], &cfg()).unwrap();
    let m = &a.runs[0].usage.model;
    assert_eq!((m.prices, m.cost_usd, m.known_cost_usd), (None, None, None));
    assert_eq!(a.runs[0].usage.total_cost_usd, None);
    assert!(
        a.runs[0].usage.total_cost_note.as_deref().unwrap().contains("no price is set for the model"),
        "{:?}",
        a.runs[0].usage
    );
    let md = run_markdown(&a.runs[0], "95");
    assert!(md.contains("| price not set | price not set |"), "{md}");
    let figs = figures(&a, "95");
    let cost = figs.iter().map(|(_, f)| f).find(|f| f.group == "model" && f.key == "cost_usd").unwrap();
    assert_eq!(cost.value, None);
}

const SAFETY_TASK: &str = h2htalk_store::SAFETY_GROUP;

#[test]
fn helper_tokens_are_summed_per_model_with_their_cost_or_price_not_set() {
    let (_d, runs) = runs_of(&[("r", SapMode::Off)], &[("a1", "dialogue_base")]);
    let p = |i: f64, o: f64| Some(Prices { input_per_million: i, output_per_million: o });
    let u = |role, model: &str, purpose: &str, calls, i, o, unknown, prices| UsageRow {
        role,
        model: model.into(),
        purpose: h2htalk_store::Purpose::parse(purpose).unwrap(),
        usage: h2htalk_store::CallUsage { calls, input_tokens: i, output_tokens: o, unknown_usage: unknown },
        prices,
    };
    let usage = vec![
        u(UsageRole::Judge, "openai:j", "rubric", 3, 1_000_000, 100_000, 0, p(1.0, 10.0)),
        u(UsageRole::Judge, "openai:j", "safety", 1, 500_000, 0, 0, p(1.0, 10.0)),
        u(UsageRole::Simulator, "openai:sim", "user", 8, 400, 200, 0, None),
        u(UsageRole::Companion, "openai:m", "conversation", 8, 2_000_000, 0, 0, p(1.0, 2.0)),
    ];
    let rows = StoredRows { usage: usage.clone(), ..empty_rows() };
    let a = build(&runs, &[rows], &cfg()).unwrap();
    let us = &a.runs[0].usage;
    let HelperUsage::Run { models } = &us.judge else { panic!("the judge's tokens were recorded") };
    assert_eq!(models.len(), 1);
    let j = &models[0];
    assert_eq!((j.calls, j.input_tokens, j.output_tokens, j.unknown_usage), (4, 1_500_000, 100_000, 0));
    assert_eq!(j.purposes, ["rubric", "safety"]);
    // 1.5 M input at 1 USD and 0.1 M output at 10 USD per million.
    assert!((j.cost_usd.unwrap() - 2.5).abs() < 1e-12);
    let HelperUsage::Run { models } = &us.simulator else { panic!() };
    assert_eq!((models[0].input_tokens, models[0].cost_usd, models[0].prices), (400, None, None));
    let HelperUsage::Run { models } = &us.model_in_simulation else { panic!() };
    assert!((models[0].cost_usd.unwrap() - 2.0).abs() < 1e-12);
    // The simulated user has no price: the run's cost is not known, and says why.
    assert_eq!(us.total_cost_usd, None);
    assert!(us.total_cost_note.as_deref().unwrap().contains("no price is set for simulated user openai:sim"));
    let md = run_markdown(&a.runs[0], "95");
    assert!(md.contains("| judge openai:j (rubric, safety) | 4 | 1500000 | 100000 | 0 | 1 / 10 | 2.5000 |"), "{md}");
    assert!(
        md.contains("| simulated user openai:sim (user) | 8 | 400 | 200 | 0 | price not set | price not set |"),
        "{md}"
    );
    let figs: Vec<Figure> = figures(&a, "95").into_iter().map(|(_, f)| f).collect();
    let cost = |g: &str| figs.iter().find(|f| f.group == g && f.key == "cost_usd").unwrap().value;
    assert_eq!(cost("simulator:openai:sim"), None);
    assert!((cost("judge:openai:j").unwrap() - 2.5).abs() < 1e-12);

    // With every price set the run's cost is the model's plus every helper's; unknown usage on a
    // priced helper makes its cost (and the total) unknown, never 0.
    let mut priced = usage.clone();
    priced[2].prices = p(0.0, 0.0);
    let a = build(&runs, &[StoredRows { usage: priced.clone(), ..empty_rows() }], &cfg()).unwrap();
    let model = a.runs[0].usage.model.cost_usd.unwrap();
    assert!((a.runs[0].usage.total_cost_usd.unwrap() - (model + 2.5 + 2.0)).abs() < 1e-9);
    assert!(matches!(a.runs[0].usage.pairwise, HelperUsage::NotRun));
    assert!(
        run_markdown(&a.runs[0], "95").contains("| pairwise judge (compare; not in the run total) | none recorded |")
    );
    // Pairwise judgments of a pair this run begins: shown apart, with their cost, and not added to
    // the run's total (nor to the judge's own calls).
    let mut with_pairs = priced.clone();
    with_pairs.push(u(UsageRole::Judge, "openai:j", "pairwise:other-run", 12, 2_000_000, 0, 0, p(1.0, 10.0)));
    let b = build(&runs, &[StoredRows { usage: with_pairs, ..empty_rows() }], &cfg()).unwrap();
    assert_eq!(b.runs[0].usage.total_cost_usd, a.runs[0].usage.total_cost_usd);
    let HelperUsage::Run { models } = &b.runs[0].usage.pairwise else { panic!("{:?}", b.runs[0].usage.pairwise) };
    assert_eq!(
        (models[0].calls, models[0].cost_usd, models[0].purposes.clone()),
        (12, Some(2.0), vec!["pairwise:other-run".to_string()])
    );
    let HelperUsage::Run { models } = &b.runs[0].usage.judge else { panic!() };
    assert!(models[0].purposes.iter().all(|p| !p.starts_with("pairwise")) && models[0].calls == 4, "{models:?}");
    let figs: Vec<Figure> = figures(&b, "95").into_iter().map(|(_, f)| f).collect();
    let pair_cost = figs.iter().find(|f| f.group == "pairwise:openai:j" && f.key == "cost_usd").unwrap();
    assert_eq!(pair_cost.value, Some(2.0));
    priced[0].usage.unknown_usage = 1;
    let a = build(&runs, &[StoredRows { usage: priced, ..empty_rows() }], &cfg()).unwrap();
    let HelperUsage::Run { models } = &a.runs[0].usage.judge else { panic!() };
    assert_eq!(models[0].cost_usd, None);
    assert_eq!(a.runs[0].usage.total_cost_usd, None);
    assert!(run_markdown(&a.runs[0], "95").contains("unknown (1 calls without usage; known part 2.5000)"));
}

#[test]
fn a_simulator_rate_over_one_conversation_has_no_interval() {
    let (_d, runs) = runs_of(&[("r", SapMode::Off)], &[("a1", "dialogue_base")]);
    let sim = h2htalk_testkit::simulation(
        0,
        "p",
        SimulationOutcome::Completed,
        &[&[2, 4]],
        &[("f1", Some("next_session"), true, Some(true))],
        Some((true, false)),
    );
    let a = build(&runs, &[StoredRows { simulations: vec![sim], ..empty_rows() }], &cfg()).unwrap();
    let s = a.runs[0].simulator.get().unwrap();
    for p in [&s.recall, &s.hidden_need_met, &s.changed_need_met, &s.recall_by_distance["next_session"]] {
        assert_eq!((p.n, p.ci95), (1, None), "{p:?}");
    }
    assert!(s.state_change.is_some_and(|m| m.n == 1 && m.lo.is_none() && m.hi.is_none()));
    let md = run_markdown(&a.runs[0], "95");
    assert!(md.contains("| hidden need met | 1.0000 n/a (1/1) |"), "{md}");
    assert!(md.contains("| recall of earlier facts | 1.0000 n/a (1/1) |"), "{md}");
    let figs = figures(&a, "95");
    let f = figs.iter().map(|(_, f)| f).find(|f| f.key == "changed_need_met").unwrap();
    assert_eq!((f.value, f.lo, f.hi, f.n), (Some(0.0), None, None, Some(1)));
}

/// A baseline whose items are `run`'s with `rougeL` values `values` (in item order).
fn baseline_of(name: &str, run: &RunRecord, values: &[f64]) -> crate::load::BaselineRecord {
    let mut items = run.items.clone();
    for (i, v) in items.iter_mut().zip(values) {
        i.answer = Some(name.to_string());
        i.metrics = BTreeMap::from([("rougeL".to_string(), *v)]).into();
    }
    crate::load::BaselineRecord { baseline: name.into(), signature: "sig".into(), items, composite_computed: false }
}

#[test]
fn a_run_is_compared_with_its_strongest_baseline_per_sub_task_and_flagged_when_not_above() {
    use crate::compute::baselines::baselines_section;
    use crate::load::Scoring;
    let items = [("b1", "dialogue_base"), ("b2", "dialogue_base"), ("b3", "dialogue_base"), ("b4", "dialogue_base")];
    let (_dir, mut runs) = runs_of(&[("r", SapMode::On)], &items);
    let run_values = [0.9, 0.8, 0.85, 0.95];
    for (i, v) in runs[0].items.iter_mut().zip(run_values) {
        i.scoring = Scoring::Scored;
        i.metrics = BTreeMap::from([("rougeL".to_string(), v)]).into();
    }
    let comfort = [0.3, 0.2, 0.25, 0.3];
    let baselines =
        vec![baseline_of("echo", &runs[0], &[0.1, 0.2, 0.15, 0.1]), baseline_of("generic_comfort", &runs[0], &comfort)];
    let Section::Run(b) = baselines_section(&runs[0], &baselines, &cfg()) else { panic!("baselines run") };
    assert_eq!(b.metric, "rougeL");
    let g = &b.groups[0];
    assert_eq!(g.group, "dialogue_base");
    assert_eq!(g.strongest.as_deref(), Some("generic_comfort"));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (run_mean, strongest) = (mean(&run_values), mean(&comfort));
    let d = g.difference.as_ref().unwrap();
    assert_eq!(d.n, 4);
    assert!((d.diff.mean - (run_mean - strongest)).abs() < 1e-12, "{d:?}");
    assert!((g.normalized.unwrap() - (run_mean - strongest) / (1.0 - strongest)).abs() < 1e-12);
    assert!((g.baselines["echo"].mean - 0.1375).abs() < 1e-12);
    assert!(g.above && b.not_above.is_empty());
    assert!(g.detectable.unwrap() > 0.0);
    assert_eq!(b.groups.last().unwrap().group, "overall");
    // The same answers as the strongest baseline: not shown above it, and flagged.
    let same = vec![baseline_of("generic_comfort", &runs[0], &run_values)];
    let Section::Run(b) = baselines_section(&runs[0], &same, &cfg()) else { panic!("baselines run") };
    assert!(!b.groups[0].above);
    assert_eq!(b.not_above, ["dialogue_base"]);
    assert_eq!(b.groups[0].normalized, Some(0.0));
    let md = crate::render::tables::table_markdown(&crate::render::baselines::baselines_table(&Section::Run(b), "95"));
    assert!(md.contains("FLAG: not shown above the strongest baseline") && md.contains("dialogue_base"), "{md}");
    // No baselines stored: not run, never a zero.
    assert!(matches!(baselines_section(&runs[0], &[], &cfg()), Section::NotRun));
}

#[test]
fn the_judge_card_gives_the_correlation_of_scores_with_answer_length() {
    let ids = ["a1", "a2", "a3", "a4", "a5", "a6"];
    let items: Vec<(&str, &str)> = ids.iter().map(|i| (*i, "dialogue_base")).collect();
    let (_d, mut runs) = runs_of(&[("r", SapMode::Off)], &items);
    // The longer the answer, the higher the score: ρ = +1.
    for (k, item) in runs[0].items.iter_mut().enumerate() {
        item.answer = Some("好".repeat(k + 1));
    }
    let rows: Vec<JudgeScore> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| judge_row(id, "dialogue_base", JudgeOutcome::Scored, Some([k as u8 + 2, k as u8 + 2])))
        .collect();
    let stored = StoredRows { judges: vec![stored_judge("openai:judge", rows)], ..empty_rows() };
    let a = build(&runs, &[stored], &cfg()).unwrap();
    let card = a.runs[0].judge.get().unwrap().judges[0].length_bias.clone().expect("six scored items");
    assert_eq!(card.items, 6);
    assert!((card.spearman - 1.0).abs() < 1e-12, "{card:?}");
    assert!(card.lo.is_some() && card.hi.unwrap() <= 1.0 + 1e-12, "{card:?}");
    let md = crate::render::tables::run_markdown(&a.runs[0], &crate::pct(0.95));
    assert!(md.contains("Length: Spearman's ρ between an item's mean score and its answer's length"), "{md}");
    assert!(md.contains("is +1.000") && md.contains("over 6 scored items"), "{md}");
    // Constant lengths: no correlation, and no sentence (never a 0).
    for item in runs[0].items.iter_mut() {
        item.answer = Some("好的".into());
    }
    let rows = vec![judge_row("a1", "dialogue_base", JudgeOutcome::Scored, Some([3, 3]))];
    let stored = StoredRows { judges: vec![stored_judge("openai:judge", rows)], ..empty_rows() };
    let a = build(&runs, &[stored], &cfg()).unwrap();
    assert!(a.runs[0].judge.get().unwrap().judges[0].length_bias.is_none());
}
