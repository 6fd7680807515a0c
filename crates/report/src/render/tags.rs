//! The tag breakdown written out: Markdown, CSV rows, the HTML view and the simulator tables.

use serde_json::{Value, json};

use crate::compute::leaderboard::Leaderboard;
use crate::compute::stat::MetricStat;
use crate::compute::tags::*;
use crate::format::{exact, fmt4, interval_text, md, opt_exact, opt4};
use crate::render::charts::run_keys;
use crate::render::tables::Table;

/// The section of the simulator findings' figures (`run|tag_simulator|group|key`; the CSV's kind).
pub const SIMULATOR_SECTION: &str = "tag_simulator";

pub(crate) fn side_label(side: &str) -> &'static str {
    match side {
        "recall_across_sessions" => "recall of facts asked in a later session",
        "recall_same_session" => "recall of facts asked in the session they were told",
        "changed_need_met" => "changed need met",
        "hidden_need_met" => "hidden (first) need met",
        _ => "",
    }
}

/// The simulator findings of one run as tables of figures, the same in Markdown, HTML, CSV and
/// `runs show`: the contrasts (group `multi_session-single_session` / `changing_need-stable_need`,
/// keys the two sides, `simulations` and `difference`) and the measures per attachment style and
/// language (group `attachment:NAME` / `lang:NAME`, keys `simulations` and the measures).
pub fn simulator_tables(r: &RunTags, pct: &str) -> Vec<Table> {
    use crate::render::tables::{count_cell, not_run, stat_cell, text_cell, value_cell};
    let sec = SIMULATOR_SECTION;
    let f = match &r.simulator {
        SimulatorTags::NotRun => return vec![not_run(sec, "User simulator by tag")],
        SimulatorTags::Run(f) => f,
    };
    let rows = f
        .differences
        .iter()
        .map(|d| {
            let stat = d.diff.map(|mean| MetricStat { n: d.n, mean, lo: d.lo, hi: d.hi });
            let mut diff = stat_cell(sec, d.group, "difference", stat.as_ref());
            if d.excludes_zero {
                diff.text.push_str(" *");
            }
            if let Some(note) = &d.note {
                diff.text = format!("n/a ({note})");
            }
            vec![
                text_cell(d.contrast),
                text_cell(side_label(d.a)),
                value_cell(sec, d.group, d.a, d.mean_a, Some(d.n)),
                text_cell(side_label(d.b)),
                value_cell(sec, d.group, d.b, d.mean_b, Some(d.n)),
                count_cell(sec, d.group, "simulations", d.n),
                diff,
                text_cell(crate::format::fmt_detectable(d.detectable)),
            ]
        })
        .collect();
    let contrasts = Table {
        section: sec.into(),
        title: "User simulator: the paper's contrasts".into(),
        head: ["contrast", "tag side", "value", "other side", "value", "simulations"]
            .map(String::from)
            .into_iter()
            .chain([format!("difference [{pct}% CI]"), "detectable".into()])
            .collect(),
        rows,
        not_run: false,
        note: Some(format!(
            "Paired by simulation: each side over the simulations that have both (recall: facts recalled / facts \
             asked, pooled; needs: share of the simulations whose needs were judged); the interval resamples those \
             simulations, both sides of each together. `*`: the interval excludes 0. detectable: the smallest \
             difference these simulations can show (two-sided 5%, power 0.8), (1.96 + 0.84) × the bootstrap's \
             standard error of the difference (a ratio of pooled counts has no closed form); n/a without an \
             interval. {} simulation(s) in all.",
            f.simulations
        )),
    };
    let mut head: Vec<String> = vec!["group".into(), "simulations".into()];
    head.extend(
        ["recall", "hidden need met", "changed need met", "state change (last − first)"]
            .iter()
            .map(|m| format!("{m} [{pct}% CI] n")),
    );
    let rows = match &f.groups_unavailable {
        Some(why) => vec![vec![text_cell(format!("unavailable: {why}"))]],
        None => f
            .groups
            .iter()
            .map(|g| {
                let mut row = vec![text_cell(&g.group), count_cell(sec, &g.group, "simulations", g.simulations)];
                row.extend(SIMULATOR_MEASURES.iter().map(|m| stat_cell(sec, &g.group, m, g.measures.get(*m))));
                row
            })
            .collect(),
    };
    let groups = Table {
        section: sec.into(),
        title: "User simulator by attachment style and language of the profile".into(),
        head,
        rows,
        not_run: false,
        note: Some(
            "n: simulations (recall: those that asked a fact; needs: those whose needs were judged). Intervals resample \
             the group's simulations; n/a under two."
                .into(),
        ),
    };
    vec![contrasts, groups]
}

