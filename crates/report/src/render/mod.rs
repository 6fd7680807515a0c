//! The outputs: JSON, Markdown and CSV leaderboards and the self-contained HTML report, all from
//! one [`Leaderboard`].

pub mod baselines;
pub mod cards;
pub mod charts;
pub mod human;
pub mod sample;
pub mod tables;
pub mod tags;

use std::collections::HashMap;

use minijinja::{Environment, context};
use serde_json::{Value, json};

use crate::ReportError;
use crate::compute::leaderboard::Leaderboard;
use crate::compute::stat::GroupKind;
use crate::format::{DETECTABLE_NOTE, escape_script_json, fmt_ci, fmt_detectable, fmt_p, fmt_rank, fmt4, md};
use crate::load::{Generation, RunRecord};
use charts::run_keys;

/// The JSON leaderboard (pretty-printed).
pub fn to_json(lb: &Leaderboard) -> String {
    serde_json::to_string_pretty(lb).expect("the leaderboard serialises")
}

fn ci(s: Option<&crate::compute::stat::MetricStat>) -> String {
    match s {
        Some(s) => s.text(),
        None => "–".into(),
    }
}

/// The Markdown leaderboard.
pub fn to_markdown(lb: &Leaderboard) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let pct = (lb.bootstrap.confidence * 1000.0).round() / 10.0;
    let _ = writeln!(o, "# H2HTalk leaderboard\n");
    let _ = writeln!(
        o,
        "{pct}% bootstrap intervals, {} resamples, seed {} ({}).\n",
        lb.bootstrap.resamples, lb.bootstrap.seed, lb.bootstrap.method
    );
    let keys = run_keys(lb);
    let key_of = |id: &str| keys.iter().find(|k| k.id == id).map_or("?", |k| k.key.as_str()).to_string();
    match &lb.rank_metric {
        Some(metric) => {
            let _ = writeln!(o, "## Ranking by `{metric}` over all sub-task items\n");
            let _ = writeln!(
                o,
                "| rank | key | run | model · SAP | {metric} [{pct}% CI] | rank interval | items | scored | failed | dropped | pending |"
            );
            let _ = writeln!(o, "|---:|---|---|---|---|---|---:|---:|---:|---:|---:|");
            for e in &lb.ranking {
                let c = overall_coverage(lb, &e.run);
                let _ = writeln!(
                    o,
                    "| {} | {} | `{}` | {} | {} {} | {} | {} | {} | {} | {} | {} |",
                    e.rank,
                    key_of(&e.run),
                    e.run,
                    md(&e.label),
                    fmt4(e.mean),
                    fmt_ci(e.lo, e.hi),
                    fmt_rank(e.rank_lo, e.rank_hi),
                    c.items,
                    c.scored,
                    c.failed,
                    c.dropped,
                    c.pending
                );
            }
            for b in &lb.baselines {
                let Some(st) = b.group("overall").and_then(|g| g.metrics.get(metric)) else { continue };
                let c = b.group("overall").map(|g| g.coverage).unwrap_or_default();
                let _ = writeln!(
                    o,
                    "| baseline | – | `{}` | {} | {} {} | – | {} | {} | {} | {} | {} |",
                    b.id,
                    md(&b.label),
                    fmt4(st.mean),
                    fmt_ci(st.lo, st.hi),
                    c.items,
                    c.scored,
                    c.failed,
                    c.dropped,
                    c.pending
                );
            }
            if !lb.baselines.is_empty() {
                let _ = writeln!(o, "\nRows marked `baseline` answer without a model and are never ranked.");
            }
            for (id, why) in &lb.unranked {
                let _ = writeln!(o, "\nNot ranked: `{id}` ({why}).");
            }
            let _ = writeln!(o);
            if !lb.comparisons.is_empty() {
                let _ = writeln!(o, "### Each run against the next (paired bootstrap on shared scenarios)\n");
                let _ = writeln!(o, "| a | b | shared | a − b [{pct}% CI] | p | detectable |");
                let _ = writeln!(o, "|---|---|---:|---|---:|---:|");
                for c in &lb.comparisons {
                    let _ = writeln!(
                        o,
                        "| {} | {} | {} | {} {} | {} | {} |",
                        key_of(&c.a),
                        key_of(&c.b),
                        c.paired.n,
                        fmt4(c.paired.diff.mean),
                        fmt_ci(c.paired.diff.lo, c.paired.diff.hi),
                        fmt_p(c.paired.p_value),
                        fmt_detectable(c.paired.detectable)
                    );
                }
                let _ = writeln!(o, "\n{DETECTABLE_NOTE}\n");
            }
            o.push_str(&epochs_markdown(lb, &pct.to_string()));
            if !lb.sap.is_empty() {
                let _ = writeln!(o, "## SAP on against SAP off (`{metric}`, on − off, paired)\n");
                let _ = writeln!(o, "| model | group | shared | on | off | on − off [{pct}% CI] | p | detectable |");
                let _ = writeln!(o, "|---|---|---:|---:|---:|---|---:|---:|");
                for s in &lb.sap {
                    for c in &s.comparisons {
                        let _ = writeln!(
                            o,
                            "| {} | {} | {} | {} | {} | {} {} | {} | {} |",
                            md(&s.model),
                            c.group,
                            c.paired.n,
                            fmt4(c.paired.mean_a),
                            fmt4(c.paired.mean_b),
                            fmt4(c.paired.diff.mean),
                            fmt_ci(c.paired.diff.lo, c.paired.diff.hi),
                            fmt_p(c.paired.p_value),
                            fmt_detectable(c.paired.detectable)
                        );
                    }
                }
                let _ = writeln!(o, "\n{DETECTABLE_NOTE}\n");
            }
        }
        None => {
            let _ = writeln!(o, "No run has metric values yet: nothing to rank.\n");
        }
    }
    let _ = writeln!(o, "## Runs\n");
    for k in &keys {
        let r = lb.runs.iter().find(|r| r.id == k.id).expect("keyed run");
        let _ = writeln!(o, "### {} `{}`: {}\n", k.key, r.id, md(&r.label));
        let _ = writeln!(
            o,
            "Created {}, status {}; signatures: {}.\n",
            r.created_at,
            r.status,
            md(&r.signatures.join("; "))
        );
        o.push_str(&groups_markdown(lb, r));
    }
    if !lb.baselines.is_empty() {
        let _ = writeln!(o, "## Null baselines (answers without a model; never ranked)\n");
        for b in &lb.baselines {
            let _ = writeln!(o, "### `{}`: {}\n", b.id, md(&b.label));
            o.push_str(&groups_markdown(lb, b));
        }
    }
    o.push_str(&assessments_markdown(lb));
    // Findings by tag (crate::tags).
    o.push_str(&crate::render::tags::to_markdown(lb));
    o
}

