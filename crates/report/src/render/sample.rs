//! Which transcripts `report.html` carries. Every item while they fit the budget; past it, whole
//! scenarios (every run's item of each, so that the side-by-side view still pairs them), the
//! sub-tasks taken in turn, each sub-task's scenarios in this order: those with a failed, pending
//! or unscored item in any run first, then those whose ranking metric differs most between runs
//! (with one run: the lowest scores first). The report says what it left out and how to see it.
//! Every aggregate, assessment and tag table is computed from all items, whatever is shown here.

use std::collections::{BTreeMap, HashSet};

use crate::load::{Generation, ItemRecord, Scoring};

/// The transcripts `report.html` carries at most, as estimated before writing them (answers,
/// prompts, references and errors, and an allowance per item for its fields and scores). The
/// estimate runs high: 12 MB of it came to 4.9 MB of JSON for a 10-model sweep of the official
/// set (10,690 of 45,890 items), whose page was then 7.6 MB.
pub const TRANSCRIPT_BUDGET: usize = 12_000_000;

/// What the report shows of the transcripts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// The scenarios shown, by (sub-task, scenario id); `None`: all of them.
    pub scenarios: Option<HashSet<(String, String)>>,
    pub items: usize,
    pub all_items: usize,
    pub scenario_count: usize,
    pub all_scenarios: usize,
}

impl Shown {
    pub fn keeps(&self, item: &ItemRecord) -> bool {
        self.scenarios.as_ref().is_none_or(|s| s.contains(&(item.task.clone(), item.scenario_id.clone())))
    }

    /// The sentence the report shows above the viewer when items were left out.
    pub fn note(&self) -> Option<String> {
        self.scenarios.as_ref()?;
        Some(format!(
            "This page carries {} of the {} transcripts ({} of {} scenarios, every run's answer to each): the \
             sub-tasks in turn, in each the scenarios with a failed or unscored answer first, then those whose \
             ranking metric differs most between runs. Every table above counts all {} items. To read the \
             others, open the store in `h2htalk view` (every transcript, searchable), export a run (`h2htalk runs \
             export RUN_ID --out DIR`) or open its own report.",
            self.items, self.all_items, self.scenario_count, self.all_scenarios, self.all_items
        ))
    }
}

/// What one item adds to the page, roughly: its texts and a fixed allowance for its fields and
/// scores (prompts and references are counted with each scenario once, as the page stores them once).
fn item_cost(it: &ItemRecord) -> usize {
    120 + 24 * it.metrics.len() + it.answer.as_ref().map_or(0, String::len) + it.error.as_ref().map_or(0, String::len)
}

fn unfinished(it: &ItemRecord) -> bool {
    it.generation != Generation::Generated || it.error.is_some() || it.scoring == Scoring::Unscored
}

