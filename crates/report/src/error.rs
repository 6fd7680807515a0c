//! Errors of the report crate.

use std::path::PathBuf;

use h2htalk_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{db}: no runs in this store; `h2htalk run` makes one")]
    NoRuns { db: String },
    #[error("{db}: no run `{id}`; `h2htalk runs list` shows the runs")]
    NoRun { db: String, id: String },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    Usage(String),
    #[error("cannot render the report: {0}")]
    Render(String),
}
