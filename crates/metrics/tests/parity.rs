//! Parity with the official evaluator's lexical metrics (Python jieba 0.42.1 + nltk 3.10), to 1e-9
//! per pair, on every official reference (two pairings, 9,178 pairs) and on our edge cases.
//! Golden values: `tests/golden/`, written by `scripts/make-goldens.sh`.

use h2htalk_data::{Task, load_references};
use h2htalk_metrics::text::python_strip as strip;
use h2htalk_metrics::{Lexical, Outcome, Profile, Tokenizer, score_pair};
use serde_json::Value;
use sha2::{Digest, Sha256};

use h2htalk_testkit as support;

use support::{golden, reference_dir};

const TOLERANCE: f64 = 1e-9;

fn token_hash(tokens: &[&str]) -> u64 {
    let digest = Sha256::digest(tokens.join("\u{1f}").as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    u64::from_str_radix(&hex, 16).unwrap()
}

/// Compares an outcome with a golden entry (`null` = dropped, else seven numbers); returns a
/// description of the first difference.
fn compare(outcome: Outcome, want: &Value) -> Option<String> {
    match (outcome, want) {
        (Outcome::Dropped(_), Value::Null) => None,
        (Outcome::Scored(got), Value::Array(want)) => {
            for ((name, g), w) in Lexical::NAMES.iter().zip(got.values()).zip(want) {
                let w = w.as_f64().unwrap();
                if (g - w).abs() > TOLERANCE {
                    return Some(format!("{name}: got {g:.17}, want {w:.17}"));
                }
            }
            None
        }
        (got, want) => Some(format!("got {got:?}, want {want}")),
    }
}

#[test]
fn every_official_reference_tokenizes_and_scores_as_python() {
    let dir = reference_dir();
    let refs = load_references(&dir).unwrap_or_else(|e| {
        panic!("the official references are needed here (set H2HTALK_REFERENCES to their directory): {e}")
    });
    let golden = golden("lexical_official.json");
    let tokenizer = Tokenizer::global();
    let (mut pairs, mut texts, mut failures) = (0, 0, Vec::new());
    for task in Task::ALL {
        let g = &golden["tasks"][task.stem()];
        let texts_of_task = refs.texts(task);
        let n = texts_of_task.len();
        assert_eq!(g["count"].as_u64().unwrap() as usize, n, "{task}: reference count");
        for (i, text) in texts_of_task.iter().enumerate() {
            let tokens = tokenizer.tokenize(strip(text));
            texts += 1;
            let (want_len, want_hash) =
                (g["token_counts"][i].as_u64().unwrap(), g["token_hashes"][i].as_u64().unwrap());
            if tokens.len() as u64 != want_len || token_hash(&tokens) != want_hash {
                failures.push(format!("{task}:{}: tokens differ ({} vs {want_len} tokens)", i + 1, tokens.len()));
            }
        }
        for offset in golden["offsets"].as_array().unwrap() {
            let offset = offset.as_u64().unwrap() as usize;
            for i in 0..n {
                let outcome =
                    score_pair(tokenizer, Profile::Paper, &texts_of_task[(i + offset) % n], &texts_of_task[i]);
                pairs += 1;
                if let Some(diff) = compare(outcome, &g[format!("offset_{offset}")][i]) {
                    failures.push(format!("{task}:{} (offset {offset}): {diff}", i + 1));
                }
            }
        }
    }
    println!("parity: {texts} reference texts tokenized, {pairs} pairs scored, {} differences", failures.len());
    assert!(
        failures.is_empty(),
        "{} differences, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    assert_eq!((texts, pairs), (4589, 9178));
}

#[test]
fn edge_cases_tokenize_and_score_as_python() {
    let golden = golden("lexical_edge_cases.json");
    let tokenizer = Tokenizer::global();
    let cases = golden["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let (pred, reference) = (case["prediction"].as_str().unwrap(), case["reference"].as_str().unwrap());
        for (text, key) in [(pred, "prediction_tokens"), (reference, "reference_tokens")] {
            let got = tokenizer.tokenize(strip(text));
            let want: Vec<&str> = case[key].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
            if got != want {
                failures.push(format!("{name}: {key}:\n  got  {got:?}\n  want {want:?}"));
            }
        }
        if let Some(diff) = compare(score_pair(tokenizer, Profile::Paper, pred, reference), &case["scores"]) {
            failures.push(format!("{name}: {diff}"));
        }
    }
    println!("parity: {} edge cases", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases.len() >= 25);
}
