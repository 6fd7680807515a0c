//! A BERT-family encoder on the CPU: loads a local model directory (`config.json`,
//! `model.safetensors` or `pytorch_model.bin`, `tokenizer.json` or `vocab.txt`; candle reads the
//! weights) and returns the hidden states after any layer, the way Hugging Face's `BertModel`
//! computes them. The forward pass works on plain f32 rows: the matrix products are the `gemm`
//! crate's kernels (those candle uses), everything else is loops over contiguous rows.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use sha2::{Digest, Sha256};

use crate::config::{EncoderConfig, EncoderKind};
use crate::error::{NeuralError, Result};
use crate::tokenizer::TextTokenizer;

/// One encoder layer (self-attention and feed-forward, post-layer-norm as in BERT). Matrices are
/// row-major and already transposed for `x · W` (input rows times a (in, out) matrix).
struct Layer {
    /// Query, key and value projections fused: (hidden, 3·hidden).
    qkv_w: Vec<f32>,
    qkv_b: Vec<f32>,
    attn_out_w: Vec<f32>,
    attn_out_b: Vec<f32>,
    attn_norm: Norm,
    inter_w: Vec<f32>,
    inter_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: Vec<f32>,
    out_norm: Norm,
}

/// A layer norm's weight and bias.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// The feed-forward activation.
#[derive(Clone, Copy)]
enum Activation {
    /// The exact (erf) GELU, BERT's `gelu`.
    GeluErf,
    /// The tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
}

/// A loaded encoder: weights, tokenizer and what identifies them.
pub struct Encoder {
    /// The model directory.
    pub dir: PathBuf,
    /// The directory's name, as signatures print it.
    pub name: String,
    /// The first 12 hex digits of a sha256 over config, tokenizer and weights.
    pub fingerprint: String,
    /// sha256 of each file that went into the fingerprint, by file name.
    pub file_sha256: Vec<(String, String)>,
    pub config: EncoderConfig,
    pub tokenizer: TextTokenizer,
    /// (vocab, hidden).
    word: Vec<f32>,
    /// (positions, hidden).
    position: Vec<f32>,
    /// The first token type's row (every token has type 0).
    token_type: Vec<f32>,
    emb_norm: Norm,
    activation: Activation,
    layers: Vec<Layer>,
}

/// Most tokens in one chunk of sequences that one thread encodes together (the rows of its
/// matrix products): large enough for efficient products, small enough to stay in cache-friendly
/// sizes and to give every core work.
const CHUNK_TOKENS: usize = 2048;

fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(|e| NeuralError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| NeuralError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// e^x for f32 without a library call, so that loops over it vectorize: Cephes' `expf` (range
/// reduction by ln 2, a degree-6 polynomial; relative error about 2e-7). Inputs below -87 give
/// about 1e-38 instead of 0, which no sum here can tell apart.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    // Adding and taking away 1.5·2²³ rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * C1 - n * C2;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * r * r + r + 1.0;
    y * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// erf as PyTorch's CPU kernels compute it for the exact GELU (Abramowitz & Stegun 7.1.26,
/// |error| < 1.5e-7).
#[inline(always)]
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [0.254_829_6, -0.284_496_72, 1.421_413_8, -1.453_152_1, 1.061_405_4];
    let ax = x.abs();
    let t = 1.0 / (1.0 + P * ax);
    let poly = ((((A[4] * t + A[3]) * t + A[2]) * t + A[1]) * t + A[0]) * t;
    let y = 1.0 - poly * exp(-ax * ax);
    y.copysign(x)
}

impl Activation {
    fn apply(self, values: &mut [f32]) {
        match self {
            Activation::GeluErf => {
                for x in values {
                    *x = *x * 0.5 * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
                }
            }
            Activation::GeluTanh => {
                const C: f32 = 0.797_884_6; // √(2/π)
                for x in values {
                    *x = 0.5 * *x * (1.0 + (C * (*x + 0.044_715 * *x * *x * *x)).tanh());
                }
            }
            Activation::Relu => {
                for x in values {
                    *x = x.max(0.0);
                }
            }
        }
    }
}

/// Layer norm of each `h`-wide row in place: mean and (biased) variance accumulated in f64.
fn layer_norm(rows: &mut [f32], norm: &Norm, eps: f64) {
    let h = norm.weight.len();
    for row in rows.chunks_exact_mut(h) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / h as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / h as f64;
        let inv = 1.0 / (var + eps).sqrt();
        let (mean, inv) = (mean as f32, inv as f32);
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * inv * w + b;
        }
    }
}

