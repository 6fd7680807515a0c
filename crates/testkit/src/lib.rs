//! Helpers shared by h2htalk's tests, in one dev-only crate instead of files included across crates:
//!
//! - the checkout's root, its golden files, the official references and the suite;
//! - [`corpus`]: hostile input files for every loader;
//! - run specifications and stores for tests that write runs directly ([`browse`]: the viewer's).

pub mod browse;
pub mod corpus;
pub mod figures;

use std::path::PathBuf;

use h2htalk_data::SapMode;
use h2htalk_llm::{GenerationSettings, ModelId};
use h2htalk_metrics::{Profile, lexical_signature};
use h2htalk_store::{MetricModels, MetricSet, ModelRequest, Prices, RunSpec, SapRef, ScoringSpec, Selection, SuiteRef};

/// The root of the checkout.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The project's suite.
pub fn suite_dir() -> PathBuf {
    root().join("suites")
}

/// The golden file `tests/golden/NAME`, parsed.
pub fn golden(name: &str) -> serde_json::Value {
    let path = root().join("tests/golden").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The official references: `$H2HTALK_REFERENCES`, else `../shared/h2htalk-data` beside the checkout.
pub fn reference_dir() -> PathBuf {
    std::env::var_os("H2HTALK_REFERENCES").map(PathBuf::from).unwrap_or_else(|| root().join("../shared/h2htalk-data"))
}

/// A run specification for tests that write runs straight into a store: model `provider:name`,
/// the given SAP mode, lexical metrics under `strict`.
pub fn spec(provider: &str, name: &str, sap: SapMode) -> RunSpec {
    RunSpec {
        h2htalk_version: h2htalk_metrics::VERSION.to_string(),
        suite: SuiteRef { dir: Some(suite_dir()), fingerprint: "test".into(), name: None, references: None },
        selection: Selection::default(),
        templates_hash: "test".into(),
        judge_texts_hash: None,
        sap: SapRef { mode: sap, version: "test".into(), hash: "test".into() },
        model: ModelRequest {
            spec: h2htalk_llm::ModelRef::parse(&format!("{provider}:{name}")).expect("a model spec"),
            config: None,
            base_url: None,
            api_key_env: None,
            batch: false,
        },
        model_id: ModelId { provider: provider.into(), name: name.into(), endpoint: "test".into() },
        model_config: None,
        settings: GenerationSettings::default(),
        prices: Some(Prices::default()),
        max_cost_usd: None,
        batch_price_factor: None,
        scoring: ScoringSpec {
            profile: Profile::Strict,
            signature: lexical_signature(Profile::Strict),
            metrics: MetricSet::Lexical,
            models: MetricModels::default(),
        },
        redact: false,
        judge: None,
        panel: vec![],
        judge_validity: None,
        simulation: None,
        memory: None,
        sample: 0,
    }
}

/// Whether a golden file may be rewritten: only when `var` is set to exactly `1`, and never under
/// `CI=true` (where it fails the test: a CI run checks goldens, it does not make them). Any other
/// value of `var` is refused, so that a stray setting cannot rewrite and pass.
pub fn rewrite_goldens(var: &str) -> bool {
    let Some(value) = std::env::var_os(var) else { return false };
    assert!(value == "1", "{var}={value:?}: set {var}=1 to rewrite the goldens, or unset it");
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "{var}=1 under CI=true: CI checks goldens, never writes them"
    );
    true
}

/// A part of a test this machine gives no means to cover (a privilege it lacks, a CPU feature it
/// does not have): said loudly, and not a failure, under CI too: there is nothing the code could
/// be doing wrong here. The test still checks everything else.
pub fn not_covered(what: &str) {
    eprintln!("\n!!! NOT COVERED on this machine: {what} !!!\n");
}

/// A test that cannot run here (a model the registry cannot deliver):
/// outside CI it returns after a loud message and the test passes without checking anything;
/// under `CI=true` nothing may skip, so it fails the test with the reason.
pub fn skip(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and this test would skip: {reason}");
    }
    let bar = "!".repeat(100);
    eprintln!("\n{bar}\n!!! SKIPPED: {reason}\n{bar}\n");
}

/// A stored simulation for tests that write simulations directly: conversation `idx` of `profile`,
/// with the user's reported states per session (one turn per state), facts `(id, distance, asked,
/// recalled)`, and the needs' outcome (`Some((hidden met, changed met))` when judged, else
/// `not_reached`).
pub fn simulation(
    idx: usize,
    profile: &str,
    outcome: h2htalk_store::SimulationOutcome,
    states: &[&[u8]],
    facts: &[(&str, Option<&str>, bool, Option<bool>)],
    needs: Option<(bool, bool)>,
) -> h2htalk_store::Simulation {
    use h2htalk_data::suite::profiles::Distance;
    use h2htalk_store::{NeedsOutcome, SimulatedFact, SimulatedSession, SimulatedTurn};
    h2htalk_store::Simulation {
        idx,
        profile: profile.into(),
        seed: idx as u64,
        companion: "openai:m".into(),
        simulator: "openai:sim".into(),
        judge: Some("openai:judge".into()),
        outcome,
        error: None,
        created_at: "2026-01-01T00:00:00Z".into(),
        settings: None,
        facts: facts
            .iter()
            .map(|(id, distance, asked, recalled)| SimulatedFact {
                id: id.to_string(),
                distance: distance.map(|d| Distance::parse(d).expect("a distance")),
                asked: *asked,
                recalled: *recalled,
                in_memory: None,
            })
            .collect(),
        needs: if needs.is_some() { NeedsOutcome::Judged } else { NeedsOutcome::NotReached },
        hidden_need_met: needs.map(|n| n.0),
        changed_need_met: needs.map(|n| n.1),
        needs_reason: None,
        memory_format_failures: 0,
        simulator_role_breaks: Some(0),
        companion_role_breaks: Some(0),
        sessions: states
            .iter()
            .enumerate()
            .map(|(s, turns)| SimulatedSession {
                session: s + 1,
                turns: turns
                    .iter()
                    .map(|&state| SimulatedTurn {
                        user: "u".into(),
                        state,
                        companion: Some("c".into()),
                        companion_role_break: None,
                    })
                    .collect(),
                memories_shown: vec![],
                memory_answer: None,
                memory_error: None,
            })
            .collect(),
    }
}
