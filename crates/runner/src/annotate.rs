//! Judges checked against people: `annotate export` writes a blinded set of items (ids of their
//! own, model names hidden, the two answers of a pairwise item in a seeded random order kept in the
//! store) for people to rate on the judge's rubric or pairwise, as JSON Lines and CSV;
//! `annotate import` reads their ratings back, checking every row before storing any.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use h2htalk_data::suite::embedded;
use h2htalk_data::{ChatMessage, Family};
use h2htalk_judge::JudgeTexts;
use h2htalk_store::{AnnotationItem, AnnotationKind, HumanRating, Record, Store};
use serde::Serialize;
use serde_json::{Value, json};

use crate::{Result, RunError};

/// What `annotate export` makes.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    pub name: String,
    pub kind: AnnotationKind,
    /// Rubric: the runs whose answers are rated; pairwise: the two runs compared.
    pub runs: Vec<String>,
    /// At most this many scenarios (the same ones for every run), drawn with `seed`.
    pub limit: Option<usize>,
    pub seed: u64,
    pub out: PathBuf,
}

/// What was written.
#[derive(Clone, Debug, Serialize)]
pub struct Exported {
    pub name: String,
    pub kind: AnnotationKind,
    pub scenarios: usize,
    pub items: usize,
    pub jsonl: PathBuf,
    pub csv: PathBuf,
}

/// The CSV columns of each kind; raters fill the last one.
pub const RUBRIC_COLUMNS: [&str; 8] =
    ["item", "task", "lang", "conversation", "answer", "criterion", "criterion_text", "score"];
pub const PAIRWISE_COLUMNS: [&str; 7] = ["item", "task", "lang", "conversation", "answer_a", "answer_b", "winner"];

/// The conversation as one text (`role: content` lines), for the CSV.
fn conversation_text(messages: &[ChatMessage]) -> String {
    messages.iter().map(|m| format!("{}: {}", m.role, m.content)).collect::<Vec<_>>().join("\n\n")
}

fn usage(message: String) -> RunError {
    RunError::Usage(message)
}

