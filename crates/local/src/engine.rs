//! The model, its chat format and the generation loop: all blocking, run on the engine's own thread.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use h2htalk_llm::{ChatError, ChatMessage, ChatResponse, FaultKind, FinishReason, GenerationSettings};

use crate::LocalError;
use crate::gemma3;
use crate::tokenizer::Tokenizer;

/// Architectures this engine runs (`general.architecture`).
pub const SUPPORTED_ARCHITECTURES: &[&str] = &["gemma3", "qwen2", "llama"];

enum Weights {
    /// Runs batches of sequences, each with its own cache.
    Gemma3(gemma3::Model),
    /// candle's models keep one sequence's cache inside: one sequence at a time.
    Qwen2(quantized_qwen2::ModelWeights),
    Llama(quantized_llama::ModelWeights),
}

impl Weights {
    /// candle's models: the logits of the last of `tokens`, run from position `pos` (0 starts a
    /// new sequence).
    fn forward_one(&mut self, tokens: &[u32], pos: usize) -> candle_core::Result<Vec<f32>> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = match self {
            Weights::Gemma3(_) => unreachable!("Gemma 3 runs in batches"),
            Weights::Qwen2(m) => {
                if pos == 0 {
                    m.clear_kv_cache();
                }
                m.forward(&input, pos)?
            }
            Weights::Llama(m) => {
                if pos == 0 {
                    m.clear_kv_cache();
                }
                m.forward(&input, pos)?
            }
        };
        logits.squeeze(0)?.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()
    }
}

/// How a conversation is laid out as tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatFormat {
    /// `<start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n`; the system message opens the
    /// first user turn.
    Gemma,
    /// `<|im_start|>role\n...<|im_end|>\n` (Qwen2).
    ChatMl,
    /// `<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>` (Llama 3).
    Llama3,
}

/// A piece of a prompt: text to tokenize, or a special token by id.
enum Segment {
    Text(String),
    Special(u32),
}

/// A loaded model.
pub struct Engine {
    weights: Weights,
    pub prompter: Arc<Prompter>,
    pub architecture: String,
    context_length: usize,
    options: Options,
    pub stats: Arc<Counters>,
}

/// How the engine serves requests; [`Options::default`] reads the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Requests decoded together (Gemma 3; candle's Qwen2 and Llama take one at a time):
    /// `H2HTALK_LOCAL_BATCH`, else 4 per core, between 4 and 16. Decoding is bound by reading the
    /// weights, which a batch reads once for all its sequences.
    pub batch: usize,
    /// Whether a prompt that begins as an earlier or concurrent request's did starts from that
    /// request's stored keys and values instead of running its beginning again (Gemma 3; on unless
    /// `H2HTALK_LOCAL_PREFIX_REUSE=0`). The answers are the same either way.
    pub reuse_prefixes: bool,
}

impl Default for Options {
    fn default() -> Options {
        let env = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string());
        let batch = env("H2HTALK_LOCAL_BATCH").and_then(|v| v.parse::<usize>().ok()).map(|n| n.max(1)).unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            (4 * cores).clamp(4, 16)
        });
        Options { batch, reuse_prefixes: env("H2HTALK_LOCAL_PREFIX_REUSE").as_deref() != Some("0") }
    }
}

/// What the engine has done, counted as it goes ([`crate::LocalModel::stats`]).
#[derive(Debug, Default)]
pub struct Counters {
    requests: std::sync::atomic::AtomicU64,
    steps: std::sync::atomic::AtomicU64,
    peak_batch: std::sync::atomic::AtomicUsize,
    prompt_tokens: std::sync::atomic::AtomicU64,
    reused_tokens: std::sync::atomic::AtomicU64,
}

/// A snapshot of the engine's counters, taken by [`crate::LocalModel::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests taken up (answered, failed or cancelled).
    pub requests: u64,
    /// Forward passes run.
    pub steps: u64,
    /// The most requests one forward pass has run together.
    pub peak_batch: usize,
    /// Prompt tokens of the requests taken up.
    pub prompt_tokens: u64,
    /// Of those, the ones not run but copied from another request that began the same way
    /// ([`Options::reuse_prefixes`]).
    pub reused_tokens: u64,
}