/// The transcripts to show of `runs` (each run's items) within `budget` bytes, ranked by `metric`.
pub fn select(runs: &[&[ItemRecord]], metric: Option<&str>, budget: usize) -> Shown {
    struct Scenario<'a> {
        items: Vec<&'a ItemRecord>,
        cost: usize,
    }
    let mut scenarios: BTreeMap<(&str, &str), Scenario> = BTreeMap::new();
    for items in runs {
        for it in *items {
            let s = scenarios
                .entry((it.task.as_str(), it.scenario_id.as_str()))
                .or_insert_with(|| Scenario { items: Vec::new(), cost: 0 });
            if s.items.is_empty() {
                s.cost += it.text_bytes;
            }
            s.cost += item_cost(it);
            s.items.push(it);
        }
    }
    let all_items: usize = runs.iter().map(|r| r.len()).sum();
    let total: usize = scenarios.values().map(|s| s.cost).sum();
    if total <= budget {
        let n = scenarios.len();
        return Shown { scenarios: None, items: all_items, all_items, scenario_count: n, all_scenarios: n };
    }
    // Per sub-task, best first: (not unfinished, -spread or score, id).
    let mut queues: BTreeMap<&str, Vec<(bool, f64, &str, usize)>> = BTreeMap::new();
    for ((task, id), s) in &scenarios {
        let values: Vec<f64> =
            s.items.iter().filter_map(|it| metric.and_then(|m| it.metrics.get(m)).copied()).collect();
        let order = match values.len() {
            0 => 0.0,
            1 => values[0],
            _ => {
                let (lo, hi) = values.iter().fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
                -(hi - lo)
            }
        };
        let finished = !s.items.iter().any(|it| unfinished(it));
        queues.entry(task).or_default().push((finished, order, id, s.cost));
    }
    for q in queues.values_mut() {
        q.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(b.2)));
        q.reverse(); // popped from the end
    }
    let mut kept = HashSet::new();
    let (mut used, mut items) = (0, 0);
    loop {
        let mut took = false;
        for (task, q) in queues.iter_mut() {
            while let Some((_, _, id, cost)) = q.pop() {
                if used + cost <= budget {
                    used += cost;
                    items += scenarios[&(*task, id)].items.len();
                    kept.insert((task.to_string(), id.to_string()));
                    took = true;
                    break;
                }
            }
        }
        if !took {
            break;
        }
    }
    Shown { scenario_count: kept.len(), scenarios: Some(kept), items, all_items, all_scenarios: scenarios.len() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(task: &str, id: &str, answer: &str, score: Option<f64>) -> ItemRecord {
        ItemRecord {
            scenario_id: id.into(),
            task: task.into(),
            lang: "zh".into(),
            prompt: vec![],
            reference: "r".into(),
            text_bytes: 1,
            generation: if score.is_some() { Generation::Generated } else { Generation::Failed },
            answer: Some(answer.into()),
            error: score.is_none().then(|| "server_error: 500".to_string()),
            error_kind: None,
            input_tokens: None,
            output_tokens: None,
            unknown_usage: false,
            faults: vec![],
            scoring: if score.is_some() { Scoring::Scored } else { Scoring::Unscored },
            metrics: score.map(|s| [("composite".to_string(), s)].into_iter().collect()).unwrap_or_default(),
        }
    }

    #[test]
    fn everything_while_it_fits_then_whole_scenarios_by_failure_and_spread_each_task_in_turn() {
        let a = vec![
            item("t1", "a1", "x", Some(0.5)),
            item("t1", "a2", "x", Some(0.5)),
            item("t1", "a3", "x", Some(0.1)),
            item("t2", "b1", "x", Some(0.3)),
            item("t2", "b2", "x", None),
        ];
        let b = vec![
            item("t1", "a1", "x", Some(0.5)),
            item("t1", "a2", "x", Some(0.9)),
            item("t1", "a3", "x", Some(0.2)),
            item("t2", "b1", "x", Some(0.3)),
            item("t2", "b2", "x", Some(0.4)),
        ];
        let runs = [a.as_slice(), b.as_slice()];
        let all = select(&runs, Some("composite"), usize::MAX);
        assert_eq!((all.scenarios.clone(), all.items, all.all_scenarios), (None, 10, 5));
        assert!(all.note().is_none() && all.keeps(&a[0]));
        // Room for three scenarios (each costs the same): t1 and t2 in turn; in t1 the widest
        // spread (a2: 0.4) first, then a3 (0.1); in t2 the one with a failure (b2) first.
        let one = 2 * item_cost(&a[0]) + 1;
        let some = select(&runs, Some("composite"), 3 * one);
        let want: HashSet<(String, String)> =
            [("t1", "a2"), ("t2", "b2"), ("t1", "a3")].map(|(t, i)| (t.to_string(), i.to_string())).into();
        assert_eq!(some.scenarios.as_ref(), Some(&want));
        assert_eq!((some.items, some.all_items, some.scenario_count, some.all_scenarios), (6, 10, 3, 5));
        assert!(some.keeps(&b[2]) && !some.keeps(&b[0]));
        let note = some.note().unwrap();
        assert!(note.contains("6 of the 10 transcripts") && note.contains("runs export"), "{note}");
        // A scenario too large for what is left is passed over for a smaller one.
        let mut big = a.clone();
        big[1].answer = Some("y".repeat(10_000));
        let runs = [big.as_slice(), b.as_slice()];
        let fits = select(&runs, Some("composite"), 3 * one);
        assert!(!fits.scenarios.unwrap().contains(&("t1".to_string(), "a2".to_string())));
    }
}
