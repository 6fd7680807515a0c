//! The pages: each handler reads the index or the store and fills one template (every text is
//! escaped by the template engine: model text cannot become markup).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use h2htalk_store::browse::{Cursor, ItemFilter, Key, SortBy};
use minijinja::{Environment, Value, context};
use serde::Deserialize;

use crate::App;

/// Rows per page of a listing.
pub const PAGE: usize = 50;

const TEMPLATES: [(&str, &str); 11] = [
    ("sim.html", include_str!("../templates/sim.html")),
    ("memory.html", include_str!("../templates/memory.html")),
    ("annotate.html", include_str!("../templates/annotate.html")),
    ("rate.html", include_str!("../templates/rate.html")),
    ("base.html", include_str!("../templates/base.html")),
    ("runs.html", include_str!("../templates/runs.html")),
    ("items.html", include_str!("../templates/items.html")),
    ("item.html", include_str!("../templates/item.html")),
    ("side.html", include_str!("../templates/side.html")),
    ("diff.html", include_str!("../templates/diff.html")),
    ("error.html", include_str!("../templates/error.html")),
];

const STYLE: &str = include_str!("../templates/view.css");

const SCRIPT: &str = include_str!("../templates/view.js");

pub(crate) fn templates() -> Environment<'static> {
    let mut env = Environment::new();
    for (name, source) in TEMPLATES {
        env.add_template(name, source).expect("the viewer's templates parse");
    }
    env.add_filter("f4", |v: Value| -> String {
        match f64::try_from(v) {
            Ok(x) => format!("{x:.4}"),
            Err(_) => "–".into(),
        }
    });
    env
}

pub(crate) fn render(app: &App, name: &str, ctx: Value) -> Response {
    match app.templates.get_template(name).and_then(|t| t.render(ctx)) {
        Ok(html) => Html(html).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("template {name}: {e:#}")).into_response(),
    }
}

pub(crate) fn error_page(app: &App, status: StatusCode, message: &str) -> Response {
    let mut r = render(
        app,
        "error.html",
        context! { title => status.canonical_reason().unwrap_or("error"), message, db => app.db },
    );
    *r.status_mut() = status;
    r
}

fn failed(app: &App, e: impl std::fmt::Display) -> Response {
    error_page(app, StatusCode::INTERNAL_SERVER_ERROR, &format!("{e}"))
}

pub async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

pub async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT).into_response()
}

pub async fn not_found(State(app): State<Arc<App>>) -> Response {
    error_page(
        &app,
        StatusCode::NOT_FOUND,
        "no such page: the viewer's pages are /, /items, /item/RUN/SCENARIO, /side, /diff, /sim/RUN, /memory/RUN and \
         /annotate/SET",
    )
}

/// `/`: runs (with their protocol and counts) and sweeps.
pub async fn runs(State(app): State<Arc<App>>) -> Response {
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    let runs = match store.runs() {
        Ok(r) => r,
        Err(e) => return failed(&app, e),
    };
    let sweeps = store.sweeps().unwrap_or_default();
    let simulations = store.simulation_counts().unwrap_or_default();
    let memory = store.memory_counts().unwrap_or_default();
    drop(store);
    let counts = app.facets.lock().unwrap_or_else(|e| e.into_inner()).runs.clone();
    let rows: Vec<Value> = runs
        .iter()
        .map(|r| {
            let c = counts.get(&r.id).cloned().unwrap_or_default();
            context! {
                id => r.id, created_at => r.created_at, status => r.status.as_str(), model => r.spec.model_id.to_string(),
                sap => r.spec.sap.mode.as_str(), suite => r.spec.suite.name.clone().unwrap_or_else(|| r.spec.suite.fingerprint.clone()),
                protocol => r.spec.protocol().fingerprint(), items => c.0, failed => c.1, pending => c.2,
                simulations => simulations.get(&r.id).copied().unwrap_or(0),
                memory => memory.get(&r.id).copied().unwrap_or(0),
            }
        })
        .collect();
    let sweeps: Vec<Value> = sweeps
        .iter()
        .map(|s| {
            let members: Vec<Value> = s.runs.iter().map(|m| context! { model => m.model, run => m.run_id }).collect();
            context! { name => s.name, created_at => s.created_at, members }
        })
        .collect();
    let notes = app.tag_notes.lock().unwrap_or_else(|e| e.into_inner()).clone();
    render(&app, "runs.html", context! { db => app.db, runs => rows, sweeps, notes })
}

