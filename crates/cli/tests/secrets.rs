//! An API key never leaves the environment: runs with a recognisable fake key, then every byte
//! written (the store with its -wal and -shm files, exports, anything under the working directory,
//! HOME and TMPDIR, standard output and error) is searched for it, on the success path and on
//! the error paths (a 401 whose body quotes the key back, a missing variable).

mod common;

use std::path::Path;
use std::process::Output;
use std::sync::atomic::Ordering;

use common::*;
use h2htalk_testserver::ServerConfig;
use tempfile::TempDir;

const KEY: &str = "sk-h2htalk-FAKE-0d9c4e7a1b2f3865-canary";
const VAR: &str = "H2HTALK_TEST_API_KEY";

/// The arguments of a lexical-only run of `openai:test` at `url` on the project's suite, its key in
/// [`VAR`], followed by `extra`.
fn keyed_run(url: &str, extra: &[&str]) -> Vec<String> {
    let suite = suite();
    let head = ["run", "--model", "openai:test", "--base-url", url, "--api-key-env", VAR, "--suite"];
    head.iter().chain(&[suite.to_str().unwrap(), "--metrics", "lexical"]).chain(extra).map(|s| s.to_string()).collect()
}

/// Runs `h2htalk` in `home` (working directory, HOME and TMPDIR) with the key in [`VAR`].
fn in_sandbox<S: AsRef<str>>(home: &Path, args: &[S], outputs: &mut Vec<(String, Vec<u8>)>) -> Output {
    let tmpdir = home.join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let out = bin()
        .args(args.iter().map(AsRef::as_ref))
        .current_dir(home)
        .env("HOME", home)
        .env("TMPDIR", &tmpdir)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env(VAR, KEY)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let name = args.iter().take(2).map(AsRef::as_ref).collect::<Vec<&str>>().join(" ");
    outputs.push((format!("{name} stdout"), out.stdout.clone()));
    outputs.push((format!("{name} stderr"), out.stderr.clone()));
    out
}

/// Searches every file under `home` and every captured output for the key; returns how many
/// files and bytes were searched.
fn assert_no_key(home: &Path, outputs: &[(String, Vec<u8>)]) -> (usize, usize) {
    let (mut files, mut bytes) = (0, 0);
    let mut found = Vec::new();
    for f in files_under(home) {
        let data = std::fs::read(&f).unwrap();
        if contains(&data, KEY.as_bytes()) {
            found.push(f.display().to_string());
        }
        files += 1;
        bytes += data.len();
    }
    for (what, data) in outputs {
        if contains(data, KEY.as_bytes()) {
            found.push(format!("{what}: {}", String::from_utf8_lossy(data)));
        }
        bytes += data.len();
    }
    assert!(found.is_empty(), "the key is in:\n{}", found.join("\n"));
    (files, bytes)
}

#[test]
fn the_key_is_used_but_never_written_anywhere() {
    let rt = runtime();
    let server = start_server(&rt, ServerConfig { api_key: Some(KEY.into()), latency_ms: 20, ..Default::default() });
    let home = TempDir::new().unwrap();
    let h = home.path();
    let url = server.base_url();
    let mut outputs = Vec::new();
    let run = in_sandbox(h, &keyed_run(&url, &["--limit", "2", "--safety", "--db", "runs/h2htalk.db"]), &mut outputs);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    // The key was really sent: every request carried it.
    let requests = server.counters.requests.load(Ordering::Relaxed);
    assert!(requests >= 22 + 132 && server.counters.unauthorized.load(Ordering::Relaxed) == 0);
    let json = json_of(&in_sandbox(
        h,
        &keyed_run(&url, &["--limit", "1", "--tasks", "dialogue_base", "--db", "runs/h2htalk.db", "--json"]),
        &mut outputs,
    ));
    let run_id = json["run_id"].as_str().unwrap().to_string();
    for args in [
        vec!["runs", "list", "--db", "runs/h2htalk.db"],
        vec!["runs", "show", &run_id, "--db", "runs/h2htalk.db"],
        vec!["runs", "show", &run_id, "--db", "runs/h2htalk.db", "--json"],
        vec!["runs", "export", &run_id, "--db", "runs/h2htalk.db", "--out", "export"],
        vec!["run", "--resume", &run_id, "--db", "runs/h2htalk.db", "--json"],
    ] {
        let out = in_sandbox(h, &args, &mut outputs);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A run killed mid-way leaves its -wal and -shm files behind: they are searched too.
    let mut child = bin()
        .args(keyed_run(&url, &["--db", "runs/h2htalk.db", "--quiet"]))
        .current_dir(h)
        .env("HOME", h)
        .env("TMPDIR", h.join("tmp"))
        .env(VAR, KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it has written to the store's write-ahead log (a condition, not a guessed delay).
    let wal = h.join("runs/h2htalk.db-wal");
    let started = std::time::Instant::now();
    while !wal.metadata().is_ok_and(|m| m.len() > 0) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before writing its -wal file");
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "no -wal file within two minutes");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wal.exists(), "no -wal file left to search");
    assert!(h.join("runs/h2htalk.db").exists() && h.join("export/manifest.json").exists());
    let (files, bytes) = assert_no_key(h, &outputs);
    eprintln!(
        "secrets, success path: {} commands, {requests} authorised requests, key absent from {files} files and {} outputs ({bytes} bytes searched)",
        outputs.len() / 2,
        outputs.len()
    );
}

