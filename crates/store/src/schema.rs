//! The schema of the current version.

use rusqlite::{Connection, OptionalExtension};

use crate::StoreError;

/// The schema version this binary writes and reads. 1: h2htalk up to the typed store (runs carry
/// an untyped provenance; the judge crate created its own tables). 2: runs carry their typed
/// specification, token counts may be unknown (NULL), every table is created here. Schema 2 later
/// gained `judge_validity` (created when a store is opened, see `migrate`; older binaries ignore it,
/// and a store opened read-only without it reads as holding no validity results), then `call_usage`
/// (the tokens of judge, simulator and simulated-conversation calls; runs stored before it have
/// none, which reads as "not recorded", never as 0 tokens). 3: simulations are typed rows (facts,
/// sessions and turns in tables of their own) instead of the simulator's result and transcript as
/// JSON.
pub const SCHEMA_VERSION: u32 = 3;

/// Every table but the simulations' ([`crate::simulations::TABLES`]).
pub(crate) const BASE_TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    spec TEXT NOT NULL,
    legacy_provenance TEXT
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
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('scored', 'empty_prediction', 'dropped')),
    metrics TEXT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (run_id, scenario_id),
    FOREIGN KEY (run_id, scenario_id) REFERENCES generations(run_id, scenario_id)
);
CREATE TABLE IF NOT EXISTS judge_sessions (
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    judge TEXT NOT NULL,
    settings TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, kind, judge)
);
CREATE TABLE IF NOT EXISTS judge_scores (
    run_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    task TEXT NOT NULL,
    family TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('scored', 'judge_parse_failed', 'judge_failed', 'generation_failed', 'empty_answer')),
    scores TEXT,
    mean REAL,
    reason TEXT,
    attempts INTEGER NOT NULL,
    raw TEXT,
    error TEXT,
    PRIMARY KEY (run_id, judge, scenario_id)
);
CREATE TABLE IF NOT EXISTS format_checks (
    run_id TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    task TEXT NOT NULL,
    name TEXT NOT NULL,
    passed INTEGER NOT NULL,
    message TEXT,
    PRIMARY KEY (run_id, scenario_id, name)
);
CREATE TABLE IF NOT EXISTS pairwise_judgments (
    judge TEXT NOT NULL,
    run_a TEXT NOT NULL,
    run_b TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('a', 'b', 'tie', 'inconsistent', 'judge_parse_failed', 'judge_failed', 'missing')),
    order_ab TEXT,
    order_ba TEXT,
    error TEXT,
    PRIMARY KEY (judge, run_a, run_b, scenario_id)
);
-- Who judged a pair of runs pairwise how (added within schema 2: created on open when missing;
-- a store without it simply has no pairwise sessions).
CREATE TABLE IF NOT EXISTS pairwise_sessions (
    judge TEXT NOT NULL,
    run_a TEXT NOT NULL,
    run_b TEXT NOT NULL,
    settings TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (judge, run_a, run_b)
);
CREATE TABLE IF NOT EXISTS safety_verdicts (
    run_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    lang TEXT NOT NULL,
    risk TEXT NOT NULL,
    verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail', 'undecided', 'judge_parse_failed', 'judge_failed', 'generation_failed')),
    rules TEXT NOT NULL,
    judgment TEXT,
    reason TEXT,
    PRIMARY KEY (run_id, judge, scenario_id)
);
CREATE TABLE IF NOT EXISTS sweeps (
    name TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sweep_runs (
    sweep TEXT NOT NULL,
    position INTEGER NOT NULL,
    model TEXT NOT NULL,
    run_id TEXT,
    PRIMARY KEY (sweep, position)
);
CREATE TABLE IF NOT EXISTS judge_validity (
    run_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    degradation TEXT NOT NULL,
    task TEXT NOT NULL,
    family TEXT NOT NULL,
    lang TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('compared', 'judge_parse_failed', 'judge_failed', 'not_applicable')),
    reference_mean REAL,
    degraded_mean REAL,
    error TEXT,
    PRIMARY KEY (run_id, judge, scenario_id, degradation)
);
-- Tokens of the helper calls of a run (judge, simulated user, the companion in simulated
-- conversations), summed per role, model and purpose as the calls return (added within schema 2:
-- created on open when missing). The prices are those configured for the model (NULL: not set).
CREATE TABLE IF NOT EXISTS call_usage (
    run_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('judge', 'simulator', 'companion')),
    model TEXT NOT NULL,
    purpose TEXT NOT NULL,
    calls INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    unknown_usage INTEGER NOT NULL,
    price_input_per_million REAL,
    price_output_per_million REAL,
    PRIMARY KEY (run_id, role, model, purpose)
);
";

/// Every table of the current schema.
pub(crate) fn tables() -> String {
    format!(
        "{BASE_TABLES}{}{}{}{}{}{}{}",
        crate::simulations::TABLES,
        crate::baselines::TABLES,
        crate::batches::TABLES,
        crate::cache::TABLES,
        crate::annotations::TABLES,
        crate::memory::TABLES,
        crate::references::TABLES
    )
}

/// The schema version recorded in a store (`None`: no `meta` table or no version).
pub(crate) fn version_of(conn: &Connection, path: &str) -> Result<Option<u32>, StoreError> {
    let has_meta: bool = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
        .map_err(|e| StoreError::Db {
            path: path.into(),
            message: format!("not an SQLite database, or unreadable: {e}"),
        })?;
    if !has_meta {
        return Ok(None);
    }
    let v: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .optional()
        .map_err(|e| StoreError::Db { path: path.into(), message: e.to_string() })?;
    v.map(|v| {
        v.parse().map_err(|_| StoreError::Version {
            path: path.into(),
            message: format!("schema version `{v}` is not a number: not an h2htalk run store?"),
        })
    })
    .transpose()
}

pub(crate) fn too_new(path: &str, v: u32) -> StoreError {
    StoreError::Version {
        path: path.into(),
        message: format!(
            "written by a newer h2htalk (schema {v}; this h2htalk {} reads schema {SCHEMA_VERSION} and earlier): \
             upgrade h2htalk to read it",
            env!("CARGO_PKG_VERSION")
        ),
    }
}
