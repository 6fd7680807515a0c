//! Per-task and pooled means of per-pair metrics, with the counts that qualify them.

use std::collections::BTreeMap;

use h2htalk_data::Task;
use serde::Serialize;

/// Counts and metric sums of one group of pairs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Group {
    /// Pairs that carry scores (in `strict`, empty predictions included, at 0).
    pub scored: usize,
    /// Pairs not scored (`paper`: an empty side; `strict`: an empty reference).
    pub dropped: usize,
    /// Of `scored`, the empty predictions that `strict` scored 0.
    pub empty_predictions: usize,
    #[serde(skip)]
    sums: Vec<f64>,
}

impl Group {
    /// Mean of each metric, `None` when nothing was scored (never a silent 0).
    pub fn means(&self) -> Vec<Option<f64>> {
        self.sums.iter().map(|s| (self.scored > 0).then(|| s / self.scored as f64)).collect()
    }

    fn add(&mut self, values: Option<&[f64]>, empty_prediction: bool) {
        match values {
            Some(v) => {
                if self.sums.is_empty() {
                    self.sums = vec![0.0; v.len()];
                }
                for (s, x) in self.sums.iter_mut().zip(v) {
                    *s += x;
                }
                self.scored += 1;
                self.empty_predictions += usize::from(empty_prediction);
            }
            None => self.dropped += 1,
        }
    }
}

/// Means per sub-task and over all pooled pairs, for a fixed list of metric names.
#[derive(Clone, Debug)]
pub struct Summary {
    pub metrics: Vec<&'static str>,
    pub tasks: BTreeMap<Task, Group>,
    pub overall: Group,
}

impl Summary {
    pub fn new(metrics: &[&'static str]) -> Self {
        let empty = Group { sums: vec![0.0; metrics.len()], ..Group::default() };
        Summary { metrics: metrics.to_vec(), tasks: BTreeMap::new(), overall: empty }
    }

    /// Adds one pair: its metric values (in `metrics` order), or `None` if it was dropped.
    pub fn add(&mut self, task: Task, values: Option<&[f64]>, empty_prediction: bool) {
        if let Some(v) = values {
            assert_eq!(v.len(), self.metrics.len(), "one value per metric");
        }
        let group =
            self.tasks.entry(task).or_insert_with(|| Group { sums: vec![0.0; self.metrics.len()], ..Group::default() });
        group.add(values, empty_prediction);
        self.overall.add(values, empty_prediction);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_pool_pairs_and_count_drops() {
        let mut s = Summary::new(&["a", "b"]);
        s.add(Task::DialogueBase, Some(&[1.0, 0.0]), false);
        s.add(Task::DialogueBase, None, false);
        s.add(Task::ItineraryBasic, Some(&[0.0, 0.0]), true);
        s.add(Task::ItineraryBasic, Some(&[0.5, 1.0]), false);
        assert_eq!(s.tasks[&Task::DialogueBase].means(), [Some(1.0), Some(0.0)]);
        assert_eq!(s.tasks[&Task::DialogueBase].dropped, 1);
        assert_eq!(s.tasks[&Task::ItineraryBasic].empty_predictions, 1);
        assert_eq!(s.overall.means(), [Some(0.5), Some(1.0 / 3.0)]);
        assert_eq!((s.overall.scored, s.overall.dropped), (3, 1));

        let mut none = Summary::new(&["a"]);
        none.add(Task::DialogueBase, None, false);
        assert_eq!(none.tasks[&Task::DialogueBase].means(), [None]);
    }
}
