//! Pairwise sessions: judgments kept while the judge's settings and prompts stay the same, dropped
//! when they change; a store written before sessions were recorded reads as having none.

use h2htalk_data::SapMode;
use h2htalk_store::{PairJudgment, PairOutcome, Store};
use serde_json::json;

fn row(id: &str, outcome: PairOutcome) -> PairJudgment {
    PairJudgment { scenario_id: id.into(), outcome, order_ab: None, order_ba: None, error: None }
}

#[test]
fn judgments_survive_the_same_session_and_not_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let mut store = Store::open(&path).unwrap();
    let spec = h2htalk_testkit::spec("openai", "m", SapMode::On);
    store.create_run("a", &spec, &[]).unwrap();
    store.create_run("b", &spec, &[]).unwrap();
    let s7 = json!({"seed": 7});
    assert!(!store.begin_pair_session("j", "a", "b", &s7, "h1").unwrap());
    store.put_pair_judgment("j", "a", "b", &row("x", PairOutcome::A)).unwrap();
    // The same judge, settings and prompts: kept.
    assert!(!store.begin_pair_session("j", "a", "b", &s7, "h1").unwrap());
    assert_eq!(store.pair_judgments("j", "a", "b").unwrap().len(), 1);
    assert_eq!(store.pair_session("j", "a", "b").unwrap().unwrap().prompt_hash, "h1");
    assert_eq!(store.pair_judges("a", "b").unwrap(), ["j"]);
    // Other prompts: the pair's judgments by this judge are dropped.
    assert!(store.begin_pair_session("j", "a", "b", &s7, "h2").unwrap());
    assert!(store.pair_judgments("j", "a", "b").unwrap().is_empty());
    store.put_pair_judgment("j", "a", "b", &row("x", PairOutcome::Tie)).unwrap();
    // Other settings too.
    assert!(store.begin_pair_session("j", "a", "b", &json!({"seed": 8}), "h2").unwrap());
    assert!(store.pair_judgments("j", "a", "b").unwrap().is_empty());
    drop(store);

    // A store of the same schema written before sessions were recorded: no sessions, no error.
    rusqlite::Connection::open(&path).unwrap().execute_batch("DROP TABLE pairwise_sessions;").unwrap();
    let old = Store::open_read_only(&path).unwrap();
    assert_eq!(old.pair_session("j", "a", "b").unwrap(), None);
    assert!(old.pair_judges("a", "b").unwrap().is_empty());
    drop(old);
    // Opened for writing, it gets the table.
    let mut store = Store::open(&path).unwrap();
    assert!(!store.begin_pair_session("j", "a", "b", &s7, "h1").unwrap());
    assert!(store.pair_session("j", "a", "b").unwrap().is_some());
}
