//! The hostile-input corpus (crates/data/tests/common/corpus.rs) through the binary: each bad
//! references, predictions, suite or config file makes the command exit non-zero with an error
//! naming the file, line and field, and leaves no partial output (no `--output` file, no run in
//! the store).

mod common;

use h2htalk_testkit::corpus;

use std::path::Path;
use std::process::Output;

use common::*;
use corpus::{Built, Case, Loader, cases, project_suite};
use tempfile::TempDir;

/// Checks one command's outcome for `case`; returns whether it failed as wanted.
fn check(case: &Case, what: &str, out: &Output, wrong: &mut Vec<String>) {
    let err = String::from_utf8_lossy(&out.stderr);
    if case.must_load() {
        if !out.status.success() {
            wrong.push(format!("{} ({what}): should succeed, failed: {err}", case.name));
        }
    } else if out.status.success() {
        wrong.push(format!("{} ({what}): exit status 0, should fail with {}", case.name, case.want));
    } else if !err.contains(&case.want) || err.len() > 4_000 {
        let shown: String = err.chars().take(500).collect();
        wrong.push(format!("{} ({what}):\n  got  {shown}\n  want {}", case.name, case.want));
    }
}

/// No run was stored (the store may exist: it is opened before the inputs are read). A store that
/// cannot be listed is no proof of that: it fails the test.
fn no_run_in(db: &Path) -> bool {
    !db.exists() || {
        let list = h2htalk(&["runs", "list", "--db", db.to_str().unwrap()]);
        assert!(list.status.success(), "runs list failed on {}: {}", db.display(), String::from_utf8_lossy(&list.stderr));
        String::from_utf8_lossy(&list.stdout).lines().count() <= 1
    }
}

fn commands(case: &Case, built: &Built, root: &Path, wrong: &mut Vec<String>) -> usize {
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let mut n = 0;
    match case.loader {
        Loader::References | Loader::Predictions => {
            let output = root.join("out").join("pairs.jsonl");
            std::fs::create_dir_all(output.parent().unwrap()).unwrap();
            let out = h2htalk(&[
                "score",
                "--references",
                &s(&built.references),
                "--predictions",
                &s(&built.predictions),
                "--output",
                &s(&output),
                "--profile",
                "strict",
            ]);
            check(case, "score", &out, wrong);
            let left: Vec<_> = files_under(output.parent().unwrap());
            if case.must_load() != output.exists() || (!case.must_load() && !left.is_empty()) {
                wrong.push(format!("{} (score): output left behind: {left:?}", case.name));
            }
            let dir = if case.loader == Loader::References { &built.references } else { &built.predictions };
            let mut args = vec!["data".to_string(), "check".into(), s(dir)];
            if case.loader == Loader::Predictions {
                args.extend(["--references".into(), s(&built.references)]);
            }
            check(case, "data check", &h2htalk(&args.iter().map(String::as_str).collect::<Vec<_>>()), wrong);
            n += 2;
        }
        Loader::Suite => {
            check(case, "suite check", &h2htalk(&["suite", "check", &s(&built.suite)]), wrong);
            n += 1;
            if !case.must_load() {
                let db = root.join("runs.db");
                let out = h2htalk(&[
                    "run",
                    "--model",
                    "openai:test",
                    "--base-url",
                    "http://127.0.0.1:9/v1",
                    "--suite",
                    &s(&built.suite),
                    "--db",
                    &s(&db),
                    "--metrics",
                    "lexical",
                ]);
                check(case, "run", &out, wrong);
                if !no_run_in(&db) {
                    wrong.push(format!("{} (run): a run was stored from a bad suite", case.name));
                }
                n += 1;
            }
        }
        Loader::Config if case.must_load() => {
            // A config that must load runs for real: against a test server, one item.
            let rt = runtime();
            let server = start_server(&rt, h2htalk_testserver::ServerConfig::default());
            let text = std::fs::read_to_string(&built.config).unwrap();
            assert!(text.contains("http://127.0.0.1:9/v1"), "{}", case.name);
            std::fs::write(&built.config, text.replace("http://127.0.0.1:9/v1", &server.base_url())).unwrap();
            let db = root.join("runs.db");
            let out = h2htalk(&[
                "run", "--config", &s(&built.config), "--model", "m", "--suite", &s(&project_suite()), "--db", &s(&db),
                "--metrics", "lexical", "--tasks", "dialogue_base", "--limit", "1", "--json",
            ]);
            check(case, "run --config", &out, wrong);
            if out.status.success() {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                if v["generated"] != 1 {
                    wrong.push(format!("{} (run --config): {v}", case.name));
                }
            }
            n += 1;
        }
        Loader::Config => {
            if !case.must_load() {
                let db = root.join("runs.db");
                let out = h2htalk(&[
                    "run",
                    "--config",
                    &s(&built.config),
                    "--model",
                    "m",
                    "--suite",
                    &s(&project_suite()),
                    "--db",
                    &s(&db),
                    "--metrics",
                    "lexical",
                ]);
                check(case, "run --config", &out, wrong);
                if !no_run_in(&db) {
                    wrong.push(format!("{} (run): a run was stored with a bad config", case.name));
                }
                n += 1;
            }
        }
    }
    n
}

fn corpus(loader: Loader) {
    let mut wrong = Vec::new();
    let (mut cases_tried, mut commands_run) = (0, 0);
    let (mut in_line, mut whole, mut valid) = (0, 0, 0);
    for case in cases(loader, &project_suite()) {
        match (case.must_load(), case.want.contains(": field `")) {
            (true, _) => valid += 1,
            (false, true) => in_line += 1,
            (false, false) => whole += 1,
        }
        let tmp = TempDir::new().unwrap();
        let built = case.build(tmp.path(), &project_suite());
        commands_run += commands(&case, &built, tmp.path(), &mut wrong);
        cases_tried += 1;
    }
    assert!(wrong.is_empty(), "{loader:?}: {} wrong:\n{}", wrong.len(), wrong.join("\n"));
    eprintln!(
        "hostile corpus through the binary, {loader:?}: {cases_tried} cases ({in_line} faults of a line, {whole} of a \
         whole file, {valid} valid forms), {commands_run} commands: each bad input a non-zero exit naming the file \
         (and the line and field for a line), no partial output; the valid forms accepted"
    );
}

#[test]
fn hostile_references_fail_cleanly() {
    corpus(Loader::References);
}

#[test]
fn hostile_predictions_fail_cleanly() {
    corpus(Loader::Predictions);
}

#[test]
fn hostile_suites_fail_cleanly() {
    corpus(Loader::Suite);
}

#[test]
fn hostile_configs_fail_cleanly() {
    corpus(Loader::Config);
}
