//! Tokenizers built from a GGUF file's own metadata (`tokenizer.ggml.*`): nothing is fetched.
//!
//! - `tokenizer.ggml.model = "llama"`: SentencePiece BPE (Gemma, Llama 2), encoded as SentencePiece's
//!   `bpe_model.cc` does: spaces become `▁`, user-defined pieces are matched first (longest prefix,
//!   left to right) and never merged, then the adjacent pair whose concatenation is a piece with the
//!   highest score is merged (leftmost first on ties), unused pieces are split back, and what is not a
//!   piece falls back to `<0xXX>` byte tokens.
//! - `tokenizer.ggml.model = "gpt2"`: byte-level BPE (Qwen2, Llama 3) from `tokens` and `merges`, with
//!   the pre-tokenizer regex that `tokenizer.ggml.pre` names, run by the `tokenizers` crate.
//!
//! Text is always encoded without parsing special tokens: a `<start_of_turn>` typed by a user stays
//! text. Chat templates insert special tokens by id.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use candle_core::quantized::gguf_file::{Content, Value};

/// GGUF token types (`tokenizer.ggml.token_type`), as in llama.cpp and SentencePiece.
const TYPE_UNKNOWN: i32 = 2;
const TYPE_CONTROL: i32 = 3;
const TYPE_USER_DEFINED: i32 = 4;
const TYPE_UNUSED: i32 = 5;
const TYPE_BYTE: i32 = 6;

/// A tokenizer read from a GGUF file.
pub struct Tokenizer {
    tokens: Vec<String>,
    types: Vec<i32>,
    kind: Kind,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
}

enum Kind {
    Spm(Box<Spm>),
    Bpe(Box<tokenizers::Tokenizer>),
}

impl Tokenizer {
    /// Reads the tokenizer from GGUF metadata; the error says which key is missing or odd.
    pub fn from_gguf(content: &Content) -> Result<Tokenizer, String> {
        let md = &content.metadata;
        let model = md
            .get("tokenizer.ggml.model")
            .ok_or("no tokenizer.ggml.model in the metadata (a GGUF without a tokenizer)")?
            .to_string()
            .map_err(|e| format!("tokenizer.ggml.model: {e}"))?
            .clone();
        let tokens = string_array(md.get("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens")?;
        let types = match md.get("tokenizer.ggml.token_type") {
            Some(v) => int_array(v, "tokenizer.ggml.token_type")?,
            None => vec![1; tokens.len()],
        };
        if types.len() != tokens.len() {
            return Err(format!("tokenizer.ggml.token_type has {} entries for {} tokens", types.len(), tokens.len()));
        }
        let id = |key: &str| md.get(key).and_then(|v| v.to_u32().ok());
        let bos = id("tokenizer.ggml.bos_token_id");
        let eos = id("tokenizer.ggml.eos_token_id");
        let kind = match model.as_str() {
            "llama" => {
                let scores = match md.get("tokenizer.ggml.scores") {
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|v| v.to_f32().map_err(|e| format!("tokenizer.ggml.scores: {e}")))
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => return Err("tokenizer.ggml.scores is missing (needed by a SentencePiece tokenizer)".into()),
                };
                if scores.len() != tokens.len() {
                    return Err(format!(
                        "tokenizer.ggml.scores has {} entries for {} tokens",
                        scores.len(),
                        tokens.len()
                    ));
                }
                let add_space_prefix =
                    md.get("tokenizer.ggml.add_space_prefix").and_then(|v| v.to_bool().ok()).unwrap_or(true);
                let unk = id("tokenizer.ggml.unknown_token_id")
                    .or_else(|| types.iter().position(|&t| t == TYPE_UNKNOWN).map(|i| i as u32));
                Kind::Spm(Box::new(Spm::new(&tokens, &types, scores, unk, add_space_prefix)))
            }
            "gpt2" => {
                let merges = string_array(md.get("tokenizer.ggml.merges"), "tokenizer.ggml.merges")?;
                let pre = md
                    .get("tokenizer.ggml.pre")
                    .and_then(|v| v.to_string().ok().cloned())
                    .unwrap_or_else(|| "default".to_string());
                Kind::Bpe(Box::new(byte_level_bpe(&tokens, &merges, &pre)?))
            }
            other => {
                return Err(format!(
                    "tokenizer.ggml.model `{other}` is not supported (supported: `llama` SentencePiece, `gpt2` byte-level BPE)"
                ));
            }
        };
        Ok(Tokenizer { tokens, types, kind, bos, eos })
    }