impl Counters {
    pub fn snapshot(&self) -> Stats {
        use std::sync::atomic::Ordering::Relaxed;
        Stats {
            requests: self.requests.load(Relaxed),
            steps: self.steps.load(Relaxed),
            peak_batch: self.peak_batch.load(Relaxed),
            prompt_tokens: self.prompt_tokens.load(Relaxed),
            reused_tokens: self.reused_tokens.load(Relaxed),
        }
    }
}

/// The tokenizer and the chat format: turns messages into prompt ids, and answer ids into text.
/// Shared between the engine thread and [`crate::LocalModel`] (to count tokens without the engine).
pub struct Prompter {
    pub tokenizer: Tokenizer,
    pub format: ChatFormat,
    stop: Vec<u32>,
    specials: Specials,
}

struct Specials {
    bos: Option<u32>,
    /// Opens a turn (`<start_of_turn>`, `<|im_start|>`, `<|start_header_id|>`).
    open: u32,
    /// Closes a turn (`<end_of_turn>`, `<|im_end|>`, `<|eot_id|>`).
    close: u32,
    /// Llama 3's `<|end_header_id|>`.
    header_end: Option<u32>,
}

fn read_metadata_u32(content: &gguf_file::Content, key: &str) -> Option<usize> {
    content.metadata.get(key).and_then(|v| v.to_u32().ok()).map(|v| v as usize)
}

impl Engine {
    /// Loads a GGUF file: checks the magic, reads the metadata, builds the tokenizer and the weights.
    pub fn load(path: &Path, mut options: Options) -> Result<Engine, LocalError> {
        let file = File::open(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                LocalError::NotFound { path: path.to_path_buf() }
            } else {
                LocalError::Io { path: path.to_path_buf(), source }
            }
        })?;
        if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
            return Err(LocalError::NotGguf { path: path.to_path_buf(), detail: "not a regular file".into() });
        }
        let mut reader = BufReader::new(file);
        let mut magic = [0u8; 4];
        if reader.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
            return Err(LocalError::NotGguf {
                path: path.to_path_buf(),
                detail: format!("it does not start with the GGUF magic (first bytes: {magic:02x?})"),
            });
        }
        let mut reader =
            BufReader::new(File::open(path).map_err(|source| LocalError::Io { path: path.to_path_buf(), source })?);
        let content = gguf_file::Content::read(&mut reader).map_err(|e| LocalError::NotGguf {
            path: path.to_path_buf(),
            detail: format!("its header cannot be read: {e}"),
        })?;
        let architecture =
            content.metadata.get("general.architecture").and_then(|v| v.to_string().ok().cloned()).ok_or_else(
                || LocalError::Invalid {
                    path: path.to_path_buf(),
                    detail: "no general.architecture in the metadata".into(),
                },
            )?;
        if !SUPPORTED_ARCHITECTURES.contains(&architecture.as_str()) {
            return Err(LocalError::UnsupportedArchitecture { path: path.to_path_buf(), architecture });
        }
        let tokenizer = Tokenizer::from_gguf(&content)
            .map_err(|detail| LocalError::Invalid { path: path.to_path_buf(), detail })?;

        let invalid = |detail: String| LocalError::Invalid { path: path.to_path_buf(), detail };
        let special = |name: &str| {
            tokenizer.token_id(name).ok_or_else(|| invalid(format!("the vocabulary has no `{name}` token")))
        };
        let format = match architecture.as_str() {
            "gemma3" => ChatFormat::Gemma,
            "qwen2" => ChatFormat::ChatMl,
            _ if tokenizer.token_id("<|start_header_id|>").is_some() => ChatFormat::Llama3,
            _ if tokenizer.token_id("<|im_start|>").is_some() => ChatFormat::ChatMl,
            _ => {
                return Err(invalid(
                    "a `llama` model without Llama 3 (`<|start_header_id|>`) or ChatML (`<|im_start|>`) tokens: \
                     its chat format is not supported"
                        .into(),
                ));
            }
        };
        let specials = match format {
            ChatFormat::Gemma => Specials {
                bos: tokenizer.bos,
                open: special("<start_of_turn>")?,
                close: special("<end_of_turn>")?,
                header_end: None,
            },
            ChatFormat::ChatMl => {
                Specials { bos: None, open: special("<|im_start|>")?, close: special("<|im_end|>")?, header_end: None }
            }
            ChatFormat::Llama3 => Specials {
                bos: tokenizer.bos.or_else(|| tokenizer.token_id("<|begin_of_text|>")),
                open: special("<|start_header_id|>")?,
                close: special("<|eot_id|>")?,
                header_end: Some(special("<|end_header_id|>")?),
            },
        };
        // The end of the turn, or the start of another one: either way the answer is over.
        let mut stop: Vec<u32> = vec![specials.close, specials.open];
        stop.extend(tokenizer.eos);
        for name in ["<|endoftext|>", "<|end_of_text|>", "<|eom_id|>", "<eos>"] {
            stop.extend(tokenizer.token_id(name));
        }
        stop.sort_unstable();
        stop.dedup();

        let device = Device::Cpu;
        let context_length = read_metadata_u32(&content, &format!("{architecture}.context_length")).unwrap_or(4096);
        let weights_err = |e: candle_core::Error| invalid(format!("cannot load the weights: {e}"));
        let (weights, context_length) = match architecture.as_str() {
            "gemma3" => {
                let m = gemma3::Model::from_gguf(content, &mut reader).map_err(weights_err)?;
                let n = m.context_length();
                (Weights::Gemma3(m), n)
            }
            "qwen2" => (
                Weights::Qwen2(
                    quantized_qwen2::ModelWeights::from_gguf(content, &mut reader, &device).map_err(weights_err)?,
                ),
                context_length,
            ),
            _ => (
                Weights::Llama(
                    quantized_llama::ModelWeights::from_gguf(content, &mut reader, &device).map_err(weights_err)?,
                ),
                // candle's quantized_llama precomputes rotary tables for this many positions.
                context_length.min(quantized_llama::MAX_SEQ_LEN),
            ),
        };
        let prompter = Arc::new(Prompter { tokenizer, format, stop, specials });
        if !matches!(weights, Weights::Gemma3(_)) {
            options = Options { batch: 1, reuse_prefixes: false };
        }
        Ok(Engine { weights, prompter, architecture, context_length, options, stats: Default::default() })
    }

    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// How many requests are decoded together.
    pub fn batch(&self) -> usize {
        self.options.batch
    }
}

