//! Scoring many (prediction, reference) pairs with BERTScore and embedding similarity, fast:
//! each distinct text is encoded once per model (one forward pass serves both metrics when they
//! share a model), texts are packed without padding into chunks (see [`Encoder::encode_each`]),
//! and chunks and pairs are spread over all cores.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use h2htalk_metrics::Profile;
use h2htalk_metrics::text::python_strip;
use rayon::prelude::*;

use crate::bertscore::{Prf, TokenVectors, greedy_match};
use crate::cache::{CACHE_ENV, EncodingCache, Entry, Kind};
use crate::encoder::Encoder;
use crate::error::Result;
use crate::fetch::{installed_default, verify_default};
use crate::tokenizer::Tokens;

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
    /// The on-disk encoding cache of the references ([`crate::cache`]): `$H2HTALK_NEURAL_CACHE`
    /// when loaded, which a run replaces by its own choice; `None` for none.
    pub cache: Option<PathBuf>,
    /// What the cache served over every call of this setup so far.
    pub cache_served: Arc<std::sync::Mutex<CacheUse>>,
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
    /// What the encoding cache served, when it is on.
    pub cache: Option<CacheUse>,
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

/// How many distinct references a run read from the encoding cache and how many it encoded and
/// stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUse {
    pub read: usize,
    pub stored: usize,
}

/// Encodes each text of `needs` once; with a cache, the texts of `cached` (the references) are
/// read from it when there and stored in it when not.
fn encode_all<'a>(
    encoder: &Encoder,
    needs: &HashMap<&'a str, Need>,
    token_layer: usize,
    cache: Option<(&EncodingCache, &HashSet<&str>)>,
    cache_use: &mut CacheUse,
) -> Result<HashMap<&'a str, Encoded>> {
    let texts: Vec<&'a str> = needs.keys().copied().collect();
    let tokens = encoder.tokenizer.encode(&texts)?;
    let last = encoder.num_layers();
    let h = encoder.config.hidden_size;
    let mut map = HashMap::with_capacity(texts.len());
    let mut todo: Vec<usize> = Vec::with_capacity(texts.len());
    match cache {
        None => todo.extend(0..texts.len()),
        Some((cache, cached)) => {
            let found: Vec<Option<Encoded>> = (0..texts.len())
                .into_par_iter()
                .map(|i| match cached.contains(texts[i]) {
                    true => from_cache(cache, texts[i], needs[texts[i]], &tokens[i], token_layer, h),
                    false => Ok(None),
                })
                .collect::<Result<_>>()?;
            for (i, enc) in found.into_iter().enumerate() {
                match enc {
                    Some(enc) => {
                        map.insert(texts[i], enc);
                    }
                    None => todo.push(i),
                }
            }
            cache_use.read += map.len();
        }
    }
    // Texts that need only token vectors stop at the BERTScore layer; the others go on to the
    // last layer (for the pooled vector), taking their token vectors on the way.
    for pooled in [false, true] {
        let group: Vec<usize> = todo.iter().copied().filter(|&i| needs[texts[i]].pooled == pooled).collect();
        if group.is_empty() {
            continue;
        }
        let wanted = if pooled { vec![token_layer, last] } else { vec![token_layer] };
        let seqs: Vec<&[u32]> = group.iter().map(|&i| tokens[i].ids.as_slice()).collect();
        let encoded = encoder.encode_each(&seqs, &wanted, |g, states| {
            let i = group[g];
            let need = needs[texts[i]];
            Encoded {
                truncated: tokens[i].truncated,
                tokens: need.tokens.then(|| TokenVectors {
                    ids: tokens[i].ids.clone(),
                    dim: h,
                    vectors: unit_rows(states[0], h),
                }),
                pooled: need.pooled.then(|| mean_pool(states[wanted.len() - 1], h)),
            }
        })?;
        if let Some((cache, cached)) = cache {
            let stored: Vec<(usize, &Encoded)> =
                group.iter().copied().zip(&encoded).filter(|(i, _)| cached.contains(texts[*i])).collect();
            stored.par_iter().try_for_each(|&(i, enc)| to_cache(cache, texts[i], &tokens[i], enc, token_layer))?;
            cache_use.stored += stored.len();
        }
        for (g, enc) in encoded.into_iter().enumerate() {
            map.insert(texts[group[g]], enc);
        }
    }
    Ok(map)
}

/// What the cache holds for one text, when it holds all that the text needs.
fn from_cache(
    cache: &EncodingCache,
    text: &str,
    need: Need,
    tokens: &Tokens,
    token_layer: usize,
    h: usize,
) -> Result<Option<Encoded>> {
    let mut enc = Encoded { truncated: tokens.truncated, ..Encoded::default() };
    if need.tokens {
        match cache.get(Kind::Tokens(token_layer), text, &tokens.ids, h)? {
            Some((Entry::Tokens(vectors), _)) => {
                enc.tokens = Some(TokenVectors { ids: tokens.ids.clone(), dim: h, vectors })
            }
            _ => return Ok(None),
        }
    }
    if need.pooled {
        match cache.get(Kind::Pooled, text, &tokens.ids, h)? {
            Some((Entry::Pooled(v), _)) => enc.pooled = Some(v),
            _ => return Ok(None),
        }
    }
    Ok(Some(enc))
}

