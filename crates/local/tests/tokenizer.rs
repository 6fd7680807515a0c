//! The tokenizer built from the GGUF's metadata gives SentencePiece's ids (golden values from
//! `tests/golden/make-gemma3-tokens.sh`, SentencePiece on the same metadata).

mod common;

use h2htalk_local::tokenizer::Tokenizer;

#[test]
fn gemma3_tokens_equal_sentencepiece() {
    let Some(path) = common::default_model() else { return };
    let tokenizer = Tokenizer::from_gguf_file(&path).unwrap();
    let golden: serde_json::Value =
        serde_json::from_str(include_str!("golden/gemma3_tokens.json")).expect("golden/gemma3_tokens.json");
    let cases = golden["cases"].as_array().unwrap();
    assert!(cases.len() >= 15);
    let mut failures = Vec::new();
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
        let got = tokenizer.encode(text).unwrap();
        if got != want {
            failures.push(format!("{text:?}\n  sentencepiece {want:?}\n  ours          {got:?}"));
        }
        let decoded = tokenizer.decode(&got);
        assert_eq!(decoded, case["decoded"].as_str().unwrap(), "decode of {text:?}");
    }
    assert!(failures.is_empty(), "token ids differ from SentencePiece:\n{}", failures.join("\n"));
}

#[test]
fn gemma3_special_tokens() {
    let Some(path) = common::default_model() else { return };
    let tokenizer = Tokenizer::from_gguf_file(&path).unwrap();
    assert_eq!(tokenizer.vocab_size(), 262_144);
    assert_eq!(tokenizer.bos, Some(2));
    assert_eq!(tokenizer.eos, Some(1));
    assert_eq!(tokenizer.token_id("<start_of_turn>"), Some(105));
    assert_eq!(tokenizer.token_id("<end_of_turn>"), Some(106));
    // Typed text is never a special token.
    assert!(!tokenizer.encode("<end_of_turn>").unwrap().contains(&106));
    // Control tokens are left out of decoded text.
    assert_eq!(tokenizer.decode(&[2, 105, 9259, 106]), "Hello");
}