/// Softmax of each `n`-wide row in place.
fn softmax_rows(rows: &mut [f32], n: usize) {
    for row in rows.chunks_exact_mut(n) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for v in row.iter_mut() {
            *v = exp(*v - max);
        }
        let inv = 1.0 / row.iter().sum::<f32>();
        for v in row.iter_mut() {
            *v *= inv;
        }
    }
}

/// Every `width`-wide row of `dst` set to `row` (a bias), plus the same row of `add` if given (a
/// residual).
fn fill_rows(dst: &mut [f32], row: &[f32], add: Option<&[f32]>) {
    let width = row.len();
    match add {
        None => dst.chunks_exact_mut(width).for_each(|d| d.copy_from_slice(row)),
        Some(add) => {
            for (d, a) in dst.chunks_exact_mut(width).zip(add.chunks_exact(width)) {
                for ((d, a), r) in d.iter_mut().zip(a).zip(row) {
                    *d = a + r;
                }
            }
        }
    }
}

/// One operand of a matrix product: its values and the strides between rows and between
/// columns.
#[derive(Clone, Copy)]
struct Operand<'a> {
    values: &'a [f32],
    row_stride: usize,
    col_stride: usize,
}

impl<'a> Operand<'a> {
    fn rows(values: &'a [f32], row_stride: usize) -> Self {
        Operand { values, row_stride, col_stride: 1 }
    }

    fn check(&self, rows: usize, cols: usize) {
        if rows > 0 && cols > 0 {
            let last = (rows - 1) * self.row_stride + (cols - 1) * self.col_stride;
            assert!(last < self.values.len(), "matrix operand out of bounds: {last} >= {}", self.values.len());
        }
    }
}

/// `dst (m×n) = [dst +] scale · a (m×k) · b (k×n)`, with `dst` row-major at row stride `dst_rs`
/// (the `gemm` crate's kernels, the ones candle uses). `accumulate`: add to what `dst` holds
/// (a bias or a residual put there first).
#[allow(clippy::too_many_arguments)]
fn matmul(
    (m, n, k): (usize, usize, usize),
    dst: &mut [f32],
    dst_rs: usize,
    accumulate: bool,
    a: Operand,
    b: Operand,
    scale: f32,
    parallelism: gemm::Parallelism,
) {
    if m == 0 || n == 0 {
        return;
    }
    a.check(m, k);
    b.check(k, n);
    Operand::rows(dst, dst_rs).check(m, n);
    // SAFETY: the three checks above keep every element that gemm reads or writes inside its
    // slice; `dst` is borrowed mutably, so it overlaps neither operand.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            accumulate,
            a.values.as_ptr(),
            a.col_stride as isize,
            a.row_stride as isize,
            b.values.as_ptr(),
            b.col_stride as isize,
            b.row_stride as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        )
    }
}

/// Hugging Face's names, whatever head or age the checkpoint has: no `bert.`/`roberta.` prefix,
/// `weight`/`bias` for the old `gamma`/`beta`.
fn canonical_name(name: &str) -> String {
    let name = ["bert.", "roberta.", "model."].iter().find_map(|p| name.strip_prefix(p)).unwrap_or(name);
    if let Some(stem) = name.strip_suffix(".gamma") {
        format!("{stem}.weight")
    } else if let Some(stem) = name.strip_suffix(".beta") {
        format!("{stem}.bias")
    } else {
        name.to_string()
    }
}

struct Weights {
    path: PathBuf,
    tensors: HashMap<String, Tensor>,
}

impl Weights {
    fn load(dir: &Path) -> Result<Weights> {
        let safetensors = dir.join("model.safetensors");
        let bin = dir.join("pytorch_model.bin");
        let (path, raw): (PathBuf, Vec<(String, Tensor)>) = if safetensors.is_file() {
            let map = candle_core::safetensors::load(&safetensors, &Device::Cpu)
                .map_err(|e| NeuralError::malformed(&safetensors, format!("not readable safetensors: {e}")))?;
            (safetensors, map.into_iter().collect())
        } else if bin.is_file() {
            let list = candle_core::pickle::read_all(&bin)
                .map_err(|e| NeuralError::malformed(&bin, format!("not a readable PyTorch state dict: {e}")))?;
            (bin, list)
        } else {
            return Err(NeuralError::Missing {
                path: safetensors,
                what: format!("the model's weights: neither model.safetensors nor {} exists", bin.display()),
            });
        };
        let mut tensors = HashMap::with_capacity(raw.len());
        for (name, t) in raw {
            tensors.insert(canonical_name(&name), t);
        }
        Ok(Weights { path, tensors })
    }

