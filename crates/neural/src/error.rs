//! Errors of the neural metrics. Each names the file (or directory) at fault and, where it helps,
//! what to do about it. No error is ever turned into a score.

use std::path::{Path, PathBuf};

/// Something that stopped a model from loading or a text from being scored.
#[derive(Debug, thiserror::Error)]
pub enum NeuralError {
    /// A file the model needs is not there.
    #[error("{}: missing ({what})", path.display())]
    Missing { path: PathBuf, what: String },
    /// A file is there but cannot be used.
    #[error("{}: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
    /// The default model (m3e-small) has not been installed.
    #[error(
        "no model given and the default model m3e-small is not installed at {}; run `h2htalk models fetch` (or scripts/fetch-models.sh) first, or pass --bertscore-model/--embedding-model DIR",
        path.display()
    )]
    DefaultNotInstalled { path: PathBuf },
    /// Downloading or installing the default model failed.
    #[error("fetching {what}: {message}")]
    Fetch { what: String, message: String },
    /// An I/O error on a file.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A tensor computation failed (a bug or an inconsistent model, reported with its model).
    #[error("{}: computing with this model failed: {source}", model.display())]
    Compute { model: PathBuf, source: candle_core::Error },
}

impl NeuralError {
    /// A JSON file of a model directory, read as text: at most 64 MiB, a regular file once links
    /// are followed; `Ok(None)` when it does not exist.
    pub fn read_json_text(path: &Path) -> Result<Option<String>, NeuralError> {
        match h2htalk_data::input::read_bounded(path, 64 * 1024 * 1024) {
            Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| NeuralError::malformed(path, "is not UTF-8")),
            Err(h2htalk_data::DataError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            Err(h2htalk_data::DataError::Io { source, .. }) => Err(NeuralError::io(path, source)),
            Err(h2htalk_data::DataError::File { message, .. }) => Err(NeuralError::malformed(path, message)),
            Err(other) => Err(NeuralError::malformed(path, other.to_string())),
        }
    }

    pub fn malformed(path: &Path, message: impl Into<String>) -> Self {
        NeuralError::Malformed { path: path.to_path_buf(), message: message.into() }
    }

    pub fn io(path: &Path, source: std::io::Error) -> Self {
        NeuralError::Io { path: path.to_path_buf(), source }
    }
}

pub type Result<T, E = NeuralError> = std::result::Result<T, E>;
