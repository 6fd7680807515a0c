//! A run's answers written in the official prediction layout (`predictions/<stem>.jsonl`, in item
//! order) with the matching references, and a manifest naming every line's scenario and every
//! item not exported with its reason.
//!
//! A run of the official set (scenarios that answer official reference lines) is written for the
//! official files themselves: each prediction line carries the official line it answers
//! (`{"index": N, "response": ...}`, in line order), no references are copied, and the manifest
//! names the official data directory; `h2htalk score --references <official dir>` reads it
//! (with `--partial` when the run did not cover every line).
//!
//! A run that answered the memory suite (`run --memory`) also gets `memory/answers.jsonl` (every
//! reply, failed ones with their reason, with what the rules and the judge made of it) and, for the
//! `own` mode, `memory/notes.jsonl` (what the companion wrote down after each session).

use std::collections::BTreeMap;
use std::path::Path;

use h2htalk_data::Task;
use h2htalk_data::redact::redact;
use h2htalk_store::{GenerationStatus, MemoryAnswer, MemoryNote, Store};
use serde_json::json;

use crate::{Result, RunError};

/// What an export wrote.
pub struct Exported {
    pub answers: usize,
    pub tasks: usize,
    pub not_exported: usize,
    /// For a run of official lines: the official data directory the predictions answer.
    pub official_references: Option<std::path::PathBuf>,
    /// The memory suite's replies and notes written (`memory/`).
    pub memory_answers: usize,
    pub memory_notes: usize,
}

pub fn export_run(store: &Store, run_id: &str, out: &Path, redact_texts: bool) -> Result<Exported> {
    let run = store.run(run_id)?.ok_or_else(|| {
        RunError::Usage(format!("{}: no run `{run_id}`; `h2htalk runs list` shows the runs", store.path()))
    })?;
    let official = run.spec.suite.references.clone();
    // Official lines: (line, prediction) per sub-task, written in line order.
    let mut official_lines: BTreeMap<Task, Vec<(usize, String)>> = BTreeMap::new();
    let mut predictions: BTreeMap<Task, String> = BTreeMap::new();
    let mut references: BTreeMap<Task, String> = BTreeMap::new();
    let mut ids: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut not_exported = Vec::new();
    for record in store.records(run_id)? {
        let item = record.item;
        let Some(task) = Task::from_stem(&item.task) else {
            not_exported.push(json!({"id": item.scenario_id, "reason": "safety set (not an official sub-task)"}));
            continue;
        };
        match record.generation {
            Some(g) if g.status == GenerationStatus::Generated && official.is_some() => {
                let line = h2htalk_data::suite::OfficialRef::line_of_id(task, &item.scenario_id).ok_or_else(|| {
                    RunError::Usage(format!(
                        "run {run_id} is a run of official lines, but item `{}` is not named official-{task}-NNNN",
                        item.scenario_id
                    ))
                })?;
                let text = g.text.as_deref().unwrap_or("");
                let text = if redact_texts { redact(text) } else { text.to_string() };
                official_lines.entry(task).or_default().push((line, text));
                ids.entry(task.stem()).or_default().push(item.scenario_id);
            }
            Some(g) if g.status == GenerationStatus::Generated => {
                let text = g.text.as_deref().unwrap_or("");
                let (text, reference) = if redact_texts {
                    (redact(text), redact(&item.reference))
                } else {
                    (text.to_string(), item.reference)
                };
                predictions.entry(task).or_default().push_str(&(json!({"response": text}).to_string() + "\n"));
                references.entry(task).or_default().push_str(&(json!({"response": reference}).to_string() + "\n"));
                ids.entry(task.stem()).or_default().push(item.scenario_id);
            }
            Some(g) => not_exported.push(json!({
                "id": item.scenario_id,
                "reason": format!("failed: {}", g.error_kind.map_or("?", |k| k.as_str()))
            })),
            None => not_exported.push(json!({"id": item.scenario_id, "reason": "not generated yet (resume the run)"})),
        }
    }
    for (task, mut lines) in official_lines {
        lines.sort_by_key(|(line, _)| *line);
        let body = predictions.entry(task).or_default();
        for (line, text) in lines {
            body.push_str(&(json!({"index": line, "response": text}).to_string() + "\n"));
        }
    }
    if predictions.is_empty() {
        return Err(RunError::Usage(format!("run {run_id} has no generated sub-task answers to export")));
    }
    let io = |path: &Path, e: std::io::Error| RunError::Usage(format!("{}: {e}", path.display()));
    let (memory_answers, memory_notes) = export_memory(store, run_id, &out.join("memory"), redact_texts)?;
    if let Some(refs) = &official {
        let dir = out.join("predictions");
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        for (task, body) in &predictions {
            write_atomically(&dir.join(format!("{task}.jsonl")), body.as_bytes())?;
        }
        // ids in line order, as the prediction files.
        for list in ids.values_mut() {
            list.sort();
        }
        let manifest = json!({
            "run_id": run_id,
            "redacted": redact_texts,
            "official_references": refs,
            "layout": "official: each prediction line carries the 1-based official line it answers (`index`)",
            "line_ids": ids,
            "not_exported": not_exported,
        });
        let manifest = with_memory(manifest, memory_answers, memory_notes);
        write_atomically(
            &out.join("manifest.json"),
            serde_json::to_string_pretty(&manifest).expect("json").as_bytes(),
        )?;
        return Ok(Exported {
            answers: ids.values().map(Vec::len).sum(),
            tasks: predictions.len(),
            not_exported: not_exported.len(),
            official_references: Some(refs.clone()),
            memory_answers,
            memory_notes,
        });
    }
    for sub in ["predictions", "references"] {
        let dir = out.join(sub);
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    }
    for (task, body) in &predictions {
        write_atomically(&out.join("predictions").join(format!("{task}.jsonl")), body.as_bytes())?;
        write_atomically(&out.join("references").join(format!("{task}.jsonl")), references[task].as_bytes())?;
    }
    let manifest = json!({"run_id": run_id, "redacted": redact_texts, "line_ids": ids, "not_exported": not_exported});
    let manifest = with_memory(manifest, memory_answers, memory_notes);
    write_atomically(&out.join("manifest.json"), serde_json::to_string_pretty(&manifest).expect("json").as_bytes())?;
    Ok(Exported {
        answers: ids.values().map(Vec::len).sum(),
        tasks: predictions.len(),
        not_exported: not_exported.len(),
        official_references: None,
        memory_answers,
        memory_notes,
    })
}

