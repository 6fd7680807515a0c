//! `suite.json`: a suite's name, the suite it takes its shared parts from, and where the official
//! references of its `official` scenarios are read.
//!
//! ```json
//! {"name": "official-backfill", "inherit": ".."}
//! ```
//!
//! A part of a suite (templates/, sap/, judge/, rules/) that its directory does not hold is taken
//! from the inherited suite (a path relative to the suite directory), and from that one's inherited
//! suite in turn. Scenarios, personas, the safety set and simulator profiles are never inherited:
//! they belong to the suite's own personas.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{DataError, Result};

/// The name of a suite without a `suite.json` (ours, embedded or exported).
pub const DEFAULT_NAME: &str = "h2htalk";

/// The folders of a suite: their names are spelled here and nowhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// `scenarios/<stem>.jsonl`, one file per sub-task.
    Scenarios,
    /// `safety/sap_safety.<lang>.jsonl`.
    Safety,
    /// `personas/<id>.json`.
    Personas,
    /// `templates/<lang>/<stem>.j2`.
    Templates,
    /// `sap/principles.json`.
    Sap,
    /// `judge/<lang>.json`: the judge's and the simulator's texts.
    Judge,
    /// `rules/safety.json`: the safety rules' phrases.
    Rules,
    /// `simulator/<id>.json`: the simulated users.
    Simulator,
    /// `annotation/first.jsonl`, `annotation/second.jsonl`: two independent tag annotations.
    Annotation,
    /// `memory/histories/<part>.jsonl`, `memory/probes/<part>.jsonl`: the long-horizon memory suite.
    Memory,
}

impl Part {
    /// The folder's name.
    pub fn dir_name(self) -> &'static str {
        match self {
            Part::Scenarios => "scenarios",
            Part::Safety => "safety",
            Part::Personas => "personas",
            Part::Templates => "templates",
            Part::Sap => "sap",
            Part::Judge => "judge",
            Part::Rules => "rules",
            Part::Simulator => "simulator",
            Part::Annotation => "annotation",
            Part::Memory => "memory",
        }
    }

    /// Whether a suite that lacks the part takes it from the suite it inherits.
    pub fn inherited(self) -> bool {
        INHERITED_PARTS.contains(&self)
    }
}

/// The parts of a suite that may come from an inherited suite.
pub const INHERITED_PARTS: [Part; 4] = [Part::Templates, Part::Sap, Part::Judge, Part::Rules];

/// Environment variable naming the official data directory (the release's reference files).
pub const REFERENCES_ENV: &str = "H2HTALK_REFERENCES";

/// How deep `inherit` may chain (a cycle stops there with an error).
const MAX_DEPTH: usize = 8;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    pub name: Option<String>,
    pub inherit: Option<PathBuf>,
    /// The fewest hard items the suite must hold (`suite check` fails below them).
    pub floors: Option<Floors>,
}

/// The fewest items of each hard kind a suite promises (in its `suite.json`), so that two models
/// can be told apart on them: `suite check` fails when one is not met.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floors {
    /// Scenarios whose need changes without being announced.
    pub hidden_changing_need: usize,
    /// Scenarios whose real need is never said.
    pub implicit_need: usize,
    /// Scenarios with dated earlier sessions (`sessions`, or `session` of recollection_initialize).
    pub multi_session_dated: usize,
    /// The share of dialogue scenarios with 8 or more turns in the current conversation alone.
    pub long_dialogue_share: f64,
}

impl SuiteConfig {
    /// Reads `dir/suite.json`; a suite without one has the default name and inherits nothing.
    pub fn read(dir: &Path) -> Result<SuiteConfig> {
        let path = dir.join("suite.json");
        if !path.exists() {
            return Ok(SuiteConfig::default());
        }
        let bytes = crate::input::read_file(&path)?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let config: SuiteConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = match e.path().to_string() {
                p if p == "." => "(file)".to_string(),
                p => p,
            };
            let line = e.inner().line().max(1);
            DataError::line(
                &path,
                line,
                field,
                format!("{} (suite.json holds `name` and `inherit`; see suites/FORMAT.md)", e.inner()),
            )
        })?;
        if config.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(DataError::line(&path, 1, "name", "is empty; name the suite or leave `name` out"));
        }
        Ok(config)
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_NAME)
    }
}

/// The directory that holds `part` for the suite in `dir`: the suite's own when it has one, else,
/// for a part of [`INHERITED_PARTS`], the inherited suite's. When no suite in the chain has it, the
/// suite's own path (the error of whoever reads it names that path).
pub fn part_dir(dir: &Path, part: Part) -> Result<PathBuf> {
    let name = part.dir_name();
    if !part.inherited() {
        return Ok(dir.join(name));
    }
    let mut current = dir.to_path_buf();
    for _ in 0..MAX_DEPTH {
        let candidate = current.join(name);
        if candidate.exists() {
            return Ok(candidate);
        }
        match SuiteConfig::read(&current)?.inherit {
            Some(parent) => {
                let next = current.join(&parent);
                if !next.is_dir() {
                    return Err(DataError::line(
                        &current.join("suite.json"),
                        1,
                        "inherit",
                        format!("`{}` is not a directory (it is relative to the suite directory)", parent.display()),
                    ));
                }
                current = next;
            }
            None => return Ok(dir.join(name)),
        }
    }
    Err(DataError::line(
        &dir.join("suite.json"),
        1,
        "inherit",
        format!("inherits through more than {MAX_DEPTH} suites; is there a cycle?"),
    ))
}

/// Where the official references are read when none is given: `$H2HTALK_REFERENCES`, else the
/// first `shared/h2htalk-data` found going up from the suite directory (for a suite inside a
/// checkout, the release's data directory beside the checkout: `../shared/h2htalk-data`).
pub fn default_references(suite_dir: &Path) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(REFERENCES_ENV) {
        return Some(PathBuf::from(dir));
    }
    let start = std::fs::canonicalize(suite_dir).unwrap_or_else(|_| suite_dir.to_path_buf());
    start.ancestors().map(|a| a.join("shared").join("h2htalk-data")).find(|d| d.is_dir())
}
