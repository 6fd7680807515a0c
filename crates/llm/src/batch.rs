//! A chat model whose requests go through an OpenAI-compatible Batch API: the calls that arrive
//! together are written as one JSONL file, uploaded (`POST /files`), submitted (`POST /batches`),
//! polled (`GET /batches/ID`) and read back (`GET /files/ID/content`), each answer given to the
//! call that asked for it. Every batch is written to a [`BatchJournal`] as soon as the provider
//! has made it, with the requests it holds; a process that stops while a batch runs finds it in the
//! journal when asked the same requests again and polls it, instead of paying for them twice.
//!
//! A request's id in a batch (`custom_id`) is the SHA-256 of its body: the same request asked again
//! (a resumed run) is recognised; the same request asked twice at once is sent once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::model::{BoxFuture, ChatError, ChatModel, ChatRequest, ChatResponse, FaultKind, ModelId};
use crate::openai::{OpenAiClient, parse_completion};

/// How a model's batches are made.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchSettings {
    /// What a batched token costs, as a share of the model's prices.
    pub price_factor: f64,
    /// Time between two polls of a batch.
    pub poll: Duration,
    /// The completion window asked for (`24h`).
    pub completion_window: String,
    /// At most this many requests in one batch.
    pub max_requests: usize,
}

/// A batch as the journal keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalBatch {
    pub id: String,
    /// The provider's status when last seen (`validating`, `in_progress`, `completed`, `expired`, ...).
    pub status: String,
    /// The `custom_id`s of its requests.
    pub requests: Vec<String>,
    /// The result line of each request whose result was read (a JSON object as the provider wrote it).
    pub results: HashMap<String, String>,
}

/// Where batches are recorded (the run store); errors are messages for the user.
pub trait BatchJournal: Send + Sync {
    /// The batches recorded so far.
    fn batches(&self) -> Result<Vec<JournalBatch>, String>;
    /// A batch the provider has just made, with the requests it holds.
    fn created(&self, batch_id: &str, requests: &[String]) -> Result<(), String>;
    /// A batch that ended, with its final status and the result line of each request that has one.
    fn finished(&self, batch_id: &str, status: &str, results: &[(String, String)]) -> Result<(), String>;
}

/// The statuses after which a batch changes no more.
const TERMINAL: [&str; 4] = ["completed", "failed", "expired", "cancelled"];

/// What a batch gave: each request's result line, or why the batch gave none.
type Outcome = Result<Arc<HashMap<String, String>>, ChatError>;

/// One batch being gathered, submitted or polled; calls wait on it.
struct Slot {
    tx: watch::Sender<Option<Outcome>>,
}

impl Slot {
    fn new() -> Arc<Slot> {
        Arc::new(Slot { tx: watch::channel(None).0 })
    }

    async fn wait(&self) -> Outcome {
        let mut rx = self.tx.subscribe();
        let seen = rx.wait_for(Option::is_some).await.expect("the slot lives while waited on");
        seen.clone().expect("waited for a value")
    }

    fn set(&self, outcome: Outcome) {
        self.tx.send_replace(Some(outcome));
    }
}

/// Requests gathered for the next batch.
struct Gathering {
    slot: Arc<Slot>,
    bodies: Vec<(String, Value)>,
}

struct State {
    /// What the journal held when first read: results to reuse, batches to poll.
    loaded: bool,
    done: HashMap<String, String>,
    pending: HashMap<String, String>,
    /// Batches being polled by this process (by batch id).
    polling: HashMap<String, Arc<Slot>>,
    gathering: Option<Gathering>,
}

/// A chat model that answers through the Batch API of an [`OpenAiClient`]'s endpoint.
pub struct BatchClient {
    inner: Arc<Inner>,
}

struct Inner {
    client: Arc<OpenAiClient>,
    settings: BatchSettings,
    journal: Arc<dyn BatchJournal>,
    state: Mutex<State>,
}

impl BatchClient {
    pub fn new(client: Arc<OpenAiClient>, settings: BatchSettings, journal: Arc<dyn BatchJournal>) -> BatchClient {
        let state = State {
            loaded: false,
            done: HashMap::new(),
            pending: HashMap::new(),
            polling: HashMap::new(),
            gathering: None,
        };
        BatchClient { inner: Arc::new(Inner { client, settings, journal, state: Mutex::new(state) }) }
    }
}

