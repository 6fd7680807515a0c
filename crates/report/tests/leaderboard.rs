//! The leaderboard of hand-made runs: known means, coverage, families, the composite, errors.

use h2htalk_data::ChatMessage;
use h2htalk_data::suite::Lang;
use h2htalk_llm::{FaultKind, FinishReason};
use h2htalk_report::leaderboard::GroupKind;
use h2htalk_report::{Bootstrap, ReportError, build, load_runs, render};
use h2htalk_store::{
    Generation as GenerationRow, GenerationStatus, Item as ItemRow, Score as ScoreRow, ScoreOutcome, Store,
};
use serde_json::json;
use tempfile::TempDir;

fn item(id: &str, task: &str, ord: usize) -> ItemRow {
    ItemRow {
        scenario_id: id.into(),
        task: task.into(),
        lang: Lang::Zh,
        ord,
        prompt: vec![ChatMessage::new("system", "你是沈言。"), ChatMessage::new("user", "今天好累。")],
        reference: "辛苦了，先坐下喝口水吧。".into(),
    }
}

fn generated(id: &str) -> GenerationRow {
    GenerationRow {
        scenario_id: id.into(),
        status: GenerationStatus::Generated,
        text: Some("辛苦了，休息一下。".into()),
        finish_reason: Some(FinishReason::Stop),
        input_tokens: Some(10),
        output_tokens: Some(5),
        latency_ms: 1.0,
        attempts: 1,
        error_kind: None,
        error_message: None,
        faults: vec![],
    }
}

fn failed(id: &str) -> GenerationRow {
    GenerationRow {
        status: GenerationStatus::Failed,
        text: None,
        finish_reason: None,
        error_kind: Some(FaultKind::ContentFilter),
        error_message: Some("refused".into()),
        ..generated(id)
    }
}

fn score(id: &str, outcome: &str, metrics: serde_json::Value) -> ScoreRow {
    ScoreRow {
        scenario_id: id.into(),
        outcome: ScoreOutcome::parse(outcome).unwrap(),
        metrics: serde_json::from_value(metrics).unwrap(),
        signature: "sig".into(),
    }
}

fn nine(v: f64) -> serde_json::Value {
    json!({"rouge1": v, "rouge2": v, "rougeL": v, "bleu1": v, "bleu2": v, "bleu3": v, "bleu4": v, "bertscore": v, "embedding": v})
}

/// A run: dialogue_base a1..a4 (values 0.2, 0.4, failed, dropped), recollection_refine b1..b2
/// (0.6, 0.8), one pending itinerary_basic item, one safety item (1.0).
fn make_run(store: &mut Store, id: &str, sap: &str, shift: f64) {
    let items = vec![
        item("a1", "dialogue_base", 0),
        item("a2", "dialogue_base", 1),
        item("a3", "dialogue_base", 2),
        item("a4", "dialogue_base", 3),
        item("b1", "recollection_refine", 4),
        item("b2", "recollection_refine", 5),
        item("c1", "itinerary_basic", 6),
        item("s1", "sap_safety", 7),
    ];
    let prov = h2htalk_testkit::spec("openai", "m", sap.parse().unwrap());
    store.create_run(id, &prov, &items).unwrap();
    let gens: Vec<GenerationRow> =
        ["a1", "a2", "a4", "b1", "b2", "s1"].iter().map(|i| generated(i)).chain([failed("a3")]).collect();
    store.put_generations(id, &gens, false).unwrap();
    store
        .put_scores(
            id,
            &[
                score("a1", "scored", nine(0.2 + shift)),
                score("a2", "empty_prediction", nine(0.4 + shift)),
                score("a4", "dropped", json!({})),
                score("b1", "scored", nine(0.6 + shift)),
                score("b2", "scored", nine(0.8 + shift)),
                score("s1", "scored", nine(1.0)),
            ],
        )
        .unwrap();
}

