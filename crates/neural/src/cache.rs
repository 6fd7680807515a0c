//! An on-disk cache of encodings of the references: a second run over the same references
//! (shared by every model under test) reads their token vectors and pooled vectors instead of
//! encoding them again. Runs and sweeps keep it beside their store unless told not to
//! (`--no-encoding-cache`); `h2htalk score` uses it when `$H2HTALK_NEURAL_CACHE` names a
//! directory. [`prune`] bounds its size on disk, the entries read or written longest ago going
//! first.
//!
//! One file per (model fingerprint, what was kept, text): `DIR/<fingerprint>/<kind>/<sha256 of
//! the text>.bin`, where kind is `tokens-L<layer>` (the unit token vectors after that layer) or
//! `pooled` (the mean-pooled last layer). Each file holds the text's token ids, which must equal
//! the ids the tokenizer gives now, and whether the text was cut at the token limit. Files are
//! written to a temporary name and renamed, so that a crash leaves no half-written entry. A file
//! that cannot be read or does not fit its text is an error naming it, never a silent miss.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{NeuralError, Result};

const MAGIC: &[u8; 8] = b"H2HENC01";

/// What one cache entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Unit token vectors after this layer, f32.
    Tokens(usize),
    /// The mean-pooled last layer, f64.
    Pooled,
}

/// A cached encoding of one text.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    Tokens(Vec<f32>),
    Pooled(Vec<f64>),
}

/// The cache directory of one model.
pub struct EncodingCache {
    dir: PathBuf,
}

/// The environment variable that turns the cache on.
pub const CACHE_ENV: &str = "H2HTALK_NEURAL_CACHE";

impl EncodingCache {
    /// The cache under `root` for the model with `fingerprint`.
    pub fn new(root: &Path, fingerprint: &str) -> EncodingCache {
        EncodingCache { dir: root.join(fingerprint) }
    }

    fn path(&self, kind: Kind, text: &str) -> PathBuf {
        let kind = match kind {
            Kind::Tokens(layer) => format!("tokens-L{layer}"),
            Kind::Pooled => "pooled".to_string(),
        };
        let hash: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(kind).join(format!("{hash}.bin"))
    }

    /// The entry of `text`, if there is one. `ids` are the text's token ids now; `dim` the length
    /// of each vector. Returns the entry and whether the text was cut at the token limit.
    pub fn get(&self, kind: Kind, text: &str, ids: &[u32], dim: usize) -> Result<Option<(Entry, bool)>> {
        let path = self.path(kind, text);
        let bytes = match std::fs::read(&path) {
            Ok(b) => {
                // Read now: the last to go when the cache is pruned.
                if let Ok(f) = std::fs::File::options().append(true).open(&path) {
                    let _ = f.set_modified(std::time::SystemTime::now());
                }
                b
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(NeuralError::io(&path, e)),
        };
        let bad = |what: &str| {
            NeuralError::malformed(
                &path,
                format!(
                    "a broken encoding-cache entry ({what}); delete the cache directory {} (${CACHE_ENV}) and run again",
                    self.dir.display()
                ),
            )
        };
        let values = match kind {
            Kind::Tokens(_) => ids.len() * dim,
            Kind::Pooled => dim,
        };
        let width = if kind == Kind::Pooled { 8 } else { 4 };
        let want = MAGIC.len() + 1 + 4 + 4 * ids.len() + width * values;
        if bytes.len() != want || &bytes[..MAGIC.len()] != MAGIC {
            return Err(bad(&format!("{} bytes, expected {want} with the header {MAGIC:?}", bytes.len())));
        }
        let mut at = MAGIC.len();
        let truncated = match bytes[at] {
            0 => false,
            1 => true,
            _ => return Err(bad("the truncation flag is neither 0 nor 1")),
        };
        at += 1;
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if word(at) as usize != ids.len() {
            return Err(bad("its token count differs from the tokenizer's"));
        }
        at += 4;
        if (0..ids.len()).any(|i| word(at + 4 * i) != ids[i]) {
            return Err(bad("its token ids differ from the tokenizer's"));
        }
        at += 4 * ids.len();
        let body = &bytes[at..];
        let entry = match kind {
            Kind::Tokens(_) => Entry::Tokens(
                body.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect(),
            ),
            Kind::Pooled => Entry::Pooled(
                body.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
            ),
        };
        Ok(Some((entry, truncated)))
    }

    /// Stores the entry of `text` (ids and truncation flag as [`EncodingCache::get`] checks them).
    pub fn put(&self, kind: Kind, text: &str, ids: &[u32], truncated: bool, entry: &Entry) -> Result<()> {
        let path = self.path(kind, text);
        let dir = path.parent().expect("the entry is in a directory");
        std::fs::create_dir_all(dir).map_err(|e| NeuralError::io(dir, e))?;
        let mut bytes = Vec::with_capacity(MAGIC.len() + 5 + 4 * ids.len());
        bytes.extend_from_slice(MAGIC);
        bytes.push(truncated as u8);
        bytes.extend_from_slice(&(ids.len() as u32).to_le_bytes());
        for id in ids {
            bytes.extend_from_slice(&id.to_le_bytes());
        }
        match entry {
            Entry::Tokens(v) => v.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
            Entry::Pooled(v) => v.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        }
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| NeuralError::io(dir, e))?;
        file.write_all(&bytes).map_err(|e| NeuralError::io(file.path(), e))?;
        file.persist(&path).map_err(|e| NeuralError::io(&path, e.error))?;
        Ok(())
    }
}