    /// Reads the tokenizer of a GGUF file (only its header is read).
    pub fn from_gguf_file(path: &std::path::Path) -> Result<Tokenizer, String> {
        let mut file =
            std::io::BufReader::new(std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?);
        let content =
            Content::read(&mut file).map_err(|e| format!("{}: not a readable GGUF file: {e}", path.display()))?;
        Tokenizer::from_gguf(&content).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The id of a token spelled exactly `text` (a special token such as `<end_of_turn>`).
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.tokens.iter().position(|t| t == text).map(|i| i as u32)
    }

    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// Ids of `text`, special tokens never parsed.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        match &self.kind {
            Kind::Spm(spm) => Ok(spm.encode(text)),
            Kind::Bpe(tok) => {
                let enc = tok.encode(text, false).map_err(|e| format!("tokenizer: {e}"))?;
                Ok(enc.get_ids().to_vec())
            }
        }
    }

    /// Text of `ids`; control tokens are left out, invalid UTF-8 becomes U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        match &self.kind {
            Kind::Spm(spm) => spm.decode(&self.tokens, &self.types, ids),
            Kind::Bpe(tok) => {
                let keep: Vec<u32> = ids
                    .iter()
                    .copied()
                    .filter(|&i| !matches!(self.types.get(i as usize), Some(&TYPE_CONTROL)))
                    .collect();
                tok.decode(&keep, false).unwrap_or_default()
            }
        }
    }
}

fn string_array(v: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    match v {
        Some(Value::Array(a)) => a.iter().map(|v| v.to_string().cloned().map_err(|e| format!("{key}: {e}"))).collect(),
        Some(_) => Err(format!("{key} is not an array")),
        None => Err(format!("{key} is missing from the metadata")),
    }
}

fn int_array(v: &Value, key: &str) -> Result<Vec<i32>, String> {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|v| match v {
                Value::I32(x) => Ok(*x),
                Value::U32(x) => Ok(*x as i32),
                Value::I8(x) => Ok(*x as i32),
                Value::U8(x) => Ok(*x as i32),
                other => Err(format!("{key}: unexpected value {other:?}")),
            })
            .collect(),
        _ => Err(format!("{key} is not an array")),
    }
}

/// SentencePiece BPE.
struct Spm {
    /// Normal, user-defined and unused pieces (what SentencePiece may merge into), by piece text with
    /// spaces written `▁`.
    pieces: HashMap<String, u32>,
    scores: Vec<f32>,
    types: Vec<i32>,
    /// User-defined pieces by first character, longest first.
    user_defined: HashMap<char, Vec<(String, u32)>>,
    bytes: [Option<u32>; 256],
    unk: Option<u32>,
    add_space_prefix: bool,
}

#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    end: usize,
    prev: Option<usize>,
    next: Option<usize>,
    freeze: bool,
}

struct Candidate {
    score: f32,
    left: usize,
    right: usize,
    size: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    /// Highest score first, then leftmost.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.left.cmp(&self.left))
    }
}

fn escape_spaces(s: &str) -> String {
    s.replace(' ', "\u{2581}")
}

impl Spm {
    fn new(tokens: &[String], types: &[i32], scores: Vec<f32>, unk: Option<u32>, add_space_prefix: bool) -> Spm {
        let mut pieces = HashMap::with_capacity(tokens.len());
        let mut user_defined: HashMap<char, Vec<(String, u32)>> = HashMap::new();
        let mut bytes = [None; 256];
        for (i, (tok, &ty)) in tokens.iter().zip(types).enumerate() {
            let id = i as u32;
            match ty {
                TYPE_BYTE => {
                    if let Some(b) = parse_byte_token(tok) {
                        bytes[b as usize] = Some(id);
                    }
                }
                TYPE_CONTROL | TYPE_UNKNOWN => {}
                _ if Some(id) == unk => {}
                TYPE_USER_DEFINED => {
                    let piece = escape_spaces(tok);
                    if let Some(c) = piece.chars().next() {
                        user_defined.entry(c).or_default().push((piece.clone(), id));
                    }
                    pieces.entry(piece).or_insert(id);
                }
                _ => {
                    pieces.entry(tok.clone()).or_insert(id);
                }
            }
        }
        for list in user_defined.values_mut() {
            list.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        }
        Spm { pieces, scores, types: types.to_vec(), user_defined, bytes, unk, add_space_prefix }
    }