    /// The tensor `name` as f32 values, row-major, after checking its shape.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let t = self.tensors.get(name).ok_or_else(|| {
            NeuralError::malformed(
                &self.path,
                format!("the tensor `{name}` is missing (is this a BERT-family encoder?)"),
            )
        })?;
        if t.dims() != shape {
            return Err(NeuralError::malformed(
                &self.path,
                format!("the tensor `{name}` has shape {:?}, config.json implies {shape:?}", t.dims()),
            ));
        }
        t.to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1())
            .map_err(|e| NeuralError::malformed(&self.path, format!("`{name}`: {e}")))
    }

    /// The (out, in) matrix `name` of a linear layer, transposed to (in, out).
    fn linear(&self, name: &str, out: usize, inp: usize) -> Result<Vec<f32>> {
        let w = self.get(name, &[out, inp])?;
        let mut t = vec![0f32; w.len()];
        for (o, row) in w.chunks_exact(inp).enumerate() {
            for (i, v) in row.iter().enumerate() {
                t[i * out + o] = *v;
            }
        }
        Ok(t)
    }

    fn norm(&self, prefix: &str, size: usize) -> Result<Norm> {
        Ok(Norm {
            weight: self.get(&format!("{prefix}.weight"), &[size])?,
            bias: self.get(&format!("{prefix}.bias"), &[size])?,
        })
    }
}

/// Row `row` of a `width`-wide row-major matrix.
fn row(values: &[f32], width: usize, row: usize) -> &[f32] {
    &values[row * width..(row + 1) * width]
}

