//! Writing result files whole or not at all.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Writes `bytes` to `path` through a temporary file in the same directory, so that a failure
/// leaves no partial file behind.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("{}: cannot create a file in this directory", dir.display()))?;
    tmp.write_all(bytes).with_context(|| format!("{}: cannot write", path.display()))?;
    tmp.persist(path).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
}