impl ChatModel for BatchClient {
    fn id(&self) -> ModelId {
        self.inner.client.id()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ChatError>> {
        Box::pin(Inner::chat(self.inner.clone(), request))
    }

    /// As many calls at once as a batch may hold: they wait together.
    fn max_concurrency(&self) -> usize {
        self.inner.settings.max_requests
    }
}

/// What to wait for: a stored result, a batch this process polls, or the next batch.
enum Wait {
    Done(String),
    Slot(Arc<Slot>),
}

impl Inner {
    async fn chat(self: Arc<Inner>, request: &ChatRequest) -> Result<ChatResponse, ChatError> {
        let body = self.client.body(request);
        let id = custom_id(&body);
        let wait = self.place(&id, body)?;
        let line = match wait {
            Wait::Done(line) => line,
            Wait::Slot(slot) => {
                let results = slot.wait().await?;
                results.get(&id).cloned().ok_or_else(|| {
                    ChatError::new(FaultKind::ServerError, "the batch ended without a result for this request")
                })?
            }
        };
        self.answer(&line)
    }

    /// Where the request `id` gets its answer; starts a poller or a gathering as needed.
    fn place(self: &Arc<Inner>, id: &str, body: Value) -> Result<Wait, ChatError> {
        let mut state = self.state.lock().unwrap();
        if !state.loaded {
            let batches = self.journal.batches().map_err(journal_error)?;
            for b in batches {
                if TERMINAL.contains(&b.status.as_str()) {
                    // Only answers are reused: a failed line is asked again in a new batch.
                    for (id, line) in b.results {
                        if result_ok(&line) {
                            state.done.insert(id, line);
                        }
                    }
                } else {
                    for id in b.requests {
                        state.pending.insert(id, b.id.clone());
                    }
                }
            }
            state.loaded = true;
        }
        if let Some(line) = state.done.get(id) {
            return Ok(Wait::Done(line.clone()));
        }
        if let Some(batch) = state.pending.get(id).cloned() {
            let slot = match state.polling.get(&batch) {
                Some(slot) => slot.clone(),
                None => {
                    let slot = Slot::new();
                    state.polling.insert(batch.clone(), slot.clone());
                    let (inner, slot2) = (self.clone(), slot.clone());
                    tokio::spawn(async move { slot2.set(inner.poll(&batch).await) });
                    slot
                }
            };
            return Ok(Wait::Slot(slot));
        }
        let full = state.gathering.as_ref().is_some_and(|g| g.bodies.len() >= self.settings.max_requests);
        if full {
            self.submit_gathered(&mut state);
        }
        let g = match &mut state.gathering {
            Some(g) => g,
            None => {
                let slot = Slot::new();
                state.gathering = Some(Gathering { slot: slot.clone(), bodies: Vec::new() });
                let inner = self.clone();
                let gathered = Arc::downgrade(&slot);
                tokio::spawn(async move { inner.gather(gathered).await });
                state.gathering.as_mut().expect("just set")
            }
        };
        if !g.bodies.iter().any(|(b, _)| b == id) {
            g.bodies.push((id.to_string(), body));
        }
        Ok(Wait::Slot(g.slot.clone()))
    }

    /// Waits while calls keep arriving, then submits what was gathered.
    async fn gather(self: Arc<Inner>, slot: std::sync::Weak<Slot>) {
        let mut seen = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut state = self.state.lock().unwrap();
            let Some(g) = &state.gathering else { return };
            if slot.upgrade().is_none_or(|s| !Arc::ptr_eq(&s, &g.slot)) {
                return; // submitted when full; the next gathering has its own timer
            }
            if g.bodies.len() == seen {
                self.submit_gathered(&mut state);
                return;
            }
            seen = g.bodies.len();
        }
    }

    fn submit_gathered(self: &Arc<Inner>, state: &mut State) {
        let Some(g) = state.gathering.take() else { return };
        let inner = self.clone();
        tokio::spawn(async move {
            let outcome = inner.submit(&g.bodies).await;
            g.slot.set(outcome);
        });
    }

    /// Uploads, creates, records and polls one batch.
    async fn submit(self: &Arc<Inner>, bodies: &[(String, Value)]) -> Outcome {
        let url = self.client.url("/chat/completions");
        let endpoint = url::path_of(&url);
        let mut jsonl = String::new();
        for (id, body) in bodies {
            let line = json!({"custom_id": id, "method": "POST", "url": endpoint, "body": body});
            jsonl.push_str(&line.to_string());
            jsonl.push('\n');
        }
        let file = self.client.upload_batch_file(jsonl.into_bytes()).await?;
        let created = self
            .client
            .post_json(
                "/batches",
                &json!({"input_file_id": file, "endpoint": endpoint, "completion_window": self.settings.completion_window}),
            )
            .await?;
        let batch = str_field(&created, "id")?;
        let ids: Vec<String> = bodies.iter().map(|(id, _)| id.clone()).collect();
        self.journal.created(&batch, &ids).map_err(journal_error)?;
        self.poll(&batch).await
    }