/// The Markdown section: the differences of every run, then each run's groups.
pub fn to_markdown(lb: &Leaderboard) -> String {
    use std::fmt::Write;
    let Some(t) = &lb.tags else { return String::new() };
    let pct = (lb.bootstrap.confidence * 1000.0).round() / 10.0;
    let mut o = String::new();
    let _ = writeln!(o, "## Findings by tag\n");
    let _ = writeln!(o, "{pct}% intervals ({}). `*`: the interval excludes 0.\n", t.method);
    let _ = writeln!(o, "### Differences per run\n");
    let _ = writeln!(
        o,
        "| run | model · SAP | contrast | measure | n (tag / other) | difference [{pct}% CI] | detectable |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---:|");
    for r in &t.runs {
        if !r.available {
            let _ = writeln!(o, "| `{}` | {} | – | – | – | tags unavailable | – |", r.run, md(&r.label));
            continue;
        }
        for d in &r.differences {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} / {} | {} {}{} | {} |",
                r.run,
                md(&r.label),
                d.contrast,
                md(&d.measure),
                d.n_a,
                d.n_b,
                opt4(d.diff),
                interval_text(d.lo, d.hi),
                if d.excludes_zero { " *" } else { "" },
                crate::format::fmt_detectable(d.detectable)
            );
        }
    }
    let _ = writeln!(o, "\n{}\n", crate::format::DETECTABLE_NOTE);
    let pct_text = crate::pct(lb.bootstrap.confidence);
    for r in &t.runs {
        let _ = writeln!(o, "### Tags of `{}`: {}\n", r.run, md(&r.label));
        if let Some(why) = &r.unavailable {
            let _ = writeln!(o, "Tags unavailable: {}.\n", md(why));
        } else {
            scenario_tags_markdown(&mut o, r);
        }
        for table in simulator_tables(r, &pct_text) {
            o.push_str(&crate::render::tables::table_markdown(&table));
        }
    }
    o
}

