//! Gemma 3 (text) with quantized weights from a GGUF file.
//!
//! Forked from `candle-transformers` 0.11.1 `models/quantized_gemma3.rs` (MIT OR Apache-2.0, Hugging Face)
//! with four changes:
//! - the feed-forward activation is GELU (tanh approximation), Gemma's `gelu_pytorch_tanh`; upstream
//!   uses SiLU, which makes the model babble;
//! - sliding-window layers keep only the last `sliding_window` keys and values while decoding, so a token
//!   attends to the same window during generation as during the prompt pass (upstream lets decoding attend
//!   to the whole cache once a conversation is longer than the window), and the window is `i - j < 512`
//!   as in transformers and llama.cpp (upstream allows one more position);
//! - the rotary tables are computed once per frequency, for the model's context length (upstream builds
//!   two 131072-row tables per layer: about 2.3 GB for an 18-layer model);
//! - a prompt longer than the context is an error instead of a panic deep in `narrow`;
//! - `dequantize`: the weights can be expanded to f32 at load. candle's CPU kernels for these quant
//!   types (Q5_0, Q8_0, and K-quants whose rows are not a multiple of 256) use SIMD only when the crate
//!   is compiled with `-C target-feature=+avx2`; a portable build runs them scalar, while its f32
//!   matrix products pick SIMD at run time. For a small model that is several times faster.
//! - a Q8_0 embedding matrix (and the output projection, tied to it or not) stays Q8_0 ([`crate::q8`]):
//!   expanded, Gemma 3's 262,144-token vocabulary is 671 MB of f32 read for every generated token;
//!   and decoding steps use the layers' Q8_0 and Q5_0 weights as stored (prompt passes the f32 copy).

use candle::D;
use candle::quantized::QTensor;
use candle::quantized::gguf_file;
use candle::{DType, Device, IndexOp, Result, Tensor};
use candle_core as candle;
use candle_nn::{Embedding, Module};
use std::sync::Arc;

use crate::q8::Q8Matrix;
use candle_transformers::quantized_nn::RmsNorm;

pub const DEFAULT_SLIDING_WINDOW_TYPE: usize = 6;
pub const DEFAULT_ROPE_FREQUENCY: f32 = 1_000_000.;
pub const DEFAULT_ROPE_FREQUENCY_SLIDING: f32 = 10_000.;
pub const DEFAULT_ROPE_FREQUENCY_SCALE_FACTOR: f32 = 1.;

/// Activation rows up to which a Q8_0/Q5_0 weight is used as stored ([`crate::q8`]): a decoding
/// step reads each weight once for a few rows, where the bytes read decide the speed. A prompt pass
/// multiplies many rows at once, where candle's f32 matrix product is faster.
const STORED_WEIGHT_ROWS: usize = 8;

#[derive(Debug, Clone)]
struct QMatMul {
    inner: candle::quantized::QMatMul,
    /// The weight as stored, for decoding steps, when it is Q8_0 or Q5_0.
    stored: Option<Arc<Q8Matrix>>,
}

impl QMatMul {
    fn from_qtensor(qtensor: QTensor, dequantize: bool) -> Result<Self> {
        let stored = Q8Matrix::from_qtensor(&qtensor)?.map(Arc::new);
        let inner = if dequantize {
            candle::quantized::QMatMul::Tensor(qtensor.dequantize(&qtensor.device())?)
        } else {
            candle::quantized::QMatMul::from_qtensor(qtensor)?
        };
        Ok(Self { inner, stored })
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        if let Some(m) = &self.stored
            && xs.elem_count() / m.cols() <= STORED_WEIGHT_ROWS
        {
            return m.matmul_t(xs);
        }
        self.inner.forward(xs)
    }
}

#[derive(Debug, Clone)]
struct Mlp {
    feed_forward_gate: QMatMul, // ffn_gate in GGUF
    feed_forward_up: QMatMul,   // ffn_up in GGUF
    feed_forward_down: QMatMul, // ffn_down in GGUF
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let gate = self.feed_forward_gate.forward(xs)?;
        let up = self.feed_forward_up.forward(xs)?;
        // GeGLU with the tanh approximation (`gelu_pytorch_tanh`), as Gemma 3 and llama.cpp compute it.
        let gated = (gate.gelu()? * up)?;
        self.feed_forward_down.forward(&gated)
    }
}

#[derive(Debug, Clone)]
struct RotaryEmbedding {
    sin: Tensor,
    cos: Tensor,
}

