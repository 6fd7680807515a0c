//! Scoring many (prediction, reference) pairs with BERTScore and embedding similarity, fast:
//! each distinct text is encoded once per model (one forward pass serves both metrics when they
//! share a model), texts are sorted by length into padded batches, and batches and pairs are
//! spread over all cores.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use h2htalk_metrics::Profile;
use h2htalk_metrics::text::python_strip;
use rayon::prelude::*;

use crate::bertscore::{Prf, TokenVectors, greedy_match};
use crate::encoder::Encoder;
use crate::error::Result;
use crate::fetch::{installed_default, verify_default};

/// Most texts in one batch (as `bert_score`'s default batch size).
const MAX_BATCH: usize = 64;
/// Most padded tokens in one batch, which bounds the memory of attention.
const MAX_BATCH_TOKENS: usize = 4096;

/// The paper's BERTScore cut: when either stripped text is longer than 128 code points, both are
/// cut to their first 128 (which leaves a shorter text as it is).
pub const PAPER_CUT: usize = 128;

/// What the neural metrics are computed with.
#[derive(Clone)]
pub struct NeuralSetup {
    pub bertscore_model: Arc<Encoder>,
    /// Hidden states after this layer (0 = embedding output).
    pub bertscore_layer: usize,
    pub embedding_model: Arc<Encoder>,
    /// `Some(128)` in the `paper` profile; `None` in `strict`.
    pub cut: Option<usize>,
    /// The models are the m3e-small stand-in, not the paper's.
    pub stand_in: bool,
}

/// The neural metrics of one pair.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NeuralScores {
    /// BERTScore F1.
    pub bertscore: f64,
    pub bertscore_p: f64,
    pub bertscore_r: f64,
    /// Cosine of the mean-pooled sentence embeddings.
    pub embedding: f64,
}

impl NeuralScores {
    /// Metric names in output order, as they appear in JSON.
    pub const NAMES: [&'static str; 4] = ["bertscore", "bertscore_p", "bertscore_r", "embedding"];

    pub fn values(&self) -> [f64; 4] {
        [self.bertscore, self.bertscore_p, self.bertscore_r, self.embedding]
    }
}

/// The scores of a set of pairs and what the signature must say about them.
#[derive(Clone, Debug, Default)]
pub struct NeuralRun {
    /// One entry per input pair: `None` when the pair is dropped under the profile.
    pub scores: Vec<Option<NeuralScores>>,
    /// Distinct texts longer than the BERTScore model's token limit (cut there, as `bert_score` does).
    pub bertscore_truncated: usize,
    /// Distinct texts longer than the embedding model's token limit (cut there, as
    /// sentence-transformers does).
    pub embedding_truncated: usize,
}

/// The first `n` code points of `text` (Python's `text[:n]`).
pub fn first_code_points(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// What one distinct text must yield.
#[derive(Clone, Copy, Default)]
struct Need {
    tokens: bool,
    pooled: bool,
}

/// What one distinct text yielded.
#[derive(Default)]
struct Encoded {
    tokens: Option<TokenVectors>,
    pooled: Option<Vec<f64>>,
    truncated: bool,
}

fn encode_all<'a>(
    encoder: &Encoder,
    needs: &HashMap<&'a str, Need>,
    token_layer: usize,
) -> Result<HashMap<&'a str, Encoded>> {
    let texts: Vec<&'a str> = needs.keys().copied().collect();
    let tokens = encoder.tokenizer.encode(&texts)?;
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(tokens[i].ids.len()));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match batches.last_mut() {
            Some(b) if b.len() < MAX_BATCH && (b.len() + 1) * tokens[b[0]].ids.len() <= MAX_BATCH_TOKENS => b.push(i),
            _ => batches.push(vec![i]),
        }
    }
    let pad = encoder.config.pad_token_id.unwrap_or(0);
    let last = encoder.num_layers();
    let results: Vec<Vec<(usize, Encoded)>> = batches
        .par_iter()
        .map(|batch| -> Result<Vec<(usize, Encoded)>> {
            let len = tokens[batch[0]].ids.len();
            let mut ids = vec![pad; batch.len() * len];
            let mut mask = vec![0f32; batch.len() * len];
            for (row, &i) in batch.iter().enumerate() {
                let t = &tokens[i].ids;
                ids[row * len..row * len + t.len()].copy_from_slice(t);
                mask[row * len..row * len + t.len()].fill(1.0);
            }
            let need_tokens = batch.iter().any(|&i| needs[texts[i]].tokens);
            let need_pooled = batch.iter().any(|&i| needs[texts[i]].pooled);
            let mut layers = Vec::new();
            if need_tokens {
                layers.push(token_layer);
            }
            if need_pooled {
                layers.push(last);
            }
            fn compute<T>(encoder: &Encoder, r: candle_core::Result<T>) -> Result<T> {
                r.map_err(|source| crate::NeuralError::Compute { model: encoder.dir.clone(), source })
            }
            let ids_t = compute(encoder, Tensor::from_vec(ids, (batch.len(), len), &Device::Cpu))?;
            let mask_t = compute(encoder, Tensor::from_vec(mask, (batch.len(), len), &Device::Cpu))?;
            let hidden = encoder.hidden_states(&ids_t, &mask_t, &layers)?;
            let mut out = Vec::with_capacity(batch.len());
            for (row, &i) in batch.iter().enumerate() {
                let need = needs[texts[i]];
                let n = tokens[i].ids.len();
                let mut enc = Encoded { truncated: tokens[i].truncated, ..Encoded::default() };
                if need.tokens {
                    let states = compute(encoder, hidden[0].get(row).and_then(|s| s.narrow(0, 0, n)))?;
                    enc.tokens = Some(TokenVectors { ids: tokens[i].ids.clone(), vectors: compute(encoder, unit_rows(&states))? });
                }
                if need.pooled {
                    let states: Vec<Vec<f32>> =
                        compute(encoder, hidden[layers.len() - 1].get(row).and_then(|s| s.narrow(0, 0, n)?.to_vec2()))?;
                    enc.pooled = Some(mean_pool(&states));
                }
                out.push((i, enc));
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    let mut map = HashMap::with_capacity(texts.len());
    for (i, enc) in results.into_iter().flatten() {
        map.insert(texts[i], enc);
    }
    Ok(map)
}

/// Each row divided by its norm (as `bert_score` does before matching).
fn unit_rows(states: &Tensor) -> candle_core::Result<Tensor> {
    let norms = states.to_dtype(DType::F32)?.sqr()?.sum_keepdim(1)?.sqrt()?;
    states.broadcast_div(&norms)?.contiguous()
}

/// The mean of the token vectors of one text (all of its real tokens, special ones included,
/// as sentence-transformers' mean pooling over the attention mask).
fn mean_pool(states: &[Vec<f32>]) -> Vec<f64> {
    let mut sum = vec![0f64; states.first().map_or(0, Vec::len)];
    for row in states {
        for (s, v) in sum.iter_mut().zip(row) {
            *s += *v as f64;
        }
    }
    let n = states.len().max(1) as f64;
    sum.iter().map(|s| s / n).collect()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) }
}

