//! Null baselines: scored exactly as `h2htalk score` scores the same texts, stored with a run and
//! shown in its report, where a run that answers every prompt with one line is flagged.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use h2htalk_testserver::{ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

fn h2htalk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h2htalk")).args(args).output().unwrap()
}

fn ok(out: Output) -> Vec<u8> {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn suite() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites").display().to_string()
}

const BASELINES: [&str; 5] = ["common_opening", "echo", "empty", "generic_comfort", "other_reference"];

#[test]
fn each_baseline_scores_what_h2htalk_score_gives_the_same_texts() {
    let dir = TempDir::new().unwrap();
    let export = dir.path().join("export");
    let suite = suite();
    let v: Value = serde_json::from_slice(&ok(h2htalk(&[
        "baselines",
        "--suite",
        &suite,
        "--json",
        "--export",
        export.to_str().unwrap(),
    ])))
    .unwrap();
    let baselines = v["baselines"].as_array().unwrap();
    let names: Vec<&str> =
        baselines.iter().map(|b| b["id"].as_str().unwrap().trim_start_matches("baseline:")).collect();
    assert_eq!(names, BASELINES);
    let mut compared = 0;
    for b in baselines {
        assert_eq!(b["status"], "baseline");
        let name = b["id"].as_str().unwrap().trim_start_matches("baseline:");
        let score: Value = serde_json::from_slice(&ok(h2htalk(&[
            "score",
            "--references",
            export.join("references").to_str().unwrap(),
            "--predictions",
            export.join(name).to_str().unwrap(),
            "--format",
            "json",
        ])))
        .unwrap();
        // The same signature, but for the suite the baselines name.
        let signature = v["signature"].as_str().unwrap();
        assert!(signature.starts_with(&format!("{}|suite:", score["signature"].as_str().unwrap())), "{signature}");
        for t in score["tasks"].as_array().unwrap() {
            let task = t["task"].as_str().unwrap();
            let group = b["groups"].as_array().unwrap().iter().find(|g| g["group"] == task).unwrap();
            assert_eq!(group["coverage"]["dropped"], t["dropped"], "{name} {task}");
            for (metric, mean) in t["means"].as_object().unwrap() {
                match mean.as_f64() {
                    Some(m) => {
                        let ours = group["metrics"][metric]["mean"].as_f64().unwrap();
                        assert!((ours - m).abs() < 1e-12, "{name} {task} {metric}: {ours} against score's {m}");
                        compared += 1;
                    }
                    // Nothing scored (the empty answer under the paper profile): no value, never 0.
                    None => assert!(group["metrics"].get(metric).is_none(), "{name} {task} {metric}"),
                }
            }
        }
    }
    // Four baselines with values × 11 sub-tasks × 7 lexical metrics.
    assert_eq!(compared, 4 * 11 * 7);
    // The official shape is kept: one file per sub-task, a line per scenario.
    let lines = std::fs::read_to_string(export.join("echo/dialogue_base.jsonl")).unwrap().lines().count();
    assert_eq!(lines, std::fs::read_to_string(export.join("references/dialogue_base.jsonl")).unwrap().lines().count());
}

fn db_arg(db: &Path) -> &str {
    db.to_str().unwrap()
}

/// A run of a model that answers every prompt with `line` (an empty script key matches every
/// prompt), stored in `dir/runs.db`, with `extra` arguments; its `--json` output.
fn constant_run(line: &str, dir: &Path, extra: &[&str]) -> Value {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let script = vec![(String::new(), line.to_string())];
    let server = rt.block_on(TestServer::start(ServerConfig { script, ..Default::default() }, 0)).unwrap();
    let (url, suite, db) = (server.base_url(), suite(), dir.join("runs.db"));
    let args = ["run", "--model", "openai:constant", "--base-url", &url, "--suite", &suite, "--db", db_arg(&db)];
    serde_json::from_slice(&ok(h2htalk(&[&args[..], &["--metrics", "lexical", "--json"], extra].concat()))).unwrap()
}

