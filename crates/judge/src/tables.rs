//! The judge crate's own tables, created in the run store's SQLite file on its connection:
//!
//! - `judge_sessions`: who judged which run how (judge model, settings, prompt hash), per kind
//!   (`rubric`, `safety`).
//! - `judge_scores`: one rubric judgment per run, judge and item, or the failure and its reason.
//! - `format_checks`: one row per item and check.
//! - `pairwise_judgments`: one row per judge, pair of runs and item, with both orders.
//! - `safety_verdicts`: one row per run, judge (`rules` when rules alone decided) and safety item.
//! - `simulations`: one row per simulated multi-session conversation.

use rusqlite::{Connection, OptionalExtension, params};

const SCHEMA: &str = "
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
CREATE TABLE IF NOT EXISTS simulations (
    run_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    profile TEXT NOT NULL,
    seed INTEGER NOT NULL,
    companion TEXT NOT NULL,
    simulator TEXT NOT NULL,
    judge TEXT,
    outcome TEXT NOT NULL,
    result TEXT NOT NULL,
    transcript TEXT NOT NULL,
    error TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, idx)
);
";

/// Creates the judge tables if they are missing.
pub fn ensure(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)
}

pub(crate) fn now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    h2htalk_runner::store::format_utc(secs)
}

/// Records who judges `run_id` how. When the same judge judged it before with other settings or
/// other prompts, its earlier rows in `table` are deleted (they would not be comparable) and `true`
/// is returned.
pub(crate) fn begin_session(
    conn: &Connection,
    run_id: &str,
    kind: &str,
    judge: &str,
    settings: &str,
    prompt_hash: &str,
    table: &str,
) -> rusqlite::Result<bool> {
    let earlier: Option<(String, String)> = conn
        .query_row(
            "SELECT settings, prompt_hash FROM judge_sessions WHERE run_id = ?1 AND kind = ?2 AND judge = ?3",
            params![run_id, kind, judge],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let restarted = match earlier {
        Some((s, h)) if s == settings && h == prompt_hash => false,
        Some(_) => {
            conn.execute(&format!("DELETE FROM {table} WHERE run_id = ?1 AND judge = ?2"), params![run_id, judge])?;
            true
        }
        None => false,
    };
    conn.execute(
        "INSERT OR REPLACE INTO judge_sessions (run_id, kind, judge, settings, prompt_hash, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![run_id, kind, judge, settings, prompt_hash, now()],
    )?;
    Ok(restarted)
}

/// sha256 of prompt texts, as `sha256:<hex>`.
pub(crate) fn hash_texts(texts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    format!("sha256:{:x}", h.finalize())
}
