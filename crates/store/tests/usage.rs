//! Helper tokens: each call's tokens are added to the run's count for its role, model and purpose;
//! a store written before they were recorded reads as having none; a damaged row is an error.

use h2htalk_data::SapMode;
use h2htalk_store::{CallUsage, Prices, Store, UsageRole, UsageRow};

fn row(role: UsageRole, purpose: &str, usage: CallUsage, prices: Option<Prices>) -> UsageRow {
    UsageRow { role, model: "openai:j".into(), purpose: h2htalk_store::Purpose::parse(purpose).unwrap(), usage, prices }
}

#[test]
fn calls_add_up_per_role_model_and_purpose() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let spec = h2htalk_testkit::spec("openai", "m", SapMode::On);
    let mut store = Store::open(&path).unwrap();
    store.create_run("a", &spec, &[]).unwrap();
    let p = Some(Prices { input_per_million: 1.0, output_per_million: 2.0 });
    store.add_usage("a", &row(UsageRole::Judge, "rubric", CallUsage::answer(Some(10), Some(3)), p)).unwrap();
    store.add_usage("a", &row(UsageRole::Judge, "rubric", CallUsage::answer(None, Some(3)), p)).unwrap();
    store.add_usage("a", &row(UsageRole::Simulator, "user", CallUsage::answer(Some(5), Some(1)), None)).unwrap();
    let rows = store.usage("a").unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].role, UsageRole::Judge);
    assert_eq!(rows[0].usage, CallUsage { calls: 2, input_tokens: 10, output_tokens: 3, unknown_usage: 1 });
    assert_eq!(rows[0].prices, p);
    assert_eq!(rows[1].role, UsageRole::Simulator);
    assert_eq!(rows[1].prices, None, "a price not set stays not set");
    assert!(store.usage("b").unwrap().is_empty());

    // A negative count is damage, never a number.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE call_usage SET calls = -1 WHERE purpose = 'user'", [])
        .unwrap();
    let e = store.usage("a").unwrap_err().to_string();
    assert!(e.contains("call_usage.calls"), "{e}");
    drop(store);

    // A store of the same schema written before helper tokens were recorded: none, no error.
    rusqlite::Connection::open(&path).unwrap().execute_batch("DROP TABLE call_usage;").unwrap();
    let old = Store::open_read_only(&path).unwrap();
    assert!(old.usage("a").unwrap().is_empty());
    drop(old);
    let store = Store::open(&path).unwrap();
    store.add_usage("a", &row(UsageRole::Companion, "conversation", CallUsage::answer(Some(1), Some(1)), p)).unwrap();
    assert_eq!(store.usage("a").unwrap().len(), 1);
}
