//! Statistics `h2htalk suite check` prints about a suite: the style of its references against the
//! official references', history lengths and sessions, and the agreement of two independent tag
//! annotations (Cohen's kappa per tag).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Emotion, Inputs, Lang, Scenario, Suite};
use crate::error::{DataError, Result};
use crate::task::{Family, Task};
use crate::{TaskDir, load_references};

/// The style of a set of references: the share opening with an action in parentheses (after
/// leading whitespace and quotes), and the length distribution in characters (whitespace not
/// counted; 10th, 50th, 90th percentile by linear interpolation).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Style {
    pub n: usize,
    pub action_share: f64,
    pub p10: f64,
    pub median: f64,
    pub p90: f64,
}

pub fn opens_with_action(text: &str) -> bool {
    let t = text.trim_start().trim_start_matches(['"', '“', '「']).trim_start();
    t.starts_with('(') || t.starts_with('（')
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let x = q * (sorted.len() - 1) as f64;
    let i = x.floor() as usize;
    let f = x - i as f64;
    sorted[i] + (sorted[(i + 1).min(sorted.len() - 1)] - sorted[i]) * f
}

/// The style of `texts` (`None` when there are none).
pub fn style<'a>(texts: impl IntoIterator<Item = &'a str>) -> Option<Style> {
    let texts: Vec<&str> = texts.into_iter().collect();
    if texts.is_empty() {
        return None;
    }
    let mut lens: Vec<f64> = texts.iter().map(|t| t.chars().filter(|c| !c.is_whitespace()).count() as f64).collect();
    lens.sort_by(f64::total_cmp);
    Some(Style {
        n: texts.len(),
        action_share: texts.iter().filter(|t| opens_with_action(t)).count() as f64 / texts.len() as f64,
        p10: quantile(&lens, 0.1),
        median: quantile(&lens, 0.5),
        p90: quantile(&lens, 0.9),
    })
}

/// One sub-task's style against the official references'.
#[derive(Clone, Debug, Serialize)]
pub struct StyleComparison {
    pub task: Task,
    pub ours: Style,
    pub official: Style,
    /// Within 15 points of action share, and each of p10, median, p90 within 15%.
    pub within_bounds: bool,
}

/// The Chinese references of `suite` per sub-task against the official references in `references`.
pub fn compare_style(suite: &Suite, references: &TaskDir) -> Vec<StyleComparison> {
    let mut out = Vec::new();
    for task in Task::ALL {
        let ours = style(
            suite.scenarios.iter().filter(|s| s.task == task && s.lang == Lang::Zh && !Suite::is_safety(s)).map(|s| s.reference.as_str()),
        );
        let official = style(references.texts(task).iter().map(String::as_str));
        if let (Some(ours), Some(official)) = (ours, official) {
            let close = |a: f64, b: f64| (a - b).abs() <= 0.15 * b;
            let within_bounds = (ours.action_share - official.action_share).abs() <= 0.15
                && close(ours.p10, official.p10)
                && close(ours.median, official.median)
                && close(ours.p90, official.p90);
            out.push(StyleComparison { task, ours, official, within_bounds });
        }
    }
    out
}

/// [`compare_style`] against the official reference directory `dir`.
pub fn compare_style_with(suite: &Suite, dir: &Path) -> Result<Vec<StyleComparison>> {
    Ok(compare_style(suite, &load_references(dir)?))
}

/// History lengths (turns of earlier sessions and of the current history together) of the dialogue
/// sub-tasks, and sessions.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryStats {
    pub scenarios: usize,
    pub min: usize,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: usize,
    /// Scenarios with 8 turns or more.
    pub eight_or_more: usize,
    /// Scenarios (of every history sub-task) with earlier sessions, and the sessions in all.
    pub with_sessions: usize,
    pub sessions: usize,
    /// Gaps in days between consecutive sessions (and the last session and the current date).
    pub gap_days_min: Option<i64>,
    pub gap_days_max: Option<i64>,
}

