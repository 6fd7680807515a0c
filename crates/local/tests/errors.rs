//! Opening a local model that is not there, not a GGUF file, or not a local spec: errors that name the
//! file and say what to do. No model is needed.

use std::io::Write;

use h2htalk_local::{LocalError, LocalModel};

fn open_err(spec: &str) -> LocalError {
    match LocalModel::open(&spec.parse().unwrap()) {
        Ok(_) => panic!("{spec} opened"),
        Err(e) => e,
    }
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.gguf");
    let err = open_err(&format!("local:{}", path.display()));
    assert!(matches!(err, LocalError::NotFound { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()) && msg.contains(".gguf"), "{msg}");
}

#[test]
fn not_a_gguf_file() {
    let mut file = tempfile::Builder::new().suffix(".gguf").tempfile().unwrap();
    file.write_all(b"{\"this\": \"is json\"}").unwrap();
    let err = open_err(&format!("local:{}", file.path().display()));
    assert!(matches!(err, LocalError::NotGguf { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&file.path().display().to_string()) && msg.contains("not a GGUF"), "{msg}");

    let empty = tempfile::Builder::new().suffix(".gguf").tempfile().unwrap();
    assert!(matches!(open_err(&format!("local:{}", empty.path().display())), LocalError::NotGguf { .. }));

    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(open_err(&format!("local:{}", dir.path().display())), LocalError::NotGguf { .. }));
}

#[test]
fn truncated_gguf_file() {
    // The magic is right, the header is not.
    let mut file = tempfile::Builder::new().suffix(".gguf").tempfile().unwrap();
    file.write_all(b"GGUF\x03\x00\x00\x00\xff").unwrap();
    let err = open_err(&format!("local:{}", file.path().display()));
    assert!(matches!(err, LocalError::NotGguf { .. }), "{err:?}");
}

#[test]
fn bad_specs() {
    // Models that are not local are refused by the engine; names that are no model at all are
    // refused when they are parsed.
    for spec in ["gemma3-270m", "openai:gpt-4o"] {
        let err = open_err(spec);
        assert!(matches!(err, LocalError::BadSpec { .. }), "{spec}: {err:?}");
        assert!(err.to_string().contains("local:gemma3-270m"), "{err}");
    }
    for spec in ["local:", ""] {
        assert!(spec.parse::<h2htalk_llm::ModelRef>().is_err(), "{spec}");
    }
}

#[test]
fn default_not_installed_says_how_to_install() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: this test binary's other tests do not read H2HTALK_MODELS.
    unsafe { std::env::set_var("H2HTALK_MODELS", dir.path()) };
    let err = open_err("local:gemma3-270m");
    unsafe { std::env::remove_var("H2HTALK_MODELS") };
    assert!(matches!(err, LocalError::NotInstalled { .. }), "{err:?}");
    assert!(err.to_string().contains("scripts/fetch-models.sh"), "{err}");
}
