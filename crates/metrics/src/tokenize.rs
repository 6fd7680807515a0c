//! Word tokens exactly as Python `jieba.cut(text)` (jieba 0.42.1, precise mode, HMM on) makes them.
//!
//! The dictionary route is computed here, as Python's `Tokenizer.__cut_DAG` does it, on a trie of
//! jieba's dictionary prepared at build time ([`crate::dict`]), so a process pays nothing to load the
//! dictionary. jieba-rs's HMM (the same model as Python's `finalseg`) cuts the runs of single
//! characters that are not a word. Where jieba-rs differs from Python, we follow Python:
//!
//! 1. **Blocks.** Python cuts only runs of `[\u4E00-\u9FD5a-zA-Z0-9+#&._%-]` with the dictionary;
//!    jieba-rs's runs also take U+9FD6..U+9FFF and the CJK extensions. We split the text into runs
//!    with Python's class ourselves, so such characters become single tokens as in Python.
//!    Outside the runs, Python yields every character on its own, keeping `\r\n` together.
//! 2. **ASCII runs inside the HMM.** Python splits a non-Chinese stretch the route left unjoined
//!    with `[a-zA-Z0-9]+(?:\.\d+)?%?`, so `Wi-Fi` is `Wi - Fi` and `v2.0.1` is `v2.0 . 1`; jieba-rs
//!    joins alphanumeric runs across `.`, `_` and `-`. We split such tokens again with Python's rule.
//! 3. **The dictionary total.** Python's `dict.txt` lists `B超 3` twice: it keeps one entry but adds
//!    its frequency to the total twice. jieba-rs's copy, which the trie is built from, lists it once,
//!    so the total here is the trie's plus 3.

use std::sync::LazyLock;

use jieba_rs::Jieba;

use crate::dict;

/// The version of Python jieba whose tokens we reproduce.
pub const PYTHON_JIEBA_VERSION: &str = "0.42.1";
/// The jieba-rs release this crate builds on (its dictionary and its HMM).
pub const JIEBA_RS_VERSION: &str = "0.11";

/// Python jieba's dictionary total (fix 3).
const PYTHON_TOTAL: u64 = dict::TOTAL + 3;

pub struct Tokenizer {
    /// jieba-rs without a dictionary: only its HMM is used.
    hmm: Jieba,
    log_total: f64,
}

static GLOBAL: LazyLock<Tokenizer> = LazyLock::new(Tokenizer::new);

impl Default for Tokenizer {
    fn default() -> Self {
        Self::new()
    }
}

/// One step of the best route from a character: where it ends and its log probability.
#[derive(Clone, Copy)]
struct Step {
    prob: f64,
    end: usize,
}

impl Tokenizer {
    /// Cheap (well under a millisecond): the dictionary is static data.
    pub fn new() -> Self {
        Tokenizer { hmm: Jieba::empty(), log_total: (PYTHON_TOTAL as f64).ln() }
    }

    /// The process-wide tokenizer.
    pub fn global() -> &'static Tokenizer {
        &GLOBAL
    }

    /// Tokens of `text`, as Python `list(jieba.cut(text))`. Whitespace and punctuation are tokens.
    pub fn tokenize<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::with_capacity(text.len() / 2);
        let mut scratch = Scratch::default();
        let mut rest = text;
        while let Some(first) = rest.chars().next() {
            let in_run = is_python_han(first);
            let end = rest.find(|c| is_python_han(c) != in_run).unwrap_or(rest.len());
            let (block, tail) = rest.split_at(end);
            if in_run {
                self.cut_run(block, &mut scratch, &mut out);
            } else {
                split_chars(block, &mut out);
            }
            rest = tail;
        }
        out
    }

    /// Python's `__cut_DAG` on one run of its class.
    fn cut_run<'a>(&self, block: &'a str, scratch: &mut Scratch, out: &mut Vec<&'a str>) {
        let Scratch { offsets, chars, route } = scratch;
        offsets.clear();
        chars.clear();
        for (i, c) in block.char_indices() {
            offsets.push(i);
            chars.push(c);
        }
        offsets.push(block.len());
        let n = chars.len();
        let log_total = self.log_total;
        route.clear();
        route.resize(n + 1, Step { prob: 0.0, end: n });
        for idx in (0..n).rev() {
            // Python: max((log(FREQ.get(frag) or 1) - logtotal + route[x + 1][0], x) for x in DAG[idx]),
            // where DAG[idx] holds the ends of the words starting at idx, or idx alone if none does.
            let mut best: Option<Step> = None;
            let mut node = None;
            let mut end = idx;
            while end < n {
                let Some(next) = dict::step(node, chars[end]) else { break };
                end += 1;
                if let Some(log_freq) = dict::log_freq(next) {
                    let prob = log_freq - log_total + route[end].prob;
                    // Ends come in increasing order: a tie goes to the longer word, as in Python.
                    if best.is_none_or(|b| prob >= b.prob) {
                        best = Some(Step { prob, end });
                    }
                }
                if !next.has_children() {
                    break;
                }
                node = Some(next);
            }
            route[idx] = best.unwrap_or(Step { prob: (0.0 - log_total) + route[idx + 1].prob, end: idx + 1 });
        }

        let text = |x: usize, y: usize| &block[offsets[x]..offsets[y]];
        let mut x = 0;
        let mut single_start: Option<usize> = None;
        while x < n {
            let y = route[x].end;
            if y - x == 1 {
                single_start.get_or_insert(x);
            } else {
                if let Some(s) = single_start.take() {
                    self.cut_singles(text(s, x), out);
                }
                push_token(text(x, y), out);
            }
            x = y;
        }
        if let Some(s) = single_start {
            self.cut_singles(text(s, n), out);
        }
    }

    /// A run of characters the route left single (`buf` in Python): one token if it is one
    /// character, each character if it is a word, else the HMM's cut.
    fn cut_singles<'a>(&self, buf: &'a str, out: &mut Vec<&'a str>) {
        let mut chars = buf.char_indices();
        chars.next();
        if chars.next().is_none() {
            out.push(buf);
        } else if dict::has_word(buf) {
            split_chars(buf, out);
        } else {
            for token in self.hmm.cut(buf, true) {
                push_token(token.word, out);
            }
        }
    }
}

