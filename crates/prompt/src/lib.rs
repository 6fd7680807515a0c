//! H2HTalk prompts: a scenario, its persona card and (optionally) the Secure Attachment Persona
//! principles ([`sap`]) rendered into the exact messages a model gets ([`render`]). Everything is
//! data under the suite directory, hashed from its files into the run specification.

pub mod render;
pub mod sap;

use std::path::PathBuf;

pub use h2htalk_data::{ChatMessage, SapMode};
pub use render::Prompts;
pub use sap::Sap;

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("{}: cannot read: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: field `{field}`: {message}", path.display())]
    Invalid { path: PathBuf, field: String, message: String },
    #[error("template {}: {message}", path.display())]
    Template { path: PathBuf, message: String },
    #[error(transparent)]
    Data(#[from] h2htalk_data::DataError),
}
