//! What a suite covers: counts per sub-task and language, tags, risks, personas; how hard it is
//! (history lengths, sessions, hidden changes of need); the agreement of its two tag annotations;
//! the style of its references against the official ones.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use h2htalk_data::suite::{Lang, Risk};
use h2htalk_data::{Scenario, Suite, Task};

fn flags(s: &Scenario) -> [bool; 3] {
    [s.tags.implicit_need, s.tags.changing_need, s.tags.multi_session]
}

/// The coverage report of a valid suite: counts per sub-task and language, tags, risks, personas,
/// fingerprint.
pub fn coverage(suite: &Suite) -> String {
    let mut out = format!(
        "{}: ok, {} scenarios, {} personas (suite {})\n",
        suite.dir.display(),
        suite.scenarios.len(),
        suite.personas.len(),
        suite.name
    );
    out += &format!("{:<24} {:>5} {:>5} {:>9} {:>9} {:>8}\n", "sub-task", "zh", "en", "implicit", "changing", "multi");
    let (tasks, safety): (Vec<&Scenario>, Vec<&Scenario>) = suite.scenarios.iter().partition(|s| !Suite::is_safety(s));
    let row = |name: &str, group: &[&Scenario]| {
        let lang = |l| group.iter().filter(|s| s.lang == l).count();
        let flag = |i: usize| group.iter().filter(|s| flags(s)[i]).count();
        format!("{name:<24} {:>5} {:>5} {:>9} {:>9} {:>8}\n", lang(Lang::Zh), lang(Lang::En), flag(0), flag(1), flag(2))
    };
    for task in Task::ALL {
        let group: Vec<&Scenario> = tasks.iter().copied().filter(|s| s.task == task).collect();
        out += &row(task.stem(), &group);
    }
    out += &row("sub-tasks total", &tasks);
    out += &row("safety set", &safety);

    let mut emotions: BTreeMap<String, usize> = BTreeMap::new();
    for s in &suite.scenarios {
        for e in &s.tags.emotions {
            *emotions.entry(serde_json::to_value(e).unwrap().as_str().unwrap().to_string()).or_default() += 1;
        }
    }
    let list =
        |m: BTreeMap<String, usize>| m.into_iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
    out += &format!("emotions: {}\n", list(emotions));
    let mut risks: BTreeMap<String, usize> = Risk::ALL.iter().map(|r| (r.as_str().to_string(), 0)).collect();
    for s in &safety {
        *risks.get_mut(s.tags.risk.unwrap().as_str()).unwrap() += 1;
    }
    out += &format!("safety risks (both languages): {}\n", list(risks));
    let mut personas: BTreeMap<String, usize> = BTreeMap::new();
    for s in &suite.scenarios {
        *personas.entry(s.persona.clone()).or_default() += 1;
    }
    let shown = personas.len();
    if shown > 20 {
        let mut top: Vec<(String, usize)> = personas.into_iter().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let head: Vec<String> = top.iter().take(10).map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "personas: {shown} used; most used: {}", head.join(", "));
    } else {
        out += &format!("personas: {}\n", list(personas));
    }
    out += &format!("fingerprint {}\n", suite.fingerprint());
    out
}

/// Words with which a user announces that the need changed; a hidden change uses none of them.
const ANNOUNCING: [&str; 5] = ["其实", "算了", "不用", "不想", "别"];
/// Words holding 别 that announce nothing.
const NOT_ANNOUNCING: [&str; 15] = [
    "特别", "别人", "分别", "区别", "告别", "离别", "级别", "类别", "性别", "别墅", "别扭", "别的", "差别", "识别",
    "个别",
];

/// Whether a scenario's user says in words that the need changed.
fn announces_change(s: &Scenario) -> bool {
    use h2htalk_data::suite::Role;
    s.inputs.history().unwrap_or_default().iter().filter(|t| t.role == Role::User).any(|t| {
        let text = NOT_ANNOUNCING.iter().fold(t.content.clone(), |acc, w| acc.replace(w, ""));
        ANNOUNCING.iter().any(|w| text.contains(w))
    })
}