fn to_cache(cache: &EncodingCache, text: &str, tokens: &Tokens, enc: &Encoded, token_layer: usize) -> Result<()> {
    if let Some(t) = &enc.tokens {
        cache.put(Kind::Tokens(token_layer), text, &tokens.ids, tokens.truncated, &Entry::Tokens(t.vectors.clone()))?;
    }
    if let Some(p) = &enc.pooled {
        cache.put(Kind::Pooled, text, &tokens.ids, tokens.truncated, &Entry::Pooled(p.clone()))?;
    }
    Ok(())
}

/// Each `h`-wide row divided by its norm (as `bert_score` does before matching).
fn unit_rows(states: &[f32], h: usize) -> Vec<f32> {
    let mut out = states.to_vec();
    for row in out.chunks_exact_mut(h) {
        let norm = row.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt() as f32;
        for v in row {
            *v /= norm;
        }
    }
    out
}

/// The mean of the `h`-wide token vectors of one text (all of its real tokens, special ones
/// included, as sentence-transformers' mean pooling over the attention mask).
fn mean_pool(states: &[f32], h: usize) -> Vec<f64> {
    let mut sum = vec![0f64; h];
    for row in states.chunks_exact(h) {
        for (s, v) in sum.iter_mut().zip(row) {
            *s += *v as f64;
        }
    }
    let n = (states.len() / h).max(1) as f64;
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
        let default =
            if bertscore_model.is_none() || embedding_model.is_none() { Some(installed_default()?) } else { None };
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
        let same =
            bert_dir == emb_dir || bert_dir.canonicalize().ok().is_some_and(|b| emb_dir.canonicalize().ok() == Some(b));
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
            cache: std::env::var_os(CACHE_ENV).filter(|d| !d.is_empty()).map(PathBuf::from),
            cache_served: Arc::default(),
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
        // The references, shared by every model under test, are what the cache keeps.
        let mut references: HashSet<&str> = HashSet::new();
        let shared = self.shared_model();
        for plan in &plans {
            if let Plan::Score { bert, emb } = plan {
                references.extend([bert.1, emb.1]);
                for t in [bert.0, bert.1] {
                    bert_needs.entry(t).or_default().tokens = true;
                }
                let needs = if shared { &mut bert_needs } else { &mut emb_needs };
                for t in [emb.0, emb.1] {
                    needs.entry(t).or_default().pooled = true;
                }
            }
        }
        let mut cache_use = CacheUse::default();
        let cache = |model: &Encoder| self.cache.as_ref().map(|root| EncodingCache::new(root, &model.fingerprint));
        let bert_cache = cache(&self.bertscore_model);
        let bert_encoded = encode_all(
            &self.bertscore_model,
            &bert_needs,
            self.bertscore_layer,
            bert_cache.as_ref().map(|c| (c, &references)),
            &mut cache_use,
        )?;
        let emb_encoded = if shared {
            None
        } else {
            let emb_cache = cache(&self.embedding_model);
            let cache = emb_cache.as_ref().map(|c| (c, &references));
            Some(encode_all(&self.embedding_model, &emb_needs, 0, cache, &mut cache_use)?)
        };
        let emb_map = emb_encoded.as_ref().unwrap_or(&bert_encoded);

        let tok = &self.bertscore_model.tokenizer;
        let special = [tok.cls_id, tok.sep_id];
        let scores = plans
            .par_iter()
            .map(|plan| -> Result<Option<NeuralScores>> {
                match plan {
                    Plan::Dropped => Ok(None),
                    Plan::Zero => Ok(Some(NeuralScores::default())),
                    Plan::Score { bert, emb } => {
                        let vectors = |t: &str| bert_encoded[t].tokens.as_ref().expect("encoded with token vectors");
                        let Prf { precision, recall, f1 } = greedy_match(vectors(bert.0), vectors(bert.1), &special);
                        let pooled = |t: &str| emb_map[t].pooled.as_deref().expect("encoded with a pooled vector");
                        let embedding = cosine(pooled(emb.0), pooled(emb.1));
                        Ok(Some(NeuralScores { bertscore: f1, bertscore_p: precision, bertscore_r: recall, embedding }))
                    }
                }
            })
            .collect::<Result<Vec<_>>>()?;

        if self.cache.is_some() {
            let mut served = self.cache_served.lock().unwrap_or_else(|e| e.into_inner());
            served.read += cache_use.read;
            served.stored += cache_use.stored;
        }
        let count = |map: &HashMap<&str, Encoded>, pick: fn(&Encoded) -> bool| {
            map.values().filter(|e| e.truncated && pick(e)).count()
        };
        Ok(NeuralRun {
            scores,
            bertscore_truncated: count(&bert_encoded, |e| e.tokens.is_some()),
            embedding_truncated: count(emb_map, |e| e.pooled.is_some()),
            cache: self.cache.is_some().then_some(cache_use),
        })
    }

    /// The neural part of a signature: each model by directory name and fingerprint, the
    /// BERTScore layer, whether the 128 cut applied, and how many texts the token limit cut. The
    /// encoding cache is not part of it: it gives the same scores to the bit.
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
        "bert-base-multilingual-cased" => Some(9),
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
        let v = mean_pool(&[1.0, 0.0, 0.0, 1.0], 2);
        assert_eq!(v, [0.5, 0.5]);
        assert!((cosine(&v, &[1.0, 1.0]) - 1.0).abs() < 1e-12);
    }
}