/// What [`prune`] found and removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Entries and bytes in the cache before.
    pub entries: usize,
    pub bytes: u64,
    /// Entries and bytes removed.
    pub removed: usize,
    pub removed_bytes: u64,
}

/// Removes the entries of the cache under `root` read or written longest ago until it holds at
/// most `max_bytes` (and leftovers of writes a crash interrupted, which are never entries). A
/// removed entry is encoded again when needed: pruning never changes a score.
pub fn prune(root: &Path, max_bytes: u64) -> Result<Pruned> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(NeuralError::io(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| NeuralError::io(&dir, e))?;
            let meta = entry.metadata().map_err(|e| NeuralError::io(&entry.path(), e))?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                files.push((modified, meta.len(), entry.path()));
            }
        }
    }
    let mut out = Pruned { entries: files.len(), bytes: files.iter().map(|f| f.1).sum(), ..Pruned::default() };
    let mut remove = |path: &Path, len: u64| -> Result<()> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(NeuralError::io(path, e)),
        }
        out.removed += 1;
        out.removed_bytes += len;
        Ok(())
    };
    // A write still under way in another process is younger than an hour: left alone.
    let stale = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let (entries, leftovers): (Vec<_>, Vec<_>) =
        files.into_iter().partition(|(_, _, path)| path.extension().is_some_and(|e| e == "bin"));
    for (modified, len, path) in &leftovers {
        if *modified < stale {
            remove(path, *len)?;
        }
    }
    let mut entries = entries;
    entries.sort();
    let mut kept: u64 = entries.iter().map(|f| f.1).sum();
    for (_, len, path) in &entries {
        if kept <= max_bytes {
            break;
        }
        remove(path, *len)?;
        kept -= len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_are_checked_against_the_tokens() {
        let root = tempfile::tempdir().unwrap();
        let cache = EncodingCache::new(root.path(), "abc123");
        let ids = [101, 7, 102];
        assert_eq!(cache.get(Kind::Tokens(4), "text", &ids, 2).unwrap(), None);
        let tokens = Entry::Tokens(vec![0.5, -0.25, 1.0, 0.0, 0.125, 3.0]);
        cache.put(Kind::Tokens(4), "text", &ids, true, &tokens).unwrap();
        assert_eq!(cache.get(Kind::Tokens(4), "text", &ids, 2).unwrap(), Some((tokens, true)));
        // Another layer, another kind, another text: misses.
        assert_eq!(cache.get(Kind::Tokens(3), "text", &ids, 2).unwrap(), None);
        assert_eq!(cache.get(Kind::Pooled, "text", &ids, 2).unwrap(), None);
        assert_eq!(cache.get(Kind::Tokens(4), "other", &ids, 2).unwrap(), None);
        let pooled = Entry::Pooled(vec![0.1, 0.2]);
        cache.put(Kind::Pooled, "text", &ids, false, &pooled).unwrap();
        assert_eq!(cache.get(Kind::Pooled, "text", &ids, 2).unwrap(), Some((pooled, false)));
        // Tokens that differ from the stored ones, and a cut file, are errors naming the file.
        let err = cache.get(Kind::Tokens(4), "text", &[101, 8, 102], 2).unwrap_err().to_string();
        assert!(err.contains("token ids differ") && err.contains(".bin"), "{err}");
        let path = cache.path(Kind::Pooled, "text");
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let err = cache.get(Kind::Pooled, "text", &ids, 2).unwrap_err().to_string();
        assert!(err.contains("broken encoding-cache entry") && err.contains(&path.display().to_string()), "{err}");
    }

    #[test]
    fn pruning_removes_the_entries_used_longest_ago() {
        let root = tempfile::tempdir().unwrap();
        let cache = EncodingCache::new(root.path(), "abc123");
        let ids = [101, 7, 102];
        let entry = Entry::Pooled(vec![0.5; 16]);
        for t in ["a", "b", "c"] {
            cache.put(Kind::Pooled, t, &ids, false, &entry).unwrap();
        }
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for (t, age) in [("a", 3), ("b", 1), ("c", 2)] {
            let f = std::fs::File::options().append(true).open(cache.path(Kind::Pooled, t)).unwrap();
            f.set_modified(old - std::time::Duration::from_secs(age)).unwrap();
        }
        // Reading `a` makes it the newest.
        assert!(cache.get(Kind::Pooled, "a", &ids, 16).unwrap().is_some());
        let one = std::fs::metadata(cache.path(Kind::Pooled, "a")).unwrap().len();
        let leftover = cache.dir.join("pooled").join(".tmpXYZ");
        std::fs::write(&leftover, b"half").unwrap();
        std::fs::File::options().append(true).open(&leftover).unwrap().set_modified(old).unwrap();
        let pruned = prune(root.path(), 2 * one).unwrap();
        assert_eq!((pruned.entries, pruned.removed), (4, 2), "{pruned:?}");
        assert_eq!(pruned.bytes, 3 * one + 4);
        assert!(cache.get(Kind::Pooled, "c", &ids, 16).unwrap().is_none(), "the oldest went first");
        assert!(cache.get(Kind::Pooled, "a", &ids, 16).unwrap().is_some());
        assert!(cache.get(Kind::Pooled, "b", &ids, 16).unwrap().is_some());
        assert!(!cache.dir.join("pooled").join(".tmpXYZ").exists(), "a leftover write goes");
        assert_eq!(prune(root.path(), 2 * one).unwrap().removed, 0);
        assert_eq!(prune(&root.path().join("missing"), 0).unwrap(), Pruned::default());
    }
}
