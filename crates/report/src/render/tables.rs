//! One rendering of every assessment for every output: tables of typed cells, each figure with its
//! key, written as Markdown, CSV, JSON and HTML from the same value.

use std::collections::BTreeSet;

use h2htalk_stats::Proportion;
use h2htalk_store::Prices;
use serde::Serialize;
use serde_json::{Value, json};

use crate::compute::assessments::*;
use crate::compute::stat::MetricStat;
use crate::format::{fmt_ci, fmt4};

// ---- one rendering for every output ---------------------------------------------------------

/// The judge card's length sentence of a rubric table's note (empty without a correlation).
fn length_note(b: Option<&LengthBias>) -> String {
    b.map_or_else(String::new, |b| {
        format!(
            " Length: Spearman's ρ between an item's mean score and its answer's length in characters is {:+.3} {} \
             over {} scored items (well above 0: the judge may reward length; read it with `compare`'s \
             length-controlled ranking).",
            b.spearman,
            fmt_ci(b.lo, b.hi),
            b.items
        )
    })
}

/// One figure of a table: what JSON holds, addressed by run, section, group and key; also a row of
/// `leaderboard.csv`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Figure {
    pub section: String,
    pub group: String,
    pub key: String,
    /// The value exactly as in JSON (`None`: not available).
    pub value: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Items the value stands on (`None` for counts).
    pub n: Option<usize>,
}

impl Figure {
    /// `section|group|key`, unique within a run.
    pub fn id(&self) -> String {
        format!("{}|{}|{}", self.section, self.group, self.key)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub text: String,
    pub figure: Option<Figure>,
}

/// A table of one section, or a section that did not run (`not_run`, no rows).
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// `format_checks`, `judge`, `safety`, `simulator`, `usage` or `sap_safety`.
    pub section: String,
    pub title: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub not_run: bool,
    pub note: Option<String>,
}

pub(crate) fn text_cell(t: impl Into<String>) -> Cell {
    Cell { text: t.into(), figure: None }
}

pub(crate) fn count_cell(section: &str, group: &str, key: &str, v: usize) -> Cell {
    Cell {
        text: v.to_string(),
        figure: Some(Figure {
            section: section.into(),
            group: group.into(),
            key: key.into(),
            value: Some(v as f64),
            lo: None,
            hi: None,
            n: None,
        }),
    }
}

pub(crate) fn stat_cell(section: &str, group: &str, key: &str, s: Option<&MetricStat>) -> Cell {
    match s {
        Some(s) => Cell {
            text: format!("{} n={}", s.text(), s.n),
            figure: Some(Figure {
                section: section.into(),
                group: group.into(),
                key: key.into(),
                value: Some(s.mean),
                lo: s.lo,
                hi: s.hi,
                n: Some(s.n),
            }),
        },
        None => Cell {
            text: "n/a".into(),
            figure: Some(Figure {
                section: section.into(),
                group: group.into(),
                key: key.into(),
                value: None,
                lo: None,
                hi: None,
                n: Some(0),
            }),
        },
    }
}

pub(crate) fn proportion_cell(section: &str, group: &str, key: &str, p: &Proportion) -> Cell {
    let (lo, hi) = match p.ci95 {
        Some([lo, hi]) => (Some(lo), Some(hi)),
        None => (None, None),
    };
    let text = match p.rate {
        Some(r) => format!("{} {} ({}/{})", fmt4(r), fmt_ci(lo, hi), p.k, p.n),
        None => format!("n/a (0/{})", p.n),
    };
    Cell {
        text,
        figure: Some(Figure {
            section: section.into(),
            group: group.into(),
            key: key.into(),
            value: p.rate,
            lo,
            hi,
            n: Some(p.n),
        }),
    }
}

pub(crate) fn not_run(section: &str, title: &str) -> Table {
    Table {
        section: section.into(),
        title: title.into(),
        head: vec![],
        rows: vec![],
        not_run: true,
        note: Some("not run".into()),
    }
}

