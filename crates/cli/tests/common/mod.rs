//! Shared support for the end-to-end tests of the `h2htalk` binary: running it, starting the
//! in-suite server, generating larger suites, and reading a run back from its store.

#![allow(dead_code, unused_imports)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use h2htalk_data::{Task, load_references};
use h2htalk_store::Store;
use h2htalk_testserver::{ServerConfig, TestServer};
use serde_json::{Value, json};
use tempfile::TempDir;

pub use h2htalk_testkit::{golden, reference_dir as references, root};

/// The project's suite.
pub fn suite() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites")
}

/// The binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_h2htalk"))
}

pub fn h2htalk(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// Predictions where item i of each sub-task is reference i+1; `blank` items are whitespace only.
pub fn predictions(blank: &[(Task, usize)]) -> TempDir {
    let refs = load_references(&references()).expect("official references (set H2HTALK_REFERENCES)");
    let dir = TempDir::new().unwrap();
    for task in Task::ALL {
        let texts = refs.texts(task);
        let body: String = (0..texts.len())
            .map(|i| {
                let text = if blank.contains(&(task, i + 1)) { " \n" } else { texts[(i + 1) % texts.len()].as_str() };
                json!({ "response": text }).to_string() + "\n"
            })
            .collect();
        fs::write(dir.path().join(format!("{}.jsonl", task.stem())), body).unwrap();
    }
    dir
}

/// The objects of a JSON Lines file, one per line.
pub fn read_pairs(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap().as_object().unwrap().clone())
        .collect()
}

/// The standard output of a command that must have succeeded.
pub fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

/// A small lexical protocol: two dialogue sub-tasks, three scenarios each.
pub const SMALL: [&str; 6] = ["--tasks", "dialogue_base,dialogue_emotion", "--limit", "3", "--metrics", "lexical"];

/// `h2htalk.toml` in `dir` naming each server as a model; its path.
pub fn models_config(dir: &Path, servers: &[(&str, &TestServer)]) -> String {
    let toml: String = servers
        .iter()
        .map(|(name, s)| format!("[[model]]\nname = \"{name}\"\nbase_url = \"{}\"\n\n", s.base_url()))
        .collect();
    let path = dir.join("h2htalk.toml");
    fs::write(&path, toml).unwrap();
    path.to_str().unwrap().to_string()
}

pub fn start_server(rt: &tokio::runtime::Runtime, config: ServerConfig) -> TestServer {
    rt.block_on(TestServer::start(config, 0)).unwrap()
}

/// The arguments of a lexical-only run of `openai:test` on `server` with `suite`, into `db`.
pub fn run_args(url: &str, suite: &Path, db: &Path) -> Vec<String> {
    [
        "run",
        "--model",
        "openai:test",
        "--base-url",
        url,
        "--suite",
        suite.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--metrics",
        "lexical",
        "--json",
    ]
    .map(String::from)
    .to_vec()
}

/// Runs `h2htalk` and parses its `--json` output, failing the test on a non-zero exit.
pub fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "h2htalk failed: {}\nstdout: {}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Copies a directory tree.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Writes a suite `copies` times the size of ours into `to`: every sub-task scenario repeated
/// with new ids (`<stem>-NNN`) and its longest input text marked with the copy number, so that
/// every item's prompt (and so every request) is different. The safety set is kept as it is.
pub fn larger_suite(to: &Path, copies: usize) -> usize {
    copy_tree(&suite(), to);
    let mut n = 0;
    for entry in fs::read_dir(to.join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let lines: Vec<Value> =
            fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(lines.len() * copies <= 999, "ids have three digits");
        let mut out = String::new();
        for copy in 0..copies {
            for (j, line) in lines.iter().enumerate() {
                let mut v = line.clone();
                v["id"] = json!(format!("{stem}-{:03}", copy * lines.len() + j + 1));
                if copy > 0 {
                    mark_longest_text(&mut v["inputs"], &format!("（第{copy}份）"));
                }
                out.push_str(&v.to_string());
                out.push('\n');
                n += 1;
            }
        }
        fs::write(&path, out).unwrap();
    }
    if let Err(e) = h2htalk_data::load_suite(to) {
        panic!("the larger suite is not valid: {e}");
    }
    n
}

