//! A suite whose scenarios answer official reference lines, against the official files: counts per
//! file, the official references that break their sub-task's output constraints, the give-away
//! statistics against their bounds, and whether each conversation holds the memories its
//! reference lists.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use h2htalk_data::suite::{Inputs, Lang, NO_KEY_INFORMATION};
use h2htalk_data::{Scenario, Suite, Task};
use h2htalk_metrics::Tokenizer;
use rayon::prelude::*;

/// How much of a reference its inputs give away.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GiveAway {
    /// ROUGE-L recall of the reference's word tokens (jieba, punctuation and whitespace dropped)
    /// by the tokens of all input strings joined: the share of the reference a model could copy
    /// in order from its inputs.
    pub recall: f64,
    /// The longest run of characters (whitespace removed) the reference shares with one input string.
    pub common_chars: usize,
}

/// The margins over our hand-written suite's maximum that bound the official set's give-away.
pub const RECALL_MARGIN: f64 = 0.10;
pub const RECALL_CAP: f64 = 0.95;
pub const COMMON_CHARS_MARGIN: usize = 2;

/// The strings a model is given, in the order of the format (roles, importances and other
/// non-text values left out).
fn input_strings(inputs: &Inputs) -> Vec<String> {
    use h2htalk_data::suite::{Memory, Session, Slot, Turn};
    let turns = |h: &[Turn]| h.iter().map(|t| t.content.clone()).collect::<Vec<_>>();
    let sessions = |s: &[Session]| {
        s.iter().flat_map(|s| std::iter::once(s.date.to_string()).chain(turns(&s.history))).collect::<Vec<_>>()
    };
    let date = |d: &Option<h2htalk_data::suite::Date>| d.iter().map(ToString::to_string).collect::<Vec<_>>();
    let slots = |s: &[Slot]| s.iter().flat_map(|s| [s.time.to_string(), s.activity.clone()]).collect::<Vec<_>>();
    let memories =
        |m: &[Memory]| m.iter().flat_map(|m| [m.content.clone(), m.category.as_str().to_string()]).collect::<Vec<_>>();
    match inputs {
        Inputs::History { sessions: earlier, date: today, history } => {
            [sessions(earlier), date(today), turns(history)].concat()
        }
        Inputs::Schedule { schedule, now, sessions: earlier, date: today, history } => {
            [slots(schedule), vec![now.to_string()], sessions(earlier), date(today), turns(history)].concat()
        }
        Inputs::RawMemory { memory } => vec![memory.clone()],
        Inputs::Recall { memory, session, today } => [
            memories(std::slice::from_ref(memory)),
            vec![session.date.to_string()],
            turns(&session.history),
            vec![today.to_string()],
        ]
        .concat(),
        Inputs::Day { date, weekday, hobbies, memories: m } => {
            [vec![date.to_string(), weekday.clone()], hobbies.clone(), memories(m)].concat()
        }
        Inputs::Overview { overview, wake } => vec![overview.clone(), wake.to_string()],
        Inputs::Expand { itinerary, slot } => [slots(itinerary), vec![slot.to_string()]].concat(),
        Inputs::Feedback { itinerary, now, feedback } => {
            [slots(itinerary), vec![now.to_string(), feedback.clone()]].concat()
        }
        Inputs::Share { itinerary, now, memories: m } => {
            [slots(itinerary), vec![now.to_string()], memories(m)].concat()
        }
    }
}

/// Word tokens: jieba tokens holding a letter or a digit.
fn words(text: &str) -> Vec<&str> {
    Tokenizer::global().tokenize(text).into_iter().filter(|t| t.chars().any(char::is_alphanumeric)).collect()
}

fn lcs_len(a: &[&str], b: &[&str]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    for x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y { prev[j] + 1 } else { prev[j + 1].max(cur[j]) };
        }
        prev = cur;
    }
    prev[b.len()]
}

fn longest_common_substring(a: &[char], b: &[char]) -> usize {
    let mut best = 0;
    let mut prev = vec![0usize; b.len() + 1];
    for x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            if x == y {
                cur[j + 1] = prev[j] + 1;
                best = best.max(cur[j + 1]);
            }
        }
        prev = cur;
    }
    best
}

