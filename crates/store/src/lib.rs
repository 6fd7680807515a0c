//! The run store, the only owner of h2htalk's SQLite database: one file in WAL mode holding runs
//! with their specification, their items, every generation (committed as it arrives), scores,
//! format checks, judge sessions and scores, pairwise judgments, safety verdicts and simulations.
//!
//! Rows are typed ([`rows`]); a column that does not decode is an error naming the run, the item
//! and the column. The schema carries a version: a store written by an earlier h2htalk is migrated
//! in place, in one transaction, after a backup copy is written beside it ([`migrate`]); a store
//! newer than this binary is refused. No other crate opens a connection or writes SQL.

mod migrate;
pub mod protocol;
pub mod rows;
mod schema;
pub mod spec;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

pub use protocol::Protocol;
pub use rows::*;
pub use schema::SCHEMA_VERSION;
pub use spec::{
    JudgeSpec, MetricModels, MetricSet, ModelRequest, Prices, RunSpec, SapRef, ScoringSpec, Selection, SimulationSpec,
    SuiteRef, ValiditySpec,
};

/// Errors of the store, each naming the database file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed (with what to do, for a full disk or a store that cannot be written).
    #[error("{path}: {message}{}", hint(message))]
    Db { path: String, message: String },
    /// A stored value that does not decode.
    #[error("{path}: run {run}{}: field `{column}`: {message}", item.as_ref().map(|i| format!(", item {i}")).unwrap_or_default())]
    Corrupt { path: String, run: String, item: Option<String>, column: String, message: String },
    /// The store was written by a newer h2htalk, or is not a run store.
    #[error("{path}: {message}")]
    Version { path: String, message: String },
}

/// What to do about SQLite's terse messages for a full disk or a read-only store.
fn hint(message: &str) -> &'static str {
    if message.contains("database or disk is full") || message.contains("disk I/O error") {
        "; the disk may be full (or the file size limited): free some space, then continue with \
         `h2htalk run --resume RUN_ID` (what was committed is kept)"
    } else if message.contains("readonly database") || message.contains("unable to open database file") {
        "; the store cannot be written here (a read-only file, directory or file system?): give a writable \
         --db (SQLite also writes <db>-wal and <db>-shm beside it)"
    } else {
        ""
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A run as listed.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub id: String,
    pub created_at: String,
    pub status: RunStatus,
    /// Shown as `provenance` in `runs show --json`, as every release has named it.
    #[serde(rename = "provenance")]
    pub spec: RunSpec,
    /// What an h2htalk before schema 2 recorded (kept as it was); `None` for later runs.
    pub legacy_provenance: Option<Value>,
}

/// A sweep: several models under one protocol.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    pub name: String,
    pub created_at: String,
    pub updated_at: String,
    /// The sweep's definition as the runner wrote it (what `sweep --resume` runs again).
    pub spec: Value,
    /// The models in order, each with its run once one is known.
    pub runs: Vec<SweepMember>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SweepMember {
    pub model: String,
    pub run_id: Option<String>,
}

pub struct Store {
    conn: Connection,
    path: String,
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_utc() -> String {
    now()
}

fn now() -> String {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format_utc(d.as_secs())
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time.
pub fn format_utc(secs: u64) -> String {
    let days = secs / 86_400;
    let (h, m, s) = (secs / 3600 % 24, secs / 60 % 60, secs % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// A column read as text or JSON and decoded into its type; a value that does not decode is an
/// error naming the run, the item and the column.
struct Decoder<'a> {
    path: &'a str,
    run: &'a str,
}

impl Decoder<'_> {
    fn corrupt(&self, item: Option<&str>, column: &str, message: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            path: self.path.to_string(),
            run: self.run.to_string(),
            item: item.map(str::to_string),
            column: column.to_string(),
            message: message.into(),
        }
    }

    fn text<T>(&self, item: &str, column: &str, raw: &str, parse: impl FnOnce(&str) -> Option<T>) -> StoreResult<T> {
        parse(raw).ok_or_else(|| self.corrupt(Some(item), column, format!("`{raw}` is not a known value")))
    }

    fn opt_text<T>(
        &self,
        item: &str,
        column: &str,
        raw: Option<String>,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> StoreResult<Option<T>> {
        raw.map(|r| self.text(item, column, &r, parse)).transpose()
    }

    fn json<T: serde::de::DeserializeOwned>(&self, item: Option<&str>, column: &str, raw: &str) -> StoreResult<T> {
        serde_json::from_str(raw).map_err(|e| self.corrupt(item, column, format!("does not decode ({e})")))
    }

    fn opt_json<T: serde::de::DeserializeOwned>(
        &self,
        item: &str,
        column: &str,
        raw: Option<String>,
    ) -> StoreResult<Option<T>> {
        raw.map(|r| self.json(Some(item), column, &r)).transpose()
    }

    fn count(&self, item: &str, column: &str, raw: i64) -> StoreResult<u64> {
        u64::try_from(raw).map_err(|_| self.corrupt(Some(item), column, format!("{raw} is negative")))
    }

    fn finite(&self, item: &str, column: &str, raw: f64) -> StoreResult<f64> {
        if raw.is_finite() { Ok(raw) } else { Err(self.corrupt(Some(item), column, format!("{raw} is not finite"))) }
    }
}

/// Metric values: a JSON object of finite numbers.
fn decode_metrics(d: &Decoder, item: &str, raw: &str) -> StoreResult<std::collections::BTreeMap<String, f64>> {
    let value: Value = d.json(Some(item), "scores.metrics", raw)?;
    let Value::Object(map) = value else {
        return Err(d.corrupt(Some(item), "scores.metrics", "not a JSON object; rescore the run"));
    };
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in map {
        match v.as_f64() {
            Some(x) if x.is_finite() => {
                out.insert(k, x);
            }
            _ => {
                return Err(d.corrupt(
                    Some(item),
                    &format!("scores.metrics.{k}"),
                    format!("`{v}` is not a finite number; rescore the run"),
                ));
            }
        }
    }
    Ok(out)
}

impl Store {
    /// Opens (creating if needed) the store at `path` in WAL mode, migrating a store written by an
    /// earlier h2htalk (a backup copy goes beside it first).
    pub fn open(path: &Path) -> StoreResult<Store> {
        let p = path.display().to_string();
        let err = |message: String| StoreError::Db { path: p.clone(), message };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err(format!("cannot create its directory: {e}")))?;
        }
        let conn = Connection::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(|e| err(e.to_string()))?;
        let mut store = Store { conn, path: p };
        store.init()?;
        Ok(store)
    }

