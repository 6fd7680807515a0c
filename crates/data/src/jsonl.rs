//! Reading JSON Lines files the way users actually have them: LF or CRLF, an optional UTF-8 BOM,
//! a final newline or not. Anything else (a blank line, invalid UTF-8, a line that is not a JSON
//! object) is an error naming the file and line; nothing is skipped.

use std::cell::RefCell;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{DataError, Result};

/// One parsed line: its 1-based line number and its JSON object.
#[derive(Debug, Clone)]
pub struct JsonLine {
    pub number: usize,
    pub object: Map<String, Value>,
}

/// Reads `path` as JSON Lines; every line must be a JSON object.
pub fn read_objects(path: &Path) -> Result<Vec<JsonLine>> {
    let bytes = crate::input::read_file(path)?;
    parse_objects(path, &bytes)
}

/// Parses JSON Lines from `bytes`; `path` only names the source in errors.
pub fn parse_objects(path: &Path, bytes: &[u8]) -> Result<Vec<JsonLine>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.is_empty() {
        return Err(DataError::file(path, "file is empty; expected one JSON object per line"));
    }
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop(); // the final newline
    }
    let mut out = Vec::with_capacity(lines.len());
    for (i, raw) in lines.into_iter().enumerate() {
        let number = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.len() > crate::input::MAX_LINE_BYTES {
            return Err(DataError::line(
                path,
                number,
                "(line)",
                format!(
                    "the line is {} bytes, more than the {} bytes h2htalk reads on one line (an unterminated \
                     string, or a file that is not JSON Lines?)",
                    raw.len(),
                    crate::input::MAX_LINE_BYTES
                ),
            ));
        }
        let text = std::str::from_utf8(raw).map_err(|e| {
            DataError::line(
                path,
                number,
                "(line)",
                format!("invalid UTF-8 at byte {} of the line; save the file as UTF-8", e.valid_up_to()),
            )
        })?;
        if text.starts_with('\u{feff}') {
            return Err(DataError::line(
                path,
                number,
                "(line)",
                "a byte-order mark (U+FEFF) starts this line; only the start of a file may carry one \
                 (were files concatenated?); remove it",
            ));
        }
        if text.trim().is_empty() {
            return Err(DataError::line(
                path,
                number,
                "(line)",
                "blank line; every line must hold one JSON object (remove the blank line)",
            ));
        }
        let value = parse_value(path, number, text)?;
        match value {
            Value::Object(object) => out.push(JsonLine { number, object }),
            other => {
                return Err(DataError::line(
                    path,
                    number,
                    "(line)",
                    format!("expected a JSON object, found {}", kind(&other)),
                ));
            }
        }
    }
    Ok(out)
}

/// Parses one line as JSON, refusing an object that gives the same key twice (serde_json would
/// silently keep the last).
fn parse_value(path: &Path, number: usize, text: &str) -> Result<Value> {
    let duplicate = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = NoDuplicates { duplicate: &duplicate, at: String::new() }.deserialize(&mut de).and_then(|v| {
        de.end()?;
        Ok(v)
    });
    match parsed {
        Ok(v) => Ok(v),
        Err(_) if duplicate.borrow().is_some() => {
            let field = duplicate.borrow_mut().take().unwrap();
            Err(DataError::line(path, number, field, "given twice on one line; keep one"))
        }
        Err(e) => Err(DataError::line(
            path,
            number,
            "(line)",
            format!("not valid JSON at column {}: {}", e.column(), without_position(&e)),
        )),
    }
}

/// serde_json's message without its " at line L column C" (the line is ours, not serde's).
pub fn without_position(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

/// Deserializes a [`Value`], noting the dotted path of the first key an object repeats.
struct NoDuplicates<'a> {
    duplicate: &'a RefCell<Option<String>>,
    at: String,
}

impl<'de> DeserializeSeed<'de> for NoDuplicates<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NoDuplicates<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq
            .next_element_seed(NoDuplicates { duplicate: self.duplicate, at: format!("{}[{}]", self.at, out.len()) })?
        {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = if self.at.is_empty() { key.clone() } else { format!("{}.{key}", self.at) };
            if out.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(at);
                return Err(serde::de::Error::custom("duplicate key"));
            }
            let value = map.next_value_seed(NoDuplicates { duplicate: self.duplicate, at })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// A JSON value's kind, for "expected X, found Y" messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<Vec<JsonLine>> {
        parse_objects(Path::new("f.jsonl"), bytes)
    }

    #[test]
    fn accepts_bom_crlf_and_missing_final_newline() {
        for input in
            [&b"{\"a\":1}\n{\"a\":2}\n"[..], b"{\"a\":1}\r\n{\"a\":2}\r\n", b"\xEF\xBB\xBF{\"a\":1}\r\n{\"a\":2}"]
        {
            let lines = parse(input).unwrap();
            assert_eq!(lines.len(), 2);
            assert_eq!(lines[1].number, 2);
            assert_eq!(lines[1].object["a"], 2);
        }
    }

    #[test]
    fn rejects_what_it_cannot_read_naming_the_line() {
        let cases: [(&[u8], &str); 5] = [
            (b"{\"a\":1}\n\n{\"a\":2}\n", "f.jsonl:2: field `(line)`: blank line"),
            (b"{\"a\":1}\n[1]\n", "f.jsonl:2: field `(line)`: expected a JSON object, found an array"),
            (b"{\"a\":\xff}\n", "f.jsonl:1: field `(line)`: invalid UTF-8 at byte 5"),
            (b"{\"a\":1\n", "f.jsonl:1: field `(line)`: not valid JSON"),
            (b"", "f.jsonl: file is empty"),
        ];
        for (input, want) in cases {
            let err = parse(input).unwrap_err().to_string();
            assert!(err.starts_with(want), "{err:?} should start with {want:?}");
        }
    }
}
