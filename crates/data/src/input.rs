//! Reading a file h2htalk was given, bounded and honest: it must be a regular file once links are
//! followed (not a directory, a device such as `/dev/zero`, a pipe or a socket), and it may hold at
//! most [`MAX_FILE_BYTES`]; a JSON Lines line may hold at most [`MAX_LINE_BYTES`]. Anything else is
//! an error naming the file (and the line), never a hang or an unbounded read.

use std::io::Read;
use std::path::Path;

use crate::{DataError, Result};

/// The largest file h2htalk reads: 256 MiB (the official references are 0.9 MB in all).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The longest JSON Lines line: 1 MiB (the longest official reference line is under 4 KiB).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Reads `path` whole, if it is a regular file of at most `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|e| DataError::io(path, e))?;
    if meta.is_dir() {
        return Err(DataError::file(path, "is a directory, expected a file"));
    }
    if !meta.is_file() {
        return Err(DataError::file(
            path,
            "is not a regular file (a device, pipe or socket, or a link to one); give the path of a file",
        ));
    }
    let too_big = |n: u64| {
        DataError::file(path, format!("is {n} bytes, more than the {limit} bytes h2htalk reads from one file"))
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow while it is read: never read past the limit.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| DataError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bounded`] at [`MAX_FILE_BYTES`].
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    read_bounded(path, MAX_FILE_BYTES)
}

/// [`read_file`] as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String> {
    String::from_utf8(read_file(path)?)
        .map_err(|e| DataError::file(path, format!("is not UTF-8 (at byte {}); save it as UTF-8", e.utf8_error().valid_up_to())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_large_files_are_refused() {
        let e = read_file(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("/dev/zero") && e.contains("not a regular file"), "{e}");
        let dir = tempfile::TempDir::new().unwrap();
        let link = dir.path().join("preds.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(read_file(&link).unwrap_err().to_string().contains("not a regular file"));
        assert!(read_file(dir.path()).unwrap_err().to_string().contains("is a directory"));
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'a'; 101]).unwrap();
        let e = read_bounded(&big, 100).unwrap_err().to_string();
        assert!(e.contains("101 bytes") && e.contains("100 bytes"), "{e}");
        assert_eq!(read_bounded(&big, 101).unwrap().len(), 101);
    }
}
