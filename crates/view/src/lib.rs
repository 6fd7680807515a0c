//! `h2htalk view`: a local web server over a run store. Runs and sweeps with their protocols; every
//! item of every run, paged by keyset, filtered, sorted by any metric and searched in full text
//! ([`h2htalk_store::browse`]); an item page with everything stored about it; runs side by side.
//! Pages, style and script are served from the binary (no network at run time).
//!
//! The store is only read: the viewer's index lives in a file of its own beside it (`<db>.view`).
//! It listens on 127.0.0.1 unless told otherwise; on any other address every request needs the
//! token it prints. A request from another origin (its `Origin` or `Sec-Fetch-Site` says so, or its
//! `Host` is not the server's) is refused.
//!
//! URL patterns (stable; `report.html` links to them):
//!
//! - `/` runs and sweeps;
//! - `/items?run=RUN&task=TASK&q=TEXT&sort=METRIC&desc=1&...` items (see [`pages::ItemsQuery`]);
//! - `/item/RUN/SCENARIO` one item;
//! - `/sim/RUN` a run's simulated conversations, session by session;
//! - `/memory/RUN?mode=MODE&kind=TYPE` a run's replies to the memory suite, probe by probe;
//! - `/side?runs=RUN_A,RUN_B&task=TASK&scenario=SCENARIO` one scenario, run beside run;
//! - `/diff?a=RUN_A&b=RUN_B&metric=METRIC` the scenarios two runs share, largest difference first;
//! - `/annotate/SET` rating an annotation set by people ([`rate`]).

mod pages;
mod rate;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use h2htalk_store::Store;
use h2htalk_store::browse::{RunTags, ViewIndex};

/// Errors before the server serves.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Store(#[from] h2htalk_store::StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("{0}")]
    Usage(String),
}

/// How to serve.
#[derive(Clone, Debug)]
pub struct ViewOptions {
    pub db: PathBuf,
    /// The index file (default: `<db>.view`).
    pub index: Option<PathBuf>,
    pub bind: IpAddr,
    /// 0: any free port.
    pub port: u16,
    /// Every request needs the printed token (always so off the loopback interface).
    pub require_token: bool,
    /// An annotation set to rate (made by `h2htalk annotate export`): the printed URL opens it.
    pub annotate: Option<String>,
}

/// A server ready to serve: its address and, off the loopback interface, its token.
pub struct Server {
    pub addr: SocketAddr,
    pub token: Option<String>,
    /// The page the printed URL opens (`/`, or the annotation set's).
    pub start: String,
    listener: tokio::net::TcpListener,
    app: Router,
}

impl Server {
    /// The URL to open (with the token when one is needed).
    pub fn url(&self) -> String {
        let host = match self.addr.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        };
        match &self.token {
            Some(t) => format!("http://{host}:{}{}?token={t}", self.addr.port(), self.start),
            None => format!("http://{host}:{}{}", self.addr.port(), self.start),
        }
    }

    /// Serves until the process ends.
    pub async fn serve(self) -> std::io::Result<()> {
        axum::serve(self.listener, self.app).await
    }
}

pub(crate) struct App {
    pub db: String,
    pub index: Mutex<ViewIndex>,
    pub store: Mutex<Store>,
    pub token: Option<String>,
    pub port: u16,
    pub bind: IpAddr,
    pub templates: minijinja::Environment<'static>,
    /// Why some runs' tags are not shown (their suite cannot be read or changed).
    pub tag_notes: Mutex<Vec<String>>,
    /// Each suite's tags, read once: a suite is read (thousands of scenarios) when the viewer
    /// first meets it, not on every refresh while a run is writing to the store.
    pub suite_tags: Mutex<SuiteTags>,
    /// What the filters offer, computed when the index changes (not on every page).
    pub facets: Mutex<Facets>,
}

/// The values each filter offers, and each run's counts.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facets {
    pub runs: std::collections::BTreeMap<String, (i64, i64, i64)>,
    pub models: Vec<String>,
    pub tasks: Vec<String>,
    pub safety: Vec<String>,
    pub metrics: Vec<String>,
    pub tags: Vec<String>,
}