/// The group table of one run (or baseline) in Markdown: coverage and every metric it has.
fn groups_markdown(lb: &Leaderboard, r: &crate::leaderboard::RunStats) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let metrics: Vec<&String> =
        lb.metrics.iter().filter(|m| r.groups.iter().any(|g| g.metrics.contains_key(*m))).collect();
    let _ = write!(o, "| group | items | scored | failed | dropped | pending |");
    for m in &metrics {
        let _ = write!(o, " {m} |");
    }
    let _ = write!(o, "\n|---|---:|---:|---:|---:|---:|");
    for _ in &metrics {
        let _ = write!(o, "---|");
    }
    let _ = writeln!(o);
    for g in &r.groups {
        let c = g.coverage;
        let name = if g.kind == GroupKind::Task { g.group.clone() } else { format!("**{}**", g.group) };
        let _ = write!(o, "| {name} | {} | {} | {} | {} | {} |", c.items, c.scored, c.failed, c.dropped, c.pending);
        for m in &metrics {
            let _ = write!(o, " {} |", ci(g.metrics.get(*m)));
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o);
    o
}

/// The null baselines alone (`h2htalk baselines`): one table per metric, a row per group (sub-task,
/// family, overall) and a column per baseline, each cell its mean with its interval and items.
pub fn baselines_markdown(baselines: &[crate::leaderboard::RunStats], metrics: &[String], pct: &str) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let mut groups: Vec<(&str, GroupKind)> = Vec::new();
    for g in baselines.iter().flat_map(|b| &b.groups) {
        if !groups.iter().any(|(n, _)| *n == g.group) {
            groups.push((&g.group, g.kind));
        }
    }
    for m in metrics {
        let _ = writeln!(o, "### `{m}`: mean [{pct}% CI] n (`dropped`: not scored by the profile)\n");
        let _ = write!(o, "| group |");
        for b in baselines {
            let _ = write!(o, " {} |", md(&b.label));
        }
        let _ = writeln!(o, "\n|---|{}", "---|".repeat(baselines.len()));
        for (name, kind) in &groups {
            let label = if *kind == GroupKind::Task { name.to_string() } else { format!("**{name}**") };
            let _ = write!(o, "| {label} |");
            for b in baselines {
                let g = b.group(name);
                let cell = match (g.and_then(|g| g.metrics.get(m)), g) {
                    (Some(s), _) => format!("{} n={}", s.text(), s.n),
                    (None, Some(g)) if g.coverage.dropped > 0 => format!("dropped ({})", g.coverage.dropped),
                    _ => "–".to_string(),
                };
                let _ = write!(o, " {cell} |");
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o);
    }
    o
}

