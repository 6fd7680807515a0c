//! `h2htalk run` and `h2htalk runs` end to end against the in-suite OpenAI-compatible server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use h2htalk_testserver::{Faults, ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

fn suite() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites").display().to_string()
}

fn h2htalk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h2htalk")).args(args).output().unwrap()
}

fn json_run(server: &TestServer, db: &Path, extra: &[&str]) -> Value {
    let url = server.base_url();
    let suite = suite();
    let mut args = vec![
        "run",
        "--model",
        "openai:test",
        "--base-url",
        &url,
        "--suite",
        &suite,
        "--db",
        db.to_str().unwrap(),
        "--json",
    ];
    // The neural metrics of a run are tested in tests/neural.rs; here the lexical ones keep runs short.
    if !extra.contains(&"--resume") {
        args.extend_from_slice(&["--metrics", "lexical"]);
    }
    args.extend_from_slice(extra);
    let out = h2htalk(&args);
    assert!(out.status.success(), "run failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

#[test]
fn a_run_generates_stores_scores_and_exports() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let out =
        json_run(&server, &db, &["--limit", "2", "--tasks", "dialogue_base,itinerary_middle,recollection_refine"]);
    for key in ["run_id", "items", "generated", "failed", "scored", "input_tokens", "output_tokens", "cost_usd"] {
        assert!(out.get(key).is_some(), "--json lacks {key}: {out}");
    }
    assert_eq!(
        (out["items"].as_u64(), out["generated"].as_u64(), out["failed"].as_u64(), out["scored"].as_u64()),
        (Some(6), Some(6), Some(0), Some(6))
    );
    assert!(out["input_tokens"].as_u64().unwrap() > 0);
    let run_id = out["run_id"].as_str().unwrap().to_string();

    let list = h2htalk(&["runs", "list", "--db", db.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&list.stdout).contains(&run_id));
    let show = h2htalk(&["runs", "show", &run_id, "--db", db.to_str().unwrap(), "--json"]);
    let show: Value = serde_json::from_slice(&show.stdout).unwrap();
    let prov = &show["run"]["provenance"];
    for key in ["suite", "templates_hash", "sap", "model", "settings", "h2htalk_version", "scoring"] {
        assert!(!prov[key].is_null(), "provenance lacks {key}: {prov}");
    }
    assert!(prov["suite"]["fingerprint"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(prov["sap"]["mode"], "on");

    let export = dir.path().join("export");
    let ex = h2htalk(&["runs", "export", &run_id, "--out", export.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(ex.status.success(), "{}", String::from_utf8_lossy(&ex.stderr));
    let scored = h2htalk(&[
        "score",
        "--references",
        export.join("references").to_str().unwrap(),
        "--predictions",
        export.join("predictions").to_str().unwrap(),
        "--profile",
        "strict",
        "--format",
        "json",
    ]);
    assert!(scored.status.success(), "{}", String::from_utf8_lossy(&scored.stderr));
    let scored: Value = serde_json::from_slice(&scored.stdout).unwrap();
    assert_eq!(scored["overall"]["scored"], 6);
    // The exported answers score as the run scored them.
    let run_rouge = show["summary"]["overall"]["means"]["rougeL"].as_f64().unwrap();
    assert!((scored["overall"]["means"]["rougeL"].as_f64().unwrap() - run_rouge).abs() < 1e-12);
}

#[test]
fn faults_are_retried_or_recorded_as_failures_never_as_answers() {
    let rt = runtime();
    let mut faults = Faults::uniform(0.2);
    faults.hang = 0.0; // hangs are exercised with a short client timeout in the reliability tests
    faults.retry_after_s = 0;
    let server = rt.block_on(TestServer::start(ServerConfig { seed: 3, faults, ..Default::default() }, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let out = json_run(&server, &db, &["--safety"]);
    let items = out["items"].as_u64().unwrap();
    assert_eq!(items, 594);
    assert_eq!(out["generated"].as_u64().unwrap() + out["failed"].as_u64().unwrap(), items, "{out}");
    assert!(out["failed"].as_u64().unwrap() > 0, "content_filter answers are failures: {out}");
    assert_eq!(out["scored"], out["generated"]);
    let reasons = out["failure_reasons"].as_object().unwrap();
    assert!(
        reasons.keys().all(|k| k == "content_filter"
            || k == "empty_content"
            || k == "malformed_response"
            || k == "connection"
            || k == "server_error"
            || k == "rate_limited"),
        "{reasons:?}"
    );
    let seen = out["faults_seen"].as_object().unwrap();
    for class in ["rate_limited", "server_error", "connection", "malformed_response", "empty_content", "content_filter"]
    {
        assert!(seen.contains_key(class), "fault class {class} not seen: {seen:?}");
    }
    let server_faults = server.counters.faults();
    assert!(server_faults.len() >= 9, "{server_faults:?}");

    // --retry-failed asks again for the failed items only; a generated answer is never replaced.
    let run_id = out["run_id"].as_str().unwrap();
    let before = out["generated"].as_u64().unwrap();
    let again = json_run(&server, &db, &["--resume", run_id, "--retry-failed"]);
    assert_eq!(again["items"], 594);
    assert!(again["generated"].as_u64().unwrap() >= before);
    assert_eq!(again["generated"].as_u64().unwrap() + again["failed"].as_u64().unwrap(), 594);
}

#[test]
fn a_killed_run_resumes_without_redoing_or_losing_anything() {
    let rt = runtime();
    let config = ServerConfig { latency_ms: 20, ..Default::default() };
    let server = rt.block_on(TestServer::start(config, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let url = server.base_url();
    let suite = suite();
    let mut child = Command::new(env!("CARGO_BIN_EXE_h2htalk"))
        .args([
            "run",
            "--model",
            "openai:test",
            "--base-url",
            &url,
            "--suite",
            &suite,
            "--db",
            db.to_str().unwrap(),
            "--json",
            "--metrics",
            "lexical",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let list = String::from_utf8(h2htalk(&["runs", "list", "--db", db.to_str().unwrap()]).stdout).unwrap();
    let run_id = list.lines().nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    let requests_before = server.counters.requests.load(std::sync::atomic::Ordering::Relaxed);
    let resumed = json_run(&server, &db, &["--resume", &run_id]);
    let requests_after = server.counters.requests.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(resumed["items"], 462);
    assert_eq!(resumed["generated"], 462);
    assert_eq!(resumed["failed"], 0);
    // Only what had not been committed was asked for again (a few in flight at the kill may repeat).
    let redone = requests_after - requests_before;
    assert!(redone < 462 && requests_before > 0, "before {requests_before}, redone {redone}");

    // The result equals an uninterrupted run.
    let db2 = dir.path().join("clean.db");
    let clean = json_run(&server, &db2, &[]);
    assert_eq!(clean["summary"]["overall"]["means"], resumed["summary"]["overall"]["means"]);
}