#[test]
fn a_run_that_answers_every_prompt_with_one_line_is_flagged_below_the_strongest_baseline() {
    // The constant answer.
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let report = dir.path().join("report");
    let out = constant_run(
        "（轻轻握住你的手）我在这里陪着你，慢慢说。3fa9c1",
        dir.path(),
        &["--limit", "4", "--report-dir", report.to_str().unwrap()],
    );
    let run_id = out["run_id"].as_str().unwrap();
    let section = &out["assessment"]["baselines"];
    assert_eq!(section["metric"], "rougeL", "{section}");
    let groups = section["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 12, "11 sub-tasks and overall");
    let flagged: Vec<&str> = section["not_above"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(flagged.len() >= 9, "a constant line is not above the baselines on most sub-tasks: {flagged:?}");
    for g in groups {
        let strongest = g["strongest"].as_str();
        if g["group"] != "overall" {
            // The strongest is the baseline with the highest mean (the first by name on a tie), and
            // the difference is to it.
            let means = g["baselines"].as_object().unwrap();
            let top = means.values().map(|m| m["mean"].as_f64().unwrap()).fold(f64::MIN, f64::max);
            let best = means.iter().find(|(_, m)| m["mean"].as_f64() == Some(top)).map(|(n, _)| n.as_str());
            assert_eq!(strongest, best, "{g}");
            let d = &g["difference"];
            let expected =
                g["run"]["mean"].as_f64().unwrap() - g["baselines"][strongest.unwrap()]["mean"].as_f64().unwrap();
            assert!((d["diff"]["mean"].as_f64().unwrap() - expected).abs() < 1e-12, "{g}");
        }
    }
    // `runs show` prints the same section, and the report flags the run and never ranks a baseline.
    let show: Value =
        serde_json::from_slice(&ok(h2htalk(&["runs", "show", run_id, "--db", db_arg(&db), "--json"]))).unwrap();
    assert_eq!(show["assessments"]["baselines"], *section);
    let lb: Value = serde_json::from_str(&std::fs::read_to_string(report.join("leaderboard.json")).unwrap()).unwrap();
    assert_eq!(lb["ranking"].as_array().unwrap().len(), 1);
    let rows: Vec<&str> = lb["baselines"].as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
    assert_eq!(rows, BASELINES.map(|b| format!("baseline:{b}")));
    let md = std::fs::read_to_string(report.join("leaderboard.md")).unwrap();
    assert!(md.contains("FLAG: not shown above the strongest baseline"), "{md}");
    assert!(md.contains("| baseline | – | `baseline:generic_comfort` |"), "{md}");
    let csv = std::fs::read_to_string(report.join("leaderboard.csv")).unwrap();
    assert!(csv.lines().any(|l| l.starts_with("baseline:echo,")), "{csv}");
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert_eq!(html.matches("<tr class=\"baseline\"").count(), 5);
    // Scored once per signature: asking again adds nothing and prints the same table.
    let again = h2htalk(&["baselines", "--run", run_id, "--db", db_arg(&db), "--json"]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 baseline score(s) added"));
    let again: Value = serde_json::from_slice(&ok(again)).unwrap();
    assert_eq!(again["baselines"], *section);
}

#[test]
fn the_safety_rules_decide_a_baseline_as_they_decide_a_run_that_gives_the_same_answer() {
    let suite = suite();
    let v: Value = serde_json::from_slice(&ok(h2htalk(&["baselines", "--suite", &suite, "--json"]))).unwrap();
    let safety = v["safety"].as_array().unwrap();
    let names: Vec<&str> = safety.iter().map(|b| b["baseline"].as_str().unwrap()).collect();
    assert_eq!(names, ["empty", "generic_comfort", "echo"]);
    for b in safety {
        assert_eq!(b["items"], 132, "66 scenarios in each language: {b}");
        let (pass, fail, open) =
            (b["pass"].as_u64().unwrap(), b["fail"].as_u64().unwrap(), b["needs_judge"].as_u64().unwrap());
        assert_eq!(pass + fail + open, 132);
        assert_eq!(b["verdicts"].as_array().unwrap().len(), 132);
    }
    // An empty answer fails every item.
    assert_eq!(safety[0]["fail"], 132);
    // The rules never pass a canned line: what they leave open only a judge decides.
    let comfort = &safety[1];
    assert_eq!(comfort["pass"], 0, "{comfort}");
    assert_eq!(safety[2]["pass"], 0, "{}", safety[2]);

    // A run whose model answers every prompt with the Chinese comfort line gets, on the Chinese
    // safety items, exactly the baseline's verdicts from the same rules.
    let line = "（认真地看着消息）听起来你最近不太容易，我在听，你慢慢说。";
    let zh: Vec<&Value> = comfort["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| !x["scenario"].as_str().unwrap().ends_with("-en"))
        .collect();
    assert_eq!(zh.len(), 66);
    assert!(zh.iter().all(|x| x["answer"] == line), "the baseline's line is the test's");
    let dir = TempDir::new().unwrap();
    let out = constant_run(line, dir.path(), &["--tasks", "dialogue_base", "--limit", "1", "--safety"]);
    let judges = out["assessment"]["safety"]["judges"].as_array().unwrap();
    assert_eq!(judges.len(), 1);
    let run_zh = judges[0]["per_lang"].as_array().unwrap().iter().find(|g| g["group"] == "zh").unwrap();
    let count = |verdict: &str| zh.iter().filter(|x| x["verdict"] == verdict).count() as u64;
    assert_eq!(run_zh["items"], 66);
    assert_eq!(run_zh["pass"].as_u64(), Some(count("pass")), "{run_zh}");
    assert_eq!(run_zh["fail"].as_u64(), Some(count("fail")), "{run_zh}");
    assert_eq!(run_zh["undecided"].as_u64(), Some(count("undecided")), "{run_zh}");
}
