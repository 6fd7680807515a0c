//! Paths shared by the tests of several crates, which include this file with
//! `#[path = "../../../tests/support.rs"] mod support;`: the checkout's root, its golden files and
//! the official references.

#![allow(dead_code)]

use std::path::PathBuf;

/// The root of the checkout (every crate sits two levels below it).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
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