impl RotaryEmbedding {
    fn new(head_dim: usize, rope_frequency: f32, max_positions: usize, device: &Device) -> Result<Self> {
        let theta: Vec<_> =
            (0..head_dim).step_by(2).map(|i| 1f32 / rope_frequency.powf(i as f32 / head_dim as f32)).collect();
        let theta = Tensor::new(theta.as_slice(), device)?;
        let idx_theta = Tensor::arange(0, max_positions as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((max_positions, 1))?
            .matmul(&theta.reshape((1, theta.elem_count()))?)?;
        let cos = idx_theta.cos()?;
        let sin = idx_theta.sin()?;
        Ok(Self { sin, cos })
    }

    fn apply_rotary_emb_qkv(&self, q: &Tensor, k: &Tensor, index_pos: usize) -> Result<(Tensor, Tensor)> {
        let (_b_sz, _h, seq_len, _n_embd) = q.dims4()?;
        let cos = self.cos.narrow(0, index_pos, seq_len)?;
        let sin = self.sin.narrow(0, index_pos, seq_len)?;
        let q_embed = candle_nn::rotary_emb::rope(&q.contiguous()?, &cos, &sin)?;
        let k_embed = candle_nn::rotary_emb::rope(&k.contiguous()?, &cos, &sin)?;
        Ok((q_embed, k_embed))
    }
}

#[derive(Debug, Clone)]
struct LayerWeights {
    // Attention components
    attention_wq: QMatMul,
    attention_wk: QMatMul,
    attention_wv: QMatMul,
    attention_wo: QMatMul,

    // Specialized normalization for Q and K
    attention_q_norm: RmsNorm,
    attention_k_norm: RmsNorm,

    // Layer normalization
    attention_norm: RmsNorm,      // Applied before attention
    post_attention_norm: RmsNorm, // Applied after attention
    ffn_norm: RmsNorm,            // Applied before feedforward
    post_ffn_norm: RmsNorm,       // Applied after feedforward

    // Feed-forward network
    mlp: Mlp,

    // Attention parameters
    n_head: usize,    // Number of query heads
    n_kv_head: usize, // Number of key-value heads
    head_dim: usize,  // Dimension of each head
    q_dim: usize,     // Total dimension for queries

    sliding_window_size: Option<usize>,

    rotary_embedding: RotaryEmbedding,
    neg_inf: Tensor,

    // Cache
    kv_cache: Option<(Tensor, Tensor)>,
    // Tracing
}

impl LayerWeights {
    fn mask(&self, b_sz: usize, seq_len: usize, index_pos: usize, dtype: DType, device: &Device) -> Result<Tensor> {
        let mask: Vec<_> = if let Some(sliding_window_size) = self.sliding_window_size {
            (0..seq_len)
                .flat_map(|i| {
                    (0..seq_len).map(move |j| if i < j || j + sliding_window_size <= i { 0u32 } else { 1u32 })
                })
                .collect()
        } else {
            (0..seq_len).flat_map(|i| (0..seq_len).map(move |j| if i < j { 0u32 } else { 1u32 })).collect()
        };
        let mask = Tensor::from_slice(&mask, (seq_len, seq_len), device)?;
        let mask = if index_pos > 0 {
            let mask0 = Tensor::zeros((seq_len, index_pos), DType::F32, device)?;
            Tensor::cat(&[&mask0, &mask], D::Minus1)?
        } else {
            mask
        };
        mask.expand((b_sz, 1, seq_len, seq_len + index_pos))?.to_dtype(dtype)
    }

