//! Our scenario suite: scenarios with full inputs for every sub-task, the SAP safety set, and
//! persona cards, loaded and validated (see suites/FORMAT.md). Every problem is reported with its
//! file, line and field, all of them at once.

mod config;
mod constraints;
pub mod embedded;
pub mod baselines;
pub mod memory;
mod model;
pub mod profiles;
pub mod stats;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use config::{DEFAULT_NAME, Floors, INHERITED_PARTS, Part, REFERENCES_ENV, SuiteConfig, default_references, part_dir};
pub use constraints::{
    FormatCheckName, answer_violations, char_len, has_action, memory_blocks, sub_schedule, timed_plan, without_actions,
};
pub use model::*;

use crate::error::{DataError, Result};
use crate::jsonl::read_objects;
use crate::official::{TaskDir, hex, load_references};
use crate::task::Task;

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    pub dir: PathBuf,
    /// `suite.json`'s name, or [`DEFAULT_NAME`].
    pub name: String,
    pub personas: BTreeMap<String, Persona>,
    /// Sub-task scenarios in sub-task order, then the safety set, each file in line order.
    pub scenarios: Vec<Scenario>,
    /// Where the references of `official` scenarios were read, when the suite has any.
    pub official: Option<OfficialSource>,
    /// The fewest hard items the suite promises (`suite.json`), when it promises any.
    pub floors: Option<Floors>,
    fingerprint: String,
}

/// The official data directory a suite's `official` scenarios were completed from.
#[derive(Debug, Clone)]
pub struct OfficialSource {
    pub dir: PathBuf,
    /// The number of reference lines of each file there.
    pub lines: BTreeMap<Task, usize>,
    /// Official references that break their sub-task's output constraints: reported, not refused
    /// (they stay the references). Scenario id and the constraint broken.
    pub breaks: Vec<(String, Task, String)>,
}

impl Suite {
    /// sha256 over the personas and every scenario line in canonical JSON (sorted keys).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn get(&self, id: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.id == id)
    }

    pub fn persona_of(&self, scenario: &Scenario) -> &Persona {
        &self.personas[&scenario.persona]
    }

    pub fn is_safety(scenario: &Scenario) -> bool {
        scenario.tags.risk.is_some()
    }

    /// The directory of one of the suite's parts (an inherited part from the suite it inherits
    /// when this one lacks it).
    pub fn part(&self, part: Part) -> Result<PathBuf> {
        part_dir(&self.dir, part)
    }

    /// Whether the suite has simulated users (`--simulate` needs some).
    pub fn has_profiles(&self) -> bool {
        self.dir.join(Part::Simulator.dir_name()).is_dir()
    }

    /// Every simulated user of the suite, checked ([`profiles::load_profiles`]).
    pub fn profiles(&self) -> Result<Vec<profiles::UserProfile>> {
        profiles::load_profiles(&self.dir.join(Part::Simulator.dir_name()), self)
    }

    /// One simulated user of the suite, checked ([`profiles::load_profile`]).
    pub fn profile(&self, id: &str) -> Result<profiles::UserProfile> {
        profiles::load_profile(&self.dir.join(Part::Simulator.dir_name()).join(format!("{id}.json")), self)
    }

    /// The name and fingerprint that identify the suite in a scoring signature
    /// (`official-backfill@sha256:...`).
    pub fn label(&self) -> String {
        format!("{}@{}", self.name, self.fingerprint)
    }
}

/// Which file a scenario line comes from.
#[derive(Clone, Copy, PartialEq)]
enum FileKind {
    SubTask(Task),
    Safety,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    id: String,
    task: String,
    persona: String,
    lang: Lang,
    inputs: Value,
    #[serde(default)]
    reference: Option<String>,
    #[serde(default)]
    official: Option<OfficialRef>,
    tags: Tags,
    #[serde(default)]
    expected: Option<Expected>,
}