fn squash(s: &str) -> Vec<char> {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The give-away of `reference` by `inputs`.
pub fn give_away(reference: &str, inputs: &Inputs) -> GiveAway {
    let strings = input_strings(inputs);
    let reference_words = words(reference);
    let joined = strings.join("\n");
    let input_words = words(&joined);
    let recall = if reference_words.is_empty() {
        0.0
    } else {
        lcs_len(&reference_words, &input_words) as f64 / reference_words.len() as f64
    };
    let r = squash(reference);
    let common_chars = strings.iter().map(|s| longest_common_substring(&r, &squash(s))).max().unwrap_or(0);
    GiveAway { recall, common_chars }
}

/// The give-away bounds per sub-task: the maximum over `baseline`'s Chinese scenarios plus the margins.
pub fn give_away_bounds(baseline: &Suite) -> BTreeMap<Task, GiveAway> {
    let measured: Vec<(Task, GiveAway)> = baseline
        .scenarios
        .par_iter()
        .filter(|s| s.lang == Lang::Zh && !Suite::is_safety(s))
        .map(|s| (s.task, give_away(&s.reference, &s.inputs)))
        .collect();
    let mut bounds: BTreeMap<Task, GiveAway> = BTreeMap::new();
    for (task, g) in measured {
        let b = bounds.entry(task).or_insert(GiveAway { recall: 0.0, common_chars: 0 });
        b.recall = b.recall.max(g.recall);
        b.common_chars = b.common_chars.max(g.common_chars);
    }
    for b in bounds.values_mut() {
        b.recall = (b.recall + RECALL_MARGIN).min(RECALL_CAP);
        b.common_chars += COMMON_CHARS_MARGIN;
    }
    bounds
}

/// Words too common to show that a conversation holds a memory.
const STOP_WORDS: [&str; 28] = [
    "用户", "喜欢", "自己", "一个", "一些", "我们", "他们", "觉得", "感到", "最近", "经常", "非常", "很", "的", "了",
    "和", "在", "是", "有", "被", "对", "与", "把", "让", "会", "要", "想", "这",
];

/// Phrases with which a user tells something worth remembering about themselves (name, age, work,
/// family, likes, health): a `未提取到关键信息。` conversation uses none of them.
const SELF_DISCLOSURE: [&str; 21] = [
    "我叫",
    "我是",
    "我喜欢",
    "我爱",
    "我住",
    "岁",
    "生日",
    "工作",
    "学校",
    "考试",
    "星座",
    "男朋友",
    "女朋友",
    "老公",
    "老婆",
    "我妈",
    "我爸",
    "过敏",
    "失眠",
    "讨厌",
    "最爱",
];

/// Why a `未提取到关键信息。` conversation may hold key information about the user: it uses a
/// self-disclosure phrase. (Its length says nothing: the hard negatives are long small talk and
/// emotional talk with nothing to remember; [`LengthRule`] checks that length gives nothing away.)
fn key_information(history: &[h2htalk_data::suite::Turn]) -> Option<String> {
    use h2htalk_data::suite::Role;
    let user: Vec<&str> = history.iter().filter(|t| t.role == Role::User).map(|t| t.content.as_str()).collect();
    SELF_DISCLOSURE.iter().find(|c| user.iter().any(|u| u.contains(**c))).map(|cue| format!("the user says `{cue}`"))
}

/// How well the length of the user's side alone tells a `未提取到关键信息。` item from one that
/// lists memories: the accuracy of the best threshold rule (either direction) on the user's
/// characters and on the user's turns, against always answering the majority class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LengthRule {
    pub items: usize,
    pub no_key_information: usize,
    /// Always answering the majority class.
    pub majority: f64,
    pub by_chars: f64,
    pub by_turns: f64,
}

/// The most a length rule may beat the majority answer by.
pub const LENGTH_RULE_MAX_ADVANTAGE: f64 = 0.10;

impl LengthRule {
    /// The best length rule's accuracy above the majority answer's.
    pub fn advantage(&self) -> f64 {
        self.by_chars.max(self.by_turns) - self.majority
    }

    /// `items`: (user characters, user turns, whether the reference is `未提取到关键信息。`).
    pub fn of(items: &[(usize, usize, bool)]) -> LengthRule {
        let n = items.len();
        let no_info = items.iter().filter(|i| i.2).count();
        let share = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
        let best = |value: &dyn Fn(&(usize, usize, bool)) -> usize| -> f64 {
            let mut thresholds: Vec<usize> = items.iter().map(value).collect();
            thresholds.sort_unstable();
            thresholds.dedup();
            let mut top = share(no_info.max(n - no_info));
            for t in thresholds {
                // No information when at most t (short), or when above t (long).
                let short = items.iter().filter(|i| (value(i) <= t) == i.2).count();
                top = top.max(share(short)).max(share(n - short));
            }
            top
        };
        LengthRule {
            items: n,
            no_key_information: no_info,
            majority: share(no_info.max(n - no_info)),
            by_chars: best(&|i| i.0),
            by_turns: best(&|i| i.1),
        }
    }
}

