//! The run summary (`h2htalk run`'s table, `runs show`): counts and means from the stored items,
//! through the report's own mean.

use h2htalk_data::SapMode;
use h2htalk_data::suite::Lang;
use h2htalk_llm::FinishReason;
use h2htalk_report::summarize;
use h2htalk_store::{Generation, GenerationStatus, Item, SAFETY_GROUP, Score, ScoreOutcome, Store};

/// A store with one run whose items `s0`, `s1`… are generated and scored with `metrics`; the
/// last `safety` of them belong to the safety set.
fn store_with_scores(metrics: &[&str], safety: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let item = |i: usize| Item {
        scenario_id: format!("s{i}"),
        task: if i + safety >= metrics.len() { SAFETY_GROUP.into() } else { "dialogue_base".into() },
        lang: Lang::Zh,
        ord: i,
        prompt: vec![],
        reference: "参考".into(),
    };
    let items: Vec<Item> = (0..metrics.len()).map(item).collect();
    store.create_run("r", &h2htalk_testkit::spec("openai", "m", SapMode::On), &items).unwrap();
    let generated = |i: usize| Generation {
        scenario_id: format!("s{i}"),
        status: GenerationStatus::Generated,
        text: Some("回答".into()),
        finish_reason: Some(FinishReason::Stop),
        input_tokens: Some(1),
        output_tokens: Some(1),
        latency_ms: 1.0,
        attempts: 1,
        error_kind: None,
        error_message: None,
        faults: vec![],
    };
    store.put_generations("r", &(0..metrics.len()).map(generated).collect::<Vec<_>>(), false).unwrap();
    let rows: Vec<Score> = metrics
        .iter()
        .enumerate()
        .map(|(i, m)| Score {
            scenario_id: format!("s{i}"),
            outcome: ScoreOutcome::Scored,
            metrics: serde_json::from_str(m).unwrap_or_default(),
            signature: String::new(),
        })
        .collect();
    store.put_scores("r", &rows).unwrap();
    for (i, m) in metrics.iter().enumerate() {
        // Values the typed row cannot hold go in as text, as a damaged store would hold them.
        if serde_json::from_str::<std::collections::BTreeMap<String, f64>>(m).is_err() {
            store.corrupt_for_tests("scores", "metrics", "r", Some(&format!("s{i}")), m).unwrap();
        }
    }
    (dir, store)
}

#[test]
fn each_mean_divides_by_the_items_that_have_the_metric() {
    let (_dir, store) = store_with_scores(&[r#"{"a": 1.0, "b": 2.0}"#, r#"{"a": 3.0}"#], 0);
    let summary = summarize(&store, "r").unwrap();
    assert_eq!(summary.overall.scored, 2);
    assert_eq!(summary.overall.means["a"], 2.0);
    assert_eq!(summary.overall.means["b"], 2.0);
    assert_eq!(summary.groups[0].means, summary.overall.means);
}

#[test]
fn a_stored_metrics_value_that_does_not_parse_is_an_error() {
    let (_dir, store) = store_with_scores(&[r#"{"a": 1.0}"#, r#"{"a": "#], 0);
    let err = summarize(&store, "r").unwrap_err().to_string();
    assert!(err.contains("item s1: field `scores.metrics`"), "{err}");
}

#[test]
fn the_safety_set_counts_in_all_items_but_not_in_overall() {
    let (_dir, store) = store_with_scores(&[r#"{"a": 1.0}"#, r#"{"a": 3.0}"#, r#"{"a": 100.0}"#], 1);
    let summary = summarize(&store, "r").unwrap();
    let groups: Vec<(&str, usize)> = summary.groups.iter().map(|g| (g.group.as_str(), g.items)).collect();
    assert_eq!(groups, [("dialogue_base", 2), (SAFETY_GROUP, 1)]);
    assert_eq!((summary.overall.items, summary.overall.scored), (2, 2));
    assert_eq!(summary.overall.means["a"], 2.0);
    assert_eq!((summary.all.items, summary.all.generated, summary.all.scored), (3, 3, 3));
    assert!(summary.all.means.is_empty());
}
