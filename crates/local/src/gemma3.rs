//! Gemma 3 (text), run on the weights as stored in the GGUF file ([`crate::quant`]).
//!
//! One forward pass takes a batch of chunks, each a run of tokens of one sequence appended after
//! what that sequence's [`Cache`] holds: a prompt, a piece of one, or the next token of a sequence
//! being decoded. All rows of the batch go through each weight matrix together, so a batch of
//! decoding sequences reads the weights once per step; attention is per sequence.
//!
//! The model as llama.cpp and transformers compute it: embeddings scaled by `sqrt(n_embd)`;
//! per layer an RMS-normed attention block with RMS-normed queries and keys, rotary positions (base
//! 10,000 on sliding-window layers, the file's base on global ones: every sixth layer), a query
//! scale of `1/sqrt(head_dim)`, and sliding layers attending to positions `j` with `i - j < window`;
//! post-attention norm and residual; a GeGLU feed-forward block with the tanh GELU, post-norm and
//! residual; the final norm; and the output projection (the embedding matrix when tied).

use std::sync::Arc;

use candle_core::Device;
use candle_core::quantized::{QTensor, gguf_file};
use rayon::prelude::*;

use crate::quant::{self, Acts, QMatrix};

const DEFAULT_SLIDING_WINDOW_PATTERN: usize = 6;
const DEFAULT_ROPE_BASE: f32 = 1_000_000.;
const DEFAULT_ROPE_BASE_SLIDING: f32 = 10_000.;

/// What a GGUF says about the model's shape.
#[derive(Clone, Debug)]
struct Config {
    n_embd: usize,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    eps: f32,
    window: usize,
    context_length: usize,
    rope_base: f32,
    rope_base_sliding: f32,
}

struct Layer {
    wq: QMatrix,
    wk: QMatrix,
    wv: QMatrix,
    wo: QMatrix,
    gate: QMatrix,
    up: QMatrix,
    down: QMatrix,
    attn_norm: Vec<f32>,
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
    post_attn_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
    post_ffn_norm: Vec<f32>,
    sliding: bool,
}

/// Gemma 3's weights.
pub struct Model {
    cfg: Config,
    embed: Arc<QMatrix>,
    output: Arc<QMatrix>,
    norm: Vec<f32>,
    layers: Vec<Layer>,
}

/// The keys and values one sequence has stored, per layer (f32, `n_kv_head × head_dim` per position).
#[derive(Default)]
pub struct Cache {
    layers: Vec<(Vec<f32>, Vec<f32>)>,
    len: usize,
}

impl Cache {
    /// Positions stored.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets everything (the allocation is kept for the next sequence).
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Keeps the first `len` positions (all of them when it holds fewer).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        for (k, v) in &mut self.layers {
            let per = k.len() / self.len;
            k.truncate(len * per);
            v.truncate(len * per);
        }
        self.len = len;
    }

    /// Appends `other`'s positions from this cache's length up to `to`: the two hold the same
    /// tokens up to there (a prompt beginning another request has run already), and keys and values
    /// depend on nothing but the tokens before them, so the copy equals what running them gives.
    pub fn extend_from(&mut self, other: &Cache, to: usize) {
        let from = self.len;
        if to <= from || to > other.len {
            return;
        }
        if self.layers.len() != other.layers.len() {
            self.layers.resize_with(other.layers.len(), Default::default);
        }
        for ((k, v), (ok, ov)) in self.layers.iter_mut().zip(&other.layers) {
            let per = ok.len() / other.len;
            k.extend_from_slice(&ok[from * per..to * per]);
            v.extend_from_slice(&ov[from * per..to * per]);
        }
        self.len = to;
    }
}

/// Tokens of one sequence to run after what its cache holds.
pub struct Chunk<'a> {
    pub cache: &'a mut Cache,
    pub tokens: &'a [u32],
    /// Whether the logits of the last token are wanted (not for a piece of a prompt that goes on).
    pub logits: bool,
}

