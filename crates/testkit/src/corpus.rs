//! A corpus of hostile input files for every loader: official references and predictions, the
//! scenario suite and the model config `h2htalk.toml`. Each case builds a complete input tree in a
//! directory, valid except for one fault, and says which file, line and field the error must name.
//!
//! Used by crates/data/tests/hostile.rs (the library loaders), crates/llm/tests/config.rs (the
//! config loader) and crates/cli/tests/hostile.rs (exit status and no partial output), through
//! `#[path]`, so that the corpus exists once. Everything is generated: no large file is committed.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// The eleven sub-task stems, in the official order.
pub const STEMS: [&str; 11] = [
    "dialogue_base",
    "dialogue_emotion",
    "dialogue_schedule",
    "recollection_synthesize",
    "recollection_refine",
    "recollection_initialize",
    "itinerary_basic",
    "itinerary_middle",
    "itinerary_advanced",
    "itinerary_feedback",
    "itinerary_initialize",
];

/// Lines per sub-task in the generated reference and prediction directories.
pub const LINES: usize = 3;

/// The size of the "long line" cases.
pub const LONG_LINE_BYTES: usize = 10 * 1024 * 1024;

/// Nesting depth of the "deeply nested" cases (far past any parser's recursion limit).
pub const DEPTH: usize = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loader {
    References,
    Predictions,
    Suite,
    Config,
}

/// Where a case's inputs are, once built.
pub struct Built {
    pub references: PathBuf,
    pub predictions: PathBuf,
    pub suite: PathBuf,
    pub config: PathBuf,
}

/// The file (or directory) a case spoils, and the bytes it gets (`None`: it becomes a directory).
enum Spoil {
    Write(PathBuf, Option<Vec<u8>>),
    Remove(PathBuf),
    /// Write another file (extra to the layout).
    Add(PathBuf, Vec<u8>),
}

pub struct Case {
    pub loader: Loader,
    /// What the case is (for messages).
    pub name: String,
    /// What the error must contain: `file:line: field `f`` for a line, `file: ` for a file; empty
    /// for the few cases that must load (a BOM, CRLF).
    pub want: String,
    spoil: Spoil,
}

impl Case {
    /// Whether the input must load (the case checks that an odd but valid form is accepted).
    pub fn must_load(&self) -> bool {
        self.want.is_empty()
    }

    /// Builds the inputs under `root`: valid references, predictions, a copy of the suite in
    /// `suite_src` and a config, with this case's fault in one of them.
    pub fn build(&self, root: &Path, suite_src: &Path) -> Built {
        let built = Built {
            references: root.join("references"),
            predictions: root.join("predictions"),
            suite: root.join("suite"),
            config: root.join("h2htalk.toml"),
        };
        write_official(&built.references, |stem, i| format!("{{\"response\": \"参考 {stem} {i}\"}}"));
        write_official(&built.predictions, |stem, i| format!("{{\"response\": \"预测 {stem} {i}\"}}"));
        if self.loader == Loader::Suite {
            copy_suite(suite_src, &built.suite);
        }
        fs::write(&built.config, VALID_CONFIG).unwrap();
        let base = match self.loader {
            Loader::References => &built.references,
            Loader::Predictions => &built.predictions,
            Loader::Suite => &built.suite,
            Loader::Config => root,
        };
        match &self.spoil {
            Spoil::Write(rel, Some(bytes)) => fs::write(base.join(rel), bytes).unwrap(),
            Spoil::Write(rel, None) => {
                let p = base.join(rel);
                if p.is_dir() {
                    fs::remove_dir_all(&p).unwrap();
                } else if p.exists() {
                    fs::remove_file(&p).unwrap();
                }
                fs::create_dir(&p).unwrap();
                fs::write(p.join("inside.txt"), "a directory where a file should be").unwrap();
            }
            Spoil::Remove(rel) => fs::remove_file(base.join(rel)).unwrap(),
            Spoil::Add(rel, bytes) => fs::write(base.join(rel), bytes).unwrap(),
        }
        built
    }
}

/// A model config that loads.
pub const VALID_CONFIG: &str = "[[model]]\nname = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmax_tokens = 64\n";