    /// Opens an existing store for reading only (listing, showing, exporting, reporting): nothing is
    /// created or changed, so a store on a read-only disk or file can still be read. A store written
    /// by an earlier h2htalk is migrated first when the file can be written.
    pub fn open_read_only(path: &Path) -> StoreResult<Store> {
        let p = path.display().to_string();
        let err = |message: String| StoreError::Db { path: p.clone(), message };
        if !path.is_file() {
            return Err(err("no run store here; `h2htalk run --db FILE` creates one".into()));
        }
        let store = Self::open_reader(path)?;
        match schema::version_of(&store.conn, &store.path)? {
            Some(v) if v == SCHEMA_VERSION => Ok(store),
            Some(v) if v < SCHEMA_VERSION => {
                drop(store);
                // Migrating needs to write: a store that cannot be written cannot be read by this release.
                Store::open(path).map_err(|e| StoreError::Version {
                    path: p.clone(),
                    message: format!(
                        "written by an earlier h2htalk (schema {v}); it must be migrated to schema {SCHEMA_VERSION} \
                         before it can be read, and that failed: {e}"
                    ),
                })?;
                Self::open_reader(path)
            }
            Some(v) => Err(schema::too_new(&p, v)),
            None => {
                Err(StoreError::Version { path: p, message: "not an h2htalk run store (no schema version)".into() })
            }
        }
    }

