//! A BERT-family encoder on the CPU (candle): loads a local model directory (`config.json`,
//! `model.safetensors` or `pytorch_model.bin`, `tokenizer.json` or `vocab.txt`) and returns the
//! hidden states after any layer, the way Hugging Face's `BertModel` computes them.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::LayerNorm;
use sha2::{Digest, Sha256};

use crate::config::{EncoderConfig, Family};
use crate::error::{NeuralError, Result};
use crate::tokenizer::TextTokenizer;

/// One encoder layer (self-attention and feed-forward, post-layer-norm as in BERT).
struct Layer {
    /// Query, key and value projections fused: (hidden, 3·hidden), already transposed.
    qkv_w: Tensor,
    qkv_b: Tensor,
    attn_out_w: Tensor,
    attn_out_b: Tensor,
    attn_norm: LayerNorm,
    inter_w: Tensor,
    inter_b: Tensor,
    out_w: Tensor,
    out_b: Tensor,
    out_norm: LayerNorm,
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
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
}

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

/// The exact (erf) GELU of BERT, `x·½·(1 + erf(x/√2))`, with erf computed as PyTorch's CPU
/// kernels compute it (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7), in parallel: several times
/// faster than a libm `erff` per element.
fn gelu_erf(t: &Tensor) -> candle_core::Result<Tensor> {
    use rayon::prelude::*;
    fn erf(x: f32) -> f32 {
        const P: f32 = 0.327_591_1;
        const A: [f32; 5] = [0.254_829_6, -0.284_496_72, 1.421_413_8, -1.453_152_1, 1.061_405_4];
        let ax = x.abs();
        let t = 1.0 / (1.0 + P * ax);
        let poly = ((((A[4] * t + A[3]) * t + A[2]) * t + A[1]) * t + A[0]) * t;
        let y = 1.0 - poly * (-ax * ax).exp();
        y.copysign(x)
    }
    let mut values: Vec<f32> = t.flatten_all()?.to_vec1()?;
    values.par_chunks_mut(1 << 14).for_each(|chunk| {
        for x in chunk {
            *x = *x * 0.5 * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
        }
    });
    Tensor::from_vec(values, t.shape().clone(), t.device())
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

    fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let t = self.tensors.get(name).ok_or_else(|| {
            NeuralError::malformed(&self.path, format!("the tensor `{name}` is missing (is this a BERT-family encoder?)"))
        })?;
        if t.dims() != shape {
            return Err(NeuralError::malformed(
                &self.path,
                format!("the tensor `{name}` has shape {:?}, config.json implies {shape:?}", t.dims()),
            ));
        }
        t.to_dtype(DType::F32).map_err(|e| NeuralError::malformed(&self.path, format!("`{name}`: {e}")))
    }

    fn norm(&self, prefix: &str, size: usize, eps: f64) -> Result<LayerNorm> {
        Ok(LayerNorm::new(self.get(&format!("{prefix}.weight"), &[size])?, self.get(&format!("{prefix}.bias"), &[size])?, eps))
    }
}