/// The query of `/items`: every filter of [`ItemFilter`], the sort and the cursor.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
pub struct ItemsQuery {
    #[serde(default)]
    pub run: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub task: String,
    #[serde(default)]
    pub tag: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub metric: String,
    #[serde(default)]
    pub min: String,
    #[serde(default)]
    pub max: String,
    #[serde(default)]
    pub judge_min: String,
    #[serde(default)]
    pub judge_max: String,
    #[serde(default)]
    pub safety: String,
    #[serde(default)]
    pub q: String,
    /// A metric name; empty: the store's order.
    #[serde(default)]
    pub sort: String,
    #[serde(default)]
    pub desc: String,
    #[serde(default)]
    pub after: String,
    #[serde(default)]
    pub before: String,
}

fn opt(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// A number field: empty is none, anything else must parse.
fn number(name: &str, s: &str) -> Result<Option<f64>, String> {
    match opt(s) {
        None => Ok(None),
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Some)
            .ok_or_else(|| format!("`{name}` must be a number, not `{v}`")),
    }
}

impl ItemsQuery {
    fn filter(&self) -> Result<ItemFilter, String> {
        Ok(ItemFilter {
            run: opt(&self.run),
            model: opt(&self.model),
            task: opt(&self.task),
            tag: opt(&self.tag),
            status: opt(&self.status),
            format_failed: self.format == "failed",
            metric: opt(&self.metric),
            min: number("min", &self.min)?,
            max: number("max", &self.max)?,
            judge_min: number("judge_min", &self.judge_min)?,
            judge_max: number("judge_max", &self.judge_max)?,
            safety: opt(&self.safety),
            text: opt(&self.q),
        })
    }

    fn sort(&self) -> SortBy {
        match opt(&self.sort) {
            None => SortBy::Store,
            Some(name) => SortBy::Metric { name, descending: self.desc == "1" },
        }
    }

    fn cursor(&self) -> Result<Cursor, String> {
        let key =
            |s: &str| Key::decode(s).ok_or_else(|| format!("`{s}` is not a page position; start from the first page"));
        match (opt(&self.after), opt(&self.before)) {
            (Some(a), _) => Ok(Cursor::After(key(&a)?)),
            (None, Some(b)) => Ok(Cursor::Before(key(&b)?)),
            (None, None) => Ok(Cursor::First),
        }
    }

    /// This query's URL with the cursor replaced.
    fn link(&self, after: Option<&Key>, before: Option<&Key>) -> String {
        let mut q = self.clone();
        q.after = after.map(Key::encode).unwrap_or_default();
        q.before = before.map(Key::encode).unwrap_or_default();
        let pairs: BTreeMap<String, String> =
            serde_json::from_value::<BTreeMap<String, String>>(serde_json::to_value(&q).expect("a query serialises"))
                .expect("a query is flat")
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .collect();
        let mut out = String::from("/items?");
        out.push_str(&pairs.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect::<Vec<_>>().join("&"));
        out
    }
}

/// Percent-encodes a query value or a path segment (everything but letters, digits and `-_.~`).
pub fn encode(s: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    percent_encoding::utf8_percent_encode(s, KEEP).to_string()
}

