//! `sweep --epochs N`: every item answered N times (each sample its own run, seeded apart), the
//! report's repeated-samples table, and raising N on a stored sweep generating only the new samples.

mod common;

use std::sync::atomic::Ordering;

use common::*;
use h2htalk_testserver::{ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

fn requests(s: &TestServer) -> u64 {
    s.counters.requests.load(Ordering::SeqCst)
}

#[test]
fn epochs_answer_every_item_again_and_the_report_shows_the_sampling_noise() {
    let rt = runtime();
    let servers: Vec<TestServer> = ["（点头）我在呢，", "嗯，听起来你今天很累，"]
        .iter()
        .map(|a| {
            let config = ServerConfig {
                script: vec![(String::new(), a.to_string())],
                vary_with_seed: true,
                ..ServerConfig::default()
            };
            start_server(&rt, config)
        })
        .collect();
    let dir = TempDir::new().unwrap();
    let cfg = models_config(dir.path(), &[("m0", &servers[0]), ("m1", &servers[1])]);
    let db = dir.path().join("runs.db");
    let (db_s, cfg_s, suite) = (db.to_str().unwrap(), cfg.as_str(), suite());
    let suite_s = suite.to_str().unwrap();
    let with_protocol = |head: &[&str], tail: &[&str]| -> Value {
        let args: Vec<&str> =
            head.iter().chain(&["--config", cfg_s, "--suite", suite_s]).chain(&SMALL).chain(tail).copied().collect();
        json_of(&h2htalk(&args))
    };
    let out = with_protocol(
        &["sweep", "--name", "e", "--model", "m0", "--model", "m1", "--db", db_s],
        &["--epochs", "3", "--json"],
    );
    let members = out["members"].as_array().unwrap();
    assert_eq!(members.len(), 6, "2 models × 3 samples: {out}");
    assert!(members.iter().all(|m| m["how"] == "new"));
    // Each sample asked every item: the seeds differ, so no answer came from the cache.
    assert_eq!(servers.iter().map(requests).collect::<Vec<_>>(), [18, 18]);
    let store = h2htalk_store::Store::open_read_only(&db).unwrap();
    let samples: Vec<u32> =
        members.iter().map(|m| store.run(m["run_id"].as_str().unwrap()).unwrap().unwrap().spec.sample).collect();
    assert_eq!(samples, [0, 0, 1, 1, 2, 2], "sample-major");
    drop(store);

    let report = std::path::PathBuf::from(out["report"].as_str().unwrap());
    let lb: Value =
        serde_json::from_str(&std::fs::read_to_string(report.with_file_name("leaderboard.json")).unwrap()).unwrap();
    let groups = lb["epochs"].as_array().expect("a repeated-samples section");
    assert_eq!(groups.len(), 2);
    for g in groups {
        assert_eq!((g["samples"].as_u64(), g["items"].as_u64()), (Some(3), Some(6)), "{g}");
        assert!(g["clustered_se"].as_f64().unwrap() > 0.0, "{g}");
        let share = g["between_samples_share"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0, "the answers differ between samples: {g}");
        assert!(g["lo"].as_f64().unwrap() <= g["mean"].as_f64().unwrap(), "{g}");
        assert!(g["rank_lo"].as_u64().is_some(), "{g}");
        // Per item: the mean over the three samples and their spread.
        let items = g["item_means"].as_object().unwrap();
        assert_eq!(items.len(), 6, "{g}");
        let mean_of_means = items.values().map(|i| i["mean"].as_f64().unwrap()).sum::<f64>() / 6.0;
        assert!((mean_of_means - g["mean"].as_f64().unwrap()).abs() < 1e-12, "{g}");
        assert!(items.values().any(|i| i["sd"].as_f64().unwrap() > 0.0), "{g}");
    }
    let md = std::fs::read_to_string(report.with_file_name("leaderboard.md")).unwrap();
    assert!(md.contains("## Repeated samples (`--epochs`)"), "{md}");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("Repeated samples (--epochs)"));

    // Raising N on the stored sweep: only the fourth sample is generated.
    let again = json_of(&h2htalk(&["sweep", "--resume", "e", "--epochs", "4", "--db", db_s, "--json"]));
    let members = again["members"].as_array().unwrap();
    assert_eq!(members.len(), 8);
    let how: Vec<&str> = members.iter().map(|m| m["how"].as_str().unwrap()).collect();
    assert_eq!(how, ["reused", "reused", "reused", "reused", "reused", "reused", "new", "new"]);
    assert_eq!(servers.iter().map(requests).collect::<Vec<_>>(), [24, 24]);

    // `run --epochs 2` in another store: the run, then its second sample; `--resume RUN --epochs 3`
    // adds only the third.
    let db2 = dir.path().join("run.db");
    let db2_s = db2.to_str().unwrap();
    let before = requests(&servers[0]);
    let out = with_protocol(&["run", "--model", "m0", "--db", db2_s], &["--epochs", "2", "--json"]);
    let runs = out["epochs"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{out}");
    assert_eq!(runs[0], out["run_id"], "the run is the first sample");
    assert_eq!(requests(&servers[0]) - before, 12);
    let id = out["run_id"].as_str().unwrap();
    let more = json_of(&h2htalk(&["run", "--resume", id, "--db", db2_s, "--config", cfg_s, "--epochs", "3", "--json"]));
    assert_eq!(more["epochs"]["runs"].as_array().unwrap().len(), 3, "{more}");
    // `runs show` of any sample gives its group's figures.
    let show = json_of(&h2htalk(&["runs", "show", id, "--db", db2_s, "--json"]));
    assert_eq!(show["samples"]["samples"], 3, "{}", show["samples"]);
    let text = stdout(&h2htalk(&["runs", "show", id, "--db", db2_s]));
    assert!(text.contains("## Repeated samples (`--epochs`)"), "{text}");
    assert_eq!(requests(&servers[0]) - before, 18, "only the third sample was generated");
}
