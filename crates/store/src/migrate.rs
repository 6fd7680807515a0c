//! Bringing a store up to the current schema: a new file gets the current tables; a store of an
//! earlier version is first copied beside itself (`<db>.schema-<v>.bak`), then migrated in place in
//! one transaction; a store of a later version is refused.

use std::path::Path;

use rusqlite::{Connection, params};
use serde_json::Value;

use crate::StoreError;
use crate::schema::{SCHEMA_VERSION, tables, too_new, version_of};
use crate::simulations;
use crate::spec::RunSpec;

pub(crate) fn bring_up_to_date(conn: &mut Connection, path: &str) -> Result<(), StoreError> {
    let db = |e: rusqlite::Error| StoreError::Db { path: path.into(), message: e.to_string() };
    let empty: bool = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get::<_, i64>(0))
        .map(|n| n == 0)
        .map_err(db)?;
    // Two processes may open a new file at once: the writer lock makes one create, the other see it.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db)?;
    let version = version_of(&tx, path)?;
    match version {
        None if empty || !has_table(&tx, "runs").map_err(db)? => {
            tx.execute_batch(&tables())
                .map_err(|e| StoreError::Db { path: path.into(), message: format!("cannot create the schema: {e}") })?;
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
                [SCHEMA_VERSION.to_string()],
            )
            .map_err(db)?;
            tx.commit().map_err(db)
        }
        None => Err(StoreError::Version {
            path: path.into(),
            message: "has tables but no schema version: not an h2htalk run store".into(),
        }),
        Some(v) if v == SCHEMA_VERSION => {
            // Tables added without a version change (`sweeps`, `sweep_runs`, `judge_validity`,
            // `pairwise_sessions`) are created here.
            tx.execute_batch(&tables()).map_err(db)?;
            tx.commit().map_err(db)
        }
        Some(v) if v > SCHEMA_VERSION => Err(too_new(path, v)),
        Some(v) => {
            drop(tx);
            backup(conn, path, v)?;
            conn.execute_batch("PRAGMA foreign_keys=OFF;").map_err(db)?;
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db)?;
            // Another process may have migrated it meanwhile.
            if version_of(&tx, path)? == Some(SCHEMA_VERSION) {
                return tx.commit().map_err(db);
            }
            if v == 1 {
                from_v1(&tx, path)?;
            }
            if v <= 2 {
                from_v2(&tx, path)?;
            }
            tx.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [SCHEMA_VERSION.to_string()])
                .map_err(db)?;
            let problems: Vec<String> = {
                let mut stmt = tx.prepare("PRAGMA foreign_key_check").map_err(db)?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(db)?;
                rows.collect::<Result<_, _>>().map_err(db)?
            };
            if !problems.is_empty() {
                return Err(StoreError::Db {
                    path: path.into(),
                    message: format!(
                        "migration left rows without their parent in {problems:?}; the store is unchanged"
                    ),
                });
            }
            tx.commit().map_err(db)
        }
    }
}

fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n > 0)
}

/// A consistent copy of the store before it is changed: `<db>.schema-<v>.bak` (a number is added
/// when that name is taken).
fn backup(conn: &Connection, path: &str, version: u32) -> Result<(), StoreError> {
    let mut target = format!("{path}.schema-{version}.bak");
    let mut n = 1;
    while Path::new(&target).exists() {
        n += 1;
        target = format!("{path}.schema-{version}.{n}.bak");
    }
    conn.execute("VACUUM INTO ?1", [&target]).map_err(|e| StoreError::Db {
        path: path.into(),
        message: format!(
            "cannot write the backup {target} before migrating from schema {version} (nothing was changed): {e}"
        ),
    })?;
    Ok(())
}