/// `/items`: the filtered, sorted, paged listing.
pub async fn items(
    State(app): State<Arc<App>>,
    query: Result<Query<ItemsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        return error_page(
            &app,
            StatusCode::BAD_REQUEST,
            "the query of this page does not read; start again from /items",
        );
    };
    let (filter, cursor) = match query.filter().and_then(|f| Ok((f, query.cursor()?))) {
        Ok(x) => x,
        Err(why) => return error_page(&app, StatusCode::BAD_REQUEST, &why),
    };
    let sort = query.sort();
    let index = app.index.lock().unwrap_or_else(|e| e.into_inner());
    let page = match index.page(&filter, &sort, &cursor, PAGE) {
        Ok(p) => p,
        Err(e) => return failed(&app, e),
    };
    drop(index);
    let f = app.facets.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (models, tasks, safety, metrics, tags) = (f.models, f.tasks, f.safety, f.metrics, f.tags);
    let runs: Vec<String> = f.runs.into_keys().collect();
    if let SortBy::Metric { name, .. } = &sort
        && !metrics.contains(name)
    {
        return error_page(&app, StatusCode::BAD_REQUEST, &format!("no item has the metric `{name}` to sort by"));
    }
    let rows: Vec<Value> = page
        .rows
        .iter()
        .map(|r| {
            context! {
                run => r.run_id, scenario => r.scenario_id, model => r.model, task => r.task, lang => r.lang,
                status => r.status, scoring => r.scoring, format_failed => r.format_failed, judge => r.judge_mean,
                safety => r.safety, value => r.value, snippet => r.snippet,
                href => format!("/item/{}/{}", encode(&r.run_id), encode(&r.scenario_id)),
            }
        })
        .collect();
    let next = page.next.as_ref().map(|k| query.link(Some(k), None));
    let prev = page.prev.as_ref().map(|k| query.link(None, Some(k)));
    let value_label = match &sort {
        SortBy::Metric { name, .. } => name.clone(),
        SortBy::Store => "composite".into(),
    };
    render(
        &app,
        "items.html",
        context! {
            db => app.db, q => query, rows, next, prev, models, tasks, safety, metrics, tags, runs,
            value_label, statuses_all => ["pending", "generated", "failed", "unscored", "dropped"],
        },
    )
}

/// `/item/RUN/SCENARIO`: everything stored about one item.
pub async fn item(State(app): State<Arc<App>>, Path((run, scenario)): Path<(String, String)>) -> Response {
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    let run_row = match store.run(&run) {
        Ok(Some(r)) => r,
        Ok(None) => return error_page(&app, StatusCode::NOT_FOUND, &format!("no run `{run}` in this store")),
        Err(e) => return failed(&app, e),
    };
    let record = match store.record(&run, &scenario) {
        Ok(Some(r)) => r,
        Ok(None) => {
            return error_page(&app, StatusCode::NOT_FOUND, &format!("run `{run}` has no item `{scenario}`"));
        }
        Err(e) => return failed(&app, e),
    };
    let checks = store.item_format_checks(&run, &scenario).unwrap_or_default();
    let judges = match store.item_judge_scores(&run, &scenario) {
        Ok(j) => j,
        Err(e) => return failed(&app, e),
    };
    let safety = match store.item_safety_verdicts(&run, &scenario) {
        Ok(s) => s,
        Err(e) => return failed(&app, e),
    };
    drop(store);
    let others = {
        let index = app.index.lock().unwrap_or_else(|e| e.into_inner());
        index.runs_of_scenario(&record.item.task, &scenario).unwrap_or_default()
    };
    let (metrics, _) =
        h2htalk_report::load::with_composite(record.score.as_ref().map(|s| s.metrics.clone()).unwrap_or_default());
    let g = record.generation.as_ref();
    let side = (others.len() >= 2).then(|| {
        format!(
            "/side?runs={}&task={}&scenario={}",
            encode(&others.join(",")),
            encode(&record.item.task),
            encode(&scenario)
        )
    });
    render(
        &app,
        "item.html",
        context! {
            db => app.db,
            run => run, model => run_row.spec.model_id.to_string(), sap => run_row.spec.sap.mode.as_str(),
            scenario, task => record.item.task, lang => record.item.lang.code(),
            messages => Value::from_serialize(&record.item.prompt),
            reference => record.item.reference,
            generation => Value::from_serialize(g),
            faults => g.map(|g| g.faults.iter().map(|f| f.as_str().to_string()).collect::<Vec<_>>()).unwrap_or_default(),
            error_kind => g.and_then(|g| g.error_kind).map(|k| k.as_str().to_string()),
            finish => g.and_then(|g| g.finish_reason.as_ref()).map(|f| format!("{f:?}")),
            score => record.score.as_ref().map(|s| context! { outcome => s.outcome.as_str(), signature => s.signature }),
            metrics => Value::from_serialize(&metrics),
            checks => Value::from_serialize(&checks),
            judges => judges.iter().map(|(j, s)| context! { judge => j, row => Value::from_serialize(s), outcome => s.outcome.as_str() }).collect::<Vec<_>>(),
            safety => safety.iter().map(|(j, v)| context! {
                judge => j, verdict => v.verdict.as_str(), risk => v.risk.as_str(), reason => v.reason,
                rules => Value::from_serialize(&v.rules),
                judgment => v.judgment.as_ref().map(|j| serde_json::to_string_pretty(j).unwrap_or_default()),
                decided_by => if v.judgment.is_some() { "the judge, on what the rules left open" } else { "the rules alone" },
            }).collect::<Vec<_>>(),
            side, others,
        },
    )
}

