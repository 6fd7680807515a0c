//! Items exported for people to rate (`annotation_sets`, `annotation_items`) and their ratings
//! (`human_ratings`). A set is blinded: its items carry ids of their own, the runs behind them and
//! the order two answers were shown in (`swapped`) stay here, never in what raters see. Added
//! within schema 3 (created on open when missing; a store without them holds no sets).

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::{Store, StoreError, StoreResult, now};

pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS annotation_sets (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('rubric', 'pairwise')),
    seed INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS annotation_items (
    set_name TEXT NOT NULL REFERENCES annotation_sets(name),
    item TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    task TEXT NOT NULL,
    run_a TEXT NOT NULL,
    run_b TEXT,
    swapped INTEGER NOT NULL,
    PRIMARY KEY (set_name, item)
);
CREATE TABLE IF NOT EXISTS human_ratings (
    set_name TEXT NOT NULL,
    item TEXT NOT NULL,
    rater TEXT NOT NULL,
    criterion TEXT NOT NULL,
    value REAL NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (set_name, item, rater, criterion),
    FOREIGN KEY (set_name, item) REFERENCES annotation_items(set_name, item)
);
";

/// What people rate in a set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationKind {
    /// One answer, on the judge's rubric criteria (1–10).
    Rubric,
    /// Two answers to the same scenario: which is better (shown as A and B).
    Pairwise,
}

impl AnnotationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnnotationKind::Rubric => "rubric",
            AnnotationKind::Pairwise => "pairwise",
        }
    }

    pub fn parse(s: &str) -> Option<AnnotationKind> {
        [AnnotationKind::Rubric, AnnotationKind::Pairwise].into_iter().find(|k| k.as_str() == s)
    }
}

/// One blinded item and what stands behind it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnnotationItem {
    pub item: String,
    pub scenario_id: String,
    pub task: String,
    /// The run whose answer is rated (rubric), or the first of the two compared (pairwise).
    pub run_a: String,
    pub run_b: Option<String>,
    /// Pairwise: `run_b`'s answer was shown as A.
    pub swapped: bool,
}

/// A set of items for people to rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnnotationSet {
    pub name: String,
    pub kind: AnnotationKind,
    pub seed: u64,
    pub created_at: String,
    pub items: Vec<AnnotationItem>,
}

/// One rating: a criterion's score (1–10), or for a pairwise item `winner` with 1 for the answer
/// shown as A, 0 for B and 0.5 for a tie.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HumanRating {
    pub item: String,
    pub rater: String,
    pub criterion: String,
    pub value: f64,
}

impl Store {
    /// Stores a new set; a set of that name already stored is an error (a set is never changed).
    pub fn create_annotation_set(
        &mut self,
        name: &str,
        kind: AnnotationKind,
        seed: u64,
        items: &[AnnotationItem],
    ) -> StoreResult<()> {
        if self.annotation_set(name)?.is_some() {
            return Err(StoreError::Db {
                path: self.path.clone(),
                message: format!("annotation set `{name}` exists already; give another --name"),
            });
        }
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute(
            "INSERT INTO annotation_sets (name, kind, seed, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![name, kind.as_str(), seed as i64, now()],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO annotation_items (set_name, item, scenario_id, task, run_a, run_b, swapped) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(e)?;
            for i in items {
                stmt.execute(params![name, i.item, i.scenario_id, i.task, i.run_a, i.run_b, i.swapped]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// The set named `name`, with its items in id order.
    pub fn annotation_set(&self, name: &str) -> StoreResult<Option<AnnotationSet>> {
        if !self.has_table("annotation_sets")? {
            return Ok(None);
        }
        let head: Option<(String, i64, String)> = self
            .conn
            .query_row("SELECT kind, seed, created_at FROM annotation_sets WHERE name = ?1", [name], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((kind, seed, created_at)) = head else { return Ok(None) };
        let kind =
            AnnotationKind::parse(&kind).ok_or_else(|| self.err(format!("set `{name}`: unknown kind `{kind}`")))?;
        let items = self.all(
            "SELECT item, scenario_id, task, run_a, run_b, swapped FROM annotation_items WHERE set_name = ?1 ORDER BY item",
            [name],
            |r| {
                Ok(AnnotationItem {
                    item: r.get(0)?,
                    scenario_id: r.get(1)?,
                    task: r.get(2)?,
                    run_a: r.get(3)?,
                    run_b: r.get(4)?,
                    swapped: r.get(5)?,
                })
            },
        )?;
        Ok(Some(AnnotationSet { name: name.to_string(), kind, seed: seed as u64, created_at, items }))
    }

    /// The names of the stored sets, oldest first.
    pub fn annotation_sets(&self) -> StoreResult<Vec<String>> {
        if !self.has_table("annotation_sets")? {
            return Ok(Vec::new());
        }
        self.all("SELECT name FROM annotation_sets ORDER BY created_at, name", [], |r| r.get(0))
    }

    /// Stores ratings of a set in one transaction (all or nothing); a rater's earlier rating of the
    /// same item and criterion is replaced. Returns how many of them replaced one.
    pub fn put_human_ratings(&mut self, set: &str, ratings: &[HumanRating]) -> StoreResult<usize> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let mut replaced = 0;
        {
            let mut exists = tx
                .prepare_cached(
                    "SELECT count(*) FROM human_ratings WHERE set_name = ?1 AND item = ?2 AND rater = ?3 AND criterion = ?4",
                )
                .map_err(e)?;
            let mut put = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO human_ratings (set_name, item, rater, criterion, value, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(e)?;
            let at = now();
            for r in ratings {
                let n: i64 =
                    exists.query_row(params![set, r.item, r.rater, r.criterion], |row| row.get(0)).map_err(e)?;
                replaced += n as usize;
                put.execute(params![set, r.item, r.rater, r.criterion, r.value, at]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(replaced)
    }

    /// Every rating of a set, by item, rater and criterion.
    pub fn human_ratings(&self, set: &str) -> StoreResult<Vec<HumanRating>> {
        if !self.has_table("human_ratings")? {
            return Ok(Vec::new());
        }
        self.all(
            "SELECT item, rater, criterion, value FROM human_ratings WHERE set_name = ?1 ORDER BY item, rater, criterion",
            [set],
            |r| Ok(HumanRating { item: r.get(0)?, rater: r.get(1)?, criterion: r.get(2)?, value: r.get(3)? }),
        )
    }
}