/// One run's tag groups in Markdown.
pub(crate) fn scenario_tags_markdown(o: &mut String, r: &RunTags) {
    use std::fmt::Write;
    {
        let mut notes = Vec::new();
        if let Some(s) = &r.source {
            notes.push(format!("tags from {s}"));
        }
        if !r.not_run.is_empty() {
            notes.push(format!("not run: {}", r.not_run.join(", ")));
        }
        if r.untagged > 0 {
            notes.push(format!("{} item(s) without tags", r.untagged));
        }
        if !notes.is_empty() {
            let _ = writeln!(o, "{}.\n", md(&notes.join("; ")));
        }
        let _ = write!(o, "| tag | items |");
        for m in &r.measures {
            let _ = write!(o, " {} |", md(m));
        }
        let _ = write!(o, "\n|---|---:|");
        for _ in &r.measures {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        for g in &r.groups {
            let _ = write!(o, "| {} | {} |", g.group, g.items);
            for m in &r.measures {
                let cell = match g.measures.get(m) {
                    Some(s) => format!("{} {} n={}", fmt4(s.mean), interval_text(s.lo, s.hi), s.n),
                    None => "–".into(),
                };
                let _ = write!(o, " {cell} |");
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o);
    }
}

/// CSV rows for `leaderboard.csv`, in its columns: kind `tag` (one row per run, tag group and
/// measure; `items` is the group's item count) and `tag_difference` (group `A-B`, `n` the items of
/// both sides, `mean` the difference), then the simulator findings (kind `tag_simulator`, one row
/// per figure of [`simulator_tables`]). An interval that is not available is left empty.
pub fn csv_rows(lb: &Leaderboard) -> Vec<Vec<String>> {
    let Some(t) = &lb.tags else { return vec![] };
    let pct = crate::pct(lb.bootstrap.confidence);
    let mut rows = Vec::new();
    for r in &t.runs {
        let s = lb.runs.iter().find(|s| s.id == r.run);
        let head = |group: String, kind: &str| {
            vec![
                r.run.clone(),
                r.label.clone(),
                r.model.clone(),
                s.and_then(|s| s.sap.clone()).unwrap_or_default(),
                group,
                kind.to_string(),
            ]
        };
        for g in &r.groups {
            for m in &r.measures {
                if let Some(st) = g.measures.get(m) {
                    let mut row = head(format!("tag:{}", g.group), "tag");
                    row.extend([m.clone(), st.n.to_string(), exact(st.mean), opt_exact(st.lo), opt_exact(st.hi)]);
                    row.push(g.items.to_string());
                    row.extend(std::iter::repeat_n(String::new(), 7));
                    rows.push(row);
                }
            }
        }
        for d in &r.differences {
            let mut row = head(format!("{}-{}", d.a, d.b), "tag_difference");
            row.extend([
                d.measure.clone(),
                (d.n_a + d.n_b).to_string(),
                opt_exact(d.diff),
                opt_exact(d.lo),
                opt_exact(d.hi),
            ]);
            row.extend(std::iter::repeat_n(String::new(), 8));
            rows.push(row);
        }
        // The simulator findings, one row per figure as the assessments' (kind `tag_simulator`).
        for table in simulator_tables(r, &pct) {
            for f in table.rows.into_iter().flatten().filter_map(|c| c.figure) {
                let mut row = head(f.group.clone(), &f.section);
                row.extend([
                    f.key.clone(),
                    f.n.map(|n| n.to_string()).unwrap_or_default(),
                    opt_exact(f.value),
                    opt_exact(f.lo),
                    opt_exact(f.hi),
                ]);
                row.extend(std::iter::repeat_n(String::new(), 8));
                rows.push(row);
            }
        }
    }
    rows
}

/// The HTML view of the tag section (the template `tags.html` places it).
pub fn html_view(lb: &Leaderboard) -> Value {
    let Some(t) = &lb.tags else { return json!(null) };
    let pct = crate::pct(lb.bootstrap.confidence);
    let keys = run_keys(lb);
    let key_of = |id: &str| keys.iter().find(|k| k.id == id).map_or("?".to_string(), |k| k.key.clone());
    let order = |id: &str| keys.iter().position(|k| k.id == id).unwrap_or(usize::MAX);
    let mut runs: Vec<&RunTags> = t.runs.iter().collect();
    runs.sort_by_key(|r| order(&r.run));
    // Columns of the difference table: the measures any available run has, in report order.
    let diff_measures: Vec<&String> =
        t.measures.iter().filter(|m| runs.iter().any(|r| r.differences.iter().any(|d| &d.measure == *m))).collect();
    let mut diff_rows = Vec::new();
    for r in &runs {
        if !r.available {
            diff_rows
                .push(json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "unavailable": r.unavailable}));
            continue;
        }
        for (contrast, a, b) in CONTRASTS {
            let cells: Vec<Value> = diff_measures
                .iter()
                .map(|m| match r.differences.iter().find(|d| d.contrast == contrast && &d.measure == *m) {
                    Some(d) => json!({
                        "measure": m,
                        "text": opt4(d.diff),
                        "ci": interval_text(d.lo, d.hi),
                        "diff": opt_exact(d.diff), "lo": opt_exact(d.lo), "hi": opt_exact(d.hi),
                        "n": format!("{} / {}", d.n_a, d.n_b),
                        "sig": d.excludes_zero,
                        "detectable": crate::format::fmt_detectable(d.detectable),
                    }),
                    None => json!({"measure": m, "none": true}),
                })
                .collect();
            let has_groups = |g: &str| r.groups.iter().any(|x| x.group == g);
            if contrast == REFERENCE_CONTRAST && !has_groups(a) && !has_groups(b) {
                // References not looked at (a run stored before): no row, as in reports before.
                continue;
            }
            if r.differences.iter().any(|d| d.contrast == contrast) {
                diff_rows.push(json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "contrast": contrast,
                                      "a": a, "b": b, "cells": cells}));
            } else {
                diff_rows.push(json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "contrast": contrast,
                                      "a": a, "b": b, "missing": format!("no items tagged {a} or none tagged {b}")}));
            }
        }
    }
    let run_views: Vec<Value> = runs
        .iter()
        .map(|r| {
            let groups: Vec<Value> = r
                .groups
                .iter()
                .map(|g| {
                    let cells: Vec<Value> = r
                        .measures
                        .iter()
                        .map(|m| match g.measures.get(m) {
                            Some(s) => json!({"measure": m, "text": fmt4(s.mean), "ci": interval_text(s.lo, s.hi),
                                              "n": s.n, "mean": exact(s.mean), "lo": opt_exact(s.lo), "hi": opt_exact(s.hi)}),
                            None => json!({"measure": m, "none": true}),
                        })
                        .collect();
                    json!({"group": g.group, "kind": g.kind, "items": g.items, "cells": cells})
                })
                .collect();
            let simulator: Vec<Value> =
                simulator_tables(r, &pct).iter().map(|t| crate::render::tables::table_view(&r.run, t)).collect();
            json!({"key": key_of(&r.run), "run": r.run, "label": r.label, "available": r.available,
                   "unavailable": r.unavailable, "source": r.source, "not_run": r.not_run, "untagged": r.untagged,
                   "measures": r.measures, "groups": groups, "simulator": simulator})
        })
        .collect();
    json!({"method": t.method, "diff_measures": diff_measures, "diff_rows": diff_rows, "runs": run_views})
}