#[derive(Debug, Default, Deserialize)]
pub struct SideQuery {
    #[serde(default)]
    runs: String,
    #[serde(default)]
    task: String,
    #[serde(default)]
    scenario: String,
}

/// `/side?runs=A,B&task=T&scenario=S`: one scenario, each run's answer and scores beside the others.
pub async fn side(
    State(app): State<Arc<App>>,
    query: Result<Query<SideQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = query else {
        return error_page(&app, StatusCode::BAD_REQUEST, "give ?runs=RUN_A,RUN_B&scenario=SCENARIO");
    };
    let runs: Vec<&str> = q.runs.split(',').map(str::trim).filter(|r| !r.is_empty()).collect();
    if runs.len() < 2 || q.scenario.is_empty() {
        return error_page(
            &app,
            StatusCode::BAD_REQUEST,
            "side by side needs two runs or more and a scenario: ?runs=RUN_A,RUN_B&scenario=SCENARIO",
        );
    }
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    let mut columns = Vec::new();
    let mut first = None;
    for run in &runs {
        let row = match store.run(run) {
            Ok(Some(r)) => r,
            Ok(None) => return error_page(&app, StatusCode::NOT_FOUND, &format!("no run `{run}` in this store")),
            Err(e) => return failed(&app, e),
        };
        let record = match store.record(run, &q.scenario) {
            Ok(Some(r)) if q.task.is_empty() || r.item.task == q.task => r,
            Ok(_) => {
                return error_page(&app, StatusCode::NOT_FOUND, &format!("run `{run}` has no item `{}`", q.scenario));
            }
            Err(e) => return failed(&app, e),
        };
        let judges = store.item_judge_scores(run, &q.scenario).unwrap_or_default();
        let (metrics, _) =
            h2htalk_report::load::with_composite(record.score.as_ref().map(|s| s.metrics.clone()).unwrap_or_default());
        let g = record.generation.as_ref();
        columns.push(context! {
            run, model => row.spec.model_id.to_string(), sap => row.spec.sap.mode.as_str(),
            status => g.map(|g| g.status.as_str()).unwrap_or("pending"),
            answer => record.answer().map(str::to_string), error => g.and_then(|g| g.failure()),
            metrics => Value::from_serialize(&metrics),
            judges => judges.iter().map(|(j, s)| context! { judge => j, mean => s.mean, reason => s.reason }).collect::<Vec<_>>(),
            href => format!("/item/{}/{}", encode(run), encode(&q.scenario)),
        });
        if first.is_none() {
            first = Some(record.item);
        }
    }
    let item = first.expect("two runs or more");
    render(
        &app,
        "side.html",
        context! {
            db => app.db, scenario => q.scenario, task => item.task, messages => Value::from_serialize(&item.prompt),
            reference => item.reference, columns,
        },
    )
}

