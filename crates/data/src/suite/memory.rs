//! The long-horizon memory suite of a suite (`<suite>/memory/`), in the manner of LongMemEval:
//! users with histories of dated sessions (`histories/<part>.jsonl`, one user a line) and probes
//! (`probes/<part>.jsonl`): a message the user sends on a later day that can only be answered well
//! by remembering the history. Five kinds of probe: a single-session detail, a synthesis across
//! sessions, temporal reasoning, a knowledge update (the latest value wins), and abstention (never
//! said: the companion must not invent). Every rule of suites/FORMAT.md's memory section is checked
//! here; every problem names its file, line and field, all of them at once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{Date, Lang, Persona, Role, Session, Source, Suite};
use crate::error::{DataError, Result};
use crate::jsonl::read_objects;

text_enum!(
    /// What a probe asks of the companion's memory.
    ProbeType {
        /// A detail said once, in one session, with later sessions in between.
        SingleSession = "single_session",
        /// Facts said in two or more sessions, combined.
        CrossSession = "cross_session",
        /// Dates, order or durations, from the sessions' dates and what was said.
        Temporal = "temporal",
        /// A fact said, then changed in a later session: the latest value.
        KnowledgeUpdate = "knowledge_update",
        /// Something never said: the companion must say it does not know.
        Abstention = "abstention",
    }
);

/// A user of the memory suite and their history with the companion.
#[derive(Clone, Debug)]
pub struct MemoryUser {
    pub id: String,
    pub lang: Lang,
    /// The companion's persona card.
    pub persona: String,
    /// Who the user is (for readers and judges; never shown to the model).
    pub user: String,
    /// Oldest first, each on a later day.
    pub sessions: Vec<Session>,
    pub source: Source,
}

impl MemoryUser {
    /// Non-whitespace characters of every turn of the history.
    pub fn length(&self) -> usize {
        self.sessions.iter().flat_map(|s| &s.history).map(|t| t.content.chars().filter(|c| !c.is_whitespace()).count()).sum()
    }
}

/// Where a probed fact is said: 1-based session and turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    pub session: usize,
    pub turn: usize,
}

/// One probe: a message on `date` that needs the remembered facts.
#[derive(Clone, Debug)]
pub struct Probe {
    pub id: String,
    pub user: String,
    pub kind: ProbeType,
    pub date: Date,
    pub question: String,
    /// A gold reply in the companion's voice.
    pub answer: String,
    /// What a correct reply contains: each fact a list of alternative forms (any one matches).
    pub key_facts: Vec<Vec<String>>,
    /// `knowledge_update` only: the outdated values; a reply that gives one as current is wrong.
    pub stale: Vec<Vec<String>>,
    pub evidence: Vec<Evidence>,
    pub source: Source,
}

/// A suite's memory users and probes.
#[derive(Clone, Debug)]
pub struct MemorySuite {
    pub dir: PathBuf,
    pub users: BTreeMap<String, MemoryUser>,
    /// In part order, then line order.
    pub probes: Vec<Probe>,
    fingerprint: String,
}

impl MemorySuite {
    /// sha256 over every file's bytes, in path order.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn user_of(&self, probe: &Probe) -> &MemoryUser {
        &self.users[&probe.user]
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUser {
    id: String,
    lang: Lang,
    persona: String,
    user: String,
    sessions: Vec<Session>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    id: String,
    user: String,
    #[serde(rename = "type")]
    kind: ProbeType,
    date: Date,
    question: String,
    answer: String,
    key_facts: Vec<Vec<String>>,
    #[serde(default)]
    stale: Vec<Vec<String>>,
    evidence: Vec<Evidence>,
}

/// The fewest sessions and most sessions of a user's history.
pub const SESSIONS: std::ops::RangeInclusive<usize> = 5..=30;
/// The fewest characters of a history, per language (a quarter of the users must be long ones).
pub const MIN_LENGTH_ZH: usize = 3_000;
pub const MIN_LENGTH_EN: usize = 6_000;
/// A long history.
pub const LONG: usize = 20_000;

/// Lowercase, whitespace removed: how key facts are matched.
pub fn normalize(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).flat_map(char::to_lowercase).collect()
}

