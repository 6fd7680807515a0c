//! Simulated multi-session conversations as typed rows: one `simulations` row per conversation
//! (how it ended, the needs' outcome, the counts), its facts (`simulation_facts`: distance,
//! asked, recalled), its sessions (`simulation_sessions`: the memories shown, the memory answer)
//! and every turn (`simulation_turns`: what the user said, the state they reported, the companion's
//! reply). The judge crate writes them; reports and viewers read them; no one decodes another
//! crate's JSON.

use h2htalk_data::SapMode;
use h2htalk_data::suite::Memory;
use h2htalk_data::suite::profiles::Distance;
use h2htalk_llm::GenerationSettings;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use crate::rows::SimulationOutcome;
use crate::{Decoder, Store, StoreError, StoreResult};

text_enum!(
    /// Whether the judge decided if the user's needs were met, and if not, why not.
    NeedsOutcome {
        Judged = "judged",
        /// No judge was given.
        NoJudge = "no_judge",
        /// The conversation stopped before its end.
        NotReached = "not_reached",
        JudgeParseFailed = "judge_parse_failed",
        JudgeFailed = "judge_failed",
    }
);

/// How a simulated conversation was run (not recorded by the first releases: `None` there).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulationSettings {
    /// The simulated user's settings, with this conversation's seed.
    pub simulator: GenerationSettings,
    /// The model under test's settings as the companion.
    pub companion: GenerationSettings,
    pub sap: SapMode,
    /// The hash of the simulator's texts (the suite's judge texts).
    pub prompt_hash: String,
}

/// One fact the simulated user told, and whether the companion recalled it when asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulatedFact {
    /// The fact's id in the profile.
    pub id: String,
    /// `None` for simulations stored before facts recorded their distance.
    pub distance: Option<Distance>,
    /// Whether the conversation reached the question.
    pub asked: bool,
    /// Whether the companion's answer to the question held an answer keyword.
    pub recalled: Option<bool>,
    /// Whether the memories shown in that session held an answer keyword (`None` for a
    /// same-session fact: it is in the conversation, not in the memories).
    pub in_memory: Option<bool>,
}

/// One turn of a simulated session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulatedTurn {
    /// What the simulated user said.
    pub user: String,
    /// The user's emotional state after the companion's previous reply (1 very bad, 10 very good).
    pub state: u8,
    /// The companion's reply (`None` when its request failed).
    pub companion: Option<String>,
    /// Why the companion's reply broke role, if it did.
    pub companion_role_break: Option<String>,
}

/// One session: its turns and the memories the companion wrote after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulatedSession {
    /// From 1.
    pub session: usize,
    pub turns: Vec<SimulatedTurn>,
    /// The memories shown to the companion in this session.
    pub memories_shown: Vec<Memory>,
    /// The companion's memory answer after the session (none after the last).
    pub memory_answer: Option<String>,
    /// Why the memory answer could not be used (nothing from this session is carried over).
    pub memory_error: Option<String>,
}

/// One simulated multi-session conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Simulation {
    pub idx: usize,
    pub profile: String,
    pub seed: u64,
    pub companion: String,
    pub simulator: String,
    pub judge: Option<String>,
    pub outcome: SimulationOutcome,
    pub error: Option<String>,
    pub created_at: String,
    pub settings: Option<SimulationSettings>,
    pub facts: Vec<SimulatedFact>,
    pub needs: NeedsOutcome,
    pub hidden_need_met: Option<bool>,
    pub changed_need_met: Option<bool>,
    pub needs_reason: Option<String>,
    /// Sessions whose memory answer broke the format.
    pub memory_format_failures: usize,
    /// Simulated user turns rejected as role breaks and retried (`None`: not recorded by the first
    /// releases).
    pub simulator_role_breaks: Option<usize>,
    /// Companion replies that broke role (`None`: not recorded by the first releases).
    pub companion_role_breaks: Option<usize>,
    pub sessions: Vec<SimulatedSession>,
}

