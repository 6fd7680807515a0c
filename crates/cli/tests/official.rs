//! The official set (`suites/official`): its quality gates over all 4,589 lines, and a run of it
//! scored the official way (`runs export` in the official layout, `score --references <official>`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use h2htalk_audit::official::check_official;
use h2htalk_data::suite::embedded;
use h2htalk_data::{Task, load_references, load_suite, load_suite_with};
use h2htalk_store::Store;
use h2htalk_testkit::{reference_dir, root, skip};
use h2htalk_testserver::{ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

fn official_suite() -> PathBuf {
    root().join("suites/official")
}

fn h2htalk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h2htalk")).args(args).output().unwrap()
}

/// The official references, or `None` (and a loud skip outside CI) when they are not here.
fn references() -> Option<PathBuf> {
    let dir = reference_dir();
    if dir.join("dialogue_base.jsonl").is_file() {
        Some(dir)
    } else {
        skip(&format!("the official references are not at {}", dir.display()));
        None
    }
}

#[test]
fn the_official_set_answers_every_line_and_passes_its_gates() {
    let Some(refs) = references() else { return };
    let suite = load_suite_with(&official_suite(), Some(&refs)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.name, "official-backfill");
    assert_eq!(suite.scenarios.len(), 4589);
    // One scenario per official line, in line order, its reference the official text.
    let official = load_references(&refs).unwrap();
    for task in Task::ALL {
        let texts = official.texts(task);
        let mine: Vec<_> = suite.scenarios.iter().filter(|s| s.task == task).collect();
        assert_eq!(mine.len(), texts.len(), "{task}");
        for (i, s) in mine.iter().enumerate() {
            let o = s.official.as_ref().unwrap_or_else(|| panic!("{} has no `official`", s.id));
            assert_eq!((o.stem.as_str(), o.line), (task.stem(), i + 1), "{}", s.id);
            assert_eq!(s.reference, texts[i], "{}", s.id);
        }
    }
    // No two scenarios share inputs; every scenario is tagged (the loader refuses otherwise, and
    // here it is checked again on the loaded set).
    let mut inputs = HashSet::new();
    for s in &suite.scenarios {
        assert!(inputs.insert(serde_json::to_string(&s.inputs).unwrap()), "{} repeats inputs", s.id);
        assert!(!s.tags.emotions.is_empty(), "{} has no emotions", s.id);
        assert!(s.tags.risk.is_none());
    }
    let baseline = load_suite(&embedded::dir().unwrap()).unwrap();
    let check = check_official(&suite, &baseline).expect("a suite of official lines");
    assert!(check.counts.values().all(|(lines, scenarios)| lines == scenarios), "{check}");
    assert_eq!(check.give_away.len(), 11, "{check}");
    for row in &check.give_away {
        assert!(row.bound.is_some(), "{}: no bound\n{check}", row.task);
        assert!(
            row.over.is_empty(),
            "{}: over the give-away bound: {:?}\n{check}",
            row.task,
            &row.over[..row.over.len().min(5)]
        );
    }
    // Recollection: every listed memory is in its conversation; 264 items hold nothing to remember.
    assert_eq!(check.no_key_information_items, 264, "{check}");
    assert_eq!(check.memory_items, 412 - 264, "{check}");
    assert!(check.missing_memories.is_empty(), "{check}");
    assert!(check.self_disclosure.is_empty(), "{check}");
    // Length gives the no-information answer away by at most 10 points over always giving it.
    let rule = check.length_rule;
    assert_eq!((rule.items, rule.no_key_information), (412, 264));
    assert!(rule.advantage() <= h2htalk_audit::official::LENGTH_RULE_MAX_ADVANTAGE, "{check}");
    assert!(check.passed());
    // Official references that break their constraints are reported, not refused.
    let breaks: usize = check.breaks.values().map(Vec::len).sum();
    assert!(breaks > 0 && check.to_string().contains("reported, not refused"));
}