/// Collects problems instead of stopping at the first.
struct Problems(Vec<DataError>);

impl Problems {
    fn at(&mut self, source: &Source, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(DataError::line(&source.path, source.line, field, message));
    }
}

/// Loads and validates the suite in `dir`; the references of `official` scenarios come from
/// [`default_references`].
pub fn load_suite(dir: &Path) -> Result<Suite> {
    load_suite_with(dir, None)
}

/// Loads and validates the suite in `dir`, reading the references of its `official` scenarios
/// from `references` (default: [`default_references`]).
pub fn load_suite_with(dir: &Path, references: Option<&Path>) -> Result<Suite> {
    if !dir.is_dir() {
        return Err(DataError::file(dir, "is not a directory; give the suite directory (the one holding scenarios/)"));
    }
    let config = SuiteConfig::read(dir)?;
    let mut problems = Problems(Vec::new());
    let mut hasher = Sha256::new();
    // Cards that exist but failed to load: their scenarios are not reported again.
    let mut broken_cards = BTreeSet::new();
    let personas = load_personas(&dir.join(Part::Personas.dir_name()), &mut problems, &mut hasher, &mut broken_cards)?;
    let mut scenarios = Vec::new();
    for (kind, path) in scenario_files(dir)? {
        for line in read_objects(&path)? {
            hasher.update(Value::Object(line.object.clone()).to_string());
            hasher.update(b"\n");
            let source = Source { path: path.clone(), line: line.number };
            if let Some(s) = parse_scenario(kind, Value::Object(line.object), source, &mut problems) {
                scenarios.push(s);
            }
        }
    }
    if scenarios.is_empty() && problems.0.is_empty() {
        return Err(DataError::file(dir, "holds no scenarios; expected scenarios/<stem>.jsonl files"));
    }
    let official = if scenarios.iter().any(|s| s.official.is_some()) {
        let refs_dir = references.map(Path::to_path_buf).or_else(|| default_references(dir)).ok_or_else(|| {
            DataError::file(
                dir,
                format!(
                    "its scenarios answer official references (`official` fields) and no official data directory \
                     was found: give --references DIR (the H2HTalk release's data directory, one <stem>.jsonl per \
                     sub-task) or set {REFERENCES_ENV}"
                ),
            )
        })?;
        let refs = load_references(&refs_dir)?;
        Some(complete_official(&mut scenarios, &refs, &mut problems))
    } else {
        None
    };
    check_suite(&scenarios, &personas, &broken_cards, &mut problems);
    match problems.0.len() {
        0 => Ok(Suite {
            dir: dir.to_path_buf(),
            name: config.name().to_string(),
            personas,
            scenarios,
            official,
            floors: config.floors,
            fingerprint: format!("sha256:{}", hex(&hasher.finalize())),
        }),
        1 => Err(problems.0.pop().unwrap()),
        _ => Err(DataError::Several(problems.0)),
    }
}

/// The field a serde error is about: its path, completed with the field a "missing field `x`"
/// message names; `whole` when the error is about the value as a whole.
fn field_of(path: &str, message: &str, whole: &str) -> String {
    let missing = message.strip_prefix("missing field `").and_then(|m| m.split('`').next());
    match (path, missing) {
        (".", Some(f)) => f.to_string(),
        (p, Some(f)) => format!("{p}.{f}"),
        (".", None) => whole.to_string(),
        (p, None) => p.to_string(),
    }
}

fn stem_of(path: &Path) -> String {
    path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string()
}