impl Encoder {
    /// Loads the encoder in `dir`. Every missing or malformed file is an error naming it.
    pub fn load(dir: &Path) -> Result<Encoder> {
        if !dir.is_dir() {
            return Err(NeuralError::Missing { path: dir.to_path_buf(), what: "the model directory".into() });
        }
        let config_path = dir.join("config.json");
        let config = EncoderConfig::read(&config_path)?;
        let kind = config.encoder_kind().expect("validated");
        let tokenizer = TextTokenizer::load(dir, config.max_tokens(), kind == EncoderKind::Roberta)?;
        let weights = Weights::load(dir)?;

        let mut file_sha256 = Vec::new();
        let mut hasher = Sha256::new();
        for path in [&config_path, &tokenizer.source, &weights.path] {
            let sum = sha256_file(path)?;
            hasher.update(sum.as_bytes());
            file_sha256.push((path.file_name().unwrap_or_default().to_string_lossy().into_owned(), sum));
        }
        let fingerprint: String = hasher.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect();

        let (h, i) = (config.hidden_size, config.intermediate_size);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let name = |n: &str| format!("{p}.{n}");
            // (h, 3h): the query, key and value projections side by side.
            let (q, k, v) = (
                weights.linear(&name("attention.self.query.weight"), h, h)?,
                weights.linear(&name("attention.self.key.weight"), h, h)?,
                weights.linear(&name("attention.self.value.weight"), h, h)?,
            );
            let mut qkv_w = Vec::with_capacity(3 * h * h);
            for r in 0..h {
                for m in [&q, &k, &v] {
                    qkv_w.extend_from_slice(row(m, h, r));
                }
            }
            let mut qkv_b = Vec::with_capacity(3 * h);
            for n in ["query", "key", "value"] {
                qkv_b.extend(weights.get(&name(&format!("attention.self.{n}.bias")), &[h])?);
            }
            layers.push(Layer {
                qkv_w,
                qkv_b,
                attn_out_w: weights.linear(&name("attention.output.dense.weight"), h, h)?,
                attn_out_b: weights.get(&name("attention.output.dense.bias"), &[h])?,
                attn_norm: weights.norm(&name("attention.output.LayerNorm"), h)?,
                inter_w: weights.linear(&name("intermediate.dense.weight"), i, h)?,
                inter_b: weights.get(&name("intermediate.dense.bias"), &[i])?,
                out_w: weights.linear(&name("output.dense.weight"), h, i)?,
                out_b: weights.get(&name("output.dense.bias"), &[h])?,
                out_norm: weights.norm(&name("output.LayerNorm"), h)?,
            });
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        let token_type = weights.get("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, h])?;
        Ok(Encoder {
            dir: dir.to_path_buf(),
            name,
            fingerprint,
            file_sha256,
            word: weights.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: weights.get("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?,
            token_type: token_type[..h].to_vec(),
            emb_norm: weights.norm("embeddings.LayerNorm", h)?,
            activation: match config.hidden_act.as_str() {
                "gelu" => Activation::GeluErf,
                "relu" => Activation::Relu,
                _ => Activation::GeluTanh,
            },
            layers,
            config,
            tokenizer,
        })
    }

    /// Number of encoder layers.
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }

    /// Encodes token sequences (special tokens included, each at most the model's token limit)
    /// and hands `each` the hidden states of every sequence after each layer in `wanted` (0 = the
    /// embedding output): `each(index, states)` with `states[w]` the (tokens, hidden) row-major
    /// states after layer `wanted[w]`. Returns what `each` returned, in the order of `seqs`.
    ///
    /// No padding is computed: sequences are packed into chunks of about [`CHUNK_TOKENS`] tokens
    /// whose matrix products run on all their rows at once, attention runs per sequence, and
    /// chunks spread over all cores. The hidden states of each sequence are what Hugging Face's
    /// `BertModel` computes for it (in a padded batch or alone: padding never changes them).
    pub fn encode_each<R: Send>(
        &self,
        seqs: &[&[u32]],
        wanted: &[usize],
        each: impl Fn(usize, &[&[f32]]) -> R + Sync,
    ) -> Result<Vec<R>> {
        use rayon::prelude::*;
        let deepest = wanted.iter().copied().max().unwrap_or(0);
        if deepest > self.layers.len() {
            return Err(NeuralError::malformed(
                &self.dir.join("config.json"),
                format!("layer {deepest} asked for, this model has layers 0..={}", self.layers.len()),
            ));
        }
        let limit = self.config.max_tokens();
        for seq in seqs {
            if seq.is_empty() || seq.len() > limit {
                return Err(NeuralError::malformed(
                    &self.tokenizer.source,
                    format!("a token sequence of {} tokens cannot be encoded (1 to {limit} allowed)", seq.len()),
                ));
            }
            if let Some(id) = seq.iter().find(|&&id| id as usize >= self.config.vocab_size) {
                return Err(NeuralError::malformed(
                    &self.tokenizer.source,
                    format!("token id {id} is outside config.json's vocab_size {}", self.config.vocab_size),
                ));
            }
        }
        // Longest first, so that the slowest chunks start first.
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
        let mut chunks: Vec<Vec<usize>> = Vec::new();
        let mut tokens = 0;
        for i in order {
            match chunks.last_mut() {
                Some(chunk) if tokens + seqs[i].len() <= CHUNK_TOKENS => {
                    chunk.push(i);
                    tokens += seqs[i].len();
                }
                _ => {
                    chunks.push(vec![i]);
                    tokens = seqs[i].len();
                }
            }
        }
        // Fewer chunks than cores: the products themselves use all cores.
        let threads = rayon::current_num_threads();
        let parallelism = if chunks.len() < threads && threads > 1 {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        };
        let h = self.config.hidden_size;
        let done: Vec<Vec<(usize, R)>> = chunks
            .par_iter()
            .map(|chunk| {
                let chunk_seqs: Vec<&[u32]> = chunk.iter().map(|&i| seqs[i]).collect();
                let states = self.forward(&chunk_seqs, wanted, deepest, parallelism);
                let mut start = 0;
                chunk
                    .iter()
                    .map(|&i| {
                        let span = start * h..(start + seqs[i].len()) * h;
                        start += seqs[i].len();
                        let views: Vec<&[f32]> = states.iter().map(|s| &s[span.clone()]).collect();
                        (i, each(i, &views))
                    })
                    .collect()
            })
            .collect();
        let mut out: Vec<Option<R>> = (0..seqs.len()).map(|_| None).collect();
        for (i, r) in done.into_iter().flatten() {
            out[i] = Some(r);
        }
        Ok(out.into_iter().map(|r| r.expect("every sequence is in one chunk")).collect())
    }

    /// The forward pass of packed sequences (their rows one after the other): the states after
    /// each layer in `wanted`, each (total tokens, hidden).
    fn forward(&self, seqs: &[&[u32]], wanted: &[usize], deepest: usize, par: gemm::Parallelism) -> Vec<Vec<f32>> {
        let h = self.config.hidden_size;
        let inter_size = self.config.intermediate_size;
        let heads = self.config.num_attention_heads;
        let d = h / heads;
        let eps = self.config.layer_norm_eps;
        let offset = self.config.position_offset();
        let total: usize = seqs.iter().map(|s| s.len()).sum();
        let longest = seqs.iter().map(|s| s.len()).max().unwrap_or(0);

        let mut x = vec![0f32; total * h];
        let mut rows = x.chunks_exact_mut(h);
        for seq in seqs {
            for (p, &id) in seq.iter().enumerate() {
                let out = rows.next().expect("sized");
                let word = row(&self.word, h, id as usize);
                let pos = row(&self.position, h, offset + p);
                for (((o, w), q), t) in out.iter_mut().zip(word).zip(pos).zip(&self.token_type) {
                    *o = w + q + t;
                }
            }
        }
        layer_norm(&mut x, &self.emb_norm, eps);

        let mut kept: Vec<(usize, Vec<f32>)> = Vec::new();
        if wanted.contains(&0) {
            kept.push((0, x.clone()));
        }
        let mut qkv = vec![0f32; total * 3 * h];
        let mut ctx = vec![0f32; total * h];
        let mut attn = vec![0f32; total * h];
        let mut inter = vec![0f32; total * inter_size];
        let mut scores = vec![0f32; longest * longest];
        let scale = 1.0 / (d as f32).sqrt();
        for (n, layer) in self.layers.iter().enumerate().take(deepest) {
            fill_rows(&mut qkv, &layer.qkv_b, None);
            matmul(
                (total, 3 * h, h),
                &mut qkv,
                3 * h,
                true,
                Operand::rows(&x, h),
                Operand::rows(&layer.qkv_w, 3 * h),
                1.0,
                par,
            );
            let mut start = 0;
            for seq in seqs {
                let len = seq.len();
                let block = &qkv[start * 3 * h..(start + len) * 3 * h];
                let out = &mut ctx[start * h..(start + len) * h];
                for head in 0..heads {
                    let q = Operand::rows(&block[head * d..], 3 * h);
                    // Kᵀ: (d, len), element (j, t) = K[t][j].
                    let kt = Operand { values: &block[h + head * d..], row_stride: 1, col_stride: 3 * h };
                    let v = Operand::rows(&block[2 * h + head * d..], 3 * h);
                    let s = &mut scores[..len * len];
                    matmul((len, len, d), s, len, false, q, kt, scale, gemm::Parallelism::None);
                    softmax_rows(s, len);
                    matmul(
                        (len, d, len),
                        &mut out[head * d..],
                        h,
                        false,
                        Operand::rows(s, len),
                        v,
                        1.0,
                        gemm::Parallelism::None,
                    );
                }
                start += len;
            }
            fill_rows(&mut attn, &layer.attn_out_b, Some(&x));
            matmul(
                (total, h, h),
                &mut attn,
                h,
                true,
                Operand::rows(&ctx, h),
                Operand::rows(&layer.attn_out_w, h),
                1.0,
                par,
            );
            layer_norm(&mut attn, &layer.attn_norm, eps);
            fill_rows(&mut inter, &layer.inter_b, None);
            matmul(
                (total, inter_size, h),
                &mut inter,
                inter_size,
                true,
                Operand::rows(&attn, h),
                Operand::rows(&layer.inter_w, inter_size),
                1.0,
                par,
            );
            self.activation.apply(&mut inter);
            fill_rows(&mut x, &layer.out_b, Some(&attn));
            matmul(
                (total, h, inter_size),
                &mut x,
                h,
                true,
                Operand::rows(&inter, inter_size),
                Operand::rows(&layer.out_w, h),
                1.0,
                par,
            );
            layer_norm(&mut x, &layer.out_norm, eps);
            if wanted.contains(&(n + 1)) {
                kept.push((n + 1, x.clone()));
            }
        }
        wanted.iter().map(|w| kept.iter().find(|(l, _)| l == w).map(|(_, t)| t.clone()).expect("kept")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_the_library_exp() {
        let mut worst = 0f64;
        let mut x = -80.0f32;
        while x < 80.0 {
            let (got, want) = (exp(x) as f64, (x as f64).exp());
            worst = worst.max(((got - want) / want).abs());
            x += 0.013;
        }
        assert!(worst < 1e-6, "relative error {worst}");
        assert!(exp(-1000.0) < 1e-37 && exp(f32::NEG_INFINITY) < 1e-37);
    }

    #[test]
    fn erf_is_within_the_approximation_error() {
        // erf(0.5), erf(1), erf(2) to 10 digits.
        for (x, want) in [(0.5f32, 0.520_499_877_8f64), (1.0, 0.842_700_792_9), (2.0, 0.995_322_265_0)] {
            assert!((erf(x) as f64 - want).abs() < 5e-7, "erf({x})");
            assert!((erf(-x) as f64 + want).abs() < 5e-7, "erf(-{x})");
        }
    }
}
