//! The official H2HTalk layout: a directory with one `<stem>.jsonl` per sub-task.
//!
//! References are `{"response": "..."}` lines. Predictions are matched to references by line number,
//! or explicitly by a 1-based `"index"` on every line, and may be written as `{"response": ...}`,
//! `{"answer": ...}` or `{"messages": [...]}` (the last assistant turn).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{DataError, Result};
use crate::jsonl::{JsonLine, kind};
use crate::task::Task;

/// One file of a directory in the official layout.
#[derive(Debug, Clone)]
pub struct TaskFile {
    pub task: Task,
    pub path: PathBuf,
    /// sha256 of the file's bytes as stored.
    pub sha256: String,
    /// The texts, in item order (item `i` is `texts[i - 1]`).
    pub texts: Vec<String>,
}

/// A directory in the official layout.
#[derive(Debug, Clone)]
pub struct TaskDir {
    pub dir: PathBuf,
    pub files: BTreeMap<Task, TaskFile>,
}

impl TaskDir {
    /// Total number of items over all files.
    pub fn len(&self) -> usize {
        self.files.values().map(|f| f.texts.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// sha256 over the parsed content of every file, in sub-task order: the same texts give the
    /// same fingerprint whatever their line endings, BOM or JSON escaping.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        for f in self.files.values() {
            h.update(format!("{}\t{}\n", f.task.stem(), f.texts.len()));
            for t in &f.texts {
                h.update(format!("{}:", t.len()));
                h.update(t.as_bytes());
                h.update(b"\n");
            }
        }
        format!("sha256:{}", hex(&h.finalize()))
    }

    /// The texts of `task`; empty when the directory has no file for it.
    pub fn texts(&self, task: Task) -> &[String] {
        self.files.get(&task).map_or(&[], |f| &f.texts)
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lists `dir`'s `.jsonl` files, failing on any that is not a sub-task stem. With `expected`, the
/// stems must be exactly those (a prediction directory mirrors its references); without, at least
/// one must be there.
fn task_paths(dir: &Path, expected: Option<&[Task]>) -> Result<Vec<(Task, PathBuf)>> {
    let entries = std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))?;
    let mut found = BTreeMap::new();
    for entry in entries {
        let entry = entry.map_err(|e| DataError::io(dir, e))?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue; // README.md and the like belong to the directory, not to the data
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let task = Task::from_stem(stem).ok_or_else(|| {
            DataError::file(
                &path,
                format!(
                    "unexpected file: `{stem}` is not a sub-task stem; rename or remove it (stems: {})",
                    Task::stem_list()
                ),
            )
        })?;
        found.insert(task, path);
    }
    let Some(expected) = expected else {
        if found.is_empty() {
            return Err(DataError::file(dir, format!("holds no <stem>.jsonl file (stems: {})", Task::stem_list())));
        }
        return Ok(found.into_iter().collect());
    };
    let missing: Vec<_> = expected.iter().filter(|t| !found.contains_key(t)).map(|t| format!("{t}.jsonl")).collect();
    if !missing.is_empty() {
        return Err(DataError::file(
            dir,
            format!(
                "missing file(s): {}; the references have them, so the predictions need them too",
                missing.join(", ")
            ),
        ));
    }
    if let Some((task, path)) = found.iter().find(|(t, _)| !expected.contains(t)) {
        return Err(DataError::file(
            path,
            format!("unexpected file: the references have no {task}.jsonl; remove it or add its references"),
        ));
    }
    Ok(found.into_iter().collect())
}

fn load_dir(
    dir: &Path,
    expected: Option<&[Task]>,
    parse_file: impl Fn(Task, &Path, Vec<JsonLine>) -> Result<Vec<String>>,
) -> Result<TaskDir> {
    let mut files = BTreeMap::new();
    for (task, path) in task_paths(dir, expected)? {
        let bytes = crate::input::read_file(&path)?;
        let lines = crate::jsonl::parse_objects(&path, &bytes)?;
        let texts = parse_file(task, &path, lines)?;
        files.insert(task, TaskFile { task, sha256: hex(&Sha256::digest(&bytes)), path, texts });
    }
    Ok(TaskDir { dir: dir.to_path_buf(), files })
}

