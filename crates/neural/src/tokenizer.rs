//! The encoder's tokenizer: `tokenizer.json` when the model has one, else a BERT WordPiece
//! tokenizer built from `vocab.txt` the way Hugging Face's `BertTokenizer` works (clean the text,
//! split every CJK character off, lowercase only for uncased models, WordPiece with `##`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::bert::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::error::{NeuralError, Result};

/// Token ids of one text, special tokens included, and whether it was cut at the model's limit.
#[derive(Clone, Debug)]
pub struct Tokens {
    pub ids: Vec<u32>,
    pub truncated: bool,
}

/// A tokenizer with the special-token ids that the metrics need.
pub struct TextTokenizer {
    inner: Tokenizer,
    /// Where the vocabulary came from (`tokenizer.json` or `vocab.txt`).
    pub source: PathBuf,
    pub cls_id: u32,
    pub sep_id: u32,
    /// The most tokens one text may have, special tokens included.
    pub max_tokens: usize,
}

fn read_json(path: &Path) -> Result<Option<Value>> {
    match NeuralError::read_json_text(path)? {
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| NeuralError::malformed(path, format!("not valid JSON: {e}"))),
        None => Ok(None),
    }
}

/// A special token's text from `tokenizer_config.json` or `special_tokens_map.json` (a string or
/// an object with `content`).
fn special(configs: &[Option<Value>], key: &str) -> Option<String> {
    configs.iter().flatten().find_map(|c| match c.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
        _ => None,
    })
}

impl TextTokenizer {
    /// Loads the tokenizer of the model in `dir`; `model_max_tokens` is the limit that the
    /// model's position embeddings allow.
    pub fn load(dir: &Path, model_max_tokens: usize, roberta: bool) -> Result<TextTokenizer> {
        let tok_config_path = dir.join("tokenizer_config.json");
        let tok_config = read_json(&tok_config_path)?;
        let special_map = read_json(&dir.join("special_tokens_map.json"))?;
        let configs = [tok_config.clone(), special_map];
        let (cls_text, sep_text) = if roberta { ("<s>", "</s>") } else { ("[CLS]", "[SEP]") };
        let cls_text = special(&configs, "cls_token").unwrap_or_else(|| cls_text.to_string());
        let sep_text = special(&configs, "sep_token").unwrap_or_else(|| sep_text.to_string());

        let json_path = dir.join("tokenizer.json");
        let vocab_path = dir.join("vocab.txt");
        let (mut inner, source) = if json_path.is_file() {
            let t = Tokenizer::from_file(&json_path)
                .map_err(|e| NeuralError::malformed(&json_path, format!("not a usable tokenizer: {e}")))?;
            (t, json_path)
        } else if vocab_path.is_file() {
            let lowercase =
                tok_config.as_ref().and_then(|c| c.get("do_lower_case")).and_then(Value::as_bool).unwrap_or(true);
            let unk = special(&configs, "unk_token").unwrap_or_else(|| "[UNK]".into());
            (wordpiece(&vocab_path, lowercase, &unk, &cls_text, &sep_text)?, vocab_path)
        } else {
            return Err(NeuralError::Missing {
                path: json_path,
                what: format!("the model's tokenizer: neither tokenizer.json nor {} exists", vocab_path.display()),
            });
        };
        let id = |text: &str| {
            inner.token_to_id(text).ok_or_else(|| {
                NeuralError::malformed(&source, format!("the special token `{text}` is not in the vocabulary"))
            })
        };
        let (cls_id, sep_id) = (id(&cls_text)?, id(&sep_text)?);
        // bert_score and sentence-transformers both cut at the tokenizer's `model_max_length`,
        // bounded by the position embeddings.
        let config_max = tok_config
            .as_ref()
            .and_then(|c| c.get("model_max_length"))
            .and_then(Value::as_f64)
            .filter(|m| *m >= 3.0 && *m < 1e9)
            .map(|m| m as usize);
        let max_tokens = config_max.map_or(model_max_tokens, |m| m.min(model_max_tokens));
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| NeuralError::malformed(&source, format!("cannot truncate at {max_tokens} tokens: {e}")))?;
        Ok(TextTokenizer { inner, source, cls_id, sep_id, max_tokens })
    }

    /// Token ids of each text, with the model's special tokens, cut at `max_tokens`.
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        let encodings = self
            .inner
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| NeuralError::malformed(&self.source, format!("tokenizing failed: {e}")))?;
        Ok(encodings
            .into_iter()
            .map(|e| Tokens { truncated: !e.get_overflowing().is_empty(), ids: e.get_ids().to_vec() })
            .collect())
    }
}

/// Hugging Face's `BertTokenizer` as a fast tokenizer: clean text, CJK characters split off,
/// accents stripped only when lowercasing, WordPiece with `##` continuations, `[CLS] A [SEP]`.
fn wordpiece(vocab: &Path, lowercase: bool, unk: &str, cls: &str, sep: &str) -> Result<Tokenizer> {
    let bad = |e: Box<dyn std::error::Error + Send + Sync>| {
        NeuralError::malformed(vocab, format!("not a usable WordPiece vocabulary: {e}"))
    };
    let model = WordPiece::from_file(&vocab.to_string_lossy()).unk_token(unk.to_string()).build().map_err(bad)?;
    let cls_id = tokenizers::Model::token_to_id(&model, cls);
    let sep_id = tokenizers::Model::token_to_id(&model, sep);
    let (Some(cls_id), Some(sep_id)) = (cls_id, sep_id) else {
        return Err(NeuralError::malformed(
            vocab,
            format!("the special tokens `{cls}` and `{sep}` must be in the vocabulary"),
        ));
    };
    let mut tok = Tokenizer::new(model);
    tok.with_normalizer(Some(BertNormalizer::new(true, true, None, lowercase)));
    tok.with_pre_tokenizer(Some(BertPreTokenizer));
    let template = TemplateProcessing::builder()
        .try_single(format!("{cls}:0 $A:0 {sep}:0"))
        .map_err(|e| NeuralError::malformed(vocab, format!("template: {e}")))?
        .special_tokens(vec![(cls.to_string(), cls_id), (sep.to_string(), sep_id)])
        .build()
        .map_err(|e| NeuralError::malformed(vocab, format!("template: {e}")))?;
    tok.with_post_processor(Some(template));
    let specials: Vec<AddedToken> = ["[PAD]", unk, cls, sep, "[MASK]"]
        .iter()
        .filter(|t| tok.token_to_id(t).is_some())
        .map(|t| AddedToken::from(t.to_string(), true))
        .collect();
    tok.add_special_tokens(&specials);
    Ok(tok)
}
