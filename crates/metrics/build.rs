//! Prepares jieba's dictionary at build time, so that no process builds it at start-up.
//!
//! The dictionary is jieba-rs's copy of Python jieba's `dict.txt` (349,045 words), read from the
//! jieba-rs package this build uses. It becomes a character trie in three little-endian arrays that
//! the crate includes as static bytes (see `src/dict.rs` for the layout and the walk):
//!
//! - `jieba_root.bin`: `u32` per BMP character, the root's child (node id, bit 31: it has children);
//! - `jieba_slots.bin`: `u64` per slot of an open-addressing table of the other transitions:
//!   bits 0..41 the key `parent << 21 | char` (0: empty slot), 41..61 the child, bit 61 it has children;
//! - `jieba_logfreq.bin`: `f64` per node, `ln(freq)` of the word that ends there, NaN for a prefix only.
//!
//! and `jieba_dict.rs`, their sizes and the frequency total.

use std::collections::HashMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The dictionary Python jieba 0.42.1 ships, less its one duplicate line (`B超 3`), which jieba-rs's
/// copy does not have: the word count and frequency total pin it.
const WORDS: usize = 349_045;
const TOTAL: u64 = 60_101_964;

const CHAR_BITS: u32 = 21;
const KEY_BITS: u32 = 41;
const ID_BITS: u32 = 20;
const HAS_CHILDREN_SLOT: u64 = 1 << 61;
const HAS_CHILDREN_ROOT: u32 = 1 << 31;
pub const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=H2HTALK_JIEBA_DICT");
    let dict = find_dict();
    println!("cargo:rerun-if-changed={}", dict.display());
    let text = fs::read_to_string(&dict).unwrap_or_else(|e| panic!("{}: {e}", dict.display()));

    // The trie: node 0 is the root.
    let mut log_freq: Vec<f64> = vec![f64::NAN];
    let mut has_children: Vec<bool> = vec![false];
    let mut edges: HashMap<(u32, char), u32> = HashMap::new();
    let (mut words, mut total) = (0usize, 0u64);
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(word) = fields.next() else { continue };
        let freq: u64 = fields.next().map_or(0, |f| f.parse().unwrap_or_else(|e| panic!("{line:?}: {e}")));
        let mut node = 0u32;
        for c in word.chars() {
            has_children[node as usize] = true;
            let next = log_freq.len() as u32;
            node = *edges.entry((node, c)).or_insert_with(|| {
                log_freq.push(f64::NAN);
                has_children.push(false);
                next
            });
        }
        assert!(log_freq[node as usize].is_nan(), "{}: `{word}` is listed twice", dict.display());
        // A word of frequency 0 is only a prefix to Python jieba (it never enters the DAG).
        if freq > 0 {
            log_freq[node as usize] = (freq as f64).ln();
        }
        words += 1;
        total += freq;
    }
    assert!(
        words == WORDS && total == TOTAL,
        "{}: {words} words with total frequency {total}; Python jieba 0.42.1's dictionary has {WORDS} and \
         {TOTAL} (one duplicate line left out). jieba-rs's copy changed: check the parity tests before \
         updating these pins.",
        dict.display()
    );
    let nodes = log_freq.len();
    assert!(nodes < 1 << ID_BITS, "{nodes} trie nodes do not fit {ID_BITS} bits");

    let mut root = vec![0u32; 0x1_0000];
    let hashed: Vec<((u32, char), u32)> = edges
        .iter()
        .filter(|&(&(parent, c), _)| parent != 0 || (c as u32) >= 0x1_0000)
        .map(|(&k, &v)| (k, v))
        .collect();
    for (&(parent, c), &child) in &edges {
        if parent == 0 && (c as u32) < 0x1_0000 {
            root[c as usize] = child | if has_children[child as usize] { HAS_CHILDREN_ROOT } else { 0 };
        }
    }
    // Load factor at most 0.7; the index is the hash scaled to the table size.
    let slot_count = hashed.len() * 10 / 7 + 1;
    let mut slots = vec![0u64; slot_count];
    let mut sorted = hashed;
    sorted.sort_unstable(); // a deterministic table, whatever the HashMap's order
    for ((parent, c), child) in sorted {
        let key = ((parent as u64) << CHAR_BITS) | c as u64;
        debug_assert!(key != 0 && key < 1 << KEY_BITS);
        let mut i = index(key, slot_count);
        while slots[i] != 0 {
            i = if i + 1 == slot_count { 0 } else { i + 1 };
        }
        slots[i] = key
            | ((child as u64) << KEY_BITS)
            | if has_children[child as usize] { HAS_CHILDREN_SLOT } else { 0 };
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    write(&out.join("jieba_root.bin"), root.iter().flat_map(|v| v.to_le_bytes()).collect());
    write(&out.join("jieba_slots.bin"), slots.iter().flat_map(|v| v.to_le_bytes()).collect());
    write(&out.join("jieba_logfreq.bin"), log_freq.iter().flat_map(|v| v.to_le_bytes()).collect());
    write(
        &out.join("jieba_dict.rs"),
        format!(
            "/// Words in the dictionary.\npub const WORDS: usize = {WORDS};\n\
             /// Sum of their frequencies (Python's total is 3 more: it counts `B超 3` twice).\n\
             pub const TOTAL: u64 = {TOTAL};\n\
             /// Trie nodes, the root included.\npub const NODES: usize = {nodes};\n\
             /// Slots of the transition table.\npub const SLOTS: usize = {slot_count};\n"
        )
        .into_bytes(),
    );
}