#[derive(Debug, Default, Deserialize)]
pub struct DiffQuery {
    #[serde(default)]
    a: String,
    #[serde(default)]
    b: String,
    #[serde(default)]
    metric: String,
}

/// `/diff?a=RUN_A&b=RUN_B&metric=M`: the scenarios both runs hold, largest difference first.
pub async fn diff(
    State(app): State<Arc<App>>,
    query: Result<Query<DiffQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = query else {
        return error_page(&app, StatusCode::BAD_REQUEST, "give ?a=RUN_A&b=RUN_B&metric=METRIC");
    };
    let f = app.facets.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (runs, metrics) = (f.runs, f.metrics);
    for r in [&q.a, &q.b] {
        if !runs.contains_key(r.as_str()) {
            return error_page(
                &app,
                StatusCode::NOT_FOUND,
                &format!("no run `{r}` in this store: pick two runs from /"),
            );
        }
    }
    let metric =
        if q.metric.is_empty() { metrics.first().cloned().unwrap_or_else(|| "judge".into()) } else { q.metric.clone() };
    if metric != "judge" && !metrics.contains(&metric) {
        return error_page(&app, StatusCode::BAD_REQUEST, &format!("no item has the metric `{metric}`"));
    }
    let index = app.index.lock().unwrap_or_else(|e| e.into_inner());
    let rows = match index.differences(&q.a, &q.b, &metric, 500) {
        Ok(r) => r,
        Err(e) => return failed(&app, e),
    };
    drop(index);
    let rows: Vec<Value> = rows
        .iter()
        .map(|d| {
            context! {
                task => d.task, scenario => d.scenario_id, a => d.a, b => d.b, diff => d.diff,
                href => format!("/side?runs={},{}&task={}&scenario={}", encode(&q.a), encode(&q.b), encode(&d.task), encode(&d.scenario_id)),
            }
        })
        .collect();
    render(&app, "diff.html", context! { db => app.db, a => q.a, b => q.b, metric, metrics, rows })
}

/// `/sim/RUN`: the run's simulated conversations, session by session: each turn's user message,
/// the state the simulated user reported and the companion's answer; the memories shown and what
/// the companion made of them; the facts probed and whether they were recalled; the hidden and the
/// changed need and whether they were met.
pub async fn simulations(State(app): State<Arc<App>>, Path(run): Path<String>) -> Response {
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    let row = match store.run(&run) {
        Ok(Some(r)) => r,
        Ok(None) => return error_page(&app, StatusCode::NOT_FOUND, &format!("no run `{run}` in this store")),
        Err(e) => return failed(&app, e),
    };
    let sims = match store.simulations(&run) {
        Ok(s) => s,
        Err(e) => return failed(&app, e),
    };
    drop(store);
    let sims: Vec<Value> = sims
        .iter()
        .map(|s| {
            context! {
                sim => Value::from_serialize(s), outcome => s.outcome.as_str(), needs => s.needs.as_str(),
                states => s.states(), change => s.state_change().map(|c| format!("{c:+}")),
            }
        })
        .collect();
    render(
        &app,
        "sim.html",
        context! { db => app.db, run, model => row.spec.model_id.to_string(), sap => row.spec.sap.mode.as_str(), sims },
    )
}

/// The query of `/memory/RUN`: the mode and the probe type to show (empty: every one).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct MemoryQuery {
    #[serde(default)]
    mode: String,
    #[serde(default)]
    kind: String,
}