fn err(m: impl std::fmt::Display) -> candle_core::Error {
    candle_core::Error::Msg(m.to_string())
}

impl Model {
    pub fn from_gguf<R: std::io::Seek + std::io::Read>(ct: gguf_file::Content, reader: &mut R) -> candle_core::Result<Model> {
        let prefix = ["gemma3", "gemma2", "gemma", "gemma-embedding"]
            .iter()
            .find(|p| ct.metadata.contains_key(&format!("{p}.attention.head_count")))
            .copied()
            .unwrap_or("gemma3");
        let md = |s: &str| {
            let key = format!("{prefix}.{s}");
            ct.metadata.get(&key).ok_or_else(|| err(format!("cannot find {key} in metadata")))
        };
        let u = |s: &str| -> candle_core::Result<usize> { Ok(md(s)?.to_u32()? as usize) };
        let n_head = u("attention.head_count")?;
        let cfg = Config {
            n_embd: u("embedding_length")?,
            n_head,
            n_kv_head: u("attention.head_count_kv")?,
            head_dim: u("attention.key_length")?,
            eps: md("attention.layer_norm_rms_epsilon")?.to_f32()?,
            window: u("attention.sliding_window")?,
            context_length: u("context_length").unwrap_or(32768),
            rope_base: md("rope.freq_base").and_then(|m| m.to_f32()).unwrap_or(DEFAULT_ROPE_BASE),
            rope_base_sliding: md("rope.local_freq_base").and_then(|m| m.to_f32()).unwrap_or(DEFAULT_ROPE_BASE_SLIDING),
        };
        if cfg.n_kv_head == 0 || n_head % cfg.n_kv_head != 0 || cfg.head_dim % 2 != 0 {
            return Err(err(format!(
                "{} query heads, {} key-value heads of {} values: not a shape this engine runs",
                n_head, cfg.n_kv_head, cfg.head_dim
            )));
        }
        let pattern = u("attention.sliding_window_type").unwrap_or(DEFAULT_SLIDING_WINDOW_PATTERN);
        let block_count = u("block_count")?;

        let mut tensor = |name: &str| -> candle_core::Result<QTensor> { ct.tensor(reader, name, &Device::Cpu) };
        let vector = |t: QTensor| -> candle_core::Result<Vec<f32>> { t.dequantize(&Device::Cpu)?.to_vec1::<f32>() };
        let matrix = |t: QTensor| QMatrix::from_qtensor(&t);

        let embed = Arc::new(matrix(tensor("token_embd.weight")?)?);
        let output = match tensor("output.weight") {
            Ok(t) => Arc::new(matrix(t)?),
            Err(_) => Arc::clone(&embed), // tied
        };
        let norm = vector(tensor("output_norm.weight")?)?;
        let mut layers = Vec::with_capacity(block_count);
        for i in 0..block_count {
            let mut t = |name: &str| tensor(&format!("blk.{i}.{name}.weight"));
            layers.push(Layer {
                wq: matrix(t("attn_q")?)?,
                wk: matrix(t("attn_k")?)?,
                wv: matrix(t("attn_v")?)?,
                wo: matrix(t("attn_output")?)?,
                gate: matrix(t("ffn_gate")?)?,
                up: matrix(t("ffn_up")?)?,
                down: matrix(t("ffn_down")?)?,
                attn_norm: vector(t("attn_norm")?)?,
                q_norm: vector(t("attn_q_norm")?)?,
                k_norm: vector(t("attn_k_norm")?)?,
                post_attn_norm: vector(t("post_attention_norm")?)?,
                ffn_norm: vector(t("ffn_norm")?)?,
                post_ffn_norm: vector(t("post_ffw_norm")?)?,
                sliding: (i + 1) % pattern > 0,
            });
        }
        let (q_dim, kv_dim) = (n_head * cfg.head_dim, cfg.n_kv_head * cfg.head_dim);
        for (i, l) in layers.iter().enumerate() {
            let shapes = [
                ("attn_q", &l.wq, q_dim, cfg.n_embd),
                ("attn_k", &l.wk, kv_dim, cfg.n_embd),
                ("attn_v", &l.wv, kv_dim, cfg.n_embd),
                ("attn_output", &l.wo, cfg.n_embd, q_dim),
                ("ffn_up", &l.up, l.gate.rows(), cfg.n_embd),
                ("ffn_down", &l.down, cfg.n_embd, l.gate.rows()),
            ];
            for (name, m, rows, cols) in shapes {
                if (m.rows(), m.cols()) != (rows, cols) {
                    return Err(err(format!(
                        "blk.{i}.{name}.weight is {}x{}, expected {rows}x{cols}",
                        m.rows(),
                        m.cols()
                    )));
                }
            }
        }
        if embed.cols() != cfg.n_embd || output.cols() != cfg.n_embd {
            return Err(err("token_embd/output width differs from embedding_length"));
        }
        Ok(Model { cfg, embed, output, norm, layers })
    }

