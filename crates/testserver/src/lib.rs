//! An OpenAI-compatible `/v1/chat/completions` server for tests and benchmarks. It answers at once
//! or after a set latency, with a deterministic answer derived from the request, and injects faults
//! at configured rates: 429 with and without `Retry-After`, 500/502/503, hangs, connections reset
//! mid-body, truncated and malformed JSON, empty content, `finish_reason` `length` and
//! `content_filter`, and slow streaming of the body. Whether a request meets a fault depends only on
//! the seed, the request body and how often that body was seen, so runs are reproducible.
//! With `api_key` set it refuses requests without that bearer key (401), optionally quoting the
//! key it got in the error body. It listens on 127.0.0.1 only.
//!
//! It also serves the Batch API (`POST /v1/files`, `POST /v1/batches`, `GET /v1/batches/ID`,
//! `GET /v1/files/ID/content`): a batch's lines get the answers `/v1/chat/completions` would give,
//! after a set time, with failed lines, expiry (the second half of a batch's lines never done) or a
//! batch that fails as a whole, as [`BatchBehaviour`] says.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Fault rates (each 0..1, tried in the order listed) and timings.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    pub rate_limited: f64,
    pub rate_limited_retry_after: f64,
    pub server_error: f64,
    pub hang: f64,
    pub reset: f64,
    pub truncated: f64,
    pub malformed: f64,
    pub empty: f64,
    pub length: f64,
    pub content_filter: f64,
    pub slow_stream: f64,
    /// How long a hang lasts (longer than the client's timeout).
    pub hang_ms: u64,
    /// The `Retry-After` sent, in seconds.
    pub retry_after_s: u64,
}

impl Faults {
    /// Every fault class at `total / 11`.
    pub fn uniform(total: f64) -> Faults {
        let r = total / 11.0;
        Faults {
            rate_limited: r,
            rate_limited_retry_after: r,
            server_error: r,
            hang: r,
            reset: r,
            truncated: r,
            malformed: r,
            empty: r,
            length: r,
            content_filter: r,
            slow_stream: r,
            hang_ms: 2_000,
            retry_after_s: 1,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Latency of every answer, in milliseconds.
    pub latency_ms: u64,
    pub seed: u64,
    pub faults: Faults,
    /// Scripted answers: when the last message contains the key, answer with the value.
    pub script: Vec<(String, String)>,
    /// When set, a request without `Authorization: Bearer <api_key>` gets 401.
    pub api_key: Option<String>,
    /// Make the 401 body quote the `Authorization` header it got, in full, as careless proxies do
    /// (for testing that a client never stores or prints what comes back).
    pub echo_auth_in_401: bool,
    /// Answer without `usage`, as some servers do (token counts and cost are then unknown).
    pub omit_usage: bool,
    /// Unscripted answers carry the requested model's name and are this many characters long at
    /// least (padded with a fixed text), so that the models of a benchmark sweep answer
    /// differently and at a real answer's length; 0 for the short echo.
    pub answer_chars: usize,
    /// How batches of the Batch API end.
    pub batch: BatchBehaviour,
    /// Answers end with a phrase chosen by the request's seed, as a sampling model's differ between
    /// samples (`--epochs` seeds sample k with seed + k).
    pub vary_with_seed: bool,
}

/// How the Batch API behaves.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchBehaviour {
    /// A batch is `in_progress` for this long after it is made, then ends.
    pub complete_after_ms: u64,
    /// The share of lines that fail (HTTP 500 in the error file), drawn from the seed, the line and
    /// how often it was sent (a line sent again may succeed).
    pub fail_lines: f64,
    /// Batches end `expired`: the second half of their lines is never done (`batch_expired`).
    pub expire: bool,
    /// Batches end `failed` as a whole, with no results.
    pub fail_batch: bool,
}

/// Counts of what the server did, by class.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub answered: AtomicU64,
    /// Requests refused with 401 (no or wrong key).
    pub unauthorized: AtomicU64,
    by_fault: Mutex<HashMap<&'static str, u64>>,
    /// Files uploaded, batches made, and polls of a batch's status.
    pub files_uploaded: AtomicU64,
    pub batches_created: AtomicU64,
    pub batch_polls: AtomicU64,
    /// Lines of batches made.
    pub batch_lines: AtomicU64,
}

impl Counters {
    pub fn faults(&self) -> HashMap<&'static str, u64> {
        self.by_fault.lock().unwrap().clone()
    }
}

struct AppState {
    config: ServerConfig,
    seen: Mutex<HashMap<[u8; 32], u64>>,
    counters: Arc<Counters>,
    files: Mutex<HashMap<String, Vec<u8>>>,
    batches: Mutex<HashMap<String, Batch>>,
}