impl Prompter {
    /// Whether generation ends at this token (end of turn, end of text).
    pub fn is_stop(&self, id: u32) -> bool {
        self.stop.contains(&id)
    }

    /// The prompt's token ids, the chat format applied and the assistant turn opened.
    pub fn prompt_ids(&self, messages: &[ChatMessage]) -> Result<Vec<u32>, ChatError> {
        let client = |m: String| ChatError::new(FaultKind::ClientError, m);
        if messages.is_empty() {
            return Err(client("a chat request needs at least one message".into()));
        }
        let s = &self.specials;
        let mut segs: Vec<Segment> = Vec::new();
        if let Some(bos) = s.bos {
            segs.push(Segment::Special(bos));
        }
        match self.format {
            ChatFormat::Gemma => {
                let mut system: Option<String> = None;
                let mut first_user = true;
                let mut turns: Vec<(&str, String)> = Vec::new();
                for m in messages {
                    match m.role.as_str() {
                        "system" | "developer" => {
                            if !turns.is_empty() || system.is_some() {
                                return Err(client(format!(
                                    "Gemma has no system turn: a `{}` message must be the first message",
                                    m.role
                                )));
                            }
                            system = Some(m.content.clone());
                        }
                        "user" => {
                            let mut content = m.content.trim().to_string();
                            if first_user {
                                if let Some(sys) = system.take() {
                                    content = format!("{sys}\n\n{content}");
                                }
                                first_user = false;
                            }
                            turns.push(("user", content));
                        }
                        "assistant" | "model" => turns.push(("model", m.content.trim().to_string())),
                        other => return Err(client(format!("unknown message role `{other}`"))),
                    }
                }
                if let Some(sys) = system {
                    // A system message with no user message after it: it is the user turn.
                    turns.insert(0, ("user", format!("{sys}\n\n")));
                }
                for (role, content) in turns {
                    segs.push(Segment::Special(s.open));
                    segs.push(Segment::Text(format!("{role}\n{content}")));
                    segs.push(Segment::Special(s.close));
                    segs.push(Segment::Text("\n".into()));
                }
                segs.push(Segment::Special(s.open));
                segs.push(Segment::Text("model\n".into()));
            }
            ChatFormat::ChatMl => {
                for m in messages {
                    let role =
                        chat_role(&m.role).ok_or_else(|| client(format!("unknown message role `{}`", m.role)))?;
                    segs.push(Segment::Special(s.open));
                    segs.push(Segment::Text(format!("{role}\n{}", m.content)));
                    segs.push(Segment::Special(s.close));
                    segs.push(Segment::Text("\n".into()));
                }
                segs.push(Segment::Special(s.open));
                segs.push(Segment::Text("assistant\n".into()));
            }
            ChatFormat::Llama3 => {
                let header_end = s.header_end.expect("Llama 3 format has <|end_header_id|>");
                for m in messages {
                    let role =
                        chat_role(&m.role).ok_or_else(|| client(format!("unknown message role `{}`", m.role)))?;
                    segs.push(Segment::Special(s.open));
                    segs.push(Segment::Text(role.to_string()));
                    segs.push(Segment::Special(header_end));
                    segs.push(Segment::Text(format!("\n\n{}", m.content.trim())));
                    segs.push(Segment::Special(s.close));
                }
                segs.push(Segment::Special(s.open));
                segs.push(Segment::Text("assistant".into()));
                segs.push(Segment::Special(header_end));
                segs.push(Segment::Text("\n\n".into()));
            }
        }
        let mut ids = Vec::new();
        for seg in segs {
            match seg {
                Segment::Special(id) => ids.push(id),
                Segment::Text(t) => {
                    ids.extend(self.tokenizer.encode(&t).map_err(|e| ChatError::new(FaultKind::Engine, e))?)
                }
            }
        }
        Ok(ids)
    }
}

