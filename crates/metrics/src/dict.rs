//! jieba's dictionary as a character trie prepared at build time (`build.rs`), read in place from
//! static bytes: nothing is parsed or allocated when a process starts.
//!
//! The root's transitions for BMP characters are a directly indexed table; every other transition
//! is a slot of an open-addressing table keyed by `(parent, char)`. Each transition says whether the
//! child has children of its own, so a walk stops at a leaf without probing.

// `WORDS` and `NODES` document the tables (and `NODES` checks them in the tests).
#[allow(dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/jieba_dict.rs"));
}

pub use generated::TOTAL;

static ROOT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jieba_root.bin"));
static SLOTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jieba_slots.bin"));
static LOG_FREQ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jieba_logfreq.bin"));

const CHAR_BITS: u32 = 21;
const KEY_BITS: u32 = 41;
const KEY_MASK: u64 = (1 << KEY_BITS) - 1;
const ID_MASK: u64 = (1 << 20) - 1;
const HAS_CHILDREN_SLOT: u64 = 1 << 61;
const HAS_CHILDREN_ROOT: u32 = 1 << 31;
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// A trie node: a prefix of at least one dictionary word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    id: u32,
    has_children: bool,
}

impl Node {
    pub fn has_children(self) -> bool {
        self.has_children
    }
}

#[inline(always)]
fn root_entry(c: char) -> u32 {
    let i = c as usize * 4;
    u32::from_le_bytes([ROOT[i], ROOT[i + 1], ROOT[i + 2], ROOT[i + 3]])
}

#[inline(always)]
fn slot(i: usize) -> u64 {
    let s = &SLOTS[i * 8..i * 8 + 8];
    u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
}

/// The node reached from `parent` (`None`: the root) by `c`, if the dictionary has that prefix.
#[inline]
pub fn step(parent: Option<Node>, c: char) -> Option<Node> {
    let parent_id = match parent {
        None if (c as u32) < 0x1_0000 => {
            let e = root_entry(c);
            return (e != 0).then_some(Node { id: e & !HAS_CHILDREN_ROOT, has_children: e & HAS_CHILDREN_ROOT != 0 });
        }
        None => 0,
        Some(p) if !p.has_children => return None,
        Some(p) => p.id,
    };
    let key = ((parent_id as u64) << CHAR_BITS) | c as u64;
    let slots = generated::SLOTS;
    let mut i = ((key.wrapping_mul(MULTIPLIER) as u128 * slots as u128) >> 64) as usize;
    loop {
        let s = slot(i);
        if s == 0 {
            return None;
        }
        if s & KEY_MASK == key {
            return Some(Node { id: ((s >> KEY_BITS) & ID_MASK) as u32, has_children: s & HAS_CHILDREN_SLOT != 0 });
        }
        i = if i + 1 == slots { 0 } else { i + 1 };
    }
}

/// `ln(freq)` of the word that ends at `node`, or `None` if it is only a prefix.
#[inline]
pub fn log_freq(node: Node) -> Option<f64> {
    let i = node.id as usize * 8;
    let b = &LOG_FREQ[i..i + 8];
    let v = f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    (!v.is_nan()).then_some(v)
}

/// Whether `word` is a dictionary word (of frequency above 0).
pub fn has_word(word: &str) -> bool {
    let mut node = None;
    for c in word.chars() {
        match step(node, c) {
            Some(n) => node = Some(n),
            None => return false,
        }
    }
    node.is_some_and(|n| log_freq(n).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_the_sizes_the_build_wrote() {
        assert_eq!(ROOT.len(), 0x1_0000 * 4);
        assert_eq!(SLOTS.len(), generated::SLOTS * 8);
        assert_eq!(LOG_FREQ.len(), generated::NODES * 8);
    }

    #[test]
    fn words_prefixes_and_strangers() {
        assert!(has_word("我们"));
        assert!(has_word("的"));
        assert!(has_word("B超"));
        assert!(!has_word("我们的们"));
        assert!(!has_word(""));
        assert!(log_freq(step(None, '的').unwrap()).unwrap() > 10.0);
    }
}
