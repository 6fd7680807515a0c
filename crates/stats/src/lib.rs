//! The statistics that h2htalk's judges, reports and comparisons share, computed once:
//!
//! - [`proportion`]: rates with 95% Wilson score intervals (none over fewer than two trials).
//! - [`bootstrap`]: seeded percentile bootstrap intervals of means (stratified by sub-task), paired
//!   differences between two runs, rank intervals.
//! - [`agreement`]: Krippendorff's alpha over several raters.
//! - [`bt`]: Bradley–Terry rankings from pairwise comparisons, with bootstrap intervals.
//! - [`power`]: the minimal detectable difference of a paired comparison.
//!
//! Every random stream is seeded, so a figure is the same on every run of the same data.

pub mod agreement;
pub mod bootstrap;
pub mod bt;
pub mod bt_controlled;
pub mod correlation;
pub mod power;
pub mod proportion;

pub use bootstrap::{Bootstrap, Interval, Paired};
pub use proportion::{Proportion, rate, wilson};