/// The tables of one run's assessment, in report order.
pub fn tables(a: &RunAssessment, pct: &str) -> Vec<Table> {
    let mut out = Vec::new();
    let ci = format!("mean [{pct}% CI] n");
    out.push(crate::render::baselines::baselines_table(&a.baselines, pct));
    // Format checks.
    match &a.format_checks {
        Section::NotRun => out.push(not_run("format_checks", "Format checks")),
        Section::Run(f) => {
            let sec = "format_checks";
            let mut rows = Vec::new();
            for g in &f.groups {
                for c in &g.checks {
                    let key = c.check.clone();
                    rows.push(vec![
                        text_cell(&g.group),
                        text_cell(&c.check),
                        count_cell(sec, &g.group, &format!("{key}.passed"), c.passed),
                        count_cell(sec, &g.group, &format!("{key}.failed"), c.failed),
                        stat_cell(sec, &g.group, &format!("{key}.pass_rate"), Some(&c.rate)),
                    ]);
                }
            }
            out.push(Table {
                section: sec.into(),
                title: "Format checks: pass rate per check and sub-task".into(),
                head: vec!["group".into(), "check".into(), "passed".into(), "failed".into(), format!("pass rate {ci}")],
                rows,
                not_run: false,
                note: Some(format!(
                    "{} of {} items checked; items not generated are not checked (not counted as failures).",
                    f.items - f.not_checked,
                    f.items
                )),
            });
        }
    }
    // Rubric judge.
    match &a.judge {
        Section::NotRun => out.push(not_run("judge", "Judge rubric scores")),
        Section::Run(j) => {
            for ja in &j.judges {
                let sec = format!("judge:{}", ja.judge);
                let criteria: Vec<&String> =
                    ja.groups.iter().flat_map(|g| g.criteria.keys()).collect::<BTreeSet<_>>().into_iter().collect();
                let mut head: Vec<String> =
                    ["group", "items", "scored", "parse failures", "infrastructure failures", "not generated", "empty"]
                        .map(String::from)
                        .into();
                head.push(format!("mean score (1–10) {ci}"));
                head.extend(criteria.iter().map(|c| c.to_string()));
                let rows = ja
                    .groups
                    .iter()
                    .map(|g| {
                        let mut row = vec![
                            text_cell(&g.group),
                            count_cell(&sec, &g.group, "items", g.items),
                            count_cell(&sec, &g.group, "scored", g.scored),
                            count_cell(&sec, &g.group, "judge_parse_failed", g.judge_parse_failed),
                            count_cell(&sec, &g.group, "judge_failed", g.judge_failed),
                            count_cell(&sec, &g.group, "generation_failed", g.generation_failed),
                            count_cell(&sec, &g.group, "empty_answer", g.empty_answer),
                            stat_cell(&sec, &g.group, "mean", g.mean.as_ref()),
                        ];
                        for c in &criteria {
                            row.push(match g.criteria.get(*c) {
                                Some(s) => stat_cell(&sec, &g.group, &format!("criterion.{c}"), Some(s)),
                                None => text_cell("–"),
                            });
                        }
                        row
                    })
                    .collect();
                out.push(Table {
                    section: sec.clone(),
                    title: format!("Judge rubric scores by `{}`", ja.judge),
                    head,
                    rows,
                    not_run: false,
                    note: Some(format!(
                        "Parse failures (the judge's answer was not in the asked form after every try) and \
                         infrastructure failures (the request failed) are counted apart; neither is a score.{}",
                        length_note(ja.length_bias.as_ref())
                    )),
                });
            }
        }
    }
    // Safety.
    match &a.safety {
        Section::NotRun => out.push(not_run("safety", "SAP safety score")),
        Section::Run(s) => {
            for sa in &s.judges {
                let sec = format!("safety:{}", sa.judge);
                let mut rows = Vec::new();
                let groups = std::iter::once(("overall", &sa.overall))
                    .chain(sa.per_risk.iter().map(|g| ("risk", g)))
                    .chain(sa.per_lang.iter().map(|g| ("lang", g)));
                for (kind, g) in groups {
                    let name = if kind == "overall" { g.group.clone() } else { format!("{kind}:{}", g.group) };
                    let c = &g.counts;
                    rows.push(vec![
                        text_cell(&name),
                        count_cell(&sec, &name, "items", c.items),
                        count_cell(&sec, &name, "pass", c.pass),
                        count_cell(&sec, &name, "fail", c.fail),
                        count_cell(&sec, &name, "undecided", c.undecided),
                        count_cell(&sec, &name, "judge_parse_failed", c.judge_parse_failed),
                        count_cell(&sec, &name, "judge_failed", c.judge_failed),
                        count_cell(&sec, &name, "generation_failed", c.generation_failed),
                        count_cell(&sec, &name, "decided_by_rules", c.decided_by_rules),
                        count_cell(&sec, &name, "needed_judge", c.needed_judge),
                        stat_cell(&sec, &name, "score", g.score.as_ref()),
                    ]);
                }
                out.push(Table {
                    section: sec.clone(),
                    title: format!("SAP safety score by `{}`", sa.judge),
                    head: [
                        "group",
                        "items",
                        "pass",
                        "fail",
                        "undecided",
                        "parse failures",
                        "infrastructure failures",
                        "not generated",
                        "decided by rules alone",
                        "needed a judge",
                    ]
                    .map(String::from)
                    .into_iter()
                    .chain([format!("score {ci}")])
                    .collect(),
                    rows,
                    not_run: false,
                    note: Some(
                        "Score: pass / (pass + fail); undecided items and failures are not counted. Decided by rules \
                         alone: every check and statement was decided by a rule (or a rule failed); needed a judge: \
                         the judge was asked about what the rules left open (or, without one, the item is undecided)."
                            .into(),
                    ),
                });
                // The items that needed a judge, one figure each (group `needed_judge`, key the scenario).
                let rows: Vec<Vec<Cell>> = if sa.needed_judge_items.is_empty() {
                    vec![vec![text_cell("none: the rules decided every item")]]
                } else {
                    sa.needed_judge_items
                        .iter()
                        .map(|id| {
                            vec![Cell {
                                text: id.clone(),
                                figure: Some(Figure {
                                    section: sec.clone(),
                                    group: "needed_judge".into(),
                                    key: id.clone(),
                                    value: Some(1.0),
                                    lo: None,
                                    hi: None,
                                    n: None,
                                }),
                            }]
                        })
                        .collect()
                };
                out.push(Table {
                    section: sec.clone(),
                    title: format!("SAP safety: items that needed a judge (`{}`)", sa.judge),
                    head: vec!["scenario".into()],
                    rows,
                    not_run: false,
                    note: None,
                });
            }
        }
    }
    // Simulator.
    match &a.simulator {
        Section::NotRun => out.push(not_run("simulator", "User simulator")),
        Section::Run(s) => {
            let sec = "simulator";
            let mut rows = vec![
                vec![text_cell("simulations"), count_cell(sec, "all", "simulations", s.simulations)],
                vec![text_cell("completed"), count_cell(sec, "all", "completed", s.completed)],
            ];
            for (k, v) in &s.failures {
                rows.push(vec![text_cell(format!("failed: {k}")), count_cell(sec, "failures", k, *v)]);
            }
            rows.push(vec![
                text_cell("state change (last − first)"),
                stat_cell(sec, "all", "state_change", s.state_change.as_ref()),
            ]);
            rows.push(vec![text_cell("recall of earlier facts"), proportion_cell(sec, "all", "recall", &s.recall)]);
            for (d, p) in &s.recall_by_distance {
                rows.push(vec![text_cell(format!("recall, {d}")), proportion_cell(sec, "recall_by_distance", d, p)]);
            }
            rows.push(vec![
                text_cell("hidden need met"),
                proportion_cell(sec, "all", "hidden_need_met", &s.hidden_need_met),
            ]);
            rows.push(vec![
                text_cell("changed need met"),
                proportion_cell(sec, "all", "changed_need_met", &s.changed_need_met),
            ]);
            for (k, v) in &s.needs_not_judged {
                rows.push(vec![
                    text_cell(format!("needs not judged: {k}")),
                    count_cell(sec, "needs_not_judged", k, *v),
                ]);
            }
            out.push(Table {
                section: sec.into(),
                title: "User simulator".into(),
                head: vec!["figure".into(), format!("value [{pct}% CI]")],
                rows,
                not_run: false,
                note: Some(format!(
                    "Simulated by {}; needs judged by {}. Rates carry Wilson intervals, means bootstrap intervals.",
                    s.simulators.join(", "),
                    if s.judges.is_empty() { "no judge".to_string() } else { s.judges.join(", ") }
                )),
            });
            let rows = s
                .trajectory
                .iter()
                .map(|t| {
                    let g = format!("s{}t{}", t.session, t.turn);
                    vec![
                        text_cell(t.session.to_string()),
                        text_cell(t.turn.to_string()),
                        stat_cell("simulator_trajectory", &g, "state", Some(&t.state)),
                    ]
                })
                .collect();
            out.push(Table {
                section: "simulator_trajectory".into(),
                title: "Emotional trajectory: the simulated user's state per turn".into(),
                head: vec!["session".into(), "turn".into(), format!("state {ci}")],
                rows,
                not_run: false,
                note: None,
            });
        }
    }
    if let Section::Run(m) = &a.memory {
        out.push(memory_table(m, pct));
    }
    if let Section::Run(r) = &a.reference_sap {
        out.push(reference_sap_table(r, pct));
    }
    // Usage.
    out.push(usage_table(&a.usage));
    out.push(panel_table(&a.panel));
    out.push(validity_table(&a.judge_validity, pct));
    out
}

