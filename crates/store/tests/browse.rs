//! The viewer's index: built from a store, kept in step with new rows, filtered, searched (Chinese
//! included, search syntax taken literally) and paged forward and back by keyset.

use std::collections::BTreeMap;

use h2htalk_data::suite::FormatCheckName;
use h2htalk_store::browse::{Cursor, ItemFilter, Key, RunTags, SortBy, ViewIndex};
use h2htalk_store::{FormatCheck, Store};
use h2htalk_testkit::browse::{answer as add, make_run};
use tempfile::TempDir;

fn index(store: &Store, dir: &TempDir) -> ViewIndex {
    ViewIndex::open(std::path::Path::new(store.path()), &dir.path().join("runs.db.view")).unwrap()
}

fn refresh(index: &mut ViewIndex, runs: &[&str]) -> h2htalk_store::browse::Refreshed {
    let tags: BTreeMap<String, Vec<String>> = BTreeMap::from([("s2".to_string(), vec!["implicit_need".to_string()])]);
    let runs: Vec<RunTags> = runs.iter().map(|r| RunTags { run_id: r, model: r, tags: &tags }).collect();
    index.refresh(&runs).unwrap()
}

fn ids(index: &ViewIndex, filter: &ItemFilter) -> Vec<String> {
    let page = index.page(filter, &SortBy::Store, &Cursor::First, 100).unwrap();
    page.rows.iter().map(|r| format!("{}/{}", r.run_id, r.scenario_id)).collect()
}

#[test]
fn filters_search_and_keyset_pages_forward_and_back() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    make_run(&mut store, "a", 0.0, 6);
    make_run(&mut store, "b", 0.05, 6);
    store
        .replace_format_checks(
            "a",
            &[FormatCheck {
                scenario_id: "s4".into(),
                task: "dialogue_base".into(),
                name: FormatCheckName::NotEmpty,
                passed: false,
                message: Some("too long".into()),
            }],
        )
        .unwrap();
    let mut ix = index(&store, &dir);
    let done = refresh(&mut ix, &["a", "b"]);
    assert_eq!((done.runs_indexed, done.rows_indexed), (2, 12));
    // Nothing changed: nothing is indexed again.
    assert_eq!(refresh(&mut ix, &["a", "b"]).runs_indexed, 0);

    let f = |edit: &dyn Fn(&mut ItemFilter)| {
        let mut f = ItemFilter::default();
        edit(&mut f);
        f
    };
    assert_eq!(ids(&ix, &f(&|f| f.run = Some("b".into()))).len(), 6);
    assert_eq!(ids(&ix, &f(&|f| f.status = Some("failed".into()))), ["a/s5", "b/s5"]);
    assert_eq!(ids(&ix, &f(&|f| f.format_failed = true)), ["a/s4"]);
    assert_eq!(ids(&ix, &f(&|f| f.tag = Some("implicit_need".into()))), ["a/s2", "b/s2"]);
    assert_eq!(ids(&ix, &f(&|f| f.task = Some("dialogue_emotion".into()))).len(), 6);
    let range = f(&|f| {
        f.metric = Some("rougeL".into());
        f.min = Some(0.26);
        f.max = Some(0.42);
    });
    assert_eq!(ids(&ix, &range), ["a/s3", "a/s4", "b/s3"]);
    // Search: a Chinese phrase inside a sentence, in answers and in prompts/references alike.
    assert_eq!(ids(&ix, &f(&|f| f.text = Some("灯塔".into()))), ["a/s4", "b/s4"]);
    assert_eq!(ids(&ix, &f(&|f| f.text = Some("一起去散步".into()))), ["a/s0", "b/s0"]);
    assert_eq!(ids(&ix, &f(&|f| f.text = Some("第3个问题".into()))), ["a/s3", "b/s3"]);
    assert_eq!(ids(&ix, &f(&|f| f.text = Some("interview".into()))), ["a/s1", "b/s1"]);
    // Search syntax and SQL are text to find, not commands.
    assert_eq!(ids(&ix, &f(&|f| f.text = Some("\" OR 1=1; --".into()))), ["a/s3", "b/s3"]);
    assert_eq!(ids(&ix, &f(&|f| f.text = Some("NEAR(a b)".into()))), ["a/s3", "b/s3"]);
    assert!(ids(&ix, &f(&|f| f.text = Some("nowhere at all".into()))).is_empty());

    // Pages of 4 forward, then back, by the store's order and by a metric.
    for sort in [SortBy::Store, SortBy::Metric { name: "rougeL".into(), descending: true }] {
        let all = ix.page(&ItemFilter::default(), &sort, &Cursor::First, 100).unwrap().rows;
        let want = if sort == SortBy::Store { 12 } else { 10 };
        assert_eq!(all.len(), want);
        if let SortBy::Metric { .. } = sort {
            assert!(all.windows(2).all(|w| w[0].value >= w[1].value), "descending values");
        }
        let mut seen = Vec::new();
        let mut pages = Vec::new();
        let mut cursor = Cursor::First;
        loop {
            let page = ix.page(&ItemFilter::default(), &sort, &cursor, 4).unwrap();
            seen.extend(page.rows.iter().map(|r| r.id));
            pages.push(page.clone());
            match page.next {
                Some(k) => cursor = Cursor::After(k),
                None => break,
            }
        }
        assert_eq!(seen, all.iter().map(|r| r.id).collect::<Vec<_>>());
        assert_eq!(pages.len(), want.div_ceil(4));
        assert!(pages[0].prev.is_none() && pages.last().unwrap().next.is_none());
        // Back from the last page: the one before it again.
        let last = pages.last().unwrap();
        let back = ix.page(&ItemFilter::default(), &sort, &Cursor::Before(last.prev.clone().unwrap()), 4).unwrap();
        assert_eq!(back.rows, pages[pages.len() - 2].rows);
        assert!(back.next.is_some());
    }

    // Side by side: the scenarios both runs hold, the largest difference first.
    let d = ix.differences("a", "b", "rougeL", 10).unwrap();
    assert_eq!(d.len(), 6);
    assert!((d[0].diff.unwrap() - 0.05).abs() < 1e-12 && d[5].diff.is_none());
    assert_eq!(ix.runs_of_scenario("dialogue_base", "s2").unwrap(), ["a", "b"]);
}

