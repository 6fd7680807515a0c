//! Qwen2 and Llama GGUF files still load and answer: no such file small enough ships on PyPI, so each
//! test writes a tiny one (random weights, a byte-level BPE vocabulary) with candle's GGUF writer.

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, FinishReason, GenerationSettings};
use h2htalk_local::LocalModel;

const EMBED: usize = 64;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const HEAD_DIM: usize = EMBED / HEADS;
const FFN: usize = 128;

/// GPT-2's byte-to-character table: the characters of a byte-level BPE vocabulary.
fn byte_chars() -> Vec<char> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32).chain(0xA1..=0xAC).chain(0xAE..=0xFF).collect();
    let mut chars: Vec<u32> = printable.clone();
    let mut extra = 0;
    for b in 0..256u32 {
        if !printable.contains(&b) {
            printable.push(b);
            chars.push(256 + extra);
            extra += 1;
        }
    }
    let mut table = vec![' '; 256];
    for (b, c) in printable.iter().zip(chars) {
        table[*b as usize] = char::from_u32(c).unwrap();
    }
    table
}

/// Deterministic values in [-0.5, 0.5).
fn weights(seed: u64, shape: &[usize]) -> QTensor {
    let n: usize = shape.iter().product();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect();
    let t = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
    QTensor::quantize(&t, GgmlDType::F32).unwrap()
}

fn ones(n: usize) -> QTensor {
    QTensor::quantize(&Tensor::ones(n, candle_core::DType::F32, &Device::Cpu).unwrap(), GgmlDType::F32).unwrap()
}

/// Writes a one-layer model of `arch` (`qwen2` or `llama`) with the given special tokens.
fn write_model(path: &std::path::Path, arch: &str, specials: &[&str]) {
    let mut tokens: Vec<String> = byte_chars().iter().map(|c| c.to_string()).collect();
    tokens.extend(specials.iter().map(|s| s.to_string()));
    let types: Vec<Value> = (0..tokens.len()).map(|i| Value::I32(if i < 256 { 1 } else { 3 })).collect();
    let vocab = tokens.len();
    let eos = (256 + specials.len() - 1) as u32;
    let md = |k: &str| format!("{arch}.{k}");
    let metadata: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(arch.into())),
        (md("context_length"), Value::U32(256)),
        (md("embedding_length"), Value::U32(EMBED as u32)),
        (md("block_count"), Value::U32(1)),
        (md("feed_forward_length"), Value::U32(FFN as u32)),
        (md("attention.head_count"), Value::U32(HEADS as u32)),
        (md("attention.head_count_kv"), Value::U32(KV_HEADS as u32)),
        (md("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        (md("rope.dimension_count"), Value::U32(HEAD_DIM as u32)),
        (md("rope.freq_base"), Value::F32(10000.0)),
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Value::String("default".into())),
        ("tokenizer.ggml.tokens".into(), Value::Array(tokens.into_iter().map(Value::String).collect())),
        ("tokenizer.ggml.token_type".into(), Value::Array(types)),
        ("tokenizer.ggml.merges".into(), Value::Array(vec![])),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(eos)),
    ];
    let kv = KV_HEADS * HEAD_DIM;
    let mut tensors: Vec<(String, QTensor)> = vec![
        ("token_embd.weight".into(), weights(1, &[vocab, EMBED])),
        ("output_norm.weight".into(), ones(EMBED)),
        ("output.weight".into(), weights(2, &[vocab, EMBED])),
        ("blk.0.attn_norm.weight".into(), ones(EMBED)),
        ("blk.0.ffn_norm.weight".into(), ones(EMBED)),
        ("blk.0.attn_q.weight".into(), weights(3, &[EMBED, EMBED])),
        ("blk.0.attn_k.weight".into(), weights(4, &[kv, EMBED])),
        ("blk.0.attn_v.weight".into(), weights(5, &[kv, EMBED])),
        ("blk.0.attn_output.weight".into(), weights(6, &[EMBED, EMBED])),
        ("blk.0.ffn_gate.weight".into(), weights(7, &[FFN, EMBED])),
        ("blk.0.ffn_up.weight".into(), weights(8, &[FFN, EMBED])),
        ("blk.0.ffn_down.weight".into(), weights(9, &[EMBED, FFN])),
    ];
    if arch == "qwen2" {
        tensors.push(("blk.0.attn_q.bias".into(), weights(10, &[EMBED])));
        tensors.push(("blk.0.attn_k.bias".into(), weights(11, &[kv])));
        tensors.push(("blk.0.attn_v.bias".into(), weights(12, &[kv])));
    }
    let metadata: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut file = std::fs::File::create(path).unwrap();
    gguf_file::write(&mut file, &metadata, &tensors).unwrap();
}

fn answers(path: &std::path::Path, architecture: &str) {
    let model =
        LocalModel::open(&h2htalk_llm::ModelRef::Local(path.display().to_string())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.architecture(), architecture);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let request = ChatRequest {
        messages: vec![ChatMessage::new("system", "Be kind."), ChatMessage::new("user", "Hello there")],
        settings: GenerationSettings { max_tokens: 6, ..Default::default() },
    };
    let a = rt.block_on(model.chat(&request)).unwrap();
    let b = rt.block_on(model.chat(&request)).unwrap();
    assert_eq!(a, b, "greedy answers repeat");
    assert!(a.output_tokens.is_some_and(|n| n <= 6), "{:?} answer tokens", a.output_tokens);
    assert!(matches!(a.finish_reason, FinishReason::Stop | FinishReason::Length));
    let prompt = model.prompter().prompt_ids(&request.messages).unwrap().len() as u64;
    assert_eq!(a.input_tokens, Some(prompt));
}

#[test]
fn a_qwen2_gguf_loads_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-qwen2.gguf");
    write_model(&path, "qwen2", &["<|im_start|>", "<|im_end|>", "<|endoftext|>"]);
    answers(&path, "qwen2");
}

#[test]
fn a_llama3_gguf_loads_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-llama.gguf");
    write_model(&path, "llama", &["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]);
    answers(&path, "llama");
}