fn load_personas(
    dir: &Path,
    problems: &mut Problems,
    hasher: &mut Sha256,
    broken_cards: &mut BTreeSet<String>,
) -> Result<BTreeMap<String, Persona>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut personas = BTreeMap::new();
    for path in paths {
        if path.is_dir() {
            return Err(DataError::file(&path, "is a directory, expected a persona card (<id>.json)"));
        }
        let bytes = crate::input::read_file(&path)?;
        let text = match std::str::from_utf8(&bytes) {
            Ok(t) => t.strip_prefix('\u{feff}').unwrap_or(t),
            Err(e) => {
                let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
                problems.0.push(DataError::line(&path, line, "(line)", "invalid UTF-8; save the card as UTF-8"));
                broken_cards.insert(stem_of(&path));
                continue;
            }
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = match serde_path_to_error::deserialize::<_, Persona>(&mut de) {
            Ok(p) => de.end().map(|()| p).map_err(|e| (".".to_string(), e)),
            Err(e) => Err((e.path().to_string(), e.into_inner())),
        };
        match parsed {
            Ok(p) => {
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                if p.id != stem {
                    problems.0.push(DataError::line(
                        &path,
                        1,
                        "id",
                        format!("`{}` must equal the file name `{stem}`", p.id),
                    ));
                }
                hasher.update(serde_json::to_string(&serde_json::to_value(&p).unwrap()).unwrap());
                personas.insert(p.id.clone(), p);
            }
            Err((at, e)) => {
                let line = e.line().max(1);
                let field = if e.is_syntax() || e.is_eof() {
                    "(line)".to_string()
                } else {
                    field_of(&at, &e.to_string(), "(card)")
                };
                let message = format!("{} (column {})", crate::jsonl::without_position(&e), e.column());
                problems.0.push(DataError::line(&path, line, field, message));
                broken_cards.insert(stem_of(&path));
            }
        }
    }
    if personas.is_empty() && problems.0.is_empty() {
        return Err(DataError::file(dir, "holds no persona cards (<id>.json)"));
    }
    Ok(personas)
}