/// What `suite check` prints about how hard and how official-like a suite is: history lengths and
/// sessions of the dialogue sub-tasks, the agreement of the two tag annotations (when the suite
/// has `annotation/first.jsonl` and `annotation/second.jsonl`), and the style of its references
/// against the official references' (when an official directory is at hand).
pub fn suite_statistics(
    suite: &Suite,
    references: Option<&std::path::Path>,
) -> Result<String, h2htalk_data::DataError> {
    use h2htalk_data::suite::stats::{agreement, compare_style_with, history_stats, read_annotations};
    let mut out = String::new();
    let own: Vec<&Scenario> = suite.scenarios.iter().filter(|s| !Suite::is_safety(s) && s.official.is_none()).collect();
    if own.is_empty() {
        return Ok(out);
    }
    let h = history_stats(suite);
    let _ = writeln!(
        out,
        "dialogue histories (turns, earlier sessions included): {} scenarios, min {}, quartiles {:.0}/{:.0}/{:.0}, max {}, \
         8 or more turns: {} ({:.0}%)",
        h.scenarios,
        h.min,
        h.q1,
        h.median,
        h.q3,
        h.max,
        h.eight_or_more,
        100.0 * h.eight_or_more as f64 / h.scenarios.max(1) as f64
    );
    let gaps = match (h.gap_days_min, h.gap_days_max) {
        (Some(a), Some(b)) => format!(", gaps of {a} to {b} days"),
        _ => String::new(),
    };
    let _ = writeln!(out, "earlier sessions: {} scenarios carry {} sessions{gaps}", h.with_sessions, h.sessions);
    let changing: Vec<&&Scenario> = own.iter().filter(|s| s.tags.changing_need).collect();
    let hidden = changing.iter().filter(|s| !announces_change(s)).count();
    let _ = writeln!(
        out,
        "changing needs: {} scenarios, {hidden} of them hidden (no announcing word such as {} in the user's turns)",
        changing.len(),
        ANNOUNCING.join("/")
    );
    let annotation = suite.dir.join(h2htalk_data::suite::Part::Annotation.dir_name());
    let (first, second) = (annotation.join("first.jsonl"), annotation.join("second.jsonl"));
    if first.is_file() && second.is_file() {
        let agreements = agreement(&own, &read_annotations(&first)?, &read_annotations(&second)?)
            .map_err(|e| h2htalk_data::DataError::file(&annotation, e))?;
        let _ = writeln!(out, "tag agreement of the two independent annotations (Cohen's kappa, before resolution):");
        let (mut sum, mut n) = (0.0, 0);
        for a in &agreements {
            let kappa = a.kappa.map_or("n/a".to_string(), |k| format!("{k:.2}"));
            if a.tag.starts_with("emotions:") {
                if let Some(k) = a.kappa {
                    sum += k;
                    n += 1;
                }
                continue;
            }
            let _ = writeln!(out, "  {:<14} {kappa:>5}  ({} of {} items agree)", a.tag, a.agreements, a.items);
        }
        let emotions: Vec<String> = agreements
            .iter()
            .filter_map(|a| a.tag.strip_prefix("emotions:").map(|e| (e, a.kappa)))
            .map(|(e, k)| format!("{e} {}", k.map_or("n/a".to_string(), |k| format!("{k:.2}"))))
            .collect();
        let mean = if n > 0 { format!("{:.2}", sum / n as f64) } else { "n/a".into() };
        let _ = writeln!(out, "  emotions       {mean:>5}  (mean over labels: {})", emotions.join(", "));
    } else {
        let _ = writeln!(out, "tag agreement: no annotation/first.jsonl and annotation/second.jsonl in this suite");
    }
    match references {
        Some(dir) => {
            let rows = compare_style_with(suite, dir)?;
            let _ = writeln!(
                out,
                "style of the references against the official ones in {} (opening with an action; length p10/median/p90 \
                 in characters; bounds: 15 points, 15%):",
                dir.display()
            );
            for r in &rows {
                let _ = writeln!(
                    out,
                    "  {:<24} action {:>5.1}% vs {:>5.1}%  length {:.0}/{:.0}/{:.0} vs {:.0}/{:.0}/{:.0}  {}",
                    r.task.stem(),
                    100.0 * r.ours.action_share,
                    100.0 * r.official.action_share,
                    r.ours.p10,
                    r.ours.median,
                    r.ours.p90,
                    r.official.p10,
                    r.official.median,
                    r.official.p90,
                    if r.within_bounds { "within" } else { "OUT OF BOUNDS" }
                );
            }
            let out_of = rows.iter().filter(|r| !r.within_bounds).count();
            let _ = writeln!(out, "  {out_of} sub-task(s) out of bounds");
        }
        None => {
            let _ = writeln!(
                out,
                "style: no official directory at hand; give --references DIR to compare with the official references"
            );
        }
    }
    Ok(out)
}

/// What a memory suite holds: users per language, how long their histories are, probes per kind.
pub fn memory_coverage(memory: &h2htalk_data::suite::memory::MemorySuite) -> String {
    use h2htalk_data::suite::memory::{LONG, ProbeType};
    let users: Vec<_> = memory.users.values().collect();
    let by_lang = |l: Lang| users.iter().filter(|u| u.lang == l).count();
    let long = users.iter().filter(|u| u.length() >= LONG).count();
    let sessions: Vec<usize> = users.iter().map(|u| u.sessions.len()).collect();
    let chars: usize = users.iter().map(|u| u.length()).sum();
    let mut out = format!(
        "memory suite: {} users (zh {}, en {}), {long} with histories of {LONG} characters or more; {}-{} sessions \
         a user; {chars} characters in all; fingerprint {}\n",
        users.len(),
        by_lang(Lang::Zh),
        by_lang(Lang::En),
        sessions.iter().min().copied().unwrap_or(0),
        sessions.iter().max().copied().unwrap_or(0),
        memory.fingerprint()
    );
    let kinds: Vec<String> = ProbeType::ALL
        .iter()
        .map(|k| format!("{} {}", k.as_str(), memory.probes.iter().filter(|p| p.kind == *k).count()))
        .collect();
    let _ = writeln!(out, "memory probes: {} ({})", memory.probes.len(), kinds.join(", "));
    out
}