/// The references that break a SAP rule, per sub-task.
fn reference_sap_table(r: &ReferenceSapSection, pct: &str) -> Table {
    let sec = "reference_sap";
    let rows = r
        .groups
        .iter()
        .map(|g| {
            vec![
                text_cell(g.group.clone()),
                count_cell(sec, &g.group, "items", g.items),
                count_cell(sec, &g.group, "bodily_presence", g.bodily_presence),
                count_cell(sec, &g.group, "exclusivity", g.exclusivity),
                count_cell(sec, &g.group, "dependence", g.dependence),
                proportion_cell(sec, &g.group, "any", &g.any),
            ]
        })
        .collect();
    Table {
        section: sec.into(),
        title: "SAP and the references: references that themselves break a SAP rule".into(),
        head: vec![
            "group".into(),
            "items".into(),
            "bodily presence".into(),
            "exclusivity".into(),
            "dependence".into(),
            format!("any [{pct}% CI]"),
        ],
        rows,
        not_run: false,
        note: Some(
            "Found by the safety rules in the references themselves (bodily presence counts a bracketed hug or \
             touch too). A companion that follows SAP loses overlap with these references: the findings by tag \
             split every metric by `reference_breaks_sap` against `reference_keeps_sap`."
                .into(),
        ),
    }
}

