//! The null-baseline table of a run ([`crate::compute::baselines`]), in the form every other
//! assessment table takes ([`crate::render::tables::Table`]).

use std::collections::BTreeSet;

use crate::compute::assessments::Section;
use crate::format::{fmt_ci, fmt4};
use crate::render::tables::{Cell, Figure, Table, not_run, stat_cell, text_cell};

/// The run against the null baselines ([`crate::compute::baselines`]): per sub-task and overall,
/// the run's mean, each baseline's, the paired difference to the strongest, the smallest difference
/// the items can show, the normalised score and whether the run is shown above.
pub fn baselines_table(section: &Section<crate::compute::baselines::BaselineSection>, pct: &str) -> Table {
    let sec = "baselines";
    let title = "Null baselines: the run against answering without a model";
    let b = match section {
        Section::NotRun => {
            return Table {
                note: Some(
                    "not computed for this run: `h2htalk baselines --db DB --run RUN` scores them under the run's \
                     signature"
                        .into(),
                ),
                ..not_run(sec, title)
            };
        }
        Section::Run(b) => b,
    };
    let names: Vec<&String> =
        b.groups.iter().flat_map(|g| g.baselines.keys()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut head = vec!["group".to_string(), format!("run {} [{pct}% CI] n", b.metric)];
    head.extend(names.iter().map(|n| format!("baseline {n}")));
    head.extend([
        "strongest".into(),
        format!("run − strongest [{pct}% CI]"),
        "detectable difference".into(),
        "normalised (run − strongest) / (1 − strongest)".into(),
        "shown above".into(),
    ]);
    let rows = b
        .groups
        .iter()
        .map(|g| {
            let grp = g.group.as_str();
            let mut row = vec![text_cell(grp), stat_cell(sec, grp, "run", g.run.as_ref())];
            for n in &names {
                row.push(match g.baselines.get(*n) {
                    Some(s) => stat_cell(sec, grp, &format!("baseline.{n}"), Some(s)),
                    None => text_cell("–"),
                });
            }
            row.push(text_cell(g.strongest.as_deref().unwrap_or(if grp == "overall" {
                "per sub-task"
            } else {
                "–"
            })));
            let value = |key: &str,
                         v: Option<f64>,
                         lo: Option<f64>,
                         hi: Option<f64>,
                         n: Option<usize>,
                         text: String| Cell {
                text,
                figure: Some(Figure { section: sec.into(), group: grp.into(), key: key.into(), value: v, lo, hi, n }),
            };
            row.push(match &g.difference {
                Some(d) => value(
                    "difference",
                    Some(d.diff.mean),
                    d.diff.lo,
                    d.diff.hi,
                    Some(d.n),
                    format!("{} {} n={}", fmt4(d.diff.mean), fmt_ci(d.diff.lo, d.diff.hi), d.n),
                ),
                None => value("difference", None, None, None, Some(0), "n/a".into()),
            });
            row.push(value(
                "detectable",
                g.detectable,
                None,
                None,
                g.difference.as_ref().map(|d| d.n),
                g.detectable.map(fmt4).unwrap_or_else(|| "n/a (under two items)".into()),
            ));
            row.push(value(
                "normalized",
                g.normalized,
                None,
                None,
                None,
                g.normalized.map(fmt4).unwrap_or_else(|| "n/a".into()),
            ));
            row.push(text_cell(if g.above { "yes" } else { "NO" }));
            row
        })
        .collect();
    let flag = if b.not_above.is_empty() {
        "The run is shown above the strongest baseline on every sub-task.".to_string()
    } else {
        format!(
            "FLAG: not shown above the strongest baseline (the interval of run − strongest reaches 0) on {} of {} \
             sub-tasks: {}.",
            b.not_above.len(),
            b.groups.len() - 1,
            b.not_above.join(", ")
        )
    };
    Table {
        section: sec.into(),
        title: title.into(),
        head,
        rows,
        not_run: false,
        note: Some(format!(
            "{flag} Baselines answer without a model: `empty` (nothing), `common_opening` (the most common opening \
             of the sub-task's references), `generic_comfort` (one fixed line per language), `echo` (the user's last \
             turn, or the input the answer is made from) and `other_reference` (another scenario's reference of the \
             same sub-task and language, seeded shuffle). Each is scored like the run on `{}`, paired by scenario; \
             `overall` pairs every item with its sub-task's strongest baseline. The detectable difference is the \
             smallest paired difference these items can show (two-sided 5%, power 0.8) at the observed spread.",
            b.metric
        )),
    }
}