/// The standard deviation of per-item paired differences between two models on a 0–1 measure that
/// the minimal detectable differences assume (an observed-variance prior; see docs/suites.md).
pub const PAIRED_SD_PRIOR: f64 = 0.15;

/// How many hard items a suite holds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HardCases {
    /// Sub-task scenarios (the safety set apart).
    pub scenarios: usize,
    pub hidden_changing_need: usize,
    pub implicit_need: usize,
    pub multi_session_dated: usize,
    pub dialogue: usize,
    /// Dialogue scenarios with 8 or more turns in the current conversation.
    pub long_dialogue: usize,
}

/// Counts the hard items of `suite`.
pub fn hard_cases(suite: &Suite) -> HardCases {
    use h2htalk_data::suite::Inputs;
    let mut h = HardCases::default();
    for s in suite.scenarios.iter().filter(|s| !Suite::is_safety(s)) {
        h.scenarios += 1;
        h.hidden_changing_need += usize::from(s.tags.changing_need && !announces_change(s));
        h.implicit_need += usize::from(s.tags.implicit_need);
        let dated = match &s.inputs {
            Inputs::History { sessions, .. } | Inputs::Schedule { sessions, .. } => !sessions.is_empty(),
            Inputs::Recall { .. } => true,
            _ => false,
        };
        h.multi_session_dated += usize::from(dated);
        if s.task.family() == h2htalk_data::Family::Dialogue {
            h.dialogue += 1;
            let current = match &s.inputs {
                Inputs::History { history, .. } | Inputs::Schedule { history, .. } => history.len(),
                _ => 0,
            };
            h.long_dialogue += usize::from(current >= 8);
        }
    }
    h
}

/// Per hard kind: how many items the suite holds and the smallest difference between two models it
/// can detect on them (paired, 5% two-sided, 80% power, [`PAIRED_SD_PRIOR`]); the floors of its
/// `suite.json` that are not met; and whether length alone gives the `未提取到关键信息。` answer
/// away (by more than [`crate::official::LENGTH_RULE_MAX_ADVANTAGE`] over the majority answer).
pub fn hardness(suite: &Suite) -> (String, Vec<String>) {
    let h = hard_cases(suite);
    let mdd = |n: usize| {
        h2htalk_stats::power::min_detectable_difference(n, PAIRED_SD_PRIOR).map_or("n/a".into(), |d| format!("{d:.3}"))
    };
    let mut out = format!(
        "hard cases (the smallest difference two models can show on them: paired, 5%, power 0.8, sd {PAIRED_SD_PRIOR}):\n"
    );
    let share = if h.dialogue == 0 { 0.0 } else { h.long_dialogue as f64 / h.dialogue as f64 };
    for (name, n) in [
        ("need changes unannounced", h.hidden_changing_need),
        ("implicit need", h.implicit_need),
        ("dated earlier sessions", h.multi_session_dated),
        ("dialogue with 8+ turns now", h.long_dialogue),
        ("all sub-task scenarios", h.scenarios),
    ] {
        let _ = writeln!(out, "  {name:<28} {n:>5}  detectable difference {}", mdd(n));
    }
    let _ = writeln!(out, "  dialogue with 8+ turns now: {:.1}% of {} dialogue scenarios", share * 100.0, h.dialogue);
    let mut failures = Vec::new();
    if let Some(f) = suite.floors {
        for (name, n, floor) in [
            ("scenarios whose need changes unannounced", h.hidden_changing_need, f.hidden_changing_need),
            ("implicit-need scenarios", h.implicit_need, f.implicit_need),
            ("scenarios with dated earlier sessions", h.multi_session_dated, f.multi_session_dated),
        ] {
            if n < floor {
                failures.push(format!(
                    "{}: {n} {name}, under the suite's floor of {floor} (suite.json)",
                    suite.dir.display()
                ));
            }
        }
        if share < f.long_dialogue_share {
            failures.push(format!(
                "{}: {:.1}% of dialogue scenarios have 8+ turns now, under the suite's floor of {:.1}% (suite.json)",
                suite.dir.display(),
                share * 100.0,
                f.long_dialogue_share * 100.0
            ));
        }
        let _ = writeln!(out, "  floors (suite.json): {}", if failures.is_empty() { "met" } else { "NOT met" });
    }
    // Every suite: the no-information items must not be told apart by length alone.
    if let Some(rule) = crate::official::LengthRule::of_suite(suite) {
        let _ = writeln!(out, "  {}", rule.line());
        if rule.too_easy() {
            failures.push(format!(
                "{}: {}; add long conversations with nothing to remember and short ones with a fact to keep",
                suite.dir.display(),
                rule.line()
            ));
        }
    }
    (out, failures)
}
