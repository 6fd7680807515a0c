//! `h2htalk sweep`: several models under one protocol against in-suite servers that answer
//! differently; stored runs of the same model and protocol are reused, a crashed sweep resumes with
//! one command, and a report refuses to rank runs of different protocols unless asked.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use h2htalk_store::Store;
use h2htalk_testserver::{Faults, ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

const DIALOGUE: &str = "{\"scores\": {\"empathy\": 8, \"fit_to_state\": 7, \"persona_consistency\": 9, \
                        \"naturalness\": 6}, \"reason\": \"warm\"}";

/// A companion whose every answer is `answer` (an empty key matches every request), with its own
/// fault seed and latency.
fn companion(seed: u64, answer: &str, faults: f64, latency_ms: u64) -> ServerConfig {
    ServerConfig {
        seed,
        latency_ms,
        faults: Faults { server_error: faults, rate_limited: faults, ..Faults::default() },
        script: vec![(String::new(), answer.to_string())],
        ..ServerConfig::default()
    }
}

/// `h2htalk.toml` naming each server as a model.
fn config(dir: &Path, servers: &[(&str, &TestServer)], concurrency: usize) -> String {
    let mut toml = String::new();
    for (name, s) in servers {
        toml += &format!(
            "[[model]]\nname = \"{name}\"\nbase_url = \"{}\"\nmax_concurrency = {concurrency}\nmax_attempts = 8\n\
             price_input_per_million = 1.0\nprice_output_per_million = 2.0\n\n",
            s.base_url()
        );
    }
    let path = dir.join("h2htalk.toml");
    std::fs::write(&path, toml).unwrap();
    path.to_str().unwrap().to_string()
}

fn sweep_args<'a>(cfg: &'a str, db: &'a str, suite: &'a str, judge_url: &'a str, models: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["sweep", "--name", "four", "--config", cfg, "--db", db, "--suite", suite];
    for m in models {
        args.extend(["--model", m]);
    }
    args.extend([
        "--tasks",
        "dialogue_base,dialogue_emotion,itinerary_middle",
        "--limit",
        "3",
        "--metrics",
        "lexical",
        "--judge",
        "openai:judge",
        "--judge-base-url",
        judge_url,
        "--simulate",
        "1",
        "--json",
    ]);
    args
}

fn requests(s: &TestServer) -> u64 {
    s.counters.requests.load(Ordering::Relaxed)
}

