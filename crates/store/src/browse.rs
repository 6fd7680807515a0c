//! The viewer's index of a store (`h2htalk view`): one row per item of every run with what its
//! filters and sorts read, each metric's value, and full-text search over prompts, references and
//! answers (FTS5 with the trigram tokenizer, so a Chinese phrase matches inside a sentence).
//!
//! The index is derived and rebuildable, so it lives in a file of its own (the store's path with
//! `.view` added, or any path the caller gives): the store itself is attached read-only and never
//! written. It is built on first use and kept in step: [`ViewIndex::refresh`] compares each run's
//! stamp (its status and the counts of its generations, scores, format checks, judge scores and
//! safety verdicts) with the one indexed and re-indexes a run whose stamp changed. Pages are read
//! with keyset queries (never an OFFSET over the table), forward and back.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params, params_from_iter};

use crate::{SCHEMA_VERSION, StoreError, StoreResult};

/// Bumped when the index's tables change: an index of another version is rebuilt.
const INDEX_VERSION: &str = "2";

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS indexed_runs (run_id TEXT PRIMARY KEY, stamp TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scenarios (
    id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    UNIQUE (task, scenario_id)
);
CREATE TABLE IF NOT EXISTS rows (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    scenario INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    model TEXT NOT NULL,
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    status TEXT NOT NULL,
    scoring TEXT NOT NULL,
    format_failed INTEGER NOT NULL,
    judge_mean REAL,
    safety TEXT,
    UNIQUE (run_id, scenario_id)
);
CREATE TABLE IF NOT EXISTS row_tags (
    tag TEXT NOT NULL,
    row INTEGER NOT NULL,
    PRIMARY KEY (tag, row)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rows_by_scenario ON rows (scenario, run_id);
CREATE TABLE IF NOT EXISTS metric_values (
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    row INTEGER NOT NULL,
    PRIMARY KEY (metric, value, row)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS metric_values_by_row ON metric_values (row, metric);
CREATE VIRTUAL TABLE IF NOT EXISTS answer_text USING fts5 (answer, tokenize = 'trigram');
CREATE VIRTUAL TABLE IF NOT EXISTS scenario_text USING fts5 (prompt, reference, tokenize = 'trigram');
";

/// What to show of the items: every field optional; strings are matched exactly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ItemFilter {
    pub run: Option<String>,
    pub model: Option<String>,
    pub task: Option<String>,
    /// A scenario tag (`implicit_need`, `changing_need`, `multi_session`, `emotion:sad`, ...).
    pub tag: Option<String>,
    /// `pending`, `failed`, `generated`, `unscored` (generated, no score) or `dropped`.
    pub status: Option<String>,
    /// Only items with a failed format check.
    pub format_failed: bool,
    /// A metric's range (both ends included); with neither end, items that have the metric.
    pub metric: Option<String>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The mean of the judges' scores.
    pub judge_min: Option<f64>,
    pub judge_max: Option<f64>,
    /// A safety verdict (`fail` when any judge failed the answer, else the verdict given).
    pub safety: Option<String>,
    /// Text found in the prompt, the reference or the answer (taken literally: no search syntax).
    pub text: Option<String>,
}

/// The order of a listing: the store's (run, then item order), or a metric's value.
#[derive(Clone, Debug, PartialEq)]
pub enum SortBy {
    Store,
    Metric { name: String, descending: bool },
}

/// Where a page starts: after or before a row, by the sort's key.
#[derive(Clone, Debug, PartialEq)]
pub enum Cursor {
    First,
    After(Key),
    Before(Key),
}

/// A row's place in a listing: its sort value (for a metric sort) and its id.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub value: Option<f64>,
    pub id: i64,
}

impl Key {
    /// `ID` or `VALUE~ID`, as it travels in a URL.
    pub fn encode(&self) -> String {
        match self.value {
            Some(v) => format!("{v:?}~{}", self.id),
            None => self.id.to_string(),
        }
    }

    pub fn decode(s: &str) -> Option<Key> {
        match s.split_once('~') {
            Some((v, id)) => {
                Some(Key { value: Some(v.parse().ok().filter(|v: &f64| v.is_finite())?), id: id.parse().ok()? })
            }
            None => Some(Key { value: None, id: s.parse().ok()? }),
        }
    }
}

/// One item in a listing.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BrowseRow {
    pub id: i64,
    pub run_id: String,
    pub scenario_id: String,
    pub model: String,
    pub task: String,
    pub lang: String,
    pub status: String,
    pub scoring: String,
    pub format_failed: i64,
    pub judge_mean: Option<f64>,
    pub safety: Option<String>,
    /// The sort metric's value (a metric sort), else the composite's when the item has one.
    pub value: Option<f64>,
    /// The start of the answer.
    pub snippet: Option<String>,
}