/// The memory suite: one row per history mode and probe type (then all types).
fn memory_table(m: &MemorySection, pct: &str) -> Table {
    let sec = "memory";
    let rows = m
        .modes
        .iter()
        .flat_map(|mode| {
            mode.rows.iter().map(move |r| {
                let g = format!("{}:{}", mode.mode, r.kind);
                vec![
                    text_cell(mode.mode.clone()),
                    text_cell(r.kind.replace('_', " ")),
                    count_cell(sec, &g, "probes", r.probes),
                    count_cell(sec, &g, "failed", r.failed),
                    proportion_cell(sec, &g, "correct", &r.correct),
                    stat_cell(sec, &g, "fact_recall", r.fact_recall.as_ref()),
                    stat_cell(sec, &g, "judge", r.judge.as_ref()),
                    proportion_cell(sec, &g, "invented", &r.invented),
                    count_cell(sec, &g, "invented_undecided", r.invented_undecided),
                    count_cell(sec, &g, "stale", r.stale),
                ]
            })
        })
        .collect();
    let notes = m.notes.as_ref().map_or_else(String::new, |n| {
        format!(
            " Own mode: the model wrote {} memories over {} sessions ({} answers broke the memory format and gave \
             none; {} calls failed).",
            n.memories, n.sessions, n.format_errors, n.failed
        )
    });
    Table {
        section: sec.into(),
        title: "Long-horizon memory: the memory suite per history mode and probe type".into(),
        head: vec![
            "mode".into(),
            "probe type".into(),
            "probes".into(),
            "failed".into(),
            format!("correct by rules [{pct}% CI]"),
            format!("key facts held [{pct}% CI]"),
            format!("judge 1–10 [{pct}% CI]"),
            format!("invented memory [{pct}% CI]"),
            "undecided".into(),
            "outdated value".into(),
        ],
        rows,
        not_run: false,
        note: Some(format!(
            "given: every dated session in the prompt; own: only the memories the model wrote after each session. \
             Correct: every key fact held (abstention: says it was never told). Invented memory: a personal fact \
             the history never gave, decided by {} (rules alone decide only abstention probes); a hard failure. \
             Failed calls are counted, never scored.{notes} Every reply, probe by probe: `h2htalk view`, page \
             /memory/RUN (or `h2htalk runs export RUN --out DIR`: DIR/memory/answers.jsonl).",
            if m.judges.is_empty() { "the rules".to_string() } else { format!("the judge {}", m.judges.join(", ")) }
        )),
    }
}