impl Simulation {
    /// Every state the simulated user reported, in order.
    pub fn states(&self) -> Vec<u8> {
        self.sessions.iter().flat_map(|s| s.turns.iter().map(|t| t.state)).collect()
    }

    /// The last reported state minus the first; `None` without states.
    pub fn state_change(&self) -> Option<i32> {
        let states = self.states();
        states.first().zip(states.last()).map(|(a, b)| i32::from(*b) - i32::from(*a))
    }
}

pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS simulations (
    run_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    profile TEXT NOT NULL,
    seed INTEGER NOT NULL,
    companion TEXT NOT NULL,
    simulator TEXT NOT NULL,
    judge TEXT,
    outcome TEXT NOT NULL CHECK (outcome IN ('completed', 'simulator_parse_failed', 'simulator_failed', 'companion_failed')),
    error TEXT,
    created_at TEXT NOT NULL,
    settings TEXT,
    needs_outcome TEXT NOT NULL CHECK (needs_outcome IN ('judged', 'no_judge', 'not_reached', 'judge_parse_failed', 'judge_failed')),
    hidden_need_met INTEGER,
    changed_need_met INTEGER,
    needs_reason TEXT,
    memory_format_failures INTEGER NOT NULL,
    simulator_role_breaks INTEGER,
    companion_role_breaks INTEGER,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS simulation_facts (
    run_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    fact TEXT NOT NULL,
    distance TEXT CHECK (distance IS NULL OR distance IN ('same_session', 'next_session', 'three_sessions')),
    asked INTEGER NOT NULL,
    recalled INTEGER,
    in_memory INTEGER,
    PRIMARY KEY (run_id, idx, ord)
);
CREATE TABLE IF NOT EXISTS simulation_sessions (
    run_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    session INTEGER NOT NULL,
    memories_shown TEXT NOT NULL,
    memory_answer TEXT,
    memory_error TEXT,
    PRIMARY KEY (run_id, idx, session)
);
CREATE TABLE IF NOT EXISTS simulation_turns (
    run_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    session INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    user_text TEXT NOT NULL,
    state INTEGER NOT NULL,
    companion TEXT,
    companion_role_break TEXT,
    PRIMARY KEY (run_id, idx, session, turn)
);
";

/// Writes one simulation with its facts, sessions and turns (replacing one of the same index).
pub(crate) fn insert(conn: &Connection, run_id: &str, s: &Simulation) -> rusqlite::Result<()> {
    let idx = s.idx as i64;
    for table in ["simulation_facts", "simulation_sessions", "simulation_turns"] {
        conn.execute(&format!("DELETE FROM {table} WHERE run_id = ?1 AND idx = ?2"), params![run_id, idx])?;
    }
    let settings = s.settings.as_ref().map(|x| serde_json::to_string(x).expect("settings serialise"));
    conn.execute(
        "INSERT OR REPLACE INTO simulations (run_id, idx, profile, seed, companion, simulator, judge, outcome, error, \
         created_at, settings, needs_outcome, hidden_need_met, changed_need_met, needs_reason, memory_format_failures, \
         simulator_role_breaks, companion_role_breaks) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            run_id,
            idx,
            s.profile,
            s.seed as i64,
            s.companion,
            s.simulator,
            s.judge,
            s.outcome.as_str(),
            s.error,
            s.created_at,
            settings,
            s.needs.as_str(),
            s.hidden_need_met,
            s.changed_need_met,
            s.needs_reason,
            s.memory_format_failures as i64,
            s.simulator_role_breaks.map(|n| n as i64),
            s.companion_role_breaks.map(|n| n as i64),
        ],
    )?;
    for (ord, f) in s.facts.iter().enumerate() {
        conn.execute(
            "INSERT INTO simulation_facts (run_id, idx, ord, fact, distance, asked, recalled, in_memory) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![run_id, idx, ord as i64, f.id, f.distance.map(Distance::as_str), f.asked, f.recalled, f.in_memory],
        )?;
    }
    for session in &s.sessions {
        let memories = serde_json::to_string(&session.memories_shown).expect("memories serialise");
        conn.execute(
            "INSERT INTO simulation_sessions (run_id, idx, session, memories_shown, memory_answer, memory_error) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![run_id, idx, session.session as i64, memories, session.memory_answer, session.memory_error],
        )?;
        for (t, turn) in session.turns.iter().enumerate() {
            conn.execute(
                "INSERT INTO simulation_turns (run_id, idx, session, turn, user_text, state, companion, \
                 companion_role_break) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    run_id,
                    idx,
                    session.session as i64,
                    t as i64 + 1,
                    turn.user,
                    i64::from(turn.state),
                    turn.companion,
                    turn.companion_role_break
                ],
            )?;
        }
    }
    Ok(())
}