/// Runs against a server that refuses the key with 401, quoting it back in full (`echo`) or
/// masked as OpenAI does; then reads the run back. Returns the number of commands.
fn refused_runs(h: &Path, echo: bool, outputs: &mut Vec<(String, Vec<u8>)>) -> usize {
    let rt = runtime();
    let server = start_server(
        &rt,
        ServerConfig { api_key: Some("sk-the-right-one".into()), echo_auth_in_401: echo, ..Default::default() },
    );
    let url = server.base_url();
    let db = format!("runs/401-{echo}.db");
    for json in [true, false] {
        let mut args = keyed_run(&url, &["--limit", "1", "--db", &db]);
        if json {
            args.push("--json".into());
        }
        let out = in_sandbox(h, &args, outputs);
        assert!(server.counters.unauthorized.load(Ordering::Relaxed) > 0, "the server never refused the key");
        if json {
            let v = json_of(&out);
            assert_eq!(v["failed"], v["items"], "{v}");
            assert!(v["failure_reasons"]["client_error"].as_u64().is_some(), "{v}");
        }
    }
    let list = in_sandbox(h, &["runs", "list", "--db", &db], outputs);
    let run_id =
        String::from_utf8_lossy(&list.stdout).lines().nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    in_sandbox(h, &["runs", "show", &run_id, "--db", &db, "--json"], outputs);
    in_sandbox(h, &["runs", "show", &run_id, "--db", &db], outputs);
    in_sandbox(h, &["run", "--resume", &run_id, "--retry-failed", "--db", &db, "--json"], outputs);
    6
}

#[test]
fn error_paths_never_echo_the_key() {
    let home = TempDir::new().unwrap();
    let h = home.path();
    let mut outputs = Vec::new();
    let mut cases = refused_runs(h, false, &mut outputs);
    // A missing variable names the variable, not a value.
    let out = bin()
        .args([
            "run",
            "--model",
            "openai:test",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key-env",
            "H2HTALK_NO_SUCH_VAR",
        ])
        .args(["--suite", suite().to_str().unwrap(), "--db", h.join("runs/none.db").to_str().unwrap()])
        .env(VAR, KEY)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("H2HTALK_NO_SUCH_VAR"));
    outputs.push(("missing variable stderr".into(), out.stderr));
    cases += 1;
    let (files, bytes) = assert_no_key(h, &outputs);
    eprintln!(
        "secrets, error paths: {cases} commands (a refused key with 401, a missing variable); key absent from \
         {files} files and {} outputs ({bytes} bytes searched)",
        outputs.len()
    );
}

/// A server (or proxy) that quotes the refused key back in its 401 body: the body's text goes into
/// the failure's stored message, so the key must be scrubbed from it first.
#[test]
fn a_401_body_quoting_the_key_is_not_stored() {
    let home = TempDir::new().unwrap();
    let mut outputs = Vec::new();
    let cases = refused_runs(home.path(), true, &mut outputs);
    let (files, bytes) = assert_no_key(home.path(), &outputs);
    eprintln!("secrets, 401 quoting the key: {cases} commands; key absent from {files} files ({bytes} bytes searched)");
}
