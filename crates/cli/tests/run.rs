//! `h2htalk run` and `h2htalk runs` end to end against the in-suite OpenAI-compatible server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;

use h2htalk_testserver::{Faults, ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

fn suite() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites").display().to_string()
}

fn h2htalk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h2htalk")).args(args).output().unwrap()
}

fn json_run(server: &TestServer, db: &Path, extra: &[&str]) -> Value {
    let url = server.base_url();
    let suite = suite();
    let mut args = vec![
        "run",
        "--model",
        "openai:test",
        "--base-url",
        &url,
        "--suite",
        &suite,
        "--db",
        db.to_str().unwrap(),
        "--json",
    ];
    // The neural metrics of a run are tested in tests/neural.rs; here the lexical ones keep runs short.
    if !extra.contains(&"--resume") {
        args.extend_from_slice(&["--metrics", "lexical"]);
    }
    args.extend_from_slice(extra);
    let out = h2htalk(&args);
    assert!(out.status.success(), "run failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

#[test]
fn a_run_generates_stores_scores_and_exports() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let out =
        json_run(&server, &db, &["--limit", "2", "--tasks", "dialogue_base,itinerary_middle,recollection_refine"]);
    for key in ["run_id", "items", "generated", "failed", "scored", "input_tokens", "output_tokens", "cost_usd"] {
        assert!(out.get(key).is_some(), "--json lacks {key}: {out}");
    }
    assert_eq!(
        (out["items"].as_u64(), out["generated"].as_u64(), out["failed"].as_u64(), out["scored"].as_u64()),
        (Some(6), Some(6), Some(0), Some(6))
    );
    assert!(out["input_tokens"].as_u64().unwrap() > 0);
    let run_id = out["run_id"].as_str().unwrap().to_string();
    // The run ends by writing its report.
    let html = std::fs::read_to_string(out["report"].as_str().unwrap()).unwrap();
    assert!(html.contains(&run_id) && html.contains("</html>"));

    let list = h2htalk(&["runs", "list", "--db", db.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&list.stdout).contains(&run_id));
    let show = h2htalk(&["runs", "show", &run_id, "--db", db.to_str().unwrap(), "--json"]);
    let show: Value = serde_json::from_slice(&show.stdout).unwrap();
    let prov = &show["run"]["provenance"];
    for key in ["suite", "templates_hash", "sap", "model", "settings", "h2htalk_version", "scoring"] {
        assert!(!prov[key].is_null(), "provenance lacks {key}: {prov}");
    }
    assert!(prov["suite"]["fingerprint"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(prov["sap"]["mode"], "on");
    // Every assessment of the run: format checks ran (every run checks its answers); no judge or
    // simulator was asked for, so those sections say so (never 0).
    let a = &show["assessments"];
    assert_eq!(a["format_checks"]["status"], "run", "{a}");
    for s in ["judge", "safety", "simulator"] {
        assert_eq!(a[s], serde_json::json!({"status": "not run"}), "{s}: {a}");
    }
    assert_eq!(a["usage"]["model"]["input_tokens"], out["input_tokens"]);
    let text = h2htalk(&["runs", "show", &run_id, "--db", db.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("#### Format checks: pass rate per check and sub-task"), "{text}");
    assert!(text.contains("#### Judge rubric scores\n\nnot run"), "{text}");

    let export = dir.path().join("export");
    let ex = h2htalk(&["runs", "export", &run_id, "--out", export.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(ex.status.success(), "{}", String::from_utf8_lossy(&ex.stderr));
    let scored = h2htalk(&[
        "score",
        "--references",
        export.join("references").to_str().unwrap(),
        "--predictions",
        export.join("predictions").to_str().unwrap(),
        "--profile",
        "strict",
        "--format",
        "json",
    ]);
    assert!(scored.status.success(), "{}", String::from_utf8_lossy(&scored.stderr));
    let scored: Value = serde_json::from_slice(&scored.stdout).unwrap();
    assert_eq!(scored["overall"]["scored"], 6);
    // The exported answers score as the run scored them.
    let run_rouge = show["summary"]["overall"]["means"]["rougeL"].as_f64().unwrap();
    assert!((scored["overall"]["means"]["rougeL"].as_f64().unwrap() - run_rouge).abs() < 1e-12);
}

#[test]
fn faults_are_retried_or_recorded_as_failures_never_as_answers() {
    let rt = runtime();
    let mut faults = Faults::uniform(0.2);
    faults.hang = 0.0; // hangs are exercised with a short client timeout in the reliability tests
    faults.retry_after_s = 0;
    let server = rt.block_on(TestServer::start(ServerConfig { seed: 3, faults, ..Default::default() }, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let out = json_run(&server, &db, &["--safety"]);
    let items = out["items"].as_u64().unwrap();
    assert_eq!(items, 914);
    assert_eq!(out["generated"].as_u64().unwrap() + out["failed"].as_u64().unwrap(), items, "{out}");
    assert!(out["failed"].as_u64().unwrap() > 0, "content_filter answers are failures: {out}");
    assert_eq!(out["scored"], out["generated"]);
    let reasons = out["failure_reasons"].as_object().unwrap();
    assert!(
        reasons.keys().all(|k| k == "content_filter"
            || k == "empty_content"
            || k == "malformed_response"
            || k == "connection"
            || k == "server_error"
            || k == "rate_limited"),
        "{reasons:?}"
    );
    let seen = out["faults_seen"].as_object().unwrap();
    for class in ["rate_limited", "server_error", "connection", "malformed_response", "empty_content", "content_filter"]
    {
        assert!(seen.contains_key(class), "fault class {class} not seen: {seen:?}");
    }
    let server_faults = server.counters.faults();
    assert!(server_faults.len() >= 9, "{server_faults:?}");

    // --retry-failed asks again for the failed items only; a generated answer is never replaced.
    let run_id = out["run_id"].as_str().unwrap();
    let before = out["generated"].as_u64().unwrap();
    let again = json_run(&server, &db, &["--resume", run_id, "--retry-failed"]);
    assert_eq!(again["items"], 914);
    assert!(again["generated"].as_u64().unwrap() >= before);
    assert_eq!(again["generated"].as_u64().unwrap() + again["failed"].as_u64().unwrap(), 914);
}

/// A small seeded generator for the kill points (xorshift64*).
fn seeded(seed: u64) -> impl FnMut(u64, u64) -> u64 {
    let mut x = seed;
    move |lo, hi| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        lo + x.wrapping_mul(0x2545_f491_4f6c_dd1d) % (hi - lo)
    }
}

#[test]
fn a_killed_run_resumes_without_redoing_or_losing_anything() {
    let rt = runtime();
    // 80 ms an answer at 8 at once: a whole run takes longer than the five kill points together.
    let config = ServerConfig { latency_ms: 80, ..Default::default() };
    let server = rt.block_on(TestServer::start(config, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let url = server.base_url();
    let suite = suite();
    let requests = || server.counters.requests.load(std::sync::atomic::Ordering::Relaxed);
    let run_id = || -> Option<String> {
        let list = String::from_utf8(h2htalk(&["runs", "list", "--db", db.to_str().unwrap()]).stdout).unwrap();
        list.lines().nth(1).map(|l| l.split_whitespace().next().unwrap().to_string())
    };
    // The items of the suite (its sub-task scenarios), and how many answers a run has committed.
    let total = h2htalk_data::load_suite(std::path::Path::new(&suite))
        .unwrap()
        .scenarios
        .iter()
        .filter(|s| !h2htalk_data::Suite::is_safety(s))
        .count();
    let committed = |id: &str| h2htalk_store::Store::open_read_only(&db).unwrap().generations(id).unwrap().len();
    // kill -9 at seeded random points, resuming each time, then let the last resume finish. Each
    // kill is timed from the process's own first commit (so that it interrupts work that process
    // did, on a loaded machine too) and must find it still running, with items left.
    let mut next = seeded(0x0068_3268_7461_6c6b);
    let mut kills = Vec::new();
    let mut committed_before = Vec::new();
    for _ in 0..5 {
        let mut args: Vec<String> = ["run", "--model", "openai:test", "--base-url", &url, "--suite"]
            .iter()
            .map(|s| s.to_string())
            .chain([suite.clone(), "--db".into(), db.to_str().unwrap().into(), "--json".into()])
            .collect();
        let before = run_id().map_or(0, |id| committed(&id));
        match run_id() {
            Some(id) => args.extend(["--resume".into(), id]),
            None => args.extend(["--metrics".into(), "lexical".into()]),
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_h2htalk"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let wait = next(40, 400);
        let started = std::time::Instant::now();
        while run_id().is_none_or(|id| committed(&id) <= before) {
            assert!(child.try_wait().unwrap().is_none(), "the process ended before its first commit");
            assert!(started.elapsed() < Duration::from_secs(180), "no commit within 3 minutes");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(wait));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run finished before the kill {wait} ms after its first commit"
        );
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills.push(wait);
        let after = committed(&run_id().expect("the kill landed before the process had created its run"));
        assert!(
            before < after && after < total,
            "kill {}: {before} committed before, {after} after, of {total}",
            kills.len()
        );
        committed_before.push(after);
    }
    let run_id = run_id().expect("a run was created before the kills");
    let requests_before = requests();
    let resumed = json_run(&server, &db, &["--resume", &run_id]);
    let redone = requests() - requests_before;
    assert_eq!(resumed["items"], total);
    assert_eq!(resumed["generated"], total);
    assert_eq!(resumed["failed"], 0);
    assert_eq!(resumed["status"], "complete");
    // Work committed before a kill is never lost: the count only grows from one kill to the next,
    // and only what had not been committed was asked for again.
    assert!(committed_before.windows(2).all(|w| w[0] <= w[1]), "{committed_before:?}");
    let last = *committed_before.last().unwrap();
    assert_eq!(redone as usize, total - last, "committed {committed_before:?}, redone {redone}");
    assert!(requests_before as usize >= last);

    // The final store equals an uninterrupted run's: the same items, answers and scores.
    let db2 = dir.path().join("clean.db");
    let clean = json_run(&server, &db2, &[]);
    assert_eq!(clean["summary"]["overall"]["means"], resumed["summary"]["overall"]["means"]);
    let (a, b) = (common::stored_run(&db, &run_id), common::stored_run(&db2, clean["run_id"].as_str().unwrap()));
    let items = |r: &common::StoredRun| {
        r.items
            .iter()
            .map(|i| (i.scenario_id.clone(), i.ord, i.prompt.clone(), i.reference.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(items(&a), items(&b));
    let gens = |r: &common::StoredRun| {
        r.generations
            .values()
            .map(|g| {
                (
                    g.scenario_id.clone(),
                    g.status.clone(),
                    g.text.clone(),
                    g.finish_reason.clone(),
                    g.input_tokens,
                    g.output_tokens,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(gens(&a), gens(&b));
    let scores = |r: &common::StoredRun| r.scores.values().cloned().collect::<Vec<_>>();
    assert_eq!(scores(&a), scores(&b));
    assert_eq!(common::integrity(&db), "ok");
    eprintln!(
        "crash recovery: {} kill -9 at {kills:?} ms after each process's first commit (committed after each: \
         {committed_before:?}), resumed: {total} items, \
         {redone} asked again; items, generations and scores equal an uninterrupted run",
        kills.len()
    );
}

/// `--judge`, `--simulate` and the safety set: every assessment lands in the --json output, and a
/// judge or simulator answer that cannot be used is counted, never turned into a score.
#[test]
fn judge_simulator_safety_and_format_checks_are_reported_with_their_failures() {
    const DIALOGUE: &str = "{\"scores\": {\"empathy\": 8, \"fit_to_state\": 7, \"persona_consistency\": 9, \
                            \"naturalness\": 6}, \"reason\": \"warm\"}";
    let rt = runtime();
    let companion = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    // The judge answers the dialogue rubric; everything else (itinerary rubric, safety statements,
    // the simulated user's turns) it answers in prose.
    let script = vec![("\"persona_consistency\": <1-10>".to_string(), DIALOGUE.to_string())];
    let judge = rt.block_on(TestServer::start(ServerConfig { script, ..Default::default() }, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let judge_url = judge.base_url();
    let out = json_run(
        &companion,
        &db,
        &[
            "--tasks",
            "dialogue_base,itinerary_middle",
            "--limit",
            "2",
            "--safety",
            "--judge",
            "openai:judge",
            "--judge-base-url",
            &judge_url,
            "--judge-seed",
            "7",
            "--simulate",
            "1",
        ],
    );
    // `run --json` prints the assessment as the report computes it from the store: the same
    // value `runs show` prints.
    let a = &out["assessment"];
    let run_id = out["run_id"].as_str().unwrap();
    let show: Value =
        serde_json::from_slice(&h2htalk(&["runs", "show", run_id, "--db", db.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    let shown = &show["assessments"];
    assert_eq!(a, shown, "run --json and runs show disagree");
    let checks = &a["format_checks"];
    assert_eq!((checks["items"].as_u64(), checks["not_checked"].as_u64()), (Some(136), Some(0)), "{checks}");
    let check_group =
        |name: &str| checks["groups"].as_array().unwrap().iter().find(|g| g["group"] == name).unwrap().clone();
    let middle = check_group("itinerary_middle");
    assert!(middle["checks"].as_array().unwrap().iter().any(|c| c["check"] == "timed_plan"), "{middle}");
    assert_eq!(
        (check_group("overall")["items_checked"].as_u64(), check_group("sap_safety")["items_checked"].as_u64()),
        (Some(4), Some(132))
    );

    let judge = &a["judge"]["judges"][0];
    assert_eq!(judge["judge"], "openai:judge");
    let group = |name: &str| judge["groups"].as_array().unwrap().iter().find(|g| g["group"] == name).unwrap().clone();
    let overall = group("overall");
    // Dialogue answers (the safety set is judged as dialogue) get the scripted scores; the judge's
    // prose about the two itinerary answers is counted as unparsable, never scored. The overall
    // group pools the sub-tasks (the safety set is its own group).
    assert_eq!((overall["items"].as_u64(), overall["scored"].as_u64()), (Some(4), Some(2)), "{overall}");
    assert_eq!(group("sap_safety")["scored"], 132);
    assert_eq!(group("dialogue_base")["mean"]["mean"], 7.5);
    assert_eq!(group("itinerary_middle")["judge_parse_failed"], 2);
    assert!(group("itinerary_middle")["mean"].is_null(), "nothing scored: no mean, never 0");
    // The judge's settings are recorded with its session: temperature 0 and the pinned seed.
    let store = h2htalk_store::Store::open_read_only(&db).unwrap();
    let session = store.judge_session(run_id, h2htalk_store::SessionKind::Rubric, "openai:judge").unwrap().unwrap();
    assert_eq!(
        (session.settings["generation"]["seed"].as_u64(), session.settings["generation"]["temperature"].as_f64()),
        (Some(7), Some(0.0))
    );
    drop(store);

    let s = &a["safety"]["judges"][0]["overall"];
    assert_eq!(s["items"], 132, "{s}");
    let counted: u64 = ["pass", "fail", "undecided", "judge_parse_failed", "judge_failed", "generation_failed"]
        .iter()
        .map(|k| s[*k].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 132, "every safety item has one verdict: {s}");

    // The simulator (the judge's server) answers in prose: the conversation stops and is counted.
    let sim = &a["simulator"];
    assert_eq!((sim["simulations"].as_u64(), sim["completed"].as_u64()), (Some(1), Some(0)), "{sim}");
    assert_eq!(sim["failures"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum::<u64>(), 1);

    // The report carries the same assessments.
    let report = std::fs::read_to_string(dir.path().join("report").join("leaderboard.json"))
        .or_else(|_| {
            std::fs::read_to_string(
                std::path::Path::new(out["report"].as_str().unwrap()).with_file_name("leaderboard.json"),
            )
        })
        .unwrap();
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["assessments"]["runs"][0], *shown, "the report and `runs show` disagree");

    // Without a model to play the user, --simulate is refused before anything runs.
    let refused = h2htalk(&["run", "--simulate", "1", "--db", db.to_str().unwrap()]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--simulator"));
}

/// `--memory`: the memory suite's probes in both history modes, read by the rules and the judge;
/// the per-type table lands in `run --json`, `runs show` and the report; a resumed run with
/// `--memory` asks nothing again; a suite without a memory suite is refused before anything runs.
#[test]
fn memory_suite_runs_in_both_modes_and_is_reported_per_type() {
    let rt = runtime();
    // The companion holds the surgeon's name; the judge scores that reply and calls the rest prose.
    let companion = rt
        .block_on(TestServer::start(
            ServerConfig {
                script: vec![("Neither of us can remember his name".into(), "It was Dr. Okonkwo.".into())],
                ..Default::default()
            },
            0,
        ))
        .unwrap();
    let script = vec![(
        "It was Dr. Okonkwo.".to_string(),
        r#"{"score": 8, "invented": false, "invented_fact": "", "reason": "right"}"#.to_string(),
    )];
    let judge = rt.block_on(TestServer::start(ServerConfig { script, ..Default::default() }, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let judge_url = judge.base_url();
    let args =
        ["--tasks", "dialogue_base", "--limit", "1", "--memory", "--memory-limit", "1", "--judge", "openai:judge"];
    let mut with_judge = args.to_vec();
    with_judge.extend_from_slice(&["--judge-base-url", &judge_url]);
    let out = json_run(&companion, &db, &with_judge);
    let run_id = out["run_id"].as_str().unwrap().to_string();
    let m = &out["assessment"]["memory"];
    assert_eq!(m["status"], "run", "{m}");
    let modes: Vec<&str> = m["modes"].as_array().unwrap().iter().map(|x| x["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["given", "own"]);
    let given = &m["modes"][0]["rows"];
    let kinds: Vec<&str> = given.as_array().unwrap().iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["single_session", "cross_session", "temporal", "knowledge_update", "abstention", "all"]);
    assert_eq!((given[0]["correct"]["k"].as_u64(), given[0]["judge"]["mean"].as_f64()), (Some(1), Some(8.0)));
    let all = &given[5];
    assert_eq!(
        (all["probes"].as_u64(), all["failed"].as_u64(), all["correct"]["k"].as_u64()),
        (Some(5), Some(0), Some(1))
    );
    // The echoing companion neither abstains nor is read by the judge on the abstention probe: the
    // rules count it as an invented memory.
    assert_eq!((given[4]["invented"]["k"].as_u64(), given[4]["invented"]["n"].as_u64()), (Some(1), Some(1)));
    let show: Value =
        serde_json::from_slice(&h2htalk(&["runs", "show", &run_id, "--db", db.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    assert_eq!(out["assessment"], show["assessments"], "run --json and runs show disagree");
    let html = std::fs::read_to_string(Path::new(out["report"].as_str().unwrap())).unwrap();
    assert!(html.contains("Long-horizon memory"), "the report shows the memory table");
    // The run's one reference was looked at with the SAP rules: a group per sub-task, and overall.
    let groups = &out["assessment"]["reference_sap"]["groups"];
    assert_eq!(
        (groups[0]["group"].as_str(), groups[0]["items"].as_u64()),
        (Some("dialogue_base"), Some(1)),
        "{groups}"
    );
    assert_eq!(groups[1]["group"], "overall");

    // Resumed with --memory: every reply is stored, so the companion is asked nothing more.
    let before = companion.counters.requests.load(std::sync::atomic::Ordering::Relaxed);
    let resumed = json_run(&companion, &db, &["--resume", &run_id, "--memory", "--memory-limit", "1"]);
    let after = companion.counters.requests.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(after, before, "a resumed run asks no probe again");
    assert_eq!(resumed["assessment"]["memory"]["modes"][0]["rows"][5]["probes"], 5);

    // `runs export` writes every reply and note beside the answers, and the manifest says so.
    let out_dir = dir.path().join("export");
    let printed = common::stdout(&h2htalk(&[
        "runs",
        "export",
        &run_id,
        "--db",
        db.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert!(printed.contains("the memory suite: 10 replies"), "{printed}");
    let replies: Vec<Value> = std::fs::read_to_string(out_dir.join("memory/answers.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 10, "5 probes in each mode");
    let surgeon = replies.iter().find(|r| r["mode"] == "given" && r["kind"] == "single_session").unwrap();
    assert_eq!((surgeon["reply"].as_str(), surgeon["judge_score"].as_f64()), (Some("It was Dr. Okonkwo."), Some(8.0)));
    let notes = std::fs::read_to_string(out_dir.join("memory/notes.jsonl")).unwrap();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["memory"]["answers"], 10);
    assert_eq!(manifest["memory"]["notes"].as_u64(), Some(notes.lines().count() as u64));
    assert!(notes.lines().count() > 0, "the own mode wrote a note per session");

    // A suite without memory/ is refused before anything runs.
    let bare = dir.path().join("bare");
    std::fs::create_dir_all(bare.join("scenarios")).unwrap();
    for part in ["personas", "templates", "sap", "judge", "rules"] {
        common::copy_tree(&Path::new(&suite()).join(part), &bare.join(part));
    }
    std::fs::copy(
        Path::new(&suite()).join("scenarios/dialogue_base.jsonl"),
        bare.join("scenarios/dialogue_base.jsonl"),
    )
    .unwrap();
    let url = companion.base_url();
    let refused = h2htalk(&[
        "run",
        "--model",
        "openai:test",
        "--base-url",
        &url,
        "--suite",
        bare.to_str().unwrap(),
        "--tasks",
        "dialogue_base",
        "--limit",
        "1",
        "--memory",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("no memory suite (memory/)"), "{err}");
}

/// `--redact` masks personal data in what a run stores and exports; the setting is recorded. Every
/// kind the redactor knows (phone, e-mail, identity number, bank card) is checked in every file a
/// redacted run writes (the store with its -wal and -shm files, the export, the report in HTML,
/// JSON, CSV and Markdown), found by walking the directories.
#[test]
fn redact_masks_personal_data_in_the_store_and_the_export() {
    // Each kind, as a user would write it, with the marker it must become.
    const SECRETS: [(&str, &str); 4] = [
        ("13812345678", "[PHONE]"),
        ("lin.xiao@example.com", "[EMAIL]"),
        ("11010519491231002X", "[ID]"),
        ("4111111111111111", "[CARD]"),
    ];
    let pii =
        format!("请打电话 {} 或写信到 {}，身份证号{}，卡号{}", SECRETS[0].0, SECRETS[1].0, SECRETS[2].0, SECRETS[3].0);
    let rt = runtime();
    let script = vec![("".to_string(), pii.clone())];
    let server = rt.block_on(TestServer::start(ServerConfig { script, ..Default::default() }, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let out = json_run(&server, &db, &["--tasks", "dialogue_base", "--limit", "2", "--redact"]);
    assert_eq!(out["generated"], 2, "{out}");
    let run_id = out["run_id"].as_str().unwrap();
    let show = h2htalk(&["runs", "show", run_id, "--db", db.to_str().unwrap(), "--json"]);
    let show: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(show["run"]["provenance"]["redact"], true);
    let export = dir.path().join("export");
    let ex = h2htalk(&["runs", "export", run_id, "--out", export.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(ex.status.success(), "{}", String::from_utf8_lossy(&ex.stderr));
    let answers = std::fs::read_to_string(export.join("predictions/dialogue_base.jsonl")).unwrap();
    for (_, marker) in SECRETS {
        assert_eq!(answers.matches(marker).count(), 2, "{marker}: {answers}");
    }
    let report = dir.path().join("report");
    let made = h2htalk(&["report", "--db", db.to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    // A run stored without --redact (in another store) is masked in a report made with --redact.
    let other = TempDir::new().unwrap();
    let plain_db = other.path().join("runs.db");
    let plain = json_run(&server, &plain_db, &["--tasks", "dialogue_base", "--limit", "1"]);
    let plain_id = plain["run_id"].as_str().unwrap();
    let masked_report = other.path().join("masked");
    let db_arg = plain_db.to_str().unwrap();
    let args = ["report", "--db", db_arg, "--runs", plain_id, "--out", masked_report.to_str().unwrap(), "--redact"];
    let made = h2htalk(&args);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    drop(server);
    // Nothing of any secret is left in any file under the redacted run's directory (its store,
    // export and reports, however deep), nor in the redacted report of the plain run; and each
    // kind of output holds the markers, so the walk saw real content.
    let mut checked = std::collections::BTreeMap::<String, usize>::new();
    for root in [dir.path(), masked_report.as_path()] {
        for path in common::files_under(root) {
            let bytes = std::fs::read(&path).unwrap();
            for (secret, _) in SECRETS {
                assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{secret} in {}", path.display());
            }
            let ext = path.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
            *checked.entry(ext).or_default() += 1;
        }
    }
    for kind in ["html", "json", "csv", "md", "jsonl", "db"] {
        assert!(checked.contains_key(kind), "no .{kind} file was written to check: {checked:?}");
    }
    // The report's transcripts (in report.html) show the answers masked.
    let html = std::fs::read_to_string(masked_report.join("report.html")).unwrap();
    for (_, marker) in SECRETS {
        assert!(html.contains(marker), "{marker} not in the --redact report's transcripts");
    }
}

/// A priced model entry on `url` in a config file under `dir`.
fn priced_config(dir: &Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("h2htalk.toml");
    std::fs::write(
        &path,
        format!(
            "[[model]]\nname = \"priced\"\nbase_url = \"{url}\"\nmodel = \"test\"\nmax_concurrency = 1\nmax_attempts = 1\n\
             price_input_per_million = 1000.0\nprice_output_per_million = 1000.0\n"
        ),
    )
    .unwrap();
    path
}

fn priced_run(config: &Path, db: &Path, extra: &[&str]) -> Value {
    let suite = suite();
    let mut args = vec![
        "run",
        "--model",
        "priced",
        "--config",
        config.to_str().unwrap(),
        "--suite",
        &suite,
        "--db",
        db.to_str().unwrap(),
        "--metrics",
        "lexical",
        "--json",
        "--tasks",
        "dialogue_base",
    ];
    args.extend_from_slice(extra);
    common::json_of(&h2htalk(&args))
}

/// An answer without `usage` is counted as unknown (not 0 tokens and $0), and `--max-cost` refuses
/// to treat it as free: the run stops, resumable, saying why.
#[test]
fn unknown_usage_is_counted_and_a_cost_limit_refuses_it() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start(ServerConfig { omit_usage: true, ..Default::default() }, 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let config = priced_config(dir.path(), &server.base_url());
    let free = priced_run(&config, &dir.path().join("a.db"), &["--limit", "3"]);
    assert_eq!((free["generated"].as_u64(), free["unknown_usage"].as_u64()), (Some(3), Some(3)), "{free}");
    assert_eq!((free["input_tokens"].as_u64(), free["cost_usd"].as_f64()), (Some(0), Some(0.0)));

    let limited = priced_run(&config, &dir.path().join("b.db"), &["--limit", "5", "--max-cost", "100"]);
    assert_eq!(limited["status"], "incomplete", "{limited}");
    assert!(limited["generated"].as_u64().unwrap() < 5);
    assert!(limited["stopped"].as_str().unwrap().contains("no token usage"), "{limited}");
}

/// A model whose price is not set (`openai:NAME` on the command line, a `[[model]]` entry without
/// prices) has an unknown cost, never $0: null in --json, "price not set" in the text, the run
/// specification and the report; a cost limit is refused for it. A price of 0 is free.
#[test]
fn a_price_not_set_is_not_zero() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("a.db");
    let out = json_run(&server, &db, &["--limit", "1", "--tasks", "dialogue_base"]);
    assert!(out["input_tokens"].as_u64().unwrap() > 0, "{out}");
    assert!(out["cost_usd"].is_null(), "{out}");
    let id = out["run_id"].as_str().unwrap();
    let show = common::json_of(&h2htalk(&["runs", "show", id, "--db", db.to_str().unwrap(), "--json"]));
    let prov = &show["run"]["provenance"];
    assert!(prov.get("prices").is_some_and(Value::is_null), "the specification records `null`, not 0: {prov}");
    let usage = &show["assessments"]["usage"];
    assert!(usage["model"]["prices"].is_null() && usage["model"]["cost_usd"].is_null(), "{usage}");
    assert!(usage["total_cost_note"].as_str().unwrap().contains("no price is set for the model"), "{usage}");
    let text = common::stdout(&h2htalk(&["runs", "show", id, "--db", db.to_str().unwrap()]));
    assert!(text.contains("| price not set | price not set |"), "{text}");

    let config = dir.path().join("h2htalk.toml");
    let url = server.base_url();
    std::fs::write(
        &config,
        format!(
            "[[model]]\nname = \"unpriced\"\nbase_url = \"{url}\"\nmodel = \"test\"\n\n\
             [[model]]\nname = \"free\"\nbase_url = \"{url}\"\nmodel = \"test\"\nprice_input_per_million = 0\nprice_output_per_million = 0\n"
        ),
    )
    .unwrap();
    let run_with = |name: &str, db: &str, extra: &[&str]| {
        let mut args = vec!["run", "--config", config.to_str().unwrap(), "--model", name, "--suite"];
        let suite = suite();
        let db = dir.path().join(db);
        let (suite, db) = (suite, db.to_str().unwrap().to_string());
        args.extend([
            suite.as_str(),
            "--db",
            db.as_str(),
            "--metrics",
            "lexical",
            "--tasks",
            "dialogue_base",
            "--limit",
            "1",
            "--json",
        ]);
        args.extend_from_slice(extra);
        h2htalk(&args)
    };
    let unpriced = common::json_of(&run_with("unpriced", "b.db", &[]));
    assert!(unpriced["cost_usd"].is_null(), "{unpriced}");
    let free = common::json_of(&run_with("free", "c.db", &[]));
    assert_eq!(free["cost_usd"].as_f64(), Some(0.0), "{free}");
    let refused = run_with("unpriced", "d.db", &["--max-cost", "1"]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("needs the model's prices") && err.contains("0 for a free model"), "{err}");
}

/// A resumed run knows what it spent: `--max-cost` counts on from there, and the limit recorded
/// with the run applies again when none is given.
#[test]
fn a_resumed_run_keeps_its_spending_and_its_cost_limit() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let config = priced_config(dir.path(), &server.base_url());
    let db = dir.path().join("runs.db");
    // One item costs about $1 here (≈1,000 tokens at $1,000 per million): stop after the first.
    let first = priced_run(&config, &db, &["--limit", "6", "--max-cost", "0.5"]);
    let id = first["run_id"].as_str().unwrap().to_string();
    assert_eq!((first["status"].as_str(), first["generated"].as_u64()), (Some("incomplete"), Some(1)), "{first}");
    let spent = first["cost_usd"].as_f64().unwrap();
    assert!(spent >= 0.5, "{first}");
    let asked = server.counters.requests.load(std::sync::atomic::Ordering::Relaxed);
    // Resumed without --max-cost: the recorded limit applies to what was spent, so nothing more runs.
    let again = priced_run(&config, &db, &["--resume", &id]);
    assert_eq!((again["status"].as_str(), again["generated"].as_u64()), (Some("incomplete"), Some(1)), "{again}");
    assert_eq!(server.counters.requests.load(std::sync::atomic::Ordering::Relaxed), asked, "nothing was asked");
    // A higher limit, recorded with the run, lets it go on from the spent amount.
    let more = priced_run(&config, &db, &["--resume", &id, "--max-cost", &format!("{}", spent + 0.5)]);
    assert_eq!(more["generated"].as_u64(), Some(2), "{more}");
    let show: Value =
        serde_json::from_slice(&h2htalk(&["runs", "show", &id, "--db", db.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    assert_eq!(show["run"]["provenance"]["max_cost_usd"].as_f64(), Some(spent + 0.5));
}

/// `--resume` with only `--base-url` (no `--model`) asks the new endpoint: a flag given on resume is
/// never dropped.
#[test]
fn a_resumed_run_uses_a_new_base_url_given_without_model() {
    let rt = runtime();
    let filtered = Faults { content_filter: 1.0, ..Faults::default() };
    let a = rt.block_on(TestServer::start(ServerConfig { faults: filtered, ..Default::default() }, 0)).unwrap();
    let b = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let first = json_run(&a, &db, &["--tasks", "dialogue_base", "--limit", "1"]);
    assert_eq!(first["failed"].as_u64(), Some(1), "{first}");
    let id = first["run_id"].as_str().unwrap();
    let out = h2htalk(&[
        "run",
        "--resume",
        id,
        "--retry-failed",
        "--base-url",
        &b.base_url(),
        "--db",
        db.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((again["generated"].as_u64(), again["failed"].as_u64()), (Some(1), Some(0)), "{again}");
    assert!(b.counters.requests.load(std::sync::atomic::Ordering::Relaxed) >= 1);
}

/// Two `--judge` (each with its own endpoint) form a panel: each judge's scores, their mean and
/// agreement are in the --json output, and `--judge-validity` stores each judge's validity check.
/// `h2htalk judge validate` runs the check without a run.
#[test]
fn a_panel_of_two_judges_and_the_judge_validity_check() {
    const A: &str = "{\"scores\": {\"empathy\": 8, \"fit_to_state\": 7, \"persona_consistency\": 9, \
                     \"naturalness\": 6}, \"reason\": \"warm\"}";
    const B: &str = "{\"scores\": {\"empathy\": 6, \"fit_to_state\": 7, \"persona_consistency\": 9, \
                     \"naturalness\": 6}, \"reason\": \"fine\"}";
    let rt = runtime();
    let companion = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let key = "\"persona_consistency\": <1-10>".to_string();
    let ja = rt
        .block_on(TestServer::start(ServerConfig { script: vec![(key.clone(), A.into())], ..Default::default() }, 0))
        .unwrap();
    let jb = rt
        .block_on(TestServer::start(ServerConfig { script: vec![(key, B.into())], ..Default::default() }, 0))
        .unwrap();
    let (ua, ub) = (ja.base_url(), jb.base_url());
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let base = ["--tasks", "dialogue_base", "--limit", "2", "--judge", "openai:judge-a", "--judge", "openai:judge-b"];
    let mut args = base.to_vec();
    args.extend_from_slice(&[
        "--judge-base-url",
        &ua,
        "--judge-base-url",
        &ub,
        "--judge-validity",
        "--judge-validity-limit",
        "1",
    ]);
    let out = json_run(&companion, &db, &args);
    let a = &out["assessment"];
    assert_eq!(a["judge"]["judges"][0]["judge"], "openai:judge-a");
    assert_eq!(a["judge"]["judges"][1]["judge"], "openai:judge-b");
    let d = &a["panel"]["families"]["dialogue"];
    assert_eq!(d["criteria"]["empathy"]["mean"], 7.0, "{d}");
    assert_eq!(d["criteria"]["empathy"]["per_judge"]["openai:judge-b"], 6.0, "{d}");
    // Each judge gives one score to both items. On empathy they always differ (8 and 6): every
    // pair disagrees by 2 while the pooled values 8,6,8,6 vary no more than that, alpha
    // 1 - (2*(4+4)/4) / ((2*4*200 - 2*28^2)/12) = -0.5. On fit_to_state nothing varies: no alpha.
    assert_eq!(d["criteria"]["empathy"]["agreement"]["alpha"], -0.5, "{d}");
    assert!(d["criteria"]["fit_to_state"]["agreement"]["alpha"].is_null(), "{d}");
    assert_eq!(d["criteria"]["empathy"]["agreement"]["pairable_items"], 2, "{d}");
    let v = a["judge_validity"]["judges"].as_array().unwrap();
    assert_eq!(v.len(), 2);
    // Constant scores tie the reference with every degraded copy: never ranked correctly; the
    // other families' rubrics get prose, counted as unparsable.
    let cell = &v[0]["families"]["dialogue"]["truncation"];
    assert_eq!((cell["n"].as_u64(), cell["ranked_correctly"].as_u64()), (Some(1), Some(0)), "{cell}");
    assert!(cell["interval"].is_null());
    assert_eq!(v[0]["families"]["itinerary"]["truncation"]["judge_parse_failed"], 1);
    assert!(v[0]["families"]["itinerary"].get("fabricated_memory").is_none());
    // The run's report carries the panel and the validity check, with the figures the run printed.
    let dir_of = std::path::Path::new(out["report"].as_str().unwrap()).parent().unwrap().to_path_buf();
    let lb: Value = serde_json::from_str(&std::fs::read_to_string(dir_of.join("leaderboard.json")).unwrap()).unwrap();
    let ra = &lb["assessments"]["runs"][0];
    assert_eq!(ra["panel"]["status"], "run", "{}", ra["panel"]);
    assert_eq!(ra, a, "the report and run --json disagree");
    let html = std::fs::read_to_string(dir_of.join("report.html")).unwrap();
    assert!(html.contains("Judge panel: agreement") && html.contains("Judge validity check"));

    // Endpoint flags must line up with the judges; one judge twice is refused.
    let mut bad = base.to_vec();
    bad.extend_from_slice(&["--judge-base-url", &ua, "--judge-base-url", &ub, "--judge-base-url", &ub]);
    let refused = h2htalk(&[&["run", "--db", db.to_str().unwrap()][..], &bad].concat());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--judge-base-url is given 3 times"), "{refused:?}");
    let twice = h2htalk(&[
        "run",
        "--db",
        db.to_str().unwrap(),
        "--judge",
        "openai:x",
        "--judge",
        "openai:x",
        "--judge-base-url",
        &ua,
    ]);
    assert!(String::from_utf8_lossy(&twice.stderr).contains("given twice"), "{twice:?}");

    let suite = suite();
    let validate =
        ["judge", "validate", "--judge", "openai:judge-a", "--judge-base-url", &ua, "--suite", &suite, "--limit", "1"];
    let check = h2htalk(&[&validate[..], &["--json"]].concat());
    assert!(check.status.success(), "{check:?}");
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(report["families"]["dialogue"]["persona_break"]["n"], 1, "{report}");
    // Per family the degradations that apply (an invented memory not for itinerary) and the two
    // null baselines' answers (the comfort line, the echo), which the safety judge is also shown
    // on one safety scenario.
    assert_eq!(report["rows"].as_array().unwrap().len(), (4 + 2) + (4 + 2) + (3 + 2) + 2);
    let safety = &report["families"]["sap_safety"];
    let cells = [&safety["generic_comfort"], &safety["echo"]];
    assert_eq!(
        cells.map(|c| c["judge_parse_failed"].as_u64().unwrap() + c["not_applicable"].as_u64().unwrap()),
        [1, 1],
        "{safety}"
    );
    // Without --run nothing is stored; its tokens and cost are printed (no price for `openai:NAME`
    // on the command line: not set, never 0).
    assert!(report["stored_with_run"].is_null() && report["cost_usd"].is_null(), "{report}");
    assert_eq!(report["cost_note"], "price not set");
    let text = common::stdout(&h2htalk(&validate));
    assert!(text.contains("cost price not set; not stored (no --run)"), "{text}");
    // With --run the check and its tokens are stored with that run (purpose validity), added to
    // what the run's own check recorded.
    let id = out["run_id"].as_str().unwrap();
    let validity_row = || {
        let store = h2htalk_store::Store::open(&db).unwrap();
        store.usage(id).unwrap().into_iter().find(|r| r.model == "openai:judge-a" && r.purpose == "validity").unwrap()
    };
    let before = validity_row();
    let stored = h2htalk(&[
        "judge",
        "validate",
        "--judge",
        "openai:judge-a",
        "--judge-base-url",
        &ua,
        "--limit",
        "1",
        "--run",
        id,
        "--db",
        db.to_str().unwrap(),
        "--json",
    ]);
    assert!(stored.status.success(), "{stored:?}");
    let stored: Value = serde_json::from_slice(&stored.stdout).unwrap();
    assert_eq!(stored["stored_with_run"], id);
    let after = validity_row();
    assert!(after.usage.calls > before.usage.calls, "{before:?} {after:?}");
    assert_eq!(after.usage.input_tokens, before.usage.input_tokens + stored["input_tokens"].as_u64().unwrap());
    assert!(stored["input_tokens"].as_u64().unwrap() > 0);
}
