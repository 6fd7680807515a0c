//! Property tests of the tokenizer and the lexical scorer: no panic on any text, tokens that
//! put back together give the text, and every score a finite number in [0, 1].

use std::sync::atomic::{AtomicUsize, Ordering};

use h2htalk_metrics::text::python_strip;
use h2htalk_metrics::{Lexical, Outcome, Profile, Tokenizer, score_pair};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};

/// Text mixing Chinese, ASCII words and numbers, punctuation of both widths, whitespace of every
/// kind, emoji, combining marks, CJK extensions and control characters, or anything at all.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("我今天很开心".to_string()),
        Just("（轻轻点头）".to_string()),
        Just("Wi-Fi v2.0.1 3.5% C++ a_b".to_string()),
        Just("\r\n".to_string()),
        Just("\u{3000}\t \u{a0}".to_string()),
        Just("😀👍🏽".to_string()),
        Just("e\u{301}".to_string()),
        Just("\u{9fd6}\u{20000}\u{2a700}".to_string()),
        Just("\u{1}\u{0}".to_string()),
        Just("B超".to_string()),
        "[\u{4e00}-\u{9fa5}]{1,8}",
        "[a-zA-Z0-9+#&._%-]{1,8}",
        "[，。！？、；：“”‘’（）…—]{1,3}",
        any::<String>(),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

/// A runner whose failing inputs are saved in the repository (tests/proptest-regressions), and
/// run again first on every later run, so that a failure found once is reproduced every time.
fn runner(cases: u32) -> TestRunner {
    let saved = FileFailurePersistence::Direct(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proptest-regressions/properties.txt"));
    TestRunner::new(Config {
        cases,
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(saved)),
        ..Config::default()
    })
}

#[test]
fn tokens_never_panic_and_put_back_together_give_the_text() {
    let tokenizer = Tokenizer::global();
    let tried = AtomicUsize::new(0);
    runner(3000)
        .run(&text(), |t| {
            tried.fetch_add(1, Ordering::Relaxed);
            let tokens = tokenizer.tokenize(&t);
            prop_assert_eq!(tokens.concat(), t.clone());
            prop_assert!(tokens.iter().all(|x| !x.is_empty()));
            Ok(())
        })
        .unwrap();
    eprintln!("tokenizer: {} arbitrary texts, no panic, tokens rejoin to the text", tried.into_inner());
}

#[test]
fn scores_are_finite_and_in_range_for_any_pair() {
    let tokenizer = Tokenizer::global();
    let tried = AtomicUsize::new(0);
    runner(2000)
        .run(&(text(), text(), any::<bool>()), |(prediction, reference, strict)| {
            tried.fetch_add(1, Ordering::Relaxed);
            let profile = if strict { Profile::Strict } else { Profile::Paper };
            let outcome = score_pair(tokenizer, profile, &prediction, &reference);
            if let Some(s) = outcome.scores() {
                for v in s.values() {
                    prop_assert!(
                        v.is_finite() && (0.0..=1.0 + 1e-12).contains(&v),
                        "{v} for {prediction:?} / {reference:?}"
                    );
                }
            }
            if let Outcome::Scored(s) = &outcome {
                // The same pair scores the same (no hidden state): the scorer strips both texts as
                // the official evaluator does, then scores their tokens.
                let again = Lexical::of_texts(tokenizer, python_strip(&prediction), python_strip(&reference));
                prop_assert_eq!(s.values().map(f64::to_bits), again.values().map(f64::to_bits));
            }
            Ok(())
        })
        .unwrap();
    eprintln!(
        "lexical scorer: {} arbitrary pairs under both profiles, no panic, every score finite in [0, 1]",
        tried.into_inner()
    );
}