#[test]
fn a_sweep_reuses_stored_runs_when_a_model_is_added_and_ranks_all_of_them() {
    let rt = runtime();
    let answers =
        ["（点头）我在呢，慢慢说。", "嗯，听起来你今天很累，先歇一会儿吧。", "好的。", "我陪你一起想想办法，好吗？"];
    let servers: Vec<TestServer> = answers
        .iter()
        .enumerate()
        .map(|(i, a)| start_server(&rt, companion(i as u64 + 1, a, if i == 1 { 0.15 } else { 0.0 }, 0)))
        .collect();
    let script = vec![("\"persona_consistency\": <1-10>".to_string(), DIALOGUE.to_string())];
    let judge = start_server(&rt, ServerConfig { script, ..ServerConfig::default() });
    let dir = TempDir::new().unwrap();
    let names = ["alpha", "beta", "gamma", "delta"];
    let named: Vec<(&str, &TestServer)> = names.iter().copied().zip(servers.iter()).collect();
    let cfg = config(dir.path(), &named, 4);
    let db = dir.path().join("runs.db");
    let (db_s, suite) = (db.to_str().unwrap().to_string(), suite().to_str().unwrap().to_string());
    let judge_url = judge.base_url();

    // With the safety set: every section of the report runs (safety by the rules, which fail the
    // crisis items these answers give no human help in).
    let with_safety = |models: &[&'static str]| {
        let mut a: Vec<String> =
            sweep_args(&cfg, &db_s, &suite, &judge_url, models).into_iter().map(String::from).collect();
        a.push("--safety".into());
        a
    };
    let run_sweep = |models: &[&'static str]| {
        let args = with_safety(models);
        h2htalk(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let safety_items: usize = ["en", "zh"]
        .iter()
        .map(|l| {
            let text = std::fs::read_to_string(Path::new(&suite).join(format!("safety/sap_safety.{l}.jsonl"))).unwrap();
            text.lines().filter(|l| !l.trim().is_empty()).count()
        })
        .sum();
    let out = run_sweep(&names[..3]);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let first = json_of(&out);
    let members = first["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "{first}");
    for m in members {
        assert_eq!(m["how"], "new", "{m}");
        assert_eq!(m["status"], "complete", "{m}");
        assert_eq!(m["generated"].as_u64().unwrap() as usize, 9 + safety_items, "{m}");
    }
    let asked: Vec<u64> = servers.iter().map(requests).collect();
    assert!(asked[..3].iter().all(|n| *n >= 9), "every model was asked: {asked:?}");
    assert_eq!(asked[3], 0);
    let judge_asked = requests(&judge);
    assert!(judge_asked > 0);

    // A fourth model: the three stored runs answer for their models, nothing is asked of them again.
    let out = run_sweep(&names);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let second = json_of(&out);
    let members = second["members"].as_array().unwrap();
    let how: Vec<&str> = members.iter().map(|m| m["how"].as_str().unwrap()).collect();
    assert_eq!(how, ["reused", "reused", "reused", "new"], "{second}");
    for (i, m) in members.iter().enumerate().take(3) {
        assert_eq!(m["run_id"], first["members"][i]["run_id"], "model {i} keeps its run");
    }
    let now: Vec<u64> = servers.iter().map(requests).collect();
    assert_eq!(now[..3], asked[..3], "the three stored runs were not generated again");
    assert!(now[3] >= 9, "the new model was asked: {now:?}");
    assert_eq!(first["protocol"], second["protocol"]);

    // One report ranks the four runs.
    let lb: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("reports/sweep-four/leaderboard.json")).unwrap())
            .unwrap();
    assert_eq!(lb["ranking"].as_array().unwrap().len(), 4, "{}", lb["ranking"]);
    assert_eq!(lb["mixed_protocols"], false);
    let protocols: Vec<&str> = lb["runs"].as_array().unwrap().iter().map(|r| r["protocol"].as_str().unwrap()).collect();
    assert!(protocols.iter().all(|p| *p == second["protocol"]), "{protocols:?}");
    let html = std::fs::read_to_string(dir.path().join("reports/sweep-four/report.html")).unwrap();
    for name in names {
        assert!(html.contains(&format!("openai:{name}")), "{name} in the HTML report");
    }
    // Every assessment of every run is in the sweep's report: judge, safety (rules), simulator,
    // format checks, tokens and cost.
    let assessed = lb["assessments"]["runs"].as_array().unwrap();
    assert_eq!(assessed.len(), 4);
    for a in assessed {
        for section in ["format_checks", "judge", "safety", "simulator"] {
            assert_ne!(a[section]["status"], "not run", "{section} of {}: {}", a["run"], a[section]);
        }
        assert!(a["usage"].is_object(), "{a}");
    }
    // Every figure of the assessments that the HTML shows equals leaderboard.json's.
    let figures = h2htalk_testkit::figures::html_figures(&html);
    for a in assessed {
        for section in ["format_checks", "judge", "safety", "simulator", "usage"] {
            let prefix = format!("{}|{section}", a["run"].as_str().unwrap());
            assert!(figures.keys().any(|k| k.starts_with(&prefix)), "no {prefix} figure in the HTML");
        }
    }
    same_figures(&lb, &figures);
    assert!(lb["tags"]["runs"].as_array().is_some_and(|r| r.len() == 4), "tag tables for the four runs");
    // The simulator's findings by tag (its contrasts, per attachment style and language) of every
    // run are figures of the HTML too, so `same_figures` compared them with the JSON above.
    for r in lb["tags"]["runs"].as_array().unwrap() {
        let id = r["run"].as_str().unwrap();
        assert_eq!(r["simulator"]["status"], "run", "{}", r["simulator"]);
        assert!(r["simulator"]["groups_unavailable"].is_null(), "{}", r["simulator"]);
        for key in ["changing_need-stable_need|simulations", "multi_session-single_session|difference"] {
            assert!(
                figures.contains_key(&format!("{id}|tag_simulator|{key}")),
                "no {id}|tag_simulator|{key} in the HTML"
            );
        }
    }
    assert!(html.contains("id=\"assessments\"") && html.contains("id=\"tags\"") && html.contains("id=\"side\""));
    // The sweep's runs judged pairwise: every pair, one Bradley-Terry ranking of the four.
    let cmp = json_of(&h2htalk(&[
        "compare",
        "--sweep",
        "four",
        "--db",
        &db_s,
        "--judge",
        "openai:judge",
        "--judge-base-url",
        &judge_url,
        "--format",
        "json",
    ]));
    assert_eq!(cmp["pairs"].as_array().unwrap().len(), 6, "{cmp}");
    assert_eq!(cmp["ranking"]["models"].as_array().map_or(0, |r| r.len()), 4, "{}", cmp["ranking"]);
    // `report --sweep` reports the same runs.
    let out = dir.path().join("again");
    stdout(&h2htalk(&["report", "--db", &db_s, "--sweep", "four", "--out", out.to_str().unwrap()]));
    let again: Value = serde_json::from_str(&std::fs::read_to_string(out.join("leaderboard.json")).unwrap()).unwrap();
    assert_eq!(again["ranking"], lb["ranking"]);

    // The SAP-off run of one model under the same protocol: the report of the pair carries the SAP
    // on/off tables, and every figure (values and intervals) equals the JSON's.
    let on_id = second["members"][0]["run_id"].as_str().unwrap().to_string();
    let mut off_args = with_safety(&names[..1]);
    off_args.retain(|a| a != "--name" && a != "four" && a != "sweep" && a != "--model" && a != "alpha");
    let mut args: Vec<String> = ["run", "--model", "alpha", "--sap", "off"].map(String::from).into();
    args.extend(off_args);
    let off = json_of(&h2htalk(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(off["status"], "complete", "{off}");
    let off_id = off["run_id"].as_str().unwrap();
    let sap_dir = dir.path().join("sap");
    stdout(&h2htalk(&[
        "report",
        "--db",
        &db_s,
        "--runs",
        &format!("{on_id},{off_id}"),
        "--out",
        sap_dir.to_str().unwrap(),
    ]));
    let lb: Value = serde_json::from_str(&std::fs::read_to_string(sap_dir.join("leaderboard.json")).unwrap()).unwrap();
    let html = std::fs::read_to_string(sap_dir.join("report.html")).unwrap();
    assert_eq!(lb["mixed_protocols"], false);
    assert!(!lb["sap"].as_array().unwrap().is_empty(), "the SAP on/off table: {}", lb["sap"]);
    let sap = &lb["assessments"]["sap_safety"][0];
    assert_eq!((sap["on"].as_str(), sap["off"].as_str()), (Some(on_id.as_str()), Some(off_id)), "{sap}");
    assert!(sap["paired"]["n"].as_u64().unwrap() >= 2, "the rules decided crisis items in both runs: {sap}");
    assert!(sap["paired"]["diff"]["lo"].is_f64(), "{sap}");
    let figures = h2htalk_testkit::figures::html_figures(&html);
    assert!(
        figures.keys().any(|k| k.starts_with('|') && k.ends_with("|on_minus_off")),
        "the SAP safety row in the HTML"
    );
    for run in [on_id.as_str(), off_id] {
        for section in ["format_checks", "judge", "safety", "simulator", "usage"] {
            let prefix = format!("{run}|{section}");
            assert!(figures.keys().any(|k| k.starts_with(&prefix)), "no {prefix} figure in the HTML");
        }
    }
    same_figures(&lb, &figures);

    // A run of another protocol (another --limit) in the same store: ranking it with the sweep's
    // runs is refused, naming what differs, unless --allow-mixed.
    let other = json_of(&h2htalk(&[
        "run",
        "--config",
        &cfg,
        "--model",
        "alpha",
        "--db",
        &db_s,
        "--suite",
        &suite,
        "--tasks",
        "dialogue_base,dialogue_emotion,itinerary_middle",
        "--limit",
        "2",
        "--metrics",
        "lexical",
        "--json",
    ]));
    assert_eq!(other["status"], "complete");
    let mixed_out = dir.path().join("mixed");
    let refused = h2htalk(&["report", "--db", &db_s, "--out", mixed_out.to_str().unwrap()]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("2 different protocols"), "{err}");
    assert!(err.contains("selection ("), "names the field that differs: {err}");
    assert!(err.contains("judges ("), "{err}");
    assert!(err.contains("--allow-mixed"), "{err}");
    assert!(err.contains(other["run_id"].as_str().unwrap()), "names the run: {err}");
    stdout(&h2htalk(&["report", "--db", &db_s, "--out", mixed_out.to_str().unwrap(), "--allow-mixed"]));
    let lb: Value =
        serde_json::from_str(&std::fs::read_to_string(mixed_out.join("leaderboard.json")).unwrap()).unwrap();
    assert_eq!(lb["mixed_protocols"], true);
    assert_eq!(lb["ranking"].as_array().unwrap().len(), 6);
    for r in lb["runs"].as_array().unwrap() {
        let short = &r["protocol"].as_str().unwrap()["protocol:sha256:".len()..][..12];
        assert!(r["label"].as_str().unwrap().ends_with(&format!("protocol {short}")), "{}", r["label"]);
    }
}

/// Every assessment figure the HTML shows equals leaderboard.json's: the value, and the interval
/// the cell prints (`[lo, hi]` to four places) or none when JSON has none.
fn same_figures(lb: &Value, figures: &std::collections::BTreeMap<String, (String, String)>) {
    let f4 = |v: &Value| {
        let s = format!("{:.4}", v.as_f64().unwrap());
        if s == "-0.0000" { "0.0000".to_string() } else { s }
    };
    let mut intervals = 0;
    for (id, (value, text)) in figures {
        let (v, lo, hi) = h2htalk_testkit::figures::json_figure(lb, id);
        match v.as_f64() {
            Some(x) => assert_eq!(value.parse::<f64>().unwrap(), x, "{id}"),
            None => assert_eq!(value, "", "{id}: JSON has no value, the HTML must show none"),
        }
        if lo.is_null() {
            assert!(!text.contains(", "), "{id}: `{text}` shows an interval JSON does not have");
        } else {
            assert!(text.contains(&format!("[{}, {}]", f4(&lo), f4(&hi))), "{id}: `{text}` lacks JSON's interval");
            intervals += 1;
        }
    }
    assert!(intervals > 0, "no interval checked");
}

#[test]
fn a_crashed_sweep_resumes_with_one_command_without_asking_again() {
    let rt = runtime();
    // Slow servers, one request at a time: the sweep is killed mid-generation.
    let servers: Vec<TestServer> = (0..2)
        .map(|i| start_server(&rt, companion(10 + i, ["我在。", "慢慢来，我听着。"][i as usize], 0.0, 250)))
        .collect();
    let dir = TempDir::new().unwrap();
    let named: Vec<(&str, &TestServer)> = ["one", "two"].into_iter().zip(servers.iter()).collect();
    let cfg = config(dir.path(), &named, 1);
    let db = dir.path().join("runs.db");
    let (db_s, suite) = (db.to_str().unwrap().to_string(), suite().to_str().unwrap().to_string());
    let args = [
        "sweep",
        "--name",
        "crash",
        "--config",
        &cfg,
        "--all-models",
        "--db",
        &db_s,
        "--suite",
        &suite,
        "--limit",
        "2",
        "--metrics",
        "lexical",
        "--quiet",
    ];
    let mut child = bin().args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Kill it once both runs hold some answers (each run has 22 items at 250 ms each).
    let started = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let stored = Store::open_read_only(&db).ok().and_then(|s| {
            let sweep = s.sweep("crash").ok()??;
            let ids: Vec<String> = sweep.runs.iter().filter_map(|m| m.run_id.clone()).collect();
            let counts: Vec<usize> = ids.iter().map(|id| s.generations(id).map(|g| g.len()).unwrap_or(0)).collect();
            Some(counts)
        });
        if stored.as_ref().is_some_and(|c| c.len() == 2 && c.iter().all(|n| *n >= 2)) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the sweep never stored answers: {stored:?}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let store = Store::open_read_only(&db).unwrap();
    let sweep = store.sweep("crash").unwrap().unwrap();
    let ids: Vec<String> = sweep.runs.iter().map(|m| m.run_id.clone().unwrap()).collect();
    let before: Vec<usize> = ids.iter().map(|id| store.generations(id).unwrap().len()).collect();
    assert!(before.iter().all(|n| *n < 22), "killed mid-generation: {before:?}");
    drop(store);
    let asked_before: Vec<u64> = servers.iter().map(requests).collect();

    let reports = dir.path().join("elsewhere");
    let out = json_of(&h2htalk(&[
        "sweep",
        "--resume",
        "crash",
        "--db",
        &db_s,
        "--json",
        "--quiet",
        "--report-dir",
        reports.to_str().unwrap(),
    ]));
    // The sweep's report goes under --report-dir; each run's own report stays in its default place.
    assert!(reports.join("sweep-crash/report.html").is_file());
    assert!(!reports.join("report.html").exists());
    for id in &ids {
        assert!(dir.path().join("reports").join(id).join("report.html").is_file(), "{id}");
    }
    let members = out["members"].as_array().unwrap();
    for (i, m) in members.iter().enumerate() {
        assert_eq!(m["how"], "resumed", "{m}");
        assert_eq!(m["status"], "complete", "{m}");
        assert_eq!(m["run_id"].as_str().unwrap(), ids[i], "the same run goes on");
        assert_eq!(m["generated"].as_u64().unwrap() as usize, 22 - before[i], "only what was missing: {m}");
    }
    for ((s, b), stored) in servers.iter().zip(&asked_before).zip(&before) {
        // Exactly the missing items (and none of the stored ones) are asked for: no faults, one
        // request at a time.
        assert_eq!(requests(s) - b, (22 - stored) as u64, "requests after the resume");
    }
    let store = Store::open_read_only(&db).unwrap();
    for id in &ids {
        assert_eq!(store.generations(id).unwrap().len(), 22);
    }
    // Running it again changes nothing: both runs are reused.
    let asked: Vec<u64> = servers.iter().map(requests).collect();
    let again = json_of(&h2htalk(&["sweep", "--resume", "crash", "--db", &db_s, "--json", "--quiet"]));
    assert!(again["members"].as_array().unwrap().iter().all(|m| m["how"] == "reused"), "{again}");
    assert_eq!(servers.iter().map(requests).collect::<Vec<_>>(), asked);
}

#[test]
fn a_sweep_refuses_models_that_would_answer_under_different_settings() {
    let rt = runtime();
    let server = start_server(&rt, ServerConfig::default());
    let dir = TempDir::new().unwrap();
    let toml = format!(
        "[[model]]\nname = \"short\"\nbase_url = \"{0}\"\nmax_tokens = 64\n\n[[model]]\nname = \"long\"\nbase_url = \"{0}\"\n",
        server.base_url()
    );
    let cfg = dir.path().join("h2htalk.toml");
    std::fs::write(&cfg, toml).unwrap();
    let db = dir.path().join("runs.db");
    let out = h2htalk(&[
        "sweep",
        "--name",
        "s",
        "--config",
        cfg.to_str().unwrap(),
        "--all-models",
        "--db",
        db.to_str().unwrap(),
        "--limit",
        "1",
        "--metrics",
        "lexical",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another protocol") && err.contains("settings") && err.contains("--max-tokens"), "{err}");
    assert_eq!(requests(&server), 0, "nothing ran");
    // With one answer length for all, it runs.
    let out = json_of(&h2htalk(&[
        "sweep",
        "--name",
        "s",
        "--config",
        cfg.to_str().unwrap(),
        "--all-models",
        "--db",
        db.to_str().unwrap(),
        "--limit",
        "1",
        "--metrics",
        "lexical",
        "--max-tokens",
        "128",
        "--json",
        "--quiet",
    ]));
    assert_eq!(out["members"].as_array().unwrap().len(), 2);
}

/// With `--parallel-models 1` the models take turns: a model's run is created only once the one
/// before it is finished, watched in the store while the sweep runs; both complete, and the
/// other model's server is asked nothing while the first run is the only one. `--parallel-models 0` is refused.
#[test]
fn a_sweep_runs_at_most_parallel_models_at_once() {
    let rt = runtime();
    let servers: Vec<TestServer> =
        (0..2).map(|i| start_server(&rt, companion(20 + i, ["我在。", "慢慢来。"][i as usize], 0.0, 60))).collect();
    let dir = TempDir::new().unwrap();
    let named: Vec<(&str, &TestServer)> = ["one", "two"].into_iter().zip(servers.iter()).collect();
    let cfg = config(dir.path(), &named, 1);
    let db = dir.path().join("runs.db");
    let (db_s, suite) = (db.to_str().unwrap().to_string(), suite().to_str().unwrap().to_string());
    let mut args = vec!["sweep", "--name", "turns", "--config", &cfg, "--all-models", "--db", &db_s, "--suite", &suite];
    args.extend(["--limit", "1", "--metrics", "lexical", "--quiet", "--json", "--parallel-models"]);
    let zero = h2htalk(&[&args[..], &["0"]].concat());
    assert!(!zero.status.success() && String::from_utf8_lossy(&zero.stderr).contains("--parallel-models"), "{zero:?}");
    let mut child =
        bin().args([&args[..], &["1"]].concat()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    // Watch the store: whenever a second run exists, at most one is under way (the first is
    // finished; which is first cannot be read from the list: two runs created within one second
    // are listed by id), and its server was done before the second was asked anything.
    let (mut watched, mut both_seen) = (0, false);
    while child.try_wait().unwrap().is_none() {
        if let Ok(store) = Store::open_read_only(&db) {
            let runs = store.runs().unwrap_or_default();
            if runs.len() == 2 {
                both_seen = true;
                let running: Vec<&str> = runs
                    .iter()
                    .filter(|r| r.status == h2htalk_store::RunStatus::Running)
                    .map(|r| r.id.as_str())
                    .collect();
                assert!(running.len() <= 1, "two runs under way at once: {running:?}");
            } else if runs.len() == 1 {
                let asked = [requests(&servers[0]), requests(&servers[1])];
                assert!(asked.contains(&0), "both models were asked while one ran: {asked:?}");
            }
            watched += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out: Value = serde_json::from_reader(child.stdout.take().unwrap()).unwrap();
    let members = out["members"].as_array().unwrap();
    assert!(members.iter().all(|m| m["status"] == "complete"), "{out}");
    assert!(watched > 10 && both_seen, "the sweep was watched while it ran ({watched} looks)");
    assert_eq!(requests(&servers[0]), 11);
    assert_eq!(requests(&servers[1]), 11);
}
