//! A value in the store that does not decode is an error naming the run, the item and the column;
//! nothing reads as empty, 0 or a default. One case per typed column.

use h2htalk_data::{ChatMessage, SapMode};
use h2htalk_data::suite::Lang;
use h2htalk_llm::{FaultKind, FinishReason};
use h2htalk_store::{Generation, GenerationStatus, Item, Score, ScoreOutcome, Store};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let item = Item {
        scenario_id: "dialogue_base-001".into(),
        task: "dialogue_base".into(),
        lang: Lang::Zh,
        ord: 0,
        prompt: vec![ChatMessage::new("user", "你好")],
        reference: "（笑）你好呀。".into(),
    };
    store.create_run("r1", &h2htalk_testkit::spec("openai", "m", SapMode::On), &[item]).unwrap();
    let g = Generation {
        scenario_id: "dialogue_base-001".into(),
        status: GenerationStatus::Generated,
        text: Some("你好".into()),
        finish_reason: Some(FinishReason::Stop),
        input_tokens: Some(3),
        output_tokens: Some(2),
        latency_ms: 5.0,
        attempts: 2,
        error_kind: None,
        error_message: None,
        faults: vec![FaultKind::Timeout],
    };
    store.put_generations("r1", &[g], false).unwrap();
    let s = Score {
        scenario_id: "dialogue_base-001".into(),
        outcome: ScoreOutcome::Scored,
        metrics: [("rougeL".to_string(), 0.5)].into(),
        signature: "sig".into(),
    };
    store.put_scores("r1", &[s]).unwrap();
    (dir, store)
}

#[test]
fn the_uncorrupted_run_reads_back_as_written() {
    let (_d, store) = store();
    let r = &store.records("r1").unwrap()[0];
    assert_eq!(r.item.prompt[0].content, "你好");
    let g = r.generation.as_ref().unwrap();
    assert_eq!((g.input_tokens, g.faults.as_slice(), g.attempts), (Some(3), &[FaultKind::Timeout][..], 2));
    assert_eq!(r.score.as_ref().unwrap().metrics["rougeL"], 0.5);
}

#[test]
fn every_typed_column_that_does_not_decode_is_an_error_naming_run_item_and_column() {
    let cases: &[(&str, &str, &str)] = &[
        ("items", "task", "dialogue_bass"),
        ("items", "lang", "fr"),
        ("items", "prompt", "[{\"role\": \"user\"}]"),
        ("items", "prompt", "not json"),
        ("items", "ord", "-1"),
        ("generations", "status", "done"),
        ("generations", "faults", "[\"timeout\", \"meteor\"]"),
        ("generations", "faults", "{"),
        ("generations", "error_kind", "meteor"),
        ("generations", "input_tokens", "-5"),
        ("generations", "output_tokens", "lots"),
        ("generations", "latency_ms", "fast"),
        ("generations", "attempts", "-1"),
        ("scores", "outcome", "great"),
        ("scores", "metrics", "{\"rougeL\": \"high\"}"),
        ("scores", "metrics", "[0.5]"),
        ("scores", "metrics", "{}"),
    ];
    for (table, column, value) in cases {
        let (_d, store) = store();
        // Integer-typed columns take the value as a number where it is one (SQLite's affinity).
        let n = store.corrupt_for_tests(table, column, "r1", Some("dialogue_base-001"), value).unwrap();
        assert_eq!(n, 1, "{table}.{column}");
        let e = store.records("r1").expect_err(&format!("{table}.{column} = {value} was read")).to_string();
        assert!(
            e.contains("run r1") && e.contains("item dialogue_base-001") && e.contains(&format!("`{table}.{column}")),
            "{table}.{column} = {value}: {e}"
        );
    }
}

#[test]
fn run_columns_that_do_not_decode_are_errors_naming_the_run_and_column() {
    for (column, value) in [("status", "finished"), ("spec", "{\"model\": 1}"), ("spec", "")] {
        let (_d, store) = store();
        store.corrupt_for_tests("runs", column, "r1", None, value).unwrap();
        let e = store.run("r1").expect_err(column).to_string();
        assert!(e.contains("run r1") && e.contains(&format!("`runs.{column}`")), "{column}: {e}");
        assert!(store.runs().is_err());
    }
}
