//! An OpenAI-compatible chat-completions client (OpenAI, vLLM, SGLang, Ollama, llama.cpp server, ...).
//! The API key is read from the environment only and never appears in errors, logs or provenance.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::{Value, json};

use crate::config::ModelConfig;
use crate::model::{BoxFuture, ChatError, ChatModel, ChatRequest, ChatResponse, FaultKind, FinishReason, ModelId};

/// A chat model behind one or more OpenAI-compatible base URLs (replicas, used in turn).
pub struct OpenAiClient {
    name: String,
    model: String,
    base_urls: Vec<String>,
    http: reqwest::Client,
    next: AtomicUsize,
    max_concurrency: usize,
    /// The API key, kept only to mask it out of what servers send back.
    secret: Option<String>,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("base_urls", &self.base_urls)
            .finish()
    }
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "model `{model}`: environment variable `{var}` is not set; export the API key in it (keys are read from the environment only)"
    )]
    MissingKey { model: String, var: String },
    #[error("model `{model}`: {message}")]
    Invalid { model: String, message: String },
}

impl OpenAiClient {
    pub fn new(cfg: &ModelConfig) -> Result<OpenAiClient, ClientError> {
        let invalid = |message: String| ClientError::Invalid { model: cfg.name.clone(), message };
        let mut headers = HeaderMap::new();
        let mut secret = None;
        if let Some(var) = &cfg.api_key_env {
            let key = std::env::var(var)
                .map_err(|_| ClientError::MissingKey { model: cfg.name.clone(), var: var.clone() })?;
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| invalid(format!("the key in `{var}` holds characters a header cannot carry")))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
            secret = Some(key).filter(|k| !k.is_empty());
        }
        for (k, v) in &cfg.headers {
            let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| invalid(format!("bad header name `{k}`")))?;
            let value = HeaderValue::from_str(v).map_err(|_| invalid(format!("bad value for header `{k}`")))?;
            headers.insert(name, value);
        }
        let base_urls = cfg.base_urls();
        if base_urls.is_empty() {
            return Err(invalid("no base_url; give base_url or base_urls".into()));
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(Duration::from_secs_f64(cfg.timeout_s))
            .connect_timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(cfg.max_concurrency)
            .build()
            .map_err(|e| invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(OpenAiClient {
            name: cfg.name.clone(),
            model: cfg.model.clone(),
            base_urls: base_urls.into_iter().map(|u| u.trim_end_matches('/').to_string()).collect(),
            http,
            next: AtomicUsize::new(0),
            max_concurrency: cfg.max_concurrency.max(1),
            secret,
        })
    }

    /// The body with every occurrence of the key replaced, before anything of it is kept: a server
    /// or proxy may quote the key back (in a 401 body, say), and error messages and answers are stored.
    pub(crate) fn without_key(&self, bytes: impl AsRef<[u8]>) -> Vec<u8> {
        let bytes = bytes.as_ref();
        match &self.secret {
            Some(key) if bytes.windows(key.len()).any(|w| w == key.as_bytes()) => {
                String::from_utf8_lossy(bytes).replace(key.as_str(), "[api key]").into_bytes()
            }
            _ => bytes.to_vec(),
        }
    }

    /// The chat-completions body of a request (what is sent, and what a batch line carries).
    pub(crate) fn body(&self, request: &ChatRequest) -> Value {
        let s = &request.settings;
        let mut body = json!({
            "model": self.model,
            "messages": request.messages,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "stream": false,
        });
        if let Some(seed) = s.seed {
            body["seed"] = json!(seed);
        }
        if let Some(top_p) = s.top_p {
            body["top_p"] = json!(top_p);
        }
        body
    }

    /// The URL of `path` under the first base URL (the Batch API uses one endpoint).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_urls[0])
    }

    /// Sends a request of the Batch API, trying a transient fault again a few times; the body as
    /// bytes (the key masked out of it).
    async fn send_batch_api(&self, build: impl Fn() -> reqwest::RequestBuilder) -> Result<Vec<u8>, ChatError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = async {
                let response = build().send().await.map_err(transport_error)?;
                let status = response.status();
                let bytes = self.without_key(response.bytes().await.map_err(transport_error)?);
                if status.is_success() {
                    Ok(bytes)
                } else {
                    Err(ChatError::new(status_fault(status), format!("Batch API: HTTP {status}: {}", snippet(&bytes))))
                }
            }
            .await;
            match result {
                Err(e) if e.kind.is_transient() && attempt < 5 => {
                    tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
                }
                other => return other,
            }
        }
    }

    fn batch_json(bytes: &[u8]) -> Result<Value, ChatError> {
        serde_json::from_slice(bytes).map_err(|_| {
            ChatError::new(FaultKind::MalformedResponse, format!("Batch API: the body is not JSON: {}", snippet(bytes)))
        })
    }

    /// Uploads a JSONL file of batch requests (`POST /files`, purpose `batch`); its file id.
    pub(crate) async fn upload_batch_file(&self, jsonl: Vec<u8>) -> Result<String, ChatError> {
        let url = self.url("/files");
        let bytes = self
            .send_batch_api(|| {
                let part = reqwest::multipart::Part::bytes(jsonl.clone())
                    .file_name("h2htalk-batch.jsonl")
                    .mime_str("application/jsonl")
                    .expect("a valid MIME type");
                let form = reqwest::multipart::Form::new().text("purpose", "batch").part("file", part);
                self.http.post(&url).multipart(form)
            })
            .await?;
        let v = Self::batch_json(&bytes)?;
        v.get("id").and_then(Value::as_str).map(str::to_string).ok_or_else(|| {
            ChatError::new(
                FaultKind::MalformedResponse,
                format!("Batch API: the upload has no file id: {}", snippet(&bytes)),
            )
        })
    }

    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Result<Value, ChatError> {
        let url = self.url(path);
        Self::batch_json(&self.send_batch_api(|| self.http.post(&url).json(body)).await?)
    }

    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, ChatError> {
        Self::batch_json(&self.get_bytes(path).await?)
    }

    pub(crate) async fn get_bytes(&self, path: &str) -> Result<Vec<u8>, ChatError> {
        let url = self.url(path);
        self.send_batch_api(|| self.http.get(&url)).await
    }

    async fn request(&self, request: &ChatRequest) -> Result<ChatResponse, ChatError> {
        let base = &self.base_urls[self.next.fetch_add(1, Ordering::Relaxed) % self.base_urls.len()];
        let body = self.body(request);
        let response =
            self.http.post(format!("{base}/chat/completions")).json(&body).send().await.map_err(transport_error)?;
        let status = response.status();
        let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
        let bytes = self.without_key(response.bytes().await.map_err(transport_error)?);
        if !status.is_success() {
            let mut err = ChatError::new(status_fault(status), format!("HTTP {status}: {}", snippet(&bytes)));
            err.retry_after = retry_after;
            return Err(err);
        }
        parse_completion(&bytes)
    }
}

