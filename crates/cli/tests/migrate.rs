//! A run store written by the release before the typed store (schema 1) is migrated on first use,
//! and every run in it lists, shows, exports and reports with the same figures that release
//! printed (tests/fixtures/store-v1, made by scripts/make-store-fixture.sh).

mod common;

use std::fs;
use std::path::Path;

use common::{h2htalk, root, stdout};
use serde_json::Value;
use tempfile::TempDir;

fn fixture() -> std::path::PathBuf {
    root().join("tests/fixtures/store-v1")
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// The numbers of a run summary (what `runs show --json` printed under `summary`).
fn figures(summary: &Value) -> Value {
    let mut v = summary.clone();
    // Fields this release adds to the summary.
    v.as_object_mut().unwrap().remove("unknown_usage");
    v
}

#[test]
fn a_schema_1_store_lists_shows_exports_and_reports_the_same_figures() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("store.db");
    fs::copy(fixture().join("store.db"), &db).unwrap();
    let db_arg = db.to_str().unwrap();

    let list = stdout(&h2htalk(&["runs", "list", "--db", db_arg]));
    assert_eq!(list, fs::read_to_string(fixture().join("expected/runs-list.txt")).unwrap());
    assert!(dir.path().join("store.db.schema-1.bak").is_file(), "the migration keeps a backup");

    let mut shown = 0;
    for entry in fs::read_dir(fixture().join("expected")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(id) = name.strip_prefix("show-").and_then(|n| n.strip_suffix(".json")) else { continue };
        shown += 1;
        let old = json(&path);
        let new: Value =
            serde_json::from_str(&stdout(&h2htalk(&["runs", "show", id, "--db", db_arg, "--json"]))).unwrap();
        assert_eq!(figures(&new["summary"]), figures(&old["summary"]), "run {id}: summary");
        assert_eq!(new["run"]["status"], old["run"]["status"]);
        // The specification is read from the old provenance: the same model, SAP mode, settings.
        for key in ["model", "settings", "sap", "scoring", "templates_hash", "suite"] {
            let (n, o) = (&new["run"]["provenance"], &old["run"]["provenance"]);
            match key {
                "model" => assert_eq!(n["model_id"], o["model"], "run {id}: model"),
                "scoring" => assert_eq!(n["scoring"]["profile"], o["scoring"]["profile"], "run {id}: profile"),
                "sap" => assert_eq!(n["sap"]["hash"], o["sap"]["hash"], "run {id}: sap"),
                "suite" => assert_eq!(n["suite"]["fingerprint"], o["suite"]["fingerprint"], "run {id}: suite"),
                _ => assert_eq!(n[key], o[key], "run {id}: {key}"),
            }
        }

        let out = dir.path().join(format!("export-{id}"));
        stdout(&h2htalk(&["runs", "export", id, "--db", db_arg, "--out", out.to_str().unwrap()]));
        let old_export = fixture().join("expected").join(format!("export-{id}"));
        for file in common::files_under(&old_export) {
            let rel = file.strip_prefix(&old_export).unwrap();
            assert_eq!(
                fs::read(out.join(rel)).unwrap(),
                fs::read(&file).unwrap(),
                "run {id}: export {} differs",
                rel.display()
            );
        }
    }
    assert_eq!(shown, 2);

    let report = dir.path().join("report");
    // The fixture's two runs differ in selection and profile: ranking them together must be asked for.
    let refused = h2htalk(&["report", "--db", db_arg, "--out", report.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("2 different protocols"));
    stdout(&h2htalk(&["report", "--db", db_arg, "--out", report.to_str().unwrap(), "--allow-mixed"]));
    // Mixed, every label names its protocol; apart from that the report is what that release wrote.
    let unmark = |s: &str| -> String {
        let mut out = s.to_string();
        while let Some(i) = out.find(" · protocol ") {
            out.replace_range(i..i + " · protocol ".len() + 12, "");
        }
        out
    };
    let new: Value =
        serde_json::from_str(&unmark(&fs::read_to_string(report.join("leaderboard.json")).unwrap())).unwrap();
    let old = json(&fixture().join("expected/report/leaderboard.json"));
    for key in ["metrics", "rank_metric", "ranking", "comparisons", "sap"] {
        assert_same_but_additions(&new[key], &old[key], &format!("leaderboard `{key}`"));
    }
    let runs = |v: &Value| -> Vec<(Value, Value, Value)> {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].clone(), r["status"].clone(), r["groups"].clone()))
            .collect()
    };
    let (new_runs, old_runs) = (runs(&new), runs(&old));
    assert_eq!(new_runs.len(), old_runs.len());
    for (n, o) in new_runs.iter().zip(&old_runs) {
        assert_eq!((&n.0, &n.1), (&o.0, &o.1));
        assert_same_but_additions(&n.2, &o.2, "per-run groups, coverage, means and intervals");
    }
    let csv = |d: &Path| fs::read_to_string(d.join("leaderboard.csv")).unwrap();
    // The overlap-metric rows are those that release wrote; this release adds the assessments'
    // rows after them (their `kind` names the section).
    let (new_csv, old_csv) = (unmark(&csv(&report)), csv(&fixture().join("expected/report")));
    let (new_csv, old_csv) = (without_zero_width_csv(&new_csv), without_zero_width_csv(&old_csv));
    let added = new_csv.strip_prefix(&old_csv).expect("the release's rows come first, unchanged");
    let kinds = ["format_checks", "judge:", "safety:", "simulator", "usage", "sap_safety", "tag_simulator"];
    for line in added.lines() {
        let kind = line.split(',').nth(5).unwrap();
        assert!(kinds.iter().any(|k| kind.starts_with(k)), "not an assessment row: {line}");
    }
    assert!(added.lines().count() > 0);
}

