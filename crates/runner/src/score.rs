//! Scoring pairs: the one function that `h2htalk score` and a run's scoring phase both call, so the
//! two cannot disagree. Lexical metrics for every pair (in parallel), and with a neural setup
//! BERTScore (P, R, F1), embedding similarity and the paper's composite.

use std::collections::{BTreeMap, HashSet};

use h2htalk_metrics::{Lexical, Outcome, Profile, Tokenizer, composite, lexical_signature, score_pair};
use h2htalk_neural::{NeuralScores, NeuralSetup};
use h2htalk_store::{GenerationStatus, Score, ScoreOutcome, Store};
use rayon::prelude::*;

use crate::{Result, RunError};

/// One pair's scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairScore {
    pub outcome: Outcome,
    /// BERTScore and embedding similarity, for every pair the profile scores, when asked for.
    pub neural: Option<NeuralScores>,
}

impl PairScore {
    /// The pair's metric values by name: the lexical metrics, and with the neural ones the
    /// composite; empty when the pair was dropped.
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        if let Some(s) = self.outcome.scores() {
            out.extend(Lexical::NAMES.iter().zip(s.values()).map(|(n, v)| (n.to_string(), v)));
            if let Some(n) = self.neural {
                out.extend(NeuralScores::NAMES.iter().zip(n.values()).map(|(k, v)| (k.to_string(), v)));
                out.insert("composite".into(), composite(&s, n.bertscore, n.embedding));
            }
        }
        out
    }

    pub fn score_outcome(&self) -> ScoreOutcome {
        match self.outcome {
            Outcome::Scored(_) => ScoreOutcome::Scored,
            Outcome::EmptyPrediction => ScoreOutcome::EmptyPrediction,
            Outcome::Dropped(_) => ScoreOutcome::Dropped,
        }
    }
}

/// Scores of many pairs and how they were computed.
#[derive(Clone, Debug)]
pub struct Scored {
    pub pairs: Vec<PairScore>,
    /// The lexical signature, and the neural one after `|` when neural metrics were computed.
    pub signature: String,
    /// The neural part of the signature alone.
    pub neural_signature: Option<String>,
}

/// The signature of scores computed under `profile`: the lexical metrics' (when computed), then the
/// neural metrics' (`neural`, when computed), joined by `|`. `h2htalk score` and a run both sign
/// with it.
pub fn signature(profile: Profile, lexical: bool, neural: Option<&str>) -> String {
    match (lexical, neural) {
        (true, None) => lexical_signature(profile),
        (true, Some(n)) => format!("{}|{n}", lexical_signature(profile)),
        (false, Some(n)) => format!("profile:{}|{n}|h2htalk:{}", profile.name(), h2htalk_metrics::VERSION),
        (false, None) => format!("profile:{}|h2htalk:{}", profile.name(), h2htalk_metrics::VERSION),
    }
}

/// Scores `(prediction, reference)` pairs under `profile`.
pub fn score_pairs(profile: Profile, pairs: &[(&str, &str)], neural: Option<&NeuralSetup>) -> Result<Scored> {
    let tokenizer = Tokenizer::global();
    let lexical: Vec<Outcome> = pairs.par_iter().map(|&(p, r)| score_pair(tokenizer, profile, p, r)).collect();
    let Some(setup) = neural else {
        let pairs = lexical.into_iter().map(|outcome| PairScore { outcome, neural: None }).collect();
        return Ok(Scored { pairs, signature: signature(profile, true, None), neural_signature: None });
    };
    let run = setup.score_pairs(profile, pairs).map_err(RunError::Neural)?;
    let neural_signature = setup.signature(&run);
    let pairs = lexical
        .into_iter()
        .zip(run.scores)
        .map(|(outcome, neural)| {
            assert_eq!(outcome.scores().is_some(), neural.is_some(), "the lexical and neural drop rules agree");
            PairScore { outcome, neural }
        })
        .collect();
    Ok(Scored {
        pairs,
        signature: signature(profile, true, Some(&neural_signature)),
        neural_signature: Some(neural_signature),
    })
}

/// Scores every generated item of a run that has no score yet; each score row carries the
/// signature of how it was computed, ending in the suite it was scored on (`|suite:NAME@FINGERPRINT`,
/// see `SuiteRef::label`). Returns how many items were scored.
pub fn score_run(
    store: &mut Store,
    run_id: &str,
    profile: Profile,
    neural: Option<&NeuralSetup>,
    suite: &str,
) -> Result<usize> {
    let records = store.records(run_id)?;
    let scored: HashSet<&str> =
        records.iter().filter(|r| r.score.is_some()).map(|r| r.item.scenario_id.as_str()).collect();
    let todo: Vec<(&str, &str, &str)> = records
        .iter()
        .filter(|r| !scored.contains(r.item.scenario_id.as_str()))
        .filter_map(|r| match &r.generation {
            Some(g) if g.status == GenerationStatus::Generated => {
                Some((r.item.scenario_id.as_str(), g.text.as_deref().unwrap_or_default(), r.item.reference.as_str()))
            }
            _ => None,
        })
        .collect();
    let pairs: Vec<(&str, &str)> = todo.iter().map(|&(_, p, r)| (p, r)).collect();
    let result = score_pairs(profile, &pairs, neural)?;
    let rows: Vec<Score> = todo
        .iter()
        .zip(&result.pairs)
        .map(|(&(id, _, _), s)| Score {
            scenario_id: id.to_string(),
            outcome: s.score_outcome(),
            metrics: s.metrics(),
            signature: format!("{}|suite:{suite}", result.signature),
        })
        .collect();
    store.put_scores(run_id, &rows)?;
    Ok(rows.len())
}