type MainRow = (
    i64,
    String,
    i64,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    String,
    Option<String>,
    String,
    Option<bool>,
    Option<bool>,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
);

fn state_of(d: &Decoder, item: &str, raw: i64) -> StoreResult<u8> {
    u8::try_from(raw)
        .ok()
        .filter(|s| (1..=10).contains(s))
        .ok_or_else(|| d.corrupt(Some(item), "simulation_turns.state", format!("{raw} is not a state from 1 to 10")))
}

impl Store {
    /// Deletes the simulations of a run (a new simulation replaces them).
    pub fn clear_simulations(&self, run_id: &str) -> StoreResult<()> {
        for table in ["simulations", "simulation_facts", "simulation_sessions", "simulation_turns"] {
            self.conn.execute(&format!("DELETE FROM {table} WHERE run_id = ?1"), [run_id]).map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Stores one simulation, in one transaction.
    pub fn put_simulation(&mut self, run_id: &str, s: &Simulation) -> StoreResult<()> {
        let path = self.path.clone();
        let tx = self.tx()?;
        insert(&tx, run_id, s).and_then(|()| tx.commit()).map_err(|e| StoreError::Db { path, message: e.to_string() })
    }

    /// How many simulations each run holds (runs without any are left out).
    pub fn simulation_counts(&self) -> StoreResult<std::collections::BTreeMap<String, usize>> {
        self.rows_per_run("simulations")
    }

    /// The simulations of a run in index order, with their facts, sessions and turns.
    pub fn simulations(&self, run_id: &str) -> StoreResult<Vec<Simulation>> {
        let main: Vec<MainRow> = self.all(
            "SELECT idx, profile, seed, companion, simulator, judge, outcome, error, created_at, settings, needs_outcome, \
             hidden_need_met, changed_need_met, needs_reason, memory_format_failures, simulator_role_breaks, \
             companion_role_breaks FROM simulations WHERE run_id = ?1 ORDER BY idx",
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
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                    r.get(13)?,
                    r.get(14)?,
                    r.get(15)?,
                    r.get(16)?,
                ))
            },
        )?;
        let facts: Vec<(i64, String, Option<String>, bool, Option<bool>, Option<bool>)> = self.all(
            "SELECT idx, fact, distance, asked, recalled, in_memory FROM simulation_facts WHERE run_id = ?1 \
             ORDER BY idx, ord",
            [run_id],
            |r| r.try_into(),
        )?;
        let sessions: Vec<(i64, i64, String, Option<String>, Option<String>)> = self.all(
            "SELECT idx, session, memories_shown, memory_answer, memory_error FROM simulation_sessions \
             WHERE run_id = ?1 ORDER BY idx, session",
            [run_id],
            |r| r.try_into(),
        )?;
        let turns: Vec<(i64, i64, String, i64, Option<String>, Option<String>)> = self.all(
            "SELECT idx, session, user_text, state, companion, companion_role_break FROM simulation_turns \
             WHERE run_id = ?1 ORDER BY idx, session, turn",
            [run_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        let mut out = Vec::with_capacity(main.len());
        for row in main {
            let (idx, profile, seed, companion, simulator, judge, outcome, error, created_at, settings, needs) =
                (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10);
            let item = format!("simulation {idx}");
            let count = |column: &str, raw: i64| d.count(&item, column, raw).map(|n| n as usize);
            let sim_facts = facts
                .iter()
                .filter(|f| f.0 == idx)
                .map(|(_, id, distance, asked, recalled, in_memory)| {
                    Ok(SimulatedFact {
                        id: id.clone(),
                        distance: d.opt_text(&item, "simulation_facts.distance", distance.clone(), Distance::parse)?,
                        asked: *asked,
                        recalled: *recalled,
                        in_memory: *in_memory,
                    })
                })
                .collect::<StoreResult<Vec<_>>>()?;
            let sim_sessions = sessions
                .iter()
                .filter(|s| s.0 == idx)
                .map(|(_, session, memories, answer, memory_error)| {
                    let turns = turns
                        .iter()
                        .filter(|t| t.0 == idx && t.1 == *session)
                        .map(|(_, _, user, state, companion, role_break)| {
                            Ok(SimulatedTurn {
                                user: user.clone(),
                                state: state_of(&d, &item, *state)?,
                                companion: companion.clone(),
                                companion_role_break: role_break.clone(),
                            })
                        })
                        .collect::<StoreResult<Vec<_>>>()?;
                    Ok(SimulatedSession {
                        session: count("simulation_sessions.session", *session)?,
                        turns,
                        memories_shown: d.json(Some(&item), "simulation_sessions.memories_shown", memories)?,
                        memory_answer: answer.clone(),
                        memory_error: memory_error.clone(),
                    })
                })
                .collect::<StoreResult<Vec<_>>>()?;
            out.push(Simulation {
                idx: count("simulations.idx", idx)?,
                profile,
                seed: seed as u64,
                companion,
                simulator,
                judge,
                outcome: d.text(&item, "simulations.outcome", &outcome, SimulationOutcome::parse)?,
                error,
                created_at,
                settings: d.opt_json(&item, "simulations.settings", settings)?,
                facts: sim_facts,
                needs: d.text(&item, "simulations.needs_outcome", &needs, NeedsOutcome::parse)?,
                hidden_need_met: row.11,
                changed_need_met: row.12,
                needs_reason: row.13,
                memory_format_failures: count("simulations.memory_format_failures", row.14)?,
                simulator_role_breaks: row.15.map(|n| count("simulations.simulator_role_breaks", n)).transpose()?,
                companion_role_breaks: row.16.map(|n| count("simulations.companion_role_breaks", n)).transpose()?,
                sessions: sim_sessions,
            });
        }
        Ok(out)
    }
}

/// Simulations as schema 1 and 2 stored them: the simulator's result and transcript as JSON. Read
/// once, by the migration to schema 3.
pub(crate) mod legacy {
    use super::*;