/// Loads a reference directory: one or more `<stem>.jsonl` (the official release has all eleven),
/// every line exactly `{"response": "<string>"}`.
pub fn load_references(dir: &Path) -> Result<TaskDir> {
    load_dir(dir, None, |_, path, lines| {
        lines
            .into_iter()
            .map(|line| {
                only_keys(path, &line, &["response"], "a reference line holds only `response`")?;
                string_field(path, &line, "response")
            })
            .collect()
    })
}

/// One prediction line before it is matched to a reference.
struct PredictionLine {
    line: usize,
    index: Option<usize>,
    text: String,
}

const PREDICTION_KEYS: [&str; 4] = ["response", "answer", "messages", "index"];

fn parse_prediction(path: &Path, line: &JsonLine) -> Result<PredictionLine> {
    only_keys(
        path,
        line,
        &PREDICTION_KEYS,
        "a prediction line holds one of `response`, `answer`, `messages`, and optionally `index`",
    )?;
    let present: Vec<&str> =
        ["response", "answer", "messages"].into_iter().filter(|k| line.object.contains_key(*k)).collect();
    let text = match present.as_slice() {
        ["response"] | ["answer"] => string_field(path, line, present[0])?,
        ["messages"] => last_assistant_turn(path, line)?,
        [] => {
            return Err(DataError::line(
                path,
                line.number,
                "response",
                "missing; give the prediction as `response`, `answer` or `messages`",
            ));
        }
        _ => {
            return Err(DataError::line(
                path,
                line.number,
                present.join("+"),
                "more than one answer field on one line; keep exactly one",
            ));
        }
    };
    let index = match line.object.get("index") {
        None => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|i| i >= 1) => Some(n.as_u64().unwrap() as usize),
        Some(other) => {
            return Err(DataError::line(
                path,
                line.number,
                "index",
                format!("expected a 1-based integer line number of the reference, found {other}"),
            ));
        }
    };
    Ok(PredictionLine { line: line.number, index, text })
}

fn last_assistant_turn(path: &Path, line: &JsonLine) -> Result<String> {
    let err = |msg: String| DataError::line(path, line.number, "messages", msg);
    let Value::Array(turns) = &line.object["messages"] else {
        return Err(err(format!("expected an array of turns, found {}", kind(&line.object["messages"]))));
    };
    for (i, turn) in turns.iter().enumerate().rev() {
        let Value::Object(turn) = turn else {
            return Err(err(format!("turn {} is {}, expected an object with role and content", i + 1, kind(turn))));
        };
        let (role_key, content_key) = if turn.contains_key("from") { ("from", "value") } else { ("role", "content") };
        let role = turn.get(role_key).and_then(Value::as_str).ok_or_else(|| {
            err(format!("turn {} has no string `{role_key}`; each turn needs role/content (or from/value)", i + 1))
        })?;
        if role == "assistant" || role == "gpt" {
            return match turn.get(content_key) {
                Some(Value::String(s)) => Ok(s.clone()),
                other => Err(err(format!(
                    "turn {} (`{role}`): `{content_key}` must be a string, found {}",
                    i + 1,
                    other.map_or("nothing", kind)
                ))),
            };
        }
    }
    Err(err("no assistant (or gpt) turn; the prediction is the last assistant turn".into()))
}

/// Loads a prediction directory (the same stems as `references`) and matches it to them item by item.
pub fn load_predictions(dir: &Path, references: &TaskDir) -> Result<TaskDir> {
    let stems: Vec<Task> = references.files.keys().copied().collect();
    load_dir(dir, Some(&stems), |task, path, lines| {
        let parsed = lines.iter().map(|l| parse_prediction(path, l)).collect::<Result<Vec<_>>>()?;
        match_to_references(path, parsed, references.texts(task).len())
    })
}