/// Writes a blinded set of `options.runs` to `options.out` and stores what stands behind it.
pub fn export(store: &mut Store, options: &ExportOptions) -> Result<Exported> {
    let ExportOptions { name, kind, runs, limit, seed, out } = options;
    match kind {
        AnnotationKind::Pairwise if runs.len() != 2 => {
            return Err(usage("a pairwise set compares exactly two runs: give two --run".into()));
        }
        _ if runs.is_empty() => return Err(usage("give the runs to rate with --run RUN_ID".into())),
        _ => {}
    }
    let mut records: Vec<BTreeMap<String, Record>> = Vec::new();
    let mut first_spec = None;
    for r in runs {
        let row = store.run(r)?.ok_or_else(|| {
            usage(format!("--run {r}: no such run in {}; `h2htalk runs list` shows the runs", store.path()))
        })?;
        first_spec.get_or_insert(row.spec);
        records.push(store.records(r)?.into_iter().map(|rec| (rec.item.scenario_id.clone(), rec)).collect());
    }
    let spec = first_spec.expect("at least one run");
    let texts = JudgeTexts::load(&embedded::or_embedded(spec.suite.dir.as_deref())?)?;
    // Scenarios every run answered, of a family the judge rates (not the safety set).
    let mut scenarios: Vec<String> = records[0]
        .iter()
        .filter(|(id, rec)| {
            Family::of_group(&rec.item.task).is_some()
                && records.iter().all(|rs| rs.get(*id).and_then(|r| r.answer()).is_some_and(|a| !a.trim().is_empty()))
        })
        .map(|(id, _)| id.clone())
        .collect();
    if scenarios.is_empty() {
        return Err(usage("the runs share no answered scenario of a judged sub-task: nothing to rate".into()));
    }
    let mut rng = fastrand::Rng::with_seed(*seed);
    rng.shuffle(&mut scenarios);
    scenarios.truncate(limit.unwrap_or(usize::MAX));
    let mut items: Vec<AnnotationItem> = Vec::new();
    for sid in &scenarios {
        let task = records[0][sid].item.task.clone();
        match kind {
            AnnotationKind::Rubric => items.extend(runs.iter().map(|r| AnnotationItem {
                item: String::new(),
                scenario_id: sid.clone(),
                task: task.clone(),
                run_a: r.clone(),
                run_b: None,
                swapped: false,
            })),
            AnnotationKind::Pairwise => items.push(AnnotationItem {
                item: String::new(),
                scenario_id: sid.clone(),
                task,
                run_a: runs[0].clone(),
                run_b: Some(runs[1].clone()),
                swapped: rng.bool(),
            }),
        }
    }
    // Blind: the items in a random order, numbered in it.
    rng.shuffle(&mut items);
    for (k, it) in items.iter_mut().enumerate() {
        it.item = format!("{name}-{:04}", k + 1);
    }
    std::fs::create_dir_all(out).map_err(|e| usage(format!("{}: cannot create: {e}", out.display())))?;
    let jsonl_path = out.join(format!("{name}.jsonl"));
    let csv_path = out.join(format!("{name}.csv"));
    let mut jsonl = String::new();
    let columns: &[&str] = match kind {
        AnnotationKind::Rubric => &RUBRIC_COLUMNS,
        AnnotationKind::Pairwise => &PAIRWISE_COLUMNS,
    };
    let mut csv = csv::Writer::from_writer(Vec::new());
    let csv_err = |e: csv::Error| usage(format!("{}: {e}", csv_path.display()));
    csv.write_record(columns).map_err(csv_err)?;
    let run_index = |r: &str| runs.iter().position(|x| x == r).expect("an item's run is one of the runs");
    for it in &items {
        let rec = &records[run_index(&it.run_a)][&it.scenario_id];
        let lang = rec.item.lang.code();
        let conversation = &rec.item.prompt;
        let text = conversation_text(conversation);
        let answer_of = |run: &str| records[run_index(run)][&it.scenario_id].answer().unwrap_or("").to_string();
        match kind {
            AnnotationKind::Rubric => {
                let family = Family::of_group(&it.task).expect("judged sub-tasks only");
                let criteria = texts.lang(rec.item.lang).criteria(family);
                let answer = answer_of(&it.run_a);
                let line = json!({
                    "item": it.item, "kind": "rubric", "task": it.task, "lang": lang,
                    "conversation": conversation, "answer": answer,
                    "criteria": criteria.iter().map(|c| json!({"id": c.id, "text": c.text})).collect::<Vec<_>>(),
                    "scores": criteria.iter().map(|c| (c.id.clone(), Value::Null)).collect::<serde_json::Map<_, _>>(),
                });
                jsonl.push_str(&line.to_string());
                jsonl.push('\n');
                for c in criteria {
                    csv.write_record([&it.item, &it.task, lang, &text, &answer, &c.id, &c.text, ""])
                        .map_err(csv_err)?;
                }
            }
            AnnotationKind::Pairwise => {
                let (a, b) = (answer_of(&it.run_a), answer_of(it.run_b.as_deref().expect("pairwise items have two")));
                let (shown_a, shown_b) = if it.swapped { (b, a) } else { (a, b) };
                let line = json!({
                    "item": it.item, "kind": "pairwise", "task": it.task, "lang": lang,
                    "conversation": conversation, "answer_a": shown_a, "answer_b": shown_b,
                    "choices": ["A", "B", "tie"], "winner": Value::Null,
                });
                jsonl.push_str(&line.to_string());
                jsonl.push('\n');
                csv.write_record([&it.item, &it.task, lang, &text, &shown_a, &shown_b, ""]).map_err(csv_err)?;
            }
        }
    }
    let csv_bytes = csv.into_inner().map_err(|e| usage(format!("{}: {e}", csv_path.display())))?;
    store.create_annotation_set(name, *kind, *seed, &items)?;
    for (path, bytes) in [(&jsonl_path, jsonl.into_bytes()), (&csv_path, csv_bytes)] {
        std::fs::write(path, bytes).map_err(|e| usage(format!("{}: cannot write: {e}", path.display())))?;
    }
    Ok(Exported {
        name: name.clone(),
        kind: *kind,
        scenarios: scenarios.len(),
        items: items.len(),
        jsonl: jsonl_path,
        csv: csv_path,
    })
}

/// What `annotate import` stored.
#[derive(Clone, Debug, Serialize)]
pub struct Imported {
    pub set: String,
    pub raters: Vec<String>,
    pub ratings: usize,
    /// Ratings that replaced a rater's earlier rating of the same item and criterion.
    pub replaced: usize,
    /// Rows or fields the raters left empty (not rated; nothing stored for them).
    pub left_empty: usize,
}

/// A bad row of a ratings file: the file, the line and the field, and what to do.
fn bad(path: &Path, line: usize, field: &str, message: impl std::fmt::Display) -> RunError {
    usage(format!("{}:{line}: field `{field}`: {message}", path.display()))
}