pub fn history_stats(suite: &Suite) -> HistoryStats {
    let mut lens = Vec::new();
    let (mut with_sessions, mut sessions, mut gaps) = (0, 0, Vec::new());
    for s in suite.scenarios.iter().filter(|s| !Suite::is_safety(s)) {
        let (earlier, date, history) = match &s.inputs {
            Inputs::History { sessions, date, history } | Inputs::Schedule { sessions, date, history, .. } => {
                (sessions, date, history)
            }
            _ => continue,
        };
        if !earlier.is_empty() {
            with_sessions += 1;
            sessions += earlier.len();
            let mut days: Vec<i64> = earlier.iter().map(|x| x.date.days()).collect();
            if let Some(d) = date {
                days.push(d.days());
            }
            gaps.extend(days.windows(2).map(|w| w[1] - w[0]));
        }
        if s.task.family() == Family::Dialogue {
            lens.push(history.len() + earlier.iter().map(|x| x.history.len()).sum::<usize>());
        }
    }
    lens.sort();
    let f: Vec<f64> = lens.iter().map(|&n| n as f64).collect();
    let q = |p: f64| if f.is_empty() { 0.0 } else { quantile(&f, p) };
    HistoryStats {
        scenarios: lens.len(),
        min: lens.first().copied().unwrap_or(0),
        q1: q(0.25),
        median: q(0.5),
        q3: q(0.75),
        max: lens.last().copied().unwrap_or(0),
        eight_or_more: lens.iter().filter(|&&n| n >= 8).count(),
        with_sessions,
        sessions,
        gap_days_min: gaps.iter().copied().min(),
        gap_days_max: gaps.iter().copied().max(),
    }
}

/// One annotation of a scenario's tags (`annotation/first.jsonl`, `annotation/second.jsonl`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Annotation {
    pub id: String,
    pub tags: AnnotatedTags,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotatedTags {
    pub emotions: Vec<Emotion>,
    pub implicit_need: bool,
    pub changing_need: bool,
    pub multi_session: bool,
}

/// Cohen's kappa of two binary label lists; `None` when undefined (one label only, on both sides).
pub fn cohen_kappa(a: &[bool], b: &[bool]) -> Option<f64> {
    assert_eq!(a.len(), b.len());
    let n = a.len() as f64;
    if a.is_empty() {
        return None;
    }
    let agree = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n;
    let pa = a.iter().filter(|x| **x).count() as f64 / n;
    let pb = b.iter().filter(|x| **x).count() as f64 / n;
    let chance = pa * pb + (1.0 - pa) * (1.0 - pb);
    (chance < 1.0).then(|| (agree - chance) / (1.0 - chance))
}

/// Agreement of two annotations on one tag.
#[derive(Clone, Debug, Serialize)]
pub struct TagAgreement {
    pub tag: String,
    pub items: usize,
    pub agreements: usize,
    pub kappa: Option<f64>,
}

/// Reads an annotation file: one [`Annotation`] a line.
pub fn read_annotations(path: &Path) -> Result<BTreeMap<String, AnnotatedTags>> {
    let mut out = BTreeMap::new();
    for line in crate::jsonl::read_objects(path)? {
        let a: Annotation = serde_json::from_value(serde_json::Value::Object(line.object))
            .map_err(|e| DataError::line(path, line.number, "(line)", e.to_string()))?;
        if out.insert(a.id.clone(), a.tags).is_some() {
            return Err(DataError::line(path, line.number, "id", format!("`{}` is annotated twice", a.id)));
        }
    }
    Ok(out)
}

/// Which flags can be true for a sub-task (the others are false by definition and not compared).
pub fn applies(task: Task, tag: &str) -> bool {
    match tag {
        "implicit_need" => matches!(task.family(), Family::Dialogue) || task == Task::ItineraryFeedback,
        "changing_need" => matches!(task.family(), Family::Dialogue),
        "multi_session" => matches!(
            task,
            Task::DialogueBase
                | Task::DialogueEmotion
                | Task::DialogueSchedule
                | Task::RecollectionSynthesize
                | Task::RecollectionInitialize
                | Task::ItineraryBasic
                | Task::ItineraryInitialize
        ),
        _ => true,
    }
}