/// A request for the engine: its messages and settings, and where the answer goes.
pub struct Job {
    pub messages: Vec<ChatMessage>,
    pub settings: GenerationSettings,
    pub reply: tokio::sync::oneshot::Sender<Result<ChatResponse, ChatError>>,
}

/// A request being answered.
struct Active {
    job: Job,
    prompt: Vec<u32>,
    /// Prompt tokens already run.
    fed: usize,
    output: Vec<u32>,
    budget: usize,
    sampler: LogitsProcessor,
    cache: gemma3::Cache,
}

/// Prompt tokens run per step, over all sequences: bounds how long a new prompt holds back the
/// sequences being decoded.
const PROMPT_TOKENS_PER_STEP: usize = 512;

/// A cache no request holds now, with the tokens whose keys and values it keeps: a later prompt
/// that begins with them starts from it.
struct Spare {
    cache: gemma3::Cache,
    tokens: Vec<u32>,
}

impl Active {
    /// The tokens whose keys and values the cache holds.
    fn cached(&self) -> impl Iterator<Item = &u32> {
        self.prompt.iter().chain(&self.output).take(self.cache.len())
    }
}

/// How many leading tokens two sequences share.
fn common_prefix<'a>(a: impl IntoIterator<Item = &'a u32>, b: impl IntoIterator<Item = &'a u32>) -> usize {
    a.into_iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn engine_error(e: impl std::fmt::Display) -> ChatError {
    ChatError::new(FaultKind::Engine, format!("local model: {e}"))
}