    fn encode(&self, text: &str) -> Vec<u32> {
        if text.is_empty() {
            return Vec::new();
        }
        let mut norm = String::with_capacity(text.len() + 3);
        if self.add_space_prefix {
            norm.push('\u{2581}');
        }
        norm.push_str(&escape_spaces(text));

        // Characters, with user-defined pieces as single frozen symbols.
        let mut symbols: Vec<Symbol> = Vec::with_capacity(norm.len());
        let mut pos = 0;
        while pos < norm.len() {
            let rest = &norm[pos..];
            let c = rest.chars().next().unwrap();
            let matched = self
                .user_defined
                .get(&c)
                .and_then(|list| list.iter().find(|(p, _)| rest.starts_with(p.as_str())))
                .map(|(p, _)| p.len());
            let (len, freeze) = match matched {
                Some(len) => (len, true),
                None => (c.len_utf8(), false),
            };
            let i = symbols.len();
            symbols.push(Symbol { start: pos, end: pos + len, prev: i.checked_sub(1), next: None, freeze });
            if i > 0 {
                symbols[i - 1].next = Some(i);
            }
            pos += len;
        }

        let mut agenda = BinaryHeap::new();
        // Unused pieces that were merged into, with the length of their left part.
        let mut rev_merge: HashMap<String, usize> = HashMap::new();
        let try_pair = |left: Option<usize>,
                        right: Option<usize>,
                        symbols: &[Symbol],
                        agenda: &mut BinaryHeap<Candidate>,
                        rev_merge: &mut HashMap<String, usize>,
                        norm: &str| {
            let (Some(l), Some(r)) = (left, right) else { return };
            if symbols[l].freeze || symbols[r].freeze {
                return;
            }
            let (start, mid, end) = (symbols[l].start, symbols[l].end, symbols[r].end);
            let piece = &norm[start..end];
            if let Some(&id) = self.pieces.get(piece) {
                agenda.push(Candidate { score: self.scores[id as usize], left: l, right: r, size: end - start });
                if self.types[id as usize] == TYPE_UNUSED {
                    rev_merge.insert(piece.to_string(), mid - start);
                }
            }
        };
        let norm_ref: &str = &norm;
        for i in 1..symbols.len() {
            try_pair(Some(i - 1), Some(i), &symbols, &mut agenda, &mut rev_merge, norm_ref);
        }
        while let Some(top) = agenda.pop() {
            let (l, r) = (top.left, top.right);
            let (sl, sr) = (symbols[l], symbols[r]);
            // Stale: one side was merged away or grew since this candidate was made.
            if sl.start == sl.end || sr.start == sr.end || sl.next != Some(r) || sr.end - sl.start != top.size {
                continue;
            }
            symbols[l].end = sr.end;
            symbols[l].next = sr.next;
            if let Some(n) = sr.next {
                symbols[n].prev = Some(l);
            }
            symbols[r].start = symbols[r].end; // emptied
            try_pair(symbols[l].prev, Some(l), &symbols, &mut agenda, &mut rev_merge, norm_ref);
            try_pair(Some(l), symbols[l].next, &symbols, &mut agenda, &mut rev_merge, norm_ref);
        }

        let mut ids = Vec::with_capacity(symbols.len());
        let mut cur = if symbols.is_empty() { None } else { Some(0) };
        while let Some(i) = cur {
            let s = symbols[i];
            self.resegment(norm_ref, s.start, s.end, &rev_merge, &mut ids);
            cur = s.next;
        }
        ids
    }

    fn resegment(&self, norm: &str, start: usize, end: usize, rev_merge: &HashMap<String, usize>, out: &mut Vec<u32>) {
        let piece = &norm[start..end];
        if let Some(&id) = self.pieces.get(piece)
            && self.types[id as usize] != TYPE_UNUSED
        {
            out.push(id);
            return;
        }
        if let Some(&left_len) = rev_merge.get(piece) {
            self.resegment(norm, start, start + left_len, rev_merge, out);
            self.resegment(norm, start + left_len, end, rev_merge, out);
            return;
        }
        for b in piece.bytes() {
            match (self.bytes[b as usize], self.unk) {
                (Some(id), _) => out.push(id),
                (None, Some(unk)) => out.push(unk),
                (None, None) => {}
            }
        }
    }

    fn decode(&self, tokens: &[String], types: &[i32], ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            let Some(tok) = tokens.get(id as usize) else { continue };
            match types[id as usize] {
                TYPE_CONTROL | TYPE_UNKNOWN => {}
                TYPE_BYTE => match parse_byte_token(tok) {
                    Some(b) => bytes.push(b),
                    None => bytes.extend_from_slice(tok.as_bytes()),
                },
                _ => bytes.extend_from_slice(tok.replace('\u{2581}', " ").as_bytes()),
            }
        }
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if self.add_space_prefix && text.starts_with(' ') {
            text.remove(0);
        }
        text
    }
}