fn scenario_files(dir: &Path) -> Result<Vec<(FileKind, PathBuf)>> {
    let mut files = Vec::new();
    let scenarios = dir.join(Part::Scenarios.dir_name());
    let mut found: BTreeMap<Task, PathBuf> = BTreeMap::new();
    for entry in std::fs::read_dir(&scenarios).map_err(|e| DataError::io(&scenarios, e))? {
        let path = entry.map_err(|e| DataError::io(&scenarios, e))?.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let task = Task::from_stem(stem).ok_or_else(|| {
            DataError::file(&path, format!("`{stem}` is not a sub-task stem (stems: {})", Task::stem_list()))
        })?;
        found.insert(task, path);
    }
    files.extend(found.into_iter().map(|(t, p)| (FileKind::SubTask(t), p)));
    let safety = dir.join(Part::Safety.dir_name());
    if safety.is_dir() {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&safety)
            .map_err(|e| DataError::io(&safety, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        paths.sort();
        files.extend(paths.into_iter().map(|p| (FileKind::Safety, p)));
    }
    Ok(files)
}

fn parse_scenario(kind: FileKind, value: Value, source: Source, problems: &mut Problems) -> Option<Scenario> {
    let raw: RawScenario = match serde_path_to_error::deserialize(value) {
        Ok(r) => r,
        Err(e) => {
            let message = e.inner().to_string();
            problems.at(&source, field_of(&e.path().to_string(), &message, "(line)"), message);
            return None;
        }
    };
    let Some(task) = Task::from_stem(&raw.task) else {
        problems.at(&source, "task", format!("`{}` is not a sub-task stem ({})", raw.task, Task::stem_list()));
        return None;
    };
    let inputs = match Inputs::parse(task, raw.inputs) {
        Ok(i) => i,
        Err(e) => {
            let path = e.path().to_string();
            let field = if path == "." { "inputs".to_string() } else { format!("inputs.{path}") };
            problems.at(
                &source,
                field,
                format!("{} (the inputs of {task} are described in suites/FORMAT.md)", e.inner()),
            );
            return None;
        }
    };
    let reference = match (raw.reference, &raw.official) {
        (Some(r), None) => r,
        (None, Some(_)) => String::new(), // read from the official data directory after loading
        (Some(_), Some(_)) => {
            problems.at(&source, "official", "give either `reference` or `official`, not both");
            return None;
        }
        (None, None) => {
            problems.at(
                &source,
                "reference",
                "missing; give the reference answer (or `official`: the official reference line it answers)",
            );
            return None;
        }
    };
    let scenario = Scenario {
        id: raw.id,
        task,
        persona: raw.persona,
        lang: raw.lang,
        inputs,
        reference,
        official: raw.official,
        tags: raw.tags,
        expected: raw.expected,
        source,
    };
    check_scenario(kind, &scenario, problems);
    Some(scenario)
}

fn id_matches(id: &str, prefix: &str, suffix: &str) -> bool {
    id.strip_prefix(prefix)
        .and_then(|r| r.strip_suffix(suffix))
        .is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

fn check_scenario(kind: FileKind, s: &Scenario, problems: &mut Problems) {
    let src = &s.source;
    match kind {
        FileKind::SubTask(task) => {
            if s.task != task {
                problems.at(
                    src,
                    "task",
                    format!("`{}` in the file of `{task}`; move the line or fix the task", s.task),
                );
            }
            match &s.official {
                None if !id_matches(&s.id, &format!("{task}-"), "") => {
                    problems.at(src, "id", format!("`{}` should be `{task}-NNN` (three digits)", s.id));
                }
                Some(o) if s.id != format!("official-{task}-{:04}", o.line) => problems.at(
                    src,
                    "id",
                    format!("`{}` should be `official-{task}-{:04}` (the official line it answers)", s.id, o.line),
                ),
                _ => {}
            }
            if s.tags.risk.is_some() {
                problems.at(src, "tags.risk", "must be null outside the safety set");
            }
            if s.expected.is_some() {
                problems.at(src, "expected", "only safety scenarios carry `expected`");
            }
        }
        FileKind::Safety => {
            if !matches!(s.task, Task::DialogueBase | Task::DialogueEmotion) {
                problems.at(src, "task", "a safety scenario is a dialogue_base or dialogue_emotion");
            }
            if s.official.is_some() {
                problems.at(
                    src,
                    "official",
                    "a safety scenario has its own reference; official lines are sub-task items",
                );
            }
            let suffix = if s.lang == Lang::En { "-en" } else { "" };
            if !id_matches(&s.id, "sap-", suffix) {
                problems.at(src, "id", format!("`{}` should be `sap-NNN{suffix}` for lang {}", s.id, s.lang));
            }
            if s.tags.risk.is_none() {
                problems.at(src, "tags.risk", "missing; a safety scenario names its risk type");
            }
            match &s.expected {
                None => problems.at(src, "expected", "missing; a safety scenario says what a secure-base answer does"),
                Some(e) => {
                    if e.should.is_empty() || e.should.iter().any(|x| x.trim().is_empty()) {
                        problems.at(src, "expected.should", "needs one or more non-empty statements");
                    }
                    if e.must_not.is_empty() || e.must_not.iter().any(|x| x.trim().is_empty()) {
                        problems.at(src, "expected.must_not", "needs one or more non-empty statements");
                    }
                }
            }
        }
    }
    if s.tags.emotions.is_empty() {
        problems.at(src, "tags.emotions", "needs at least one emotion");
    }
    // Flags only where they can apply (suites/FORMAT.md, `tags`); the official set was annotated
    // before these definitions and is exempt.
    if kind != FileKind::Safety && s.official.is_none() {
        let flags = [
            ("implicit_need", s.tags.implicit_need),
            ("changing_need", s.tags.changing_need),
            ("multi_session", s.tags.multi_session),
        ];
        for (tag, value) in flags {
            if value && !stats::applies(s.task, tag) {
                problems.at(
                    src,
                    format!("tags.{tag}"),
                    format!("cannot be true in {} (see the tags in suites/FORMAT.md)", s.task),
                );
            }
        }
        if s.task == Task::RecollectionInitialize && !s.tags.multi_session {
            problems.at(
                src,
                "tags.multi_session",
                "is always true in recollection_initialize (the greeting builds on an earlier session)",
            );
        }
    }
    check_inputs(s, problems);
    // An official reference is checked once it is read (and reported, not refused).
    if s.official.is_none() {
        for v in answer_violations(s, &s.reference) {
            problems.at(src, "reference", v);
        }
    }
}

/// Fills in the reference of every `official` scenario from `refs` after checking its file, line
/// and hash; returns what was read and which official references break their constraints.
fn complete_official(scenarios: &mut [Scenario], refs: &TaskDir, problems: &mut Problems) -> OfficialSource {
    let mut breaks = Vec::new();
    for s in scenarios.iter_mut() {
        let Some(o) = &s.official else { continue };
        let at = format!("official reference {} line {}", o.stem, o.line);
        if o.stem != s.task.stem() {
            problems.at(
                &s.source,
                "official.stem",
                format!("`{}` is not this scenario's sub-task `{}`", o.stem, s.task),
            );
            continue;
        }
        let texts = refs.texts(s.task);
        if texts.is_empty() {
            problems.at(
                &s.source,
                "official.stem",
                format!("{at}: {} has no {}.jsonl; give the release's data directory", refs.dir.display(), o.stem),
            );
            continue;
        }
        let Some(text) = o.line.checked_sub(1).and_then(|i| texts.get(i)) else {
            problems.at(
                &s.source,
                "official.line",
                format!("{at}: {}/{}.jsonl has {} lines", refs.dir.display(), o.stem, texts.len()),
            );
            continue;
        };
        let actual = hex(&Sha256::digest(text.as_bytes()));
        if !actual.eq_ignore_ascii_case(&o.sha256) {
            problems.at(
                &s.source,
                "official.sha256",
                format!(
                    "{at}: the text in {} hashes to {actual}, not {}; these inputs were written for the official \
                     release's references: give that data directory",
                    refs.dir.display(),
                    o.sha256
                ),
            );
            continue;
        }
        s.reference = text.clone();
        for v in answer_violations(s, &s.reference) {
            breaks.push((s.id.clone(), s.task, v));
        }
    }
    OfficialSource {
        dir: refs.dir.clone(),
        lines: refs.files.iter().map(|(t, f)| (*t, f.texts.len())).collect(),
        breaks,
    }
}

fn check_history(src: &Source, field: &str, history: &[Turn], must_end_with_user: bool, problems: &mut Problems) {
    if history.is_empty() {
        problems.at(src, field, "is empty; give at least one turn");
    }
    for (i, t) in history.iter().enumerate() {
        if t.content.trim().is_empty() {
            problems.at(src, format!("{field}[{i}].content"), "is empty");
        }
    }
    if must_end_with_user && history.last().is_some_and(|t| t.role != Role::User) {
        problems.at(src, field, "must end with a user turn: the companion replies to it");
    }
}

fn check_schedule(src: &Source, field: &str, slots: &[Slot], problems: &mut Problems) {
    if slots.is_empty() {
        problems.at(src, field, "is empty");
    }
    for (i, pair) in slots.windows(2).enumerate() {
        if pair[1].time <= pair[0].time {
            problems.at(
                src,
                format!("{field}[{}].time", i + 1),
                format!("{} does not come after {}", pair[1].time, pair[0].time),
            );
        }
    }
    for (i, slot) in slots.iter().enumerate() {
        if slot.activity.trim().is_empty() {
            problems.at(src, format!("{field}[{i}].activity"), "is empty");
        }
    }
}

fn check_now(src: &Source, now: ClockTime, slots: &[Slot], problems: &mut Problems) {
    if slots.first().is_some_and(|s| now < s.time) {
        problems.at(
            src,
            "inputs.now",
            format!("{now} is before the first slot; the current slot is the last one at or before now"),
        );
    }
}

fn check_memories(src: &Source, field: &str, memories: &[Memory], problems: &mut Problems) {
    for (i, m) in memories.iter().enumerate() {
        if m.content.trim().is_empty() {
            problems.at(src, format!("{field}[{i}].content"), "is empty");
        }
    }
}

fn check_inputs(s: &Scenario, problems: &mut Problems) {
    let src = &s.source;
    let replies = matches!(s.task.family(), crate::Family::Dialogue);
    let nonempty = |problems: &mut Problems, field: &str, text: &str| {
        if text.trim().is_empty() {
            problems.at(src, field, "is empty");
        }
    };
    match &s.inputs {
        Inputs::History { sessions, date, history } => {
            check_sessions(s, sessions, *date, problems);
            check_history(src, "inputs.history", history, replies, problems)
        }
        Inputs::Schedule { schedule, now, sessions, date, history } => {
            check_schedule(src, "inputs.schedule", schedule, problems);
            check_now(src, *now, schedule, problems);
            check_sessions(s, sessions, *date, problems);
            check_history(src, "inputs.history", history, true, problems);
        }
        Inputs::RawMemory { memory } => nonempty(problems, "inputs.memory", memory),
        Inputs::Recall { memory, session, today } => {
            check_memories(src, "inputs.memory", std::slice::from_ref(memory), problems);
            check_history(src, "inputs.session.history", &session.history, false, problems);
            if session.date >= *today {
                problems.at(src, "inputs.today", format!("{today} is not after the session date {}", session.date));
            }
        }
        Inputs::Day { weekday, hobbies, memories, .. } => {
            nonempty(problems, "inputs.weekday", weekday);
            if hobbies.is_empty() || hobbies.iter().any(|h| h.trim().is_empty()) {
                problems.at(src, "inputs.hobbies", "needs one or more non-empty hobbies");
            }
            check_memories(src, "inputs.memories", memories, problems);
        }
        Inputs::Overview { overview, .. } => nonempty(problems, "inputs.overview", overview),
        Inputs::Expand { itinerary, slot } => {
            check_schedule(src, "inputs.itinerary", itinerary, problems);
            if !itinerary.iter().any(|s| s.time == *slot) {
                problems.at(src, "inputs.slot", format!("{slot} is not the time of any itinerary slot"));
            }
        }
        Inputs::Feedback { itinerary, now, feedback } => {
            check_schedule(src, "inputs.itinerary", itinerary, problems);
            check_now(src, *now, itinerary, problems);
            nonempty(problems, "inputs.feedback", feedback);
        }
        Inputs::Share { itinerary, now, memories } => {
            check_schedule(src, "inputs.itinerary", itinerary, problems);
            check_now(src, *now, itinerary, problems);
            if memories.is_empty() {
                problems.at(src, "inputs.memories", "needs at least one memory");
            }
            check_memories(src, "inputs.memories", memories, problems);
        }
    }
}

/// Earlier sessions: dated, oldest first, each before the current `date` (given exactly when there
/// are sessions), each with a history; and `multi_session` set exactly when there are sessions.
fn check_sessions(s: &Scenario, sessions: &[Session], date: Option<Date>, problems: &mut Problems) {
    let src = &s.source;
    match (sessions.is_empty(), date) {
        (true, Some(_)) => problems.at(src, "inputs.date", "is given without `sessions`; give both or neither"),
        (false, None) => {
            problems.at(src, "inputs.date", "is missing: with `sessions`, give the date of the current conversation")
        }
        _ => {}
    }
    let mut previous: Option<Date> = None;
    for (i, session) in sessions.iter().enumerate() {
        let field = format!("inputs.sessions[{i}]");
        if previous.is_some_and(|p| p >= session.date) {
            problems.at(src, format!("{field}.date"), "sessions must be in date order, each on a later day");
        }
        if date.is_some_and(|d| session.date >= d) {
            problems.at(src, format!("{field}.date"), "must come before the current `date`");
        }
        check_history(src, &format!("{field}.history"), &session.history, false, problems);
        previous = Some(session.date);
    }
    // The official set's inputs have no sessions (the official templates show none): its
    // `multi_session` says that the reference draws on earlier talk.
    if Suite::is_safety(s) || s.official.is_some() {
        return;
    }
    if s.tags.multi_session != !sessions.is_empty() {
        problems.at(
            src,
            "tags.multi_session",
            if sessions.is_empty() {
                "is true, but the inputs carry no earlier session: add `sessions` with the detail it depends on"
            } else {
                "is false, but the inputs carry earlier sessions: set it true"
            },
        );
    }
}

/// Checks across scenarios: unique ids, known personas of the right language, and the safety set
/// present in both languages with matching annotations.
fn check_suite(
    scenarios: &[Scenario],
    personas: &BTreeMap<String, Persona>,
    broken_cards: &BTreeSet<String>,
    problems: &mut Problems,
) {
    let mut seen: HashMap<&str, &Source> = HashMap::new();
    let mut inputs_seen: HashMap<String, &Scenario> = HashMap::new();
    // An unknown persona is reported once, at its first use, with the number of scenarios using it.
    let mut unknown: BTreeMap<&str, (&Source, usize)> = BTreeMap::new();
    for s in scenarios {
        if let Some(first) = seen.insert(&s.id, &s.source) {
            problems.at(
                &s.source,
                "id",
                format!("`{}` is already used at {}:{}", s.id, first.path.display(), first.line),
            );
        }
        let inputs = format!("{}\t{}", s.task, serde_json::to_string(&s.inputs).expect("inputs serialise"));
        if let Some(first) = inputs_seen.insert(inputs, s) {
            problems.at(
                &s.source,
                "inputs",
                format!(
                    "the same inputs as `{}` ({}:{}); every scenario needs its own",
                    first.id,
                    first.source.path.display(),
                    first.source.line
                ),
            );
        }
        match personas.get(&s.persona) {
            None if broken_cards.contains(&s.persona) => {}
            None => unknown.entry(&s.persona).or_insert((&s.source, 0)).1 += 1,
            Some(p) if p.lang != s.lang => problems.at(
                &s.source,
                "persona",
                format!(
                    "`{}` is a {} card but the scenario is {}; use a card of the same language",
                    s.persona, p.lang, s.lang
                ),
            ),
            Some(_) => {}
        }
    }
    for (persona, (first, uses)) in unknown {
        let others = if uses > 1 { format!(" (used by {uses} scenarios; this is the first)") } else { String::new() };
        problems.at(
            first,
            "persona",
            format!(
                "`{persona}` has no card in personas/{others}; add personas/{persona}.json or use one of: {}",
                personas.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        );
    }
    let by_id: HashMap<&str, &Scenario> = scenarios.iter().map(|s| (s.id.as_str(), s)).collect();
    for s in scenarios.iter().filter(|s| s.tags.risk.is_some()) {
        let twin_id = match s.lang {
            Lang::Zh => format!("{}-en", s.id),
            Lang::En => s.id.trim_end_matches("-en").to_string(),
        };
        match by_id.get(twin_id.as_str()) {
            None => problems.at(
                &s.source,
                "id",
                format!("the safety set needs `{twin_id}`, the same scenario in the other language"),
            ),
            Some(t) => {
                let checks = |x: &Scenario| x.expected.as_ref().map(|e| e.checks.clone());
                if t.task != s.task || t.tags.risk != s.tags.risk || checks(t) != checks(s) {
                    problems.at(
                        &s.source,
                        "tags.risk",
                        format!("task, risk and checks must equal those of `{twin_id}`"),
                    );
                }
            }
        }
    }
}
