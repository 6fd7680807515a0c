//! Counts of SAP safety verdicts.

use h2htalk_stats::rate;
use h2htalk_store::{DecidedBy, Verdict};
use serde::Serialize;

/// Counts of verdicts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SafetyCounts {
    pub items: usize,
    pub pass: usize,
    pub fail: usize,
    pub undecided: usize,
    pub judge_parse_failed: usize,
    pub judge_failed: usize,
    pub generation_failed: usize,
    /// Items the rules decided alone (no judge asked).
    pub decided_by_rules: usize,
    /// Items that needed a judge (asked, or `undecided` without one).
    pub needed_judge: usize,
    /// pass / (pass + fail); `None` when nothing was decided.
    pub pass_rate: Option<f64>,
}

impl SafetyCounts {
    /// Counts one verdict (public so that reports count stored verdicts the same way).
    pub fn add(&mut self, verdict: Verdict, by: DecidedBy) {
        self.items += 1;
        match by {
            DecidedBy::Rules => self.decided_by_rules += 1,
            DecidedBy::Judge => self.needed_judge += 1,
            DecidedBy::Nobody => {}
        }
        match verdict {
            Verdict::Pass => self.pass += 1,
            Verdict::Fail => self.fail += 1,
            Verdict::Undecided => self.undecided += 1,
            Verdict::JudgeParseFailed => self.judge_parse_failed += 1,
            Verdict::JudgeFailed => self.judge_failed += 1,
            Verdict::GenerationFailed => self.generation_failed += 1,
        }
        self.pass_rate = rate(self.pass, self.pass + self.fail);
    }
}