/// A run store written by the last release of schema 2 (tests/fixtures/store-v2, made by
/// scripts/make-store-fixture-v2.sh): a sweep of three models with a panel of two judges, the judge
/// validity check, the safety set, simulated conversations and pairwise judgments, plus a SAP-off
/// run. Migrated to the typed simulation rows, every listing, `runs show --json`, export and
/// report (JSON, CSV, Markdown) equals what that release printed.
#[test]
fn a_schema_2_store_lists_shows_exports_and_reports_exactly_what_that_release_printed() {
    let fixture = root().join("tests/fixtures/store-v2");
    let expected = fixture.join("expected");
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("store.db");
    fs::copy(fixture.join("store.db"), &db).unwrap();
    let db_arg = db.to_str().unwrap();
    // The runs name their suite `suite`, relative to where that release ran: a copy of it here.
    for file in common::files_under(&fixture.join("suite")) {
        let to = dir.path().join(file.strip_prefix(&fixture).unwrap());
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(&file, to).unwrap();
    }
    let h2htalk = |args: &[&str]| common::bin().current_dir(dir.path()).args(args).output().unwrap();

    let list = stdout(&h2htalk(&["runs", "list", "--db", db_arg]));
    assert_eq!(list, fs::read_to_string(expected.join("runs-list.txt")).unwrap());
    assert!(dir.path().join("store.db.schema-2.bak").is_file(), "the migration keeps a backup");

    let mut shown = 0;
    for entry in fs::read_dir(&expected).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(id) = name.strip_prefix("show-").and_then(|n| n.strip_suffix(".json")) else { continue };
        shown += 1;
        let new: Value =
            serde_json::from_str(&stdout(&h2htalk(&["runs", "show", id, "--db", db_arg, "--json"]))).unwrap();
        assert_same_but_additions(&new, &json(&path), &format!("run {id}: runs show --json"));
        let out = dir.path().join(format!("export-{id}"));
        stdout(&h2htalk(&["runs", "export", id, "--db", db_arg, "--out", out.to_str().unwrap()]));
        let old_export = expected.join(format!("export-{id}"));
        let (new_files, old_files) = (common::files_under(&out), common::files_under(&old_export));
        assert_eq!(new_files.len(), old_files.len(), "run {id}: export files");
        for file in old_files {
            let rel = file.strip_prefix(&old_export).unwrap();
            assert_eq!(
                fs::read(out.join(rel)).unwrap(),
                fs::read(&file).unwrap(),
                "run {id}: export {}",
                rel.display()
            );
        }
    }
    assert_eq!(shown, 4, "the sweep's three runs and the SAP-off run");

    for (name, args) in [("report-sweep", vec!["--sweep", "fixture"]), ("report-all", vec!["--allow-mixed"])] {
        let out = dir.path().join(name);
        let mut cmd = vec!["report", "--db", db_arg, "--out", out.to_str().unwrap()];
        cmd.extend(args);
        stdout(&h2htalk(&cmd));
        let old = expected.join(name);
        assert_same_but_additions(
            &json(&out.join("leaderboard.json")),
            &json(&old.join("leaderboard.json")),
            &format!("{name}: leaderboard.json"),
        );
        let read = |dir: &Path, file: &str| fs::read_to_string(dir.join(file)).unwrap();
        let csv = |dir: &Path| without_zero_width_csv(&read(dir, "leaderboard.csv"));
        assert!(csv(&out) == csv(&old), "{name}: leaderboard.csv differs");
        let md = without_zero_width_md(&without_detectable(&without_baseline_tables(&read(&out, "leaderboard.md"))));
        let md = regex_free_cut(&md, " Length: Spearman's ρ between an item's mean score", "ranking).");
        let old_md = without_zero_width_md(&read(&old, "leaderboard.md"));
        assert!(md == old_md, "{name}: leaderboard.md differs beyond the baseline tables and detectable columns");
    }
    // The simulations are typed rows now: every conversation of the fixture, with its turns.
    let store = h2htalk_store::Store::open_read_only(&db).unwrap();
    let sims: usize = store.runs().unwrap().iter().map(|r| store.simulations(&r.id).unwrap().len()).sum();
    assert_eq!(sims, 9);
    for r in store.runs().unwrap() {
        for s in store.simulations(&r.id).unwrap() {
            assert_eq!(s.sessions.len(), 4, "{} {}", r.id, s.idx);
            assert!(s.settings.is_some() && s.facts.iter().all(|f| f.distance.is_some()));
        }
    }
}

