//! The run store: one SQLite file in WAL mode holding runs with their provenance, their items,
//! every generation (committed as it arrives) and every score. A crashed run resumes from it
//! without redoing anything that finished; two processes may share one file.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Errors of the store, with the database path (and what to do, for the errors of a full disk or
/// a store that cannot be written).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}{}", hint(message))]
pub struct StoreError {
    pub path: String,
    pub message: String,
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

const SCHEMA_VERSION: &str = "1";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    provenance TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    run_id TEXT NOT NULL REFERENCES runs(id),
    scenario_id TEXT NOT NULL,
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    ord INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    reference TEXT NOT NULL,
    PRIMARY KEY (run_id, scenario_id)
);
CREATE TABLE IF NOT EXISTS generations (
    run_id TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('generated', 'failed')),
    text TEXT,
    finish_reason TEXT,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    latency_ms REAL NOT NULL,
    attempts INTEGER NOT NULL,
    error_kind TEXT,
    error_message TEXT,
    faults TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, scenario_id),
    FOREIGN KEY (run_id, scenario_id) REFERENCES items(run_id, scenario_id)
);
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('scored', 'empty_prediction', 'dropped')),
    metrics TEXT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (run_id, scenario_id),
    FOREIGN KEY (run_id, scenario_id) REFERENCES generations(run_id, scenario_id)
);
";

/// One item of a run: a scenario and the prompt it was given.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ItemRow {
    pub scenario_id: String,
    pub task: String,
    pub lang: String,
    pub ord: usize,
    /// The messages, as JSON.
    pub prompt: String,
    pub reference: String,
}

/// One finished generation, or a failure with its reason.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GenerationRow {
    pub scenario_id: String,
    pub status: String,
    pub text: Option<String>,
    pub finish_reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_ms: f64,
    pub attempts: u32,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    /// Fault kinds met on the way, as a JSON list.
    pub faults: String,
}

/// One item's scores.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ScoreRow {
    pub scenario_id: String,
    pub outcome: String,
    /// Metric name → value, as a JSON object.
    pub metrics: String,
    pub signature: String,
}

/// A run as listed.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub id: String,
    pub created_at: String,
    pub status: String,
    pub provenance: Value,
}