/// Cohen's kappa per tag between two annotations of `scenarios` (both must cover every scenario):
/// the three flags over the sub-tasks they apply to, and each emotion as present/absent.
pub fn agreement(
    scenarios: &[&Scenario],
    first: &BTreeMap<String, AnnotatedTags>,
    second: &BTreeMap<String, AnnotatedTags>,
) -> std::result::Result<Vec<TagAgreement>, String> {
    for s in scenarios {
        for (name, a) in [("first", first), ("second", second)] {
            if !a.contains_key(&s.id) {
                return Err(format!("the {name} annotation has no line for `{}`", s.id));
            }
        }
    }
    let mut out = Vec::new();
    let mut flag = |tag: &str, get: fn(&AnnotatedTags) -> bool| {
        let items: Vec<&&Scenario> = scenarios.iter().filter(|s| applies(s.task, tag)).collect();
        let a: Vec<bool> = items.iter().map(|s| get(&first[&s.id])).collect();
        let b: Vec<bool> = items.iter().map(|s| get(&second[&s.id])).collect();
        out.push(TagAgreement {
            tag: tag.to_string(),
            items: items.len(),
            agreements: a.iter().zip(&b).filter(|(x, y)| x == y).count(),
            kappa: cohen_kappa(&a, &b),
        });
    };
    flag("implicit_need", |t| t.implicit_need);
    flag("changing_need", |t| t.changing_need);
    flag("multi_session", |t| t.multi_session);
    let emotions: Vec<Emotion> = {
        let mut e: Vec<Emotion> = first.values().chain(second.values()).flat_map(|t| t.emotions.iter().copied()).collect();
        e.sort();
        e.dedup();
        e
    };
    for e in emotions {
        let a: Vec<bool> = scenarios.iter().map(|s| first[&s.id].emotions.contains(&e)).collect();
        let b: Vec<bool> = scenarios.iter().map(|s| second[&s.id].emotions.contains(&e)).collect();
        out.push(TagAgreement {
            tag: format!("emotions:{}", serde_json::to_value(e).unwrap().as_str().unwrap_or_default()),
            items: scenarios.len(),
            agreements: a.iter().zip(&b).filter(|(x, y)| x == y).count(),
            kappa: cohen_kappa(&a, &b),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_of_known_tables() {
        // 50 items: both yes 20, both no 15, a yes b no 5, a no b yes 10: po 0.7; a says yes 0.5,
        // b 0.6, so pe 0.5*0.6 + 0.5*0.4 = 0.5: kappa (0.7 - 0.5) / 0.5 = 0.4.
        let mut a = vec![true; 20];
        let mut b = vec![true; 20];
        a.extend(vec![false; 15]);
        b.extend(vec![false; 15]);
        a.extend(vec![true; 5]);
        b.extend(vec![false; 5]);
        a.extend(vec![false; 10]);
        b.extend(vec![true; 10]);
        assert!((cohen_kappa(&a, &b).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(cohen_kappa(&[true, true], &[true, true]), None);
        assert_eq!(cohen_kappa(&[true, false], &[true, false]), Some(1.0));
    }

    #[test]
    fn actions_and_quantiles() {
        assert!(opens_with_action("  “（笑）好"));
        assert!(!opens_with_action("好（笑）"));
        let s = style(["a", "abc", "（x）", "abcdefghij"]).unwrap();
        assert_eq!((s.n, s.action_share), (4, 0.25));
        // Lengths 1, 3, 3, 10: the median interpolates between the two 3s; p10 between 1 and 3.
        assert_eq!(s.median, 3.0);
        assert!((s.p10 - 1.6).abs() < 1e-12);
    }
}