/// Reads the ratings in `path` (the set's `.jsonl` or `.csv` as exported, filled in) by `rater`
/// (a `rater` field or column, where given, names the rater of its row instead) into `set`. Every
/// row is checked first; one bad row stores nothing.
pub fn import(store: &mut Store, set: &str, path: &Path, rater: Option<&str>) -> Result<Imported> {
    let stored = store.annotation_set(set)?.ok_or_else(|| {
        usage(format!("no annotation set `{set}` in {}; `h2htalk annotate export` makes one", store.path()))
    })?;
    let items: BTreeMap<&str, &AnnotationItem> = stored.items.iter().map(|i| (i.item.as_str(), i)).collect();
    let bytes = std::fs::read(path).map_err(|e| usage(format!("{}: cannot read: {e}", path.display())))?;
    let text = String::from_utf8(bytes).map_err(|_| bad(path, 1, "(file)", "not UTF-8; save the file as UTF-8"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    // (line, item, rater, criterion, raw value)
    let mut rows: Vec<(usize, String, Option<String>, String, String)> = Vec::new();
    let is_csv = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if is_csv {
        let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(text.as_bytes());
        let headers = reader.headers().map_err(|e| bad(path, 1, "(header)", e))?.clone();
        let col = |name: &str| headers.iter().position(|h| h == name);
        let item_col = col("item").ok_or_else(|| bad(path, 1, "item", "the header has no `item` column"))?;
        let (criterion_col, value_col) = match stored.kind {
            AnnotationKind::Rubric => (
                Some(
                    col("criterion")
                        .ok_or_else(|| bad(path, 1, "criterion", "the header has no `criterion` column"))?,
                ),
                col("score").ok_or_else(|| bad(path, 1, "score", "the header has no `score` column"))?,
            ),
            AnnotationKind::Pairwise => {
                (None, col("winner").ok_or_else(|| bad(path, 1, "winner", "the header has no `winner` column"))?)
            }
        };
        let rater_col = col("rater");
        for record in reader.records() {
            let record = record.map_err(|e| {
                let line = e.position().map_or(0, |p| p.line() as usize);
                bad(path, line, "(row)", e)
            })?;
            let line = record.position().map_or(0, |p| p.line() as usize);
            let get = |c: usize| record.get(c).unwrap_or("").trim().to_string();
            let criterion = criterion_col.map_or_else(|| "winner".to_string(), get);
            rows.push((line, get(item_col), rater_col.map(get).filter(|r| !r.is_empty()), criterion, get(value_col)));
        }
    } else {
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let n = i + 1;
            let v: Value = serde_json::from_str(line).map_err(|e| bad(path, n, "(line)", format!("not JSON: {e}")))?;
            let item = v.get("item").and_then(Value::as_str).ok_or_else(|| bad(path, n, "item", "missing"))?;
            let row_rater = v.get("rater").and_then(Value::as_str).map(str::to_string);
            let text_of = |x: &Value| match x {
                Value::Null => String::new(),
                Value::String(s) => s.trim().to_string(),
                other => other.to_string(),
            };
            match stored.kind {
                AnnotationKind::Rubric => {
                    let scores = v
                        .get("scores")
                        .and_then(Value::as_object)
                        .ok_or_else(|| bad(path, n, "scores", "missing, or not an object of criterion: score"))?;
                    for (c, x) in scores {
                        rows.push((n, item.to_string(), row_rater.clone(), c.clone(), text_of(x)));
                    }
                }
                AnnotationKind::Pairwise => {
                    let w = v.get("winner").unwrap_or(&Value::Null);
                    rows.push((n, item.to_string(), row_rater.clone(), "winner".into(), text_of(w)));
                }
            }
        }
    }
    // The criteria of the suite the set's runs were made from, as exported.
    let first_run = &stored.items.first().expect("a stored set has items").run_a;
    let suite_dir = store.run(first_run)?.and_then(|r| r.spec.suite.dir);
    let texts = JudgeTexts::load(&embedded::or_embedded(suite_dir.as_deref())?)?;
    let mut ratings = Vec::new();
    let mut seen = BTreeSet::new();
    let mut left_empty = 0;
    for (line, item, row_rater, criterion, raw) in rows {
        let it = items.get(item.as_str()).ok_or_else(|| {
            bad(
                path,
                line,
                "item",
                format!("`{item}` is not an item of set `{set}` (was the file exported for another set?)"),
            )
        })?;
        if raw.is_empty() {
            left_empty += 1;
            continue;
        }
        let who = row_rater.or_else(|| rater.map(str::to_string)).ok_or_else(|| {
            bad(path, line, "rater", "no rater: give --rater ID, or a `rater` column or field on each row")
        })?;
        let value = match stored.kind {
            AnnotationKind::Rubric => {
                let family = Family::of_group(&it.task).expect("a rubric item's sub-task has a family");
                let known: Vec<&str> = texts.zh.criteria(family).iter().map(|c| c.id.as_str()).collect::<Vec<_>>();
                if !known.contains(&criterion.as_str()) {
                    return Err(bad(
                        path,
                        line,
                        "criterion",
                        format!("`{criterion}` is not a criterion of {} (known: {})", family.name(), known.join(", ")),
                    ));
                }
                match raw.parse::<u8>() {
                    Ok(s @ 1..=10) => f64::from(s),
                    _ => return Err(bad(path, line, &criterion, format!("`{raw}`: give a whole score from 1 to 10"))),
                }
            }
            AnnotationKind::Pairwise => match raw.to_ascii_lowercase().as_str() {
                "a" => 1.0,
                "b" => 0.0,
                "tie" => 0.5,
                _ => return Err(bad(path, line, "winner", format!("`{raw}`: give A, B or tie"))),
            },
        };
        if !seen.insert((item.clone(), who.clone(), criterion.clone())) {
            return Err(bad(path, line, &criterion, format!("item `{item}` is rated twice by `{who}` in this file")));
        }
        ratings.push(HumanRating { item, rater: who, criterion, value });
    }
    let raters: Vec<String> = ratings.iter().map(|r| r.rater.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let replaced = store.put_human_ratings(set, &ratings)?;
    Ok(Imported { set: set.to_string(), raters, ratings: ratings.len(), replaced, left_empty })
}
