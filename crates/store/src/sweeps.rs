//! Sweeps: several models run under one protocol, each with its run once it is known.

use rusqlite::params;
use serde::Serialize;
use serde_json::Value;

use crate::*;

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

impl Store {
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
}