/// Appends `mark` to the longest free text of `v`: not a role, a time, a date or a category.
fn mark_longest_text(v: &mut Value, mark: &str) {
    const FIXED: [&str; 7] = ["role", "time", "now", "date", "today", "slot", "category"];
    fn longest<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut String> {
        match v {
            Value::String(s) if !FIXED.contains(&key) => Some(s),
            Value::Array(a) => a.iter_mut().filter_map(|x| longest(x, key)).max_by_key(|s| s.chars().count()),
            Value::Object(o) => o.iter_mut().filter_map(|(k, x)| longest(x, k)).max_by_key(|s| s.chars().count()),
            _ => None,
        }
    }
    longest(v, "").expect("inputs hold text").push_str(mark);
}

/// An item as stored, in the plain form the tests compare (the prompt as JSON).
#[derive(Clone, Debug, PartialEq)]
pub struct ItemRow {
    pub scenario_id: String,
    pub task: String,
    pub lang: String,
    pub ord: usize,
    pub prompt: String,
    pub reference: String,
}

/// A generation as stored, with its enums as their stored names and the faults as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationRow {
    pub scenario_id: String,
    pub status: String,
    pub text: Option<String>,
    pub finish_reason: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub latency_ms: f64,
    pub attempts: u32,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub faults: String,
}

/// A score as stored, the metrics as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoreRow {
    pub scenario_id: String,
    pub outcome: String,
    pub metrics: String,
    pub signature: String,
}

/// A run as stored: items, generations and scores by scenario id.
pub struct StoredRun {
    pub items: Vec<ItemRow>,
    pub generations: BTreeMap<String, GenerationRow>,
    pub scores: BTreeMap<String, ScoreRow>,
    pub status: String,
}

pub fn stored_run(db: &Path, run_id: &str) -> StoredRun {
    let store = Store::open(db).unwrap();
    let mut out = StoredRun {
        items: vec![],
        generations: BTreeMap::new(),
        scores: BTreeMap::new(),
        status: store.run(run_id).unwrap().unwrap().status.as_str().to_string(),
    };
    for r in store.records(run_id).unwrap() {
        let i = r.item;
        if let Some(g) = r.generation {
            let faults: Vec<&str> = g.faults.iter().map(|f| f.as_str()).collect();
            let row = GenerationRow {
                scenario_id: g.scenario_id.clone(),
                status: g.status.as_str().to_string(),
                text: g.text,
                finish_reason: g.finish_reason.map(|f| f.as_str().to_string()),
                input_tokens: g.input_tokens,
                output_tokens: g.output_tokens,
                latency_ms: g.latency_ms,
                attempts: g.attempts,
                error_kind: g.error_kind.map(|k| k.as_str().to_string()),
                error_message: g.error_message,
                faults: serde_json::to_string(&faults).unwrap(),
            };
            assert!(out.generations.insert(g.scenario_id, row).is_none(), "a scenario has two generations");
        }
        if let Some(sc) = r.score {
            let row = ScoreRow {
                scenario_id: sc.scenario_id.clone(),
                outcome: sc.outcome.as_str().to_string(),
                metrics: serde_json::to_string(&sc.metrics).unwrap(),
                signature: sc.signature,
            };
            out.scores.insert(sc.scenario_id, row);
        }
        out.items.push(ItemRow {
            scenario_id: i.scenario_id,
            task: i.task,
            lang: i.lang.code().to_string(),
            ord: i.ord,
            prompt: serde_json::to_string(&i.prompt).unwrap(),
            reference: i.reference,
        });
    }
    out
}

pub fn integrity(db: &Path) -> String {
    Store::open(db).unwrap().integrity_check().unwrap()
}

/// The last message of an item's stored prompt, as the server sees the request.
pub fn request_body(item: &ItemRow) -> Value {
    let messages: Value = serde_json::from_str(&item.prompt).unwrap();
    json!({ "messages": messages })
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Whether `needle` occurs in `hay`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether the test runs as root (file permissions do not stop root).
pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}