#[test]
fn means_coverage_families_and_the_composite() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    make_run(&mut store, "on", "on", 0.0);
    make_run(&mut store, "off", "off", -0.1);
    let runs = load_runs(&store, "r.db", &[]).unwrap();
    assert!(runs.iter().all(|r| r.composite_computed));
    let lb = build(&runs, &Bootstrap::default(), None).unwrap();
    assert_eq!(lb.rank_metric.as_deref(), Some("composite"));
    assert_eq!(lb.metrics[0], "composite");
    let on = lb.runs.iter().find(|r| r.id == "on").unwrap();
    let names: Vec<(&str, GroupKind)> = on.groups.iter().map(|g| (g.group.as_str(), g.kind)).collect();
    assert_eq!(
        names,
        [
            ("dialogue_base", GroupKind::Task),
            ("recollection_refine", GroupKind::Task),
            ("itinerary_basic", GroupKind::Task),
            ("dialogue", GroupKind::Family),
            ("recollection", GroupKind::Family),
            ("itinerary", GroupKind::Family),
            ("overall", GroupKind::Overall),
            ("sap_safety", GroupKind::Set),
        ]
    );
    let g = on.group("dialogue_base").unwrap();
    assert_eq!((g.coverage.items, g.coverage.scored, g.coverage.failed, g.coverage.dropped), (4, 2, 1, 1));
    assert_eq!(g.coverage.empty_predictions, 1);
    let c = g.metrics["composite"];
    assert!((c.mean - 0.3).abs() < 1e-12 && c.n == 2, "{c:?}");
    let (lo, hi) = (c.lo.unwrap(), c.hi.unwrap());
    assert!(lo >= 0.2 - 1e-12 && hi <= 0.4 + 1e-12 && lo <= c.mean && c.mean <= hi, "{c:?}");
    // The pending sub-task has coverage and no means (never a 0).
    let p = on.group("itinerary_basic").unwrap();
    assert_eq!((p.coverage.items, p.coverage.pending, p.coverage.scored), (1, 1, 0));
    assert!(p.metrics.is_empty());
    // Overall pools the four scored sub-task items and leaves the safety set out.
    let o = on.group("overall").unwrap();
    assert!((o.metrics["rougeL"].mean - 0.5).abs() < 1e-12);
    assert_eq!(o.coverage.items, 7);
    let safety = on.group("sap_safety").unwrap().metrics["rougeL"];
    assert!((safety.mean - 1.0).abs() < 1e-12);
    // One item: no interval (null in JSON, "n/a" in text), never [1.0000, 1.0000].
    assert_eq!((safety.n, safety.lo, safety.hi), (1, None, None));
    // Ranking, the comparison and the SAP pair: on is 0.1 above off on every shared item.
    assert_eq!(lb.ranking.iter().map(|e| e.run.as_str()).collect::<Vec<_>>(), ["on", "off"]);
    assert_eq!(lb.comparisons.len(), 1);
    assert!((lb.comparisons[0].paired.diff.mean - 0.1).abs() < 1e-12);
    assert_eq!(lb.comparisons[0].paired.n, 4);
    assert_eq!(lb.sap.len(), 1);
    assert_eq!((lb.sap[0].on.as_str(), lb.sap[0].off.as_str()), ("on", "off"));
    let overall = lb.sap[0].comparisons.iter().find(|c| c.group == "overall").unwrap();
    assert!(
        (overall.paired.diff.lo.unwrap() - 0.1).abs() < 1e-9 && (overall.paired.diff.hi.unwrap() - 0.1).abs() < 1e-9
    );

    // Every output is written from this value: CSV rows carry the same numbers.
    let csv = render::to_csv(&lb).unwrap();
    assert!(csv.lines().any(|l| l.starts_with("on,") && l.contains(",dialogue_base,task,composite,2,")), "{csv}");
    let md = render::to_markdown(&lb);
    assert!(md.contains("| 1 | R1 | `on` |"), "{md}");
    assert!(md.contains("| **sap_safety** | 1 | 1 | 0 | 0 | 0 | 1.0000 n/a |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&render::to_json(&lb)).unwrap();
    let groups = json["runs"][0]["groups"].as_array().unwrap();
    let set = groups.iter().find(|g| g["group"] == "sap_safety").unwrap();
    assert!(set["metrics"]["rougeL"]["lo"].is_null() && set["metrics"]["rougeL"]["hi"].is_null(), "{set}");
    let html = render::to_html(&lb, &runs).unwrap();
    assert!(html.contains("你是沈言。") || html.contains("\\u4f60"), "the prompt text is embedded");
}

#[test]
fn the_same_seed_gives_the_same_report_and_a_metric_can_be_chosen() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    make_run(&mut store, "on", "on", 0.0);
    let runs = load_runs(&store, "r.db", &["on".to_string()]).unwrap();
    let a = render::to_json(&build(&runs, &Bootstrap::default(), Some("bleu4")).unwrap());
    let b = render::to_json(&build(&runs, &Bootstrap::default(), Some("bleu4")).unwrap());
    assert_eq!(a, b);
    assert!(a.contains("\"rank_metric\": \"bleu4\""));
    let e = build(&runs, &Bootstrap::default(), Some("judge")).unwrap_err().to_string();
    assert!(e.contains("no run has metric `judge`") && e.contains("composite"), "{e}");
}

