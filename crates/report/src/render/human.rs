//! The tables of judges against people ([`crate::compute::human`]).

use crate::compute::human::HumanAgreement;
use crate::format::{fmt_ci, fmt4};
use crate::render::tables::{Table, text_cell};
use h2htalk_store::AnnotationKind;

/// One rated set's table: each judge against the people, then the people among themselves.
pub fn human_table(h: &HumanAgreement, pct: &str) -> Table {
    let interval = |i: Option<&h2htalk_stats::Interval>| {
        i.map_or_else(|| "n/a".to_string(), |i| format!("{} {}", fmt4(i.mean), fmt_ci(i.lo, i.hi)))
    };
    let rows = h
        .agreements
        .iter()
        .map(|a| {
            let measure = match h.kind {
                AnnotationKind::Rubric => interval(a.spearman.as_ref()),
                AnnotationKind::Pairwise => a.agreement.as_ref().map_or_else(
                    || "n/a".to_string(),
                    |p| match (p.rate, p.ci95) {
                        (Some(r), Some([lo, hi])) => {
                            format!("{}/{} {} {}", p.k, p.n, fmt4(r), fmt_ci(Some(lo), Some(hi)))
                        }
                        (Some(r), None) => format!("{}/{} {} n/a", p.k, p.n, fmt4(r)),
                        _ => "n/a".to_string(),
                    },
                ),
            };
            vec![
                text_cell(&a.between),
                text_cell(a.units.to_string()),
                text_cell(interval(a.alpha.as_ref())),
                text_cell(measure),
            ]
        })
        .collect();
    let (measure, unit_note) = match h.kind {
        AnnotationKind::Rubric => (
            format!("Spearman's ρ [{pct}% CI]"),
            "a person's value of an item is the mean of the criteria they scored, the judge's its mean score; alpha \
             uses the interval metric",
        ),
        AnnotationKind::Pairwise => (
            format!("agreement [{pct}% CI]"),
            "a verdict is the first run, the second, or a tie (a judge's disagreeing orders count as a tie); alpha \
             uses the nominal metric",
        ),
    };
    Table {
        section: format!("human:{}", h.set),
        title: format!(
            "Judges against people: set `{}` ({}, {} of {} items rated by {} people, {} ratings)",
            h.set,
            h.kind.as_str(),
            h.rated_items,
            h.items,
            h.raters.len(),
            h.ratings
        ),
        head: vec!["between".into(), "units".into(), format!("Krippendorff's alpha [{pct}% CI]"), measure],
        rows,
        not_run: false,
        note: Some(format!(
            "A judge's units are (item, person) pairs; the people's, items two or more people rated. {unit_note}. \
             Intervals: percentile bootstrap over units (alpha, ρ), Wilson (agreement); n/a under two units. A \
             judge is as good as people when its agreement with them reaches theirs with one another."
        )),
    }
}