impl NeuralSetup {
    /// Loads the models for `profile`. A model not given is the default m3e-small (a stand-in),
    /// which must have been installed (`h2htalk models fetch`); `layer` defaults to
    /// [`default_bertscore_layer`]. The same directory given twice is loaded once.
    pub fn load(
        profile: Profile,
        bertscore_model: Option<&Path>,
        bertscore_layer: Option<usize>,
        embedding_model: Option<&Path>,
    ) -> Result<NeuralSetup> {
        let default = if bertscore_model.is_none() || embedding_model.is_none() { Some(installed_default()?) } else { None };
        let bert_dir = bertscore_model.map(Path::to_path_buf).or_else(|| default.clone()).expect("resolved");
        let emb_dir = embedding_model.map(Path::to_path_buf).or_else(|| default.clone()).expect("resolved");
        let load = |dir: &Path| -> Result<Arc<Encoder>> {
            let encoder = Encoder::load(dir)?;
            if Some(dir) == default.as_deref() {
                verify_default(dir, &encoder.file_sha256)?;
            }
            Ok(Arc::new(encoder))
        };
        let bertscore_model = load(&bert_dir)?;
        let same = bert_dir == emb_dir || bert_dir.canonicalize().ok().is_some_and(|b| emb_dir.canonicalize().ok() == Some(b));
        let embedding_model = if same { bertscore_model.clone() } else { load(&emb_dir)? };
        let layers = bertscore_model.num_layers();
        let bertscore_layer = bertscore_layer.unwrap_or_else(|| default_bertscore_layer(&bertscore_model));
        if bertscore_layer > layers {
            return Err(crate::NeuralError::malformed(
                &bert_dir.join("config.json"),
                format!("--bertscore-layer {bertscore_layer} is out of range: this model has layers 0..={layers}"),
            ));
        }
        Ok(NeuralSetup {
            stand_in: default.as_deref().is_some_and(|d| bertscore_model.dir == d || embedding_model.dir == d),
            bertscore_model,
            bertscore_layer,
            embedding_model,
            cut: match profile {
                Profile::Paper => Some(PAPER_CUT),
                Profile::Strict => None,
            },
        })
    }

    fn shared_model(&self) -> bool {
        Arc::ptr_eq(&self.bertscore_model, &self.embedding_model)
            || self.bertscore_model.fingerprint == self.embedding_model.fingerprint
    }

    /// Scores `pairs` of (prediction, reference) under `profile`. Texts are stripped as Python's
    /// `str.strip()` does; as for the lexical metrics, a pair with an empty reference is dropped,
    /// and an empty prediction is dropped (`paper`) or scores 0 (`strict`).
    pub fn score_pairs(&self, profile: Profile, pairs: &[(&str, &str)]) -> Result<NeuralRun> {
        enum Plan<'a> {
            Dropped,
            Zero,
            Score { bert: (&'a str, &'a str), emb: (&'a str, &'a str) },
        }
        let plans: Vec<Plan> = pairs
            .iter()
            .map(|(p, r)| {
                let (p, r) = (python_strip(p), python_strip(r));
                match (p.is_empty(), r.is_empty(), profile) {
                    (_, true, _) | (true, false, Profile::Paper) => Plan::Dropped,
                    (true, false, Profile::Strict) => Plan::Zero,
                    (false, false, _) => {
                        let bert = match self.cut {
                            Some(n) => (first_code_points(p, n), first_code_points(r, n)),
                            None => (p, r),
                        };
                        Plan::Score { bert, emb: (p, r) }
                    }
                }
            })
            .collect();

