//! The line that says how a score was computed, so that two numbers are compared only when they
//! are comparable (in the manner of sacrebleu's signatures).

use crate::lexical::Profile;
use crate::tokenize::{JIEBA_RS_VERSION, PYTHON_JIEBA_VERSION};

/// The h2htalk version that computed the scores.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The lexical part of a signature, e.g.
/// `profile:paper|tok:jieba-0.42.1-parity(jieba-rs-0.11)|bleu:nltk-method1-eps0.1-w3:0.33/0.33/0.34|rouge:f1-clipped+lcs|h2htalk:0.1.0`.
pub fn lexical_signature(profile: Profile) -> String {
    format!(
        "profile:{}|tok:jieba-{PYTHON_JIEBA_VERSION}-parity(jieba-rs-{JIEBA_RS_VERSION})|\
         bleu:nltk-method1-eps0.1-w3:0.33/0.33/0.34|rouge:f1-clipped+lcs|h2htalk:{VERSION}",
        profile.name()
    )
}
