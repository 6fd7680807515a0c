//! The answer cache: a sweep whose protocol changes only in what does not change a model's answers
//! (here a judge added) takes every answer from the cache without a request to any model under
//! test; `--cache off` and `read` do what they say; a miss is explained by the key field that
//! differs; `cache stats` shows what is kept and how runs used it.

mod common;

use std::sync::atomic::Ordering;

use common::*;
use h2htalk_store::Store;
use h2htalk_testserver::{ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

const VERDICT: &str = "{\"scores\": {\"empathy\": 8, \"fit_to_state\": 7, \"persona_consistency\": 9, \
                       \"naturalness\": 6}, \"reason\": \"warm\"}";

fn requests(s: &TestServer) -> u64 {
    s.counters.requests.load(Ordering::SeqCst)
}

struct Setup {
    _rt: tokio::runtime::Runtime,
    dir: TempDir,
    companions: Vec<TestServer>,
    judge: TestServer,
    config: String,
}

fn setup() -> Setup {
    let rt = runtime();
    let companions: Vec<TestServer> = ["（点头）我在呢，慢慢说。", "先歇一会儿吧，我们明天再想。"]
        .iter()
        .map(|a| {
            start_server(&rt, ServerConfig { script: vec![(String::new(), a.to_string())], ..ServerConfig::default() })
        })
        .collect();
    let judge =
        start_server(&rt, ServerConfig { script: vec![(String::new(), VERDICT.into())], ..ServerConfig::default() });
    let dir = TempDir::new().unwrap();
    let config = models_config(dir.path(), &[("m0", &companions[0]), ("m1", &companions[1])]);
    Setup { _rt: rt, companions, judge, config, dir }
}

impl Setup {
    fn db(&self) -> String {
        self.dir.path().join("runs.db").to_str().unwrap().to_string()
    }

    fn sweep(&self, name: &str, extra: &[&str]) -> Value {
        let suite = suite();
        let db = self.db();
        let mut args = vec!["sweep", "--name", name, "--config", &self.config, "--db", &db];
        args.extend(["--suite", suite.to_str().unwrap(), "--model", "m0", "--model", "m1"]);
        args.extend(SMALL);
        args.push("--json");
        args.extend(extra);
        json_of(&h2htalk(&args))
    }
}

fn run_ids(sweep: &Value) -> Vec<String> {
    sweep["members"].as_array().unwrap().iter().map(|m| m["run_id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn adding_a_judge_to_a_finished_sweep_sends_no_generation_request_to_any_model_under_test() {
    let s = setup();
    let first = s.sweep("plain", &[]);
    let asked: Vec<u64> = s.companions.iter().map(requests).collect();
    assert!(asked.iter().all(|n| *n > 0), "{asked:?}");

    let judge_url = s.judge.base_url();
    let judged = s.sweep("judged", &["--judge", "openai:judge", "--judge-base-url", &judge_url]);
    assert_eq!(s.companions.iter().map(requests).collect::<Vec<_>>(), asked, "a model under test was asked again");
    assert!(requests(&s.judge) > 0, "the judge was asked");

    let store = Store::open_read_only(std::path::Path::new(&s.db())).unwrap();
    for (old, new) in run_ids(&first).iter().zip(run_ids(&judged)) {
        assert_ne!(old, &new, "a judge changes the protocol: a new run");
        let texts =
            |id: &str| -> Vec<Option<String>> { store.generations(id).unwrap().into_iter().map(|g| g.text).collect() };
        assert_eq!(texts(old), texts(&new), "the new run's answers are the stored ones");
        // The run records that its answers came from the cache.
        let uses = store.cache_uses(Some(&new)).unwrap();
        let model_use = uses.iter().find(|u| u.model.starts_with("openai:m")).expect("the model's use is recorded");
        assert_eq!((model_use.hits, model_use.misses), (store.generations(&new).unwrap().len() as u64, 0));
    }

    // `cache stats` shows both models' answers and every run's use.
    let stats = json_of(&h2htalk(&["cache", "stats", "--db", &s.db(), "--json"]));
    let models: Vec<&str> = stats["models"].as_array().unwrap().iter().map(|m| m["model"].as_str().unwrap()).collect();
    assert!(models.iter().any(|m| m.starts_with("openai:m0@")) && models.iter().any(|m| m.starts_with("openai:m1@")));
    assert!(stats["uses"].as_array().unwrap().len() >= 4, "{stats}");
}

#[test]
fn cache_off_asks_again_read_keeps_nothing_and_a_miss_is_explained() {
    let s = setup();
    s.sweep("first", &[]);
    let asked: Vec<u64> = s.companions.iter().map(requests).collect();
    // Off: a new protocol (another judge seed would do; here the name differs only) asks again.
    let judge_url = s.judge.base_url();
    s.sweep("off", &["--cache", "off", "--judge", "openai:judge", "--judge-base-url", &judge_url]);
    let after_off: Vec<u64> = s.companions.iter().map(requests).collect();
    assert!(
        after_off.iter().zip(&asked).all(|(a, b)| a > b),
        "--cache off asked the models: {asked:?} → {after_off:?}"
    );

    // Read: a temperature never used is asked, and its answers are not kept.
    let kept = |db: &str| -> u64 {
        let stats = json_of(&h2htalk(&["cache", "stats", "--db", db, "--json"]));
        stats["models"].as_array().unwrap().iter().map(|m| m["entries"].as_u64().unwrap()).sum()
    };
    let before = kept(&s.db());
    s.sweep("read", &["--cache", "read", "--temperature", "0.7"]);
    assert_eq!(kept(&s.db()), before, "--cache read added answers");

    // A miss says which field of the key differs from the nearest kept call.
    let suite = suite();
    let db = s.db();
    let out = h2htalk(&[
        "run",
        "--model",
        "m0",
        "--config",
        &s.config,
        "--db",
        &db,
        "--suite",
        suite.to_str().unwrap(),
        "--tasks",
        "dialogue_base",
        "--limit",
        "1",
        "--metrics",
        "lexical",
        "--temperature",
        "0.9",
        "--explain-cache",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("cache miss: settings differ") && stderr.contains("temperature: kept 0"), "{stderr}");
    assert!(stderr.contains("asked 0.9"), "{stderr}");
}