        let mut bert_needs: HashMap<&str, Need> = HashMap::new();
        let mut emb_needs: HashMap<&str, Need> = HashMap::new();
        let shared = self.shared_model();
        for plan in &plans {
            if let Plan::Score { bert, emb } = plan {
                for t in [bert.0, bert.1] {
                    bert_needs.entry(t).or_default().tokens = true;
                }
                let needs = if shared { &mut bert_needs } else { &mut emb_needs };
                for t in [emb.0, emb.1] {
                    needs.entry(t).or_default().pooled = true;
                }
            }
        }
        let bert_encoded = encode_all(&self.bertscore_model, &bert_needs, self.bertscore_layer)?;
        let emb_encoded = if shared { None } else { Some(encode_all(&self.embedding_model, &emb_needs, 0)?) };
        let emb_map = emb_encoded.as_ref().unwrap_or(&bert_encoded);

        let tok = &self.bertscore_model.tokenizer;
        let special = [tok.cls_id, tok.sep_id];
        let model = &self.bertscore_model;
        let scores = plans
            .par_iter()
            .map(|plan| -> Result<Option<NeuralScores>> {
                match plan {
                    Plan::Dropped => Ok(None),
                    Plan::Zero => Ok(Some(NeuralScores::default())),
                    Plan::Score { bert, emb } => {
                        let vectors = |t: &str| bert_encoded[t].tokens.as_ref().expect("encoded with token vectors");
                        let Prf { precision, recall, f1 } = greedy_match(vectors(bert.0), vectors(bert.1), &special)
                            .map_err(|source| crate::NeuralError::Compute { model: model.dir.clone(), source })?;
                        let pooled = |t: &str| emb_map[t].pooled.as_deref().expect("encoded with a pooled vector");
                        let embedding = cosine(pooled(emb.0), pooled(emb.1));
                        Ok(Some(NeuralScores { bertscore: f1, bertscore_p: precision, bertscore_r: recall, embedding }))
                    }
                }
            })
            .collect::<Result<Vec<_>>>()?;

        let count = |map: &HashMap<&str, Encoded>, pick: fn(&Encoded) -> bool| map.values().filter(|e| e.truncated && pick(e)).count();
        Ok(NeuralRun {
            scores,
            bertscore_truncated: count(&bert_encoded, |e| e.tokens.is_some()),
            embedding_truncated: count(emb_map, |e| e.pooled.is_some()),
        })
    }

    /// The neural part of a signature: each model by directory name and fingerprint, the
    /// BERTScore layer, whether the 128 cut applied, and how many texts the token limit cut.
    pub fn signature(&self, run: &NeuralRun) -> String {
        let b = &self.bertscore_model;
        let e = &self.embedding_model;
        let mut s = format!(
            "bertscore:{}@{}:L{}/{}:{}:no-idf:no-rescale:max{}tok(truncated:{})|emb:{}@{}:mean-pool:cos:max{}tok(truncated:{})",
            b.name,
            b.fingerprint,
            self.bertscore_layer,
            b.num_layers(),
            self.cut.map_or_else(|| "no-cut".to_string(), |n| format!("cut{n}")),
            b.tokenizer.max_tokens,
            run.bertscore_truncated,
            e.name,
            e.fingerprint,
            e.tokenizer.max_tokens,
            run.embedding_truncated,
        );
        if self.stand_in {
            s.push_str("|models:stand-in(m3e-small),not-comparable-with-paper");
        }
        s
    }
}

/// The BERTScore layer `bert_score` uses by default for a model (its `model2layers` table, for
/// the models of this benchmark's family), else the model's last layer.
pub fn default_bertscore_layer(encoder: &Encoder) -> usize {
    let known = match encoder.name.as_str() {
        "bert-base-chinese" => Some(8),
        "bert-base-multilingual-cased" | "bert-base-multilingual-uncased" => Some(9),
        "xlm-roberta-base" => Some(9),
        "xlm-roberta-large" => Some(17),
        _ => None,
    };
    known.filter(|&l| l <= encoder.num_layers()).unwrap_or(encoder.num_layers())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_code_points() {
        assert_eq!(first_code_points("你好世界", 2), "你好");
        assert_eq!(first_code_points("ab", 5), "ab");
        assert_eq!(first_code_points("😊x", 1), "😊");
    }

    #[test]
    fn mean_pool_and_cosine() {
        let v = mean_pool(&[vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(v, [0.5, 0.5]);
        assert!((cosine(&v, &[1.0, 1.0]) - 1.0).abs() < 1e-12);
    }
}