/// A `recollection_synthesize` scenario's user characters and turns, and whether its reference is
/// `未提取到关键信息。`: what [`LengthRule`] reads.
fn user_lengths(s: &h2htalk_data::Scenario) -> (usize, usize, bool) {
    let history = s.inputs.history().unwrap_or_default();
    let user: Vec<&str> =
        history.iter().filter(|t| t.role == h2htalk_data::suite::Role::User).map(|t| t.content.as_str()).collect();
    (user.iter().map(|u| u.chars().count()).sum(), user.len(), s.reference.trim() == NO_KEY_INFORMATION)
}

impl LengthRule {
    /// The rule over a suite's `recollection_synthesize` scenarios; `None` when it has none with
    /// `未提取到关键信息。` (then there is nothing length could give away).
    pub fn of_suite(suite: &Suite) -> Option<LengthRule> {
        let lengths: Vec<(usize, usize, bool)> =
            suite.scenarios.iter().filter(|s| s.task == Task::RecollectionSynthesize).map(user_lengths).collect();
        lengths.iter().any(|l| l.2).then(|| LengthRule::of(&lengths))
    }

    /// One line: the majority answer, the best rule on characters and on turns, the advantage.
    pub fn line(&self) -> String {
        format!(
            "length alone against {NO_KEY_INFORMATION} ({} of {} items): always the majority answer {:.1}%, the best \
             threshold on the user's characters {:.1}%, on the user's turns {:.1}%; {:+.1} points (at most {:.0}){}",
            self.no_key_information,
            self.items,
            self.majority * 100.0,
            self.by_chars * 100.0,
            self.by_turns * 100.0,
            self.advantage() * 100.0,
            LENGTH_RULE_MAX_ADVANTAGE * 100.0,
            if self.too_easy() { ": TOO EASY BY LENGTH" } else { "" }
        )
    }

    /// A length rule beats the majority answer by more than [`LENGTH_RULE_MAX_ADVANTAGE`].
    pub fn too_easy(&self) -> bool {
        self.advantage() > LENGTH_RULE_MAX_ADVANTAGE + 1e-12
    }
}

/// The memory contents of a `recollection_synthesize` reference.
fn reference_memories(reference: &str) -> Vec<&str> {
    reference
        .lines()
        .filter_map(|l| l.trim().strip_prefix("记忆内容："))
        .map(|m| m.trim().trim_end_matches('。'))
        .filter(|m| !m.is_empty())
        .collect()
}

/// The share of a memory's content words that occur in `conversation`.
fn memory_held(memory: &str, conversation: &str) -> Option<f64> {
    let content: Vec<&str> = words(memory).into_iter().filter(|w| !STOP_WORDS.contains(w)).collect();
    (!content.is_empty())
        .then(|| content.iter().filter(|w| conversation.contains(**w)).count() as f64 / content.len() as f64)
}

/// One sub-task's give-away statistics.
#[derive(Clone, Debug)]
pub struct GiveAwayRow {
    pub task: Task,
    pub scenarios: usize,
    pub median: GiveAway,
    pub max: GiveAway,
    pub bound: Option<GiveAway>,
    /// Scenarios over a bound, with what they measure.
    pub over: Vec<(String, GiveAway)>,
}

/// A `recollection_synthesize` memory its conversation does not hold.
#[derive(Clone, Debug)]
pub struct MissingMemory {
    pub id: String,
    pub memory: String,
    /// The share of its content words found in the conversation (below one half).
    pub held: f64,
}

/// How a suite of official lines stands against the official files.
#[derive(Clone, Debug)]
pub struct OfficialCheck {
    pub references: PathBuf,
    /// Per sub-task: lines in the official file, scenarios answering that file.
    pub counts: BTreeMap<Task, (usize, usize)>,
    /// Official references that break their sub-task's constraints: (scenario id, constraint).
    pub breaks: BTreeMap<Task, Vec<(String, String)>>,
    pub give_away: Vec<GiveAwayRow>,
    /// `recollection_synthesize` items whose reference lists memories, and those with `未提取到关键信息。`.
    pub memory_items: usize,
    pub no_key_information_items: usize,
    pub missing_memories: Vec<MissingMemory>,
    /// `未提取到关键信息。` items whose conversation may hold key information, and why.
    pub self_disclosure: Vec<(String, String)>,
    /// Whether the length of a conversation gives its answer away.
    pub length_rule: LengthRule,
}

