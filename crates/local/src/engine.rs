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
    Gemma3(gemma3::ModelWeights),
    Qwen2(quantized_qwen2::ModelWeights),
    Llama(quantized_llama::ModelWeights),
}

impl Weights {
    fn forward(&mut self, input: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Weights::Gemma3(m) => m.forward(input, pos),
            Weights::Qwen2(m) => {
                if pos == 0 {
                    m.clear_kv_cache();
                }
                m.forward(input, pos)
            }
            Weights::Llama(m) => {
                if pos == 0 {
                    m.clear_kv_cache();
                }
                m.forward(input, pos)
            }
        }
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
    device: Device,
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
    pub fn load(path: &Path) -> Result<Engine, LocalError> {
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
                let dequantize = dequantize_policy(&content);
                let m =
                    gemma3::ModelWeights::from_gguf(content, &mut reader, &device, dequantize).map_err(weights_err)?;
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
        Ok(Engine { weights, prompter, architecture, context_length, device })
    }

    pub fn context_length(&self) -> usize {
        self.context_length
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

impl Engine {
    /// Generates an answer. `cancelled` is polled between tokens: when it says so, generation stops
    /// and an error is returned (nobody is waiting for the answer).
    pub fn generate(
        &mut self,
        messages: &[ChatMessage],
        settings: &GenerationSettings,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<ChatResponse, ChatError> {
        let engine_err = |e: candle_core::Error| ChatError::new(FaultKind::Engine, format!("local model: {e}"));
        if settings.max_tokens == 0 {
            return Err(ChatError::new(FaultKind::ClientError, "max_tokens must be at least 1"));
        }
        if !settings.temperature.is_finite() || settings.temperature < 0.0 {
            return Err(ChatError::new(
                FaultKind::ClientError,
                format!("temperature must be 0 or more, not {}", settings.temperature),
            ));
        }
        let prompter = Arc::clone(&self.prompter);
        let prompt = prompter.prompt_ids(messages)?;
        if prompt.len() >= self.context_length {
            return Err(ChatError::new(
                FaultKind::ClientError,
                format!(
                    "the prompt has {} tokens; the model's context is {} tokens",
                    prompt.len(),
                    self.context_length
                ),
            ));
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
        let mut sampler = LogitsProcessor::from_sampling(settings.seed.unwrap_or(0), sampling);

        let input = Tensor::new(prompt.as_slice(), &self.device).and_then(|t| t.unsqueeze(0)).map_err(engine_err)?;
        let mut logits = self.weights.forward(&input, 0).map_err(engine_err)?;
        let mut output: Vec<u32> = Vec::new();
        let finish = loop {
            if cancelled() {
                return Err(ChatError::new(FaultKind::Engine, "cancelled: the request was dropped"));
            }
            let logits_1d = logits.squeeze(0).and_then(|l| l.to_dtype(candle_core::DType::F32)).map_err(engine_err)?;
            let next = sampler.sample(&logits_1d).map_err(engine_err)?;
            if prompter.is_stop(next) {
                break FinishReason::Stop;
            }
            output.push(next);
            if output.len() >= budget {
                break FinishReason::Length;
            }
            let input = Tensor::new(&[next], &self.device).and_then(|t| t.unsqueeze(0)).map_err(engine_err)?;
            logits = self.weights.forward(&input, prompt.len() + output.len() - 1).map_err(engine_err)?;
        };
        Ok(ChatResponse {
            text: prompter.tokenizer.decode(&output),
            finish_reason: finish,
            input_tokens: Some(prompt.len() as u64),
            output_tokens: Some(output.len() as u64),
        })
    }
}

/// Largest model (as f32) whose weights are expanded at load: see [`gemma3`]'s `dequantize`.
const DEQUANTIZE_MAX_BYTES: u64 = 2 << 30;

/// Whether to expand the weights to f32: `H2HTALK_LOCAL_DEQUANTIZE=1|0` decides, else models up to
/// 2 GiB as f32 (Gemma 3 270M: about 1.1 GB) are expanded and larger ones stay quantized.
fn dequantize_policy(content: &gguf_file::Content) -> bool {
    match std::env::var("H2HTALK_LOCAL_DEQUANTIZE").as_deref() {
        Ok("1") | Ok("true") => return true,
        Ok("0") | Ok("false") => return false,
        _ => {}
    }
    let f32_bytes: u64 = content.tensor_infos.values().map(|t| t.shape.elem_count() as u64 * 4).sum();
    f32_bytes <= DEQUANTIZE_MAX_BYTES
}

fn chat_role(role: &str) -> Option<&'static str> {
    match role {
        "system" | "developer" => Some("system"),
        "user" => Some("user"),
        "assistant" | "model" => Some("assistant"),
        _ => None,
    }
}