fn parse_byte_token(tok: &str) -> Option<u8> {
    let hex = tok.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// Pre-tokenizer patterns of llama.cpp's `tokenizer.ggml.pre` names.
fn pre_tokenizer_pattern(pre: &str) -> Option<&'static str> {
    const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
    const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    match pre {
        "default" | "gpt2" | "gpt-2" => Some(GPT2),
        "llama3" | "llama-bpe" | "llama-v3" | "smaug-bpe" => Some(LLAMA3),
        "qwen2" | "deepseek-r1-qwen" => Some(QWEN2),
        _ => None,
    }
}

fn byte_level_bpe(tokens: &[String], merges: &[String], pre: &str) -> Result<tokenizers::Tokenizer, String> {
    use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
    use tokenizers::models::bpe::BPE;
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::pre_tokenizers::sequence::Sequence;
    use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
    use tokenizers::{PreTokenizerWrapper, SplitDelimiterBehavior};

    let pattern = pre_tokenizer_pattern(pre).ok_or_else(|| {
        format!("tokenizer.ggml.pre `{pre}` is not supported (supported: default/gpt2, llama-bpe/llama3, qwen2)")
    })?;
    let vocab: tokenizers::models::bpe::Vocab = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
    let merges: Vec<(String, String)> = merges
        .iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| format!("tokenizer.ggml.merges: `{m}` is not `left right`"))
        })
        .collect::<Result<_, _>>()?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(false)
        .build()
        .map_err(|e| format!("tokenizer: {e}"))?;
    let split = Split::new(SplitPattern::Regex(pattern.to_string()), SplitDelimiterBehavior::Isolated, false)
        .map_err(|e| format!("tokenizer: pre-tokenizer regex: {e}"))?;
    let pre_tokenizer = Sequence::new(vec![
        PreTokenizerWrapper::Split(split),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, false)),
    ]);
    let mut tok = tokenizers::Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(pre_tokenizer));
    tok.with_decoder(Some(ByteLevelDecoder::default()));
    Ok(tok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Spm {
        // pieces: bytes, then characters and merges with scores
        let mut tokens: Vec<String> = vec!["<unk>".into(), "<s>".into(), "</s>".into()];
        let mut types = vec![TYPE_UNKNOWN, TYPE_CONTROL, TYPE_CONTROL];
        let mut scores = vec![0.0, 0.0, 0.0];
        for b in 0..=255u8 {
            tokens.push(format!("<0x{b:02X}>"));
            types.push(TYPE_BYTE);
            scores.push(0.0);
        }
        for (t, s, ty) in [
            ("\u{2581}", -1.0, 1),
            ("a", -2.0, 1),
            ("b", -3.0, 1),
            ("c", -4.0, 1),
            ("ab", -5.0, 1),
            ("bc", -0.5, 1),
            ("abc", -6.0, 1),
            ("\u{2581}a", -7.0, 1),
            ("  ", 0.0, TYPE_USER_DEFINED),
            ("xy", -1.0, TYPE_UNUSED),
            ("x", -1.0, 1),
            ("y", -1.0, 1),
            ("xyz", -1.0, 1),
            ("z", -1.0, 1),
        ] {
            tokens.push(t.into());
            types.push(ty);
            scores.push(s);
        }
        Spm::new(&tokens, &types, scores, Some(0), false)
    }

    fn pieces(spm: &Spm, ids: &[u32]) -> Vec<String> {
        let by_id: HashMap<u32, &String> = spm.pieces.iter().map(|(k, v)| (*v, k)).collect();
        ids.iter().map(|i| by_id.get(i).map(|s| s.to_string()).unwrap_or(format!("#{i}"))).collect()
    }

    #[test]
    fn merges_by_score_then_leftmost() {
        let spm = toy();
        // "bc" scores best, so "abc" is a + bc, and a+bc is "abc" (score -6) which exists.
        assert_eq!(pieces(&spm, &spm.encode("abc")), ["abc"]);
        assert_eq!(pieces(&spm, &spm.encode("ab")), ["ab"]);
        assert_eq!(pieces(&spm, &spm.encode(" a")), ["\u{2581}a"]);
    }

    #[test]
    fn user_defined_are_matched_first_and_frozen() {
        let spm = toy();
        assert_eq!(pieces(&spm, &spm.encode("  a")), ["\u{2581}\u{2581}", "a"]);
    }

    #[test]
    fn unused_pieces_are_split_back() {
        let spm = toy();
        assert_eq!(pieces(&spm, &spm.encode("xy")), ["x", "y"]);
        assert_eq!(pieces(&spm, &spm.encode("xyz")), ["xyz"]);
    }

    #[test]
    fn unknown_characters_fall_back_to_bytes() {
        let spm = toy();
        let ids = spm.encode("é");
        assert_eq!(ids, [3 + 0xC3, 3 + 0xA9]);
    }
}