#[test]
fn bad_scores_and_unknown_runs_are_errors_naming_what_is_wrong() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    make_run(&mut store, "on", "on", 0.0);
    store.corrupt_for_tests("scores", "metrics", "on", Some("b1"), r#"{"rougeL": "high"}"#).unwrap();
    let e = load_runs(&store, "r.db", &[]).unwrap_err().to_string();
    assert!(e.contains("r.db: run on, item b1: field `scores.metrics.rougeL`") && e.contains("rescore"), "{e}");
    store.put_scores("on", &[score("b1", "scored", json!({}))]).unwrap();
    let e = load_runs(&store, "r.db", &[]).unwrap_err().to_string();
    assert!(e.contains("without metric values"), "{e}");
    let e = load_runs(&store, "r.db", &["nope".into()]).unwrap_err();
    assert!(matches!(e, ReportError::NoRun { .. }) && e.to_string().contains("`nope`"), "{e}");
    let empty = Store::open(&dir.path().join("empty.db")).unwrap();
    assert!(load_runs(&empty, "empty.db", &[]).unwrap_err().to_string().contains("no runs"));
}

#[test]
fn script_json_cannot_close_the_script_element() {
    let json = serde_json::to_string(&json!({"t": "</script><!-- & \u{2028}"})).unwrap();
    let safe = h2htalk_report::format::escape_script_json(&json);
    assert!(!safe.contains("</") && !safe.contains("<!--") && !safe.contains('&') && !safe.contains('\u{2028}'));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&safe).unwrap(),
        serde_json::from_str::<serde_json::Value>(&json).unwrap()
    );
}

/// The quick start's shape: one scenario per sub-task. Every resample draws the same items, so a
/// family, the overall mean, a rank and a paired difference have no interval (n/a), never [m, m];
/// the detectable difference still comes from the spread over the shared items.
#[test]
fn strata_of_one_item_each_give_no_interval_anywhere() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    for (id, sap, shift) in [("on", "on", 0.0), ("off", "off", 0.05)] {
        let tasks = ["dialogue_base", "dialogue_emotion", "dialogue_schedule"];
        let items: Vec<ItemRow> = tasks.iter().enumerate().map(|(k, t)| item(&format!("x{k}"), t, k)).collect();
        let prov = h2htalk_testkit::spec("openai", "m", sap.parse().unwrap());
        store.create_run(id, &prov, &items).unwrap();
        let gens: Vec<GenerationRow> = (0..3).map(|k| generated(&format!("x{k}"))).collect();
        store.put_generations(id, &gens, false).unwrap();
        // Per item differences on − off: −0.05, +0.05, −0.15 (a spread, so a detectable figure).
        let values = [0.2 + shift, 0.4 - shift, 0.3 + 3.0 * shift];
        let scores: Vec<ScoreRow> =
            values.iter().enumerate().map(|(k, v)| score(&format!("x{k}"), "scored", nine(*v))).collect();
        store.put_scores(id, &scores).unwrap();
    }
    let runs = load_runs(&store, "r.db", &[]).unwrap();
    let lb = build(&runs, &Bootstrap::default(), None).unwrap();
    for r in &lb.runs {
        for g in &r.groups {
            for (m, st) in &g.metrics {
                assert_eq!((st.lo, st.hi), (None, None), "{} {} {m}: {st:?}", r.id, g.group);
            }
        }
        let family = r.group("dialogue").unwrap().metrics["composite"];
        assert_eq!(family.n, 3);
    }
    for e in &lb.ranking {
        assert_eq!((e.lo, e.hi, e.rank_lo, e.rank_hi), (None, None, None, None), "{e:?}");
    }
    let c = &lb.comparisons[0].paired;
    assert_eq!((c.n, c.diff.lo, c.diff.hi, c.p_value), (3, None, None, None));
    let sd = h2htalk_stats::power::sd(&[0.05, -0.05, 0.15]).unwrap();
    let expected = h2htalk_stats::power::min_detectable_difference(3, sd).unwrap();
    assert!((c.detectable.unwrap() - expected).abs() < 1e-9, "{c:?}");
    for s in &lb.sap[0].comparisons {
        assert_eq!((s.paired.diff.lo, s.paired.diff.hi, s.paired.p_value), (None, None, None), "{s:?}");
    }
    let md = render::to_markdown(&lb);
    let interval = md.match_indices('[').any(|(i, _)| {
        let rest = md[i + 1..].trim_start_matches('-');
        rest.len() > 1 && rest.as_bytes()[0].is_ascii_digit() && rest.as_bytes()[1] == b'.'
    });
    assert!(!interval, "no interval in the Markdown:\n{md}");
    assert!(md.contains("| detectable |") && md.contains(&format!("| {expected:.4} |")), "{md}");
    let ranking = md.lines().find(|l| l.starts_with("| 1 | ")).unwrap();
    assert!(ranking.contains("n/a | n/a |"), "the rank interval is n/a: {ranking}");
    let json: serde_json::Value = serde_json::from_str(&render::to_json(&lb)).unwrap();
    assert!(json["ranking"][0]["rank_lo"].is_null() && json["comparisons"][0]["detectable"].is_number(), "{json}");
    let html = render::to_html(&lb, &runs).unwrap();
    assert!(html.contains("<th class=\"num\">detectable</th>") && html.contains(&format!("{expected:.4}")));
}

