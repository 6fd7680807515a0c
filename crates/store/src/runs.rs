//! Runs with their specification and status, their items (the exact prompts), generations
//! (committed as they arrive) and scores.

use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::Value;

use crate::*;

/// A run as listed.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub id: String,
    pub created_at: String,
    pub status: RunStatus,
    /// Shown as `provenance` in `runs show --json`, as every release has named it.
    #[serde(rename = "provenance")]
    pub spec: RunSpec,
    /// What an h2htalk before schema 2 recorded (kept as it was); `None` for later runs.
    pub legacy_provenance: Option<Value>,
}

/// Metric values: a JSON object of finite numbers.
pub(crate) fn decode_metrics(
    d: &Decoder,
    item: &str,
    raw: &str,
) -> StoreResult<std::collections::BTreeMap<String, f64>> {
    let value: Value = d.json(Some(item), "scores.metrics", raw)?;
    let Value::Object(map) = value else {
        return Err(d.corrupt(Some(item), "scores.metrics", "not a JSON object; rescore the run"));
    };
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in map {
        match v.as_f64() {
            Some(x) if x.is_finite() => {
                out.insert(k, x);
            }
            _ => {
                return Err(d.corrupt(
                    Some(item),
                    &format!("scores.metrics.{k}"),
                    format!("`{v}` is not a finite number; rescore the run"),
                ));
            }
        }
    }
    Ok(out)
}

impl Store {
    // ---- runs -------------------------------------------------------------------------------