impl Engine {
    /// Answers the jobs that arrive until the sender is dropped: up to [`Engine::batch`] at once,
    /// a finished request's place going to the next one waiting (continuous batching). A request
    /// whose receiver is dropped is stopped between steps.
    pub fn serve(&mut self, jobs: std::sync::mpsc::Receiver<Job>) {
        let mut waiting: std::collections::VecDeque<Job> = Default::default();
        let mut active: Vec<Active> = Vec::new();
        let mut spare: Vec<Spare> = Vec::new();
        let mut open = true;
        loop {
            if active.is_empty() && waiting.is_empty() {
                if !open {
                    return;
                }
                match jobs.recv() {
                    Ok(job) => waiting.push_back(job),
                    Err(_) => return,
                }
            }
            while open {
                match jobs.try_recv() {
                    Ok(job) => waiting.push_back(job),
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => open = false,
                }
            }
            waiting.retain(|j| !j.reply.is_closed());
            let (gone, kept): (Vec<Active>, Vec<Active>) = active.drain(..).partition(|a| a.job.reply.is_closed());
            active = kept;
            spare.extend(gone.into_iter().map(|a| Spare { tokens: a.cached().copied().collect(), cache: a.cache }));
            while active.len() < self.options.batch
                && let Some(job) = waiting.pop_front()
            {
                self.stats.requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match self.start(job, &mut spare) {
                    Ok(a) => active.push(a),
                    Err((job, e)) => {
                        let _ = job.reply.send(Err(e));
                    }
                }
            }
            if active.is_empty() {
                continue;
            }
            self.stats.steps.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.stats.peak_batch.fetch_max(active.len(), std::sync::atomic::Ordering::Relaxed);
            let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.step(&mut active)))
                .unwrap_or_else(|_| Err(ChatError::new(FaultKind::Engine, "the local engine panicked")));
            match stepped {
                Ok(finished) => {
                    for (i, finish) in finished.into_iter().enumerate().rev() {
                        let Some(finish) = finish else { continue };
                        let a = active.swap_remove(i);
                        let answer = ChatResponse {
                            text: self.prompter.tokenizer.decode(&a.output),
                            finish_reason: finish,
                            input_tokens: Some(a.prompt.len() as u64),
                            output_tokens: Some(a.output.len() as u64),
                        };
                        let tokens = a.cached().copied().collect();
                        let _ = a.job.reply.send(Ok(answer));
                        spare.push(Spare { cache: a.cache, tokens });
                    }
                }
                Err(e) => {
                    for a in active.drain(..) {
                        let _ = a.job.reply.send(Err(e.clone()));
                        // A pass that failed may have left its caches half written.
                        let mut cache = a.cache;
                        cache.clear();
                        spare.push(Spare { cache, tokens: Vec::new() });
                    }
                }
            }
        }
    }

    /// Checks a request and sets it up with a spare cache: the one whose tokens begin the prompt
    /// furthest, kept up to there (see [`Options::reuse_prefixes`]), else the one unused longest.
    /// An error goes back with the job to its sender.
    #[allow(clippy::result_large_err)]
    fn start(&self, job: Job, spare: &mut Vec<Spare>) -> Result<Active, (Job, ChatError)> {
        let settings = &job.settings;
        let client = |m: String| ChatError::new(FaultKind::ClientError, m);
        if settings.max_tokens == 0 {
            return Err((job, client("max_tokens must be at least 1".into())));
        }
        if !settings.temperature.is_finite() || settings.temperature < 0.0 {
            let e = client(format!("temperature must be 0 or more, not {}", settings.temperature));
            return Err((job, e));
        }
        let prompt = match self.prompter.prompt_ids(&job.messages) {
            Ok(p) => p,
            Err(e) => return Err((job, e)),
        };
        if prompt.len() >= self.context_length {
            let e = client(format!(
                "the prompt has {} tokens; the model's context is {} tokens",
                prompt.len(),
                self.context_length
            ));
            return Err((job, e));
        }
        let budget = (settings.max_tokens as usize).min(self.context_length - prompt.len());
        let sampling = if settings.temperature <= 0.0 {
            Sampling::ArgMax
        } else {
            let temperature = settings.temperature as f64;
            match settings.top_p {
                Some(p) if p > 0.0 && p < 1.0 => Sampling::TopP { p: p as f64, temperature },
                _ => Sampling::All { temperature },
            }
        };
        let sampler = LogitsProcessor::from_sampling(settings.seed.unwrap_or(0), sampling);
        // At least the prompt's last token is run: its logits give the first answer token.
        let shared = |s: &Spare| if self.options.reuse_prefixes { common_prefix(&s.tokens, &prompt).min(prompt.len() - 1) } else { 0 };
        let best = (0..spare.len()).rev().max_by_key(|&i| shared(&spare[i]));
        let (mut cache, fed) = match best {
            Some(i) => {
                let fed = shared(&spare[i]);
                // The oldest spare when none shares anything: recent ones are likelier to be shared.
                let s = spare.remove(if fed > 0 { i } else { 0 });
                (s.cache, fed)
            }
            None => (gemma3::Cache::default(), 0),
        };
        cache.truncate(fed);
        use std::sync::atomic::Ordering::Relaxed;
        self.stats.prompt_tokens.fetch_add(prompt.len() as u64, Relaxed);
        self.stats.reused_tokens.fetch_add(fed as u64, Relaxed);
        Ok(Active { job, prompt, fed, output: Vec::new(), budget, sampler, cache })
    }

    /// One forward pass over the active requests: a piece of each prompt not yet run (up to
    /// [`PROMPT_TOKENS_PER_STEP`] in all; candle's models take one request at a time, whole) and the
    /// last token of each answer being generated; then a token is sampled for each request whose
    /// prompt is complete. Returns, per request, how it finished, if it did.
    fn step(&mut self, active: &mut [Active]) -> Result<Vec<Option<FinishReason>>, ChatError> {
        let whole = !matches!(self.weights, Weights::Gemma3(_));
        if self.options.reuse_prefixes {
            self.share_prefixes(active);
        }
        // Per request: the positions it runs now (in prompt + answer), and whether it samples after.
        let mut room = PROMPT_TOKENS_PER_STEP;
        let mut plan: Vec<(usize, usize, bool)> = Vec::with_capacity(active.len());
        for a in active.iter() {
            if a.fed < a.prompt.len() {
                let take = if whole { a.prompt.len() - a.fed } else { (a.prompt.len() - a.fed).min(room) };
                room -= take.min(room);
                plan.push((a.fed, a.fed + take, a.fed + take == a.prompt.len()));
            } else {
                let at = a.prompt.len() + a.output.len() - 1;
                plan.push((at, at + 1, true));
            }
        }
        let tokens: Vec<Vec<u32>> = active
            .iter()
            .zip(&plan)
            .map(|(a, &(from, to, _))| a.prompt.iter().chain(&a.output).skip(from).take(to - from).copied().collect())
            .collect();
        let logits: Vec<Vec<f32>> = match &mut self.weights {
            Weights::Gemma3(model) => {
                let mut chunks: Vec<gemma3::Chunk> = active
                    .iter_mut()
                    .zip(&tokens)
                    .zip(&plan)
                    .filter(|((_, t), _)| !t.is_empty())
                    .map(|((a, t), &(_, _, sample))| gemma3::Chunk { cache: &mut a.cache, tokens: t, logits: sample })
                    .collect();
                let mut out = model.forward(&mut chunks).map_err(engine_error)?.into_iter();
                tokens.iter().map(|t| if t.is_empty() { Vec::new() } else { out.next().unwrap_or_default() }).collect()
            }
            other => {
                let mut out = Vec::with_capacity(active.len());
                for (t, &(from, _, _)) in tokens.iter().zip(&plan) {
                    out.push(if t.is_empty() { Vec::new() } else { other.forward_one(t, from).map_err(engine_error)? });
                }
                out
            }
        };
        let mut finished = Vec::with_capacity(active.len());
        for ((a, &(from, to, sample)), logits) in active.iter_mut().zip(&plan).zip(logits) {
            if from < a.prompt.len() {
                a.fed = to;
            }
            if !sample || to == from {
                finished.push(None);
                continue;
            }
            let n = logits.len();
            let next = Tensor::from_vec(logits, n, &Device::Cpu)
                .and_then(|l| a.sampler.sample(&l))
                .map_err(engine_error)?;
            if self.prompter.is_stop(next) {
                finished.push(Some(FinishReason::Stop));
                continue;
            }
            a.output.push(next);
            finished.push((a.output.len() >= a.budget).then_some(FinishReason::Length));
        }
        Ok(finished)
    }
}