/// `new` is `old` with only what later releases add: `baselines` keys (null baselines came after
/// that release; its runs have none stored, so each says not run) and `detectable` keys (the
/// minimal detectable difference of every difference). One change of a value is allowed, the fix of
/// issue 29: an interval (`lo`/`hi`) that was zero-width because every stratum of its group held one
/// item is null now; any other value of `old` is in `new` unchanged.
fn assert_same_but_additions(new: &Value, old: &Value, what: &str) {
    fn walk(new: &Value, old: &Value, path: &str, added: &mut Vec<String>) {
        match (new, old) {
            (Value::Object(n), Value::Object(o)) => {
                let zero_width = o.get("lo").is_some_and(|lo| lo.is_number() && o.get("hi") == Some(lo));
                for (k, v) in n {
                    match o.get(k) {
                        Some(ov) if (k == "lo" || k == "hi") && v.is_null() && ov.is_number() => {
                            assert!(zero_width, "{path}/{k}: null where the interval was not zero-width ({ov})");
                            assert!(n.get("lo").is_some_and(Value::is_null) && n.get("hi").is_some_and(Value::is_null));
                        }
                        Some(ov) => walk(v, ov, &format!("{path}/{k}"), added),
                        None => added.push(format!("{path}/{k}")),
                    }
                }
                for k in o.keys().filter(|k| !n.contains_key(*k)) {
                    panic!("{path}/{k} is gone");
                }
            }
            (Value::Array(n), Value::Array(o)) if n.len() == o.len() => {
                for (i, (a, b)) in n.iter().zip(o).enumerate() {
                    walk(a, b, &format!("{path}/{i}"), added);
                }
            }
            _ => assert_eq!(new, old, "{path}"),
        }
    }
    let mut added = Vec::new();
    walk(new, old, "", &mut added);
    for path in &added {
        assert!(
            path.ends_with("/baselines")
                || path.ends_with("/detectable")
                || path.ends_with("/length_bias")
                || path.ends_with("/judge_cards"),
            "{what}: {path} was added"
        );
    }
}

/// A leaderboard CSV with every zero-width interval (`ci_lo` = `ci_hi`) blanked, as this release
/// writes those over strata of one item (a zero-width interval of constant values is blanked too:
/// the JSON comparison tells the two apart).
fn without_zero_width_csv(csv: &str) -> String {
    csv.split_inclusive('\n')
        .map(|line| {
            let mut cells: Vec<&str> = line.trim_end_matches('\n').split(',').collect();
            if cells.len() > 10 && !cells[9].is_empty() && cells[9] == cells[10] {
                (cells[9], cells[10]) = ("", "");
            }
            format!("{}{}", cells.join(","), if line.ends_with('\n') { "\n" } else { "" })
        })
        .collect()
}

/// A Markdown report with every zero-width interval `[x, x]` written `n/a` (and the tag tables'
/// `[n/a]` too), as the JSON comparison above allows.
fn without_zero_width_md(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut rest = md;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let interval = tail.find(']').map(|j| &tail[1..j]).and_then(|inner| inner.split_once(", "));
        match interval {
            Some((lo, hi)) if lo == hi && lo.parse::<f64>().is_ok() => {
                out.push_str("n/a");
                rest = &tail[lo.len() + hi.len() + 4..];
            }
            _ => {
                out.push('[');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out.replace("[n/a]", "n/a")
}

/// A Markdown report without what this release adds to the tables of differences: the
/// `detectable` column (the last one of a table whose header ends with it) and the notes on it.
fn without_detectable(md: &str) -> String {
    let md = regex_free_cut(md, "detectable: the smallest difference these simulations", "interval. ");
    let md = regex_free_cut(&md, " detectable: the smallest difference these items", "under two items.");
    let mut out = String::new();
    let mut in_table = false;
    let mut after_note = false;
    for line in md.split_inclusive('\n') {
        let row = line.trim_end();
        if row.starts_with("detectable: the smallest difference") {
            after_note = true;
            continue;
        }
        if std::mem::take(&mut after_note) && row.is_empty() {
            continue;
        }
        if row.starts_with('|') && row.ends_with("| detectable |") {
            in_table = true;
        } else if !row.starts_with('|') {
            in_table = false;
        }
        if in_table {
            let cut = row[..row.len() - 1].rfind('|').expect("a table row has cells");
            out.push_str(&row[..=cut]);
            out.push('\n');
        } else {
            out.push_str(line);
        }
    }
    out
}

/// `text` with every span from `start` to the end of the next `end` removed.
fn regex_free_cut(text: &str, start: &str, end: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(start) {
        out.push_str(&rest[..i]);
        let j = rest[i..].find(end).expect("the span ends");
        rest = &rest[i + j + end.len()..];
    }
    out.push_str(rest);
    out
}

/// A Markdown report without its "Null baselines" tables and judge cards (each a `####` heading to
/// the next).
fn without_baseline_tables(md: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in md.split_inclusive('\n') {
        if line.starts_with("#") {
            // The null baselines' tables, and the pairwise judges' cards (added since).
            skipping = line.starts_with("#### Null baselines") || line.starts_with("#### Judge card of");
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}
