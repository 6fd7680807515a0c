//! Errors that name the file, the line and the field, and say what to do.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file or directory could not be read at all.
    #[error("{}: cannot read: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    /// Something is wrong with one line of a file.
    #[error("{}:{line}: field `{field}`: {message}", path.display())]
    Line { path: PathBuf, line: usize, field: String, message: String },

    /// Something is wrong with a file or directory as a whole.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },

    /// Several problems, each on a line of its own (a suite check reports them all at once).
    #[error("{} problems:\n{}", .0.len(), .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Several(Vec<DataError>),
}

impl DataError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        DataError::Io { path: path.to_path_buf(), source }
    }

    pub fn line(path: &Path, line: usize, field: impl Into<String>, message: impl Into<String>) -> Self {
        DataError::Line { path: path.to_path_buf(), line, field: field.into(), message: message.into() }
    }

    pub fn file(path: &Path, message: impl Into<String>) -> Self {
        DataError::File { path: path.to_path_buf(), message: message.into() }
    }
}

pub type Result<T, E = DataError> = std::result::Result<T, E>;
