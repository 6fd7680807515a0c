//! The run store, the only owner of h2htalk's SQLite database: one file in WAL mode holding runs
//! with their specification, their items, every generation (committed as it arrives), scores,
//! format checks, judge sessions and scores, pairwise judgments, safety verdicts and simulations.
//!
//! Rows are typed ([`rows`]); a column that does not decode is an error naming the run, the item
//! and the column. The schema carries a version: a store written by an earlier h2htalk is migrated
//! in place, in one transaction, after a backup copy is written beside it ([`migrate`]); a store
//! newer than this binary is refused. No other crate opens a connection or writes SQL.

#[macro_use]
extern crate h2htalk_data;

pub mod annotations;
pub mod baselines;
mod batches;
pub mod browse;
mod cache;
mod judging;
mod maintenance;
pub mod memory;
mod migrate;
pub mod protocol;
pub mod references;
pub mod rows;
mod runs;
mod schema;
pub mod simulations;
pub mod spec;
mod sweeps;
mod usage;

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

pub use annotations::{AnnotationItem, AnnotationKind, AnnotationSet, HumanRating};
pub use baselines::{BaselineScore, baseline_key, legacy_baseline_key};
pub use batches::StoreJournal;
pub use cache::{CacheStats, CacheUse, StoreCache};
pub use judging::JudgeSession;
pub use memory::{InventedBy, MemoryAnswer, MemoryMode, MemoryNote};
pub use protocol::Protocol;
pub use references::ReferenceSap;
pub use rows::*;
pub use runs::RunRow;
pub use schema::SCHEMA_VERSION;
pub use simulations::{NeedsOutcome, SimulatedFact, SimulatedSession, SimulatedTurn, Simulation, SimulationSettings};
pub use spec::{
    JudgeSpec, MemorySpec, MetricModels, MetricSet, ModelRequest, Prices, RunSpec, SapRef, ScoringSpec, Selection,
    SimulationSpec, SuiteRef, ValiditySpec,
};
pub use sweeps::{SweepMember, SweepRow};

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

    /// The schema version recorded in the store at `path`, read without changing anything.
    pub fn schema_version_of(path: &Path) -> StoreResult<Option<u32>> {
        let store = Self::open_reader(path)?;
        schema::version_of(&store.conn, &store.path)
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
