//! Reliability under faults and store trouble, end to end through the `h2htalk` binary:
//! a run of more than 2,000 items with 20% injected faults of every class; two processes on one
//! database; a read-only database; a full disk. Each test prints what it tried.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

use common::*;
use h2htalk_testserver::{Faults, ServerConfig, answer_for};
use tempfile::TempDir;

/// A config entry for the test server whose timeout (10 s) no answer reaches on a loaded machine,
/// while the server's hangs (11 s) always pass it: a timeout is always an injected hang, never luck,
/// so that every answer the server delivers reaches the client exactly once.
fn config_file(dir: &Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("h2htalk.toml");
    fs::write(
        &path,
        format!(
            "[[model]]\nname = \"faulty\"\nbase_url = \"{url}\"\nmodel = \"test\"\nmax_concurrency = 32\n\
             timeout_s = 10.0\nmax_attempts = 5\n"
        ),
    )
    .unwrap();
    path
}

/// The bodies the server sends instead of an answer; none may ever be stored as one.
const FAULT_BODIES: [&str; 4] =
    ["rate limited", "upstream trouble", "{\"choices\": \"not a list\"}", "request body is not JSON"];

#[test]
fn more_than_2000_items_under_20_percent_faults_end_generated_once_or_failed_with_a_reason() {
    let tmp = TempDir::new().unwrap();
    let big = tmp.path().join("suite");
    let scenarios = larger_suite(&big, 5);
    let rt = runtime();
    let mut faults = Faults::uniform(0.2);
    faults.hang_ms = 11_000; // past the client's 10 s timeout
    faults.retry_after_s = 0; // Retry-After is sent (as 0) without stalling the test
    let server_config = ServerConfig { seed: 11, faults, ..Default::default() };
    let server = start_server(&rt, server_config.clone());
    let config = config_file(tmp.path(), &server.base_url());
    let db = tmp.path().join("runs.db");
    let out = json_of(&h2htalk(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--model",
        "faulty",
        "--suite",
        big.to_str().unwrap(),
        "--safety",
        "--db",
        db.to_str().unwrap(),
        "--metrics",
        "lexical",
        "--json",
    ]));
    let items = out["items"].as_u64().unwrap() as usize;
    assert!(items >= 2000 && items == scenarios + 132, "{items} items");
    let (generated, failed) = (out["generated"].as_u64().unwrap() as usize, out["failed"].as_u64().unwrap() as usize);
    assert_eq!(generated + failed, items, "{out}");
    assert_eq!(out["pending"], 0);
    assert_eq!(out["status"], if failed > 0 { "complete_with_failures" } else { "complete" });

    // The store: one generation per item, generated texts are the server's answers to that very
    // item, failures carry their reason, and only generated items are scored.
    let run_id = out["run_id"].as_str().unwrap();
    let run = stored_run(&db, run_id);
    assert_eq!(run.items.len(), items);
    assert_eq!(run.generations.len(), items, "every item has exactly one result");
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut truncated = 0;
    for item in &run.items {
        let g = &run.generations[&item.scenario_id];
        match g.status.as_str() {
            "generated" => {
                let text = g.text.as_deref().unwrap();
                let expected = answer_for(&server_config, &request_body(item));
                let cut: String = expected.chars().take(4).collect();
                match g.finish_reason.as_deref() {
                    Some("stop") => assert_eq!(text, expected, "{}", item.scenario_id),
                    Some("length") => {
                        assert_eq!(text, cut, "{}", item.scenario_id);
                        truncated += 1;
                    }
                    other => panic!("{}: finish reason {other:?}", item.scenario_id),
                }
                assert!(!FAULT_BODIES.iter().any(|b| text.contains(b)), "{}: {text}", item.scenario_id);
                assert!(g.error_kind.is_none() && g.error_message.is_none());
                assert!(run.scores.contains_key(&item.scenario_id), "{} generated but not scored", item.scenario_id);
            }
            "failed" => {
                assert!(g.text.is_none(), "{}: a failure with a text", item.scenario_id);
                let kind = g.error_kind.clone().unwrap();
                assert!(!g.error_message.as_deref().unwrap_or("").is_empty(), "{}: no message", item.scenario_id);
                assert!(!run.scores.contains_key(&item.scenario_id), "{}: a failure was scored", item.scenario_id);
                *reasons.entry(kind).or_default() += 1;
            }
            s => panic!("status {s}"),
        }
    }
    assert_eq!(run.scores.len(), generated);
    let reported: BTreeMap<String, usize> = serde_json::from_value(out["failure_reasons"].clone()).unwrap();
    assert_eq!(reported, reasons, "the summary's failure reasons are the stored ones");
    assert!(reasons.contains_key("content_filter"), "{reasons:?}");

    // The server's side: faults of every class were injected, about 20% of requests, and each
    // item got exactly one answer delivered (clean, slowly streamed, or cut at `length`).
    let by_class = server.counters.faults();
    let requests = server.counters.requests.load(Ordering::Relaxed);
    let injected: u64 = by_class.values().sum();
    assert_eq!(by_class.len(), 11, "{by_class:?}");
    let share = injected as f64 / requests as f64;
    assert!((0.17..0.23).contains(&share), "{injected} faults in {requests} requests");
    let delivered = server.counters.answered.load(Ordering::Relaxed) + by_class["slow_stream"] + by_class["length"];
    assert_eq!(delivered as usize, generated, "answers delivered vs items generated: none twice, none lost");
    assert_eq!(by_class["length"] as usize, truncated);

    // The summary names the fault classes the client met; the stored per-item fault lists add
    // up to the same counts.
    let seen: BTreeMap<String, u64> = serde_json::from_value(out["faults_seen"].clone()).unwrap();
    for class in [
        "rate_limited",
        "server_error",
        "timeout",
        "connection",
        "malformed_response",
        "empty_content",
        "content_filter",
    ] {
        assert!(seen.get(class).is_some_and(|n| *n > 0), "fault class {class} not reported: {seen:?}");
    }
    let mut stored_faults: BTreeMap<String, u64> = BTreeMap::new();
    for g in run.generations.values() {
        for f in serde_json::from_str::<Vec<String>>(&g.faults).unwrap() {
            *stored_faults.entry(f).or_default() += 1;
        }
    }
    assert_eq!(stored_faults, seen, "faults stored per item vs faults reported");

    // `runs show --json` reports the same counts.
    let show = json_of(&h2htalk(&["runs", "show", run_id, "--db", db.to_str().unwrap(), "--json"]));
    assert_eq!(show["summary"]["all"]["generated"], generated);
    assert_eq!(show["summary"]["all"]["failed"], failed);
    assert_eq!(integrity(&db), "ok");
    eprintln!(
        "faults: {items} items, {requests} requests, {injected} injected faults ({:.1}%) of {} classes; \
         {generated} generated once ({truncated} cut at length), {failed} failed with a reason {reasons:?}; \
         client saw {seen:?}",
        share * 100.0,
        by_class.len()
    );
}

