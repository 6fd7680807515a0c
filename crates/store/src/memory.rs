//! The memory suite's results of a run (`run --memory`): the companion's reply to each probe, in
//! each history mode, with what the rules found in it and, when a judge ran, the judge's verdict
//! (`memory_answers`); and, for the `own` mode, the memories the companion wrote after each session
//! of a user's history (`memory_notes`). Added within schema 3 (created on open when missing; a
//! store without them holds no memory results).

use h2htalk_data::redact::redact;
use h2htalk_data::suite::Lang;
use h2htalk_data::suite::memory::ProbeType;
use rusqlite::params;
use serde::Serialize;

use crate::{Store, StoreResult};

pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS memory_notes (
    run_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session INTEGER NOT NULL,
    answer TEXT,
    memories INTEGER NOT NULL,
    format_error TEXT,
    error TEXT,
    PRIMARY KEY (run_id, user_id, session)
);
CREATE TABLE IF NOT EXISTS memory_answers (
    run_id TEXT NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('given', 'own')),
    probe_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    lang TEXT NOT NULL,
    reply TEXT,
    error TEXT,
    facts_held INTEGER NOT NULL,
    facts_total INTEGER NOT NULL,
    stale_held INTEGER NOT NULL,
    abstained INTEGER NOT NULL,
    invented INTEGER,
    invented_by TEXT CHECK (invented_by IN ('rule', 'judge')),
    judge TEXT,
    judge_score REAL,
    judge_invented_fact TEXT,
    judge_reason TEXT,
    judge_failure TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    latency_ms REAL NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, mode, probe_id)
);
";

text_enum!(
    /// How a memory probe's history reaches the companion.
    MemoryMode {
        /// Every earlier session, dated, as the suite's templates show earlier sessions.
        Given = "given",
        /// The memories the companion wrote itself after each session, with the recollection
        /// prompt, and nothing else of the history.
        Own = "own",
    }
);

text_enum!(
    /// Who decided whether a reply invents a memory.
    InventedBy {
        /// The rules: an abstention probe answered without saying it was never told.
        Rule = "rule",
        /// The judge, reading the whole history.
        Judge = "judge",
    }
);

/// The memories the companion wrote after one session of a user's history (`own` mode).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryNote {
    pub user_id: String,
    /// 1-based, as in the history.
    pub session: usize,
    /// The companion's answer to the recollection prompt (`None`: the call failed).
    pub answer: Option<String>,
    /// How many memories the answer held (0 when it broke the format or said there was none).
    pub memories: usize,
    /// The answer broke the memory format: it gave no memories.
    pub format_error: Option<String>,
    /// The call failed.
    pub error: Option<String>,
}

/// The companion's reply to one probe in one mode, and what was found in it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryAnswer {
    pub mode: MemoryMode,
    pub probe_id: String,
    pub user_id: String,
    pub kind: ProbeType,
    pub lang: Lang,
    /// `None`: the call failed (`error` says why), or in `own` mode a note it needed failed.
    pub reply: Option<String>,
    pub error: Option<String>,
    /// Key facts found in the reply, of how many.
    pub facts_held: usize,
    pub facts_total: usize,
    /// `knowledge_update`: outdated values found in the reply.
    pub stale_held: usize,
    /// The reply says it was never told, or does not remember.
    pub abstained: bool,
    /// The reply asserts a personal fact the history never gave; `None`: not decided (a failed
    /// call, or a probe the rules cannot decide and no judge read).
    pub invented: Option<bool>,
    pub invented_by: Option<InventedBy>,
    /// The judge that read it (`provider:model`), its score (1–10), the invented fact it named,
    /// its reason, or why it gave none.
    pub judge: Option<String>,
    pub judge_score: Option<f64>,
    pub judge_invented_fact: Option<String>,
    pub judge_reason: Option<String>,
    pub judge_failure: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub latency_ms: f64,
    pub created_at: String,
}

impl MemoryNote {
    /// Masks personal data ([`h2htalk_data::redact`]) in the note's texts (`--redact`).
    pub fn redact_texts(&mut self) {
        for text in [&mut self.answer, &mut self.format_error, &mut self.error] {
            *text = text.as_deref().map(redact);
        }
    }
}

impl MemoryAnswer {
    /// Masks personal data ([`h2htalk_data::redact`]) in every text of the reply's row: the reply,
    /// its error and the judge's reason, invented fact and failure (`--redact`).
    pub fn redact_texts(&mut self) {
        let texts = [
            &mut self.reply,
            &mut self.error,
            &mut self.judge_reason,
            &mut self.judge_invented_fact,
            &mut self.judge_failure,
        ];
        for text in texts {
            *text = text.as_deref().map(redact);
        }
    }

    /// Correct by the rules: an abstention probe abstained; any other holds every key fact.
    /// `None` when the call failed.
    pub fn correct(&self) -> Option<bool> {
        self.reply.as_ref()?;
        Some(match self.kind {
            ProbeType::Abstention => self.abstained,
            _ => self.facts_total > 0 && self.facts_held == self.facts_total,
        })
    }

    /// A knowledge update answered with an outdated value and without the latest one.
    pub fn stale(&self) -> bool {
        self.kind == ProbeType::KnowledgeUpdate && self.stale_held > 0 && self.facts_held < self.facts_total
    }
}

type AnswerRow = (
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    (i64, i64, i64, bool, Option<bool>, Option<String>),
    (Option<String>, Option<f64>, Option<String>, Option<String>, Option<String>),
    (Option<i64>, Option<i64>, f64, String),
);