/// The repeated-samples rows of `report.html`, best first.
fn epochs_view(lb: &Leaderboard) -> Vec<Value> {
    let mut groups: Vec<_> = lb.epochs.iter().collect();
    groups.sort_by_key(|g| g.rank);
    groups
        .into_iter()
        .map(|g| {
            json!({
                "rank": g.rank, "rank_interval": fmt_rank(g.rank_lo, g.rank_hi), "label": g.label,
                "samples": g.samples, "items": g.items, "mean": fmt4(g.mean), "ci": fmt_ci(g.lo, g.hi),
                "se": g.clustered_se.map_or_else(|| "n/a".to_string(), fmt4), "sd": fmt4(g.within_item_sd),
                "share": g.between_samples_share.map_or_else(|| "n/a".to_string(), |s| format!("{:.1}%", s * 100.0)),
            })
        })
        .collect()
}

/// The repeated-samples table of `leaderboard.md` (empty when no model has two samples).
pub(crate) fn epochs_markdown(lb: &Leaderboard, pct: &str) -> String {
    use std::fmt::Write;
    let Some(first) = lb.epochs.first() else { return String::new() };
    let mut o = String::new();
    let _ = writeln!(o, "## Repeated samples (`--epochs`): `{}` with the sampling noise\n", first.metric);
    let _ = writeln!(
        o,
        "| rank | rank interval | model · SAP | samples | items | mean of item means [{pct}% CI] | clustered SE | within-item SD | between samples |"
    );
    let _ = writeln!(o, "|---:|---|---|---:|---:|---|---:|---:|---:|");
    let mut groups: Vec<_> = lb.epochs.iter().collect();
    groups.sort_by_key(|g| g.rank);
    for g in groups {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} {} | {} | {} | {} |",
            g.rank,
            fmt_rank(g.rank_lo, g.rank_hi),
            md(&g.label),
            g.samples,
            g.items,
            fmt4(g.mean),
            fmt_ci(g.lo, g.hi),
            g.clustered_se.map_or_else(|| "n/a".to_string(), fmt4),
            fmt4(g.within_item_sd),
            g.between_samples_share.map_or_else(|| "n/a".to_string(), |s| format!("{:.1}%", s * 100.0))
        );
    }
    let _ = writeln!(
        o,
        "\nEach model's samples answer every item again (requests seeded seed + k). Mean of the items' means over \
         the items every sample scored; the interval and the rank interval resample items, then each item's \
         samples (two-stage bootstrap), so they include the sampling noise; clustered SE: items as clusters; \
         between samples: the share of the variance that lies between samples of one item.\n"
    );
    o
}

