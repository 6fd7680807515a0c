//! Judges against people: a blinded set exported from two judged runs, scripted "people" whose
//! agreement with the judge and with one another is known, imported as JSON Lines and CSV, and the
//! agreement recovered exactly; a bad row stores nothing.

mod common;

use common::*;
use h2htalk_testserver::ServerConfig;
use serde_json::{Value, json};
use tempfile::TempDir;

const GOOD: &str = "好的，我在，慢慢说。GOOD";
const BAD: &str = "嗯。BAD";

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn people_agreement_with_a_judge_and_with_one_another_is_recovered() {
    let rt = runtime();
    let good = start_server(&rt, ServerConfig { script: vec![(String::new(), GOOD.into())], ..Default::default() });
    let bad = start_server(&rt, ServerConfig { script: vec![(String::new(), BAD.into())], ..Default::default() });
    let rubric = |s: u8| {
        format!(
            "{{\"scores\": {{\"empathy\": {s}, \"fit_to_state\": {s}, \"persona_consistency\": {s}, \"naturalness\": {s}}}, \"reason\": \"r\"}}"
        )
    };
    // The judge prefers GOOD wherever it is shown, and scores it 8, BAD 3.
    let judge = start_server(
        &rt,
        ServerConfig {
            script: vec![
                (format!("{GOOD}\n>>>\n\n## B"), "{\"winner\": \"A\", \"reason\": \"r\"}".into()),
                ("## B".into(), "{\"winner\": \"B\", \"reason\": \"r\"}".into()),
                ("GOOD".into(), rubric(8)),
                ("BAD".into(), rubric(3)),
            ],
            ..Default::default()
        },
    );
    let dir = TempDir::new().unwrap();
    let cfg = models_config(dir.path(), &[("good", &good), ("bad", &bad)]);
    let db = dir.path().join("runs.db");
    let (db_s, cfg_s, suite) = (db.to_str().unwrap(), cfg.as_str(), suite());
    let judge_url = judge.base_url();
    let mut args = vec!["sweep", "--name", "two", "--config", cfg_s, "--db", db_s, "--suite", suite.to_str().unwrap()];
    args.extend(["--model", "good", "--model", "bad"]);
    args.extend(SMALL);
    args.extend(["--judge", "openai:judge", "--judge-base-url", &judge_url, "--json"]);
    let sweep = json_of(&h2htalk(&args));
    let runs: Vec<String> =
        sweep["members"].as_array().unwrap().iter().map(|m| m["run_id"].as_str().unwrap().to_string()).collect();
    let (rg, rb) = (runs[0].as_str(), runs[1].as_str());
    json_of(&h2htalk(&[
        "compare",
        rg,
        rb,
        "--judge",
        "openai:judge",
        "--judge-base-url",
        &judge_url,
        "--db",
        db_s,
        "--format",
        "json",
    ]));
    let out = dir.path().join("ann");
    let out_s = out.to_str().unwrap();

    // Pairwise: six scenarios; p1 always picks GOOD (as the judge), p2 picks BAD on two items.
    let made = h2htalk(&[
        "annotate", "export", "--name", "pw", "--kind", "pairwise", "--run", rg, "--run", rb, "--db", db_s, "--out",
        out_s,
    ]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let items = lines(&out.join("pw.jsonl"));
    assert_eq!(items.len(), 6);
    let text = std::fs::read_to_string(out.join("pw.jsonl")).unwrap();
    assert!(!text.contains(rg) && !text.contains("good") && !text.contains("openai"), "blinded: {text}");
    let shown_first: Vec<bool> = items.iter().map(|i| i["answer_a"].as_str().unwrap().contains("GOOD")).collect();
    assert!(shown_first.iter().any(|f| *f) && shown_first.iter().any(|f| !*f), "positions shuffled");
    let verdicts = |flip: usize| -> String {
        items
            .iter()
            .zip(&shown_first)
            .enumerate()
            .map(|(k, (i, first))| {
                let good = if *first { "A" } else { "B" };
                let bad = if *first { "B" } else { "A" };
                json!({"item": i["item"], "winner": if k < flip { bad } else { good }}).to_string() + "\n"
            })
            .collect()
    };
    std::fs::write(dir.path().join("p1.jsonl"), verdicts(0)).unwrap();
    std::fs::write(dir.path().join("p2.jsonl"), verdicts(2)).unwrap();
    for p in ["p1", "p2"] {
        let file = dir.path().join(format!("{p}.jsonl"));
        stdout(&h2htalk(&["annotate", "import", file.to_str().unwrap(), "--set", "pw", "--rater", p, "--db", db_s]));
    }
    let a = json_of(&h2htalk(&["annotate", "agreement", "--set", "pw", "--db", db_s, "--json"]));
    let by = |who: &str| a["agreements"].as_array().unwrap().iter().find(|x| x["between"] == who).unwrap().clone();
    let judge_row = by("judge:openai:judge");
    assert_eq!((judge_row["agreement"]["k"].as_u64(), judge_row["agreement"]["n"].as_u64()), (Some(10), Some(12)));
    let people = by("people");
    assert_eq!((people["agreement"]["k"].as_u64(), people["agreement"]["n"].as_u64()), (Some(4), Some(6)));
    assert_eq!(people["units"], 6);
    let table = stdout(&h2htalk(&["annotate", "agreement", "--set", "pw", "--db", db_s]));
    assert!(table.contains("| judge:openai:judge | 12 |") && table.contains("10/12 0.8333 ["), "{table}");
    assert!(table.contains("| people | 6 |") && table.contains("4/6 0.6667 ["), "{table}");

    // Rubric: p1 scores as the judge does (8 for GOOD, 3 for BAD), in the CSV; p3 in JSON Lines,
    // off by one on every item.
    let made = h2htalk(&[
        "annotate", "export", "--name", "rub", "--run", rg, "--run", rb, "--limit", "4", "--db", db_s, "--out", out_s,
    ]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let mut reader = csv::Reader::from_path(out.join("rub.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let mut filled = csv::Writer::from_path(dir.path().join("p1.csv")).unwrap();
    filled.write_record(&headers).unwrap();
    for r in reader.records() {
        let r = r.unwrap();
        let score = if r.get(4).unwrap().contains("GOOD") { "8" } else { "3" };
        let mut row: Vec<&str> = r.iter().collect();
        *row.last_mut().unwrap() = score;
        filled.write_record(&row).unwrap();
    }
    filled.flush().unwrap();
    let p1 = dir.path().join("p1.csv");
    stdout(&h2htalk(&["annotate", "import", p1.to_str().unwrap(), "--set", "rub", "--rater", "p1", "--db", db_s]));
    let p3: String = lines(&out.join("rub.jsonl"))
        .iter()
        .map(|i| {
            let s = if i["answer"].as_str().unwrap().contains("GOOD") { 7 } else { 4 };
            let scores: serde_json::Map<String, Value> =
                i["scores"].as_object().unwrap().keys().map(|k| (k.clone(), json!(s))).collect();
            json!({"item": i["item"], "rater": "p3", "scores": scores}).to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("p3.jsonl"), p3).unwrap();
    let p3 = dir.path().join("p3.jsonl");
    stdout(&h2htalk(&["annotate", "import", p3.to_str().unwrap(), "--set", "rub", "--db", db_s]));
    let a = json_of(&h2htalk(&["annotate", "agreement", "--set", "rub", "--db", db_s, "--json"]));
    let by = |who: &str| a["agreements"].as_array().unwrap().iter().find(|x| x["between"] == who).unwrap().clone();
    let judge_row = by("judge:openai:judge");
    assert_eq!(judge_row["units"], 16, "8 items × 2 people");
    // The judge gives two values (8, 3), the people four (8, 7; 3, 4): ρ = 2/√5 over the 16 pairs.
    let rho = judge_row["spearman"]["mean"].as_f64().unwrap();
    assert!((rho - 2.0 / 5f64.sqrt()).abs() < 1e-9, "{judge_row}");
    let people = by("people");
    assert_eq!(people["units"], 8);
    assert!((people["spearman"]["mean"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{people}");
    // p1 equals the judge, p3 is off by one: alpha below 1 for both, above 0.5.
    let alpha = people["alpha"]["mean"].as_f64().unwrap();
    assert!(alpha > 0.5 && alpha < 1.0, "{people}");

    // A bad row (a score of 11) names file, line and field, and stores nothing.
    let before =
        json_of(&h2htalk(&["annotate", "agreement", "--set", "rub", "--db", db_s, "--json"]))["ratings"].clone();
    let bad_file = dir.path().join("bad.jsonl");
    let first = &lines(&out.join("rub.jsonl"))[0];
    let ok = json!({"item": first["item"], "scores": {"empathy": 5}}).to_string();
    let wrong = json!({"item": first["item"], "rater": "p4", "scores": {"empathy": 11}}).to_string();
    std::fs::write(&bad_file, format!("{ok}\n{wrong}\n")).unwrap();
    let refused =
        h2htalk(&["annotate", "import", bad_file.to_str().unwrap(), "--set", "rub", "--rater", "p4", "--db", db_s]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(err.contains("bad.jsonl:2: field `empathy`") && err.contains("from 1 to 10"), "{err}");
    let after =
        json_of(&h2htalk(&["annotate", "agreement", "--set", "rub", "--db", db_s, "--json"]))["ratings"].clone();
    assert_eq!(before, after, "nothing half-imported");

    // The report of the two runs shows both sets.
    let report = dir.path().join("report");
    let made = h2htalk(&["report", "--db", db_s, "--runs", &format!("{rg},{rb}"), "--out", report.to_str().unwrap()]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let md = std::fs::read_to_string(report.join("leaderboard.md")).unwrap();
    assert!(md.contains("Judges against people: set `pw` (pairwise") && md.contains("set `rub` (rubric"), "{md}");
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(html.contains("Judges against people"));
}
