//! Word tokens exactly as Python `jieba.cut(text)` (jieba 0.42.1, precise mode, HMM on) makes them.
//!
//! jieba-rs implements the same dictionary, route and HMM, but differs from Python jieba in three
//! places, each corrected here:
//!
//! 1. **Blocks.** Python cuts only runs of `[\u4E00-\u9FD5a-zA-Z0-9+#&._%-]` with the dictionary;
//!    jieba-rs's runs also take U+9FD6..U+9FFF and the CJK extensions. We split the text into runs
//!    with Python's class ourselves, so such characters become single tokens as in Python.
//!    Outside the runs, Python yields every character on its own, keeping `\r\n` together.
//! 2. **ASCII runs inside the HMM.** Python splits a non-Chinese stretch the route left unjoined
//!    with `[a-zA-Z0-9]+(?:\.\d+)?%?`, so `Wi-Fi` is `Wi - Fi` and `v2.0.1` is `v2.0 . 1`; jieba-rs
//!    joins alphanumeric runs across `.`, `_` and `-`. We split such tokens again with Python's rule.
//! 3. **The dictionary total.** Python's `dict.txt` lists `B超 3` twice: it keeps one entry but adds
//!    its frequency to the total twice. jieba-rs's copy lists it once. The total sets every word's
//!    probability, so we add the missing 3 through an entry no text can reach.

use std::sync::LazyLock;

use jieba_rs::Jieba;

/// The version of Python jieba whose tokens we reproduce.
pub const PYTHON_JIEBA_VERSION: &str = "0.42.1";
/// The jieba-rs release this crate builds on.
pub const JIEBA_RS_VERSION: &str = "0.11";

pub struct Tokenizer {
    jieba: Jieba,
}

static GLOBAL: LazyLock<Tokenizer> = LazyLock::new(Tokenizer::new);

impl Default for Tokenizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Tokenizer {
    pub fn new() -> Self {
        let mut jieba = Jieba::new();
        // Fix 3: a sentinel word made of a control character, which never occurs inside a run.
        jieba.add_word("\u{1}", Some(3), None);
        Tokenizer { jieba }
    }

    /// The process-wide tokenizer, built on first use (loading the dictionary takes a moment).
    pub fn global() -> &'static Tokenizer {
        &GLOBAL
    }

    /// Tokens of `text`, as Python `list(jieba.cut(text))`. Whitespace and punctuation are tokens.
    pub fn tokenize<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::with_capacity(text.len() / 2);
        let mut rest = text;
        while let Some(first) = rest.chars().next() {
            let in_run = is_python_han(first);
            let end = rest.find(|c| is_python_han(c) != in_run).unwrap_or(rest.len());
            let (block, tail) = rest.split_at(end);
            if in_run {
                self.cut_run(block, &mut out);
            } else {
                split_chars(block, &mut out);
            }
            rest = tail;
        }
        out
    }

    fn cut_run<'a>(&self, block: &'a str, out: &mut Vec<&'a str>) {
        for token in self.jieba.cut(block, true) {
            let word = token.word;
            if word.len() > 1 && word.bytes().any(|b| matches!(b, b'.' | b'_' | b'-')) && !self.jieba.has_word(word) {
                split_ascii_like_python(word, out);
            } else {
                out.push(word);
            }
        }
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