/// The assessments part of `leaderboard.md`: each run's sections, then the SAP on − off safety table.
fn assessments_markdown(lb: &Leaderboard) -> String {
    use crate::render::tables::{run_markdown, sap_safety_table, table_markdown};
    if lb.assessments.runs.is_empty() {
        return String::new();
    }
    let pct = crate::pct(lb.bootstrap.confidence);
    let keys = run_keys(lb);
    let mut o = String::from("## Assessments: format checks, judge, safety, simulator, tokens and cost\n\n");
    for k in &keys {
        if let Some(a) = lb.assessments.run(&k.id) {
            o.push_str(&format!("### {} `{}`: {}\n\n", k.key, k.id, md(&k.label)));
            o.push_str(&run_markdown(a, &pct));
        }
    }
    if let Some(t) = sap_safety_table(&lb.assessments, &pct) {
        o.push_str(&table_markdown(&t));
    }
    for h in &lb.assessments.human {
        o.push_str(&table_markdown(&crate::render::human::human_table(h, &pct)));
    }
    for c in &lb.assessments.judge_cards {
        o.push_str(&table_markdown(&crate::render::cards::card_table(c)));
    }
    o
}

/// The CSV leaderboard: one row per run, group and metric (a group without values has one row
/// with the metric fields empty).
pub fn to_csv(lb: &Leaderboard) -> Result<String, ReportError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let e = |e: csv::Error| ReportError::Render(format!("CSV: {e}"));
    w.write_record([
        "run_id",
        "label",
        "model",
        "sap",
        "group",
        "kind",
        "metric",
        "n",
        "mean",
        "ci_lo",
        "ci_hi",
        "items",
        "generated",
        "failed",
        "pending",
        "scored",
        "empty_predictions",
        "dropped",
        "unscored",
    ])
    .map_err(e)?;
    // Runs, then the null baselines (run_id `baseline:NAME`, sap empty).
    for r in lb.runs.iter().chain(&lb.baselines) {
        for g in &r.groups {
            let c = g.coverage;
            let kind = serde_json::to_value(g.kind).expect("kind").as_str().unwrap().to_string();
            let cov = [c.items, c.generated, c.failed, c.pending, c.scored, c.empty_predictions, c.dropped, c.unscored]
                .map(|v| v.to_string());
            let head = [
                r.id.clone(),
                r.label.clone(),
                r.model.clone(),
                r.sap.clone().unwrap_or_default(),
                g.group.clone(),
                kind,
            ];
            let rows: Vec<[String; 5]> = if g.metrics.is_empty() {
                vec![Default::default()]
            } else {
                lb.metrics
                    .iter()
                    .filter_map(|m| {
                        g.metrics.get(m).map(|s| {
                            [
                                m.clone(),
                                s.n.to_string(),
                                crate::format::exact(s.mean),
                                s.lo.map(crate::format::exact).unwrap_or_default(),
                                s.hi.map(crate::format::exact).unwrap_or_default(),
                            ]
                        })
                    })
                    .collect()
            };
            for row in rows {
                w.write_record(head.iter().chain(row.iter()).chain(cov.iter())).map_err(e)?;
            }
        }
    }
    // The assessments, one row per figure: `kind` is the section (`format_checks`, `judge:NAME`,
    // `safety:NAME`, `simulator`, `simulator_trajectory`, `usage`, `sap_safety`), `metric` the
    // figure's key, `mean` its value (empty: not available); coverage columns stay empty.
    let pct = crate::pct(lb.bootstrap.confidence);
    for (run, f) in crate::render::tables::figures(&lb.assessments, &pct) {
        let r = lb.runs.iter().find(|r| r.id == run);
        let opt = |v: Option<f64>| v.map(crate::format::exact).unwrap_or_default();
        let mut row = vec![
            run.clone(),
            r.map(|r| r.label.clone()).unwrap_or_default(),
            r.map(|r| r.model.clone()).unwrap_or_default(),
            r.and_then(|r| r.sap.clone()).unwrap_or_default(),
            f.group.clone(),
            f.section.clone(),
            f.key.clone(),
            f.n.map(|n| n.to_string()).unwrap_or_default(),
            opt(f.value),
            opt(f.lo),
            opt(f.hi),
        ];
        row.extend(std::iter::repeat_n(String::new(), 8));
        w.write_record(&row).map_err(e)?;
    }
    // Findings by tag (crate::tags): kinds `tag` and `tag_difference`.
    for row in crate::render::tags::csv_rows(lb) {
        w.write_record(&row).map_err(e)?;
    }
    String::from_utf8(w.into_inner().map_err(|e| ReportError::Render(format!("CSV: {e}")))?)
        .map_err(|e| ReportError::Render(format!("CSV: {e}")))
}