    fn forward_attn(&mut self, x: &Tensor, mask: Option<&Tensor>, index_pos: usize) -> Result<Tensor> {
        let (b_sz, seq_len, _) = x.dims3()?;

        let q = self.attention_wq.forward(x)?;
        let k = self.attention_wk.forward(x)?;
        let v = self.attention_wv.forward(x)?;

        let q = q.reshape((b_sz, seq_len, self.n_head, self.head_dim))?.transpose(1, 2)?;
        let k = k.reshape((b_sz, seq_len, self.n_kv_head, self.head_dim))?.transpose(1, 2)?;
        let v = v.reshape((b_sz, seq_len, self.n_kv_head, self.head_dim))?.transpose(1, 2)?;

        let q = self.attention_q_norm.forward(&q.contiguous()?)?;
        let k = self.attention_k_norm.forward(&k.contiguous()?)?;

        let (q, k) = self.rotary_embedding.apply_rotary_emb_qkv(&q, &k, index_pos)?;

        let (k, v) = match &self.kv_cache {
            None => (k, v),
            Some((k_cache, v_cache)) => {
                if index_pos == 0 {
                    (k, v)
                } else {
                    let k = Tensor::cat(&[k_cache, &k], 2)?; // concat on seq dim
                    let v = Tensor::cat(&[v_cache, &v], 2)?;
                    (k, v)
                }
            }
        };
        // A sliding layer attends to the last `window` positions, itself included (as in transformers
        // and llama.cpp: `i - j < window`), so the next token needs only the last `window - 1` keys.
        let (k, v) = match self.sliding_window_size {
            Some(window) if seq_len == 1 && k.dim(2)? > window => {
                let len = k.dim(2)?;
                (k.narrow(2, len - window, window)?, v.narrow(2, len - window, window)?)
            }
            _ => (k, v),
        };
        let kept = match self.sliding_window_size {
            Some(window) if k.dim(2)? >= window => {
                let (len, keep) = (k.dim(2)?, window - 1);
                (k.narrow(2, len - keep, keep)?.contiguous()?, v.narrow(2, len - keep, keep)?.contiguous()?)
            }
            _ => (k.clone(), v.clone()),
        };
        self.kv_cache = Some(kept); // update cache

        // Repeat KV for GQA
        let k = candle_transformers::utils::repeat_kv(k, self.n_head / self.n_kv_head)?;
        let v = candle_transformers::utils::repeat_kv(v, self.n_head / self.n_kv_head)?;

        // Scaled Dot-Product Attention
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let mut attn_weights = (q.matmul(&k.transpose(2, 3)?)? * scale)?;

        if let Some(mask) = mask {
            let mask = mask.broadcast_as(attn_weights.shape())?;
            let neg_inf = self.neg_inf.broadcast_as(attn_weights.dims())?;
            attn_weights = mask.eq(0u32)?.where_cond(&neg_inf, &attn_weights)?;
        }

        let attn_weights = candle_nn::ops::softmax_last_dim(&attn_weights)?;
        let attn_output = attn_weights.matmul(&v)?;

        let attn_output = attn_output.transpose(1, 2)?.reshape((b_sz, seq_len, self.q_dim))?;

        self.attention_wo.forward(&attn_output)
    }
}

#[derive(Debug, Clone)]
pub struct ModelWeights {
    context_length: usize,
    tok_embeddings: TokenEmbeddings,
    embedding_length: usize,
    layers: Vec<LayerWeights>,
    norm: RmsNorm,
    output: Output,
}

/// The embedding matrix: kept as Q8_0 when it is stored so, else expanded.
#[derive(Debug, Clone)]
enum TokenEmbeddings {
    Q8(Arc<Q8Matrix>),
    Dense(Embedding),
}

/// The output projection: Q8_0 kept as it is, or a candle matrix product.
#[derive(Debug, Clone)]
enum Output {
    Q8(Arc<Q8Matrix>),
    Other(QMatMul),
}

impl ModelWeights {
    pub fn from_gguf<R: std::io::Seek + std::io::Read>(
        ct: gguf_file::Content,
        reader: &mut R,
        device: &Device,
        dequantize: bool,
    ) -> Result<Self> {
        // Detect architecture prefix by probing which keys exist in metadata.
        // This supports gemma3, gemma2, gemma, gemma-embedding, and future variants.
        let prefix = ["gemma3", "gemma2", "gemma", "gemma-embedding"]
            .iter()
            .find(|p| ct.metadata.contains_key(&format!("{}.attention.head_count", p)))
            .copied()
            .unwrap_or("gemma3");

        let md_get = |s: &str| {
            let key = format!("{prefix}.{s}");
            match ct.metadata.get(&key) {
                None => candle::bail!("cannot find {key} in metadata"),
                Some(v) => Ok(v),
            }
        };

        let head_count = md_get("attention.head_count")?.to_u32()? as usize;
        let head_count_kv = md_get("attention.head_count_kv")?.to_u32()? as usize;
        let block_count = md_get("block_count")?.to_u32()? as usize;
        let embedding_length = md_get("embedding_length")?.to_u32()? as usize;
        let key_length = md_get("attention.key_length")?.to_u32()? as usize;
        let _value_length = md_get("attention.value_length")?.to_u32()? as usize;
        let rms_norm_eps = md_get("attention.layer_norm_rms_epsilon")?.to_f32()? as f64;
        let sliding_window_size = md_get("attention.sliding_window")?.to_u32()? as usize;

        let sliding_window_type = md_get("attention.sliding_window_type")
            .and_then(|m| Ok(m.to_u32()? as usize))
            .unwrap_or(DEFAULT_SLIDING_WINDOW_TYPE);

        let rope_freq_base = md_get("rope.freq_base").and_then(|m| m.to_f32()).unwrap_or(DEFAULT_ROPE_FREQUENCY);

        let context_length = md_get("context_length").and_then(|m| Ok(m.to_u32()? as usize)).unwrap_or(32768);

        let rope_freq_base_sliding =
            md_get("rope.local_freq_base").and_then(|m| m.to_f32()).unwrap_or(DEFAULT_ROPE_FREQUENCY_SLIDING);

        // Unused in Llama.cpp so we aren't using it here.
        let _rope_freq_scaling_factor =
            md_get("rope.scaling.factor").and_then(|m| m.to_f32()).unwrap_or(DEFAULT_ROPE_FREQUENCY_SCALE_FACTOR);

        // Compute the dimensions for queries, keys, and values
        // These are the total dimensions when projected across all heads
        let q_dim = head_count * key_length;

        let neg_inf = Tensor::new(f32::NEG_INFINITY, device)?;

        // Load token embeddings and output projection
        let embd_q = ct.tensor(reader, "token_embd.weight", device)?;
        let embd_q8 = Q8Matrix::from_qtensor(&embd_q)?.map(Arc::new);
        let output_q = ct.tensor(reader, "output.weight", device).ok();
        let norm = RmsNorm::from_qtensor(ct.tensor(reader, "output_norm.weight", device)?, rms_norm_eps)?;
        let (tok_embeddings, output) = match (embd_q8, output_q) {
            // Tied weights, Q8_0: one matrix, kept quantized, serves both.
            (Some(m), None) => (TokenEmbeddings::Q8(Arc::clone(&m)), Output::Q8(m)),
            (embd_q8, Some(out)) => {
                let output = match Q8Matrix::from_qtensor(&out)? {
                    Some(m) => Output::Q8(Arc::new(m)),
                    None => Output::Other(QMatMul::from_qtensor(out, dequantize)?),
                };
                let embeddings = match embd_q8 {
                    Some(m) => TokenEmbeddings::Q8(m),
                    None => TokenEmbeddings::Dense(Embedding::new(embd_q.dequantize(device)?, embedding_length)),
                };
                (embeddings, output)
            }
            (None, None) => {
                let dense = embd_q.dequantize(device)?;
                let output = if dequantize {
                    // Tied weights, dequantized: the embedding matrix itself serves (no second copy).
                    QMatMul { inner: candle::quantized::QMatMul::Tensor(dense.clone()), stored: None }
                } else {
                    QMatMul::from_qtensor(embd_q, false)?
                };
                (TokenEmbeddings::Dense(Embedding::new(dense, embedding_length)), Output::Other(output))
            }
        };

        let rope_global = RotaryEmbedding::new(key_length, rope_freq_base, context_length, device)?;
        let rope_sliding = RotaryEmbedding::new(key_length, rope_freq_base_sliding, context_length, device)?;

        let mut layers = Vec::with_capacity(block_count);
        for layer_idx in 0..block_count {
            let prefix = format!("blk.{layer_idx}");

            let attention_wq = ct.tensor(reader, &format!("{prefix}.attn_q.weight"), device)?;
            let attention_wk = ct.tensor(reader, &format!("{prefix}.attn_k.weight"), device)?;
            let attention_wv = ct.tensor(reader, &format!("{prefix}.attn_v.weight"), device)?;
            let attention_wo = ct.tensor(reader, &format!("{prefix}.attn_output.weight"), device)?;

            let attention_q_norm = RmsNorm::from_qtensor(
                ct.tensor(reader, &format!("{prefix}.attn_q_norm.weight"), device)?,
                rms_norm_eps,
            )?;

            let attention_k_norm = RmsNorm::from_qtensor(
                ct.tensor(reader, &format!("{prefix}.attn_k_norm.weight"), device)?,
                rms_norm_eps,
            )?;

            let attention_norm =
                RmsNorm::from_qtensor(ct.tensor(reader, &format!("{prefix}.attn_norm.weight"), device)?, rms_norm_eps)?;

            let post_attention_norm = RmsNorm::from_qtensor(
                ct.tensor(reader, &format!("{prefix}.post_attention_norm.weight"), device)?,
                rms_norm_eps,
            )?;

            let ffn_norm =
                RmsNorm::from_qtensor(ct.tensor(reader, &format!("{prefix}.ffn_norm.weight"), device)?, rms_norm_eps)?;

            let post_ffn_norm = RmsNorm::from_qtensor(
                ct.tensor(reader, &format!("{prefix}.post_ffw_norm.weight"), device)?,
                rms_norm_eps,
            )?;

            let feed_forward_gate = ct.tensor(reader, &format!("{prefix}.ffn_gate.weight"), device)?;
            let feed_forward_up = ct.tensor(reader, &format!("{prefix}.ffn_up.weight"), device)?;
            let feed_forward_down = ct.tensor(reader, &format!("{prefix}.ffn_down.weight"), device)?;

            let mlp = Mlp {
                feed_forward_gate: QMatMul::from_qtensor(feed_forward_gate, dequantize)?,
                feed_forward_up: QMatMul::from_qtensor(feed_forward_up, dequantize)?,
                feed_forward_down: QMatMul::from_qtensor(feed_forward_down, dequantize)?,
            };

            // Sliding window pattern hardcoded to 6 because it's not explicitly defined
            let is_sliding = (layer_idx + 1) % sliding_window_type > 0;
            let sliding_window_size = is_sliding.then_some(sliding_window_size);
            let rotary_embedding = if is_sliding { rope_sliding.clone() } else { rope_global.clone() };

            layers.push(LayerWeights {
                attention_wq: QMatMul::from_qtensor(attention_wq, dequantize)?,
                attention_wk: QMatMul::from_qtensor(attention_wk, dequantize)?,
                attention_wv: QMatMul::from_qtensor(attention_wv, dequantize)?,
                attention_wo: QMatMul::from_qtensor(attention_wo, dequantize)?,
                attention_q_norm,
                attention_k_norm,
                attention_norm,
                post_attention_norm,
                ffn_norm,
                post_ffn_norm,
                mlp,
                n_head: head_count,
                n_kv_head: head_count_kv,
                head_dim: key_length,
                q_dim,
                sliding_window_size,
                rotary_embedding,
                neg_inf: neg_inf.clone(),
                kv_cache: None,
            })
        }

        Ok(Self {
            context_length,
            tok_embeddings,
            embedding_length,
            layers,
            norm,
            output,
        })
    }