impl Facets {
    fn of(index: &ViewIndex) -> Result<Facets, ViewError> {
        Ok(Facets {
            runs: index.run_counts()?,
            models: index.distinct("model")?,
            tasks: index.distinct("task")?,
            safety: index.distinct("safety")?,
            metrics: index.metrics()?,
            tags: index.tags()?,
        })
    }
}

/// Opens the store and its index (indexing what is new), binds, and returns the server.
pub async fn prepare(options: &ViewOptions, progress: impl Fn(&str)) -> Result<Server, ViewError> {
    let store = Store::open_read_only(&options.db)?;
    if let Some(set) = &options.annotate
        && store.annotation_set(set)?.is_none()
    {
        return Err(ViewError::Usage(format!(
            "no annotation set `{set}` in {}: make it first with `h2htalk annotate export --name {set} --run RUN_ID ...`",
            options.db.display()
        )));
    }
    let index_path = options.index.clone().unwrap_or_else(|| ViewIndex::default_path(&options.db));
    let mut index = ViewIndex::open(&options.db, &index_path)?;
    progress(&format!("indexing {} (index: {})", options.db.display(), index_path.display()));
    index.store_changed()?;
    let mut suite_tags = SuiteTags::default();
    let (notes, _) = refresh(&store, &mut index, &mut suite_tags)?;
    let facets = Facets::of(&index)?;
    let token = (options.require_token || !options.bind.is_loopback()).then(new_token).transpose()?;
    let addr = SocketAddr::new(options.bind, options.port);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ViewError::Bind { addr, source })?;
    let addr = listener.local_addr().map_err(|source| ViewError::Bind { addr, source })?;
    let app = Arc::new(App {
        db: options.db.display().to_string(),
        index: Mutex::new(index),
        store: Mutex::new(store),
        token: token.clone(),
        port: addr.port(),
        bind: options.bind,
        templates: pages::templates(),
        tag_notes: Mutex::new(notes),
        suite_tags: Mutex::new(suite_tags),
        facets: Mutex::new(facets),
    });
    // New rows (a run still going, a resumed one) reach the index every few seconds.
    let keep = app.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let app = keep.clone();
            let _ = tokio::task::spawn_blocking(move || {
                let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
                let mut index = app.index.lock().unwrap_or_else(|e| e.into_inner());
                // Nothing committed to the store since the last look: nothing to do.
                if !index.store_changed().unwrap_or(true) {
                    return;
                }
                let mut suite_tags = app.suite_tags.lock().unwrap_or_else(|e| e.into_inner());
                if let Ok((notes, changed)) = refresh(&store, &mut index, &mut suite_tags) {
                    *app.tag_notes.lock().unwrap_or_else(|e| e.into_inner()) = notes;
                    if changed && let Ok(f) = Facets::of(&index) {
                        *app.facets.lock().unwrap_or_else(|e| e.into_inner()) = f;
                    }
                }
            })
            .await;
        }
    });
    let router = Router::new()
        .route("/", get(pages::runs))
        .route("/items", get(pages::items))
        .route("/item/{run}/{scenario}", get(pages::item))
        .route("/side", get(pages::side))
        .route("/sim/{run}", get(pages::simulations))
        .route("/memory/{run}", get(pages::memory))
        .route("/diff", get(pages::diff))
        .route("/view.css", get(pages::style))
        .route("/view.js", get(pages::script))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/annotate/{set}", get(rate::start))
        .route("/annotate/{set}/rate", get(rate::rate).post(rate::save))
        .fallback(pages::not_found)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app);
    let start = match &options.annotate {
        Some(set) => format!("/annotate/{}", pages::encode(set)),
        None => "/".into(),
    };
    Ok(Server { addr, token, start, listener, app: router })
}

/// Each suite's scenario tags (or why they cannot be read), by the suite reference of the runs.
pub(crate) type SuiteTags =
    std::collections::BTreeMap<String, Result<std::collections::BTreeMap<String, Vec<String>>, String>>;