impl ChatModel for OpenAiClient {
    fn id(&self) -> ModelId {
        ModelId { provider: "openai".into(), name: self.model.clone(), endpoint: self.base_urls.join(",") }
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ChatError>> {
        Box::pin(self.request(request))
    }

    fn max_concurrency(&self) -> usize {
        self.max_concurrency
    }
}

/// The fault an HTTP error status stands for.
fn status_fault(status: StatusCode) -> FaultKind {
    match status {
        StatusCode::TOO_MANY_REQUESTS => FaultKind::RateLimited,
        StatusCode::REQUEST_TIMEOUT => FaultKind::Timeout,
        s if s.is_server_error() => FaultKind::ServerError,
        _ => FaultKind::ClientError,
    }
}

fn transport_error(e: reqwest::Error) -> ChatError {
    let kind = if e.is_timeout() { FaultKind::Timeout } else { FaultKind::Connection };
    // reqwest's message names the URL, never the headers.
    ChatError::new(kind, format!("{e}"))
}

/// `Retry-After` as seconds (the HTTP-date form is rare for APIs and is ignored).
fn parse_retry_after(v: &str) -> Option<Duration> {
    v.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(|s| Duration::from_secs_f64(s.min(3600.0)))
}

fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut s: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        s.push('…');
    }
    s
}

/// Reads a chat-completions body. A body that is not the expected JSON is a fault (retried), not an
/// answer; `finish_reason: content_filter` is a fault that retrying will not fix.
pub fn parse_completion(bytes: &[u8]) -> Result<ChatResponse, ChatError> {
    let malformed = |why: &str| ChatError::new(FaultKind::MalformedResponse, format!("{why}: {}", snippet(bytes)));
    let v: Value = serde_json::from_slice(bytes).map_err(|_| malformed("the body is not JSON"))?;
    let choice = v.get("choices").and_then(|c| c.get(0)).ok_or_else(|| malformed("no choices[0]"))?;
    let finish =
        choice.get("finish_reason").and_then(Value::as_str).map(FinishReason::parse).unwrap_or(FinishReason::Stop);
    if finish == FinishReason::ContentFilter {
        return Err(ChatError::new(
            FaultKind::ContentFilter,
            "the provider filtered the answer (finish_reason content_filter)",
        ));
    }
    let text = match choice.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(_) => return Err(malformed("message.content is not a string")),
    };
    let usage = |key: &str| v.get("usage").and_then(|u| u.get(key)).and_then(Value::as_u64);
    Ok(ChatResponse {
        text,
        finish_reason: finish,
        input_tokens: usage("prompt_tokens"),
        output_tokens: usage("completion_tokens"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_parse_and_faults_classify() {
        let ok = br#"{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#;
        let r = parse_completion(ok).unwrap();
        assert_eq!(
            (r.text.as_str(), r.finish_reason, r.input_tokens, r.output_tokens),
            ("hi", FinishReason::Length, Some(7), Some(2))
        );
        assert_eq!(parse_completion(b"{\"choices\": [").unwrap_err().kind, FaultKind::MalformedResponse);
        assert_eq!(parse_completion(b"{\"error\": \"x\"}").unwrap_err().kind, FaultKind::MalformedResponse);
        let filtered = br#"{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}"#;
        assert_eq!(parse_completion(filtered).unwrap_err().kind, FaultKind::ContentFilter);
        let null = br#"{"choices":[{"message":{"content":null},"finish_reason":"stop"}]}"#;
        assert_eq!(parse_completion(null).unwrap().text, "");
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