/// `/memory/RUN`: the run's replies to the memory suite (`run --memory`), probe by probe: the
/// probe's message and gold reply with its key facts (read from the run's suite), the reply, and
/// what the rules and the judge made of it; then the `own` mode's notes, session by session.
pub async fn memory(
    State(app): State<Arc<App>>,
    Path(run): Path<String>,
    query: Result<Query<MemoryQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = query else {
        return error_page(&app, StatusCode::BAD_REQUEST, "give ?mode=given|own&kind=PROBE_TYPE, or neither");
    };
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    let row = match store.run(&run) {
        Ok(Some(r)) => r,
        Ok(None) => return error_page(&app, StatusCode::NOT_FOUND, &format!("no run `{run}` in this store")),
        Err(e) => return failed(&app, e),
    };
    let (answers, notes) = match store.memory_answers(&run).and_then(|a| Ok((a, store.memory_notes(&run)?))) {
        Ok(x) => x,
        Err(e) => return failed(&app, e),
    };
    drop(store);
    let (probes, suite_note) = if answers.is_empty() { (BTreeMap::new(), None) } else { probes_of(&row.spec) };
    let modes: Vec<&str> = answers.iter().map(|a| a.mode.as_str()).fold(Vec::new(), distinct);
    let kinds: Vec<&str> = answers.iter().map(|a| a.kind.as_str()).fold(Vec::new(), distinct);
    let shown: Vec<Value> = answers
        .iter()
        .filter(|a| {
            (q.mode.is_empty() || a.mode.as_str() == q.mode) && (q.kind.is_empty() || a.kind.as_str() == q.kind)
        })
        .map(|a| {
            let p = probes.get(&a.probe_id);
            context! {
                a => Value::from_serialize(a), mode => a.mode.as_str(), kind => a.kind.as_str(),
                invented_by => a.invented_by.map(|b| b.as_str()), correct => a.correct(), stale => a.stale(),
                date => p.map(|p| p.date.to_string()), question => p.map(|p| p.question.clone()),
                gold => p.map(|p| p.answer.clone()),
                facts => p.map(|p| p.key_facts.iter().map(|f| f.join(" / ")).collect::<Vec<_>>()),
                outdated => p.map(|p| p.stale.iter().map(|f| f.join(" / ")).collect::<Vec<_>>()),
            }
        })
        .collect();
    let notes: Vec<Value> = notes.iter().map(Value::from_serialize).collect();
    render(
        &app,
        "memory.html",
        context! {
            db => app.db, run, model => row.spec.model_id.to_string(), sap => row.spec.sap.mode.as_str(),
            all => answers.len(), shown, modes, kinds, mode => q.mode, kind => q.kind, notes, suite_note,
        },
    )
}

fn distinct<'a>(mut seen: Vec<&'a str>, x: &'a str) -> Vec<&'a str> {
    if !seen.contains(&x) {
        seen.push(x);
    }
    seen
}

/// The memory probes of the run's suite by id, or none with the reason they cannot be shown; a
/// suite that changed since the run is read with a note saying so.
fn probes_of(spec: &h2htalk_store::RunSpec) -> (BTreeMap<String, h2htalk_data::suite::memory::Probe>, Option<String>) {
    let loaded = h2htalk_data::suite::embedded::or_embedded(spec.suite.dir.as_deref()).and_then(|dir| {
        let suite = h2htalk_data::suite::load_suite_with(&dir, spec.suite.references.as_deref())?;
        Ok((suite.fingerprint() != spec.suite.fingerprint, dir, suite.memory()?))
    });
    match loaded {
        Ok((changed, dir, Some(memory))) => {
            let note = changed.then(|| {
                format!(
                    "The suite at {} has changed since this run (its fingerprint was {}): the messages and gold \
                     replies shown are the suite's as it is now.",
                    dir.display(),
                    spec.suite.fingerprint
                )
            });
            (memory.probes.into_iter().map(|p| (p.id.clone(), p)).collect(), note)
        }
        Ok((_, dir, None)) => (
            BTreeMap::new(),
            Some(format!("The suite at {} has no memory suite now: only the replies are shown.", dir.display())),
        ),
        Err(e) => (BTreeMap::new(), Some(format!("The run's suite cannot be read ({e}): only the replies are shown."))),
    }
}