    /// Creates a run with its specification and items, in one transaction.
    pub fn create_run(&mut self, id: &str, spec: &RunSpec, items: &[Item]) -> StoreResult<()> {
        let spec = serde_json::to_string(spec).expect("a run specification serialises");
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute(
            "INSERT INTO runs (id, created_at, status, spec) VALUES (?1, ?2, ?3, ?4)",
            params![id, now(), RunStatus::Running.as_str(), spec],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare("INSERT INTO items (run_id, scenario_id, task, lang, ord, prompt, reference) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .map_err(e)?;
            for it in items {
                let prompt = serde_json::to_string(&it.prompt).expect("messages serialise");
                stmt.execute(params![id, it.scenario_id, it.task, it.lang.code(), it.ord as i64, prompt, it.reference])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// Replaces a run's specification (a resumed run that adds a judge or a simulation).
    pub fn set_spec(&self, id: &str, spec: &RunSpec) -> StoreResult<()> {
        let spec = serde_json::to_string(spec).expect("a run specification serialises");
        self.conn.execute("UPDATE runs SET spec = ?2 WHERE id = ?1", params![id, spec]).map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn set_status(&self, id: &str, status: RunStatus) -> StoreResult<()> {
        self.conn
            .execute("UPDATE runs SET status = ?2 WHERE id = ?1", params![id, status.as_str()])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn run(&self, id: &str) -> StoreResult<Option<RunRow>> {
        let raw = self
            .conn
            .query_row("SELECT id, created_at, status, spec, legacy_provenance FROM runs WHERE id = ?1", [id], raw_run)
            .optional()
            .map_err(|e| self.err(e))?;
        raw.map(|r| self.decode_run(r)).transpose()
    }

    pub fn runs(&self) -> StoreResult<Vec<RunRow>> {
        let raw: Vec<RawRun> = self.all(
            "SELECT id, created_at, status, spec, legacy_provenance FROM runs ORDER BY created_at, id",
            [],
            raw_run,
        )?;
        raw.into_iter().map(|r| self.decode_run(r)).collect()
    }

    fn decode_run(&self, r: RawRun) -> StoreResult<RunRow> {
        let d = self.decoder(&r.0);
        let status = RunStatus::parse(&r.2)
            .ok_or_else(|| d.corrupt(None, "runs.status", format!("`{}` is not a known value", r.2)))?;
        let spec = d.json(None, "runs.spec", &r.3)?;
        let legacy_provenance = r.4.as_deref().map(|p| d.json(None, "runs.legacy_provenance", p)).transpose()?;
        Ok(RunRow { id: r.0.clone(), created_at: r.1, status, spec, legacy_provenance })
    }

    // ---- items, generations, scores ---------------------------------------------------------

    pub fn items(&self, run_id: &str) -> StoreResult<Vec<Item>> {
        Ok(self.records(run_id)?.into_iter().map(|r| r.item).collect())
    }

    pub fn generations(&self, run_id: &str) -> StoreResult<Vec<Generation>> {
        Ok(self.records(run_id)?.into_iter().filter_map(|r| r.generation).collect())
    }

    pub fn scores(&self, run_id: &str) -> StoreResult<Vec<Score>> {
        Ok(self.records(run_id)?.into_iter().filter_map(|r| r.score).collect())
    }

    /// Every item of a run in order, joined with its generation and its score.
    pub fn records(&self, run_id: &str) -> StoreResult<Vec<Record>> {
        self.records_where(run_id, None)
    }

    /// One item of a run with its generation and its score (`None`: no such item).
    pub fn record(&self, run_id: &str, scenario_id: &str) -> StoreResult<Option<Record>> {
        Ok(self.records_where(run_id, Some(scenario_id))?.pop())
    }

    /// At most `limit` items of a run with their generations and scores, in item order, after the
    /// item of order `after` (from the first when `None`): a run read a page at a time.
    pub fn records_page(&self, run_id: &str, after: Option<usize>, limit: usize) -> StoreResult<Vec<Record>> {
        self.records_query(run_id, None, after, Some(limit))
    }

    fn records_where(&self, run_id: &str, scenario_id: Option<&str>) -> StoreResult<Vec<Record>> {
        self.records_query(run_id, scenario_id, None, None)
    }

    fn records_query(
        &self,
        run_id: &str,
        scenario_id: Option<&str>,
        after: Option<usize>,
        limit: Option<usize>,
    ) -> StoreResult<Vec<Record>> {
        let raw: Vec<RawRecord> = self.all(
            "SELECT i.scenario_id, i.task, i.lang, i.ord, i.prompt, i.reference, \
                 g.status, g.text, g.finish_reason, g.input_tokens, g.output_tokens, g.latency_ms, g.attempts, \
                 g.error_kind, g.error_message, g.faults, \
                 s.outcome, s.metrics, s.signature \
                 FROM items i \
                 LEFT JOIN generations g ON g.run_id = i.run_id AND g.scenario_id = i.scenario_id \
                 LEFT JOIN scores s ON s.run_id = i.run_id AND s.scenario_id = i.scenario_id \
                 WHERE i.run_id = ?1 AND (?2 IS NULL OR i.scenario_id = ?2) AND (?3 IS NULL OR i.ord > ?3) \
                 ORDER BY i.ord LIMIT ?4",
            params![run_id, scenario_id, after.map(|a| a as i64), limit.map_or(-1, |l| l as i64)],
            |r| (0..RECORD_COLUMNS.len()).map(|i| r.get::<_, SqlValue>(i)).collect::<Result<_, _>>().map(RawRecord),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter().map(|r| r.decode(&d)).collect()
    }

    /// Writes generations in one transaction. A generated row is never overwritten; a failed row is
    /// replaced only when `replace_failed` (a `--retry-failed` run).
    pub fn put_generations(&mut self, run_id: &str, rows: &[Generation], replace_failed: bool) -> StoreResult<usize> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
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
                let faults: Vec<&str> = g.faults.iter().map(|f| f.as_str()).collect();
                written += stmt
                    .execute(params![
                        run_id,
                        g.scenario_id,
                        g.status.as_str(),
                        g.text,
                        g.finish_reason.as_ref().map(FinishReasonText::text),
                        g.input_tokens.map(|n| n as i64),
                        g.output_tokens.map(|n| n as i64),
                        g.latency_ms,
                        g.attempts as i64,
                        g.error_kind.map(|k| k.as_str()),
                        g.error_message,
                        serde_json::to_string(&faults).expect("fault names serialise"),
                        at
                    ])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(written)
    }

    /// Writes scores in one transaction (replacing earlier scores of the same items).
    pub fn put_scores(&mut self, run_id: &str, rows: &[Score]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO scores (run_id, scenario_id, outcome, metrics, signature) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(e)?;
            for s in rows {
                let metrics = serde_json::to_string(&s.metrics).expect("metrics serialise");
                stmt.execute(params![run_id, s.scenario_id, s.outcome.as_str(), metrics, s.signature]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }
}

/// `FinishReason` as stored.
trait FinishReasonText {
    fn text(&self) -> String;
}

impl FinishReasonText for h2htalk_llm::FinishReason {
    fn text(&self) -> String {
        self.as_str().to_string()
    }
}

type RawRun = (String, String, String, String, Option<String>);

fn raw_run(r: &Row<'_>) -> rusqlite::Result<RawRun> {
    r.try_into()
}

/// One row of the records join, as stored: every column read as whatever SQLite holds, so that a
/// value of the wrong type is decoded (and refused) with its run, item and column named.
struct RawRecord(Vec<SqlValue>);

const RECORD_COLUMNS: [&str; 19] = [
    "items.scenario_id",
    "items.task",
    "items.lang",
    "items.ord",
    "items.prompt",
    "items.reference",
    "generations.status",
    "generations.text",
    "generations.finish_reason",
    "generations.input_tokens",
    "generations.output_tokens",
    "generations.latency_ms",
    "generations.attempts",
    "generations.error_kind",
    "generations.error_message",
    "generations.faults",
    "scores.outcome",
    "scores.metrics",
    "scores.signature",
];

impl RawRecord {
    fn text(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<Option<String>> {
        match &self.0[i] {
            SqlValue::Null => Ok(None),
            SqlValue::Text(t) => Ok(Some(t.clone())),
            other => Err(d.corrupt(Some(id), RECORD_COLUMNS[i], format!("{other:?} is not text"))),
        }
    }

    fn required_text(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<String> {
        self.text(d, id, i)?.ok_or_else(|| d.corrupt(Some(id), RECORD_COLUMNS[i], "is missing (NULL)"))
    }

    fn int(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<Option<u64>> {
        match &self.0[i] {
            SqlValue::Null => Ok(None),
            SqlValue::Integer(n) => d.count(id, RECORD_COLUMNS[i], *n).map(Some),
            other => Err(d.corrupt(Some(id), RECORD_COLUMNS[i], format!("{other:?} is not a whole number"))),
        }
    }

    fn real(&self, d: &Decoder, id: &str, i: usize) -> StoreResult<f64> {
        match &self.0[i] {
            SqlValue::Real(x) => d.finite(id, RECORD_COLUMNS[i], *x),
            SqlValue::Integer(n) => Ok(*n as f64),
            other => Err(d.corrupt(Some(id), RECORD_COLUMNS[i], format!("{other:?} is not a number"))),
        }
    }

    fn decode(self, d: &Decoder) -> StoreResult<Record> {
        let id = match &self.0[0] {
            SqlValue::Text(t) => t.clone(),
            other => return Err(d.corrupt(None, RECORD_COLUMNS[0], format!("{other:?} is not text"))),
        };
        let id = id.as_str();
        let task = self.required_text(d, id, 1)?;
        if task != SAFETY_GROUP && h2htalk_data::Task::from_stem(&task).is_none() {
            return Err(d.corrupt(Some(id), "items.task", format!("`{task}` is not a sub-task")));
        }
        let lang = self.required_text(d, id, 2)?;
        let ord = self.int(d, id, 3)?.ok_or_else(|| d.corrupt(Some(id), "items.ord", "is missing (NULL)"))?;
        let item = Item {
            scenario_id: id.to_string(),
            task,
            lang: d.text(id, "items.lang", &lang, h2htalk_data::suite::Lang::from_code)?,
            ord: ord as usize,
            prompt: d.json(Some(id), "items.prompt", &self.required_text(d, id, 4)?)?,
            reference: self.required_text(d, id, 5)?,
        };
        let generation = match self.text(d, id, 6)? {
            None => None,
            Some(status) => {
                let status = d.text(id, "generations.status", &status, GenerationStatus::parse)?;
                let faults: Vec<String> = d.json(Some(id), "generations.faults", &self.required_text(d, id, 15)?)?;
                let faults = faults
                    .iter()
                    .map(|f| d.text(id, "generations.faults", f, h2htalk_llm::FaultKind::parse))
                    .collect::<StoreResult<_>>()?;
                let text = self.text(d, id, 7)?;
                if status == GenerationStatus::Generated && text.is_none() {
                    return Err(d.corrupt(Some(id), "generations.text", "a generated item without its text"));
                }
                Some(Generation {
                    scenario_id: id.to_string(),
                    status,
                    text,
                    finish_reason: self.text(d, id, 8)?.map(|f| h2htalk_llm::FinishReason::parse(&f)),
                    input_tokens: self.int(d, id, 9)?,
                    output_tokens: self.int(d, id, 10)?,
                    latency_ms: self.real(d, id, 11)?,
                    attempts: self
                        .int(d, id, 12)?
                        .ok_or_else(|| d.corrupt(Some(id), "generations.attempts", "is missing (NULL)"))?
                        as u32,
                    error_kind: d.opt_text(
                        id,
                        "generations.error_kind",
                        self.text(d, id, 13)?,
                        h2htalk_llm::FaultKind::parse,
                    )?,
                    error_message: self.text(d, id, 14)?,
                    faults,
                })
            }
        };
        let score = match self.text(d, id, 16)? {
            None => None,
            Some(outcome) => {
                let outcome = d.text(id, "scores.outcome", &outcome, ScoreOutcome::parse)?;
                let metrics = decode_metrics(d, id, &self.required_text(d, id, 17)?)?;
                if outcome.has_values() && metrics.is_empty() {
                    return Err(d.corrupt(
                        Some(id),
                        "scores.metrics",
                        format!("outcome `{outcome}` without metric values; rescore the run"),
                    ));
                }
                if !outcome.has_values() && !metrics.is_empty() {
                    return Err(d.corrupt(
                        Some(id),
                        "scores.metrics",
                        "a dropped item carries metric values; rescore the run",
                    ));
                }
                Some(Score { scenario_id: id.to_string(), outcome, metrics, signature: self.required_text(d, id, 18)? })
            }
        };
        Ok(Record { item, generation, score })
    }
}
