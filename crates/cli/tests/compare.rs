//! `h2htalk compare` end to end: three runs of scripted companions judged pair by pair by a scripted
//! judge of the in-suite test server; per-family counts, position consistency, the ranking, reuse of
//! stored judgments (counted at the judge's server) and the refusal of mixed protocols.

mod common;

use std::path::Path;
use std::sync::atomic::Ordering;

use common::{h2htalk, json_of, run_args, runtime, start_server, suite};
use h2htalk_testserver::{ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

const FIRST: &str = "{\"winner\": \"A\", \"reason\": \"the first answer is better\"}";
const SECOND: &str = "{\"winner\": \"B\", \"reason\": \"the second answer is better\"}";
/// Two dialogue, two recollection and two itinerary items.
const TASKS: &str = "dialogue_base,recollection_refine,itinerary_middle";

fn scripted(rt: &tokio::runtime::Runtime, script: &[(&str, &str)]) -> TestServer {
    let script = script.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    start_server(rt, ServerConfig { script, ..Default::default() })
}

/// A run of the companion at `server` on `TASKS`, `limit` items each; its id.
fn make_run(server: &TestServer, db: &Path, limit: &str) -> String {
    let mut args = run_args(&server.base_url(), &suite(), db);
    args.extend(["--tasks", TASKS, "--limit", limit].map(String::from));
    let out = h2htalk(&args.iter().map(String::as_str).collect::<Vec<_>>());
    json_of(&out)["run_id"].as_str().unwrap().to_string()
}

fn compare(db: &Path, judge: &TestServer, runs: &[&str], extra: &[&str]) -> std::process::Output {
    let url = judge.base_url();
    let mut args = vec!["compare"];
    args.extend_from_slice(runs);
    args.extend_from_slice(&["--judge", "openai:judge", "--judge-base-url", &url, "--db", db.to_str().unwrap()]);
    args.extend_from_slice(&["--bootstrap", "300"]);
    args.extend_from_slice(extra);
    h2htalk(&args)
}

fn pair<'a>(v: &'a Value, a: &str, b: &str) -> &'a Value {
    v["pairs"].as_array().unwrap().iter().find(|p| p["run_a"] == a && p["run_b"] == b).unwrap()
}

fn counts(t: &Value) -> [u64; 6] {
    ["items", "a_wins", "b_wins", "ties", "inconsistent", "missing"].map(|k| t[k].as_u64().unwrap())
}

