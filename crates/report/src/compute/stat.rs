//! The figures every table shares: a mean with its interval and the number it stands on, the
//! coverage of a group, and what kind of group it is.

use serde::Serialize;

/// The kind of a group of items.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GroupKind {
    /// One of the eleven sub-tasks.
    Task,
    /// A family of sub-tasks (dialogue, recollection, itinerary).
    Family,
    /// All sub-task items pooled.
    Overall,
    /// A set outside the sub-tasks (the SAP safety set); not part of families or overall.
    Set,
}

/// How many items a mean stands on.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Coverage {
    pub items: usize,
    pub generated: usize,
    pub failed: usize,
    /// Not generated yet.
    pub pending: usize,
    /// Items with metric values (in `strict`, empty answers included, at 0).
    pub scored: usize,
    /// Of `scored`, the empty answers.
    pub empty_predictions: usize,
    /// Generated but not scored by the profile (an empty side).
    pub dropped: usize,
    /// Generated but without any score row yet.
    pub unscored: usize,
}

impl Coverage {
    pub(crate) fn add(&mut self, o: &Coverage) {
        self.items += o.items;
        self.generated += o.generated;
        self.failed += o.failed;
        self.pending += o.pending;
        self.scored += o.scored;
        self.empty_predictions += o.empty_predictions;
        self.dropped += o.dropped;
        self.unscored += o.unscored;
    }
}

/// A metric's mean over a group with its interval.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct MetricStat {
    /// Items with a value of this metric.
    pub n: usize,
    pub mean: f64,
    /// The interval's bounds; `None` (null in JSON, "n/a" in text) over fewer than two items.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl MetricStat {
    /// `mean [lo, hi]` with four decimals (`mean n/a` without an interval).
    pub fn text(&self) -> String {
        format!("{} {}", crate::format::fmt4(self.mean), crate::format::fmt_ci(self.lo, self.hi))
    }
}