/// Schema 1 → 2: runs get their typed specification (from the provenance, which is kept); token
/// counts become nullable (unknown usage); the judge's tables are created if that release had not.
fn from_v1(tx: &rusqlite::Transaction<'_>, path: &str) -> Result<(), StoreError> {
    let db =
        |e: rusqlite::Error| StoreError::Db { path: path.into(), message: format!("migrating from schema 1: {e}") };
    let runs: Vec<(String, String, String, String)> = {
        let mut stmt = tx.prepare("SELECT id, created_at, status, provenance FROM runs").map_err(db)?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).map_err(db)?;
        rows.collect::<Result<_, _>>().map_err(db)?
    };
    tx.execute_batch(
        "CREATE TABLE runs_new (
            id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL,
            spec TEXT NOT NULL,
            legacy_provenance TEXT
        );",
    )
    .map_err(db)?;
    for (id, created_at, status, provenance) in &runs {
        let corrupt = |message: String| StoreError::Corrupt {
            path: path.into(),
            run: id.clone(),
            item: None,
            column: "runs.provenance".into(),
            message: format!("{message}; the store was not migrated (it is unchanged)"),
        };
        let value: Value = serde_json::from_str(provenance).map_err(|e| corrupt(format!("not JSON ({e})")))?;
        let spec = RunSpec::from_v1_provenance(&value).map_err(corrupt)?;
        tx.execute(
            "INSERT INTO runs_new (id, created_at, status, spec, legacy_provenance) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, created_at, status, serde_json::to_string(&spec).expect("a spec serialises"), provenance],
        )
        .map_err(db)?;
    }
    tx.execute_batch(
        "DROP TABLE runs;
         ALTER TABLE runs_new RENAME TO runs;
         CREATE TABLE generations_new (
            run_id TEXT NOT NULL,
            scenario_id TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('generated', 'failed')),
            text TEXT,
            finish_reason TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            latency_ms REAL NOT NULL,
            attempts INTEGER NOT NULL,
            error_kind TEXT,
            error_message TEXT,
            faults TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, scenario_id),
            FOREIGN KEY (run_id, scenario_id) REFERENCES items(run_id, scenario_id)
         );
         INSERT INTO generations_new SELECT run_id, scenario_id, status, text, finish_reason, input_tokens, output_tokens,
            latency_ms, attempts, error_kind, error_message, faults, created_at FROM generations;
         DROP TABLE generations;
         ALTER TABLE generations_new RENAME TO generations;",
    )
    .map_err(db)?;
    tx.execute_batch(&tables()).map_err(db)?;
    Ok(())
}

/// Schema 2 → 3: each simulation's result and transcript, JSON the simulator wrote, become typed
/// rows: the conversation's outcome and counts, its facts, its sessions and their turns. A row
/// that does not decode stops the migration with the run, the simulation and the column; the store
/// is then unchanged.
fn from_v2(tx: &rusqlite::Transaction<'_>, path: &str) -> Result<(), StoreError> {
    let db =
        |e: rusqlite::Error| StoreError::Db { path: path.into(), message: format!("migrating from schema 2: {e}") };
    let legacy = has_table(tx, "simulations").map_err(db)? && {
        let columns: Vec<String> = {
            let mut stmt = tx.prepare("SELECT name FROM pragma_table_info('simulations')").map_err(db)?;
            let rows = stmt.query_map([], |r| r.get(0)).map_err(db)?;
            rows.collect::<Result<_, _>>().map_err(db)?
        };
        columns.iter().any(|c| c == "result")
    };
    if !legacy {
        return tx.execute_batch(&tables()).map_err(db);
    }
    tx.execute_batch("ALTER TABLE simulations RENAME TO simulations_v2;").map_err(db)?;
    tx.execute_batch(&tables()).map_err(db)?;
    let rows: Vec<(String, simulations::legacy::Stored)> = {
        let mut stmt = tx
            .prepare(
                "SELECT run_id, idx, profile, seed, companion, simulator, judge, outcome, result, transcript, error, \
                 created_at FROM simulations_v2 ORDER BY run_id, idx",
            )
            .map_err(db)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    simulations::legacy::Stored {
                        idx: r.get(1)?,
                        profile: r.get(2)?,
                        seed: r.get(3)?,
                        companion: r.get(4)?,
                        simulator: r.get(5)?,
                        judge: r.get(6)?,
                        outcome: r.get(7)?,
                        result: r.get(8)?,
                        transcript: r.get(9)?,
                        error: r.get(10)?,
                        created_at: r.get(11)?,
                    },
                ))
            })
            .map_err(db)?;
        rows.collect::<Result<_, _>>().map_err(db)?
    };
    for (run, stored) in rows {
        let idx = stored.idx;
        let sim = simulations::legacy::decode(stored).map_err(|(column, message)| StoreError::Corrupt {
            path: path.into(),
            run: run.clone(),
            item: Some(format!("simulation {idx}")),
            column,
            message: format!("{message}; the store was not migrated (it is unchanged)"),
        })?;
        simulations::insert(tx, &run, &sim).map_err(db)?;
    }
    tx.execute_batch("DROP TABLE simulations_v2;").map_err(db)
}