    /// The most positions the model (and its rotary tables) can take.
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// Logits of the last position. `index_pos == 0` starts a new sequence (the caches are replaced).
    pub fn forward(&mut self, x: &Tensor, index_pos: usize) -> Result<Tensor> {
        let (b_sz, seq_len) = x.dims2()?;
        if index_pos + seq_len > self.context_length {
            candle::bail!(
                "sequence of {} tokens exceeds the model's context length {}",
                index_pos + seq_len,
                self.context_length
            );
        }

        let mut layer_in = match &self.tok_embeddings {
            TokenEmbeddings::Q8(m) => m.embed(x)?,
            TokenEmbeddings::Dense(e) => e.forward(x)?,
        };
        layer_in = (layer_in * (self.embedding_length as f64).sqrt())?;

        for layer in self.layers.iter_mut() {
            let attention_mask =
                if seq_len == 1 { None } else { Some(layer.mask(b_sz, seq_len, index_pos, x.dtype(), x.device())?) };

            // Attention block
            let residual = &layer_in;
            let x = layer.attention_norm.forward(&layer_in)?;
            let x = layer.forward_attn(&x, attention_mask.as_ref(), index_pos)?;
            let x = layer.post_attention_norm.forward(&x)?;
            let x = (x + residual)?;

            // Feed-forward block
            let residual = &x;
            let x = layer.ffn_norm.forward(&x)?;
            let x = layer.mlp.forward(&x)?;
            let x = layer.post_ffn_norm.forward(&x)?;
            let x = (x + residual)?;

            layer_in = x;
        }

        let x = layer_in.i((.., seq_len - 1, ..))?;
        let x = self.norm.forward(&x)?;
        let output = match &self.output {
            Output::Q8(m) => m.matmul_t(&x)?,
            Output::Other(q) => q.forward(&x)?,
        };

        Ok(output)
    }
}
