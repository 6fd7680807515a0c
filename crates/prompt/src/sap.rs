//! The Secure Attachment Persona (SAP): attachment-theory principles that keep the companion a safe
//! haven and a secure base rather than a source of dependence. The principles are data
//! (`suites/sap/principles.json`), versioned and hashed; the hash goes into every run's provenance.

use std::path::Path;

use h2htalk_data::suite::Lang;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::PromptError;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wording {
    pub title: String,
    pub text: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Principle {
    pub id: String,
    pub zh: Wording,
    pub en: Wording,
}

/// The SAP principles as loaded from their file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sap {
    pub name: String,
    pub version: String,
    pub source: String,
    pub principles: Vec<Principle>,
}

/// The principle ids the SAP module must cover.
pub const REQUIRED: [&str; 6] = ["safe_haven", "secure_base", "boundaries", "crisis", "honesty", "no_manipulation"];

impl Sap {
    pub fn load(path: &Path) -> Result<Sap, PromptError> {
        let text =
            h2htalk_data::input::read_text(path)?;
        let mut de = serde_json::Deserializer::from_str(&text);
        let sap: Sap = serde_path_to_error::deserialize(&mut de).map_err(|e| PromptError::Invalid {
            path: path.to_path_buf(),
            field: e.path().to_string(),
            message: e.inner().to_string(),
        })?;
        for id in REQUIRED {
            if !sap.principles.iter().any(|p| p.id == id) {
                return Err(PromptError::Invalid {
                    path: path.to_path_buf(),
                    field: "principles".into(),
                    message: format!("missing principle `{id}`"),
                });
            }
        }
        Ok(sap)
    }

    /// sha256 of the principles in canonical JSON (independent of whitespace in the file).
    pub fn hash(&self) -> String {
        let canonical = serde_json::to_value(self).expect("SAP serialises").to_string();
        format!("sha256:{:x}", Sha256::digest(canonical.as_bytes()))
    }

    /// The principles in one language, as the system prompt shows them.
    pub fn in_lang(&self, lang: Lang) -> serde_json::Value {
        let principles: Vec<&Wording> =
            self.principles.iter().map(|p| if lang == Lang::Zh { &p.zh } else { &p.en }).collect();
        serde_json::json!({ "name": self.name, "version": self.version, "principles": principles })
    }
}