/// `write_report` computes without the prompts and references and reads back only those of the
/// transcripts it shows: its page is the one made from runs loaded with every text.
#[test]
fn a_report_made_with_deferred_texts_is_the_one_made_with_every_text() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    make_run(&mut store, "r1", "on", 0.0);
    make_run(&mut store, "r2", "off", 0.05);
    let deferred =
        h2htalk_report::load::load_runs_with(&store, "runs.db", &[], h2htalk_report::load::Texts::Deferred).unwrap();
    let it = &deferred[0].items[0];
    assert!(it.prompt.is_empty() && it.reference.is_empty());
    assert_eq!(it.text_bytes, "你是沈言。".len() + "今天好累。".len() + "辛苦了，先坐下喝口水吧。".len());
    let out = dir.path().join("out");
    let paths = h2htalk_report::write_report(&store, &[], &out).unwrap();
    let written = std::fs::read_to_string(&paths.html).unwrap();
    let runs = load_runs(&store, "runs.db", &[]).unwrap();
    let mut lb = build(&runs, &Bootstrap::default(), None).unwrap();
    lb.assessments = h2htalk_report::assessments::assess(&store, &runs, &Bootstrap::default()).unwrap();
    lb.baselines = h2htalk_report::leaderboard::baseline_stats(
        &h2htalk_report::load::baselines(&store, &runs).unwrap(),
        &lb.metrics,
        &Bootstrap::default(),
    );
    let tag_data = h2htalk_report::load::tags::load(&store, &runs).unwrap();
    lb.tags = Some(h2htalk_report::tags::build(&lb, &runs, &tag_data, &Bootstrap::default()));
    assert_eq!(written, render::to_html(&lb, &runs).unwrap());
    assert!(written.contains("辛苦了，先坐下喝口水吧。") && written.contains("今天好累。"));
    // Links into `h2htalk view`: each ranked run's items, and each transcript's item page (the
    // viewer's address travels with the transcripts). The template engine writes `/` as `&#x2f;`.
    let written = written.replace("&#x2f;", "/");
    for run in ["r1", "r2"] {
        assert!(written.contains(&format!("href=\"{}/items?run={run}\"", render::VIEW_URL)), "{run}");
    }
    assert!(written.contains(&format!("\"view\":\"{}\"", render::VIEW_URL)));
    // ... each sub-task row of the heat map and of each run's table, and the SAP on/off pair.
    let v = render::VIEW_URL;
    for link in [
        format!("href=\"{v}/items?task=dialogue_base\""),
        format!("href=\"{v}/items?run=r1&amp;task=recollection_refine\""),
        format!("href=\"{v}/diff?a=r1&amp;b=r2&amp;metric=composite\""),
    ] {
        assert!(written.contains(&link), "no {link}");
    }
}
