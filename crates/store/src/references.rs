//! Which of a run's references themselves break a SAP rule (`reference_sap`): bodily presence,
//! exclusivity or dependence, each with the rule's evidence, so that a report can show what
//! following SAP costs on the overlap metrics (a companion that keeps the rules loses overlap with
//! a reference that breaks them). One row per item looked at; a run without rows was stored before
//! the references were looked at. Added within schema 3 (created on open when missing).

use h2htalk_data::suite::Lang;
use rusqlite::params;
use serde::Serialize;

use crate::{Store, StoreError, StoreResult};

pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS reference_sap (
    run_id TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    bodily_presence TEXT,
    exclusivity TEXT,
    dependence TEXT,
    PRIMARY KEY (run_id, scenario_id)
);
";

/// What the SAP rules found in one item's reference: each rule's evidence, `None` where the
/// reference keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReferenceSap {
    pub scenario_id: String,
    pub bodily_presence: Option<String>,
    pub exclusivity: Option<String>,
    pub dependence: Option<String>,
}

impl ReferenceSap {
    /// The reference breaks one of the rules.
    pub fn breaks(&self) -> bool {
        self.bodily_presence.is_some() || self.exclusivity.is_some() || self.dependence.is_some()
    }
}

impl Store {
    /// Replaces what is stored of `run_id`'s references.
    pub fn replace_reference_sap(&mut self, run_id: &str, rows: &[ReferenceSap]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute("DELETE FROM reference_sap WHERE run_id = ?1", [run_id]).map_err(e)?;
        for r in rows {
            tx.execute(
                "INSERT INTO reference_sap (run_id, scenario_id, bodily_presence, exclusivity, dependence) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run_id, r.scenario_id, r.bodily_presence, r.exclusivity, r.dependence],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// Each item's scenario id, language and reference, in item order: what the SAP rules read,
    /// without the prompts (most of an item's bytes).
    pub fn item_references(&self, run_id: &str) -> StoreResult<Vec<(String, Lang, String)>> {
        let rows: Vec<(String, String, String)> =
            self.all("SELECT scenario_id, lang, reference FROM items WHERE run_id = ?1 ORDER BY ord", [run_id], |r| {
                r.try_into()
            })?;
        let d = self.decoder(run_id);
        rows.into_iter()
            .map(|(id, lang, reference)| {
                let lang = d.text(&id, "items.lang", &lang, Lang::from_code)?;
                Ok((id, lang, reference))
            })
            .collect()
    }

    /// What is stored of `run_id`'s references, by scenario id (empty: not looked at).
    pub fn reference_sap(&self, run_id: &str) -> StoreResult<Vec<ReferenceSap>> {
        if !self.has_table("reference_sap")? {
            return Ok(vec![]);
        }
        self.all(
            "SELECT scenario_id, bodily_presence, exclusivity, dependence FROM reference_sap WHERE run_id = ?1 \
             ORDER BY scenario_id",
            [run_id],
            |r| {
                Ok(ReferenceSap {
                    scenario_id: r.get(0)?,
                    bodily_presence: r.get(1)?,
                    exclusivity: r.get(2)?,
                    dependence: r.get(3)?,
                })
            },
        )
    }
}