impl Encoder {
    /// Loads the encoder in `dir`. Every missing or malformed file is an error naming it.
    pub fn load(dir: &Path) -> Result<Encoder> {
        if !dir.is_dir() {
            return Err(NeuralError::Missing { path: dir.to_path_buf(), what: "the model directory".into() });
        }
        let config_path = dir.join("config.json");
        let config = EncoderConfig::read(&config_path)?;
        let family = config.family().expect("validated");
        let tokenizer = TextTokenizer::load(dir, config.max_tokens(), family == Family::Roberta)?;
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
        let eps = config.layer_norm_eps;
        let t = |t: Tensor| -> Result<Tensor> {
            t.t().and_then(|t| t.contiguous()).map_err(|e| NeuralError::malformed(&weights.path, e.to_string()))
        };
        let cat = |ts: &[Tensor], dim: usize| -> Result<Tensor> {
            Tensor::cat(ts, dim).map_err(|e| NeuralError::malformed(&weights.path, e.to_string()))
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let w = |n: &str, shape: &[usize]| weights.get(&format!("{p}.{n}"), shape);
            let qkv_w = cat(
                &[w("attention.self.query.weight", &[h, h])?, w("attention.self.key.weight", &[h, h])?, w("attention.self.value.weight", &[h, h])?],
                0,
            )?;
            let qkv_b = cat(
                &[w("attention.self.query.bias", &[h])?, w("attention.self.key.bias", &[h])?, w("attention.self.value.bias", &[h])?],
                0,
            )?;
            layers.push(Layer {
                qkv_w: t(qkv_w)?,
                qkv_b,
                attn_out_w: t(w("attention.output.dense.weight", &[h, h])?)?,
                attn_out_b: w("attention.output.dense.bias", &[h])?,
                attn_norm: weights.norm(&format!("{p}.attention.output.LayerNorm"), h, eps)?,
                inter_w: t(w("intermediate.dense.weight", &[i, h])?)?,
                inter_b: w("intermediate.dense.bias", &[i])?,
                out_w: t(w("output.dense.weight", &[h, i])?)?,
                out_b: w("output.dense.bias", &[h])?,
                out_norm: weights.norm(&format!("{p}.output.LayerNorm"), h, eps)?,
            });
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        Ok(Encoder {
            dir: dir.to_path_buf(),
            name,
            fingerprint,
            file_sha256,
            word: weights.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: weights.get("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?,
            token_type: weights.get("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, h])?,
            emb_norm: weights.norm("embeddings.LayerNorm", h, eps)?,
            layers,
            config,
            tokenizer,
        })
    }

    /// Number of encoder layers.
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }

    fn compute<T>(&self, r: candle_core::Result<T>) -> Result<T> {
        r.map_err(|source| NeuralError::Compute { model: self.dir.clone(), source })
    }

    /// Runs a padded batch: `ids` (batch, len) u32 and `mask` (batch, len) f32 with 1 for real
    /// tokens; returns the hidden states after each layer in `layers` (0 = the embedding output),
    /// each (batch, len, hidden). Computation stops after the deepest layer asked for.
    pub fn hidden_states(&self, ids: &Tensor, mask: &Tensor, layers: &[usize]) -> Result<Vec<Tensor>> {
        self.compute(self.forward(ids, mask, layers))
    }

    fn forward(&self, ids: &Tensor, mask: &Tensor, wanted: &[usize]) -> candle_core::Result<Vec<Tensor>> {
        let (b, l) = ids.dims2()?;
        let h = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let d = h / heads;
        let deepest = wanted.iter().copied().max().unwrap_or(0);
        assert!(deepest <= self.layers.len(), "layer {deepest} of {}", self.layers.len());
        let offset = self.config.position_offset();

        let words = self.word.index_select(&ids.flatten_all()?, 0)?.reshape((b, l, h))?;
        let positions = self.position.narrow(0, offset, l)?;
        let types = self.token_type.narrow(0, 0, 1)?;
        let x = words.broadcast_add(&positions)?.broadcast_add(&types)?;
        let mut x = candle_core::Module::forward(&self.emb_norm, &x.reshape((b * l, h))?)?;

        let keep = |layer: usize, x: &Tensor, out: &mut Vec<(usize, Tensor)>| -> candle_core::Result<()> {
            if wanted.contains(&layer) {
                out.push((layer, x.reshape((b, l, h))?));
            }
            Ok(())
        };
        let mut kept = Vec::new();
        keep(0, &x, &mut kept)?;
        // Additive mask over keys: 0 for real tokens, the most negative f32 for padding (as
        // transformers does).
        let bias = ((mask.ones_like()? - mask)? * f32::MIN as f64)?.reshape((b, 1, 1, l))?;
        let scale = 1.0 / (d as f64).sqrt();
        for (n, layer) in self.layers.iter().enumerate().take(deepest) {
            let qkv = x.matmul(&layer.qkv_w)?.broadcast_add(&layer.qkv_b)?; // (b·l, 3h)
            let qkv = qkv.reshape((b, l, 3, heads, d))?.permute((2, 0, 3, 1, 4))?; // (3, b, heads, l, d)
            let q = qkv.get(0)?.contiguous()?;
            let k = qkv.get(1)?.contiguous()?;
            let v = qkv.get(2)?.contiguous()?;
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let ctx = probs.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((b * l, h))?;
            let attn = ctx.matmul(&layer.attn_out_w)?.broadcast_add(&layer.attn_out_b)?;
            let attn = candle_core::Module::forward(&layer.attn_norm, &(attn + &x)?)?;
            let inter = attn.matmul(&layer.inter_w)?.broadcast_add(&layer.inter_b)?;
            let inter = match self.config.hidden_act.as_str() {
                "gelu" => gelu_erf(&inter)?,
                "relu" => inter.relu()?,
                _ => inter.gelu()?,
            };
            let y = inter.matmul(&layer.out_w)?.broadcast_add(&layer.out_b)?;
            x = candle_core::Module::forward(&layer.out_norm, &(y + attn)?)?;
            keep(n + 1, &x, &mut kept)?;
        }
        Ok(wanted.iter().map(|w| kept.iter().find(|(l, _)| l == w).map(|(_, t)| t.clone()).expect("kept")).collect())
    }
}