    /// The most positions a sequence can have.
    pub fn context_length(&self) -> usize {
        self.cfg.context_length
    }

    /// Runs every chunk after its cache and returns the logits of each chunk's last token (empty for
    /// a chunk that does not want them).
    pub fn forward(&self, chunks: &mut [Chunk<'_>]) -> candle_core::Result<Vec<Vec<f32>>> {
        let cfg = &self.cfg;
        let (d, hd) = (cfg.n_embd, cfg.head_dim);
        let (q_dim, kv_dim) = (cfg.n_head * hd, cfg.n_kv_head * hd);
        let avx2 = quant::avx2();
        // Row r of the batch: its chunk and position.
        let mut rows: Vec<(usize, usize)> = Vec::new();
        for (c, chunk) in chunks.iter_mut().enumerate() {
            if chunk.tokens.is_empty() {
                return Err(err("a chunk without tokens"));
            }
            let start = chunk.cache.len;
            if start + chunk.tokens.len() > cfg.context_length {
                return Err(err(format!(
                    "sequence of {} tokens exceeds the model's context length {}",
                    start + chunk.tokens.len(),
                    cfg.context_length
                )));
            }
            if chunk.cache.layers.len() != self.layers.len() {
                chunk.cache.layers.resize_with(self.layers.len(), Default::default);
            }
            rows.extend((0..chunk.tokens.len()).map(|i| (c, start + i)));
        }
        let n = rows.len();
        let mut x = vec![0f32; n * d];
        let scale = (d as f32).sqrt();
        for (row, &id) in x.chunks_exact_mut(d).zip(chunks.iter().flat_map(|c| c.tokens.iter())) {
            if id as usize >= self.embed.rows() {
                return Err(err(format!("token id {id} is outside the vocabulary of {}", self.embed.rows())));
            }
            self.embed.row_into(id as usize, row);
            row.iter_mut().for_each(|v| *v *= scale);
        }
        let rope = Rope::new(hd, &rows);
        let (base_global, base_sliding) = (
            rope.table(cfg.rope_base),
            rope.table(cfg.rope_base_sliding),
        );

        let mut h = vec![0f32; n * d];
        let (mut q, mut k, mut v) = (vec![0f32; n * q_dim], vec![0f32; n * kv_dim], vec![0f32; n * kv_dim]);
        let mut attn = vec![0f32; n * q_dim];
        let mut o = vec![0f32; n * d];
        // The feed-forward buffers, sized per layer (every element is written by the products).
        let (mut gate, mut up) = (Vec::new(), Vec::new());
        for (li, layer) in self.layers.iter().enumerate() {
            rms_norm_rows(&x, &mut h, &layer.attn_norm, cfg.eps);
            quant::matmuls(&Acts::new(&h, d), &mut [(&layer.wq, &mut q), (&layer.wk, &mut k), (&layer.wv, &mut v)]);
            let table = if layer.sliding { &base_sliding } else { &base_global };
            let heads = |x: &mut [f32], norm: &[f32], per_row: usize| {
                let one = |(r, head): (usize, &mut [f32])| {
                    rms_norm(head, norm, cfg.eps);
                    table.apply(head, r / per_row);
                };
                if n >= PARALLEL_ROWS {
                    x.par_chunks_exact_mut(hd).enumerate().for_each(one);
                } else {
                    x.chunks_exact_mut(hd).enumerate().for_each(one);
                }
            };
            heads(&mut q, &layer.q_norm, cfg.n_head);
            heads(&mut k, &layer.k_norm, cfg.n_kv_head);
            for (r, &(c, _)) in rows.iter().enumerate() {
                let (kc, vc) = &mut chunks[c].cache.layers[li];
                kc.extend_from_slice(&k[r * kv_dim..(r + 1) * kv_dim]);
                vc.extend_from_slice(&v[r * kv_dim..(r + 1) * kv_dim]);
            }
            let window = layer.sliding.then_some(cfg.window);
            let group = cfg.n_head / cfg.n_kv_head;
            let caches: Vec<&(Vec<f32>, Vec<f32>)> = chunks.iter().map(|c| &c.cache.layers[li]).collect();
            let att_scale = 1.0 / (hd as f32).sqrt();
            // One task per row and key-value head: its query heads read each key and value once.
            attn.par_chunks_mut(group * hd).enumerate().for_each(|(task, out)| {
                let (r, kv) = (task / cfg.n_kv_head, task % cfg.n_kv_head);
                let (c, pos) = rows[r];
                let (kc, vc) = caches[c];
                let lo = window.map_or(0, |w| (pos + 1).saturating_sub(w));
                let keys = pos + 1 - lo;
                let qs = &q[r * q_dim + kv * group * hd..r * q_dim + (kv + 1) * group * hd];
                // Scores head by head (`group × keys`), then the softmax of each head's run.
                let mut scores = vec![0f32; group * keys];
                let mut dots = vec![0f32; group];
                for (i, j) in (lo..=pos).enumerate() {
                    quant::dots_f32(qs, &kc[j * kv_dim + kv * hd..j * kv_dim + (kv + 1) * hd], &mut dots, avx2);
                    for (h, &s) in dots.iter().enumerate() {
                        scores[h * keys + i] = s * att_scale;
                    }
                }
                for head in scores.chunks_exact_mut(keys) {
                    let max = head.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0f32;
                    for s in head.iter_mut() {
                        *s = (*s - max).exp();
                        sum += *s;
                    }
                    head.iter_mut().for_each(|s| *s /= sum);
                }
                quant::weighted_rows(out, hd, &scores, &vc[lo * kv_dim + kv * hd..], kv_dim, avx2);
            });
            layer.wo.matmul(&Acts::new(&attn, q_dim), &mut o);
            add_normed(&mut x, &mut o, &layer.post_attn_norm, cfg.eps);

            rms_norm_rows(&x, &mut h, &layer.ffn_norm, cfg.eps);
            let ff = layer.gate.rows();
            gate.resize(n * ff, 0.0);
            up.resize(n * ff, 0.0);
            quant::matmuls(&Acts::new(&h, d), &mut [(&layer.gate, &mut gate), (&layer.up, &mut up)]);
            gate.par_chunks_mut(4096).zip(up.par_chunks(4096)).for_each(|(g, u)| quant::gelu_mul(g, u, avx2));
            layer.down.matmul(&Acts::new(&gate, ff), &mut o);
            add_normed(&mut x, &mut o, &layer.post_ffn_norm, cfg.eps);
        }
        for chunk in chunks.iter_mut() {
            chunk.cache.len += chunk.tokens.len();
        }
        // The last row of each chunk that wants logits.
        let mut last = Vec::new();
        let mut end = 0;
        for chunk in chunks.iter() {
            end += chunk.tokens.len();
            if chunk.logits {
                let mut row = x[(end - 1) * d..end * d].to_vec();
                rms_norm(&mut row, &self.norm, cfg.eps);
                last.extend(row);
            }
        }
        let vocab = self.output.rows();
        let mut logits = vec![0f32; last.len() / d * vocab];
        if !last.is_empty() {
            self.output.matmul(&Acts::new(&last, d), &mut logits);
        }
        let mut rows = logits.chunks_exact(vocab);
        Ok(chunks.iter().map(|c| if c.logits { rows.next().expect("one row per chunk").to_vec() } else { Vec::new() }).collect())
    }
}

/// `x / rms(x) · w`, as candle's `rms_norm` computes it.
fn rms_norm(x: &mut [f32], w: &[f32], eps: f32) {
    let sum2: f32 = x.iter().map(|v| v * v).sum();
    let m = (sum2 / x.len() as f32 + eps).sqrt();
    x.iter_mut().zip(w).for_each(|(v, w)| *v = *v / m * w);
}

/// Rows from which per-row work is split over the threads.
const PARALLEL_ROWS: usize = 32;

fn rms_norm_rows(x: &[f32], out: &mut [f32], w: &[f32], eps: f32) {
    out.copy_from_slice(x);
    if out.len() / w.len() >= PARALLEL_ROWS {
        out.par_chunks_exact_mut(w.len()).for_each(|row| rms_norm(row, w, eps));
    } else {
        out.chunks_exact_mut(w.len()).for_each(|row| rms_norm(row, w, eps));
    }
}

/// `x += rms_norm(o)`, row by row (the post-norm and the residual).
fn add_normed(x: &mut [f32], o: &mut [f32], w: &[f32], eps: f32) {
    let row = |(o, x): (&mut [f32], &mut [f32])| {
        rms_norm(o, w, eps);
        x.iter_mut().zip(o.iter()).for_each(|(x, o)| *x += o);
    };
    if x.len() / w.len() >= PARALLEL_ROWS {
        o.par_chunks_exact_mut(w.len()).zip(x.par_chunks_exact_mut(w.len())).for_each(row);
    } else {
        o.chunks_exact_mut(w.len()).zip(x.chunks_exact_mut(w.len())).for_each(row);
    }
}

/// Rotary positions of the batch's rows.
struct Rope {
    half: usize,
    positions: Vec<usize>,
}

/// cos and sin per row and frequency for one base.
struct RopeTable {
    half: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Rope {
    fn new(head_dim: usize, rows: &[(usize, usize)]) -> Rope {
        Rope { half: head_dim / 2, positions: rows.iter().map(|&(_, p)| p).collect() }
    }

    fn table(&self, base: f32) -> RopeTable {
        let dim = (2 * self.half) as f32;
        let theta: Vec<f32> = (0..self.half).map(|i| 1f32 / base.powf((2 * i) as f32 / dim)).collect();
        let mut cos = Vec::with_capacity(self.positions.len() * self.half);
        let mut sin = Vec::with_capacity(self.positions.len() * self.half);
        for &p in &self.positions {
            for &t in &theta {
                let a = p as f32 * t;
                cos.push(a.cos());
                sin.push(a.sin());
            }
        }
        RopeTable { half: self.half, cos, sin }
    }
}

impl RopeTable {
    /// Rotates one head of row `row` (pairs `i` and `i + half`).
    fn apply(&self, x: &mut [f32], row: usize) {
        let (cos, sin) = (&self.cos[row * self.half..][..self.half], &self.sin[row * self.half..][..self.half]);
        let (a, b) = x.split_at_mut(self.half);
        for i in 0..self.half {
            let (x0, x1) = (a[i], b[i]);
            a[i] = x0 * cos[i] - x1 * sin[i];
            b[i] = x1 * cos[i] + x0 * sin[i];
        }
    }
}