fn write_official(dir: &Path, line: impl Fn(&str, usize) -> String) {
    fs::create_dir_all(dir).unwrap();
    for stem in STEMS {
        let body: String = (1..=LINES).map(|i| line(stem, i) + "\n").collect();
        fs::write(dir.join(format!("{stem}.jsonl")), body).unwrap();
    }
}

/// Copies the suite (scenarios, safety set, personas, templates, the SAP module, the judge's texts,
/// rules, simulator profiles) to `to`.
pub fn copy_suite(from: &Path, to: &Path) {
    fn copy_tree(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        for entry in fs::read_dir(from).unwrap() {
            let p = entry.unwrap().path();
            let dest = to.join(p.file_name().unwrap());
            if p.is_dir() { copy_tree(&p, &dest) } else { fs::copy(&p, &dest).map(|_| ()).unwrap() }
        }
    }
    for sub in ["scenarios", "safety", "personas", "templates", "sap", "judge", "rules", "simulator"] {
        copy_tree(&from.join(sub), &to.join(sub));
    }
}

/// Line `n` (1-based) of a file of the suite copy at `suite_src`.
fn suite_line(suite_src: &Path, rel: &str, n: usize) -> String {
    fs::read_to_string(suite_src.join(rel)).unwrap().lines().nth(n - 1).unwrap().to_string()
}

/// The file's lines with line `n` (1-based) replaced by `with`.
fn replace_line(suite_src: &Path, rel: &str, n: usize, with: &[u8]) -> Vec<u8> {
    let text = fs::read_to_string(suite_src.join(rel)).unwrap();
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if i + 1 == n {
            out.extend_from_slice(with);
        } else {
            out.extend_from_slice(l.as_bytes());
        }
        out.push(b'\n');
    }
    out
}

/// Edits line `n` of a suite file as JSON.
fn edit_json(suite_src: &Path, rel: &str, n: usize, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(&suite_line(suite_src, rel, n)).unwrap();
    edit(&mut v);
    replace_line(suite_src, rel, n, v.to_string().as_bytes())
}

/// `{"response": "` followed by 10 MB and no closing quote.
fn long_unterminated(prefix: &str) -> Vec<u8> {
    let mut b = prefix.as_bytes().to_vec();
    b.resize(b.len() + LONG_LINE_BYTES, b'a');
    b.push(b'\n');
    b
}

/// `{"<key>": [[[...]]]}` nested far past the parser's recursion limit.
fn deeply_nested(key: &str) -> Vec<u8> {
    format!("{{\"{key}\": {}{}}}\n", "[".repeat(DEPTH), "]".repeat(DEPTH)).into_bytes()
}