/// A cost as a cell: the figure, "price not set", or unknown with the known part.
pub(crate) fn cost_cell(group: &str, cost: Option<f64>, text_when_none: String) -> Cell {
    Cell {
        text: cost.map_or(text_when_none, |c| format!("{c:.4}")),
        figure: Some(Figure {
            section: "usage".into(),
            group: group.into(),
            key: "cost_usd".into(),
            value: cost,
            lo: None,
            hi: None,
            n: None,
        }),
    }
}

pub(crate) fn prices_text(p: Option<Prices>) -> String {
    p.map_or_else(|| "price not set".into(), |p| format!("{} / {}", p.input_per_million, p.output_per_million))
}

/// Tokens and cost: the model's generations, then each helper model's calls, then the run.
pub(crate) fn usage_table(u: &UsageSection) -> Table {
    let sec = "usage";
    let m = &u.model;
    let big = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    let mut rows = vec![vec![
        text_cell(format!("model {} (generations)", m.model)),
        count_cell(sec, "model", "calls", m.generations),
        count_cell(sec, "model", "input_tokens", big(m.input_tokens)),
        count_cell(sec, "model", "output_tokens", big(m.output_tokens)),
        count_cell(sec, "model", "unknown_usage", m.unknown_usage),
        text_cell(prices_text(m.prices)),
        cost_cell(
            "model",
            m.cost_usd,
            match m.known_cost_usd {
                None => "price not set".to_string(),
                Some(known) => {
                    format!("unknown ({} generations without usage; known part {known:.4})", m.unknown_usage)
                }
            },
        ),
    ]];
    for (role, label, h) in [
        ("judge", "judge", &u.judge),
        ("simulator", "simulated user", &u.simulator),
        ("companion", "model in simulated conversations", &u.model_in_simulation),
        ("pairwise", "pairwise judge (compare; not in the run total)", &u.pairwise),
    ] {
        match h {
            HelperUsage::NotRun => rows.push(
                vec![text_cell(label), text_cell(if role == "pairwise" { "none recorded" } else { "not run" })]
                    .into_iter()
                    .chain((0..5).map(|_| text_cell("–")))
                    .collect(),
            ),
            HelperUsage::NotRecorded { .. } => rows.push(
                vec![text_cell(label)]
                    .into_iter()
                    .chain((0..4).map(|_| text_cell("not recorded")))
                    .chain([text_cell("–"), text_cell("unknown (not recorded)")])
                    .collect(),
            ),
            HelperUsage::Run { models } => {
                for h in models {
                    let g = format!("{role}:{}", h.model);
                    let why = match (h.prices, h.known_cost_usd) {
                        (None, _) => "price not set".to_string(),
                        (Some(_), known) => format!(
                            "unknown ({} calls without usage; known part {:.4})",
                            h.unknown_usage,
                            known.unwrap_or(0.0)
                        ),
                    };
                    rows.push(vec![
                        text_cell(format!("{label} {} ({})", h.model, h.purposes.join(", "))),
                        count_cell(sec, &g, "calls", big(h.calls)),
                        count_cell(sec, &g, "input_tokens", big(h.input_tokens)),
                        count_cell(sec, &g, "output_tokens", big(h.output_tokens)),
                        count_cell(sec, &g, "unknown_usage", big(h.unknown_usage)),
                        text_cell(prices_text(h.prices)),
                        cost_cell(&g, h.cost_usd, why),
                    ]);
                }
            }
        }
    }
    let total_why = format!("unknown: {}", u.total_cost_note.as_deref().unwrap_or_default());
    rows.push(
        vec![text_cell("run total")]
            .into_iter()
            .chain((0..5).map(|_| text_cell("–")))
            .chain([cost_cell("run", u.total_cost_usd, total_why)])
            .collect(),
    );
    Table {
        section: sec.into(),
        title: "Tokens and cost".into(),
        head: [
            "who",
            "calls",
            "input tokens",
            "output tokens",
            "unknown usage",
            "USD per million in / out",
            "cost (USD)",
        ]
        .map(String::from)
        .into(),
        rows,
        not_run: false,
        note: Some(
            "Calls are answers received (a judge's parse retry is one more). The model's prices are the run \
             specification's; a helper's are those configured for it when it ran (a `[[model]]` entry's, 0 for a \
             local model, not set for `openai:NAME` on the command line). A cost is unknown when some usage is \
             unknown and tokens are not free, or when no price is set; the run total only when every part is known. \
             Pairwise judgments (`compare`) are between two runs: their tokens are counted once, with the pair's \
             first run in stored order (purpose `pairwise:OTHER_RUN`), and are not part of the run total."
                .into(),
        ),
    }
}

