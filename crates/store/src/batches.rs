//! The batches a run sent through a provider's Batch API (`batches`, `batch_requests`): recorded as
//! soon as the provider has made them, so that a run stopped while they run polls them again when
//! resumed instead of paying for its requests twice. Added within schema 3 (created on open when
//! missing; a store without them has sent no batches).

use std::collections::HashMap;
use std::path::PathBuf;

use h2htalk_llm::{BatchJournal, JournalBatch};
use rusqlite::params;

use crate::{Store, StoreError, StoreResult, now};

pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_requests (
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    custom_id TEXT NOT NULL,
    result TEXT,
    PRIMARY KEY (batch_id, custom_id)
);
";

impl Store {
    /// The batches sent for `scope` (a run id, or a comparison's) to `model`, oldest first.
    pub fn batches(&self, scope: &str, model: &str) -> StoreResult<Vec<JournalBatch>> {
        if !self.has_table("batches")? {
            return Ok(Vec::new());
        }
        let heads: Vec<(String, String)> = self.all(
            "SELECT batch_id, status FROM batches WHERE scope = ?1 AND model = ?2 ORDER BY created_at, rowid",
            params![scope, model],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        heads
            .into_iter()
            .map(|(id, status)| {
                let rows: Vec<(String, Option<String>)> = self.all(
                    "SELECT custom_id, result FROM batch_requests WHERE batch_id = ?1 ORDER BY rowid",
                    params![id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                let results: HashMap<String, String> =
                    rows.iter().filter_map(|(c, r)| Some((c.clone(), r.clone()?))).collect();
                Ok(JournalBatch { id, status, requests: rows.into_iter().map(|(c, _)| c).collect(), results })
            })
            .collect()
    }

    /// Records a batch the provider has made, with the requests it holds.
    pub fn put_batch(&mut self, scope: &str, model: &str, batch_id: &str, requests: &[String]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let at = now();
        tx.execute(
            "INSERT INTO batches (batch_id, scope, model, status, created_at, updated_at) VALUES (?1, ?2, ?3, 'created', ?4, ?4)",
            params![batch_id, scope, model, at],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare_cached("INSERT OR IGNORE INTO batch_requests (batch_id, custom_id) VALUES (?1, ?2)")
                .map_err(e)?;
            for id in requests {
                stmt.execute(params![batch_id, id]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// Records how a batch ended and the result line of each request that has one.
    pub fn finish_batch(&mut self, batch_id: &str, status: &str, results: &[(String, String)]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute(
            "UPDATE batches SET status = ?2, updated_at = ?3 WHERE batch_id = ?1",
            params![batch_id, status, now()],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO batch_requests (batch_id, custom_id, result) VALUES (?1, ?2, ?3)
                     ON CONFLICT (batch_id, custom_id) DO UPDATE SET result = excluded.result",
                )
                .map_err(e)?;
            for (id, line) in results {
                stmt.execute(params![batch_id, id, line]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }
}

/// The journal of one scope's batches to one model, in the store at `path` (opened per write: a
/// batch is written a few times in its life, so the generation's writer keeps the store to itself
/// between).
pub struct StoreJournal {
    pub path: PathBuf,
    pub scope: String,
    pub model: String,
}

impl BatchJournal for StoreJournal {
    fn batches(&self) -> Result<Vec<JournalBatch>, String> {
        Store::open(&self.path).and_then(|s| s.batches(&self.scope, &self.model)).map_err(|e| e.to_string())
    }

    fn created(&self, batch_id: &str, requests: &[String]) -> Result<(), String> {
        Store::open(&self.path)
            .and_then(|mut s| s.put_batch(&self.scope, &self.model, batch_id, requests))
            .map_err(|e| e.to_string())
    }

    fn finished(&self, batch_id: &str, status: &str, results: &[(String, String)]) -> Result<(), String> {
        Store::open(&self.path).and_then(|mut s| s.finish_batch(batch_id, status, results)).map_err(|e| e.to_string())
    }
}