/// A batch: when it was made and how it ends.
struct Batch {
    created: std::time::Instant,
    input_file_id: String,
    /// The final status and the ids of the output and error files.
    status: &'static str,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    lines: usize,
}

/// A running server; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TestServer {
    /// Starts a server on 127.0.0.1 (port `port`, 0 for any free one) on the current tokio runtime.
    pub async fn start(config: ServerConfig, port: u16) -> std::io::Result<TestServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let state = Arc::new(AppState {
            config,
            seen: Mutex::new(HashMap::new()),
            counters: counters.clone(),
            files: Mutex::new(HashMap::new()),
            batches: Mutex::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/v1/files", post(upload))
            .route("/v1/files/{id}/content", get(file_content))
            .route("/v1/batches", post(create_batch))
            .route("/v1/batches/{id}", get(batch_status))
            // A batch file of the official set is tens of MB; axum's default limit is 2 MB.
            .layer(axum::extract::DefaultBodyLimit::max(1 << 30))
            .with_state(state);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(TestServer { addr, counters, shutdown: Some(tx) })
    }

    /// The base URL to give clients (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A deterministic number in [0, 1) from the seed, the body and the attempt.
fn draw(seed: u64, digest: &[u8; 32], attempt: u64) -> f64 {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(digest);
    h.update(attempt.to_le_bytes());
    let out = h.finalize();
    u64::from_le_bytes(out[..8].try_into().unwrap()) as f64 / (u64::MAX as f64 + 1.0)
}

/// The answer to a request: scripted, or an echo of the end of the last message in a fixed frame;
/// with `vary_with_seed`, followed by a phrase the seed picks.
pub fn answer_for(config: &ServerConfig, body: &Value) -> String {
    let answer = fixed_answer(config, body);
    match body["seed"].as_u64().filter(|_| config.vary_with_seed) {
        Some(seed) => {
            const ENDINGS: [&str; 4] = ["慢慢来。", "我一直在听，你说。", "先照顾好自己，好吗？", "嗯嗯，明白了。"];
            format!("{answer}{}", ENDINGS[(seed % 4) as usize])
        }
        None => answer,
    }
}

fn fixed_answer(config: &ServerConfig, body: &Value) -> String {
    let last = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
    if let Some((_, a)) = config.script.iter().find(|(k, _)| last.contains(k.as_str())) {
        return a.clone();
    }
    let tail: String =
        last.chars().rev().filter(|c| !c.is_whitespace()).take(16).collect::<Vec<_>>().into_iter().rev().collect();
    if config.answer_chars == 0 {
        return format!("（轻轻点头）我在听。{tail}");
    }
    let model = body["model"].as_str().unwrap_or("");
    let mut out = format!("（轻轻点头）{model}在听。{tail}");
    const PAD: &str = "今天辛苦了，先喝口水，我们慢慢把事情理一理，一件一件来，不着急。";
    while out.chars().count() < config.answer_chars {
        out.push_str(PAD);
    }
    out
}

/// How often a request body was seen, this time included (a retried request may fare otherwise).
fn seen_again(state: &AppState, digest: [u8; 32]) -> u64 {
    let mut seen = state.seen.lock().unwrap();
    let n = seen.entry(digest).or_insert(0);
    *n += 1;
    *n
}

/// The prompt's tokens as this server counts them: the characters of its messages.
fn prompt_tokens(body: &Value) -> u64 {
    body["messages"]
        .as_array()
        .map(|m| m.iter().map(|x| x["content"].as_str().map_or(0, |s| s.chars().count() as u64)).sum())
        .unwrap_or(0)
}

fn completion(text: &str, finish: &str, prompt_tokens: Option<u64>) -> Value {
    let Some(prompt_tokens) = prompt_tokens else {
        return json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        });
    };
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": text.chars().count() as u64, "total_tokens": prompt_tokens + text.chars().count() as u64}
    })
}

/// The 401 answer to a request without the configured key, if it lacks it.
fn unauthorized(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    let counters = &state.counters;
    if let Some(key) = &state.config.api_key {
        let got = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
        if got != format!("Bearer {key}") {
            counters.unauthorized.fetch_add(1, Ordering::Relaxed);
            let shown = if state.config.echo_auth_in_401 {
                got.strip_prefix("Bearer ").unwrap_or(got).to_string()
            } else {
                let tail: String = got.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
                format!("sk-****{tail}")
            };
            let body = json!({"error": {
                "message": format!("Incorrect API key provided: {shown}. You can find your API key at https://example.invalid/keys."),
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }});
            return Some((StatusCode::UNAUTHORIZED, axum::Json(body)).into_response());
        }
    }
    None
}