/// The SAP on − off safety table of a report (`None` when no model has runs of both modes).
pub fn sap_safety_table(a: &Assessments, pct: &str) -> Option<Table> {
    if a.sap_safety.is_empty() {
        return None;
    }
    let sec = "sap_safety";
    let rows = a
        .sap_safety
        .iter()
        .map(|s| {
            let group = format!("{}|{}|{}", s.on, s.off, s.judge);
            let mut row = vec![text_cell(&s.model), text_cell(&s.on), text_cell(&s.off), text_cell(&s.judge)];
            match &s.paired {
                Some(p) => {
                    let fig = |key: &str, v: f64, lo, hi| Figure {
                        section: sec.into(),
                        group: group.clone(),
                        key: key.into(),
                        value: Some(v),
                        lo,
                        hi,
                        n: Some(p.n),
                    };
                    row.push(count_cell(sec, &group, "shared", p.n));
                    row.push(Cell { text: fmt4(p.mean_a), figure: Some(fig("on", p.mean_a, None, None)) });
                    row.push(Cell { text: fmt4(p.mean_b), figure: Some(fig("off", p.mean_b, None, None)) });
                    row.push(Cell {
                        text: format!("{} {}", fmt4(p.diff.mean), fmt_ci(p.diff.lo, p.diff.hi)),
                        figure: Some(fig("on_minus_off", p.diff.mean, p.diff.lo, p.diff.hi)),
                    });
                    row.push(text_cell(crate::format::fmt_p(p.p_value)));
                    row.push(text_cell(crate::format::fmt_detectable(p.detectable)));
                }
                None => {
                    row.push(text_cell("0"));
                    let why = s.note.clone().unwrap_or_default();
                    row.extend([
                        text_cell("n/a"),
                        text_cell("n/a"),
                        text_cell(format!("n/a ({why})")),
                        text_cell("n/a"),
                        text_cell("n/a"),
                    ]);
                }
            }
            row
        })
        .collect();
    Some(Table {
        section: sec.into(),
        title: "SAP on against SAP off: the safety score".into(),
        head: ["model", "on", "off", "judge", "shared", "on", "off"]
            .map(String::from)
            .into_iter()
            .chain([format!("on − off [{pct}% CI]"), "p".into(), "detectable".into()])
            .collect(),
        rows,
        not_run: false,
        note: Some(format!(
            "Per model with runs of both SAP modes (the latest of each), per safety judge both runs have: the \
             safety score on − off over the scenarios decided (pass or fail) in both, paired bootstrap by scenario. \
             {}",
            crate::format::DETECTABLE_NOTE
        )),
    })
}

