//! The options that choose the neural metric models, shared by `score` and `run`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use h2htalk_metrics::Profile;
use h2htalk_neural::NeuralSetup;
use h2htalk_store::MetricModels;

#[derive(Args, Clone, Debug, Default)]
pub struct MetricModelArgs {
    /// BERTScore model directory (config.json, model.safetensors or pytorch_model.bin,
    /// tokenizer.json or vocab.txt). Default: m3e-small from `h2htalk models fetch`, a stand-in.
    #[arg(long, value_name = "DIR")]
    pub bertscore_model: Option<PathBuf>,
    /// Hidden states after this layer (default: 8 for bert-base-chinese, else the last layer).
    #[arg(long, value_name = "N")]
    pub bertscore_layer: Option<usize>,
    /// Embedding-similarity model directory (mean pooling, cosine). Default: m3e-small, a stand-in.
    #[arg(long, value_name = "DIR")]
    pub embedding_model: Option<PathBuf>,
}

impl MetricModelArgs {
    /// The models as a run records them.
    pub fn to_spec(&self) -> MetricModels {
        MetricModels {
            bertscore_model: self.bertscore_model.clone(),
            bertscore_layer: self.bertscore_layer,
            embedding_model: self.embedding_model.clone(),
        }
    }

    pub fn any(&self) -> bool {
        self.bertscore_model.is_some() || self.bertscore_layer.is_some() || self.embedding_model.is_some()
    }

    /// Loads the models (before any scoring, so that a missing model stops the command at once).
    pub fn load(&self, profile: Profile) -> anyhow::Result<NeuralSetup> {
        NeuralSetup::load(
            profile,
            self.bertscore_model.as_deref(),
            self.bertscore_layer,
            self.embedding_model.as_deref(),
        )
        .context("loading the neural metric models")
    }
}