/// One page of a listing, with the cursors of its neighbours.
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    pub rows: Vec<BrowseRow>,
    /// The key of the last row, when more follow.
    pub next: Option<Key>,
    /// The key of the first row, when rows come before it.
    pub prev: Option<Key>,
}

/// What [`ViewIndex::refresh`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Refreshed {
    pub runs_indexed: usize,
    pub rows_indexed: usize,
    pub runs_dropped: usize,
}

/// A run as the index sees it: its id, model label and each scenario's tags.
pub struct RunTags<'a> {
    pub run_id: &'a str,
    pub model: &'a str,
    pub tags: &'a BTreeMap<String, Vec<String>>,
}

pub struct ViewIndex {
    conn: Connection,
    path: String,
    store_path: String,
    /// The store's `data_version` when last looked at: it changes when another connection commits.
    seen_version: Option<i64>,
}

impl ViewIndex {
    /// The index's default file for the store at `store`: beside it, `.view` appended.
    pub fn default_path(store: &Path) -> std::path::PathBuf {
        let mut p = store.as_os_str().to_owned();
        p.push(".view");
        p.into()
    }

    /// Opens (creating if needed) the index at `path` for the store at `store`, which is attached
    /// read-only. An index made for another store or by another version of this code is emptied.
    pub fn open(store: &Path, path: &Path) -> StoreResult<ViewIndex> {
        let p = path.display().to_string();
        let err = |message: String| StoreError::Db { path: p.clone(), message };
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| {
            err(format!(
                "cannot open the view index: {e}; where this folder cannot be written, give `--index FILE` elsewhere"
            ))
        })?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| err(e.to_string()))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(|e| err(e.to_string()))?;
        let canonical = store.canonicalize().unwrap_or_else(|_| store.to_path_buf());
        let uri = format!(
            "file:{}?mode=ro",
            canonical.display().to_string().replace('%', "%25").replace('?', "%3f").replace('#', "%23")
        );
        conn.execute("ATTACH DATABASE ?1 AS s", [&uri]).map_err(|e| err(format!("cannot attach the store: {e}")))?;
        let index = ViewIndex { conn, path: p, store_path: canonical.display().to_string(), seen_version: None };
        index.init()?;
        Ok(index)
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Db { path: self.path.clone(), message: e.to_string() }
    }

    fn init(&self) -> StoreResult<()> {
        let stamp = format!("{INDEX_VERSION}|{SCHEMA_VERSION}|{}", self.store_path);
        let has_meta: bool = self
            .conn
            .query_row("SELECT count(*) FROM main.sqlite_master WHERE name = 'meta'", [], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e))?
            > 0;
        let current: Option<String> = if has_meta {
            self.conn
                .query_row("SELECT value FROM main.meta WHERE key = 'made_for'", [], |r| r.get(0))
                .optional()
                .map_err(|e| self.err(e))?
        } else {
            None
        };
        if current.as_deref() != Some(stamp.as_str()) {
            for t in [
                "indexed_runs",
                "scenarios",
                "rows",
                "row_tags",
                "metric_values",
                "answer_text",
                "scenario_text",
                "meta",
            ] {
                self.conn.execute_batch(&format!("DROP TABLE IF EXISTS main.{t}")).map_err(|e| self.err(e))?;
            }
        }
        self.conn.execute_batch(TABLES).map_err(|e| self.err(e))?;
        self.conn
            .execute("INSERT OR REPLACE INTO main.meta (key, value) VALUES ('made_for', ?1)", [&stamp])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A run's stamp: what changes when anything the index shows of it changes.
    fn stamp(&self, run_id: &str) -> StoreResult<String> {
        let count = |table: &str| -> StoreResult<i64> {
            let has: i64 = self
                .conn
                .query_row("SELECT count(*) FROM s.sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
                    r.get(0)
                })
                .map_err(|e| self.err(e))?;
            if has == 0 {
                return Ok(0);
            }
            self.conn
                .query_row(&format!("SELECT count(*) FROM s.{table} WHERE run_id = ?1"), [run_id], |r| r.get(0))
                .map_err(|e| self.err(e))
        };
        let status: String = self
            .conn
            .query_row("SELECT status FROM s.runs WHERE id = ?1", [run_id], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let failed: i64 = self
            .conn
            .query_row("SELECT count(*) FROM s.generations WHERE run_id = ?1 AND status = 'failed'", [run_id], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))?;
        Ok(format!(
            "{status}|{}|{failed}|{}|{}|{}|{}",
            count("generations")?,
            count("scores")?,
            count("format_checks")?,
            count("judge_scores")?,
            count("safety_verdicts")?
        ))
    }

    /// Whether the store may have changed since this was last asked (always the first time): a
    /// cheap test before [`ViewIndex::refresh`], whose stamps count rows of every run.
    pub fn store_changed(&mut self) -> StoreResult<bool> {
        let v: i64 = self.conn.query_row("PRAGMA s.data_version", [], |r| r.get(0)).map_err(|e| self.err(e))?;
        Ok(self.seen_version.replace(v) != Some(v))
    }

    /// Brings the index in step with the store for `runs` (every run the index should hold);
    /// runs indexed but no longer given are dropped.
    pub fn refresh(&mut self, runs: &[RunTags<'_>]) -> StoreResult<Refreshed> {
        let mut done = Refreshed::default();
        let indexed: BTreeMap<String, String> = {
            let mut stmt = self.conn.prepare("SELECT run_id, stamp FROM main.indexed_runs").map_err(|e| self.err(e))?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.err(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?
        };
        for id in indexed.keys().filter(|id| !runs.iter().any(|r| r.run_id == id.as_str())) {
            self.drop_run(id)?;
            done.runs_dropped += 1;
        }
        for run in runs {
            let stamp = self.stamp(run.run_id)?;
            if indexed.get(run.run_id) == Some(&stamp) {
                continue;
            }
            done.rows_indexed += self.index_run(run, &stamp)?;
            done.runs_indexed += 1;
        }
        Ok(done)
    }

    fn drop_run(&mut self, run_id: &str) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute(
            "DELETE FROM main.metric_values WHERE row IN (SELECT id FROM main.rows WHERE run_id = ?1)",
            [run_id],
        )
        .map_err(e)?;
        tx.execute(
            "DELETE FROM main.answer_text WHERE rowid IN (SELECT id FROM main.rows WHERE run_id = ?1)",
            [run_id],
        )
        .map_err(e)?;
        tx.execute("DELETE FROM main.rows WHERE run_id = ?1", [run_id]).map_err(e)?;
        tx.execute("DELETE FROM main.indexed_runs WHERE run_id = ?1", [run_id]).map_err(e)?;
        tx.commit().map_err(e)
    }

    fn index_run(&mut self, run: &RunTags<'_>, stamp: &str) -> StoreResult<usize> {
        self.drop_run(run.run_id)?;
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let has = |conn: &Connection, t: &str| -> rusqlite::Result<bool> {
            conn.query_row("SELECT count(*) FROM s.sqlite_master WHERE type = 'table' AND name = ?1", [t], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n > 0)
        };
        let format_sql = if has(&self.conn, "format_checks").map_err(e)? {
            "(SELECT count(*) FROM s.format_checks f WHERE f.run_id = i.run_id AND f.scenario_id = i.scenario_id AND f.passed = 0)"
        } else {
            "0"
        };
        let judge_sql = if has(&self.conn, "judge_scores").map_err(e)? {
            "(SELECT avg(j.mean) FROM s.judge_scores j WHERE j.run_id = i.run_id AND j.scenario_id = i.scenario_id \
             AND j.outcome = 'scored')"
        } else {
            "NULL"
        };
        let safety_sql = if has(&self.conn, "safety_verdicts").map_err(e)? {
            "(SELECT CASE WHEN sum(v.verdict = 'fail') > 0 THEN 'fail' ELSE min(v.verdict) END FROM s.safety_verdicts v \
             WHERE v.run_id = i.run_id AND v.scenario_id = i.scenario_id)"
        } else {
            "NULL"
        };
        let sql = format!(
            "SELECT i.scenario_id, i.task, i.lang, i.ord, i.prompt, i.reference, g.status, g.text, s2.outcome, s2.metrics, \
             {format_sql}, {judge_sql}, {safety_sql} \
             FROM s.items i \
             LEFT JOIN s.generations g ON g.run_id = i.run_id AND g.scenario_id = i.scenario_id \
             LEFT JOIN s.scores s2 ON s2.run_id = i.run_id AND s2.scenario_id = i.scenario_id \
             WHERE i.run_id = ?1 ORDER BY i.ord"
        );
        let tx = self.conn.transaction().map_err(e)?;
        let mut n = 0;
        {
            let mut read = tx.prepare(&sql).map_err(e)?;
            let mut scenario_id_of =
                tx.prepare_cached("SELECT id FROM main.scenarios WHERE task = ?1 AND scenario_id = ?2").map_err(e)?;
            let mut new_scenario =
                tx.prepare_cached("INSERT INTO main.scenarios (task, scenario_id) VALUES (?1, ?2)").map_err(e)?;
            let mut scenario_text = tx
                .prepare_cached("INSERT INTO main.scenario_text (rowid, prompt, reference) VALUES (?1, ?2, ?3)")
                .map_err(e)?;
            let mut row = tx
                .prepare_cached(
                    "INSERT INTO main.rows (run_id, scenario_id, scenario, ord, model, task, lang, status, scoring, \
                     format_failed, judge_mean, safety) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
                )
                .map_err(e)?;
            let mut metric = tx
                .prepare_cached("INSERT INTO main.metric_values (metric, value, row) VALUES (?1, ?2, ?3)")
                .map_err(e)?;
            let mut answer =
                tx.prepare_cached("INSERT INTO main.answer_text (rowid, answer) VALUES (?1, ?2)").map_err(e)?;
            let mut tag =
                tx.prepare_cached("INSERT OR IGNORE INTO main.row_tags (tag, row) VALUES (?1, ?2)").map_err(e)?;
            let mut rows = read.query([run.run_id]).map_err(e)?;
            while let Some(r) = rows.next().map_err(e)? {
                let scenario_id: String = r.get(0).map_err(e)?;
                let task: String = r.get(1).map_err(e)?;
                let scenario: i64 =
                    match scenario_id_of.query_row(params![task, scenario_id], |r| r.get(0)).optional().map_err(e)? {
                        Some(id) => id,
                        None => {
                            new_scenario.execute(params![task, scenario_id]).map_err(e)?;
                            let id = tx.last_insert_rowid();
                            let prompt: String = r.get(4).map_err(e)?;
                            let messages: Vec<h2htalk_data::ChatMessage> =
                                serde_json::from_str(&prompt).unwrap_or_default();
                            let text: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
                            let reference: String = r.get(5).map_err(e)?;
                            scenario_text.execute(params![id, text.join("\n"), reference]).map_err(e)?;
                            id
                        }
                    };
                let status: String = r.get::<_, Option<String>>(6).map_err(e)?.unwrap_or_else(|| "pending".into());
                let scoring: String = r.get::<_, Option<String>>(8).map_err(e)?.unwrap_or_else(|| "unscored".into());
                row.execute(params![
                    run.run_id,
                    scenario_id,
                    scenario,
                    r.get::<_, i64>(3).map_err(e)?,
                    run.model,
                    task,
                    r.get::<_, String>(2).map_err(e)?,
                    status,
                    scoring,
                    r.get::<_, i64>(10).map_err(e)?,
                    r.get::<_, Option<f64>>(11).map_err(e)?,
                    r.get::<_, Option<String>>(12).map_err(e)?,
                ])
                .map_err(e)?;
                let id = tx.last_insert_rowid();
                for t in run.tags.get(&scenario_id).into_iter().flatten() {
                    tag.execute(params![t, id]).map_err(e)?;
                }
                if let Some(metrics) = r.get::<_, Option<String>>(9).map_err(e)? {
                    let values: BTreeMap<String, f64> = serde_json::from_str(&metrics).unwrap_or_default();
                    let composite = (!values.contains_key("composite"))
                        .then(|| h2htalk_metrics::composite_of(|n| values.get(n).copied()))
                        .flatten();
                    for (name, value) in
                        values.iter().map(|(k, v)| (k.as_str(), *v)).chain(composite.map(|c| ("composite", c)))
                    {
                        if value.is_finite() {
                            metric.execute(params![name, value, id]).map_err(e)?;
                        }
                    }
                }
                if let Some(text) = r.get::<_, Option<String>>(7).map_err(e)? {
                    answer.execute(params![id, text]).map_err(e)?;
                }
                n += 1;
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO main.indexed_runs (run_id, stamp) VALUES (?1, ?2)",
            params![run.run_id, stamp],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(n)
    }

    /// Per run indexed: its items, failed items and pending items.
    pub fn run_counts(&self) -> StoreResult<BTreeMap<String, (i64, i64, i64)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT run_id, count(*), sum(status = 'failed'), sum(status = 'pending') FROM main.rows GROUP BY run_id",
            )
            .map_err(|e| self.err(e))?;
        let rows =
            stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?)))).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The metric names indexed, in name order.
    pub fn metrics(&self) -> StoreResult<Vec<String>> {
        self.distinct_keys("metric_values", "metric")
    }

    /// The distinct values of `column`, the first of `table`'s primary key: they are few, so one
    /// step down the key per value instead of a scan of every row.
    fn distinct_keys(&self, table: &str, column: &str) -> StoreResult<Vec<String>> {
        let mut out = Vec::new();
        let mut last = String::new();
        let sql = format!("SELECT min({column}) FROM main.{table} WHERE {column} > ?1");
        loop {
            let next: Option<String> = self.conn.query_row(&sql, [&last], |r| r.get(0)).map_err(|e| self.err(e))?;
            match next {
                Some(m) => {
                    last = m.clone();
                    out.push(m);
                }
                None => return Ok(out),
            }
        }
    }

    /// The values a filter can take: `column` of the rows (`model`, `task`, `status`, `safety`), distinct.
    pub fn distinct(&self, column: &str) -> StoreResult<Vec<String>> {
        let column = match column {
            "model" | "task" | "status" | "safety" | "scoring" => column,
            other => return Err(self.err(format!("`{other}` is not a column the viewer filters on"))),
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT DISTINCT {column} FROM main.rows WHERE {column} IS NOT NULL ORDER BY 1"))
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The tags the indexed rows carry, in name order.
    pub fn tags(&self) -> StoreResult<Vec<String>> {
        self.distinct_keys("row_tags", "tag")
    }

    /// One page of at most `limit` items matching `filter` in `sort` order from `cursor`.
    pub fn page(&self, filter: &ItemFilter, sort: &SortBy, cursor: &Cursor, limit: usize) -> StoreResult<Page> {
        let mut args: Vec<Sql> = Vec::new();
        let mut arg = |v: Sql| -> String {
            args.push(v);
            format!("?{}", args.len())
        };
        let mut wheres: Vec<String> = Vec::new();
        let text = |s: &Option<String>| s.as_ref().filter(|s| !s.is_empty()).cloned();
        for (column, value) in [("r.run_id", &filter.run), ("r.model", &filter.model), ("r.task", &filter.task)] {
            if let Some(v) = text(value) {
                wheres.push(format!("{column} = {}", arg(Sql::Text(v))));
            }
        }
        if let Some(t) = text(&filter.tag) {
            wheres.push(format!("r.id IN (SELECT row FROM main.row_tags WHERE tag = {})", arg(Sql::Text(t))));
        }
        match text(&filter.status).as_deref() {
            None => {}
            Some("unscored") => wheres.push("r.status = 'generated' AND r.scoring = 'unscored'".into()),
            Some("dropped") => wheres.push("r.scoring = 'dropped'".into()),
            Some(s) => wheres.push(format!("r.status = {}", arg(Sql::Text(s.to_string())))),
        }
        if filter.format_failed {
            wheres.push("r.format_failed > 0".into());
        }
        if let Some(v) = filter.judge_min {
            wheres.push(format!("r.judge_mean >= {}", arg(Sql::Real(v))));
        }
        if let Some(v) = filter.judge_max {
            wheres.push(format!("r.judge_mean <= {}", arg(Sql::Real(v))));
        }
        if let Some(v) = text(&filter.safety) {
            wheres.push(format!("r.safety = {}", arg(Sql::Text(v))));
        }
        let sort_metric = match sort {
            SortBy::Metric { name, .. } => Some(name.clone()),
            SortBy::Store => None,
        };
        if let Some(m) = text(&filter.metric) {
            if sort_metric.as_deref() == Some(m.as_str()) {
                // The sort's own metric: its range bounds the index scan.
                if let Some(v) = filter.min {
                    wheres.push(format!("mv.value >= {}", arg(Sql::Real(v))));
                }
                if let Some(v) = filter.max {
                    wheres.push(format!("mv.value <= {}", arg(Sql::Real(v))));
                }
            } else {
                let mut cond = format!("mf.row = r.id AND mf.metric = {}", arg(Sql::Text(m)));
                if let Some(v) = filter.min {
                    cond.push_str(&format!(" AND mf.value >= {}", arg(Sql::Real(v))));
                }
                if let Some(v) = filter.max {
                    cond.push_str(&format!(" AND mf.value <= {}", arg(Sql::Real(v))));
                }
                wheres.push(format!("EXISTS (SELECT 1 FROM main.metric_values mf WHERE {cond})"));
            }
        }
        if let Some(q) = text(&filter.text) {
            // Taken literally: a phrase (quotes doubled) for MATCH; under three characters the
            // trigram index cannot help and the texts are scanned.
            if q.chars().count() >= 3 {
                let phrase = format!("\"{}\"", q.replace('"', "\"\""));
                let a = arg(Sql::Text(phrase));
                wheres.push(format!(
                    "(r.id IN (SELECT rowid FROM main.answer_text WHERE answer_text MATCH {a}) OR r.scenario IN \
                     (SELECT rowid FROM main.scenario_text WHERE scenario_text MATCH {a}))"
                ));
            } else {
                let a = arg(Sql::Text(q));
                wheres.push(format!(
                    "(r.id IN (SELECT rowid FROM main.answer_text WHERE instr(answer, {a}) > 0) OR r.scenario IN \
                     (SELECT rowid FROM main.scenario_text WHERE instr(prompt, {a}) > 0 OR instr(reference, {a}) > 0))"
                ));
            }
        }
        let backwards = matches!(cursor, Cursor::Before(_));
        let (select, key_cols, descending) = match sort {
            SortBy::Store => (
                "SELECT r.id, r.run_id, r.scenario_id, r.model, r.task, r.lang, r.status, r.scoring, r.format_failed, \
                 r.judge_mean, r.safety, (SELECT value FROM main.metric_values c WHERE c.row = r.id AND c.metric = 'composite') \
                 FROM main.rows r"
                    .to_string(),
                "r.id".to_string(),
                false,
            ),
            SortBy::Metric { name, descending } => {
                let m = arg(Sql::Text(name.clone()));
                (
                    format!(
                        "SELECT r.id, r.run_id, r.scenario_id, r.model, r.task, r.lang, r.status, r.scoring, \
                         r.format_failed, r.judge_mean, r.safety, mv.value FROM main.metric_values mv \
                         JOIN main.rows r ON r.id = mv.row AND mv.metric = {m}"
                    ),
                    "mv.value, mv.row".to_string(),
                    *descending,
                )
            }
        };
        // Forward in the sort's direction, or backward from a row; then one more than a page
        // to know whether more follow.
        let ascending = descending == backwards;
        let key_of = |k: &Key, arg: &mut dyn FnMut(Sql) -> String| -> String {
            match (sort, k.value) {
                (SortBy::Store, _) => arg(Sql::Integer(k.id)),
                (SortBy::Metric { .. }, v) => {
                    format!("{}, {}", arg(Sql::Real(v.unwrap_or(f64::NEG_INFINITY))), arg(Sql::Integer(k.id)))
                }
            }
        };
        match cursor {
            Cursor::First => {}
            Cursor::After(k) | Cursor::Before(k) => {
                let op = if ascending { ">" } else { "<" };
                let bound = key_of(k, &mut arg);
                wheres.push(format!("({key_cols}) {op} ({bound})"));
            }
        }
        let dir = if ascending { "ASC" } else { "DESC" };
        let order = key_cols.split(", ").map(|c| format!("{c} {dir}")).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "{select}{}{} ORDER BY {order} LIMIT {}",
            if wheres.is_empty() { "" } else { " WHERE " },
            wheres.join(" AND "),
            limit + 1
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params_from_iter(args.iter()), |r| {
                Ok(BrowseRow {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    scenario_id: r.get(2)?,
                    model: r.get(3)?,
                    task: r.get(4)?,
                    lang: r.get(5)?,
                    status: r.get(6)?,
                    scoring: r.get(7)?,
                    format_failed: r.get(8)?,
                    judge_mean: r.get(9)?,
                    safety: r.get(10)?,
                    value: r.get(11)?,
                    snippet: None,
                })
            })
            .map_err(|e| self.err(e))?;
        let mut rows: Vec<BrowseRow> = rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        if backwards {
            rows.reverse();
        }
        for row in &mut rows {
            row.snippet = self
                .conn
                .query_row("SELECT substr(answer, 1, 160) FROM main.answer_text WHERE rowid = ?1", [row.id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.err(e))?;
        }
        let key = |r: &BrowseRow| Key {
            value: match sort {
                SortBy::Store => None,
                SortBy::Metric { .. } => r.value,
            },
            id: r.id,
        };
        let (next, prev) = match cursor {
            Cursor::First => (rows.last().filter(|_| more).map(key), None),
            Cursor::After(_) => (rows.last().filter(|_| more).map(key), rows.first().map(key)),
            Cursor::Before(_) => (rows.last().map(key), rows.first().filter(|_| more).map(key)),
        };
        Ok(Page { rows, next, prev })
    }

    /// The runs that hold `scenario_id` of `task`, by row id (the order they were indexed in).
    pub fn runs_of_scenario(&self, task: &str, scenario_id: &str) -> StoreResult<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.run_id FROM main.rows r JOIN main.scenarios sc ON sc.id = r.scenario \
                 WHERE sc.task = ?1 AND sc.scenario_id = ?2 ORDER BY r.id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([task, scenario_id], |r| r.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The scenarios two runs share, with each run's value of `metric` (or judge mean when
    /// `metric` is `judge`) and their difference b − a, largest absolute difference first (the
    /// first `limit`; scenarios where either has no value last).
    pub fn differences(&self, run_a: &str, run_b: &str, metric: &str, limit: usize) -> StoreResult<Vec<Difference>> {
        let value = |alias: &str| -> String {
            if metric == "judge" {
                format!("{alias}.judge_mean")
            } else {
                format!("(SELECT value FROM main.metric_values m WHERE m.row = {alias}.id AND m.metric = ?3)")
            }
        };
        let sql = format!(
            "SELECT a.task, a.scenario_id, {va} AS va, {vb} AS vb FROM main.rows a JOIN main.rows b \
             ON b.scenario = a.scenario AND b.run_id = ?2 WHERE a.run_id = ?1 \
             ORDER BY (va IS NULL OR vb IS NULL), abs(vb - va) DESC, a.task, a.scenario_id LIMIT ?4",
            va = value("a"),
            vb = value("b")
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![run_a, run_b, metric, limit as i64], |r| {
                let (a, b): (Option<f64>, Option<f64>) = (r.get(2)?, r.get(3)?);
                Ok(Difference { task: r.get(0)?, scenario_id: r.get(1)?, a, b, diff: a.zip(b).map(|(a, b)| b - a) })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}

/// A scenario two runs share and how far apart they scored.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Difference {
    pub task: String,
    pub scenario_id: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub diff: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_travel_in_urls() {
        for k in [Key { value: None, id: 7 }, Key { value: Some(0.125), id: 3 }, Key { value: Some(-1e-9), id: 0 }] {
            assert_eq!(Key::decode(&k.encode()), Some(k));
        }
        assert_eq!(Key::decode("x"), None);
        assert_eq!(Key::decode("NaN~3"), None);
    }
}