#[test]
fn suite_check_reports_the_official_set() {
    let Some(refs) = references() else { return };
    let suite = official_suite();
    let out = h2htalk(&["suite", "check", "--suite", suite.to_str().unwrap(), "--references", refs.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(": ok, 4589 scenarios"), "{text}");
    assert!(text.contains("(suite official-backfill)"), "{text}");
    assert!(text.contains("total                         4589      4589"), "{text}");
    assert!(text.contains("fingerprint sha256:"), "{text}");
    let within: Vec<&str> = text.lines().filter(|l| l.ends_with("  yes")).collect();
    assert_eq!(within.len(), 11, "every sub-task's give-away within its bounds:\n{text}");
    assert!(text.contains("memories not held by their conversation: 0"), "{text}");
}

/// A small suite of two official lines, inheriting the project's templates, for error cases.
fn two_line_suite(dir: &Path) -> PathBuf {
    let suite = dir.join("suite");
    std::fs::create_dir_all(suite.join("scenarios")).unwrap();
    std::fs::create_dir_all(suite.join("personas")).unwrap();
    let inherit = root().join("suites").canonicalize().unwrap();
    std::fs::write(suite.join("suite.json"), serde_json::json!({"name": "two", "inherit": inherit}).to_string())
        .unwrap();
    let lines: Vec<String> = std::fs::read_to_string(official_suite().join("scenarios/dialogue_base.jsonl"))
        .unwrap()
        .lines()
        .take(2)
        .map(String::from)
        .collect();
    std::fs::write(suite.join("scenarios/dialogue_base.jsonl"), lines.join("\n") + "\n").unwrap();
    std::fs::copy(
        official_suite().join("personas/nathaniel-morgan.json"),
        suite.join("personas/nathaniel-morgan.json"),
    )
    .unwrap();
    suite
}

#[test]
fn a_changed_or_missing_reference_is_an_error_naming_stem_and_line() {
    let Some(refs) = references() else { return };
    let tmp = TempDir::new().unwrap();
    let suite = two_line_suite(tmp.path());
    // The real references: it loads, with the inherited templates.
    let loaded = load_suite_with(&suite, Some(&refs)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((loaded.name.as_str(), loaded.scenarios.len()), ("two", 2));
    h2htalk_prompt::Prompts::load(&suite).unwrap();

    // Line 2 changed.
    let changed = tmp.path().join("changed");
    std::fs::create_dir_all(&changed).unwrap();
    let text = std::fs::read_to_string(refs.join("dialogue_base.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[1] = serde_json::json!({"response": "（笑）不是原来那句了"}).to_string();
    std::fs::write(changed.join("dialogue_base.jsonl"), lines.join("\n") + "\n").unwrap();
    let err = load_suite_with(&suite, Some(&changed)).unwrap_err().to_string();
    assert!(err.contains("official reference dialogue_base line 2") && err.contains("official.sha256"), "{err}");
    assert!(!err.contains("line 1:"), "line 1 is unchanged: {err}");

    // Only one line in the file.
    std::fs::write(changed.join("dialogue_base.jsonl"), lines[0].clone() + "\n").unwrap();
    let err = load_suite_with(&suite, Some(&changed)).unwrap_err().to_string();
    assert!(err.contains("official reference dialogue_base line 2") && err.contains("has 1 lines"), "{err}");

    // No dialogue_base file at all.
    std::fs::remove_file(changed.join("dialogue_base.jsonl")).unwrap();
    std::fs::copy(refs.join("itinerary_basic.jsonl"), changed.join("itinerary_basic.jsonl")).unwrap();
    let err = load_suite_with(&suite, Some(&changed)).unwrap_err().to_string();
    assert!(
        err.contains("official reference dialogue_base line 1") && err.contains("has no dialogue_base.jsonl"),
        "{err}"
    );

    // No reference directory at all: the error says how to give one.
    let out = h2htalk(&["suite", "check", "--suite", suite.to_str().unwrap(), "--references", "/nonexistent/refs"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/refs"));
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

#[test]
fn a_run_of_the_official_set_scores_as_score_scores_its_export() {
    let Some(refs) = references() else { return };
    let rt = runtime();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let url = server.base_url();
    let suite = official_suite();
    let run = h2htalk(&[
        "run",
        "--model",
        "openai:test",
        "--base-url",
        &url,
        "--suite",
        suite.to_str().unwrap(),
        "--references",
        refs.to_str().unwrap(),
        "--limit",
        "2",
        "--metrics",
        "lexical",
        "--profile",
        "paper",
        "--db",
        db.to_str().unwrap(),
        "--json",
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!((out["items"].as_u64(), out["generated"].as_u64()), (Some(22), Some(22)), "{out}");
    let run_id = out["run_id"].as_str().unwrap().to_string();

    // The run's scores, per (sub-task, official line); their signature names the back-filled suite.
    let store = Store::open(&db).unwrap();
    let mut by_line: BTreeMap<(String, usize), BTreeMap<String, f64>> = BTreeMap::new();
    for r in store.records(&run_id).unwrap() {
        let task = Task::from_stem(&r.item.task).unwrap();
        let line = h2htalk_data::suite::OfficialRef::line_of_id(task, &r.item.scenario_id).unwrap();
        assert!(line <= 2);
        let score = r.score.expect("scored");
        assert!(score.signature.contains("|suite:official-backfill@sha256:"), "{}", score.signature);
        by_line.insert((r.item.task.clone(), line), score.metrics);
    }
    assert_eq!(by_line.len(), 22);
    drop(store);

    let export = dir.path().join("export");
    let ex = h2htalk(&["runs", "export", &run_id, "--out", export.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    let ex_text = String::from_utf8_lossy(&ex.stdout);
    assert!(ex.status.success(), "{}", String::from_utf8_lossy(&ex.stderr));
    assert!(ex_text.contains("--partial"), "{ex_text}");
    assert!(!export.join("references").exists(), "the official references are not copied");
    let first = std::fs::read_to_string(export.join("predictions/dialogue_base.jsonl")).unwrap();
    let indices: Vec<u64> =
        first.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["index"].as_u64().unwrap()).collect();
    assert_eq!(indices, [1, 2]);

    // Without --partial the official files want every line: refused, naming what is missing.
    let predictions = export.join("predictions");
    let full =
        h2htalk(&["score", "--references", refs.to_str().unwrap(), "--predictions", predictions.to_str().unwrap()]);
    assert!(!full.status.success());
    let pairs = dir.path().join("pairs.jsonl");
    let scored = h2htalk(&[
        "score",
        "--references",
        refs.to_str().unwrap(),
        "--predictions",
        predictions.to_str().unwrap(),
        "--partial",
        "--profile",
        "paper",
        "--output",
        pairs.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(scored.status.success(), "{}", String::from_utf8_lossy(&scored.stderr));
    let summary: Value = serde_json::from_slice(&scored.stdout).unwrap();
    assert_eq!(summary["overall"]["scored"].as_u64().unwrap() + summary["overall"]["dropped"].as_u64().unwrap(), 22);
    // Pair by pair, `score` on the export equals the run's scores.
    let mut compared = 0;
    for line in std::fs::read_to_string(&pairs).unwrap().lines() {
        let pair: Value = serde_json::from_str(line).unwrap();
        let key = (pair["task"].as_str().unwrap().to_string(), pair["index"].as_u64().unwrap() as usize);
        let run_metrics = &by_line[&key];
        if pair["dropped"] == true {
            assert!(run_metrics.is_empty(), "{key:?}");
            continue;
        }
        for (name, value) in run_metrics {
            assert_eq!(pair[name].as_f64(), Some(*value), "{key:?} {name}");
        }
        compared += 1;
    }
    assert!(compared > 0);
}