/// Loads a prediction directory that answers only some reference lines (a run with `--limit`):
/// every line carries `index`, and files of stems it did not answer may be absent. Returns, per
/// sub-task, the predictions by 1-based reference line.
pub fn load_partial_predictions(dir: &Path, references: &TaskDir) -> Result<BTreeMap<Task, BTreeMap<usize, String>>> {
    let mut out = BTreeMap::new();
    for (task, path) in task_paths(dir, None)? {
        let expected = references.texts(task).len();
        if !references.files.contains_key(&task) {
            return Err(DataError::file(
                &path,
                format!("unexpected file: the references have no {task}.jsonl; remove it or add its references"),
            ));
        }
        let bytes = crate::input::read_file(&path)?;
        let mut by_line = BTreeMap::new();
        for line in crate::jsonl::parse_objects(&path, &bytes)? {
            let p = parse_prediction(&path, &line)?;
            let Some(i) = p.index else {
                return Err(DataError::line(
                    &path,
                    p.line,
                    "index",
                    "missing; partial predictions name the reference line each answers (1-based `index` on every line)",
                ));
            };
            if i > expected {
                return Err(DataError::line(&path, p.line, "index", format!("{i} is past the last reference ({expected})")));
            }
            if by_line.insert(i, p.text).is_some() {
                return Err(DataError::line(&path, p.line, "index", format!("{i} is given twice")));
            }
        }
        out.insert(task, by_line);
    }
    Ok(out)
}

fn match_to_references(path: &Path, lines: Vec<PredictionLine>, expected: usize) -> Result<Vec<String>> {
    let with_index = lines.iter().filter(|l| l.index.is_some()).count();
    if with_index == 0 {
        if lines.len() != expected {
            return Err(DataError::file(
                path,
                format!(
                    "{} prediction line(s) for {expected} reference(s); lines are matched by line number, so give one \
                     line per reference or add `index` to every line",
                    lines.len()
                ),
            ));
        }
        return Ok(lines.into_iter().map(|l| l.text).collect());
    }
    if with_index != lines.len() {
        let first = lines.iter().find(|l| l.index.is_none()).unwrap();
        return Err(DataError::line(
            path,
            first.line,
            "index",
            "missing, but other lines carry `index`; give `index` on every line or on none",
        ));
    }
    let mut slots: Vec<Option<(usize, String)>> = vec![None; expected];
    for l in lines {
        let i = l.index.unwrap();
        let slot = slots.get_mut(i - 1).ok_or_else(|| {
            DataError::line(path, l.line, "index", format!("{i} is past the last reference ({expected})"))
        })?;
        if let Some((first_line, _)) = slot {
            return Err(DataError::line(path, l.line, "index", format!("{i} already given on line {first_line}")));
        }
        *slot = Some((l.line, l.text));
    }
    let missing: Vec<String> =
        slots.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| (i + 1).to_string()).collect();
    if !missing.is_empty() {
        let shown = missing.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
        let more = if missing.len() > 10 { format!(" and {} more", missing.len() - 10) } else { String::new() };
        return Err(DataError::file(
            path,
            format!("no prediction for index {shown}{more} of {expected}; every reference needs one"),
        ));
    }
    Ok(slots.into_iter().map(|s| s.unwrap().1).collect())
}

fn only_keys(path: &Path, line: &JsonLine, allowed: &[&str], hint: &str) -> Result<()> {
    match line.object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(DataError::line(path, line.number, k.as_str(), format!("unknown field; {hint}"))),
        None => Ok(()),
    }
}

fn string_field(path: &Path, line: &JsonLine, key: &str) -> Result<String> {
    string_in(path, line.number, &line.object, key)
}

/// The string at `key` of `object`, or an error naming the line and field.
pub fn string_in(path: &Path, number: usize, object: &Map<String, Value>, key: &str) -> Result<String> {
    match object.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(DataError::line(path, number, key, format!("expected a string, found {}", kind(other)))),
        None => Err(DataError::line(path, number, key, "missing")),
    }
}
