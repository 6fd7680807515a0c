//! Our suite, embedded in the binary: scenarios, safety set, personas, templates, the SAP module,
//! rules, simulator profiles, annotation, the memory suite and `suite.json` (name and floors),
//! exactly as in `suites/` when the binary was built (so its fingerprint is the same). It is the
//! default wherever a command takes `--suite DIR`; it is written out once into a cache directory to
//! be loaded like any suite, and `h2htalk suite export DIR` writes it where a user can edit it.

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use sha2::{Digest, Sha256};

use crate::error::{DataError, Result};

static PARTS: [(&str, Dir<'static>); 10] = [
    ("scenarios", include_dir!("$CARGO_MANIFEST_DIR/../../suites/scenarios")),
    ("safety", include_dir!("$CARGO_MANIFEST_DIR/../../suites/safety")),
    ("personas", include_dir!("$CARGO_MANIFEST_DIR/../../suites/personas")),
    ("templates", include_dir!("$CARGO_MANIFEST_DIR/../../suites/templates")),
    ("sap", include_dir!("$CARGO_MANIFEST_DIR/../../suites/sap")),
    ("simulator", include_dir!("$CARGO_MANIFEST_DIR/../../suites/simulator")),
    ("judge", include_dir!("$CARGO_MANIFEST_DIR/../../suites/judge")),
    ("rules", include_dir!("$CARGO_MANIFEST_DIR/../../suites/rules")),
    ("annotation", include_dir!("$CARGO_MANIFEST_DIR/../../suites/annotation")),
    ("memory", include_dir!("$CARGO_MANIFEST_DIR/../../suites/memory")),
];

static FORMAT: &str = include_str!("../../../../suites/FORMAT.md");
static CONFIG: &str = include_str!("../../../../suites/suite.json");

/// Every embedded file: its path inside the suite and its bytes, in path order.
pub fn files() -> Vec<(PathBuf, &'static [u8])> {
    fn walk(dir: &'static Dir<'static>, prefix: &Path, out: &mut Vec<(PathBuf, &'static [u8])>) {
        for f in dir.files() {
            out.push((prefix.join(f.path()), f.contents()));
        }
        for d in dir.dirs() {
            walk(d, prefix, out);
        }
    }
    let mut out = vec![(PathBuf::from("FORMAT.md"), FORMAT.as_bytes()), (PathBuf::from("suite.json"), CONFIG.as_bytes())];
    for (name, dir) in &PARTS {
        walk(dir, Path::new(name), &mut out);
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// sha256 over the embedded files' paths and contents: names the cache directory.
fn content_hash() -> String {
    let mut h = Sha256::new();
    for (path, bytes) in files() {
        h.update(path.to_string_lossy().as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    crate::official::hex(&h.finalize())[..16].to_string()
}

/// Writes the embedded suite into `dir` (created; files there of the same names are replaced).
pub fn write_to(dir: &Path) -> Result<usize> {
    let files = files();
    for (rel, bytes) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| DataError::io(parent, e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| DataError::io(&path, e))?;
    }
    Ok(files.len())
}

/// The embedded suite as a directory: written once under `$H2HTALK_HOME/suites/<hash>/` (default
/// `~/.cache/h2htalk`), then reused.
pub fn dir() -> Result<PathBuf> {
    let home = std::env::var_os("H2HTALK_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/h2htalk")))
        .unwrap_or_else(|| std::env::temp_dir().join("h2htalk"));
    let hash = content_hash();
    let target = home.join("suites").join(&hash);
    if target.join(".complete").is_file() {
        return Ok(target);
    }
    // Written beside the target and renamed into place, so a half-written copy is never used.
    let parent = home.join("suites");
    std::fs::create_dir_all(&parent).map_err(|e| DataError::io(&parent, e))?;
    let tmp = parent.join(format!(".{hash}-{}", std::process::id()));
    write_to(&tmp)?;
    std::fs::write(tmp.join(".complete"), b"").map_err(|e| DataError::io(&tmp, e))?;
    match std::fs::rename(&tmp, &target) {
        Ok(()) => Ok(target),
        // Another process put it there first.
        Err(_) if target.join(".complete").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(target)
        }
        Err(e) => Err(DataError::io(&target, e)),
    }
}

/// `dir` when given, else the embedded suite.
pub fn or_embedded(dir: Option<&Path>) -> Result<PathBuf> {
    match dir {
        Some(d) => Ok(d.to_path_buf()),
        None => self::dir(),
    }
}