#[derive(Default)]
struct Scratch {
    offsets: Vec<usize>,
    chars: Vec<char>,
    route: Vec<Step>,
}

/// Fix 2: a token with `.`, `_` or `-` that is not a dictionary word is split as Python's HMM
/// stage splits non-Chinese text.
fn push_token<'a>(word: &'a str, out: &mut Vec<&'a str>) {
    if word.len() > 1 && word.bytes().any(|b| matches!(b, b'.' | b'_' | b'-')) && !dict::has_word(word) {
        split_ascii_like_python(word, out);
    } else {
        out.push(word);
    }
}

/// Python jieba's `re_han_default` class.
fn is_python_han(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FD5}' | 'a'..='z' | 'A'..='Z' | '0'..='9' | '+' | '#' | '&' | '.' | '_' | '%' | '-')
}

/// Every character a token, except `\r\n`, which stays one.
fn split_chars<'a>(block: &'a str, out: &mut Vec<&'a str>) {
    let mut chars = block.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let mut end = i + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
            chars.next();
            end += 1;
        }
        out.push(&block[i..end]);
    }
}

/// Python finalseg's split of a non-Chinese stretch: the matches of `[a-zA-Z0-9]+(?:\.\d+)?%?`
/// and the non-empty gaps between them, in order. `word` is ASCII.
fn split_ascii_like_python<'a>(word: &'a str, out: &mut Vec<&'a str>) {
    let b = word.as_bytes();
    let mut gap_start = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        if gap_start < i {
            out.push(&word[gap_start..i]);
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        if i < b.len() && b[i] == b'%' {
            i += 1;
        }
        out.push(&word[start..i]);
        gap_start = i;
    }
    if gap_start < b.len() {
        out.push(&word[gap_start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(s: &str) -> Vec<&str> {
        Tokenizer::global().tokenize(s)
    }

    #[test]
    fn ascii_runs_split_as_python_does() {
        assert_eq!(tok("Wi-Fi"), ["Wi", "-", "Fi"]);
        assert_eq!(tok("2024-05-01"), ["2024", "-", "05", "-", "01"]);
        assert_eq!(tok("v2.0.1"), ["v2.0", ".", "1"]);
        assert_eq!(tok("a_b"), ["a", "_", "b"]);
    }

    #[test]
    fn punctuation_and_whitespace_are_tokens() {
        assert_eq!(tok("（你好）"), ["（", "你好", "）"]);
        assert_eq!(tok("a  b\r\nc"), ["a", " ", " ", "b", "\r\n", "c"]);
    }

    #[test]
    fn characters_outside_python_class_stand_alone() {
        // U+9FD6..U+9FFF and extension A are single tokens in Python jieba.
        assert_eq!(tok("\u{9FEF}\u{9FEF}"), ["\u{9FEF}", "\u{9FEF}"]);
        assert_eq!(tok("\u{3400}\u{3401}"), ["\u{3400}", "\u{3401}"]);
    }

    #[test]
    fn python_split_rule_keeps_gaps_whole() {
        let mut out = Vec::new();
        split_ascii_like_python("a-.b3.5%x", &mut out);
        assert_eq!(out, ["a", "-.", "b3.5%", "x"]);
    }
}