/// The slot a key hashes to; `src/dict.rs` computes the same.
fn index(key: u64, slots: usize) -> usize {
    ((key.wrapping_mul(MULTIPLIER) as u128 * slots as u128) >> 64) as usize
}

fn write(path: &Path, bytes: Vec<u8>) {
    // Unchanged files keep their mtime, so that the crate is not recompiled for nothing.
    if fs::read(path).ok().as_deref() != Some(&bytes[..]) {
        fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// jieba-rs's `src/data/dict.txt`: `$H2HTALK_JIEBA_DICT` if set, else the jieba-rs package of this
/// build as `cargo metadata` reports it (registry, vendored or git source alike), else the copy in
/// `$CARGO_HOME/registry/src` of the version in `Cargo.lock`.
fn find_dict() -> PathBuf {
    if let Some(path) = env::var_os("H2HTALK_JIEBA_DICT") {
        return PathBuf::from(path);
    }
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    if let Some(path) = from_cargo_metadata(&manifest_dir) {
        return path;
    }
    if let Some(path) = from_registry(&manifest_dir) {
        return path;
    }
    panic!(
        "cannot find jieba-rs's dictionary (src/data/dict.txt of the jieba-rs package); \
         set H2HTALK_JIEBA_DICT to its path"
    );
}

fn from_cargo_metadata(manifest_dir: &Path) -> Option<PathBuf> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--format-version", "1", "--offline", "--manifest-path"])
        .arg(manifest_dir.join("Cargo.toml"));
    if let Ok(target) = env::var("TARGET") {
        cmd.args(["--filter-platform", &target]);
    }
    let output = cmd.output().ok().filter(|o| o.status.success())?;
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    metadata["packages"]
        .as_array()?
        .iter()
        .filter(|p| p["name"] == "jieba-rs")
        .filter_map(|p| Path::new(p["manifest_path"].as_str()?).parent().map(|d| d.join("src/data/dict.txt")))
        .find(|p| p.is_file())
}

fn from_registry(manifest_dir: &Path) -> Option<PathBuf> {
    let lock = manifest_dir.ancestors().map(|d| d.join("Cargo.lock")).find(|p| p.is_file())?;
    let lock = fs::read_to_string(lock).ok()?;
    let version = lock.split("[[package]]").find_map(|p| {
        let mut lines = p.lines().map(str::trim);
        lines.find(|l| *l == "name = \"jieba-rs\"")?;
        lines.find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"').map(str::to_string))
    })?;
    let home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|index| index.path().join(format!("jieba-rs-{version}/src/data/dict.txt")))
        .find(|p| p.is_file())
}
