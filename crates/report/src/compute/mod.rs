//! Every figure of a report, computed from loaded rows ([`crate::load`]) and nothing else: the
//! leaderboard of overlap metrics, each assessment section, the tag breakdown, and the run summary.
//! Rendering ([`crate::render`]) only writes these values out.

pub mod assessments;
pub mod baselines;
pub mod epochs;
pub mod human;
pub mod judge_cards;
pub mod leaderboard;
pub mod panel;
pub mod rubric;
pub mod safety_counts;
pub mod stat;
pub mod summary;
pub mod tags;
pub mod validity;