impl Store {
    /// The notes already written for `run_id`, in user and session order.
    pub fn memory_notes(&self, run_id: &str) -> StoreResult<Vec<MemoryNote>> {
        if !self.has_table("memory_notes")? {
            return Ok(vec![]);
        }
        let rows: Vec<(String, i64, Option<String>, i64, Option<String>, Option<String>)> = self.all(
            "SELECT user_id, session, answer, memories, format_error, error FROM memory_notes WHERE run_id = ?1 \
             ORDER BY user_id, session",
            [run_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        rows.into_iter()
            .map(|(user_id, session, answer, memories, format_error, error)| {
                let item = format!("memory note {user_id}/{session}");
                Ok(MemoryNote {
                    session: d.count(&item, "memory_notes.session", session)? as usize,
                    memories: d.count(&item, "memory_notes.memories", memories)? as usize,
                    user_id,
                    answer,
                    format_error,
                    error,
                })
            })
            .collect()
    }

    /// Stores one note (replacing a failed one of the same session).
    pub fn put_memory_note(&mut self, run_id: &str, note: &MemoryNote) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO memory_notes (run_id, user_id, session, answer, memories, format_error, error) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    run_id,
                    note.user_id,
                    note.session as i64,
                    note.answer,
                    note.memories as i64,
                    note.format_error,
                    note.error
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Stores one reply (replacing an earlier one of the same probe and mode).
    pub fn put_memory_answer(&mut self, run_id: &str, a: &MemoryAnswer) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO memory_answers (run_id, mode, probe_id, user_id, kind, lang, reply, error, \
                 facts_held, facts_total, stale_held, abstained, invented, invented_by, judge, judge_score, \
                 judge_invented_fact, judge_reason, judge_failure, input_tokens, output_tokens, latency_ms, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, \
                 ?21, ?22, ?23)",
                params![
                    run_id,
                    a.mode.as_str(),
                    a.probe_id,
                    a.user_id,
                    a.kind.as_str(),
                    a.lang.code(),
                    a.reply,
                    a.error,
                    a.facts_held as i64,
                    a.facts_total as i64,
                    a.stale_held as i64,
                    a.abstained,
                    a.invented,
                    a.invented_by.map(InventedBy::as_str),
                    a.judge,
                    a.judge_score,
                    a.judge_invented_fact,
                    a.judge_reason,
                    a.judge_failure,
                    a.input_tokens.map(|n| n as i64),
                    a.output_tokens.map(|n| n as i64),
                    a.latency_ms,
                    a.created_at
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// How many memory-suite replies each run holds (runs without any are left out).
    pub fn memory_counts(&self) -> StoreResult<std::collections::BTreeMap<String, usize>> {
        self.rows_per_run("memory_answers")
    }

    /// The replies of `run_id` in mode, then probe order of the suite (its ids sort in part and
    /// line order: `mem-<lang>-NNN-K`).
    pub fn memory_answers(&self, run_id: &str) -> StoreResult<Vec<MemoryAnswer>> {
        if !self.has_table("memory_answers")? {
            return Ok(vec![]);
        }
        let rows: Vec<AnswerRow> = self.all(
            "SELECT mode, probe_id, user_id, kind, lang, reply, error, facts_held, facts_total, stale_held, abstained, \
             invented, invented_by, judge, judge_score, judge_invented_fact, judge_reason, judge_failure, \
             input_tokens, output_tokens, latency_ms, created_at FROM memory_answers WHERE run_id = ?1 \
             ORDER BY mode, probe_id",
            [run_id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    (r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?, r.get(11)?, r.get(12)?),
                    (r.get(13)?, r.get(14)?, r.get(15)?, r.get(16)?, r.get(17)?),
                    (r.get(18)?, r.get(19)?, r.get(20)?, r.get(21)?),
                ))
            },
        )?;
        let d = self.decoder(run_id);
        rows.into_iter()
            .map(|(mode, probe_id, user_id, kind, lang, reply, error, counts, judged, usage)| {
                let item = format!("memory probe {probe_id}");
                let (held, total, stale, abstained, invented, invented_by) = counts;
                let (judge, judge_score, judge_invented_fact, judge_reason, judge_failure) = judged;
                let (input_tokens, output_tokens, latency_ms, created_at) = usage;
                let tokens = |column: &str, raw: Option<i64>| raw.map(|n| d.count(&item, column, n)).transpose();
                Ok(MemoryAnswer {
                    mode: d.text(&item, "memory_answers.mode", &mode, MemoryMode::parse)?,
                    kind: d.text(&item, "memory_answers.kind", &kind, ProbeType::parse)?,
                    lang: d.text(&item, "memory_answers.lang", &lang, Lang::from_code)?,
                    facts_held: d.count(&item, "memory_answers.facts_held", held)? as usize,
                    facts_total: d.count(&item, "memory_answers.facts_total", total)? as usize,
                    stale_held: d.count(&item, "memory_answers.stale_held", stale)? as usize,
                    abstained,
                    invented,
                    invented_by: d.opt_text(&item, "memory_answers.invented_by", invented_by, InventedBy::parse)?,
                    judge,
                    judge_score: judge_score.map(|s| d.finite(&item, "memory_answers.judge_score", s)).transpose()?,
                    judge_invented_fact,
                    judge_reason,
                    judge_failure,
                    input_tokens: tokens("memory_answers.input_tokens", input_tokens)?,
                    output_tokens: tokens("memory_answers.output_tokens", output_tokens)?,
                    latency_ms: d.finite(&item, "memory_answers.latency_ms", latency_ms)?,
                    created_at,
                    probe_id,
                    user_id,
                    reply,
                    error,
                })
            })
            .collect()
    }
}
