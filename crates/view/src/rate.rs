//! Rating by people (`h2htalk view --annotate NAME`): the items of an annotation set made by
//! `h2htalk annotate export`, blinded (no model, run or scenario shown; a pairwise item's answers
//! in the order stored with the set), one at a time with the judge's rubric criteria or the
//! pairwise choice. Each rating goes to the store's `human_ratings` at once, with its rater and
//! time, so a rater resumes where they stopped and the report's judge–human tables use it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use h2htalk_data::Family;
use h2htalk_data::suite::embedded;
use h2htalk_judge::JudgeTexts;
use h2htalk_store::{AnnotationItem, AnnotationKind, AnnotationSet, HumanRating, Store};
use minijinja::{Value, context};
use serde::Deserialize;

use crate::App;
use crate::pages::{encode, error_page, render};

/// A rater id: 1 to 40 letters, digits, `-`, `_` or `.`.
fn rater_ok(r: &str) -> bool {
    !r.is_empty() && r.len() <= 40 && r.chars().all(|c| c.is_alphanumeric() || "-_.".contains(c))
}

/// The criteria an item is rated on (`winner` for a pairwise item).
fn criteria(
    texts: &JudgeTexts,
    kind: AnnotationKind,
    item: &AnnotationItem,
    lang: h2htalk_data::suite::Lang,
) -> Vec<(String, String)> {
    match kind {
        AnnotationKind::Pairwise => vec![("winner".into(), String::new())],
        AnnotationKind::Rubric => Family::of_group(&item.task)
            .map(|f| texts.lang(lang).criteria(f).iter().map(|c| (c.id.clone(), c.text.clone())).collect())
            .unwrap_or_default(),
    }
}

struct Loaded {
    set: AnnotationSet,
    ratings: Vec<HumanRating>,
    texts: JudgeTexts,
}

fn load(app: &App, set: &str) -> Result<Loaded, Response> {
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    let fail = |e: &dyn std::fmt::Display| error_page(app, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string());
    let found = store.annotation_set(set).map_err(|e| fail(&e))?.ok_or_else(|| {
        error_page(
            app,
            StatusCode::NOT_FOUND,
            &format!("no annotation set `{set}` in this store: `h2htalk annotate export --name {set} --run RUN ...` makes one"),
        )
    })?;
    let ratings = store.human_ratings(set).map_err(|e| fail(&e))?;
    let first = found.items.first().map(|i| i.run_a.clone()).unwrap_or_default();
    let spec = store.run(&first).map_err(|e| fail(&e))?.map(|r| r.spec);
    drop(store);
    let dir = spec.and_then(|s| s.suite.dir);
    let texts = embedded::or_embedded(dir.as_deref())
        .map_err(|e| fail(&e))
        .and_then(|d| JudgeTexts::load(&d).map_err(|e| fail(&e)))?;
    Ok(Loaded { set: found, ratings, texts })
}

/// The items `rater` has rated in full.
fn done_by(l: &Loaded, rater: &str, lang_of: &BTreeMap<String, h2htalk_data::suite::Lang>) -> BTreeSet<String> {
    let mut given: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in l.ratings.iter().filter(|r| r.rater == rater) {
        given.entry(&r.item).or_default().insert(&r.criterion);
    }
    l.set
        .items
        .iter()
        .filter(|it| {
            let lang = lang_of.get(&it.item).copied().unwrap_or(h2htalk_data::suite::Lang::Zh);
            let want = criteria(&l.texts, l.set.kind, it, lang);
            given.get(it.item.as_str()).is_some_and(|g| want.iter().all(|(c, _)| g.contains(c.as_str())))
        })
        .map(|it| it.item.clone())
        .collect()
}

/// Each item's language, from its first run's record.
fn langs(app: &App, set: &AnnotationSet) -> BTreeMap<String, h2htalk_data::suite::Lang> {
    set.items.iter().filter_map(|it| Some((it.item.clone(), lang_of(app, it)?))).collect()
}

fn lang_of(app: &App, item: &AnnotationItem) -> Option<h2htalk_data::suite::Lang> {
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    Some(store.record(&item.run_a, &item.scenario_id).ok()??.item.lang)
}

#[derive(Debug, Default, Deserialize)]
pub struct RaterQuery {
    #[serde(default)]
    rater: String,
    #[serde(default)]
    item: String,
}

/// `/annotate/SET`: who rates, and how far each rater has come.
pub async fn start(State(app): State<Arc<App>>, Path(set): Path<String>) -> Response {
    let l = match load(&app, &set) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let langs = langs(&app, &l.set);
    let raters: BTreeSet<&str> = l.ratings.iter().map(|r| r.rater.as_str()).collect();
    let progress: Vec<Value> = raters
        .iter()
        .map(|r| context! { rater => r, done => done_by(&l, r, &langs).len(), href => format!("/annotate/{}/rate?rater={}", encode(&set), encode(r)) })
        .collect();
    render(
        &app,
        "annotate.html",
        context! { db => app.db, set => set, kind => l.set.kind.as_str(), items => l.set.items.len(), progress },
    )
}

