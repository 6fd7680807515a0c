//! `h2htalk score` and `h2htalk data check` end to end, as a user runs them.

mod common;

use std::collections::BTreeSet;
use std::fs;

use common::{h2htalk, predictions, read_pairs, references, stdout};
use h2htalk_data::Task;
use serde_json::Value;
use tempfile::TempDir;

#[test]
fn paper_profile_writes_one_object_per_pair_and_drops_empty_predictions() {
    let preds = predictions(&[(Task::DialogueEmotion, 5), (Task::ItineraryMiddle, 1)]);
    let out_dir = TempDir::new().unwrap();
    let out_file = out_dir.path().join("pairs.jsonl");
    let refs = references();
    let text = stdout(&h2htalk(&[
        "score",
        "--references",
        refs.to_str().unwrap(),
        "--predictions",
        preds.path().to_str().unwrap(),
        "--output",
        out_file.to_str().unwrap(),
    ]));
    let pairs = read_pairs(&out_file);
    assert_eq!(pairs.len(), 4589);
    let metric_keys: BTreeSet<&str> =
        ["task", "index", "rouge1", "rouge2", "rougeL", "bleu1", "bleu2", "bleu3", "bleu4"].into();
    let dropped_keys: BTreeSet<&str> = ["task", "index", "dropped"].into();
    let mut dropped = Vec::new();
    for p in &pairs {
        let keys: BTreeSet<&str> = p.keys().map(String::as_str).collect();
        if p.contains_key("dropped") {
            assert_eq!(keys, dropped_keys);
            assert_eq!(p["dropped"], true);
            dropped.push((p["task"].as_str().unwrap().to_string(), p["index"].as_u64().unwrap()));
        } else {
            assert_eq!(keys, metric_keys);
        }
    }
    assert_eq!(dropped, [("dialogue_emotion".to_string(), 5), ("itinerary_middle".to_string(), 1)]);
    assert_eq!(pairs[0]["task"], "dialogue_base");
    assert_eq!(pairs[0]["index"], 1);

    let overall = text.lines().find(|l| l.starts_with("overall (pooled)")).unwrap();
    let cols: Vec<&str> = overall.split_whitespace().collect();
    assert_eq!(&cols[2..4], ["4587", "2"], "{overall}");
    let emotion = text.lines().find(|l| l.starts_with("dialogue_emotion")).unwrap();
    assert_eq!(emotion.split_whitespace().nth(2), Some("1"), "{emotion}");
    let signature = text.lines().find(|l| l.starts_with("signature: ")).unwrap();
    assert!(signature.contains("profile:paper") && signature.contains("jieba-0.42.1") && signature.contains("method1"));
}

#[test]
fn strict_profile_scores_empty_predictions_zero_and_json_summary_agrees_with_pairs() {
    let preds = predictions(&[(Task::RecollectionRefine, 3)]);
    let out_dir = TempDir::new().unwrap();
    let out_file = out_dir.path().join("pairs.jsonl");
    let refs = references();
    let text = stdout(&h2htalk(&[
        "score",
        "--references",
        refs.to_str().unwrap(),
        "--predictions",
        preds.path().to_str().unwrap(),
        "--profile",
        "strict",
        "--format",
        "json",
        "--output",
        out_file.to_str().unwrap(),
    ]));
    let summary: Value = serde_json::from_str(&text).unwrap();
    let pairs = read_pairs(&out_file);
    let zero = pairs.iter().find(|p| p["task"] == "recollection_refine" && p["index"] == 3).unwrap();
    for m in ["rouge1", "rouge2", "rougeL", "bleu1", "bleu2", "bleu3", "bleu4"] {
        assert_eq!(zero[m], 0.0);
    }
    assert_eq!(summary["overall"]["scored"], 4589);
    assert_eq!(summary["overall"]["dropped"], 0);
    assert_eq!(summary["overall"]["empty_predictions"], 1);
    assert!(summary["signature"].as_str().unwrap().contains("profile:strict"));
    // The pooled mean is the mean over every pair written.
    let mean = pairs.iter().map(|p| p["bleu2"].as_f64().unwrap()).sum::<f64>() / pairs.len() as f64;
    assert!((summary["overall"]["means"]["bleu2"].as_f64().unwrap() - mean).abs() < 1e-12);
    let task = summary["tasks"].as_array().unwrap().iter().find(|t| t["task"] == "recollection_refine").unwrap();
    assert_eq!(task["empty_predictions"], 1);
}

#[test]
fn csv_summary_has_a_row_per_task_and_the_signature() {
    let preds = predictions(&[]);
    let refs = references();
    let text = stdout(&h2htalk(&[
        "score",
        "--references",
        refs.to_str().unwrap(),
        "--predictions",
        preds.path().to_str().unwrap(),
        "--format",
        "csv",
    ]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "task,scored,dropped,empty_predictions,rouge1,rouge2,rougeL,bleu1,bleu2,bleu3,bleu4,signature"
    );
    assert_eq!(lines.len(), 1 + 11 + 1);
    assert!(lines[12].starts_with("overall,4589,0,0,"));
}

#[test]
fn a_bad_prediction_line_fails_naming_file_line_and_field_and_writes_nothing() {
    let preds = predictions(&[]);
    let path = preds.path().join("itinerary_feedback.jsonl");
    let mut lines: Vec<String> = fs::read_to_string(&path).unwrap().lines().map(String::from).collect();
    lines[6] = r#"{"response": ["not", "a", "string"]}"#.into();
    fs::write(&path, lines.join("\n")).unwrap();
    let out_dir = TempDir::new().unwrap();
    let out_file = out_dir.path().join("pairs.jsonl");
    let refs = references();
    let out = h2htalk(&[
        "score",
        "--references",
        refs.to_str().unwrap(),
        "--predictions",
        preds.path().to_str().unwrap(),
        "--output",
        out_file.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("itinerary_feedback.jsonl:7: field `response`: expected a string, found an array"), "{err}");
    assert!(!out_file.exists());
    assert!(out.stdout.is_empty());
}

#[test]
fn data_check_prints_counts_and_the_fingerprint() {
    let refs = references();
    let text = stdout(&h2htalk(&["data", "check", refs.to_str().unwrap()]));
    assert!(text.contains("dialogue_base.jsonl") && text.contains("1882"));
    assert!(text.contains("1f23a5c347ffaa953e211b7fb253545cafd7d37cc8d81da6a25105fe81a8bf73"));
    assert!(text.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["total", "4589"]));
    assert!(text.contains("fingerprint sha256:"));

    let preds = predictions(&[]);
    let text =
        stdout(&h2htalk(&["data", "check", preds.path().to_str().unwrap(), "--references", refs.to_str().unwrap()]));
    assert!(text.contains("(predictions): ok"));
}