    #[derive(Deserialize)]
    struct Result {
        #[serde(default)]
        facts: Vec<Fact>,
        needs_outcome: String,
        hidden_need_met: Option<bool>,
        changed_need_met: Option<bool>,
        #[serde(default)]
        needs_reason: Option<String>,
        #[serde(default)]
        memory_format_failures: usize,
        #[serde(default)]
        simulator_role_breaks: Option<usize>,
        #[serde(default)]
        companion_role_breaks: Option<usize>,
        #[serde(default)]
        simulator_settings: Option<GenerationSettings>,
        #[serde(default)]
        companion_settings: Option<GenerationSettings>,
        #[serde(default)]
        sap: Option<SapMode>,
        #[serde(default)]
        prompt_hash: Option<String>,
        #[serde(default)]
        states: Vec<u8>,
    }

    #[derive(Deserialize)]
    struct Fact {
        id: String,
        #[serde(default)]
        distance: Option<String>,
        asked: bool,
        recalled: Option<bool>,
        #[serde(default)]
        in_memory: Option<bool>,
    }

    #[derive(Deserialize)]
    struct Session {
        session: usize,
        turns: Vec<Turn>,
        #[serde(default)]
        memories_shown: Vec<Memory>,
        #[serde(default)]
        memory_answer: Option<String>,
        #[serde(default)]
        memory_error: Option<String>,
    }