#[test]
fn compare_counts_per_family_ranks_and_asks_only_once() {
    let rt = runtime();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    // X answers the same everywhere; Y answers the timed plans of itinerary_middle its own way; Z
    // is the run the judge cannot tell from the others (it always names the first answer shown).
    let x = scripted(&rt, &[("", "ANSWER-X")]);
    let y = scripted(&rt, &[("带时间的日程", "ANSWER-Y-PLAN"), ("", "ANSWER-Y")]);
    let z = scripted(&rt, &[("", "ANSWER-Z")]);
    let (rx, ry, rz) = (make_run(&x, &db, "2"), make_run(&y, &db, "2"), make_run(&z, &db, "2"));
    // The judge prefers Y's plans to X's, and X's answers to Y's everywhere else, in either order.
    let judge = scripted(
        &rt,
        &[
            ("ANSWER-Z", FIRST),
            ("<<<\nANSWER-Y-PLAN\n>>>\n\n## B", FIRST),
            ("## B\n<<<\nANSWER-Y-PLAN\n>>>", SECOND),
            ("<<<\nANSWER-X\n>>>\n\n## B", FIRST),
            ("## B\n<<<\nANSWER-X\n>>>", SECOND),
        ],
    );
    let requests = || judge.counters.requests.load(Ordering::Relaxed);

    let v = json_of(&compare(&db, &judge, &[&rx, &ry, &rz], &["--format", "json"]));
    // Three pairs × six items × two orders.
    assert_eq!(requests(), 36);
    assert_eq!((v["asked"].as_u64(), v["reused"].as_u64()), (Some(18), Some(0)), "{v}");
    assert_eq!(v["protocol_differences"].as_array().unwrap().len(), 0);

    let xy = pair(&v, &rx, &ry);
    let f = &xy["families"];
    assert_eq!(counts(&f["dialogue"]), [2, 2, 0, 0, 0, 0], "{f}");
    assert_eq!(counts(&f["recollection"]), [2, 2, 0, 0, 0, 0], "{f}");
    assert_eq!(counts(&f["itinerary"]), [2, 0, 2, 0, 0, 0], "{f}");
    assert_eq!(counts(&xy["overall"]), [6, 4, 2, 0, 0, 0]);
    let win = &xy["overall"]["win"];
    assert_eq!((win["k"].as_u64(), win["n"].as_u64()), (Some(4), Some(6)));
    let [lo, hi] = [win["ci95"][0].as_f64().unwrap(), win["ci95"][1].as_f64().unwrap()];
    assert!(lo < 4.0 / 6.0 && 4.0 / 6.0 < hi && hi < 1.0, "Wilson interval of 4/6: {win}");
    assert_eq!(f["itinerary"]["loss"]["rate"], 1.0);
    assert_eq!(xy["overall"]["position_consistency"]["rate"], 1.0);
    // A consistent judge names the first answer shown half the time.
    assert_eq!(xy["first_shown_preferred"]["rate"], 0.5);

    for (a, b) in [(&rx, &rz), (&ry, &rz)] {
        let p = pair(&v, a, b);
        assert_eq!(counts(&p["overall"]), [6, 0, 0, 0, 6, 0], "{p}");
        assert_eq!(p["overall"]["position_consistency"]["rate"], 0.0);
        assert_eq!(p["overall"]["tie"]["rate"], 1.0, "inconsistent orders count as ties");
        assert_eq!(p["first_shown_preferred"]["k"], 12);
    }

    // The judge's tokens are stored: each pair's once, with its first run in stored order
    // (purpose `pairwise:OTHER`), 12 answers a pair; the call's total is the sum, and its cost
    // says the price is not set (`openai:judge` on the command line), never 0.
    {
        let store = h2htalk_store::Store::open(&db).unwrap();
        let (mut input, mut output) = (0, 0);
        for (a, b) in [(&rx, &ry), (&rx, &rz), (&ry, &rz)] {
            let (first, second) = if a <= b { (a, b) } else { (b, a) };
            let rows = store.usage(first).unwrap();
            let row = rows
                .iter()
                .find(|r| r.purpose == h2htalk_store::Purpose::Pairwise { against: second.to_string() })
                .unwrap_or_else(|| panic!("{rows:?}"));
            assert_eq!(
                (row.role, row.model.as_str(), row.usage.calls, row.prices),
                (h2htalk_store::UsageRole::Judge, "openai:judge", 12, None)
            );
            assert!(row.usage.input_tokens > 0, "{row:?}");
            input += row.usage.input_tokens;
            output += row.usage.output_tokens;
            assert!(
                store
                    .usage(second)
                    .unwrap()
                    .iter()
                    .all(|r| r.purpose != h2htalk_store::Purpose::Pairwise { against: first.to_string() }),
                "counted once"
            );
        }
        assert_eq!((v["input_tokens"].as_u64(), v["output_tokens"].as_u64()), (Some(input), Some(output)));
        assert!(v["judge_cost_usd"].is_null() && v["judge_prices"].is_null(), "{v}");
        assert_eq!(v["judge_cost_note"], "price not set");
    }
    // The pair's first run shows them in its usage table, apart from its own cost.
    let first = [&rx, &ry, &rz].into_iter().min().unwrap().clone();
    let show = json_of(&h2htalk(&["runs", "show", &first, "--db", db.to_str().unwrap(), "--json"]));
    let pw = &show["assessments"]["usage"]["pairwise"];
    assert_eq!(pw["status"], "run", "{pw}");
    let m = &pw["models"][0];
    assert_eq!((m["model"].as_str(), m["calls"].as_u64()), (Some("openai:judge"), Some(24)), "{pw}");
    assert_eq!(m["purposes"].as_array().unwrap().len(), 2, "two pairs begin with the lowest run id: {pw}");

    // Bradley-Terry: X beat Y 4 to 2 and Z tied everything, so X, Z, Y, each with an interval.
    let ranking = v["ranking"]["models"].as_array().unwrap();
    let order: Vec<&str> = ranking.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(order, [rx.as_str(), rz.as_str(), ry.as_str()]);
    for m in ranking {
        let (lo, s, hi) = (m["low"].as_f64().unwrap(), m["score"].as_f64().unwrap(), m["high"].as_f64().unwrap());
        assert!(lo <= s && s <= hi && lo < hi, "{m}");
    }
    assert_eq!(v["ranking"]["items"], 6);

    // Again, as a table and with the runs in another order: nothing new is asked, the same verdicts
    // are read from the other side.
    let out = compare(&db, &judge, &[&ry, &rx, &rz], &[]);
    let table = common::stdout(&out);
    assert_eq!(requests(), 36, "{table}");
    assert!(table.contains("0 item(s) asked now, 18 taken from the store"), "{table}");
    assert!(table.contains("judge tokens 0 in / 0 out, cost price not set"), "{table}");
    assert!(table.contains(&format!("{ry} (A) vs {rx} (B): 6 item(s) in both")), "{table}");
    assert!(table.contains("2/6 33.3% ["), "Y's wins over X as a share with its interval: {table}");
    assert!(table.contains("Bradley-Terry ranking over 6 compared item(s)"), "{table}");
    // The judge card: length and position, and the length-controlled ranking of every run.
    assert!(table.contains("judge card: the longer answer won "), "{table}");
    assert!(table.contains("the answer shown first won "), "{table}");
    assert!(table.contains("length-controlled Bradley-Terry (length difference"), "{table}");
    let bias = &v["bias"];
    assert_eq!(bias["length_controlled"].as_array().unwrap().len(), 3, "{bias}");
    assert!(bias["first_preferred"]["n"].as_u64().unwrap() > 0, "{bias}");
    // The report of the three runs carries the same card, computed from the stored judgments.
    let out_dir = dir.path().join("report");
    let made = common::h2htalk(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--runs",
        &format!("{rx},{ry},{rz}"),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let lb: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("leaderboard.json")).unwrap()).unwrap();
    let cards = lb["assessments"]["judge_cards"].as_array().expect("a judge card");
    assert_eq!(cards.len(), 1, "{cards:?}");
    for key in ["longer_preferred", "first_preferred"] {
        assert_eq!(cards[0][key], bias[key], "{key}: the report's card and compare's agree");
    }
    let (g1, g2) = (cards[0]["length_coefficient"].as_f64().unwrap(), bias["length_coefficient"].as_f64().unwrap());
    assert!((g1 - g2).abs() < 1e-9, "{g1} vs {g2}");
    let md = std::fs::read_to_string(out_dir.join("leaderboard.md")).unwrap();
    assert!(md.contains("#### Judge card of `openai:judge` (pairwise, "), "{md}");
    let v2 = json_of(&compare(&db, &judge, &[&rx, &ry, &rz], &["--format", "json"]));
    assert_eq!(requests(), 36);
    // The same figures; only what was asked and what was reused changed.
    let first: Vec<Value> = v["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p["asked"] = 0.into();
            p["reused"] = 6.into();
            p
        })
        .collect();
    assert_eq!(v2["pairs"], Value::Array(first));
    assert_eq!(v2["ranking"], v["ranking"]);
}