impl OfficialCheck {
    /// Every official line has exactly one scenario, every give-away statistic is within its
    /// bound, every listed memory is held by its conversation, no `未提取到关键信息。` conversation
    /// discloses anything and no length rule beats the majority answer by more than
    /// [`LENGTH_RULE_MAX_ADVANTAGE`].
    pub fn passed(&self) -> bool {
        self.counts.values().all(|(lines, scenarios)| lines == scenarios)
            && self.give_away.iter().all(|r| r.bound.is_some() && r.over.is_empty())
            && self.missing_memories.is_empty()
            && self.self_disclosure.is_empty()
            && !self.length_rule.too_easy()
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Checks a suite of official lines (`None` for a suite without any) against the official files
/// it was completed from, with give-away bounds from `baseline` (our hand-written suite).
pub fn check_official(suite: &Suite, baseline: &Suite) -> Option<OfficialCheck> {
    let source = suite.official.as_ref()?;
    let official: Vec<&Scenario> = suite.scenarios.iter().filter(|s| s.official.is_some()).collect();
    let mut counts: BTreeMap<Task, (usize, usize)> = source.lines.iter().map(|(t, n)| (*t, (*n, 0))).collect();
    for s in &official {
        counts.entry(s.task).or_default().1 += 1;
    }
    let mut breaks: BTreeMap<Task, Vec<(String, String)>> = BTreeMap::new();
    for (id, task, violation) in &source.breaks {
        breaks.entry(*task).or_default().push((id.clone(), violation.clone()));
    }
    let bounds = give_away_bounds(baseline);
    let measured: Vec<GiveAway> = official.par_iter().map(|s| give_away(&s.reference, &s.inputs)).collect();
    let give_away = Task::ALL
        .into_iter()
        .filter_map(|task| {
            let rows: Vec<(&Scenario, GiveAway)> =
                official.iter().zip(&measured).filter(|(s, _)| s.task == task).map(|(s, g)| (*s, *g)).collect();
            if rows.is_empty() {
                return None;
            }
            let bound = bounds.get(&task).copied();
            let over = rows
                .iter()
                .filter(|(_, g)| bound.is_none_or(|b| g.recall > b.recall || g.common_chars > b.common_chars))
                .map(|(s, g)| (s.id.clone(), *g))
                .collect();
            let recalls = rows.iter().map(|(_, g)| g.recall).collect();
            let chars = rows.iter().map(|(_, g)| g.common_chars as f64).collect();
            Some(GiveAwayRow {
                task,
                scenarios: rows.len(),
                median: GiveAway { recall: median(recalls), common_chars: median(chars).round() as usize },
                max: GiveAway {
                    recall: rows.iter().map(|(_, g)| g.recall).fold(0.0, f64::max),
                    common_chars: rows.iter().map(|(_, g)| g.common_chars).max().unwrap_or(0),
                },
                bound,
                over,
            })
        })
        .collect();
    let mut memory_items = 0;
    let mut no_key_information_items = 0;
    let mut missing_memories = Vec::new();
    let mut self_disclosure = Vec::new();
    let mut lengths = Vec::new();
    for s in official.iter().filter(|s| s.task == Task::RecollectionSynthesize) {
        let history = s.inputs.history().unwrap_or_default();
        let (chars, turns, no_info) = user_lengths(s);
        lengths.push((chars, turns, no_info));
        if no_info {
            no_key_information_items += 1;
            if let Some(why) = key_information(history) {
                self_disclosure.push((s.id.clone(), why));
            }
            continue;
        }
        memory_items += 1;
        let conversation: String = s.inputs.history().unwrap_or_default().iter().map(|t| t.content.as_str()).collect();
        for memory in reference_memories(&s.reference) {
            if let Some(held) = memory_held(memory, &conversation).filter(|h| *h < 0.5) {
                missing_memories.push(MissingMemory { id: s.id.clone(), memory: memory.to_string(), held });
            }
        }
    }
    Some(OfficialCheck {
        references: source.dir.clone(),
        counts,
        breaks,
        give_away,
        memory_items,
        no_key_information_items,
        missing_memories,
        self_disclosure,
        length_rule: LengthRule::of(&lengths),
    })
}

impl fmt::Display for OfficialCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "official references {} (each line's sha256 checked)", self.references.display())?;
        writeln!(f, "{:<24} {:>9} {:>9} {:>17}", "sub-task", "official", "scenarios", "reference breaks")?;
        let (mut lines, mut scenarios, mut broken) = (0, 0, 0);
        for (task, (l, s)) in &self.counts {
            let b = self.breaks.get(task).map_or(0, Vec::len);
            let mark = if l == s { "" } else { "  <- differs" };
            writeln!(f, "{:<24} {l:>9} {s:>9} {b:>17}{mark}", task.stem())?;
            (lines, scenarios, broken) = (lines + l, scenarios + s, broken + b);
        }
        writeln!(f, "{:<24} {lines:>9} {scenarios:>9} {broken:>17}", "total")?;
        if broken > 0 {
            writeln!(
                f,
                "reference breaks: official references that break their sub-task's output constraints (reported, \
                 not refused; they stay the references):"
            )?;
            for (task, list) in &self.breaks {
                // Grouped by the constraint, numbers left out ("N characters, more than the N allowed").
                let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
                for (_, v) in list {
                    let mut kind = String::new();
                    for c in v.chars() {
                        if !c.is_ascii_digit() {
                            kind.push(c);
                        } else if !kind.ends_with('N') {
                            kind.push('N');
                        }
                    }
                    *kinds.entry(kind).or_default() += 1;
                }
                let kinds: Vec<String> = kinds.into_iter().map(|(k, n)| format!("{n}× {k}")).collect();
                writeln!(f, "  {}: {} (first: {})", task.stem(), kinds.join("; "), list[0].0)?;
            }
        }
        writeln!(
            f,
            "give-away: ROUGE-L recall of the reference's words by the inputs; longest common substring in \
             characters. Bound: our suite's maximum + {RECALL_MARGIN:.2} (at most {RECALL_CAP:.2}) and + \
             {COMMON_CHARS_MARGIN} characters"
        )?;
        writeln!(
            f,
            "{:<24} {:>5} {:>7} {:>7} {:>7} {:>6} {:>6} {:>6}  within",
            "sub-task", "n", "recall", "max", "bound", "chars", "max", "bound"
        )?;
        for r in &self.give_away {
            let (rb, cb) = r.bound.map_or(("n/a".to_string(), "n/a".to_string()), |b| {
                (format!("{:.3}", b.recall), b.common_chars.to_string())
            });
            let within = if r.bound.is_none() {
                "no bound (our suite has no such scenario)".to_string()
            } else if r.over.is_empty() {
                "yes".to_string()
            } else {
                format!("NO: {} over (first {})", r.over.len(), r.over[0].0)
            };
            writeln!(
                f,
                "{:<24} {:>5} {:>7.3} {:>7.3} {rb:>7} {:>6} {:>6} {cb:>6}  {within}",
                r.task.stem(),
                r.scenarios,
                r.median.recall,
                r.max.recall,
                r.median.common_chars,
                r.max.common_chars
            )?;
        }
        writeln!(
            f,
            "recollection_synthesize: {} reference(s) list memories, {} say {NO_KEY_INFORMATION}; memories not held \
             by their conversation: {}",
            self.memory_items,
            self.no_key_information_items,
            self.missing_memories.len()
        )?;
        for m in self.missing_memories.iter().take(10) {
            writeln!(f, "  {}: `{}` ({:.0}% of its words occur)", m.id, m.memory, m.held * 100.0)?;
        }
        writeln!(
            f,
            "{NO_KEY_INFORMATION} conversations that may hold key information about the user (a self-disclosure \
             phrase): {}",
            self.self_disclosure.len()
        )?;
        for (id, why) in self.self_disclosure.iter().take(10) {
            writeln!(f, "  {id}: {why}")?;
        }
        // The length rule's line is printed with the hard cases of every suite (`coverage::hardness`).
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::LengthRule;

    #[test]
    fn a_length_rule_is_scored_against_the_majority_answer() {
        // Short = no information, perfectly: the rule is right on all 4, the majority on 2.
        let split = LengthRule::of(&[(5, 1, true), (8, 1, true), (90, 4, false), (120, 5, false)]);
        assert_eq!((split.majority, split.by_chars, split.by_turns), (0.5, 1.0, 1.0));
        assert_eq!(split.advantage(), 0.5);
        // Lengths that say nothing: no threshold beats answering the majority (3 of 4).
        let mixed = LengthRule::of(&[(50, 3, true), (50, 3, false), (50, 3, true), (50, 3, true)]);
        assert_eq!((mixed.majority, mixed.by_chars, mixed.advantage()), (0.75, 0.75, 0.0));
        // The other direction counts too: long = no information.
        let long = LengthRule::of(&[(200, 9, true), (10, 1, false), (12, 1, false)]);
        assert_eq!(long.by_chars, 1.0);
    }
}