    #[derive(Deserialize)]
    struct Turn {
        user: String,
        state: u8,
        companion: Option<String>,
        #[serde(default)]
        companion_role_break: Option<String>,
    }

    /// The columns of a schema-1 or schema-2 `simulations` row that change shape.
    pub(crate) struct Stored {
        pub idx: i64,
        pub profile: String,
        pub seed: i64,
        pub companion: String,
        pub simulator: String,
        pub judge: Option<String>,
        pub outcome: String,
        pub result: String,
        pub transcript: String,
        pub error: Option<String>,
        pub created_at: String,
    }

    /// The typed simulation of a stored row; an error message names the column that does not decode.
    pub(crate) fn decode(row: Stored) -> std::result::Result<Simulation, (String, String)> {
        let bad = |column: &str, message: String| (format!("simulations.{column}"), message);
        let r: Result =
            serde_json::from_str(&row.result).map_err(|e| bad("result", format!("does not decode ({e})")))?;
        let sessions: Vec<Session> =
            serde_json::from_str(&row.transcript).map_err(|e| bad("transcript", format!("does not decode ({e})")))?;
        let outcome = SimulationOutcome::parse(&row.outcome)
            .ok_or_else(|| bad("outcome", format!("`{}` is not a known value", row.outcome)))?;
        let needs = NeedsOutcome::parse(&r.needs_outcome)
            .ok_or_else(|| bad("result.needs_outcome", format!("`{}` is not a known value", r.needs_outcome)))?;
        let facts = r
            .facts
            .into_iter()
            .map(|f| {
                let distance = match f.distance {
                    None => None,
                    Some(d) => Some(
                        Distance::parse(&d)
                            .ok_or_else(|| bad("result.facts.distance", format!("`{d}` is not a known value")))?,
                    ),
                };
                Ok(SimulatedFact { id: f.id, distance, asked: f.asked, recalled: f.recalled, in_memory: f.in_memory })
            })
            .collect::<std::result::Result<Vec<_>, (String, String)>>()?;
        let sessions: Vec<SimulatedSession> = sessions
            .into_iter()
            .map(|s| SimulatedSession {
                session: s.session,
                turns: s
                    .turns
                    .into_iter()
                    .map(|t| SimulatedTurn {
                        user: t.user,
                        state: t.state,
                        companion: t.companion,
                        companion_role_break: t.companion_role_break,
                    })
                    .collect(),
                memories_shown: s.memories_shown,
                memory_answer: s.memory_answer,
                memory_error: s.memory_error,
            })
            .collect();
        let settings = match (r.simulator_settings, r.companion_settings, r.sap, r.prompt_hash) {
            (Some(simulator), Some(companion), Some(sap), Some(prompt_hash)) => {
                Some(SimulationSettings { simulator, companion, sap, prompt_hash })
            }
            _ => None,
        };
        let sim = Simulation {
            idx: usize::try_from(row.idx).map_err(|_| bad("idx", format!("{} is negative", row.idx)))?,
            profile: row.profile,
            seed: row.seed as u64,
            companion: row.companion,
            simulator: row.simulator,
            judge: row.judge,
            outcome,
            error: row.error,
            created_at: row.created_at,
            settings,
            facts,
            needs,
            hidden_need_met: r.hidden_need_met,
            changed_need_met: r.changed_need_met,
            needs_reason: r.needs_reason,
            memory_format_failures: r.memory_format_failures,
            simulator_role_breaks: r.simulator_role_breaks,
            companion_role_breaks: r.companion_role_breaks,
            sessions,
        };
        // The states the result listed are the turns' states: nothing is lost by keeping the turns.
        if !r.states.is_empty() && r.states != sim.states() {
            return Err(bad("result.states", "differ from the states of the transcript's turns".into()));
        }
        Ok(sim)
    }
}