/// Indexes what changed in the store; returns why some runs carry no tags, and whether anything
/// changed. A suite not met before is read into `by_suite`.
fn refresh(store: &Store, index: &mut ViewIndex, by_suite: &mut SuiteTags) -> Result<(Vec<String>, bool), ViewError> {
    let runs = store.runs()?;
    let key = |r: &h2htalk_store::RunRow| serde_json::to_string(&r.spec.suite).unwrap_or_default();
    for r in &runs {
        by_suite.entry(key(r)).or_insert_with(|| h2htalk_report::load::tags::scenario_tags(&r.spec));
    }
    let none = std::collections::BTreeMap::new();
    let mut notes = Vec::new();
    let models: Vec<String> = runs.iter().map(|r| r.spec.model_id.to_string()).collect();
    let given: Vec<RunTags> = runs
        .iter()
        .zip(&models)
        .map(|(r, m)| {
            let tags = match &by_suite[&key(r)] {
                Ok(t) => t,
                Err(why) => {
                    notes.push(format!("{}: {why}", r.id));
                    &none
                }
            };
            RunTags { run_id: &r.id, model: m, tags }
        })
        .collect();
    let done = index.refresh(&given)?;
    Ok((notes, done.runs_indexed + done.runs_dropped > 0))
}

/// 128 random bits, hex: the token a server off the loopback interface asks for.
fn new_token() -> Result<String, ViewError> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| ViewError::Usage(format!("cannot read /dev/urandom for the access token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

const COOKIE: &str = "h2htalk_view";

/// Refuses requests from other origins and, with a token, requests without it; sets the security
/// headers of every answer.
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let headers = request.headers().clone();
    if let Some(why) = foreign(&app, &headers) {
        return pages::error_page(&app, StatusCode::FORBIDDEN, &why);
    }
    let mut set_cookie = None;
    if let Some(token) = &app.token {
        let given = request
            .uri()
            .query()
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")).map(str::to_string));
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix(&format!("{COOKIE}=")).map(str::to_string));
        match (given, cookie) {
            (Some(g), _) if g == *token => {
                set_cookie = Some(format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"))
            }
            (_, Some(c)) if c == *token => {}
            _ => {
                return pages::error_page(
                    &app,
                    StatusCode::UNAUTHORIZED,
                    "this viewer listens beyond this machine and needs the token it printed: open the URL it \
                     printed (…/?token=…)",
                );
            }
        }
    }
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; \
             base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Not `no-referrer`: under it a browser sends `Origin: null` with the rating form's POST, which
    // the origin check must refuse.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::SET_COOKIE, c);
    }
    response
}

/// Why a request comes from elsewhere (`None`: it does not).
fn foreign(app: &App, headers: &HeaderMap) -> Option<String> {
    let get = |h: header::HeaderName| headers.get(h).and_then(|v| v.to_str().ok()).map(str::to_string);
    let host = get(header::HOST).unwrap_or_default();
    let ours = |h: &str| {
        let port = format!(":{}", app.port);
        let Some(name) = h.strip_suffix(&port) else { return false };
        matches!(name, "127.0.0.1" | "localhost" | "[::1]") || name == app.bind.to_string() || !app.bind.is_loopback()
    };
    if !ours(&host) {
        return Some(format!(
            "this viewer answers requests for its own address only (127.0.0.1:{} or localhost:{}), not for `{host}`",
            app.port, app.port
        ));
    }
    if let Some(origin) = get(header::ORIGIN)
        && origin.strip_prefix("http://").is_none_or(|o| o != host)
    {
        return Some(format!("a request from another origin ({origin}) is refused"));
    }
    if get(header::HeaderName::from_static("sec-fetch-site")).is_some_and(|s| s == "cross-site") {
        return Some("a request from another site is refused".into());
    }
    None
}

impl IntoResponse for ViewError {
    fn into_response(self) -> Response {
        (StatusCode::INTERNAL_SERVER_ERROR, self.to_string()).into_response()
    }
}

/// The default index path of a store (for messages).
pub fn index_path(db: &Path) -> PathBuf {
    ViewIndex::default_path(db)
}
