//! `run --batch` end to end against the test server's Batch API: a run killed while its batch runs
//! polls that batch when resumed (it does not pay twice), failed lines are failed items that
//! `--retry-failed` sends again, the judges' requests go through batches too, and the discount is
//! priced and recorded.

mod common;

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use h2htalk_store::{GenerationStatus, Store};
use h2htalk_testserver::{BatchBehaviour, ServerConfig};
use tempfile::TempDir;

/// A config with the model under test and a judge, both batched, polled every 50 ms.
fn config(dir: &TempDir, url: &str) -> std::path::PathBuf {
    let path = dir.path().join("h2htalk.toml");
    let entry = |name: &str| {
        format!(
            "[[model]]\nname = \"{name}\"\nbase_url = \"{url}\"\nbatch = true\nbatch_poll_s = 0.05\n\
             price_input_per_million = 2.0\nprice_output_per_million = 4.0\n"
        )
    };
    std::fs::write(&path, format!("{}{}", entry("batched"), entry("batched-judge"))).unwrap();
    path
}

fn args(config: &std::path::Path, db: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> =
        ["--config", config.to_str().unwrap(), "--db", db.to_str().unwrap(), "--json"].map(String::from).to_vec();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn new_run(config: &std::path::Path, db: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let suite = suite();
    let mut a: Vec<String> =
        ["run", "--model", "batched", "--suite", suite.to_str().unwrap(), "--limit", "2"].map(String::from).to_vec();
    a.extend(["--metrics", "lexical"].map(String::from));
    a.extend(args(config, db, extra));
    a
}

#[test]
fn a_run_killed_while_its_batch_runs_polls_that_batch_when_resumed() {
    let rt = runtime();
    let server = start_server(
        &rt,
        ServerConfig {
            batch: BatchBehaviour { complete_after_ms: 2_500, ..BatchBehaviour::default() },
            ..ServerConfig::default()
        },
    );
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let cfg = config(&dir, &server.base_url());
    let mut child = bin().args(new_run(&cfg, &db, &[])).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    while server.counters.batches_created.load(Ordering::SeqCst) == 0
        || server.counters.batch_polls.load(Ordering::SeqCst) == 0
    {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before its batch was polled");
        assert!(started.elapsed() < Duration::from_secs(120), "no batch within 2 minutes");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL, while the batch is in progress
    child.wait().unwrap();
    let store = Store::open_read_only(&db).unwrap();
    let run = store.runs().unwrap().remove(0);
    assert!(store.generations(&run.id).unwrap().is_empty(), "nothing answered before the batch ended");
    let journal = format!("batched@{}", server.base_url());
    let batches = store.batches(&run.id, &journal).unwrap();
    assert_eq!(batches.len(), 1, "the batch was recorded as soon as it was made");
    assert_eq!((batches[0].status.as_str(), batches[0].results.len()), ("created", 0));
    drop(store);

    let resume = args(&cfg, &db, &["--resume", &run.id]);
    let out = json_of(&bin().arg("run").args(&resume).output().unwrap());
    assert_eq!(out["status"], "complete", "{out}");
    let c = &server.counters;
    assert_eq!(c.batches_created.load(Ordering::SeqCst), 1, "the resumed run polled the batch it had made");
    assert_eq!(c.requests.load(Ordering::SeqCst), 0, "nothing through chat/completions");
    let store = Store::open_read_only(&db).unwrap();
    let generations = store.generations(&run.id).unwrap();
    assert_eq!(generations.len() as u64, c.batch_lines.load(Ordering::SeqCst));
    assert!(generations.iter().all(|g| g.status == GenerationStatus::Generated && g.attempts == 1));
    let recorded = store.batches(&run.id, &journal).unwrap();
    assert_eq!((recorded.len(), recorded[0].status.as_str()), (1, "completed"));
    // The discount is recorded and priced: half of 2 and 4 USD per million tokens.
    let spec = store.run(&run.id).unwrap().unwrap().spec;
    assert_eq!(spec.batch_price_factor, Some(0.5));
    assert!(spec.model.batch || spec.model_config.as_ref().is_some_and(|c| c["batch"] == true));
    let prices = spec.prices.unwrap();
    assert_eq!((prices.input_per_million, prices.output_per_million), (1.0, 2.0));
    let (i, o) = (out["input_tokens"].as_u64().unwrap(), out["output_tokens"].as_u64().unwrap());
    let cost = out["cost_usd"].as_f64().unwrap();
    assert!((cost - (i as f64 * 1.0 + o as f64 * 2.0) / 1e6).abs() < 1e-12, "{cost} for {i} in, {o} out");
}

#[test]
fn failed_lines_are_failed_items_that_retry_failed_sends_again_and_judges_batch_too() {
    let rt = runtime();
    let server = start_server(
        &rt,
        ServerConfig {
            batch: BatchBehaviour { fail_lines: 0.4, ..BatchBehaviour::default() },
            ..ServerConfig::default()
        },
    );
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let cfg = config(&dir, &server.base_url());
    let out = json_of(&bin().args(new_run(&cfg, &db, &["--judge", "batched-judge"])).output().unwrap());
    let c = &server.counters;
    assert_eq!(c.requests.load(Ordering::SeqCst), 0, "neither the model nor its judge was asked directly");
    assert!(c.batches_created.load(Ordering::SeqCst) >= 2, "the judge's requests went in batches of their own");
    let run_id = out["run_id"].as_str().unwrap().to_string();
    let store = Store::open_read_only(&db).unwrap();
    let failed: Vec<_> =
        store.generations(&run_id).unwrap().into_iter().filter(|g| g.status == GenerationStatus::Failed).collect();
    assert!(!failed.is_empty(), "a 40% failure rate failed none of {} items", out["items"]);
    for g in &failed {
        let message = g.error_message.as_deref().unwrap_or("");
        assert!(message.contains("HTTP 500") && message.contains("upstream trouble"), "{message}");
        assert_eq!((g.attempts, g.text.as_deref()), (1, None), "a failed line is not tried again by itself");
    }
    assert_eq!(out["status"], "complete_with_failures", "{out}");
    drop(store);

    let lines = c.batch_lines.load(Ordering::SeqCst);
    let batches = c.batches_created.load(Ordering::SeqCst);
    let resume = args(&cfg, &db, &["--resume", &run_id, "--retry-failed"]);
    let again = bin().arg("run").args(&resume).output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(c.batches_created.load(Ordering::SeqCst) > batches, "the failed items went in a new batch");
    let store = Store::open_read_only(&db).unwrap();
    let judge_lines = c.batch_lines.load(Ordering::SeqCst) - lines;
    // The new batches hold the failed items (and the judge's requests for the answers they got),
    // never an item that was answered.
    assert!(judge_lines >= failed.len() as u64, "{judge_lines} lines for {} failed items", failed.len());
    let after = store.generations(&run_id).unwrap();
    let retried_ok = failed
        .iter()
        .filter(|f| after.iter().any(|g| g.scenario_id == f.scenario_id && g.status == GenerationStatus::Generated))
        .count();
    assert!(retried_ok > 0, "none of {} failed items was answered when sent again", failed.len());
}