/// How many of `facts` a reply holds (a fact is held when any of its forms occurs).
pub fn facts_held(reply: &str, facts: &[Vec<String>]) -> usize {
    let reply = normalize(reply);
    facts.iter().filter(|forms| forms.iter().any(|f| reply.contains(&normalize(f)))).count()
}

impl Suite {
    /// Whether the suite has a memory suite (`memory/`).
    pub fn has_memory(&self) -> bool {
        self.dir.join(super::Part::Memory.dir_name()).is_dir()
    }

    /// The suite's memory suite, checked against its rules; `None` when it has none.
    pub fn memory(&self) -> Result<Option<MemorySuite>> {
        let dir = self.dir.join(super::Part::Memory.dir_name());
        if !dir.is_dir() {
            return Ok(None);
        }
        load_memory(&dir, &self.personas).map(Some)
    }
}

fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    Ok(files)
}

fn part_of(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Loads and checks `dir` (a suite's `memory/`) against the persona cards of its suite.
pub fn load_memory(dir: &Path, personas: &BTreeMap<String, Persona>) -> Result<MemorySuite> {
    let mut problems: Vec<DataError> = Vec::new();
    let mut hasher = Sha256::new();
    let mut users: BTreeMap<String, (MemoryUser, String)> = BTreeMap::new();
    let histories = dir.join("histories");
    let probes_dir = dir.join("probes");
    for d in [&histories, &probes_dir] {
        if !d.is_dir() {
            return Err(DataError::file(d, "is missing: a memory suite holds histories/ and probes/ (see suites/FORMAT.md)"));
        }
    }
    for path in jsonl_files(&histories)? {
        hasher.update(std::fs::read(&path).map_err(|e| DataError::io(&path, e))?);
        let part = part_of(&path);
        for line in read_objects(&path)? {
            let src = Source { path: path.clone(), line: line.number };
            let at = |field: &str, message: String| DataError::line(&path, line.number, field, message);
            let raw: RawUser = match serde_path_to_error::deserialize(serde_json::Value::Object(line.object)) {
                Ok(r) => r,
                Err(e) => {
                    problems.push(at(&e.path().to_string(), e.inner().to_string()));
                    continue;
                }
            };
            let mut bad = |field: &str, message: String| problems.push(at(field, message));
            let want_prefix = format!("mem-{}-", raw.lang.code());
            if !raw.id.strip_prefix(&want_prefix).is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit())) {
                bad("id", format!("`{}` must be `{want_prefix}NNN` (its language and three digits)", raw.id));
            }
            if users.contains_key(&raw.id) {
                bad("id", format!("`{}` is used twice", raw.id));
            }
            match personas.get(&raw.persona) {
                None => bad("persona", format!("`{}` is not a persona card of the suite", raw.persona)),
                Some(card) if card.lang != raw.lang => {
                    bad("persona", format!("the card `{}` is in `{}`, the user in `{}`", card.id, card.lang, raw.lang))
                }
                _ => {}
            }
            if raw.user.trim().is_empty() {
                bad("user", "is empty: say who the user is".into());
            }
            if !SESSIONS.contains(&raw.sessions.len()) {
                bad("sessions", format!("{} sessions: give 5 to 30", raw.sessions.len()));
            }
            for (i, pair) in raw.sessions.windows(2).enumerate() {
                if pair[1].date <= pair[0].date {
                    bad(&format!("sessions[{}].date", i + 1), "must come after the session before".into());
                }
            }
            let mut said: BTreeSet<String> = BTreeSet::new();
            for (i, s) in raw.sessions.iter().enumerate() {
                if s.history.len() < 4 {
                    bad(&format!("sessions[{i}].history"), format!("{} turns: at least 4", s.history.len()));
                }
                for (j, t) in s.history.iter().enumerate() {
                    let field = format!("sessions[{i}].history[{j}]");
                    let want = if j % 2 == 0 { Role::User } else { Role::Assistant };
                    if t.role != want {
                        let role = if want == Role::User { "user" } else { "assistant" };
                        bad(&field, format!("must be a {role} turn: roles alternate, the user first"));
                    }
                    if t.content.trim().is_empty() {
                        bad(&format!("{field}.content"), "is empty".into());
                    }
                    if raw.lang == Lang::En && t.content.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)) {
                        bad(&format!("{field}.content"), "Chinese characters in an English history".into());
                    }
                    let key = normalize(&t.content);
                    if t.role == Role::User && key.chars().count() > 12 && !said.insert(key) {
                        bad(&format!("{field}.content"), "repeats an earlier user turn word for word".into());
                    }
                }
            }
            let user = MemoryUser {
                id: raw.id.clone(),
                lang: raw.lang,
                persona: raw.persona,
                user: raw.user,
                sessions: raw.sessions,
                source: src,
            };
            let floor = if user.lang == Lang::Zh { MIN_LENGTH_ZH } else { MIN_LENGTH_EN };
            if user.length() < floor {
                bad("sessions", format!("a history of {} characters, under the {floor} of its language", user.length()));
            }
            users.insert(raw.id, (user, part.clone()));
        }
    }
    let mut probes = Vec::new();
    let mut ids = BTreeSet::new();
    for path in jsonl_files(&probes_dir)? {
        hasher.update(std::fs::read(&path).map_err(|e| DataError::io(&path, e))?);
        let part = part_of(&path);
        for line in read_objects(&path)? {
            let source = Source { path: path.clone(), line: line.number };
            let at = |field: &str, message: String| DataError::line(&path, line.number, field, message);
            let raw: RawProbe = match serde_path_to_error::deserialize(serde_json::Value::Object(line.object)) {
                Ok(r) => r,
                Err(e) => {
                    problems.push(at(&e.path().to_string(), e.inner().to_string()));
                    continue;
                }
            };
            let mut bad = |field: &str, message: String| problems.push(at(field, message));
            let Some((user, user_part)) = users.get(&raw.user) else {
                bad("user", format!("`{}`: no such user in histories/", raw.user));
                continue;
            };
            if *user_part != part {
                bad("user", format!("`{}` is in histories/{user_part}.jsonl, the probe in probes/{part}.jsonl", raw.user));
            }
            if !raw.id.strip_prefix(&format!("{}-", raw.user)).is_some_and(|n| n.parse::<u32>().is_ok()) {
                bad("id", format!("`{}` must be `{}-N`", raw.id, raw.user));
            }
            if !ids.insert(raw.id.clone()) {
                bad("id", format!("`{}` is used twice", raw.id));
            }
            if user.sessions.last().is_some_and(|s| raw.date <= s.date) {
                bad("date", "must come after the user's last session".into());
            }
            for (field, text) in [("question", &raw.question), ("answer", &raw.answer)] {
                if text.trim().is_empty() {
                    bad(field, "is empty".into());
                }
            }
            let shape = |v: &[Vec<String>]| v.iter().all(|forms| !forms.is_empty() && forms.iter().all(|f| !f.trim().is_empty()));
            if !shape(&raw.key_facts) || !shape(&raw.stale) {
                bad("key_facts", "each fact is a non-empty list of non-empty forms".into());
            }
            let abstention = raw.kind == ProbeType::Abstention;
            if abstention && (!raw.key_facts.is_empty() || !raw.evidence.is_empty()) {
                bad("key_facts", "an abstention probe has no key facts and no evidence: it asks what was never said".into());
            }
            if !abstention && (raw.key_facts.is_empty() || raw.evidence.is_empty()) {
                bad("key_facts", "give the key facts a correct reply holds and where they are said (evidence)".into());
            }
            if (raw.kind == ProbeType::KnowledgeUpdate) != !raw.stale.is_empty() {
                bad("stale", "give the outdated values exactly for a knowledge_update probe".into());
            }
            let mut sessions_seen = BTreeSet::new();
            for (k, e) in raw.evidence.iter().enumerate() {
                let ok = e.session >= 1
                    && e.session <= user.sessions.len()
                    && e.turn >= 1
                    && e.turn <= user.sessions[e.session - 1].history.len();
                if ok {
                    sessions_seen.insert(e.session);
                } else {
                    bad(&format!("evidence[{k}]"), format!("session {} turn {}: no such turn", e.session, e.turn));
                }
            }
            if !sessions_seen.is_empty() && sessions_seen.iter().all(|s| *s == user.sessions.len()) {
                bad("evidence", "only in the last session: a memory probe asks across sessions".into());
            }
            if matches!(raw.kind, ProbeType::CrossSession | ProbeType::KnowledgeUpdate) && sessions_seen.len() < 2 {
                bad("evidence", format!("a {} probe draws on at least two sessions", raw.kind.as_str()));
            }
            let history = normalize(
                &user.sessions.iter().flat_map(|s| &s.history).map(|t| t.content.as_str()).collect::<String>(),
            );
            let question = normalize(&raw.question);
            for (k, forms) in raw.key_facts.iter().enumerate() {
                let field = format!("key_facts[{k}]");
                if forms.iter().any(|f| question.contains(&normalize(f))) {
                    bad(&field, format!("{forms:?}: the question already holds it; ask without giving it away"));
                }
                if raw.kind != ProbeType::Temporal && !forms.iter().any(|f| history.contains(&normalize(f))) {
                    bad(&field, format!("{forms:?}: no form of it is said in the history"));
                }
                if facts_held(&raw.answer, std::slice::from_ref(forms)) == 0 {
                    bad(&field, format!("{forms:?}: the gold answer holds no form of it"));
                }
            }
            for (k, forms) in raw.stale.iter().enumerate() {
                if !forms.iter().any(|f| history.contains(&normalize(f))) {
                    bad(&format!("stale[{k}]"), format!("{forms:?}: no form of it is said in the history"));
                }
            }
            probes.push(Probe {
                id: raw.id,
                user: raw.user,
                kind: raw.kind,
                date: raw.date,
                question: raw.question,
                answer: raw.answer,
                key_facts: raw.key_facts,
                stale: raw.stale,
                evidence: raw.evidence,
                source,
            });
        }
    }
    for (id, (user, _)) in &users {
        let kinds: BTreeSet<ProbeType> = probes.iter().filter(|p| &p.user == id).map(|p| p.kind).collect();
        let n = probes.iter().filter(|p| &p.user == id).count();
        if n < 5 || kinds.len() < ProbeType::ALL.len() {
            problems.push(DataError::line(
                &user.source.path,
                user.source.line,
                "id",
                format!("`{id}` has {n} probes of {} kinds: give at least 5, one of every kind", kinds.len()),
            ));
        }
    }
    if !problems.is_empty() {
        return Err(if problems.len() == 1 { problems.remove(0) } else { DataError::Several(problems) });
    }
    let users: BTreeMap<String, MemoryUser> = users.into_iter().map(|(k, (u, _))| (k, u)).collect();
    let long = users.values().filter(|u| u.length() >= LONG).count();
    if !users.is_empty() && long * 4 < users.len() {
        return Err(DataError::file(
            dir,
            format!("{long} of {} histories have {LONG} characters or more: at least a quarter must", users.len()),
        ));
    }
    Ok(MemorySuite { dir: dir.to_path_buf(), users, probes, fingerprint: format!("sha256:{:x}", hasher.finalize()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_match_any_form_ignoring_case_and_spaces() {
        let facts = vec![vec!["三周".to_string(), "21天".to_string()], vec!["Route 22".to_string()]];
        assert_eq!(facts_held("大概 21 天吧，走 route22", &facts), 2);
        assert_eq!(facts_held("三个星期", &facts), 0);
        assert_eq!(facts_held("", &facts), 0);
    }
}
