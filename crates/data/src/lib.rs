//! The H2HTalk data model.
//!
//! - [`Task`] and [`Family`]: the eleven sub-tasks in three families.
//! - [`official`]: directories in the official layout (one `<stem>.jsonl` per sub-task), for
//!   references and predictions, with every problem reported as a [`DataError`] that names the
//!   file, the line and the field.
//! - [`suite`]: our own scenario suite (inputs, references, tags, the SAP safety set, personas),
//!   validated against suites/FORMAT.md.
//! - [`jsonl`]: the JSON Lines reader underneath (LF/CRLF, BOM, final newline or not).
//! - [`chat`]: the chat message type; [`redact`]: masking personal data in text.

#[macro_use]
mod text_enum;

pub mod chat;
pub mod error;
pub mod input;
pub mod jsonl;
pub mod official;
pub mod redact;
pub mod suite;
mod task;

pub use chat::ChatMessage;
pub use error::{DataError, Result};
pub use official::{TaskDir, TaskFile, load_partial_predictions, load_predictions, load_references};
pub use suite::{SapMode, Scenario, Suite, load_suite, load_suite_with};
pub use task::{Family, SAFETY_GROUP, Task};