#[test]
fn the_index_keeps_in_step_with_new_rows_and_runs_and_is_rebuilt_for_another_store() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    make_run(&mut store, "a", 0.0, 2);
    let mut ix = index(&store, &dir);
    refresh(&mut ix, &["a"]);
    let pending = ItemFilter { status: Some("pending".into()), ..Default::default() };
    assert_eq!(ids(&ix, &pending).len(), 4);
    // More answers arrive (a resumed run) and a new run is made: the store says it changed, and
    // both are seen on refresh.
    assert!(ix.store_changed().unwrap(), "the first look");
    assert!(!ix.store_changed().unwrap(), "nothing committed since");
    add(&mut store, "a", 0.0, 2..4);
    make_run(&mut store, "c", 0.0, 6);
    assert!(ix.store_changed().unwrap());
    let done = refresh(&mut ix, &["a", "c"]);
    assert_eq!(done.runs_indexed, 2);
    assert_eq!(ids(&ix, &pending), ["a/s4", "a/s5"]);
    assert_eq!(ids(&ix, &ItemFilter { text: Some("深呼吸".into()), ..Default::default() }), ["a/s2", "c/s2"]);
    // A run no longer listed leaves the index.
    assert_eq!(refresh(&mut ix, &["c"]).runs_dropped, 1);
    assert_eq!(ids(&ix, &ItemFilter::default()).len(), 6);
    assert!(Key::decode("0.5~3").is_some());

    // The same index file opened for another store starts empty.
    let mut other = Store::open(&dir.path().join("other.db")).unwrap();
    make_run(&mut other, "z", 0.0, 1);
    let ix = ViewIndex::open(std::path::Path::new(other.path()), &dir.path().join("runs.db.view")).unwrap();
    assert!(ids(&ix, &ItemFilter::default()).is_empty());
}
