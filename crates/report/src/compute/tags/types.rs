//! The tag breakdown's typed value.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::compute::stat::MetricStat;
use crate::load::tags::ItemTags;

/// The three contrasts of the paper's findings: (name, the tag side, the other side).
pub const CONTRASTS: [(&str, &str, &str); 4] = [
    ("implicit − explicit", "implicit_need", "explicit_need"),
    ("changing − stable", "changing_need", "stable_need"),
    ("multi-session − single", "multi_session", "single_session"),
    (REFERENCE_CONTRAST, "reference_breaks_sap", "reference_keeps_sap"),
];

/// The contrast of items whose reference breaks a SAP rule against those whose reference keeps
/// them: what following SAP costs on the overlap metrics. Only for runs whose references were
/// looked at (stored since the memory suite's release).
pub const REFERENCE_CONTRAST: &str = "reference breaks SAP − keeps SAP";

/// A measure's mean over a tag group. `lo`/`hi` are `None` over fewer than two items.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct TagStat {
    pub n: usize,
    pub mean: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

/// The items of a run that carry one tag.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TagGroup {
    /// `implicit_need`, `explicit_need`, ..., or `emotion:NAME`.
    pub group: String,
    /// `need`, `change`, `session` or `emotion`.
    pub kind: &'static str,
    /// Items of the run with the tag (generated or not).
    pub items: usize,
    /// Measure → mean; a measure without a value in the group is absent (never a 0).
    pub measures: BTreeMap<String, TagStat>,
}

/// One contrast of one measure: `a` − `b` with an unpaired bootstrap interval.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TagDifference {
    pub contrast: &'static str,
    pub a: &'static str,
    pub b: &'static str,
    pub measure: String,
    pub n_a: usize,
    pub n_b: usize,
    /// `None` when a side has no value of the measure.
    pub diff: Option<f64>,
    /// `None` when a side has fewer than two items.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Whether the interval lies wholly above or below 0.
    pub excludes_zero: bool,
    /// The smallest difference between the two groups a two-sided test at 5% detects with power
    /// 0.8 at their observed spreads; `None` when a side has fewer than two items.
    pub detectable: Option<f64>,
}

/// The tag breakdown of one run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunTags {
    pub run: String,
    pub label: String,
    pub model: String,
    /// Whether the run's tags could be read.
    pub available: bool,
    /// Why not.
    pub unavailable: Option<String>,
    /// `name@fingerprint` of the suite the tags were read from.
    pub source: Option<String>,
    /// The measures of this run, in report order.
    pub measures: Vec<String>,
    /// Assessments that did not run for this run.
    pub not_run: Vec<String>,
    /// Items whose scenario the suite does not have (no tags).
    pub untagged: usize,
    pub groups: Vec<TagGroup>,
    pub differences: Vec<TagDifference>,
    /// The user simulator's findings: its contrasts and its measures per attachment style and
    /// language (`{"status": "not run"}` without simulations).
    pub simulator: SimulatorTags,
}

/// The user simulator's findings of one run, beside the scenarios' tags.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "status")]
pub enum SimulatorTags {
    #[serde(rename = "not run")]
    NotRun,
    #[serde(rename = "run")]
    Run(SimulatorFindings),
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimulatorFindings {
    /// Simulations stored for the run.
    pub simulations: usize,
    /// Multi-session − single (recall), changing − stable (needs met).
    pub differences: Vec<SimulatorDifference>,
    /// Per attachment style (`attachment:NAME`), then per language (`lang:NAME`) of the profiles;
    /// empty when `groups_unavailable`.
    pub groups: Vec<SimulatorGroup>,
    /// Why the profiles' attachment styles and languages cannot be read.
    pub groups_unavailable: Option<String>,
}

/// One of the paper's contrasts measured by the simulator, paired by simulation: `mean_a` −
/// `mean_b` over the `n` simulations that have both sides, with a percentile bootstrap interval
/// resampling those simulations (both sides of a simulation together).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimulatorDifference {
    /// `multi_session-single_session` or `changing_need-stable_need` (the CSV's group).
    pub group: &'static str,
    /// `multi-session − single` or `changing − stable`, as in [`CONTRASTS`].
    pub contrast: &'static str,
    /// `recall_across_sessions` / `recall_same_session`, or `changed_need_met` / `hidden_need_met`.
    pub a: &'static str,
    pub b: &'static str,
    /// Simulations with both sides (facts asked within and across sessions; needs judged).
    pub n: usize,
    /// Each side over those simulations (recall: facts recalled / asked, pooled).
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    pub diff: Option<f64>,
    /// `None` over fewer than two simulations.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub excludes_zero: bool,
    /// The smallest difference a two-sided test at 5% tells from 0 with power 0.8, at the
    /// bootstrap's standard error; `None` with the interval.
    pub detectable: Option<f64>,
    /// Why there is no difference, when there is none.
    pub note: Option<String>,
}

/// The simulator's measures over the simulations of one attachment style or language.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimulatorGroup {
    /// `attachment:anxious`, `lang:en`, ...
    pub group: String,
    /// `attachment` or `lang`.
    pub kind: &'static str,
    pub simulations: usize,
    /// `recall` (facts recalled / asked), `hidden_need_met`, `changed_need_met` (shares of the
    /// simulations whose needs were judged), `state_change` (last − first state, 1–5 scale); `n`
    /// counts simulations; a measure without a value in the group is absent.
    pub measures: BTreeMap<String, MetricStat>,
}

/// The simulator's measures, in report order.
pub const SIMULATOR_MEASURES: [&str; 4] = ["recall", "hidden_need_met", "changed_need_met", "state_change"];

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TagReport {
    pub method: &'static str,
    /// Every measure of any run, in report order.
    pub measures: Vec<String>,
    pub runs: Vec<RunTags>,
}

/// An item as the breakdown sees it: its stratum (sub-task), tags and values (one per measure).
pub struct TagItem<'a> {
    pub stratum: &'a str,
    pub tags: &'a ItemTags,
    /// Whether the item's reference breaks a SAP rule (`None`: not looked at).
    pub reference_breaks: Option<bool>,
    pub values: Vec<Option<f64>>,
}

/// The groups an item belongs to.
pub(crate) fn groups_of(t: &ItemTags, reference_breaks: Option<bool>) -> Vec<(String, &'static str)> {
    let mut g = vec![
        ((if t.implicit_need { "implicit_need" } else { "explicit_need" }).to_string(), "need"),
        ((if t.changing_need { "changing_need" } else { "stable_need" }).to_string(), "change"),
        ((if t.multi_session { "multi_session" } else { "single_session" }).to_string(), "session"),
    ];
    g.extend(t.emotions.iter().map(|e| (format!("emotion:{e}"), "emotion")));
    if let Some(b) = reference_breaks {
        g.push(((if b { "reference_breaks_sap" } else { "reference_keeps_sap" }).to_string(), "reference"));
    }
    g
}

pub(crate) const FIXED_GROUPS: [&str; 8] = [
    "implicit_need",
    "explicit_need",
    "changing_need",
    "stable_need",
    "multi_session",
    "single_session",
    "reference_breaks_sap",
    "reference_keeps_sap",
];
