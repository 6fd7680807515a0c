//! The H2HTalk runner: prompts built from templates, persona cards and the Secure Attachment
//! Persona module ([`sap`]); the run loop ([`run`]), its SQLite store ([`store`]) and the scoring of runs.

pub mod prompt;
pub mod redact;
pub mod run;
pub mod sap;
pub mod store;

use std::path::PathBuf;

pub use prompt::{Message, Prompts, SapMode};
pub use sap::Sap;

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("{}: cannot read: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: field `{field}`: {message}", path.display())]
    Invalid { path: PathBuf, field: String, message: String },
    #[error("template {}: {message}", path.display())]
    Template { path: PathBuf, message: String },
}