/// Cases shared by the two official-layout loaders: one file of `loader`'s directory spoiled.
fn official_cases(loader: Loader, cases: &mut Vec<Case>) {
    let stem = "dialogue_emotion";
    let file = format!("{stem}.jsonl");
    let ok = |i: usize| format!("{{\"response\": \"ok {i}\"}}\n");
    let mut add = |name: &str, body: Vec<u8>, want: String| {
        cases.push(Case {
            loader,
            name: name.to_string(),
            want,
            spoil: Spoil::Write(PathBuf::from(&file), Some(body)),
        });
    };
    let at = |line: usize, field: &str| format!("{file}:{line}: field `{field}`");
    let two = |second: &[u8]| {
        let mut b = ok(1).into_bytes();
        b.extend_from_slice(second);
        b.push(b'\n');
        b.extend_from_slice(ok(3).as_bytes());
        b
    };
    add("invalid UTF-8", two(b"{\"response\": \"\xff\xfe broken\"}"), at(2, "(line)") + ": invalid UTF-8");
    add("invalid UTF-8 in a key", two(b"{\"resp\xc3onse\": \"x\"}"), at(2, "(line)") + ": invalid UTF-8");
    add("Latin-1 text", two(b"{\"response\": \"caf\xe9\"}"), at(2, "(line)") + ": invalid UTF-8");
    add("UTF-16 file", "{\"response\": \"a\"}\n".encode_utf16().flat_map(u16::to_le_bytes).collect(), at(1, "(line)"));
    add(
        "a BOM in the middle",
        two("\u{feff}{\"response\": \"b\"}".as_bytes()),
        at(2, "(line)") + ": a byte-order mark",
    );
    add("two BOMs", format!("\u{feff}\u{feff}{}", ok(1)).into_bytes(), at(1, "(line)") + ": a byte-order mark");
    add("a bare CR between lines", format!("{}\r{}", ok(1).trim_end(), ok(2)).into_bytes(), at(1, "(line)"));
    add("a blank line", two(b""), at(2, "(line)") + ": blank line");
    add("a whitespace-only line", two(b" \t "), at(2, "(line)") + ": blank line");
    add("a line of NULs", two(b"\0\0\0"), at(2, "(line)"));
    add("a raw control character in a string", two(b"{\"response\": \"a\x01b\"}"), at(2, "(line)"));
    add("a lone surrogate escape", two(br#"{"response": "\ud800"}"#), at(2, "(line)"));
    add("trailing text after the object", two(br#"{"response": "b"} extra"#), at(2, "(line)"));
    add("two objects on one line", two(br#"{"response": "b"}{"response": "c"}"#), at(2, "(line)"));
    add("an array line", two(br#"["b"]"#), at(2, "(line)") + ": expected a JSON object, found an array");
    add("a string line", two(br#""b""#), at(2, "(line)") + ": expected a JSON object, found a string");
    add("a null line", two(b"null"), at(2, "(line)") + ": expected a JSON object, found null");
    add("a number line", two(b"1e999"), at(2, "(line)"));
    add("an unterminated object", two(br#"{"response": "b""#), at(2, "(line)"));
    add("single quotes", two(b"{'response': 'b'}"), at(2, "(line)"));
    add("a comment", two(br#"{"response": "b"} // note"#), at(2, "(line)"));
    add(
        "a 10 MB unterminated line",
        {
            let mut b = ok(1).into_bytes();
            b.extend(long_unterminated("{\"response\": \""));
            b
        },
        at(2, "(line)"),
    );
    add("deeply nested, unbalanced", two(format!("{{\"response\": {}", "[".repeat(DEPTH)).as_bytes()), at(2, "(line)"));
    add(
        "deeply nested, well formed",
        {
            let mut b = ok(1).into_bytes();
            b.extend(deeply_nested("response"));
            b
        },
        at(2, "(line)") + ": not valid JSON",
    );
    add("the same key twice", two(br#"{"response": "b", "response": "c"}"#), at(2, "response") + ": given twice");
    add(
        "CRLF, a BOM and no final newline (accepted)",
        format!("\u{feff}{}\r\n{}\r\n{}", ok(1).trim_end(), ok(2).trim_end(), ok(3).trim_end()).into_bytes(),
        String::new(),
    );
    add("an empty file", Vec::new(), format!("{file}: file is empty"));
    add("only a BOM", b"\xEF\xBB\xBF".to_vec(), format!("{file}: file is empty"));
    add("only a newline", b"\n".to_vec(), at(1, "(line)") + ": blank line");
    if loader == Loader::References {
        add(
            "response is a number",
            two(br#"{"response": 3}"#),
            at(2, "response") + ": expected a string, found a number",
        );
        add("response is null", two(br#"{"response": null}"#), at(2, "response") + ": expected a string, found null");
        add(
            "response is an array",
            two(br#"{"response": ["b"]}"#),
            at(2, "response") + ": expected a string, found an array",
        );
        add(
            "response is an object",
            two(br#"{"response": {"text": "b"}}"#),
            at(2, "response") + ": expected a string, found an object",
        );
        add(
            "response is a boolean",
            two(br#"{"response": true}"#),
            at(2, "response") + ": expected a string, found a boolean",
        );
        add("response missing", two(b"{}"), at(2, "response") + ": missing");
        add("an extra field", two(br#"{"response": "b", "id": 7}"#), at(2, "id") + ": unknown field");
        add("a prediction field in references", two(br#"{"answer": "b"}"#), at(2, "answer") + ": unknown field");
    } else {
        add(
            "response is a number",
            two(br#"{"response": 3}"#),
            at(2, "response") + ": expected a string, found a number",
        );
        add("answer is null", two(br#"{"answer": null}"#), at(2, "answer") + ": expected a string, found null");
        add("no answer field", two(b"{}"), at(2, "response") + ": missing");
        add(
            "two answer fields",
            two(br#"{"response": "b", "answer": "c"}"#),
            at(2, "response+answer") + ": more than one",
        );
        add("an extra field", two(br#"{"response": "b", "score": 1}"#), at(2, "score") + ": unknown field");
        add("messages is a string", two(br#"{"messages": "b"}"#), at(2, "messages") + ": expected an array");
        add("a turn is a string", two(br#"{"messages": ["b"]}"#), at(2, "messages") + ": turn 1 is a string");
        add(
            "no assistant turn",
            two(br#"{"messages": [{"role": "user", "content": "b"}]}"#),
            at(2, "messages") + ": no assistant",
        );
        add(
            "assistant content is a number",
            two(br#"{"messages": [{"role": "assistant", "content": 1}]}"#),
            at(2, "messages") + ": turn 1",
        );
        add(
            "a turn without role",
            two(br#"{"messages": [{"content": "b"}]}"#),
            at(2, "messages") + ": turn 1 has no string `role`",
        );
        let idx = |v: &str| format!("{{\"index\": {v}, \"response\": \"b\"}}");
        let indexed = |second: &str| format!("{}\n{}\n{}\n", idx("1"), second, idx("3")).into_bytes();
        add("index 0", indexed(&idx("0")), at(2, "index") + ": expected a 1-based integer");
        add("index negative", indexed(&idx("-2")), at(2, "index") + ": expected a 1-based integer");
        add("index a float", indexed(&idx("2.0")), at(2, "index") + ": expected a 1-based integer");
        add("index a string", indexed(&idx("\"2\"")), at(2, "index") + ": expected a 1-based integer");
        add("index null", indexed(&idx("null")), at(2, "index") + ": expected a 1-based integer");
        add(
            "index too large for any integer",
            indexed(&idx("18446744073709551616")),
            at(2, "index") + ": expected a 1-based integer",
        );
        add("index past the last reference", indexed(&idx("4")), at(2, "index") + ": 4 is past the last reference");
        add("duplicate index", indexed(&idx("1")), at(2, "index") + ": 1 already given on line 1");
        add(
            "index on some lines only",
            indexed(r#"{"response": "b"}"#),
            at(2, "index") + ": missing, but other lines carry",
        );
        add(
            "a missing index",
            format!("{}\n{}\n", idx("1"), idx("3")).into_bytes(),
            format!("{file}: no prediction for index 2 of 3"),
        );
        add("too few lines", ok(1).into_bytes(), format!("{file}: 1 prediction line(s) for 3 reference(s)"));
        add(
            "too many lines",
            (1..=4).map(ok).collect::<String>().into_bytes(),
            format!("{file}: 4 prediction line(s) for 3 reference(s)"),
        );
    }
    let mut push = |name: &str, spoil: Spoil, want: String| {
        cases.push(Case { loader, name: name.to_string(), want, spoil });
    };
    push(
        "a directory where the file should be",
        Spoil::Write(PathBuf::from(&file), None),
        format!("{file}: is a directory"),
    );
    push(
        "a file of an unknown stem",
        Spoil::Add(PathBuf::from("dialogue_extra.jsonl"), ok(1).into_bytes()),
        "dialogue_extra.jsonl: unexpected file".into(),
    );
    if loader == Loader::Predictions {
        push("a missing file", Spoil::Remove(PathBuf::from(&file)), format!("missing file(s): {file}"));
    }
}

fn suite_cases(suite_src: &Path, cases: &mut Vec<Case>) {
    let rel = "scenarios/dialogue_base.jsonl";
    let file = "dialogue_base.jsonl";
    let at = |line: usize, field: &str| format!("{file}:{line}: field `{field}`");
    let mut add = |name: &str, rel: &str, body: Vec<u8>, want: String| {
        cases.push(Case {
            loader: Loader::Suite,
            name: name.to_string(),
            want,
            spoil: Spoil::Write(PathBuf::from(rel), Some(body)),
        });
    };
    let line2 = suite_line(suite_src, rel, 2);
    add(
        "invalid UTF-8",
        rel,
        replace_line(suite_src, rel, 2, &[&line2.as_bytes()[..40], b"\xff", &line2.as_bytes()[40..]].concat()),
        at(2, "(line)") + ": invalid UTF-8",
    );
    add(
        "a BOM in the middle",
        rel,
        replace_line(suite_src, rel, 2, format!("\u{feff}{line2}").as_bytes()),
        at(2, "(line)") + ": a byte-order mark",
    );
    add("a blank line", rel, replace_line(suite_src, rel, 2, b""), at(2, "(line)") + ": blank line");
    add("id is a number", rel, edit_json(suite_src, rel, 2, |v| v["id"] = 2.into()), at(2, "id"));
    add(
        "history is a string",
        rel,
        edit_json(suite_src, rel, 2, |v| v["inputs"]["history"] = "hi".into()),
        at(2, "inputs.history"),
    );
    add(
        "a turn's role is unknown",
        rel,
        edit_json(suite_src, rel, 2, |v| v["inputs"]["history"][0]["role"] = "system".into()),
        at(2, "inputs.history[0].role"),
    );
    add(
        "emotions is a string",
        rel,
        edit_json(suite_src, rel, 2, |v| v["tags"]["emotions"] = "joy".into()),
        at(2, "tags.emotions"),
    );
    add(
        "implicit_need is a string",
        rel,
        edit_json(suite_src, rel, 2, |v| v["tags"]["implicit_need"] = "no".into()),
        at(2, "tags.implicit_need"),
    );
    add(
        "reference is null",
        rel,
        edit_json(suite_src, rel, 2, |v| v["reference"] = serde_json::Value::Null),
        at(2, "reference"),
    );
    add(
        "reference missing",
        rel,
        edit_json(suite_src, rel, 2, |v| {
            v.as_object_mut().unwrap().remove("reference");
        }),
        at(2, "reference") + ": missing",
    );
    add(
        "tags missing",
        rel,
        edit_json(suite_src, rel, 2, |v| {
            v.as_object_mut().unwrap().remove("tags");
        }),
        at(2, "tags") + ": missing",
    );
    add(
        "an extra field",
        rel,
        edit_json(suite_src, rel, 2, |v| v["note"] = "x".into()),
        at(2, "note") + ": unknown field",
    );
    add(
        "an extra input",
        rel,
        edit_json(suite_src, rel, 2, |v| v["inputs"]["mood"] = "x".into()),
        at(2, "inputs.mood") + ": unknown field",
    );
    add(
        "the same key twice",
        rel,
        replace_line(suite_src, rel, 2, line2.replacen("{\"id\": ", "{\"id\": \"x\", \"id\": ", 1).as_bytes()),
        at(2, "id") + ": given twice",
    );
    let first_id = serde_json::from_str::<serde_json::Value>(&suite_line(suite_src, rel, 1)).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    add(
        "a duplicate id",
        rel,
        edit_json(suite_src, rel, 3, |v| v["id"] = first_id.clone().into()),
        format!("{}:3: field `id`: `{first_id}` is already used at", file),
    );
    add(
        "a 10 MB line",
        rel,
        {
            let mut b = fs::read(suite_src.join(rel)).unwrap();
            b.extend(long_unterminated("{\"id\": \"dialogue_base-999\", \"reference\": \""));
            b
        },
        format!("{file}:{}: field `(line)`", suite_line_count(suite_src, rel) + 1),
    );
    add(
        "deeply nested inputs",
        rel,
        {
            let mut b = fs::read(suite_src.join(rel)).unwrap();
            b.extend(deeply_nested("inputs"));
            b
        },
        format!("{file}:{}: field `(line)`", suite_line_count(suite_src, rel) + 1),
    );
    add("an empty file", rel, Vec::new(), format!("{file}: file is empty"));
    add(
        "CRLF and a BOM (accepted)",
        rel,
        {
            let text = fs::read_to_string(suite_src.join(rel)).unwrap();
            format!("\u{feff}{}", text.replace('\n', "\r\n")).into_bytes()
        },
        String::new(),
    );
    let safety = "safety/sap_safety.en.jsonl";
    let en_lines = suite_line_count(suite_src, safety);
    add(
        "the English safety set one line short",
        safety,
        {
            let text = fs::read_to_string(suite_src.join(safety)).unwrap();
            text.lines().take(en_lines - 1).map(|l| format!("{l}\n")).collect::<String>().into_bytes()
        },
        {
            let last_zh = format!("sap-{:03}", en_lines);
            format!("field `id`: the safety set needs `{last_zh}-en`")
        },
    );
    let persona = "personas/shen-yan.json";
    let card = fs::read_to_string(suite_src.join(persona)).unwrap();
    let age_line = card.lines().position(|l| l.contains("\"age\"")).unwrap() + 1;
    let name_line = card.lines().position(|l| l.contains("\"name\"")).unwrap() + 1;
    let bad = {
        let at = card.find("沈砚").unwrap() + "沈".len();
        [&card.as_bytes()[..at], b"\xff", &card.as_bytes()[at..]].concat()
    };
    add(
        "a persona card with invalid UTF-8",
        persona,
        bad,
        format!("shen-yan.json:{name_line}: field `(line)`: invalid UTF-8"),
    );
    add("a persona card with a BOM (accepted)", persona, format!("\u{feff}{card}").into_bytes(), String::new());
    add("a persona card with CRLF (accepted)", persona, card.replace('\n', "\r\n").into_bytes(), String::new());
    add(
        "a persona's age is a string",
        persona,
        card.replacen("\"age\": 27", "\"age\": \"27\"", 1).into_bytes(),
        format!("shen-yan.json:{age_line}: field `age`"),
    );
    add(
        "a persona card with an extra field",
        persona,
        card.replacen("\"age\": 27,", "\"age\": 27, \"blood\": \"O\",", 1).into_bytes(),
        format!("shen-yan.json:{age_line}: field `blood`"),
    );
    add("an empty persona card", persona, Vec::new(), "shen-yan.json:1: field".to_string());
    add("a persona card nested deeply", persona, deeply_nested("likes"), "shen-yan.json:1: field".to_string());
    let mut push = |name: &str, spoil: Spoil, want: String| {
        cases.push(Case { loader: Loader::Suite, name: name.to_string(), want, spoil });
    };
    push(
        "a directory where a scenario file should be",
        Spoil::Write(PathBuf::from(rel), None),
        format!("{file}: is a directory"),
    );
    push(
        "a directory where a persona card should be",
        Spoil::Write(PathBuf::from(persona), None),
        "shen-yan.json: is a directory".into(),
    );
    push(
        "a file of an unknown stem",
        Spoil::Add(PathBuf::from("scenarios/dialogue_extra.jsonl"), b"{}\n".to_vec()),
        "dialogue_extra.jsonl: `dialogue_extra` is not a sub-task stem".into(),
    );
}

fn suite_line_count(suite_src: &Path, rel: &str) -> usize {
    fs::read_to_string(suite_src.join(rel)).unwrap().lines().count()
}

fn config_cases(cases: &mut Vec<Case>) {
    let file = "h2htalk.toml";
    let mut add = |name: &str, body: Vec<u8>, want: String| {
        cases.push(Case {
            loader: Loader::Config,
            name: name.to_string(),
            want,
            spoil: Spoil::Write(PathBuf::from(file), Some(body)),
        });
    };
    let at = |line: usize, field: &str| format!("{file}:{line}: field `{field}`");
    let with = |extra: &str| format!("{VALID_CONFIG}{extra}\n").into_bytes();
    add("a valid config (accepted)", VALID_CONFIG.as_bytes().to_vec(), String::new());
    add("a config with CRLF (accepted)", VALID_CONFIG.replace('\n', "\r\n").into_bytes(), String::new());
    add(
        "invalid UTF-8",
        [VALID_CONFIG.as_bytes(), b"model = \"caf\xe9\"\n"].concat(),
        at(5, "(line)") + ": invalid UTF-8",
    );
    add("a BOM in the middle", with("\u{feff}seed = 1"), at(5, "(line)") + ": a byte-order mark");
    add(
        "max_tokens a string",
        VALID_CONFIG.replace("max_tokens = 64", "max_tokens = \"64\"").into_bytes(),
        at(4, "model[0].max_tokens"),
    );
    add(
        "max_tokens negative",
        VALID_CONFIG.replace("max_tokens = 64", "max_tokens = -1").into_bytes(),
        at(4, "model[0].max_tokens"),
    );
    add("temperature a table", with("temperature = { value = 0 }"), at(5, "model[0].temperature"));
    add("headers not strings", with("[model.headers]\nX-Retry = 3"), at(6, "model[0].headers.X-Retry"));
    add(
        "name missing",
        b"[[model]]\nbase_url = \"http://127.0.0.1:9/v1\"\n".to_vec(),
        at(1, "model[0].name") + ": missing",
    );
    add("base_url missing", b"[[model]]\nname = \"m\"\n".to_vec(), at(1, "model[0].base_url") + ": missing");
    add("an unknown field", with("temprature = 0.5"), at(5, "model[0].temprature") + ": unknown field");
    add("an unknown table", b"[[models]]\nname = \"m\"\n".to_vec(), at(1, "models") + ": unknown field");
    add("a key given twice", with("max_tokens = 32"), at(5, "model[0].max_tokens") + ": duplicate key");
    add(
        "a model name used twice",
        format!("{VALID_CONFIG}{VALID_CONFIG}").into_bytes(),
        at(6, "model[1].name") + ": `m` is used twice",
    );
    add("max_concurrency zero", with("max_concurrency = 0"), at(5, "model[0].max_concurrency") + ": must be positive");
    add("timeout negative", with("timeout_s = -1.0"), at(5, "model[0].timeout_s") + ": must be positive");
    add("max_attempts zero", with("max_attempts = 0"), at(5, "model[0].max_attempts") + ": must be positive");
    add("an unknown provider", with("provider = \"anthropic\""), at(5, "model[0].provider"));
    add(
        "a 10 MB line",
        {
            let mut b = VALID_CONFIG.as_bytes().to_vec();
            b.extend(long_unterminated("model = \""));
            b
        },
        at(5, "model[0].model"),
    );
    add(
        "deeply nested arrays",
        format!("{VALID_CONFIG}base_urls = {}{}\n", "[".repeat(DEPTH), "]".repeat(DEPTH)).into_bytes(),
        at(5, "(line)"),
    );
    add("an empty file", Vec::new(), format!("{file}: holds no [[model]] entry"));
    add(
        "CRLF and a BOM (accepted)",
        format!("\u{feff}{}", VALID_CONFIG.replace('\n', "\r\n")).into_bytes(),
        String::new(),
    );
    add("a bare string", b"\"just a string\"\n".to_vec(), at(1, "(line)"));
    cases.push(Case {
        loader: Loader::Config,
        name: "a directory where the file should be".into(),
        want: format!("{file}: is a directory"),
        spoil: Spoil::Write(PathBuf::from(file), None),
    });
}

/// Every case for `loader`.
pub fn cases(loader: Loader, suite_src: &Path) -> Vec<Case> {
    let mut out = Vec::new();
    match loader {
        Loader::References | Loader::Predictions => official_cases(loader, &mut out),
        Loader::Suite => suite_cases(suite_src, &mut out),
        Loader::Config => config_cases(&mut out),
    }
    out
}

/// The project's suite.
pub fn project_suite() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites")
}

/// Runs every case of `loader` through `load` (in a fresh directory each) and checks each outcome:
/// a bad input is rejected with a message of at most 4,000 bytes that contains what the case
/// wants; an odd but valid form loads. Panics listing every wrong case; otherwise prints and
/// returns (rejected naming a line and field, rejected naming the file as a whole, valid forms
/// accepted).
pub fn check_loader(loader: Loader, what: &str, load: impl Fn(&Built) -> Result<(), String>) -> (usize, usize, usize) {
    let suite_src = project_suite();
    let all = cases(loader, &suite_src);
    let (mut in_line, mut whole_file, mut accepted) = (0, 0, 0);
    let mut wrong = Vec::new();
    for case in &all {
        let tmp = tempfile::TempDir::new().unwrap();
        let built = case.build(tmp.path(), &suite_src);
        match load(&built) {
            Ok(()) if case.must_load() => accepted += 1,
            Ok(()) => wrong.push(format!("{}: accepted, should fail with {}", case.name, case.want)),
            Err(msg) if case.must_load() => wrong.push(format!("{}: should load, failed with {msg}", case.name)),
            Err(msg) if !msg.contains(&case.want) || msg.len() > 4_000 => {
                let shown: String = msg.chars().take(600).collect();
                wrong.push(format!("{}:\n  got  {shown} ({} bytes)\n  want {}", case.name, msg.len(), case.want));
            }
            Err(_) if case.want.contains(": field `") => in_line += 1,
            Err(_) => whole_file += 1,
        }
    }
    assert!(wrong.is_empty(), "{what}: {} of {} cases wrong:\n{}", wrong.len(), all.len(), wrong.join("\n"));
    eprintln!(
        "hostile corpus, {what}: {} cases: {in_line} rejected naming file:line:field, {whole_file} naming the file \
         (faults of the whole file), {accepted} valid forms accepted",
        all.len()
    );
    (in_line, whole_file, accepted)
}