#[test]
fn two_processes_share_one_database() {
    let tmp = TempDir::new().unwrap();
    let rt = runtime();
    let server = start_server(&rt, ServerConfig { latency_ms: 2, ..Default::default() });
    let db = tmp.path().join("shared.db");
    // Create the file first so that both processes open an existing store.
    json_of(&h2htalk(
        &[&run_args(&server.base_url(), &suite(), &db)[..], &["--limit".into(), "1".into()]]
            .concat()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ));
    let spawn = || {
        bin()
            .args(run_args(&server.base_url(), &suite(), &db))
            .args(["--safety"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let (a, b) = (json_of(&a), json_of(&b));
    assert_ne!(a["run_id"], b["run_id"]);
    for out in [&a, &b] {
        assert_eq!(out["status"], "complete", "{out}");
        assert_eq!((out["items"].as_u64(), out["generated"].as_u64()), (Some(914), Some(914)));
        let run = stored_run(&db, out["run_id"].as_str().unwrap());
        assert_eq!((run.generations.len(), run.scores.len(), run.status.as_str()), (914, 914, "complete"));
    }
    assert_eq!(integrity(&db), "ok");
    eprintln!("store: 2 processes wrote 2 runs of 914 items into one database at once; both complete, integrity ok");
}

/// Makes `dir` read-only for the test's processes: a read-only remount of a tmpfs when root
/// (permissions do not stop root), or file modes otherwise. `None` when neither is possible.
struct ReadOnly {
    mount: Option<std::path::PathBuf>,
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if let Some(m) = &self.mount {
            let _ = Command::new("umount").arg(m).status();
        }
    }
}

fn mount_tmpfs(at: &Path, size: &str) -> bool {
    fs::create_dir_all(at).unwrap();
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", at.to_str().unwrap()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_read_only_database_is_a_clear_error() {
    let tmp = TempDir::new().unwrap();
    let rt = runtime();
    let server = start_server(&rt, ServerConfig::default());
    let root = is_root();
    let dir = tmp.path().join("ro");
    let guard = if root {
        if !mount_tmpfs(&dir, "16m") {
            h2htalk_testkit::not_covered("a read-only store: as root, only a read-only mount makes a file unwritable, and this machine refuses the mount");
            return;
        }
        ReadOnly { mount: Some(dir.clone()) }
    } else {
        fs::create_dir_all(&dir).unwrap();
        ReadOnly { mount: None }
    };
    let db = dir.join("runs.db");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a = run_args(&server.base_url(), &suite(), &db);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let first = json_of(&bin().args(args(&["--limit", "1"])).output().unwrap());
    let before = fs::read(&db).unwrap();
    if root {
        let ok = Command::new("mount").args(["-o", "remount,ro", dir.to_str().unwrap()]).status().unwrap().success();
        assert!(ok, "remount read-only");
    } else {
        use std::os::unix::fs::PermissionsExt;
        for f in files_under(&dir) {
            fs::set_permissions(&f, fs::Permissions::from_mode(0o444)).unwrap();
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
    }
    let mut cases = 0;
    for extra in [&["--limit", "1"][..], &["--resume", first["run_id"].as_str().unwrap(), "--retry-failed"][..]] {
        let out = bin().args(args(extra)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "a run on a read-only store succeeded: {err}");
        assert!(err.contains("runs.db") && (err.contains("read-only") || err.contains("readonly")), "{err}");
        cases += 1;
    }
    // The store can still be read: listed, shown and exported.
    let run_id = first["run_id"].as_str().unwrap();
    let db_arg = db.to_str().unwrap();
    let export = tmp.path().join("export");
    for read in [
        vec!["runs", "list", "--db", db_arg],
        vec!["runs", "show", run_id, "--db", db_arg, "--json"],
        vec!["runs", "export", run_id, "--out", export.to_str().unwrap(), "--db", db_arg],
    ] {
        let out = bin().args(&read).output().unwrap();
        assert!(out.status.success(), "{read:?} on a read-only store: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(run_id) || read[1] == "export");
        cases += 1;
    }
    // Nothing changed.
    assert_eq!(fs::read(&db).unwrap(), before);
    if !root {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    }
    drop(guard);
    eprintln!(
        "read-only store ({}): {cases} commands: runs refused with a clear error and a non-zero exit, reads \
         served, the file unchanged",
        if root { "read-only tmpfs" } else { "file modes" }
    );
}

/// Runs `h2htalk` with files limited to `limit_kib` KiB (RLIMIT_FSIZE, SIGXFSZ ignored so that a
/// write past it fails with EFBIG as on a full disk).
fn run_with_file_limit(limit_kib: u64, args: &[String]) -> std::process::Output {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {limit_kib}; exec '{}' {}",
            env!("CARGO_BIN_EXE_h2htalk"),
            quoted.join(" ")
        ))
        .output()
        .unwrap()
}

fn largest_file(dir: &Path) -> u64 {
    files_under(dir).iter().map(|f| fs::metadata(f).map_or(0, |m| m.len())).max().unwrap_or(0)
}

#[test]
fn a_full_disk_is_a_clear_error_and_leaves_a_sound_store() {
    let tmp = TempDir::new().unwrap();
    let rt = runtime();
    let filtered = start_server(
        &rt,
        ServerConfig { faults: Faults { content_filter: 1.0, ..Default::default() }, ..Default::default() },
    );
    let server = start_server(&rt, ServerConfig::default());
    let mut tried = Vec::new();

    // 1. Files limited in size (any user): creating a run does not fit.
    let dir = tmp.path().join("fsize");
    fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    json_of(&h2htalk(
        &[
            &run_args(&server.base_url(), &suite(), &db)[..],
            &["--limit".into(), "1".into(), "--tasks".into(), "dialogue_base".into()],
        ]
        .concat()
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    ));
    let limit = largest_file(&dir) / 1024 + 64;
    let out = run_with_file_limit(limit, &run_args(&server.base_url(), &suite(), &db));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a run past the file size limit succeeded");
    assert!(err.contains("runs.db") && err.contains("full"), "{err}");
    assert_eq!(integrity(&db), "ok");
    tried.push("file size limit while creating a run");

    // 2. The limit is reached while answers are being written: a run whose items all failed
    //    (content filter) is retried against a server of long answers with little room left.
    let long =
        start_server(&rt, ServerConfig { script: vec![(String::new(), "长".repeat(8_000))], ..Default::default() });
    let db2 = dir.join("runs2.db");
    let first = json_of(&h2htalk(
        &run_args(&filtered.base_url(), &suite(), &db2).iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let total = first["items"].as_u64().unwrap() as usize;
    assert_eq!(first["failed"], total);
    let run_id = first["run_id"].as_str().unwrap().to_string();
    let limit = largest_file(&dir) / 1024 + 256;
    let mut resume = run_args(&long.base_url(), &suite(), &db2);
    resume.extend(["--resume".to_string(), run_id.clone(), "--retry-failed".to_string()]);
    resume.retain(|a| a != "--metrics" && a != "lexical");
    let out = run_with_file_limit(limit, &resume);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "answers were written past the file size limit");
    assert!(err.contains("runs2.db") && err.contains("full"), "{err}");
    assert_eq!(integrity(&db2), "ok");
    let kept = stored_run(&db2, &run_id);
    assert_eq!(kept.generations.len(), total, "every item keeps a result");
    let written = kept.generations.values().filter(|g| g.status == "generated").count();
    assert!(written < total, "the limit stopped nothing");
    // Nothing is lost: with room again, the run completes.
    let done = json_of(&h2htalk(&resume.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!((done["generated"].as_u64(), done["failed"].as_u64()), (Some(total as u64), Some(0)), "{done}");
    tried.push("file size limit while writing answers, then resumed");

    // 3. A real full file system, where mounting is allowed (root).
    let mnt = tmp.path().join("tiny");
    if is_root() && mount_tmpfs(&mnt, "600k") {
        let _guard = ReadOnly { mount: Some(mnt.clone()) };
        let db3 = mnt.join("runs.db");
        let out = h2htalk(&run_args(&server.base_url(), &suite(), &db3).iter().map(String::as_str).collect::<Vec<_>>());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "a run on a full file system succeeded");
        assert!(err.contains("runs.db") && err.contains("full"), "{err}");
        if db3.exists() {
            assert_eq!(integrity_of_copy(&db3, &tmp.path().join("copy")), "ok");
        }
        tried.push("a 600 KiB tmpfs");
    } else {
        h2htalk_testkit::not_covered("a real full file system: it needs permission to mount a tmpfs (the file-size-limit cases above ran)");
    }
    eprintln!(
        "full disk: {} cases ({}), each a clear error, a non-zero exit and integrity_check ok",
        tried.len(),
        tried.join("; ")
    );
}

/// `PRAGMA integrity_check` of a store on a full file system, on a copy of its files (opening it
/// in place may need space that is not there).
fn integrity_of_copy(db: &Path, to: &Path) -> String {
    fs::create_dir_all(to).unwrap();
    for suffix in ["", "-wal"] {
        let from = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        if from.exists() {
            fs::copy(&from, to.join(format!("runs.db{suffix}"))).unwrap();
        }
    }
    integrity(&to.join("runs.db"))
}