pub struct Store {
    conn: Connection,
    path: String,
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

impl Store {
    /// Opens (creating if needed) the store at `path`, in WAL mode.
    pub fn open(path: &Path) -> StoreResult<Store> {
        let p = path.display().to_string();
        let err = |message: String| StoreError { path: p.clone(), message };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err(format!("cannot create its directory: {e}")))?;
        }
        let conn = Connection::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(|e| err(e.to_string()))?;
        let store = Store { conn, path: p };
        store.init()?;
        Ok(store)
    }

    /// Opens an existing store for reading only (listing, showing, exporting, reporting): nothing is
    /// created or changed, so a store on a read-only disk or file can still be read.
    pub fn open_read_only(path: &Path) -> StoreResult<Store> {
        let p = path.display().to_string();
        let err = |message: String| StoreError { path: p.clone(), message };
        if !path.is_file() {
            return Err(err("no run store here; `h2htalk run --db FILE` creates one".into()));
        }
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
        let version: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .optional()
            .map_err(|e| err(format!("not an h2htalk run store, or unreadable: {e}")))?;
        match version.as_deref() {
            Some(SCHEMA_VERSION) => Ok(Store { conn, path: p }),
            Some(v) => Err(err(format!("schema version {v}, this h2htalk reads {SCHEMA_VERSION}"))),
            None => Err(err("not an h2htalk run store (no schema version)".into())),
        }
    }

    /// The database file, as given to [`Store::open`].
    pub fn path(&self) -> &str {
        &self.path
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError { path: self.path.clone(), message: e.to_string() }
    }

    fn init(&self) -> StoreResult<()> {
        let mode: String = self.conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).map_err(|e| self.err(e))?;
        if mode.to_lowercase() != "wal" {
            return Err(self.err(format!("cannot switch to WAL mode (got `{mode}`); is the file on a network drive?")));
        }
        self.conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;").map_err(|e| self.err(e))?;
        self.conn.execute_batch(SCHEMA).map_err(|e| self.err(format!("cannot create the schema: {e}")))?;
        let version: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        match version.as_deref() {
            None => {
                self.conn
                    .execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?1)", [SCHEMA_VERSION])
                    .map_err(|e| self.err(e))?;
            }
            Some(SCHEMA_VERSION) => {}
            Some(v) => return Err(self.err(format!("schema version {v}, this h2htalk reads {SCHEMA_VERSION}"))),
        }
        Ok(())
    }

    /// Creates a run with its provenance and items, in one transaction.
    pub fn create_run(&mut self, id: &str, provenance: &Value, items: &[ItemRow]) -> StoreResult<()> {
        let tx = self.conn.transaction().map_err(|e| StoreError { path: self.path.clone(), message: e.to_string() })?;
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError { path: path.clone(), message: e.to_string() };
        tx.execute(
            "INSERT INTO runs (id, created_at, status, provenance) VALUES (?1, ?2, 'running', ?3)",
            params![id, now(), provenance.to_string()],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare("INSERT INTO items (run_id, scenario_id, task, lang, ord, prompt, reference) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .map_err(e)?;
            for it in items {
                stmt.execute(params![id, it.scenario_id, it.task, it.lang, it.ord as i64, it.prompt, it.reference])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    pub fn set_status(&self, id: &str, status: &str) -> StoreResult<()> {
        self.conn.execute("UPDATE runs SET status = ?2 WHERE id = ?1", params![id, status]).map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn run(&self, id: &str) -> StoreResult<Option<RunRow>> {
        self.conn
            .query_row("SELECT id, created_at, status, provenance FROM runs WHERE id = ?1", [id], run_row)
            .optional()
            .map_err(|e| self.err(e))
    }

    pub fn runs(&self) -> StoreResult<Vec<RunRow>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, created_at, status, provenance FROM runs ORDER BY created_at, id")
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], run_row).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    pub fn items(&self, run_id: &str) -> StoreResult<Vec<ItemRow>> {
        let mut stmt = self
            .conn
            .prepare("SELECT scenario_id, task, lang, ord, prompt, reference FROM items WHERE run_id = ?1 ORDER BY ord")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(ItemRow {
                    scenario_id: r.get(0)?,
                    task: r.get(1)?,
                    lang: r.get(2)?,
                    ord: r.get::<_, i64>(3)? as usize,
                    prompt: r.get(4)?,
                    reference: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    pub fn generations(&self, run_id: &str) -> StoreResult<Vec<GenerationRow>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT g.scenario_id, g.status, g.text, g.finish_reason, g.input_tokens, g.output_tokens, g.latency_ms, \
                 g.attempts, g.error_kind, g.error_message, g.faults FROM generations g JOIN items i \
                 ON i.run_id = g.run_id AND i.scenario_id = g.scenario_id WHERE g.run_id = ?1 ORDER BY i.ord",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(GenerationRow {
                    scenario_id: r.get(0)?,
                    status: r.get(1)?,
                    text: r.get(2)?,
                    finish_reason: r.get(3)?,
                    input_tokens: r.get::<_, i64>(4)? as u64,
                    output_tokens: r.get::<_, i64>(5)? as u64,
                    latency_ms: r.get(6)?,
                    attempts: r.get::<_, i64>(7)? as u32,
                    error_kind: r.get(8)?,
                    error_message: r.get(9)?,
                    faults: r.get(10)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Writes generations in one transaction. A generated row is never overwritten; a failed row is
    /// replaced only when `replace_failed` (a `--retry-failed` run).
    pub fn put_generations(
        &mut self,
        run_id: &str,
        rows: &[GenerationRow],
        replace_failed: bool,
    ) -> StoreResult<usize> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError { path: path.clone(), message: e.to_string() };
        let tx = self.conn.transaction().map_err(e)?;
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
                written += stmt
                    .execute(params![
                        run_id,
                        g.scenario_id,
                        g.status,
                        g.text,
                        g.finish_reason,
                        g.input_tokens as i64,
                        g.output_tokens as i64,
                        g.latency_ms,
                        g.attempts as i64,
                        g.error_kind,
                        g.error_message,
                        g.faults,
                        at
                    ])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(written)
    }

    /// Writes scores in one transaction (replacing earlier scores of the same items).
    pub fn put_scores(&mut self, run_id: &str, rows: &[ScoreRow]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError { path: path.clone(), message: e.to_string() };
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO scores (run_id, scenario_id, outcome, metrics, signature) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(e)?;
            for s in rows {
                stmt.execute(params![run_id, s.scenario_id, s.outcome, s.metrics, s.signature]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    pub fn scores(&self, run_id: &str) -> StoreResult<Vec<ScoreRow>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.scenario_id, s.outcome, s.metrics, s.signature FROM scores s JOIN items i \
                 ON i.run_id = s.run_id AND i.scenario_id = s.scenario_id WHERE s.run_id = ?1 ORDER BY i.ord",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(ScoreRow { scenario_id: r.get(0)?, outcome: r.get(1)?, metrics: r.get(2)?, signature: r.get(3)? })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The store's connection, for crates that keep their own tables in the same file (the judge).
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> StoreResult<String> {
        self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(|e| self.err(e))
    }
}

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    let provenance: String = r.get(3)?;
    Ok(RunRow {
        id: r.get(0)?,
        created_at: r.get(1)?,
        status: r.get(2)?,
        provenance: serde_json::from_str(&provenance).unwrap_or(Value::String(provenance)),
    })
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