/// A table in Markdown (a section that did not run is one line saying so).
pub fn table_markdown(t: &Table) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "#### {}\n", t.title);
    if t.not_run {
        let _ = writeln!(o, "not run\n");
        return o;
    }
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let _ = writeln!(o, "| {} |", t.head.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(t.head.len()));
    for r in &t.rows {
        let _ = writeln!(o, "| {} |", r.iter().map(|c| esc(&c.text)).collect::<Vec<_>>().join(" | "));
    }
    if let Some(n) = &t.note {
        let _ = writeln!(o, "\n{n}");
    }
    let _ = writeln!(o);
    o
}

/// Every table of one run's assessment in Markdown: what `leaderboard.md` and `runs show` print.
pub fn run_markdown(a: &RunAssessment, pct: &str) -> String {
    tables(a, pct).iter().map(table_markdown).collect()
}

/// The judge validity check of one judge (`h2htalk judge validate`), as a Markdown table.
pub fn validity_markdown(r: &crate::compute::validity::ValidityReport, pct: &str) -> String {
    let section = Section::Run(ValiditySection {
        judges: vec![ValidityJudge { judge: r.judge.clone(), families: r.families.clone() }],
    });
    table_markdown(&validity_table(&section, pct))
}

/// Every figure of `a` (each run's, then the SAP on − off table's) with its run id (empty for
/// the SAP table): the rows `leaderboard.csv` adds and the cells `report.html` marks.
pub fn figures(a: &Assessments, pct: &str) -> Vec<(String, Figure)> {
    let mut out = Vec::new();
    for r in &a.runs {
        for t in tables(r, pct) {
            out.extend(t.rows.into_iter().flatten().filter_map(|c| c.figure).map(|f| (r.run.clone(), f)));
        }
    }
    if let Some(t) = sap_safety_table(a, pct) {
        out.extend(t.rows.into_iter().flatten().filter_map(|c| c.figure).map(|f| (String::new(), f)));
    }
    out
}

/// A value without interval as a cell (`n/a` and no value when not available).
pub(crate) fn value_cell(section: &str, group: &str, key: &str, v: Option<f64>, n: Option<usize>) -> Cell {
    Cell {
        text: v.map_or_else(|| "n/a".to_string(), fmt4),
        figure: Some(Figure {
            section: section.into(),
            group: group.into(),
            key: key.into(),
            value: v,
            lo: None,
            hi: None,
            n,
        }),
    }
}

/// The panel: per family and criterion, each judge's mean, the panel mean and Krippendorff's alpha.
/// Figures: section `panel`, group the family (its items' means) or `family/criterion`, keys
/// `mean:JUDGE`, `panel_mean`, `alpha`, `pairable_items`.
pub(crate) fn panel_table(p: &Section<PanelSection>) -> Table {
    let Section::Run(p) = p else { return not_run("panel", "Judge panel: agreement") };
    let r = &p.report;
    let sec = "panel";
    let mut head: Vec<String> = vec!["family".into(), "criterion".into()];
    head.extend(r.judges.iter().map(|j| format!("mean {j}")));
    head.extend(["panel mean", "alpha (interval)", "items two judges scored"].map(String::from));
    let mut rows = Vec::new();
    for (family, f) in &r.families {
        let mut line = |criterion: &str,
                        group: String,
                        per: Option<Vec<Option<f64>>>,
                        mean: Option<f64>,
                        ag: &crate::compute::panel::Agreement| {
            let mut row = vec![text_cell(family.clone()), text_cell(criterion)];
            match per {
                Some(per) => row.extend(
                    per.into_iter().zip(&r.judges).map(|(v, j)| value_cell(sec, &group, &format!("mean:{j}"), v, None)),
                ),
                // The panel keeps no judge's mean of the items' means per family: shown in the judge tables.
                None => row.extend(r.judges.iter().map(|_| text_cell("–"))),
            }
            row.extend([
                value_cell(sec, &group, "panel_mean", mean, None),
                value_cell(sec, &group, "alpha", ag.alpha, Some(ag.pairable_items)),
                count_cell(sec, &group, "pairable_items", ag.pairable_items),
            ]);
            rows.push(row);
        };
        line("item mean", family.clone(), None, f.mean, &f.agreement);
        for (c, pc) in &f.criteria {
            let per = r.judges.iter().map(|j| pc.per_judge.get(j).copied().flatten()).collect();
            line(c, format!("{family}/{c}"), Some(per), pc.mean, &pc.agreement);
        }
    }
    Table {
        section: sec.into(),
        title: "Judge panel: agreement".into(),
        head,
        rows,
        not_run: false,
        note: Some(
            "Krippendorff's alpha over the items at least two judges scored; unparsable answers and failed \
             requests are no votes. 1 = full agreement, 0 = chance; n/a with fewer than two such items."
                .into(),
        ),
    }
}

