//! The one chat message type of the workspace: what a prompt renders to, what a model gets, what
//! the store keeps and what a judge reads.

use serde::{Deserialize, Serialize};

/// One chat message: `role` is `system`, `user` or `assistant`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage { role: role.into(), content: content.into() }
    }
}