/// The viewer's data: the items `shown` keeps of every run ([`sample::select`]), texts interned in
/// one string table (system prompts and references repeat across runs).
pub fn transcripts(lb: &Leaderboard, runs: &[RunRecord], shown: &sample::Shown) -> Value {
    let mut table: Vec<String> = Vec::new();
    let mut idx: HashMap<String, usize> = HashMap::new();
    let mut put = |s: &str| -> usize {
        if let Some(i) = idx.get(s) {
            return *i;
        }
        table.push(s.to_string());
        idx.insert(s.to_string(), table.len() - 1);
        table.len() - 1
    };
    let keys = run_keys(lb);
    let tasks: Vec<String> = {
        let mut t: Vec<String> = lb.tasks.iter().map(|(t, _)| t.clone()).collect();
        for r in runs {
            for i in &r.items {
                if !t.contains(&i.task) {
                    t.push(i.task.clone());
                }
            }
        }
        t
    };
    let mut items = Vec::new();
    for k in &keys {
        let run = runs.iter().find(|r| r.run.id == k.id).expect("keyed run");
        let run_index = keys.iter().position(|x| x.id == run.run.id).expect("keyed run");
        for it in run.items.iter().filter(|it| shown.keeps(it)) {
            let prompt: Vec<Value> = it.prompt.iter().map(|m| json!([m.role, put(&m.content)])).collect();
            let gen_code = match it.generation {
                Generation::Pending => 0,
                Generation::Generated => 1,
                Generation::Failed => 2,
            };
            let scores: Vec<Value> =
                lb.metrics.iter().map(|m| it.metrics.get(m).map_or(Value::Null, |v| json!(v))).collect();
            items.push(json!([
                run_index,
                tasks.iter().position(|t| *t == it.task).unwrap(),
                it.scenario_id,
                it.lang,
                gen_code,
                it.scoring.name(),
                prompt,
                it.answer.as_deref().map_or(Value::Null, |a| json!(put(a))),
                put(&it.reference),
                scores,
                it.error.as_deref().map_or(Value::Null, |e| json!(put(e))),
            ]));
        }
    }
    json!({
        "fields": ["run", "task", "scenario_id", "lang", "generation", "scoring", "prompt", "answer", "reference", "scores", "error"],
        "generation": ["pending", "generated", "failed"],
        "runs": keys,
        "view": VIEW_URL,
        "tasks": tasks,
        "metrics": lb.metrics,
        "strings": table,
        "items": items,
        "shown": {"items": shown.items, "all_items": shown.all_items, "scenarios": shown.scenario_count,
                  "all_scenarios": shown.all_scenarios, "note": shown.note()},
    })
}

const TEMPLATE: &str = include_str!("../../templates/report.html");

/// Where `h2htalk view` listens by default: the report's links into it (the page works without it).
pub const VIEW_URL: &str = "http://127.0.0.1:8765";

const STYLE: &str = include_str!("../../templates/report.css");

const SCRIPT: &str = include_str!("../../templates/report.js");

const TAGS_TEMPLATE: &str = include_str!("../../templates/tags.html");

const SIDE_TEMPLATE: &str = include_str!("../../templates/side_by_side.html");

const SIDE_SCRIPT: &str = include_str!("../../templates/side_by_side.js");

/// The transcripts `report.html` carries of `runs` ([`sample::select`] within its budget).
pub fn shown(lb: &Leaderboard, runs: &[RunRecord]) -> sample::Shown {
    let per_run: Vec<&[crate::load::ItemRecord]> = runs.iter().map(|r| r.items.as_slice()).collect();
    sample::select(&per_run, lb.rank_metric.as_deref(), sample::TRANSCRIPT_BUDGET)
}