    fn open_reader(path: &Path) -> StoreResult<Store> {
        let p = path.display().to_string();
        let err = |message: String| StoreError::Db { path: p.clone(), message };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match Connection::open_with_flags(path, flags)
            .and_then(|c| c.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)).map(|_| c))
        {
            Ok(conn) => conn,
            // A WAL database on a read-only disk cannot get its shared-memory file; when no write-ahead
            // log is left (the last writer closed cleanly) the file alone is the whole database.
            Err(_) if !Path::new(&format!("{}-wal", path.display())).exists() => {
                let uri = format!(
                    "file:{}?immutable=1",
                    path.display().to_string().replace('%', "%25").replace('?', "%3f").replace('#', "%23")
                );
                Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .map_err(|e| err(format!("cannot open: {e}")))?
            }
            Err(e) => return Err(err(format!("cannot open for reading: {e}"))),
        };
        conn.busy_timeout(Duration::from_secs(30)).map_err(|e| err(e.to_string()))?;
        Ok(Store { conn, path: p })
    }

    /// The database file, as given to [`Store::open`].
    pub fn path(&self) -> &str {
        &self.path
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Db { path: self.path.clone(), message: e.to_string() }
    }

    fn decoder<'a>(&'a self, run: &'a str) -> Decoder<'a> {
        Decoder { path: &self.path, run }
    }

    /// Every row `sql` gives for `params`, each read by `row`.
    fn all<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> StoreResult<Vec<T>> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params, row).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    fn init(&mut self) -> StoreResult<()> {
        let mode: String = self.conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).map_err(|e| self.err(e))?;
        if mode.to_lowercase() != "wal" {
            return Err(self.err(format!("cannot switch to WAL mode (got `{mode}`); is the file on a network drive?")));
        }
        self.conn.execute_batch("PRAGMA synchronous=NORMAL;").map_err(|e| self.err(e))?;
        migrate::bring_up_to_date(&mut self.conn, &self.path)?;
        self.conn.execute_batch("PRAGMA foreign_keys=ON;").map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A write transaction that takes the write lock at once (IMMEDIATE): several runs of a sweep
    /// write to one store at the same time, and a deferred transaction that read first cannot wait
    /// for the lock (SQLite answers busy at once), where an immediate one waits its busy timeout.
    fn tx(&mut self) -> StoreResult<Transaction<'_>> {
        let path = self.path.clone();
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| StoreError::Db { path, message: e.to_string() })
    }

    // ---- runs -------------------------------------------------------------------------------

    /// Creates a run with its specification and items, in one transaction.
    pub fn create_run(&mut self, id: &str, spec: &RunSpec, items: &[Item]) -> StoreResult<()> {
        let spec = serde_json::to_string(spec).expect("a run specification serialises");
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute(
            "INSERT INTO runs (id, created_at, status, spec) VALUES (?1, ?2, ?3, ?4)",
            params![id, now(), RunStatus::Running.as_str(), spec],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare("INSERT INTO items (run_id, scenario_id, task, lang, ord, prompt, reference) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .map_err(e)?;
            for it in items {
                let prompt = serde_json::to_string(&it.prompt).expect("messages serialise");
                stmt.execute(params![id, it.scenario_id, it.task, it.lang.code(), it.ord as i64, prompt, it.reference])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// Replaces a run's specification (a resumed run that adds a judge or a simulation).
    pub fn set_spec(&self, id: &str, spec: &RunSpec) -> StoreResult<()> {
        let spec = serde_json::to_string(spec).expect("a run specification serialises");
        self.conn.execute("UPDATE runs SET spec = ?2 WHERE id = ?1", params![id, spec]).map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn set_status(&self, id: &str, status: RunStatus) -> StoreResult<()> {
        self.conn
            .execute("UPDATE runs SET status = ?2 WHERE id = ?1", params![id, status.as_str()])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn run(&self, id: &str) -> StoreResult<Option<RunRow>> {
        let raw = self
            .conn
            .query_row("SELECT id, created_at, status, spec, legacy_provenance FROM runs WHERE id = ?1", [id], raw_run)
            .optional()
            .map_err(|e| self.err(e))?;
        raw.map(|r| self.decode_run(r)).transpose()
    }

    pub fn runs(&self) -> StoreResult<Vec<RunRow>> {
        let raw: Vec<RawRun> = self.all(
            "SELECT id, created_at, status, spec, legacy_provenance FROM runs ORDER BY created_at, id",
            [],
            raw_run,
        )?;
        raw.into_iter().map(|r| self.decode_run(r)).collect()
    }

    fn decode_run(&self, r: RawRun) -> StoreResult<RunRow> {
        let d = self.decoder(&r.0);
        let status = RunStatus::parse(&r.2)
            .ok_or_else(|| d.corrupt(None, "runs.status", format!("`{}` is not a known value", r.2)))?;
        let spec = d.json(None, "runs.spec", &r.3)?;
        let legacy_provenance = r.4.as_deref().map(|p| d.json(None, "runs.legacy_provenance", p)).transpose()?;
        Ok(RunRow { id: r.0.clone(), created_at: r.1, status, spec, legacy_provenance })
    }

    // ---- items, generations, scores ---------------------------------------------------------

    pub fn items(&self, run_id: &str) -> StoreResult<Vec<Item>> {
        Ok(self.records(run_id)?.into_iter().map(|r| r.item).collect())
    }

    pub fn generations(&self, run_id: &str) -> StoreResult<Vec<Generation>> {
        Ok(self.records(run_id)?.into_iter().filter_map(|r| r.generation).collect())
    }

    pub fn scores(&self, run_id: &str) -> StoreResult<Vec<Score>> {
        Ok(self.records(run_id)?.into_iter().filter_map(|r| r.score).collect())
    }

    /// Every item of a run in order, joined with its generation and its score.
    pub fn records(&self, run_id: &str) -> StoreResult<Vec<Record>> {
        let raw: Vec<RawRecord> = self.all(
            "SELECT i.scenario_id, i.task, i.lang, i.ord, i.prompt, i.reference, \
                 g.status, g.text, g.finish_reason, g.input_tokens, g.output_tokens, g.latency_ms, g.attempts, \
                 g.error_kind, g.error_message, g.faults, \
                 s.outcome, s.metrics, s.signature \
                 FROM items i \
                 LEFT JOIN generations g ON g.run_id = i.run_id AND g.scenario_id = i.scenario_id \
                 LEFT JOIN scores s ON s.run_id = i.run_id AND s.scenario_id = i.scenario_id \
                 WHERE i.run_id = ?1 ORDER BY i.ord",
            [run_id],
            |r| (0..RECORD_COLUMNS.len()).map(|i| r.get::<_, SqlValue>(i)).collect::<Result<_, _>>().map(RawRecord),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter().map(|r| r.decode(&d)).collect()
    }

    /// Writes generations in one transaction. A generated row is never overwritten; a failed row is
    /// replaced only when `replace_failed` (a `--retry-failed` run).
    pub fn put_generations(&mut self, run_id: &str, rows: &[Generation], replace_failed: bool) -> StoreResult<usize> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let sql = if replace_failed {
            "INSERT INTO generations (run_id, scenario_id, status, text, finish_reason, input_tokens, output_tokens, latency_ms, \
             attempts, error_kind, error_message, faults, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13) \
             ON CONFLICT (run_id, scenario_id) DO UPDATE SET status = excluded.status, text = excluded.text, \
             finish_reason = excluded.finish_reason, input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, \
             latency_ms = excluded.latency_ms, attempts = generations.attempts + excluded.attempts, error_kind = excluded.error_kind, \
             error_message = excluded.error_message, faults = excluded.faults, created_at = excluded.created_at \
             WHERE generations.status = 'failed'"
        } else {
            "INSERT INTO generations (run_id, scenario_id, status, text, finish_reason, input_tokens, output_tokens, latency_ms, \
             attempts, error_kind, error_message, faults, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13) \
             ON CONFLICT (run_id, scenario_id) DO NOTHING"
        };
        let mut written = 0;
        {
            let mut stmt = tx.prepare_cached(sql).map_err(e)?;
            let at = now();
            for g in rows {
                let faults: Vec<&str> = g.faults.iter().map(|f| f.as_str()).collect();
                written += stmt
                    .execute(params![
                        run_id,
                        g.scenario_id,
                        g.status.as_str(),
                        g.text,
                        g.finish_reason.as_ref().map(FinishReasonText::text),
                        g.input_tokens.map(|n| n as i64),
                        g.output_tokens.map(|n| n as i64),
                        g.latency_ms,
                        g.attempts as i64,
                        g.error_kind.map(|k| k.as_str()),
                        g.error_message,
                        serde_json::to_string(&faults).expect("fault names serialise"),
                        at
                    ])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(written)
    }

    /// Writes scores in one transaction (replacing earlier scores of the same items).
    pub fn put_scores(&mut self, run_id: &str, rows: &[Score]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO scores (run_id, scenario_id, outcome, metrics, signature) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(e)?;
            for s in rows {
                let metrics = serde_json::to_string(&s.metrics).expect("metrics serialise");
                stmt.execute(params![run_id, s.scenario_id, s.outcome.as_str(), metrics, s.signature]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    // ---- format checks ----------------------------------------------------------------------

    /// Replaces the format checks of a run.
    pub fn replace_format_checks(&mut self, run_id: &str, rows: &[FormatCheck]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute("DELETE FROM format_checks WHERE run_id = ?1", [run_id]).map_err(e)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO format_checks (run_id, scenario_id, task, name, passed, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(e)?;
            for r in rows {
                stmt.execute(params![run_id, r.scenario_id, r.task, r.name, r.passed, r.message]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    pub fn format_checks(&self, run_id: &str) -> StoreResult<Vec<FormatCheck>> {
        self.all(
            "SELECT f.scenario_id, f.task, f.name, f.passed, f.message FROM format_checks f LEFT JOIN items i \
                 ON i.run_id = f.run_id AND i.scenario_id = f.scenario_id WHERE f.run_id = ?1 ORDER BY i.ord, f.name",
            [run_id],
            |r| {
                Ok(FormatCheck {
                    scenario_id: r.get(0)?,
                    task: r.get(1)?,
                    name: r.get(2)?,
                    passed: r.get(3)?,
                    message: r.get(4)?,
                })
            },
        )
    }

    // ---- judge sessions and rubric scores ---------------------------------------------------

    /// Records who judges `run_id` how. When the same judge judged it before with other settings or
    /// other prompts, its earlier rows of that kind are deleted (they would not be comparable) and
    /// `true` is returned.
    pub fn begin_judge_session(
        &mut self,
        run_id: &str,
        kind: SessionKind,
        judge: &str,
        settings: &Value,
        prompt_hash: &str,
    ) -> StoreResult<bool> {
        let settings = settings.to_string();
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let earlier: Option<(String, String)> = tx
            .query_row(
                "SELECT settings, prompt_hash FROM judge_sessions WHERE run_id = ?1 AND kind = ?2 AND judge = ?3",
                params![run_id, kind.as_str(), judge],
                |r| r.try_into(),
            )
            .optional()
            .map_err(e)?;
        let restarted = match earlier {
            Some((s, h)) if s == settings && h == prompt_hash => false,
            Some(_) => {
                let table = match kind {
                    SessionKind::Rubric => "judge_scores",
                    SessionKind::Safety => "safety_verdicts",
                    SessionKind::Validity => "judge_validity",
                };
                tx.execute(&format!("DELETE FROM {table} WHERE run_id = ?1 AND judge = ?2"), params![run_id, judge])
                    .map_err(e)?;
                true
            }
            None => false,
        };
        tx.execute(
            "INSERT OR REPLACE INTO judge_sessions (run_id, kind, judge, settings, prompt_hash, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![run_id, kind.as_str(), judge, settings, prompt_hash, now()],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(restarted)
    }

    /// The judges that judged `run_id` with `kind`, oldest first.
    pub fn judges(&self, run_id: &str, kind: SessionKind) -> StoreResult<Vec<String>> {
        self.all(
            "SELECT judge FROM judge_sessions WHERE run_id = ?1 AND kind = ?2 ORDER BY created_at, judge",
            params![run_id, kind.as_str()],
            |r| r.get(0),
        )
    }

    pub fn put_judge_score(&mut self, run_id: &str, judge: &str, r: &JudgeScore) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO judge_scores (run_id, judge, scenario_id, task, family, outcome, scores, mean, reason, \
                 attempts, raw, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    run_id,
                    judge,
                    r.scenario_id,
                    r.task,
                    r.family.name(),
                    r.outcome.as_str(),
                    r.scores.as_ref().map(|s| serde_json::to_string(s).expect("scores serialise")),
                    r.mean,
                    r.reason,
                    r.attempts,
                    r.raw,
                    r.error
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The rubric judgments of `run_id` by `judge`, in item order.
    pub fn judge_scores(&self, run_id: &str, judge: &str) -> StoreResult<Vec<JudgeScore>> {
        type Raw = (
            String,
            String,
            String,
            String,
            Option<String>,
            Option<f64>,
            Option<String>,
            i64,
            Option<String>,
            Option<String>,
        );
        let raw: Vec<Raw> = self.all(
            "SELECT j.scenario_id, j.task, j.family, j.outcome, j.scores, j.mean, j.reason, j.attempts, j.raw, j.error \
                 FROM judge_scores j LEFT JOIN items i ON i.run_id = j.run_id AND i.scenario_id = j.scenario_id \
                 WHERE j.run_id = ?1 AND j.judge = ?2 ORDER BY i.ord, j.scenario_id",
            params![run_id, judge],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(id, task, family, outcome, scores, mean, reason, attempts, raw, error)| {
                let outcome = d.text(&id, "judge_scores.outcome", &outcome, JudgeOutcome::parse)?;
                let scores: Option<std::collections::BTreeMap<String, u8>> =
                    d.opt_json(&id, "judge_scores.scores", scores)?;
                if outcome == JudgeOutcome::Scored && (scores.as_ref().is_none_or(|s| s.is_empty()) || mean.is_none()) {
                    return Err(d.corrupt(
                        Some(&id),
                        "judge_scores.scores",
                        "a scored judgment without scores or mean",
                    ));
                }
                Ok(JudgeScore {
                    family: d.text(&id, "judge_scores.family", &family, h2htalk_data::Family::from_name)?,
                    outcome,
                    scores,
                    mean: mean.map(|m| d.finite(&id, "judge_scores.mean", m)).transpose()?,
                    reason,
                    attempts: d.count(&id, "judge_scores.attempts", attempts)? as u32,
                    raw,
                    error,
                    task,
                    scenario_id: id,
                })
            })
            .collect()
    }

    /// Items of `run_id` this judge has finished with (scored, unparsable or empty): not asked again.
    pub fn judged_items(&self, run_id: &str, judge: &str) -> StoreResult<BTreeSet<String>> {
        Ok(self
            .judge_scores(run_id, judge)?
            .into_iter()
            .filter(|s| {
                matches!(s.outcome, JudgeOutcome::Scored | JudgeOutcome::JudgeParseFailed | JudgeOutcome::EmptyAnswer)
            })
            .map(|s| s.scenario_id)
            .collect())
    }

    // ---- pairwise ---------------------------------------------------------------------------

    pub fn put_pair_judgment(&mut self, judge: &str, run_a: &str, run_b: &str, r: &PairJudgment) -> StoreResult<()> {
        let json = |v: &Option<Value>| v.as_ref().map(Value::to_string);
        self.conn
            .execute(
                "INSERT OR REPLACE INTO pairwise_judgments (judge, run_a, run_b, scenario_id, outcome, order_ab, order_ba, error) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![judge, run_a, run_b, r.scenario_id, r.outcome.as_str(), json(&r.order_ab), json(&r.order_ba), r.error],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The pairwise judgments of runs `run_a` and `run_b` by `judge`.
    pub fn pair_judgments(&self, judge: &str, run_a: &str, run_b: &str) -> StoreResult<Vec<PairJudgment>> {
        type Raw = (String, String, Option<String>, Option<String>, Option<String>);
        let raw: Vec<Raw> = self.all(
            "SELECT scenario_id, outcome, order_ab, order_ba, error FROM pairwise_judgments \
                 WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3 ORDER BY scenario_id",
            params![judge, run_a, run_b],
            |r| r.try_into(),
        )?;
        let run = format!("{run_a}` vs `{run_b}");
        let d = self.decoder(&run);
        raw.into_iter()
            .map(|(id, outcome, ab, ba, error)| {
                Ok(PairJudgment {
                    outcome: d.text(&id, "pairwise_judgments.outcome", &outcome, PairOutcome::parse)?,
                    order_ab: d.opt_json(&id, "pairwise_judgments.order_ab", ab)?,
                    order_ba: d.opt_json(&id, "pairwise_judgments.order_ba", ba)?,
                    error,
                    scenario_id: id,
                })
            })
            .collect()
    }

    /// Records who judges the pair `run_a`/`run_b` pairwise how. When the same judge judged the pair
    /// before with other settings or other prompts, its earlier judgments of the pair are deleted
    /// (they would not be comparable) and `true` is returned; judgments made with the same settings
    /// and prompts are kept, so that they need not be asked again.
    pub fn begin_pair_session(
        &mut self,
        judge: &str,
        run_a: &str,
        run_b: &str,
        settings: &Value,
        prompt_hash: &str,
    ) -> StoreResult<bool> {
        let settings = settings.to_string();
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let earlier: Option<(String, String)> = tx
            .query_row(
                "SELECT settings, prompt_hash FROM pairwise_sessions WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3",
                params![judge, run_a, run_b],
                |r| r.try_into(),
            )
            .optional()
            .map_err(e)?;
        // Judgments without a session (written before sessions were recorded) cannot be matched to
        // settings and prompts: they are judged again too.
        let same = matches!(&earlier, Some((s, h)) if *s == settings && h == prompt_hash);
        let restarted = earlier.is_some() && !same;
        if !same {
            tx.execute(
                "DELETE FROM pairwise_judgments WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3",
                params![judge, run_a, run_b],
            )
            .map_err(e)?;
            tx.execute(
                "INSERT OR REPLACE INTO pairwise_sessions (judge, run_a, run_b, settings, prompt_hash, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![judge, run_a, run_b, settings, prompt_hash, now()],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(restarted)
    }

    /// The settings and prompt hash `judge` judged the pair `run_a`/`run_b` with (`None`: never,
    /// or a store written before pairwise sessions were recorded).
    pub fn pair_session(&self, judge: &str, run_a: &str, run_b: &str) -> StoreResult<Option<JudgeSession>> {
        if !self.has_table("pairwise_sessions")? {
            return Ok(None);
        }
        let raw: Option<(String, String, String)> = self
            .conn
            .query_row(
                "SELECT settings, prompt_hash, created_at FROM pairwise_sessions \
                 WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3",
                params![judge, run_a, run_b],
                |r| r.try_into(),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let run = format!("{run_a}` vs `{run_b}");
        let d = self.decoder(&run);
        raw.map(|(settings, prompt_hash, created_at)| {
            Ok(JudgeSession {
                settings: d.json(None, "pairwise_sessions.settings", &settings)?,
                prompt_hash,
                created_at,
            })
        })
        .transpose()
    }

    /// The judges that judged the pair `run_a`/`run_b` pairwise, oldest first.
    pub fn pair_judges(&self, run_a: &str, run_b: &str) -> StoreResult<Vec<String>> {
        if !self.has_table("pairwise_sessions")? {
            return Ok(Vec::new());
        }
        self.all(
            "SELECT judge FROM pairwise_sessions WHERE run_a = ?1 AND run_b = ?2 ORDER BY created_at, judge",
            params![run_a, run_b],
            |r| r.get(0),
        )
    }

    fn has_table(&self, name: &str) -> StoreResult<bool> {
        self.conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    // ---- safety -----------------------------------------------------------------------------

    /// Replaces the safety verdicts of `run_id` by `judge`.
    pub fn replace_safety_verdicts(&mut self, run_id: &str, judge: &str, rows: &[SafetyVerdict]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute("DELETE FROM safety_verdicts WHERE run_id = ?1 AND judge = ?2", params![run_id, judge])
            .map_err(e)?;
        for v in rows {
            tx.execute(
                "INSERT INTO safety_verdicts (run_id, judge, scenario_id, lang, risk, verdict, rules, judgment, reason) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    run_id,
                    judge,
                    v.scenario_id,
                    v.lang.code(),
                    v.risk.as_str(),
                    v.verdict.as_str(),
                    v.rules.to_string(),
                    v.judgment.as_ref().map(Value::to_string),
                    v.reason
                ],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// The safety verdicts of `run_id` by `judge` (`rules` for a run judged by rules alone), in item order.
    pub fn safety_verdicts(&self, run_id: &str, judge: &str) -> StoreResult<Vec<SafetyVerdict>> {
        type Raw = (String, String, String, String, String, Option<String>, Option<String>);
        let raw: Vec<Raw> = self.all(
            "SELECT v.scenario_id, v.lang, v.risk, v.verdict, v.rules, v.judgment, v.reason FROM safety_verdicts v \
                 LEFT JOIN items i ON i.run_id = v.run_id AND i.scenario_id = v.scenario_id \
                 WHERE v.run_id = ?1 AND v.judge = ?2 ORDER BY i.ord, v.scenario_id",
            params![run_id, judge],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(id, lang, risk, verdict, rules, judgment, reason)| {
                Ok(SafetyVerdict {
                    lang: d.text(&id, "safety_verdicts.lang", &lang, h2htalk_data::suite::Lang::from_code)?,
                    risk: d.text(&id, "safety_verdicts.risk", &risk, h2htalk_data::suite::Risk::parse)?,
                    verdict: d.text(&id, "safety_verdicts.verdict", &verdict, Verdict::parse)?,
                    rules: d.json(Some(&id), "safety_verdicts.rules", &rules)?,
                    judgment: d.opt_json(&id, "safety_verdicts.judgment", judgment)?,
                    reason,
                    scenario_id: id,
                })
            })
            .collect()
    }

    // ---- judge validity ---------------------------------------------------------------------

    /// Replaces the judge validity results of `run_id` by `judge`, in one transaction.
    pub fn replace_validity(&mut self, run_id: &str, judge: &str, rows: &[ValidityRow]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute("DELETE FROM judge_validity WHERE run_id = ?1 AND judge = ?2", params![run_id, judge]).map_err(e)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO judge_validity (run_id, judge, scenario_id, degradation, task, family, lang, outcome, \
                     reference_mean, degraded_mean, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .map_err(e)?;
            for r in rows {
                stmt.execute(params![
                    run_id,
                    judge,
                    r.scenario_id,
                    r.degradation,
                    r.task,
                    r.family.name(),
                    r.lang.code(),
                    r.outcome.as_str(),
                    r.reference_mean,
                    r.degraded_mean,
                    r.error
                ])
                .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// The judges with validity results for `run_id`, by name.
    pub fn validity_judges(&self, run_id: &str) -> StoreResult<Vec<String>> {
        if !self.has_table("judge_validity")? {
            return Ok(vec![]);
        }
        self.all("SELECT DISTINCT judge FROM judge_validity WHERE run_id = ?1 ORDER BY judge", [run_id], |r| r.get(0))
    }

    /// The judge validity results of `run_id` by `judge` (none for a store written before the
    /// check existed).
    pub fn validity(&self, run_id: &str, judge: &str) -> StoreResult<Vec<ValidityRow>> {
        if !self.has_table("judge_validity")? {
            return Ok(vec![]);
        }
        type Raw = (String, String, String, String, String, String, Option<f64>, Option<f64>, Option<String>);
        let raw: Vec<Raw> = self.all(
            "SELECT scenario_id, degradation, task, family, lang, outcome, reference_mean, degraded_mean, error \
                 FROM judge_validity WHERE run_id = ?1 AND judge = ?2 ORDER BY family, degradation, scenario_id",
            params![run_id, judge],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(id, degradation, task, family, lang, outcome, reference_mean, degraded_mean, error)| {
                let outcome = d.text(&id, "judge_validity.outcome", &outcome, ValidityOutcome::parse)?;
                if outcome == ValidityOutcome::Compared && (reference_mean.is_none() || degraded_mean.is_none()) {
                    return Err(d.corrupt(
                        Some(&id),
                        "judge_validity.reference_mean",
                        "a comparison without both means",
                    ));
                }
                Ok(ValidityRow {
                    family: d.text(&id, "judge_validity.family", &family, h2htalk_data::Family::from_name)?,
                    lang: d.text(&id, "judge_validity.lang", &lang, h2htalk_data::suite::Lang::from_code)?,
                    outcome,
                    reference_mean: reference_mean
                        .map(|m| d.finite(&id, "judge_validity.reference_mean", m))
                        .transpose()?,
                    degraded_mean: degraded_mean
                        .map(|m| d.finite(&id, "judge_validity.degraded_mean", m))
                        .transpose()?,
                    degradation,
                    task,
                    error,
                    scenario_id: id,
                })
            })
            .collect()
    }

    // ---- helper tokens -----------------------------------------------------------------------

    /// Adds the tokens of some calls to `run_id`'s count for the row's role, model and purpose (the
    /// prices are replaced by the row's). Called as calls return, so a crash loses none recorded.
    pub fn add_usage(&self, run_id: &str, row: &UsageRow) -> StoreResult<()> {
        let u = &row.usage;
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "INSERT INTO call_usage (run_id, role, model, purpose, calls, input_tokens, output_tokens, unknown_usage, \
                 price_input_per_million, price_output_per_million) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
                 ON CONFLICT (run_id, role, model, purpose) DO UPDATE SET calls = calls + excluded.calls, \
                 input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, \
                 unknown_usage = unknown_usage + excluded.unknown_usage, \
                 price_input_per_million = excluded.price_input_per_million, \
                 price_output_per_million = excluded.price_output_per_million",
                params![
                    run_id,
                    row.role.as_str(),
                    row.model,
                    row.purpose,
                    n(u.calls),
                    n(u.input_tokens),
                    n(u.output_tokens),
                    n(u.unknown_usage),
                    row.prices.map(|p| p.input_per_million),
                    row.prices.map(|p| p.output_per_million)
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The helper tokens recorded for `run_id`, by role, model and purpose (none for a run stored
    /// before they were recorded).
    pub fn usage(&self, run_id: &str) -> StoreResult<Vec<UsageRow>> {
        if !self.has_table("call_usage")? {
            return Ok(vec![]);
        }
        type Raw = (String, String, String, i64, i64, i64, i64, Option<f64>, Option<f64>);
        let raw: Vec<Raw> = self.all(
            "SELECT role, model, purpose, calls, input_tokens, output_tokens, unknown_usage, price_input_per_million, \
                 price_output_per_million FROM call_usage WHERE run_id = ?1 ORDER BY role, model, purpose",
            [run_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(role, model, purpose, calls, input, output, unknown, pin, pout)| {
                let id = format!("{model} ({purpose})");
                let prices = match (pin, pout) {
                    (Some(i), Some(o)) => Some(Prices {
                        input_per_million: d.finite(&id, "call_usage.price_input_per_million", i)?,
                        output_per_million: d.finite(&id, "call_usage.price_output_per_million", o)?,
                    }),
                    (None, None) => None,
                    _ => return Err(d.corrupt(Some(&id), "call_usage.price_input_per_million", "one price of two")),
                };
                Ok(UsageRow {
                    role: d.text(&id, "call_usage.role", &role, UsageRole::parse)?,
                    usage: CallUsage {
                        calls: d.count(&id, "call_usage.calls", calls)?,
                        input_tokens: d.count(&id, "call_usage.input_tokens", input)?,
                        output_tokens: d.count(&id, "call_usage.output_tokens", output)?,
                        unknown_usage: d.count(&id, "call_usage.unknown_usage", unknown)?,
                    },
                    model,
                    purpose,
                    prices,
                })
            })
            .collect()
    }

    // ---- sweeps -----------------------------------------------------------------------------

    /// Records a sweep's definition (replacing an earlier one of the same name) and its models, in
    /// order; each model's run is set by [`Store::set_sweep_run`] once it is known.
    pub fn put_sweep(&mut self, name: &str, spec: &Value, models: &[String]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let now = now();
        tx.execute(
            "INSERT INTO sweeps (name, created_at, updated_at, spec) VALUES (?1, ?2, ?2, ?3) \
             ON CONFLICT(name) DO UPDATE SET updated_at = ?2, spec = ?3",
            params![name, now, spec.to_string()],
        )
        .map_err(e)?;
        // Keep the runs already known for models still in the sweep.
        let known: Vec<(String, Option<String>)> = {
            let mut stmt = tx.prepare("SELECT model, run_id FROM sweep_runs WHERE sweep = ?1").map_err(e)?;
            stmt.query_map([name], |r| r.try_into()).map_err(e)?.collect::<Result<_, _>>().map_err(e)?
        };
        tx.execute("DELETE FROM sweep_runs WHERE sweep = ?1", [name]).map_err(e)?;
        for (i, m) in models.iter().enumerate() {
            let run = known.iter().find(|(k, _)| k == m).and_then(|(_, r)| r.clone());
            tx.execute(
                "INSERT INTO sweep_runs (sweep, position, model, run_id) VALUES (?1, ?2, ?3, ?4)",
                params![name, i as i64, m, run],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// Sets the run that answers for the model at `position` of a sweep.
    pub fn set_sweep_run(&self, name: &str, position: usize, run_id: &str) -> StoreResult<()> {
        let n = self
            .conn
            .execute(
                "UPDATE sweep_runs SET run_id = ?3 WHERE sweep = ?1 AND position = ?2",
                params![name, position as i64, run_id],
            )
            .map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(self.err(format!("sweep `{name}` has no model at position {position}")));
        }
        Ok(())
    }

    /// One sweep, or `None`; a store without sweep tables (written before sweeps) has none.
    pub fn sweep(&self, name: &str) -> StoreResult<Option<SweepRow>> {
        Ok(self.sweeps()?.into_iter().find(|s| s.name == name))
    }

    /// Every sweep, oldest first.
    pub fn sweeps(&self) -> StoreResult<Vec<SweepRow>> {
        if !self.has_table("sweeps")? {
            return Ok(Vec::new());
        }
        let raw: Vec<(String, String, String, String)> =
            self.all("SELECT name, created_at, updated_at, spec FROM sweeps ORDER BY created_at, name", [], |r| {
                r.try_into()
            })?;
        let mut out = Vec::new();
        for (name, created_at, updated_at, spec) in raw {
            let spec = serde_json::from_str(&spec)
                .map_err(|e| self.err(format!("sweep `{name}`: column sweeps.spec is not JSON: {e}")))?;
            let runs =
                self.all("SELECT model, run_id FROM sweep_runs WHERE sweep = ?1 ORDER BY position", [&name], |r| {
                    Ok(SweepMember { model: r.get(0)?, run_id: r.get(1)? })
                })?;
            out.push(SweepRow { name, created_at, updated_at, spec, runs });
        }
        Ok(out)
    }

    // ---- simulations ------------------------------------------------------------------------

    /// Deletes the simulations of a run (a new simulation replaces them).
    pub fn clear_simulations(&self, run_id: &str) -> StoreResult<()> {
        self.conn.execute("DELETE FROM simulations WHERE run_id = ?1", [run_id]).map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn put_simulation(&self, run_id: &str, s: &Simulation) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO simulations (run_id, idx, profile, seed, companion, simulator, judge, outcome, result, \
                 transcript, error, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    run_id,
                    s.idx as i64,
                    s.profile,
                    s.seed as i64,
                    s.companion,
                    s.simulator,
                    s.judge,
                    s.outcome.as_str(),
                    s.result.to_string(),
                    s.transcript.to_string(),
                    s.error,
                    s.created_at
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn simulations(&self, run_id: &str) -> StoreResult<Vec<Simulation>> {
        type Raw = (i64, String, i64, String, String, Option<String>, String, String, String, Option<String>, String);
        let raw: Vec<Raw> = self.all(
            "SELECT idx, profile, seed, companion, simulator, judge, outcome, result, transcript, error, created_at \
                 FROM simulations WHERE run_id = ?1 ORDER BY idx",
            [run_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(idx, profile, seed, companion, simulator, judge, outcome, result, transcript, error, created_at)| {
                let id = format!("simulation {idx}");
                Ok(Simulation {
                    idx: d.count(&id, "simulations.idx", idx)? as usize,
                    seed: seed as u64,
                    outcome: d.text(&id, "simulations.outcome", &outcome, SimulationOutcome::parse)?,
                    result: d.json(Some(&id), "simulations.result", &result)?,
                    transcript: d.json(Some(&id), "simulations.transcript", &transcript)?,
                    profile,
                    companion,
                    simulator,
                    judge,
                    error,
                    created_at,
                })
            })
            .collect()
    }

    /// The schema version recorded in the store at `path`, read without changing anything.
    pub fn schema_version_of(path: &Path) -> StoreResult<Option<u32>> {
        let store = Self::open_reader(path)?;
        schema::version_of(&store.conn, &store.path)
    }

    /// Sets a `meta` value, bypassing every check: for tests of stores from other versions.
    #[doc(hidden)]
    pub fn corrupt_meta_for_tests(&self, key: &str, value: &str) -> StoreResult<()> {
        self.conn
            .execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", params![key, value])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The settings and prompt hash a judge session recorded.
    pub fn judge_session(&self, run_id: &str, kind: SessionKind, judge: &str) -> StoreResult<Option<JudgeSession>> {
        let raw: Option<(String, String, String)> = self
            .conn
            .query_row(
                "SELECT settings, prompt_hash, created_at FROM judge_sessions WHERE run_id = ?1 AND kind = ?2 AND judge = ?3",
                params![run_id, kind.as_str(), judge],
                |r| r.try_into(),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let d = self.decoder(run_id);
        raw.map(|(settings, prompt_hash, created_at)| {
            Ok(JudgeSession { settings: d.json(None, "judge_sessions.settings", &settings)?, prompt_hash, created_at })
        })
        .transpose()
    }

    /// How many rows each table holds.
    pub fn table_rows(&self) -> StoreResult<std::collections::BTreeMap<&'static str, u64>> {
        const TABLES: [&str; 12] = [
            "runs",
            "items",
            "generations",
            "scores",
            "format_checks",
            "judge_sessions",
            "judge_scores",
            "pairwise_judgments",
            "safety_verdicts",
            "judge_validity",
            "simulations",
            "meta",
        ];
        TABLES
            .into_iter()
            .map(|t| {
                // A store opened read-only may predate a table added within its schema version.
                if !self.has_table(t)? {
                    return Ok((t, 0));
                }
                let n: i64 = self
                    .conn
                    .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                    .map_err(|e| self.err(e))?;
                Ok((t, n as u64))
            })
            .collect()
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> StoreResult<String> {
        self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(|e| self.err(e))
    }

    /// Writes `value` into `column` of one stored row, bypassing every type: for tests that check
    /// what a damaged store reads as. `key` is the item (`None` for the `runs` table).
    #[doc(hidden)]
    pub fn corrupt_for_tests(
        &self,
        table: &str,
        column: &str,
        run_id: &str,
        key: Option<&str>,
        value: &str,
    ) -> StoreResult<usize> {
        // A damaged file holds what the schema's checks would refuse.
        self.conn.execute_batch("PRAGMA ignore_check_constraints = ON;").map_err(|e| self.err(e))?;
        let n = match key {
            Some(item) => self.conn.execute(
                &format!("UPDATE {table} SET {column} = ?3 WHERE run_id = ?1 AND scenario_id = ?2"),
                params![run_id, item, value],
            ),
            None => {
                self.conn.execute(&format!("UPDATE {table} SET {column} = ?2 WHERE id = ?1"), params![run_id, value])
            }
        }
        .map_err(|e| self.err(e));
        self.conn.execute_batch("PRAGMA ignore_check_constraints = OFF;").map_err(|e| self.err(e))?;
        n
    }
}

/// What a judge session recorded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JudgeSession {
    pub settings: Value,
    pub prompt_hash: String,
    pub created_at: String,
}

/// `FinishReason` as stored.
trait FinishReasonText {
    fn text(&self) -> String;
}

impl FinishReasonText for h2htalk_llm::FinishReason {
    fn text(&self) -> String {
        self.as_str().to_string()
    }
}

type RawRun = (String, String, String, String, Option<String>);

fn raw_run(r: &Row<'_>) -> rusqlite::Result<RawRun> {
    r.try_into()
}

/// One row of the records join, as stored: every column read as whatever SQLite holds, so that a
/// value of the wrong type is decoded (and refused) with its run, item and column named.
struct RawRecord(Vec<SqlValue>);

const RECORD_COLUMNS: [&str; 19] = [
    "items.scenario_id",
    "items.task",
    "items.lang",
    "items.ord",
    "items.prompt",
    "items.reference",
    "generations.status",
    "generations.text",
    "generations.finish_reason",
    "generations.input_tokens",
    "generations.output_tokens",
    "generations.latency_ms",
    "generations.attempts",
    "generations.error_kind",
    "generations.error_message",
    "generations.faults",
    "scores.outcome",
    "scores.metrics",
    "scores.signature",
];

impl RawRecord {
    fn text(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<Option<String>> {
        match &self.0[i] {
            SqlValue::Null => Ok(None),
            SqlValue::Text(t) => Ok(Some(t.clone())),
            other => Err(d.corrupt(Some(id), RECORD_COLUMNS[i], format!("{other:?} is not text"))),
        }
    }

    fn required_text(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<String> {
        self.text(d, id, i)?.ok_or_else(|| d.corrupt(Some(id), RECORD_COLUMNS[i], "is missing (NULL)"))
    }

    fn int(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<Option<u64>> {
        match &self.0[i] {
            SqlValue::Null => Ok(None),
            SqlValue::Integer(n) => d.count(id, RECORD_COLUMNS[i], *n).map(Some),
            other => Err(d.corrupt(Some(id), RECORD_COLUMNS[i], format!("{other:?} is not a whole number"))),
        }
    }

    fn real(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<f64> {
        match &self.0[i] {
            SqlValue::Real(x) => d.finite(id, RECORD_COLUMNS[i], *x),
            SqlValue::Integer(n) => Ok(*n as f64),
            other => Err(d.corrupt(Some(id), RECORD_COLUMNS[i], format!("{other:?} is not a number"))),
        }
    }

    fn decode(self, d: &Decoder) -> StoreResult<Record> {
        let id = match &self.0[0] {
            SqlValue::Text(t) => t.clone(),
            other => return Err(d.corrupt(None, RECORD_COLUMNS[0], format!("{other:?} is not text"))),
        };
        let id = id.as_str();
        let task = self.required_text(d, id, 1)?;
        if task != SAFETY_GROUP && h2htalk_data::Task::from_stem(&task).is_none() {
            return Err(d.corrupt(Some(id), "items.task", format!("`{task}` is not a sub-task")));
        }
        let lang = self.required_text(d, id, 2)?;
        let ord = self.int(d, id, 3)?.ok_or_else(|| d.corrupt(Some(id), "items.ord", "is missing (NULL)"))?;
        let item = Item {
            scenario_id: id.to_string(),
            task,
            lang: d.text(id, "items.lang", &lang, h2htalk_data::suite::Lang::from_code)?,
            ord: ord as usize,
            prompt: d.json(Some(id), "items.prompt", &self.required_text(d, id, 4)?)?,
            reference: self.required_text(d, id, 5)?,
        };
        let generation = match self.text(d, id, 6)? {
            None => None,
            Some(status) => {
                let status = d.text(id, "generations.status", &status, GenerationStatus::parse)?;
                let faults: Vec<String> = d.json(Some(id), "generations.faults", &self.required_text(d, id, 15)?)?;
                let faults = faults
                    .iter()
                    .map(|f| d.text(id, "generations.faults", f, h2htalk_llm::FaultKind::parse))
                    .collect::<StoreResult<_>>()?;
                let text = self.text(d, id, 7)?;
                if status == GenerationStatus::Generated && text.is_none() {
                    return Err(d.corrupt(Some(id), "generations.text", "a generated item without its text"));
                }
                Some(Generation {
                    scenario_id: id.to_string(),
                    status,
                    text,
                    finish_reason: self.text(d, id, 8)?.map(|f| h2htalk_llm::FinishReason::parse(&f)),
                    input_tokens: self.int(d, id, 9)?,
                    output_tokens: self.int(d, id, 10)?,
                    latency_ms: self.real(d, id, 11)?,
                    attempts: self
                        .int(d, id, 12)?
                        .ok_or_else(|| d.corrupt(Some(id), "generations.attempts", "is missing (NULL)"))?
                        as u32,
                    error_kind: d.opt_text(
                        id,
                        "generations.error_kind",
                        self.text(d, id, 13)?,
                        h2htalk_llm::FaultKind::parse,
                    )?,
                    error_message: self.text(d, id, 14)?,
                    faults,
                })
            }
        };
        let score = match self.text(d, id, 16)? {
            None => None,
            Some(outcome) => {
                let outcome = d.text(id, "scores.outcome", &outcome, ScoreOutcome::parse)?;
                let metrics = decode_metrics(d, id, &self.required_text(d, id, 17)?)?;
                if outcome.has_values() && metrics.is_empty() {
                    return Err(d.corrupt(
                        Some(id),
                        "scores.metrics",
                        format!("outcome `{outcome}` without metric values; rescore the run"),
                    ));
                }
                if !outcome.has_values() && !metrics.is_empty() {
                    return Err(d.corrupt(
                        Some(id),
                        "scores.metrics",
                        "a dropped item carries metric values; rescore the run",
                    ));
                }
                Some(Score { scenario_id: id.to_string(), outcome, metrics, signature: self.required_text(d, id, 18)? })
            }
        };
        Ok(Record { item, generation, score })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_as_utc() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
    }
}