async fn upload(State(state): State<Arc<AppState>>, headers: HeaderMap, mut form: Multipart) -> Response {
    if let Some(refused) = unauthorized(&state, &headers) {
        return refused;
    }
    let (mut purpose, mut file) = (None, None);
    while let Ok(Some(field)) = form.next_field().await {
        let name = field.name().unwrap_or("").to_string();
        let Ok(bytes) = field.bytes().await else {
            return (StatusCode::BAD_REQUEST, "unreadable multipart field").into_response();
        };
        match name.as_str() {
            "purpose" => purpose = Some(String::from_utf8_lossy(&bytes).into_owned()),
            "file" => file = Some(bytes.to_vec()),
            _ => {}
        }
    }
    let (Some("batch"), Some(file)) = (purpose.as_deref(), file) else {
        return (StatusCode::BAD_REQUEST, "expected purpose=batch and a file").into_response();
    };
    let mut files = state.files.lock().unwrap();
    let id = format!("file-{}", files.len() + 1);
    let bytes = file.len();
    files.insert(id.clone(), file);
    state.counters.files_uploaded.fetch_add(1, Ordering::Relaxed);
    axum::Json(json!({"id": id, "object": "file", "bytes": bytes, "purpose": "batch"})).into_response()
}

async fn file_content(State(state): State<Arc<AppState>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if let Some(refused) = unauthorized(&state, &headers) {
        return refused;
    }
    match state.files.lock().unwrap().get(&id) {
        Some(bytes) => bytes.clone().into_response(),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}

/// Makes a batch: its result lines are computed now and shown when it ends.
async fn create_batch(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refused) = unauthorized(&state, &headers) {
        return refused;
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "request body is not JSON").into_response();
    };
    let Some(input) = request["input_file_id"].as_str().and_then(|f| state.files.lock().unwrap().get(f).cloned())
    else {
        return (StatusCode::BAD_REQUEST, "no such input_file_id").into_response();
    };
    let cfg = &state.config;
    let behaviour = &cfg.batch;
    let lines: Vec<Value> =
        String::from_utf8_lossy(&input).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let (mut output, mut errors) = (String::new(), String::new());
    for (i, line) in lines.iter().enumerate() {
        let custom_id = &line["custom_id"];
        let body = &line["body"];
        let digest: [u8; 32] = Sha256::digest(body.to_string().as_bytes()).into();
        let result = if behaviour.expire && i >= lines.len().div_ceil(2) {
            json!({"id": format!("batch_req_{i}"), "custom_id": custom_id, "response": null,
                   "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}})
        } else if draw(cfg.seed, &digest, seen_again(&state, digest)) < behaviour.fail_lines {
            json!({"id": format!("batch_req_{i}"), "custom_id": custom_id,
                   "response": {"status_code": 500, "body": {"error": {"message": "upstream trouble", "type": "server_error"}}},
                   "error": null})
        } else {
            let usage = (!cfg.omit_usage).then_some(prompt_tokens(body));
            json!({"id": format!("batch_req_{i}"), "custom_id": custom_id,
                   "response": {"status_code": 200, "body": completion(&answer_for(cfg, body), "stop", usage)},
                   "error": null})
        };
        let ok = result["response"]["status_code"] == 200;
        let to = if ok { &mut output } else { &mut errors };
        to.push_str(&result.to_string());
        to.push('\n');
    }
    let mut files = state.files.lock().unwrap();
    let mut keep = |text: String| {
        (!text.is_empty()).then(|| {
            let id = format!("file-{}", files.len() + 1);
            files.insert(id.clone(), text.into_bytes());
            id
        })
    };
    let (output_file_id, error_file_id) =
        if behaviour.fail_batch { (None, None) } else { (keep(output), keep(errors)) };
    drop(files);
    let status = match (behaviour.fail_batch, behaviour.expire) {
        (true, _) => "failed",
        (false, true) => "expired",
        _ => "completed",
    };
    let mut batches = state.batches.lock().unwrap();
    let id = format!("batch_{}", batches.len() + 1);
    let batch = Batch {
        created: std::time::Instant::now(),
        input_file_id: request["input_file_id"].as_str().unwrap_or("").to_string(),
        status,
        output_file_id,
        error_file_id,
        lines: lines.len(),
    };
    let shown = batch_json(&id, &batch, &state.config);
    batches.insert(id, batch);
    state.counters.batches_created.fetch_add(1, Ordering::Relaxed);
    state.counters.batch_lines.fetch_add(lines.len() as u64, Ordering::Relaxed);
    axum::Json(shown).into_response()
}

fn batch_json(id: &str, b: &Batch, cfg: &ServerConfig) -> Value {
    let done = b.created.elapsed() >= Duration::from_millis(cfg.batch.complete_after_ms);
    let mut v = json!({
        "id": id,
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "input_file_id": b.input_file_id,
        "completion_window": "24h",
        "status": if done { b.status } else { "in_progress" },
        "request_counts": {"total": b.lines, "completed": if done { b.lines } else { 0 }, "failed": 0},
    });
    if done {
        v["output_file_id"] = json!(b.output_file_id);
        v["error_file_id"] = json!(b.error_file_id);
        if b.status == "failed" {
            v["errors"] = json!({"object": "list", "data": [{"code": "invalid_request", "message": "the batch failed as a whole (test server)"}]});
        }
    }
    v
}

async fn batch_status(State(state): State<Arc<AppState>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if let Some(refused) = unauthorized(&state, &headers) {
        return refused;
    }
    state.counters.batch_polls.fetch_add(1, Ordering::Relaxed);
    match state.batches.lock().unwrap().get(&id) {
        Some(b) => axum::Json(batch_json(&id, b, &state.config)).into_response(),
        None => (StatusCode::NOT_FOUND, "no such batch").into_response(),
    }
}

async fn complete(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let counters = &state.counters;
    counters.requests.fetch_add(1, Ordering::Relaxed);
    if let Some(refused) = unauthorized(&state, &headers) {
        return refused;
    }
    let digest: [u8; 32] = Sha256::digest(&body).into();
    let attempt = seen_again(&state, digest);
    let cfg = &state.config;
    if cfg.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(cfg.latency_ms)).await;
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "request body is not JSON").into_response();
    };
    let usage = (!cfg.omit_usage).then_some(prompt_tokens(&request));
    let text = answer_for(cfg, &request);
    let f = &cfg.faults;
    let classes: [(&'static str, f64); 11] = [
        ("rate_limited", f.rate_limited),
        ("rate_limited_retry_after", f.rate_limited_retry_after),
        ("server_error", f.server_error),
        ("hang", f.hang),
        ("reset", f.reset),
        ("truncated", f.truncated),
        ("malformed", f.malformed),
        ("empty", f.empty),
        ("length", f.length),
        ("content_filter", f.content_filter),
        ("slow_stream", f.slow_stream),
    ];
    let roll = draw(cfg.seed, &digest, attempt);
    let mut acc = 0.0;
    let fault = classes.iter().find(|(_, rate)| {
        acc += rate;
        roll < acc
    });
    let Some((fault, _)) = fault else {
        counters.answered.fetch_add(1, Ordering::Relaxed);
        return axum::Json(completion(&text, "stop", usage)).into_response();
    };
    *counters.by_fault.lock().unwrap().entry(fault).or_default() += 1;
    let full = completion(&text, "stop", usage).to_string();
    match *fault {
        "rate_limited" => (StatusCode::TOO_MANY_REQUESTS, "rate limited").into_response(),
        "rate_limited_retry_after" => {
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", f.retry_after_s.to_string())], "rate limited")
                .into_response()
        }
        "server_error" => {
            let status = [StatusCode::INTERNAL_SERVER_ERROR, StatusCode::BAD_GATEWAY, StatusCode::SERVICE_UNAVAILABLE]
                [attempt as usize % 3];
            (status, "upstream trouble").into_response()
        }
        "hang" => {
            tokio::time::sleep(Duration::from_millis(f.hang_ms)).await;
            axum::Json(completion(&text, "stop", usage)).into_response()
        }
        "reset" => {
            let half = Bytes::from(full[..full.len() / 2].to_string());
            let stream = futures_util::stream::iter(vec![
                Ok::<Bytes, std::io::Error>(half),
                Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "injected reset")),
            ]);
            Response::builder()
                .header("content-type", "application/json")
                .header("content-length", full.len().to_string())
                .body(Body::from_stream(stream))
                .unwrap()
        }
        "truncated" => ([("content-type", "application/json")], full[..full.len() / 2].to_string()).into_response(),
        "malformed" => ([("content-type", "application/json")], "{\"choices\": \"not a list\"}").into_response(),
        "empty" => axum::Json(completion("", "stop", usage)).into_response(),
        "length" => {
            let cut: String = text.chars().take(4).collect();
            axum::Json(completion(&cut, "length", usage)).into_response()
        }
        "content_filter" => axum::Json(completion("", "content_filter", usage)).into_response(),
        _ => {
            // slow streaming: the whole body, a few bytes at a time
            let chunks: Vec<Bytes> = full.as_bytes().chunks(8).map(Bytes::copy_from_slice).collect();
            let stream = futures_util::stream::unfold(chunks.into_iter(), |mut it| async move {
                let next = it.next()?;
                tokio::time::sleep(Duration::from_millis(2)).await;
                Some((Ok::<Bytes, std::io::Error>(next), it))
            });
            Response::builder().header("content-type", "application/json").body(Body::from_stream(stream)).unwrap()
        }
    }
}
