//! Auditing a scenario suite: what `h2htalk suite check` prints. It lives with the suite, apart
//! from the pipeline that runs models on it.
//!
//! - [`coverage`]: counts per sub-task and language, tags, risks, personas, the fingerprint; how
//!   hard the suite is (history lengths, sessions, hidden changes of need); the agreement of its
//!   two independent tag annotations; the style of its references against the official ones.
//! - [`official`]: for a suite whose scenarios answer official reference lines, the checks against
//!   the official files (counts, reference breaks, give-away, memories held).
//!
//! [`audit`] runs all of it on a suite directory and returns the text and whether it passed.

pub mod coverage;
pub mod official;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use h2htalk_data::suite::{default_references, embedded};
use h2htalk_data::{DataError, load_suite, load_suite_with};

pub use coverage::{HardCases, coverage, hard_cases, hardness, suite_statistics};
pub use official::{OfficialCheck, check_official};

/// Errors of an audit: a suite, its templates or its judge texts that cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Prompt(#[from] h2htalk_prompt::PromptError),
    #[error(transparent)]
    Judge(#[from] h2htalk_judge::JudgeError),
}

/// What an audit found.
#[derive(Clone, Debug)]
pub struct Audit {
    /// The suite audited.
    pub dir: PathBuf,
    /// The report, as `suite check` prints it.
    pub text: String,
    /// Problems that fail the audit (empty when it passed).
    pub failures: Vec<String>,
}

impl Audit {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Audits the suite in `dir` (the embedded suite when `None`); official references from
/// `references`, else the suite's default (see [`default_references`]), else the one found going
/// up from the working directory.
pub fn audit(dir: Option<&Path>, references: Option<&Path>) -> Result<Audit, AuditError> {
    let dir = embedded::or_embedded(dir)?;
    let suite = load_suite_with(&dir, references)?;
    // The other data of a suite: templates and SAP, the judge's texts and rules, the profiles.
    let prompts = h2htalk_prompt::Prompts::load(&dir)?;
    let texts = h2htalk_judge::JudgeTexts::load(&dir)?;
    let mut text = coverage(&suite);
    let _ =
        writeln!(text, "templates {}  sap {} {}", prompts.template_hash(), prompts.sap().version, prompts.sap().hash());
    let _ = writeln!(text, "judge texts and safety rules {}", texts.hash());
    let references = references
        .map(Path::to_path_buf)
        .or_else(|| default_references(&dir))
        .or_else(|| std::env::current_dir().ok().and_then(|d| default_references(&d)));
    text.push_str(&suite_statistics(&suite, references.as_deref())?);
    // Profiles belong to the suite's own personas: never inherited.
    if suite.has_profiles() {
        let profiles = suite.profiles()?;
        let mut cells: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
        for p in &profiles {
            *cells.entry(format!("{} {} {}", p.attachment.as_str(), p.lang, p.companion_persona)).or_default() += 1;
        }
        let cells: Vec<String> = cells.into_iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let _ = writeln!(
            text,
            "simulator profiles {} (per attachment style, language, persona: {})",
            profiles.len(),
            cells.join("; ")
        );
    } else {
        let _ = writeln!(
            text,
            "simulator profiles: none (this suite has no simulator/; --simulate needs a suite that has)"
        );
    }
    if let Some(memory) = suite.memory()? {
        text.push_str(&coverage::memory_coverage(&memory));
    }
    let (hard, mut failures) = coverage::hardness(&suite);
    text.push_str(&hard);
    // A suite of official lines: counts, reference breaks and give-away against our suite.
    if suite.official.is_some() {
        let baseline = load_suite(&embedded::dir()?)?;
        let official = check_official(&suite, &baseline).expect("a suite with official lines");
        let _ = write!(text, "{official}");
        if !official.passed() {
            failures.push(format!("{}: the official set does not pass its checks (see above)", dir.display()));
        }
    }
    Ok(Audit { dir, text, failures })
}