/// The self-contained HTML report: charts as inline SVG, the leaderboard and the transcripts as
/// JSON inside `<script type="application/json">`, no external resource of any kind.
pub fn to_html(lb: &Leaderboard, runs: &[RunRecord]) -> Result<String, ReportError> {
    to_html_showing(lb, runs, &shown(lb, runs))
}

/// [`to_html`] with the transcripts `shown` (whose items must carry their texts).
pub fn to_html_showing(lb: &Leaderboard, runs: &[RunRecord], shown: &sample::Shown) -> Result<String, ReportError> {
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE).map_err(|e| ReportError::Render(format!("template: {e:#}")))?;
    // Findings by tag and the side-by-side viewer (crate::tags), included by report.html.
    env.add_template("tags.html", TAGS_TEMPLATE).map_err(|e| ReportError::Render(format!("template: {e:#}")))?;
    env.add_template("side_by_side.html", SIDE_TEMPLATE)
        .map_err(|e| ReportError::Render(format!("template: {e:#}")))?;
    let tmpl = env.get_template("report.html").map_err(|e| ReportError::Render(format!("template: {e:#}")))?;
    let metric = lb.rank_metric.clone().unwrap_or_default();
    let keys = run_keys(lb);
    let runs_view: Vec<Value> = keys
        .iter()
        .map(|k| {
            let r = lb.runs.iter().find(|r| r.id == k.id).unwrap();
            let metrics: Vec<&String> = lb.metrics.iter().filter(|m| r.groups.iter().any(|g| g.metrics.contains_key(*m))).collect();
            let groups: Vec<Value> = r
                .groups
                .iter()
                .map(|g| {
                    json!({
                        "group": g.group,
                        "kind": g.kind,
                        "coverage": g.coverage,
                        "cells": metrics.iter().map(|m| match g.metrics.get(*m) {
                            Some(s) => json!({"text": fmt4(s.mean), "ci": fmt_ci(s.lo, s.hi), "n": s.n, "mean": crate::format::exact(s.mean)}),
                            None => json!(null),
                        }).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "key": k.key, "id": r.id, "label": r.label, "model": r.model, "sap": r.sap, "created_at": r.created_at,
                "status": r.status, "signatures": r.signatures, "composite_computed": r.composite_computed,
                "metrics": metrics, "groups": groups,
                "provenance": serde_json::to_string_pretty(&r.provenance).unwrap(),
            })
        })
        .collect();
    let key_of = |id: &str| keys.iter().find(|k| k.id == id).map_or("?".to_string(), |k| k.key.clone());
    let ranking: Vec<Value> = lb
        .ranking
        .iter()
        .map(|e| {
            let c = overall_coverage(lb, &e.run);
            json!({"rank": e.rank, "key": key_of(&e.run), "run": e.run, "label": e.label, "mean": crate::format::exact(e.mean),
                   "text": fmt4(e.mean), "ci": fmt_ci(e.lo, e.hi),
                   "rank_interval": fmt_rank(e.rank_lo, e.rank_hi), "coverage": c})
        })
        .collect();
    let baseline_rows: Vec<Value> = lb
        .baselines
        .iter()
        .filter_map(|b| {
            let g = b.group("overall")?;
            let st = g.metrics.get(&metric)?;
            Some(json!({"id": b.id, "label": b.label, "mean": crate::format::exact(st.mean), "text": fmt4(st.mean),
                        "ci": fmt_ci(st.lo, st.hi), "coverage": g.coverage}))
        })
        .collect();
    let cmp = |c: &crate::leaderboard::Comparison| {
        json!({"a": key_of(&c.a), "b": key_of(&c.b), "a_run": c.a, "b_run": c.b, "group": c.group, "n": c.paired.n,
               "mean_a": fmt4(c.paired.mean_a), "mean_b": fmt4(c.paired.mean_b), "diff": fmt4(c.paired.diff.mean),
               "diff_exact": crate::format::exact(c.paired.diff.mean),
               "ci": fmt_ci(c.paired.diff.lo, c.paired.diff.hi),
               "p": fmt_p(c.paired.p_value), "detectable": fmt_detectable(c.paired.detectable),
               "significant": c.paired.diff.lo.is_some_and(|lo| lo > 0.0) || c.paired.diff.hi.is_some_and(|hi| hi < 0.0)})
    };
    let sap: Vec<Value> = lb
        .sap
        .iter()
        .map(|s| {
            json!({"model": s.model, "on": key_of(&s.on), "off": key_of(&s.off), "on_run": s.on, "off_run": s.off,
                        "rows": s.comparisons.iter().map(cmp).collect::<Vec<_>>()})
        })
        .collect();
    let assessments = assessments_view(lb);
    let lb_json = escape_script_json(&serde_json::to_string(lb).expect("the leaderboard serialises"));
    // A large sweep's leaderboard is left out of the page (its figures are in the tables, each cell
    // with its exact value, and in leaderboard.json beside it): it was a fifth of a 50-model page.
    let lb_bytes = lb_json.len();
    let lb_json = (lb_bytes <= EMBED_LEADERBOARD_MAX).then_some(lb_json);
    let tr_json = escape_script_json(&transcripts(lb, runs, shown).to_string());
    let items: usize = runs.iter().map(|r| r.items.len()).sum();
    tmpl.render(context! {
        style => STYLE,
        script => SCRIPT,
        lb => lb,
        metric => metric,
        pct => format!("{}", (lb.bootstrap.confidence * 1000.0).round() / 10.0),
        keys => keys,
        ranking => ranking,
        baseline_rows => baseline_rows,
        unranked => lb.unranked,
        comparisons => lb.comparisons.iter().map(cmp).collect::<Vec<_>>(),
        epochs => epochs_view(lb),
        sap => sap,
        detectable_note => DETECTABLE_NOTE,
        bars => charts::family_bars(lb, &metric),
        heat => charts::heat_map(lb, &metric),
        radars => charts::radars(lb, &metric),
        runs => runs_view,
        assessments => assessments,
        items => items,
        leaderboard_json => lb_json,
        leaderboard_mb => format!("{:.1}", lb_bytes as f64 / 1e6),
        embed_max_mb => EMBED_LEADERBOARD_MAX >> 20,
        transcripts_json => tr_json,
        transcripts_note => shown.note(),
        tags => crate::render::tags::html_view(lb),
        side_script => SIDE_SCRIPT,
        view => VIEW_URL,
    })
    .map_err(|e| ReportError::Render(format!("template: {e:#}")))
}

/// The largest leaderboard (compact JSON, bytes) that `report.html` embeds whole.
pub const EMBED_LEADERBOARD_MAX: usize = 4 << 20;

/// A run's coverage over all its sub-task items (empty when the run has no overall group).
fn overall_coverage(lb: &Leaderboard, run: &str) -> crate::leaderboard::Coverage {
    lb.runs.iter().find(|r| r.id == run).and_then(|r| r.group("overall")).map(|g| g.coverage).unwrap_or_default()
}

/// The assessments for `report.html`: per run (in key order) its tables, then the SAP on − off
/// safety table; every figure cell carries `data-fig` (`run|section|group|key`) and `data-value`
/// (the exact value of `leaderboard.json`).
fn assessments_view(lb: &Leaderboard) -> Value {
    use crate::render::tables::{sap_safety_table, tables};
    let pct = crate::pct(lb.bootstrap.confidence);
    let table = tables::table_view;
    let runs: Vec<Value> = run_keys(lb)
        .iter()
        .filter_map(|k| {
            let a = lb.assessments.run(&k.id)?;
            let ts: Vec<Value> = tables(a, &pct).iter().map(|t| table(&k.id, t)).collect();
            Some(json!({"key": k.key, "id": k.id, "label": k.label, "tables": ts}))
        })
        .collect();
    let human: Vec<Value> =
        lb.assessments.human.iter().map(|h| table("", &crate::render::human::human_table(h, &pct))).collect();
    let cards: Vec<Value> =
        lb.assessments.judge_cards.iter().map(|c| table("", &crate::render::cards::card_table(c))).collect();
    json!({"runs": runs, "sap": sap_safety_table(&lb.assessments, &pct).map(|t| table("", &t)), "human": human, "cards": cards})
}