impl Engine {
    /// Brings each prompt being run up to the furthest point another active request's cache holds
    /// of the same beginning (requests that start together: the first runs the shared beginning,
    /// the others copy it the step after).
    fn share_prefixes(&self, active: &mut [Active]) {
        for i in 0..active.len() {
            let a = &active[i];
            if a.fed >= a.prompt.len() {
                continue;
            }
            let limit = a.prompt.len() - 1;
            let best = (0..active.len())
                .filter(|&j| j != i)
                .map(|j| (common_prefix(&a.prompt[..limit], active[j].cached()), j))
                .max();
            let Some((upto, j)) = best.filter(|&(upto, _)| upto > a.fed) else { continue };
            let (a, b) = if i < j {
                let (l, r) = active.split_at_mut(j);
                (&mut l[i], &r[0])
            } else {
                let (l, r) = active.split_at_mut(i);
                (&mut r[0], &l[j])
            };
            a.cache.extend_from(&b.cache, upto);
            self.stats.reused_tokens.fetch_add((upto - a.fed) as u64, std::sync::atomic::Ordering::Relaxed);
            a.fed = upto;
        }
    }
}

fn chat_role(role: &str) -> Option<&'static str> {
    match role {
        "system" | "developer" => Some("system"),
        "user" => Some("user"),
        "assistant" | "model" => Some("assistant"),
        _ => None,
    }
}