/// The manifest with what it says of the memory suite, where the run answered it (left out
/// otherwise, so that exports of earlier runs stay as they were).
fn with_memory(mut manifest: serde_json::Value, answers: usize, notes: usize) -> serde_json::Value {
    if answers > 0 || notes > 0 {
        manifest["memory"] =
            json!({"answers": answers, "notes": notes, "files": "memory/answers.jsonl, memory/notes.jsonl (own mode)"});
    }
    manifest
}

/// Writes the memory suite's replies and notes of `run_id` into `dir` (nothing when it has none);
/// returns how many of each.
fn export_memory(store: &Store, run_id: &str, dir: &Path, redact_texts: bool) -> Result<(usize, usize)> {
    let mut answers = store.memory_answers(run_id)?;
    let mut notes = store.memory_notes(run_id)?;
    if answers.is_empty() && notes.is_empty() {
        return Ok((0, 0));
    }
    if redact_texts {
        answers.iter_mut().for_each(MemoryAnswer::redact_texts);
        notes.iter_mut().for_each(MemoryNote::redact_texts);
    }
    std::fs::create_dir_all(dir).map_err(|e| RunError::Usage(format!("{}: {e}", dir.display())))?;
    write_atomically(&dir.join("answers.jsonl"), jsonl(&answers).as_bytes())?;
    if !notes.is_empty() {
        write_atomically(&dir.join("notes.jsonl"), jsonl(&notes).as_bytes())?;
    }
    Ok((answers.len(), notes.len()))
}

/// One JSON line per row.
fn jsonl<T: serde::Serialize>(rows: &[T]) -> String {
    rows.iter().map(|r| serde_json::to_string(r).expect("stored rows serialise") + "\n").collect()
}

/// Writes `bytes` to `path` through a temporary file in the same directory, so that a failure
/// leaves no partial file behind.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| RunError::Usage(format!("{}: cannot create a file in this directory: {e}", dir.display())))?;
    tmp.write_all(bytes).map_err(|e| RunError::Usage(format!("{}: cannot write: {e}", path.display())))?;
    tmp.persist(path).map_err(|e| RunError::Usage(format!("{}: cannot write: {e}", path.display())))?;
    Ok(())
}