    /// Polls a batch until it ends, then reads, records and returns its result lines.
    async fn poll(&self, batch: &str) -> Outcome {
        let status = loop {
            let b = self.client.get_json(&format!("/batches/{batch}")).await?;
            let status = str_field(&b, "status")?;
            if TERMINAL.contains(&status.as_str()) {
                break b;
            }
            tokio::time::sleep(self.settings.poll).await;
        };
        let mut results = Vec::new();
        for key in ["output_file_id", "error_file_id"] {
            if let Some(file) = status.get(key).and_then(Value::as_str).filter(|f| !f.is_empty()) {
                let bytes = self.client.get_bytes(&format!("/files/{file}/content")).await?;
                for line in String::from_utf8_lossy(&bytes).lines().filter(|l| !l.trim().is_empty()) {
                    let v: Value = serde_json::from_str(line).map_err(|_| {
                        ChatError::new(
                            FaultKind::MalformedResponse,
                            format!("batch {batch}: a result line is not JSON"),
                        )
                    })?;
                    let id = str_field(&v, "custom_id")?;
                    results.push((id, line.to_string()));
                }
            }
        }
        let name = str_field(&status, "status")?;
        self.journal.finished(batch, &name, &results).map_err(journal_error)?;
        if results.is_empty() && name != "completed" {
            let errors: Vec<&str> = status
                .pointer("/errors/data")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|e| e.get("message").and_then(Value::as_str)).collect())
                .unwrap_or_default();
            let why = if errors.is_empty() { String::new() } else { format!(": {}", errors.join("; ")) };
            let kind = if name == "expired" { FaultKind::Timeout } else { FaultKind::ServerError };
            return Err(ChatError::new(kind, format!("batch {batch} {name} without results{why}")));
        }
        Ok(Arc::new(results.into_iter().collect()))
    }

    /// A result line as an answer or a fault.
    fn answer(&self, line: &str) -> Result<ChatResponse, ChatError> {
        let v: Value = serde_json::from_str(line)
            .map_err(|_| ChatError::new(FaultKind::MalformedResponse, "a batch result line is not JSON"))?;
        let status = v.pointer("/response/status_code").and_then(Value::as_u64);
        if status == Some(200) {
            let body = v.pointer("/response/body").cloned().unwrap_or(Value::Null);
            return parse_completion(&self.client.without_key(body.to_string()));
        }
        let message = v
            .pointer("/error/message")
            .or_else(|| v.pointer("/response/body/error/message"))
            .and_then(Value::as_str)
            .unwrap_or("no message");
        let code = v.pointer("/error/code").and_then(Value::as_str).unwrap_or("");
        let kind = match (status, code) {
            (_, "batch_expired") => FaultKind::Timeout,
            (Some(429), _) => FaultKind::RateLimited,
            (Some(s), _) if s >= 500 => FaultKind::ServerError,
            (Some(_), _) => FaultKind::ClientError,
            (None, _) => FaultKind::ServerError,
        };
        let what = match status {
            Some(s) => format!("HTTP {s}"),
            None => code.to_string(),
        };
        let text = String::from_utf8_lossy(&self.client.without_key(message)).into_owned();
        Err(ChatError::new(kind, format!("batch result {what}: {text}")))
    }
}

/// Whether a result line holds an answer.
fn result_ok(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|v| v.pointer("/response/status_code") == Some(&json!(200)))
}

/// A request's id in a batch: the SHA-256 of its body.
pub fn custom_id(body: &Value) -> String {
    let digest = Sha256::digest(body.to_string().as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn str_field(v: &Value, key: &str) -> Result<String, ChatError> {
    v.get(key).and_then(Value::as_str).map(str::to_string).ok_or_else(|| {
        let shown: String = v.to_string().chars().take(200).collect();
        ChatError::new(FaultKind::MalformedResponse, format!("the Batch API's answer has no `{key}`: {shown}"))
    })
}

fn journal_error(message: String) -> ChatError {
    ChatError::new(FaultKind::Engine, format!("cannot record the batch in the store: {message}"))
}

mod url {
    /// The path of a URL (`http://host/v1/chat/completions` → `/v1/chat/completions`).
    pub fn path_of(url: &str) -> String {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        rest.find('/').map_or("/".to_string(), |i| rest[i..].to_string())
    }
}