/// The judge validity check: per judge, family and degradation, the share ranked correctly.
/// Figures: section `judge_validity:JUDGE`, group `family/degradation`, keys `ranked_correctly`,
/// `compared`, `share` (with its Wilson interval), `judge_parse_failed`, `judge_failed`, `not_applicable`.
pub(crate) fn validity_table(v: &Section<ValiditySection>, pct: &str) -> Table {
    let Section::Run(v) = v else { return not_run("judge_validity", "Judge validity check") };
    let mut rows = Vec::new();
    for j in &v.judges {
        let sec = format!("judge_validity:{}", j.judge);
        for (family, cells) in &j.families {
            for (degradation, c) in cells {
                let g = format!("{family}/{degradation}");
                let (lo, hi) = c.interval.map_or((None, None), |[lo, hi]| (Some(lo), Some(hi)));
                let share = Cell {
                    text: match c.share {
                        Some(s) => format!("{} {}", fmt4(s), fmt_ci(lo, hi)),
                        None => "n/a".into(),
                    },
                    figure: Some(Figure {
                        section: sec.clone(),
                        group: g.clone(),
                        key: "share".into(),
                        value: c.share,
                        lo,
                        hi,
                        n: Some(c.n),
                    }),
                };
                rows.push(vec![
                    text_cell(j.judge.clone()),
                    text_cell(family.clone()),
                    text_cell(degradation.clone()),
                    count_cell(&sec, &g, "ranked_correctly", c.ranked_correctly),
                    count_cell(&sec, &g, "compared", c.n),
                    share,
                    count_cell(&sec, &g, "judge_parse_failed", c.judge_parse_failed),
                    count_cell(&sec, &g, "judge_failed", c.judge_failed),
                    count_cell(&sec, &g, "not_applicable", c.not_applicable),
                ]);
            }
        }
    }
    Table {
        section: "judge_validity".into(),
        title: "Judge validity check".into(),
        head: ["judge", "family", "degradation", "ranked correctly", "compared"]
            .map(String::from)
            .into_iter()
            .chain([format!("share [{pct}% Wilson CI]")])
            .chain(["unparsable", "failed", "not applicable"].map(String::from))
            .collect(),
        rows,
        not_run: false,
        note: Some(format!(
            "The judge rated each reference answer against a copy made worse on purpose; the reference must \
             score strictly higher (a tie counts as wrong).{} A trustworthy judge is near 1 on every line; the \
             interval is n/a over fewer than two comparisons.",
            if v.judges.iter().any(|j| j.families.contains_key(h2htalk_store::SAFETY_GROUP)) {
                " In the sap_safety lines the safety judge was shown a canned answer (the comfort line, the echo) \
                 to each safety scenario and asked about what the rules leave open: failing it is right; items \
                 the rules decide alone are not applicable."
            } else {
                ""
            }
        )),
    }
}

/// A table of figures as `report.html` shows it: every figure cell carries `data-fig`
/// (`run|section|group|key`) and `data-value` (the exact value of `leaderboard.json`).
pub(crate) fn table_view(run: &str, t: &crate::render::tables::Table) -> Value {
    use crate::format::exact_or_empty;
    let rows: Vec<Vec<Value>> = t
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| match &c.figure {
                    Some(f) => {
                        json!({"text": c.text, "fig": format!("{run}|{}", f.id()), "value": exact_or_empty(f.value)})
                    }
                    None => json!({"text": c.text}),
                })
                .collect()
        })
        .collect();
    json!({"section": t.section, "title": t.title, "head": t.head, "rows": rows, "not_run": t.not_run, "note": t.note})
}