#[test]
fn runs_of_different_protocols_are_refused_unless_allowed() {
    let rt = runtime();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let x = scripted(&rt, &[("", "ANSWER-X")]);
    let y = scripted(&rt, &[("", "ANSWER-Y")]);
    let (rx, ry) = (make_run(&x, &db, "2"), make_run(&y, &db, "1"));
    let judge = scripted(&rt, &[("<<<\nANSWER-X\n>>>\n\n## B", FIRST), ("## B\n<<<\nANSWER-X\n>>>", SECOND)]);

    let refused = compare(&db, &judge, &[&rx, &ry], &[]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("different protocols"), "{err}");
    // The report's protocol check: the runs of each protocol and every field that differs.
    assert!(
        err.contains(&format!("run(s) {ry} (protocol "))
            && err.contains(&format!("differ from run(s) {rx} (protocol ")),
        "{err}"
    );
    assert!(err.contains("in: selection ({") && err.contains("\"limit\":2") && err.contains("\"limit\":1"), "{err}");
    assert!(err.contains("--allow-mixed"), "{err}");
    assert_eq!(judge.counters.requests.load(Ordering::Relaxed), 0, "nothing is asked before the refusal");

    let v = json_of(&compare(&db, &judge, &[&rx, &ry], &["--allow-mixed", "--format", "json"]));
    assert_eq!(v["protocol_differences"].as_array().unwrap().len(), 1, "{v}");
    // Only the items both runs have are compared.
    assert_eq!(counts(&pair(&v, &rx, &ry)["overall"]), [3, 3, 0, 0, 0, 0]);

    // A run that is not in the store, and one run alone, are refused with what to do.
    let unknown = compare(&db, &judge, &[&rx, "no-such-run"], &[]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("`no-such-run` is not in the store"));
    assert!(!compare(&db, &judge, &[&rx], &[]).status.success());
}