/// `/annotate/SET/rate?rater=R[&item=ITEM]`: the item to rate (the next one `R` has not rated).
pub async fn rate(
    State(app): State<Arc<App>>,
    Path(set): Path<String>,
    query: Result<Query<RaterQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = query else {
        return error_page(&app, StatusCode::BAD_REQUEST, "give ?rater=YOUR_ID");
    };
    if !rater_ok(&q.rater) {
        return error_page(
            &app,
            StatusCode::BAD_REQUEST,
            "a rater id is 1 to 40 letters, digits, `-`, `_` or `.`: go back and give yours",
        );
    }
    let l = match load(&app, &set) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let langs = langs(&app, &l.set);
    let done = done_by(&l, &q.rater, &langs);
    let item = if q.item.is_empty() {
        l.set.items.iter().find(|it| !done.contains(&it.item))
    } else {
        match l.set.items.iter().find(|it| it.item == q.item) {
            Some(it) => Some(it),
            None => return error_page(&app, StatusCode::NOT_FOUND, &format!("set `{set}` has no item `{}`", q.item)),
        }
    };
    let total = l.set.items.len();
    let Some(item) = item else {
        return render(
            &app,
            "rate.html",
            context! { db => app.db, set => set, rater => q.rater, finished => true, done => done.len(), total },
        );
    };
    let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
    let record = |run: &str| store.record(run, &item.scenario_id).ok().flatten();
    let Some(a) = record(&item.run_a) else {
        return error_page(
            &app,
            StatusCode::NOT_FOUND,
            &format!("the answer behind item `{}` is no longer in the store", item.item),
        );
    };
    let b = item.run_b.as_deref().and_then(record);
    drop(store);
    let lang = a.item.lang;
    let (shown_a, shown_b) = {
        let (x, y) = (a.answer().map(str::to_string), b.as_ref().and_then(|b| b.answer().map(str::to_string)));
        if item.swapped { (y, x) } else { (x, y) }
    };
    let given: BTreeMap<&str, f64> = l
        .ratings
        .iter()
        .filter(|r| r.rater == q.rater && r.item == item.item)
        .map(|r| (r.criterion.as_str(), r.value))
        .collect();
    let criteria: Vec<Value> = criteria(&l.texts, l.set.kind, item, lang)
        .into_iter()
        .map(|(id, text)| context! { value => given.get(id.as_str()).copied(), id, text })
        .collect();
    let position = l.set.items.iter().position(|it| it.item == item.item).unwrap_or(0) + 1;
    render(
        &app,
        "rate.html",
        context! {
            db => app.db, set => set, rater => q.rater, finished => false, done => done.len(), total, position,
            item => item.item, kind => l.set.kind.as_str(), lang => lang.code(),
            messages => Value::from_serialize(&a.item.prompt),
            answer_a => shown_a, answer_b => shown_b, criteria,
            winner => given.get("winner").copied(),
        },
    )
}

/// `POST /annotate/SET/rate`: one item's ratings (`rater`, `item`, and a field per criterion
/// holding 1–10, or `winner` holding `A`, `B` or `tie`).
pub async fn save(
    State(app): State<Arc<App>>,
    Path(set): Path<String>,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let rater = form.get("rater").cloned().unwrap_or_default();
    let item_id = form.get("item").cloned().unwrap_or_default();
    if !rater_ok(&rater) {
        return error_page(&app, StatusCode::BAD_REQUEST, "a rater id is 1 to 40 letters, digits, `-`, `_` or `.`");
    }
    let l = match load(&app, &set) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let Some(item) = l.set.items.iter().find(|it| it.item == item_id) else {
        return error_page(&app, StatusCode::NOT_FOUND, &format!("set `{set}` has no item `{item_id}`"));
    };
    let lang = lang_of(&app, item).unwrap_or(h2htalk_data::suite::Lang::Zh);
    let mut ratings = Vec::new();
    for (criterion, _) in criteria(&l.texts, l.set.kind, item, lang) {
        let raw = form.get(&criterion).map(|s| s.trim()).unwrap_or("");
        if raw.is_empty() {
            continue; // not rated (yet): nothing stored for it
        }
        let value = match l.set.kind {
            AnnotationKind::Pairwise => match raw {
                "A" | "a" => 1.0,
                "B" | "b" => 0.0,
                "tie" => 0.5,
                _ => {
                    return error_page(&app, StatusCode::BAD_REQUEST, &format!("`winner` is A, B or tie, not `{raw}`"));
                }
            },
            AnnotationKind::Rubric => match raw.parse::<u8>() {
                Ok(v) if (1..=10).contains(&v) => f64::from(v),
                _ => {
                    return error_page(
                        &app,
                        StatusCode::BAD_REQUEST,
                        &format!("`{criterion}` is a whole number from 1 to 10, not `{raw}`"),
                    );
                }
            },
        };
        ratings.push(HumanRating { item: item.item.clone(), rater: rater.clone(), criterion, value });
    }
    if !ratings.is_empty() {
        // Ratings are the one thing the viewer writes, into their own table, through a connection
        // of its own (the viewer's store handle is read-only).
        let written = Store::open(std::path::Path::new(&app.db)).and_then(|mut s| s.put_human_ratings(&set, &ratings));
        if let Err(e) = written {
            return error_page(&app, StatusCode::INTERNAL_SERVER_ERROR, &format!("the rating was not stored: {e}"));
        }
    }
    Redirect::to(&format!("/annotate/{}/rate?rater={}", encode(&set), encode(&rater))).into_response()
}
