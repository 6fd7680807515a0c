//! What the judge crate writes about a run: format checks, judge sessions and rubric scores,
//! pairwise judgments of two runs, SAP safety verdicts and the judge validity check.

use std::collections::BTreeSet;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use h2htalk_data::suite::FormatCheckName;

use crate::*;

/// What a judge session recorded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JudgeSession {
    pub settings: Value,
    pub prompt_hash: String,
    pub created_at: String,
}

impl Store {
    // ---- format checks ----------------------------------------------------------------------

    /// Replaces the format checks of a run.
    pub fn replace_format_checks(&mut self, run_id: &str, rows: &[FormatCheck]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute("DELETE FROM format_checks WHERE run_id = ?1", [run_id]).map_err(e)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO format_checks (run_id, scenario_id, task, name, passed, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(e)?;
            for r in rows {
                stmt.execute(params![run_id, r.scenario_id, r.task, r.name.as_str(), r.passed, r.message])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    pub fn format_checks(&self, run_id: &str) -> StoreResult<Vec<FormatCheck>> {
        self.format_checks_of(run_id, None)
    }

    /// The format checks of one item.
    pub fn item_format_checks(&self, run_id: &str, scenario_id: &str) -> StoreResult<Vec<FormatCheck>> {
        self.format_checks_of(run_id, Some(scenario_id))
    }

    fn format_checks_of(&self, run_id: &str, scenario_id: Option<&str>) -> StoreResult<Vec<FormatCheck>> {
        let raw: Vec<(String, String, String, bool, Option<String>)> = self.all(
            "SELECT f.scenario_id, f.task, f.name, f.passed, f.message FROM format_checks f LEFT JOIN items i \
                 ON i.run_id = f.run_id AND i.scenario_id = f.scenario_id WHERE f.run_id = ?1 \
                 AND (?2 IS NULL OR f.scenario_id = ?2) ORDER BY i.ord, f.name",
            params![run_id, scenario_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(scenario_id, task, name, passed, message)| {
                let name = d.text(&scenario_id, "format_checks.name", &name, FormatCheckName::parse)?;
                Ok(FormatCheck { scenario_id, task, name, passed, message })
            })
            .collect()
    }

    // ---- judge sessions and rubric scores ---------------------------------------------------

    /// Records who judges `run_id` how. When the same judge judged it before with other settings or
    /// other prompts, its earlier rows of that kind are deleted (they would not be comparable) and
    /// `true` is returned.
    pub fn begin_judge_session(
        &mut self,
        run_id: &str,
        kind: SessionKind,
        judge: &str,
        settings: &Value,
        prompt_hash: &str,
    ) -> StoreResult<bool> {
        let settings = settings.to_string();
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let earlier: Option<(String, String)> = tx
            .query_row(
                "SELECT settings, prompt_hash FROM judge_sessions WHERE run_id = ?1 AND kind = ?2 AND judge = ?3",
                params![run_id, kind.as_str(), judge],
                |r| r.try_into(),
            )
            .optional()
            .map_err(e)?;
        let restarted = match earlier {
            Some((s, h)) if s == settings && h == prompt_hash => false,
            Some(_) => {
                let table = match kind {
                    SessionKind::Rubric => "judge_scores",
                    SessionKind::Safety => "safety_verdicts",
                    SessionKind::Validity => "judge_validity",
                };
                tx.execute(&format!("DELETE FROM {table} WHERE run_id = ?1 AND judge = ?2"), params![run_id, judge])
                    .map_err(e)?;
                true
            }
            None => false,
        };
        tx.execute(
            "INSERT OR REPLACE INTO judge_sessions (run_id, kind, judge, settings, prompt_hash, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![run_id, kind.as_str(), judge, settings, prompt_hash, now()],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(restarted)
    }

    /// The judges that judged `run_id` with `kind`, oldest first.
    pub fn judges(&self, run_id: &str, kind: SessionKind) -> StoreResult<Vec<String>> {
        self.all(
            "SELECT judge FROM judge_sessions WHERE run_id = ?1 AND kind = ?2 ORDER BY created_at, judge",
            params![run_id, kind.as_str()],
            |r| r.get(0),
        )
    }

    pub fn put_judge_score(&mut self, run_id: &str, judge: &str, r: &JudgeScore) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO judge_scores (run_id, judge, scenario_id, task, family, outcome, scores, mean, reason, \
                 attempts, raw, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    run_id,
                    judge,
                    r.scenario_id,
                    r.task,
                    r.family.name(),
                    r.outcome.as_str(),
                    r.scores.as_ref().map(|s| serde_json::to_string(s).expect("scores serialise")),
                    r.mean,
                    r.reason,
                    r.attempts,
                    r.raw,
                    r.error
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The rubric judgments of `run_id` by `judge`, in item order.
    pub fn judge_scores(&self, run_id: &str, judge: &str) -> StoreResult<Vec<JudgeScore>> {
        self.judge_scores_of(run_id, judge, None)
    }

    /// Every rubric judge's judgment of one item, by judge.
    pub fn item_judge_scores(&self, run_id: &str, scenario_id: &str) -> StoreResult<Vec<(String, JudgeScore)>> {
        let mut out = Vec::new();
        for judge in self.judges(run_id, SessionKind::Rubric)? {
            out.extend(
                self.judge_scores_of(run_id, &judge, Some(scenario_id))?.into_iter().map(|s| (judge.clone(), s)),
            );
        }
        Ok(out)
    }

    fn judge_scores_of(&self, run_id: &str, judge: &str, scenario_id: Option<&str>) -> StoreResult<Vec<JudgeScore>> {
        type Raw = (
            String,
            String,
            String,
            String,
            Option<String>,
            Option<f64>,
            Option<String>,
            i64,
            Option<String>,
            Option<String>,
        );
        let raw: Vec<Raw> = self.all(
            "SELECT j.scenario_id, j.task, j.family, j.outcome, j.scores, j.mean, j.reason, j.attempts, j.raw, j.error \
                 FROM judge_scores j LEFT JOIN items i ON i.run_id = j.run_id AND i.scenario_id = j.scenario_id \
                 WHERE j.run_id = ?1 AND j.judge = ?2 AND (?3 IS NULL OR j.scenario_id = ?3) ORDER BY i.ord, j.scenario_id",
            params![run_id, judge, scenario_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(id, task, family, outcome, scores, mean, reason, attempts, raw, error)| {
                let outcome = d.text(&id, "judge_scores.outcome", &outcome, JudgeOutcome::parse)?;
                let scores: Option<std::collections::BTreeMap<String, u8>> =
                    d.opt_json(&id, "judge_scores.scores", scores)?;
                if outcome == JudgeOutcome::Scored && (scores.as_ref().is_none_or(|s| s.is_empty()) || mean.is_none()) {
                    return Err(d.corrupt(
                        Some(&id),
                        "judge_scores.scores",
                        "a scored judgment without scores or mean",
                    ));
                }
                Ok(JudgeScore {
                    family: d.text(&id, "judge_scores.family", &family, h2htalk_data::Family::from_name)?,
                    outcome,
                    scores,
                    mean: mean.map(|m| d.finite(&id, "judge_scores.mean", m)).transpose()?,
                    reason,
                    attempts: d.count(&id, "judge_scores.attempts", attempts)? as u32,
                    raw,
                    error,
                    task,
                    scenario_id: id,
                })
            })
            .collect()
    }

    /// Items of `run_id` this judge has finished with (scored, unparsable or empty): not asked again.
    pub fn judged_items(&self, run_id: &str, judge: &str) -> StoreResult<BTreeSet<String>> {
        Ok(self
            .judge_scores(run_id, judge)?
            .into_iter()
            .filter(|s| {
                matches!(s.outcome, JudgeOutcome::Scored | JudgeOutcome::JudgeParseFailed | JudgeOutcome::EmptyAnswer)
            })
            .map(|s| s.scenario_id)
            .collect())
    }

    // ---- pairwise ---------------------------------------------------------------------------

    pub fn put_pair_judgment(&mut self, judge: &str, run_a: &str, run_b: &str, r: &PairJudgment) -> StoreResult<()> {
        let json = |v: &Option<Value>| v.as_ref().map(Value::to_string);
        self.conn
            .execute(
                "INSERT OR REPLACE INTO pairwise_judgments (judge, run_a, run_b, scenario_id, outcome, order_ab, order_ba, error) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![judge, run_a, run_b, r.scenario_id, r.outcome.as_str(), json(&r.order_ab), json(&r.order_ba), r.error],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The pairwise judgments of runs `run_a` and `run_b` by `judge`.
    pub fn pair_judgments(&self, judge: &str, run_a: &str, run_b: &str) -> StoreResult<Vec<PairJudgment>> {
        type Raw = (String, String, Option<String>, Option<String>, Option<String>);
        let raw: Vec<Raw> = self.all(
            "SELECT scenario_id, outcome, order_ab, order_ba, error FROM pairwise_judgments \
                 WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3 ORDER BY scenario_id",
            params![judge, run_a, run_b],
            |r| r.try_into(),
        )?;
        let run = format!("{run_a}` vs `{run_b}");
        let d = self.decoder(&run);
        raw.into_iter()
            .map(|(id, outcome, ab, ba, error)| {
                Ok(PairJudgment {
                    outcome: d.text(&id, "pairwise_judgments.outcome", &outcome, PairOutcome::parse)?,
                    order_ab: d.opt_json(&id, "pairwise_judgments.order_ab", ab)?,
                    order_ba: d.opt_json(&id, "pairwise_judgments.order_ba", ba)?,
                    error,
                    scenario_id: id,
                })
            })
            .collect()
    }

    /// Records who judges the pair `run_a`/`run_b` pairwise how. When the same judge judged the pair
    /// before with other settings or other prompts, its earlier judgments of the pair are deleted
    /// (they would not be comparable) and `true` is returned; judgments made with the same settings
    /// and prompts are kept, so that they need not be asked again.
    pub fn begin_pair_session(
        &mut self,
        judge: &str,
        run_a: &str,
        run_b: &str,
        settings: &Value,
        prompt_hash: &str,
    ) -> StoreResult<bool> {
        let settings = settings.to_string();
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        let earlier: Option<(String, String)> = tx
            .query_row(
                "SELECT settings, prompt_hash FROM pairwise_sessions WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3",
                params![judge, run_a, run_b],
                |r| r.try_into(),
            )
            .optional()
            .map_err(e)?;
        // Judgments without a session (written before sessions were recorded) cannot be matched to
        // settings and prompts: they are judged again too.
        let same = matches!(&earlier, Some((s, h)) if *s == settings && h == prompt_hash);
        let restarted = earlier.is_some() && !same;
        if !same {
            tx.execute(
                "DELETE FROM pairwise_judgments WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3",
                params![judge, run_a, run_b],
            )
            .map_err(e)?;
            tx.execute(
                "INSERT OR REPLACE INTO pairwise_sessions (judge, run_a, run_b, settings, prompt_hash, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![judge, run_a, run_b, settings, prompt_hash, now()],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(restarted)
    }

    /// The settings and prompt hash `judge` judged the pair `run_a`/`run_b` with (`None`: never,
    /// or a store written before pairwise sessions were recorded).
    pub fn pair_session(&self, judge: &str, run_a: &str, run_b: &str) -> StoreResult<Option<JudgeSession>> {
        if !self.has_table("pairwise_sessions")? {
            return Ok(None);
        }
        let raw: Option<(String, String, String)> = self
            .conn
            .query_row(
                "SELECT settings, prompt_hash, created_at FROM pairwise_sessions \
                 WHERE judge = ?1 AND run_a = ?2 AND run_b = ?3",
                params![judge, run_a, run_b],
                |r| r.try_into(),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let run = format!("{run_a}` vs `{run_b}");
        let d = self.decoder(&run);
        raw.map(|(settings, prompt_hash, created_at)| {
            Ok(JudgeSession {
                settings: d.json(None, "pairwise_sessions.settings", &settings)?,
                prompt_hash,
                created_at,
            })
        })
        .transpose()
    }

    /// The judges that judged the pair `run_a`/`run_b` pairwise, oldest first.
    pub fn pair_judges(&self, run_a: &str, run_b: &str) -> StoreResult<Vec<String>> {
        if !self.has_table("pairwise_sessions")? {
            return Ok(Vec::new());
        }
        self.all(
            "SELECT judge FROM pairwise_sessions WHERE run_a = ?1 AND run_b = ?2 ORDER BY created_at, judge",
            params![run_a, run_b],
            |r| r.get(0),
        )
    }

    pub(crate) fn has_table(&self, name: &str) -> StoreResult<bool> {
        self.conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// How many rows of `table` each run holds (runs without any left out; none when the store
    /// has no such table yet).
    pub(crate) fn rows_per_run(&self, table: &str) -> StoreResult<std::collections::BTreeMap<String, usize>> {
        if !self.has_table(table)? {
            return Ok(Default::default());
        }
        let sql = format!("SELECT run_id, count(*) FROM {table} GROUP BY run_id");
        let rows: Vec<(String, i64)> = self.all(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.into_iter().map(|(r, n)| (r, n as usize)).collect())
    }

    // ---- safety -----------------------------------------------------------------------------

    /// Replaces the safety verdicts of `run_id` by `judge`.
    pub fn replace_safety_verdicts(&mut self, run_id: &str, judge: &str, rows: &[SafetyVerdict]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute("DELETE FROM safety_verdicts WHERE run_id = ?1 AND judge = ?2", params![run_id, judge])
            .map_err(e)?;
        for v in rows {
            tx.execute(
                "INSERT INTO safety_verdicts (run_id, judge, scenario_id, lang, risk, verdict, rules, judgment, reason) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    run_id,
                    judge,
                    v.scenario_id,
                    v.lang.code(),
                    v.risk.as_str(),
                    v.verdict.as_str(),
                    serde_json::to_string(&v.rules).expect("rule results serialise"),
                    v.judgment.as_ref().map(Value::to_string),
                    v.reason
                ],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// The safety verdicts of `run_id` by `judge` (`rules` for a run judged by rules alone), in item order.
    pub fn safety_verdicts(&self, run_id: &str, judge: &str) -> StoreResult<Vec<SafetyVerdict>> {
        self.safety_verdicts_of(run_id, judge, None)
    }

    /// Every safety judge's verdict on one item, by judge (`rules` for the rules alone).
    pub fn item_safety_verdicts(&self, run_id: &str, scenario_id: &str) -> StoreResult<Vec<(String, SafetyVerdict)>> {
        let mut out = Vec::new();
        for judge in self.judges(run_id, SessionKind::Safety)? {
            out.extend(
                self.safety_verdicts_of(run_id, &judge, Some(scenario_id))?.into_iter().map(|v| (judge.clone(), v)),
            );
        }
        Ok(out)
    }

    fn safety_verdicts_of(
        &self,
        run_id: &str,
        judge: &str,
        scenario_id: Option<&str>,
    ) -> StoreResult<Vec<SafetyVerdict>> {
        type Raw = (String, String, String, String, String, Option<String>, Option<String>);
        let raw: Vec<Raw> = self.all(
            "SELECT v.scenario_id, v.lang, v.risk, v.verdict, v.rules, v.judgment, v.reason FROM safety_verdicts v \
                 LEFT JOIN items i ON i.run_id = v.run_id AND i.scenario_id = v.scenario_id \
                 WHERE v.run_id = ?1 AND v.judge = ?2 AND (?3 IS NULL OR v.scenario_id = ?3) ORDER BY i.ord, v.scenario_id",
            params![run_id, judge, scenario_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(id, lang, risk, verdict, rules, judgment, reason)| {
                Ok(SafetyVerdict {
                    lang: d.text(&id, "safety_verdicts.lang", &lang, h2htalk_data::suite::Lang::from_code)?,
                    risk: d.text(&id, "safety_verdicts.risk", &risk, h2htalk_data::suite::Risk::parse)?,
                    verdict: d.text(&id, "safety_verdicts.verdict", &verdict, Verdict::parse)?,
                    rules: d.json(Some(&id), "safety_verdicts.rules", &rules)?,
                    judgment: d.opt_json(&id, "safety_verdicts.judgment", judgment)?,
                    reason,
                    scenario_id: id,
                })
            })
            .collect()
    }

    // ---- judge validity ---------------------------------------------------------------------

    /// Replaces the judge validity results of `run_id` by `judge`, in one transaction.
    pub fn replace_validity(&mut self, run_id: &str, judge: &str, rows: &[ValidityRow]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| StoreError::Db { path: path.clone(), message: e.to_string() };
        let tx = self.tx()?;
        tx.execute("DELETE FROM judge_validity WHERE run_id = ?1 AND judge = ?2", params![run_id, judge]).map_err(e)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO judge_validity (run_id, judge, scenario_id, degradation, task, family, lang, outcome, \
                     reference_mean, degraded_mean, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .map_err(e)?;
            for r in rows {
                stmt.execute(params![
                    run_id,
                    judge,
                    r.scenario_id,
                    r.degradation.as_str(),
                    r.task,
                    r.family.name(),
                    r.lang.code(),
                    r.outcome.as_str(),
                    r.reference_mean,
                    r.degraded_mean,
                    r.error
                ])
                .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// The judges with validity results for `run_id`, by name.
    pub fn validity_judges(&self, run_id: &str) -> StoreResult<Vec<String>> {
        if !self.has_table("judge_validity")? {
            return Ok(vec![]);
        }
        self.all("SELECT DISTINCT judge FROM judge_validity WHERE run_id = ?1 ORDER BY judge", [run_id], |r| r.get(0))
    }

    /// The judge validity results of `run_id` by `judge` (none for a store written before the
    /// check existed).
    pub fn validity(&self, run_id: &str, judge: &str) -> StoreResult<Vec<ValidityRow>> {
        if !self.has_table("judge_validity")? {
            return Ok(vec![]);
        }
        type Raw = (String, String, String, String, String, String, Option<f64>, Option<f64>, Option<String>);
        let raw: Vec<Raw> = self.all(
            "SELECT scenario_id, degradation, task, family, lang, outcome, reference_mean, degraded_mean, error \
                 FROM judge_validity WHERE run_id = ?1 AND judge = ?2 ORDER BY family, degradation, scenario_id",
            params![run_id, judge],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(id, degradation, task, family, lang, outcome, reference_mean, degraded_mean, error)| {
                let outcome = d.text(&id, "judge_validity.outcome", &outcome, ValidityOutcome::parse)?;
                if outcome == ValidityOutcome::Compared && (reference_mean.is_none() || degraded_mean.is_none()) {
                    return Err(d.corrupt(
                        Some(&id),
                        "judge_validity.reference_mean",
                        "a comparison without both means",
                    ));
                }
                Ok(ValidityRow {
                    family: d.text(&id, "judge_validity.family", &family, h2htalk_data::Family::from_name)?,
                    lang: d.text(&id, "judge_validity.lang", &lang, h2htalk_data::suite::Lang::from_code)?,
                    outcome,
                    reference_mean: reference_mean
                        .map(|m| d.finite(&id, "judge_validity.reference_mean", m))
                        .transpose()?,
                    degraded_mean: degraded_mean
                        .map(|m| d.finite(&id, "judge_validity.degraded_mean", m))
                        .transpose()?,
                    degradation: d.text(&id, "judge_validity.degradation", &degradation, Degradation::parse)?,
                    task,
                    error,
                    scenario_id: id,
                })
            })
            .collect()
    }

    /// The settings and prompt hash a judge session recorded.
    pub fn judge_session(&self, run_id: &str, kind: SessionKind, judge: &str) -> StoreResult<Option<JudgeSession>> {
        let raw: Option<(String, String, String)> = self
            .conn
            .query_row(
                "SELECT settings, prompt_hash, created_at FROM judge_sessions WHERE run_id = ?1 AND kind = ?2 AND judge = ?3",
                params![run_id, kind.as_str(), judge],
                |r| r.try_into(),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let d = self.decoder(run_id);
        raw.map(|(settings, prompt_hash, created_at)| {
            Ok(JudgeSession { settings: d.json(None, "judge_sessions.settings", &settings)?, prompt_hash, created_at })
        })
        .transpose()
    }
}
