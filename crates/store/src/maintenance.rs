//! Looking at a store as a whole: row counts and SQLite's integrity check; and, for tests only
//! (the `test-hooks` feature), writing what no typed row could hold.

use crate::*;

impl Store {
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
}

#[cfg(feature = "test-hooks")]
impl Store {
    /// Sets a `meta` value, bypassing every check: for tests of stores from other versions.
    #[doc(hidden)]
    pub fn corrupt_meta_for_tests(&self, key: &str, value: &str) -> StoreResult<()> {
        self.conn
            .execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", rusqlite::params![key, value])
            .map_err(|e| self.err(e))?;
        Ok(())
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
                rusqlite::params![run_id, item, value],
            ),
            None => self
                .conn
                .execute(&format!("UPDATE {table} SET {column} = ?2 WHERE id = ?1"), rusqlite::params![run_id, value]),
        }
        .map_err(|e| self.err(e));
        self.conn.execute_batch("PRAGMA ignore_check_constraints = OFF;").map_err(|e| self.err(e))?;
        n
    }
}
