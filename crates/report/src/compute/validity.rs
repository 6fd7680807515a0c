//! The judge validity check, summarised: per judge, family and degradation, how often the judge
//! scored the reference above its degraded copy, with a Wilson interval; and in group `safety`,
//! how often the safety judge failed a canned answer to a safety scenario.

use std::collections::BTreeMap;

use h2htalk_stats::{rate, wilson};
use h2htalk_store::{CallUsage, ValidityOutcome, ValidityRow};
use serde::Serialize;

/// The comparisons of one family and degradation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ValidityCell {
    /// Comparisons where both answers were scored.
    pub n: usize,
    /// Of those, the reference scored strictly higher (a tie is not ranked correctly).
    pub ranked_correctly: usize,
    /// `ranked_correctly / n`; `None` when `n` is 0.
    pub share: Option<f64>,
    /// 95% Wilson interval of the share; `None` when `n` < 2.
    pub interval: Option<[f64; 2]>,
    /// Comparisons the judge's unusable answers left undecided.
    pub judge_parse_failed: usize,
    /// Comparisons failed requests left undecided.
    pub judge_failed: usize,
    /// Scenarios for which the degradation could not be made.
    pub not_applicable: usize,
}

/// The validity check of one judge.
#[derive(Clone, Debug, Serialize)]
pub struct ValidityReport {
    pub judge: String,
    /// By family name (or `safety`), then by degradation name. A degradation that does not apply to a family
    /// (an invented memory in an itinerary) is absent.
    pub families: BTreeMap<String, BTreeMap<String, ValidityCell>>,
    /// Every comparison.
    pub rows: Vec<ValidityRow>,
    /// Tokens of the judge's answers asked by this call (0 for a report read from the store).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The same with the answers counted and those without usage (what the store records).
    #[serde(skip)]
    pub usage: CallUsage,
}

impl ValidityReport {
    /// The report of stored (or just made) comparisons.
    pub fn from_rows(judge: &str, rows: Vec<ValidityRow>) -> ValidityReport {
        let mut families: BTreeMap<String, BTreeMap<String, ValidityCell>> = BTreeMap::new();
        for r in &rows {
            let cell = families
                .entry(r.group().to_string())
                .or_default()
                .entry(r.degradation.as_str().to_string())
                .or_default();
            match r.outcome {
                ValidityOutcome::Compared => {
                    cell.n += 1;
                    cell.ranked_correctly += usize::from(r.ranked_correctly() == Some(true));
                }
                ValidityOutcome::JudgeParseFailed => cell.judge_parse_failed += 1,
                ValidityOutcome::JudgeFailed => cell.judge_failed += 1,
                ValidityOutcome::NotApplicable => cell.not_applicable += 1,
            }
        }
        for cell in families.values_mut().flat_map(|f| f.values_mut()) {
            cell.share = rate(cell.ranked_correctly, cell.n);
            cell.interval = if cell.n >= 2 { wilson(cell.ranked_correctly, cell.n) } else { None };
        }
        ValidityReport {
            judge: judge.to_string(),
            families,
            rows,
            input_tokens: 0,
            output_tokens: 0,
            usage: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2htalk_data::Family;
    use h2htalk_data::suite::Lang;
    use h2htalk_store::Degradation;

    #[test]
    fn shares_count_ties_as_wrong_and_failures_apart() {
        let r = |id: &str, outcome, reference: Option<f64>, degraded: Option<f64>| ValidityRow {
            scenario_id: id.into(),
            degradation: Degradation::Truncation,
            task: "dialogue_base".into(),
            family: Family::Dialogue,
            lang: Lang::Zh,
            outcome,
            reference_mean: reference,
            degraded_mean: degraded,
            error: None,
        };
        use ValidityOutcome::*;
        let report = ValidityReport::from_rows(
            "j",
            vec![
                r("a", Compared, Some(8.0), Some(3.0)),
                r("b", Compared, Some(5.0), Some(5.0)),
                r("c", Compared, Some(7.0), Some(2.0)),
                r("d", JudgeParseFailed, Some(7.0), None),
                r("e", JudgeFailed, None, None),
            ],
        );
        let c = &report.families["dialogue"]["truncation"];
        assert_eq!((c.n, c.ranked_correctly, c.judge_parse_failed, c.judge_failed), (3, 2, 1, 1));
        assert_eq!(c.share, Some(2.0 / 3.0));
        assert_eq!(c.interval, wilson(2, 3));
        let one = ValidityReport::from_rows("j", vec![r("a", Compared, Some(8.0), Some(3.0))]);
        assert_eq!(one.families["dialogue"]["truncation"].interval, None);
    }
}
