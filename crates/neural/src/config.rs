//! `config.json` of a BERT-family encoder, deserialized straight from the file users already have.

use std::path::Path;

use serde::Deserialize;

use crate::error::{NeuralError, Result};

/// The fields of a Hugging Face `config.json` that an encoder forward pass needs.
#[derive(Clone, Debug, Deserialize)]
pub struct EncoderConfig {
    #[serde(default = "default_model_type")]
    pub model_type: String,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub pad_token_id: Option<u32>,
    #[serde(default = "default_position_type")]
    pub position_embedding_type: String,
}

fn default_model_type() -> String {
    "bert".into()
}
fn default_act() -> String {
    "gelu".into()
}
fn default_positions() -> usize {
    512
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_position_type() -> String {
    "absolute".into()
}

/// The encoder families this crate runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncoderKind {
    /// BERT (bert-base-chinese, m3e, text2vec, ...): positions start at 0.
    Bert,
    /// RoBERTa / XLM-RoBERTa (bge-m3, ...): positions start after the padding index.
    Roberta,
}

impl EncoderConfig {
    pub fn read(path: &Path) -> Result<EncoderConfig> {
        let text = NeuralError::read_json_text(path)?
            .ok_or_else(|| NeuralError::Missing { path: path.to_path_buf(), what: "the model's config.json".into() })?;
        let config: EncoderConfig = serde_json::from_str(&text)
            .map_err(|e| NeuralError::malformed(path, format!("not a usable encoder config: {e}")))?;
        config.validate(path)?;
        Ok(config)
    }

    fn validate(&self, path: &Path) -> Result<()> {
        self.encoder_kind().ok_or_else(|| {
            NeuralError::malformed(
                path,
                format!("model_type `{}` is not supported; supported: bert, roberta, xlm-roberta", self.model_type),
            )
        })?;
        if self.hidden_size == 0
            || self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Err(NeuralError::malformed(
                path,
                format!(
                    "hidden_size {} is not a multiple of num_attention_heads {}",
                    self.hidden_size, self.num_attention_heads
                ),
            ));
        }
        if self.position_embedding_type != "absolute" {
            return Err(NeuralError::malformed(
                path,
                format!(
                    "position_embedding_type `{}` is not supported (only `absolute`)",
                    self.position_embedding_type
                ),
            ));
        }
        if !matches!(self.hidden_act.as_str(), "gelu" | "gelu_new" | "gelu_pytorch_tanh" | "relu") {
            return Err(NeuralError::malformed(path, format!("hidden_act `{}` is not supported", self.hidden_act)));
        }
        Ok(())
    }

    pub fn encoder_kind(&self) -> Option<EncoderKind> {
        match self.model_type.as_str() {
            "bert" => Some(EncoderKind::Bert),
            "roberta" | "xlm-roberta" => Some(EncoderKind::Roberta),
            _ => None,
        }
    }

    /// Index of the first position embedding used by real tokens.
    pub fn position_offset(&self) -> usize {
        match self.encoder_kind() {
            Some(EncoderKind::Roberta) => self.pad_token_id.unwrap_or(1) as usize + 1,
            _ => 0,
        }
    }

    /// The most tokens (special tokens included) one text may have.
    pub fn max_tokens(&self) -> usize {
        self.max_position_embeddings.saturating_sub(self.position_offset())
    }
}
