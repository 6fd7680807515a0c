//! Property tests: the parsers never panic, whatever the bytes, and what they accept is
//! consistent (line numbers, round trips). Each test prints how many cases it tried.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use h2htalk_data::jsonl::parse_objects;
use h2htalk_data::suite::{ClockTime, Date, answer_violations};
use h2htalk_data::{Suite, Task, load_predictions, load_references, load_suite};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use tempfile::TempDir;

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites")
}

static SUITE: LazyLock<Suite> = LazyLock::new(|| load_suite(&suite_dir()).unwrap());

/// Bytes that look like JSON Lines often enough to get past the first character: pieces of JSON,
/// separators, BOMs, CR/LF, invalid UTF-8 and non-ASCII text.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"[".to_vec()),
        Just(b"]".to_vec()),
        Just(b"\"response\"".to_vec()),
        Just(b"\"answer\"".to_vec()),
        Just(b"\"messages\"".to_vec()),
        Just(b"\"index\"".to_vec()),
        Just(b"\"role\"".to_vec()),
        Just(b"\"assistant\"".to_vec()),
        Just(b"\"content\"".to_vec()),
        Just(b":".to_vec()),
        Just(b",".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(b"\xff".to_vec()),
        Just(b"\xc3".to_vec()),
        Just(b"null".to_vec()),
        Just(b"1".to_vec()),
        Just(b"-0.5e3".to_vec()),
        Just(b"18446744073709551616".to_vec()),
        Just("\"你好\\n（笑）\"".as_bytes().to_vec()),
        Just(b"\"\\ud800\"".to_vec()),
        ".{0,6}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

/// A valid prediction or reference line, so that whole files sometimes parse.
fn good_line() -> impl Strategy<Value = String> {
    (".{0,20}", 0u8..4).prop_map(|(text, shape)| {
        let t = serde_json::to_string(&text).unwrap();
        match shape {
            0 => format!("{{\"response\": {t}}}"),
            1 => format!("{{\"answer\": {t}}}"),
            2 => format!("{{\"messages\": [{{\"role\": \"assistant\", \"content\": {t}}}]}}"),
            _ => format!("{{\"response\": {t}, \"index\": 1}}"),
        }
    })
}

/// A runner whose failing inputs are saved in the repository (tests/proptest-regressions), and
/// run again first on every later run, so that a failure found once is reproduced every time.
fn runner(cases: u32) -> TestRunner {
    let saved = FileFailurePersistence::Direct(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proptest-regressions/properties.txt"));
    TestRunner::new(Config {
        cases,
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(saved)),
        ..Config::default()
    })
}

#[test]
fn the_jsonl_reader_never_panics_and_numbers_lines_in_order() {
    let tried = AtomicUsize::new(0);
    let mut r = runner(4000);
    let input = prop_oneof![jsonish(), proptest::collection::vec(any::<u8>(), 0..200)];
    r.run(&input, |bytes| {
        tried.fetch_add(1, Ordering::Relaxed);
        match parse_objects(Path::new("p.jsonl"), &bytes) {
            Ok(lines) => {
                for (i, l) in lines.iter().enumerate() {
                    prop_assert_eq!(l.number, i + 1);
                }
            }
            Err(e) => prop_assert!(e.to_string().starts_with("p.jsonl"), "{}", e),
        }
        Ok(())
    })
    .unwrap();
    eprintln!("jsonl reader: {} arbitrary inputs, no panic", tried.into_inner());
}

#[test]
fn valid_lines_always_parse_whatever_the_line_endings() {
    let tried = AtomicUsize::new(0);
    let mut r = runner(1000);
    let input = (proptest::collection::vec(good_line(), 1..8), any::<bool>(), any::<bool>(), any::<bool>());
    r.run(&input, |(lines, crlf, bom, final_newline)| {
        tried.fetch_add(1, Ordering::Relaxed);
        let sep = if crlf { "\r\n" } else { "\n" };
        let mut text = lines.join(sep);
        if final_newline {
            text.push_str(sep);
        }
        if bom {
            text.insert(0, '\u{feff}');
        }
        let parsed =
            parse_objects(Path::new("p.jsonl"), text.as_bytes()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(parsed.len(), lines.len());
        for (p, l) in parsed.iter().zip(&lines) {
            let want: serde_json::Value = serde_json::from_str(l).unwrap();
            prop_assert_eq!(&serde_json::Value::Object(p.object.clone()), &want);
        }
        Ok(())
    })
    .unwrap();
    eprintln!("jsonl reader: {} valid files in every line-ending form, all parsed", tried.into_inner());
}

/// Writes a reference directory of one line per sub-task and a prediction directory whose
/// `dialogue_base.jsonl` is `bytes`.
fn official_dirs(bytes: &[u8]) -> TempDir {
    let tmp = TempDir::new().unwrap();
    for sub in ["references", "predictions"] {
        fs::create_dir(tmp.path().join(sub)).unwrap();
        for t in Task::ALL {
            fs::write(tmp.path().join(sub).join(format!("{}.jsonl", t.stem())), "{\"response\": \"好\"}\n").unwrap();
        }
    }
    fs::write(tmp.path().join("predictions/dialogue_base.jsonl"), bytes).unwrap();
    fs::write(tmp.path().join("references/dialogue_emotion.jsonl"), bytes).unwrap();
    tmp
}

#[test]
fn the_official_loaders_never_panic() {
    let tried = AtomicUsize::new(0);
    let mut r = runner(400);
    let input = prop_oneof![
        jsonish(),
        proptest::collection::vec(good_line(), 0..4).prop_map(|l| (l.join("\n") + "\n").into_bytes()),
    ];
    r.run(&input, |bytes| {
        tried.fetch_add(1, Ordering::Relaxed);
        let tmp = official_dirs(&bytes);
        if let Ok(refs) = load_references(&tmp.path().join("references")) {
            let _ = load_predictions(&tmp.path().join("predictions"), &refs);
        }
        let _ = load_references(&tmp.path().join("predictions"));
        Ok(())
    })
    .unwrap();
    eprintln!("official loaders: {} arbitrary files, no panic", tried.into_inner());
}

/// A dialogue_base scenario line of the suite as JSON, with arbitrary values put at arbitrary paths.
fn mutated_scenario() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        ".{0,12}".prop_map(serde_json::Value::from),
        "[0-2][0-9]:[0-6][0-9]".prop_map(serde_json::Value::from),
        "20[0-9]{2}-[01][0-9]-[0-3][0-9]".prop_map(serde_json::Value::from),
        Just(serde_json::json!([])),
        Just(serde_json::json!({})),
        Just(serde_json::json!([{"role": "user", "content": "嗯"}])),
        Just(serde_json::json!([{"time": "09:00", "activity": "看书"}])),
    ];
    // Scenarios of dialogue_base, the file the test replaces; sometimes left as they are.
    let ids: Vec<usize> = (0..SUITE.scenarios.len())
        .filter(|&i| SUITE.scenarios[i].task == Task::DialogueBase && !Suite::is_safety(&SUITE.scenarios[i]))
        .collect();
    (proptest::sample::select(ids), proptest::collection::vec((0usize..64, value), 0..4)).prop_map(|(i, edits)| {
        let s = &SUITE.scenarios[i];
        let line = fs::read_to_string(&s.source.path).unwrap().lines().nth(s.source.line - 1).unwrap().to_string();
        let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
        for (pick, new) in edits {
            set_somewhere(&mut v, pick, new);
        }
        v.to_string()
    })
}

/// Replaces the `pick`-th (mod count) value of `v`, walking depth first.
fn set_somewhere(v: &mut serde_json::Value, pick: usize, new: serde_json::Value) {
    fn count(v: &serde_json::Value) -> usize {
        1 + match v {
            serde_json::Value::Array(a) => a.iter().map(count).sum(),
            serde_json::Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    fn walk(v: &mut serde_json::Value, target: &mut usize, new: &mut Option<serde_json::Value>) {
        if *target == 0 {
            if let Some(n) = new.take() {
                *v = n;
            }
            return;
        }
        *target -= 1;
        match v {
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, target, new)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| walk(x, target, new)),
            _ => {}
        }
    }
    let mut target = pick % count(v);
    walk(v, &mut target, &mut Some(new));
}

#[test]
fn the_suite_loader_never_panics_on_mutated_scenarios() {
    let tried = AtomicUsize::new(0);
    let (rejected, accepted) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let mut r = runner(160);
    let input = prop_oneof![3 => mutated_scenario().prop_map(String::into_bytes), 1 => jsonish()];
    let scenarios = fs::read_dir(suite_dir().join("scenarios")).unwrap().count();
    assert_eq!(scenarios, 11);
    r.run(&input, |line| {
        tried.fetch_add(1, Ordering::Relaxed);
        let tmp = TempDir::new().unwrap();
        for sub in ["scenarios", "safety", "personas"] {
            fs::create_dir(tmp.path().join(sub)).unwrap();
            for e in fs::read_dir(suite_dir().join(sub)).unwrap() {
                let p = e.unwrap().path();
                fs::copy(&p, tmp.path().join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
        let mut body = line.clone();
        body.push(b'\n');
        fs::write(tmp.path().join("scenarios/dialogue_base.jsonl"), &body).unwrap();
        match load_suite(tmp.path()) {
            Ok(_) => _ = accepted.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                prop_assert!(e.to_string().contains(".jsonl:") || e.to_string().contains(".json"), "{}", e);
                rejected.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    })
    .unwrap();
    eprintln!(
        "suite loader: {} mutated files, no panic ({} rejected naming the file, {} valid)",
        tried.into_inner(),
        rejected.into_inner(),
        accepted.into_inner()
    );
}

#[test]
fn answer_checks_and_value_parsers_never_panic() {
    let tried = AtomicUsize::new(0);
    // One scenario of every sub-task and a safety scenario: the answer checks differ per sub-task.
    let mut picks: Vec<usize> =
        Task::ALL.iter().map(|t| SUITE.scenarios.iter().position(|s| s.task == *t).unwrap()).collect();
    picks.push(SUITE.scenarios.iter().position(Suite::is_safety).unwrap());
    let answer = prop_oneof![
        ".{0,80}",
        "([0-9]{1,3}\\. )?[0-2]?[0-9]:[0-9]{1,2} .{0,8}(\n[0-9]?\\.? ?[0-2][0-9]:[0-5][0-9] .{0,8}){0,8}",
        "(记忆内容：.{0,22}\n记忆类别：.{0,4}\n记忆重要性：[0-3x]\n{0,2}){0,3}",
        "[（(]?.{0,10}[）)]?.{0,40}",
    ];
    let mut r = runner(3000);
    r.run(&(0..picks.len(), answer, ".{0,12}"), |(i, text, value)| {
        tried.fetch_add(1, Ordering::Relaxed);
        let _ = answer_violations(&SUITE.scenarios[picks[i]], &text);
        if let Some(t) = ClockTime::parse(&value) {
            prop_assert_eq!(ClockTime::parse(&t.to_string()), Some(t));
        }
        if let Some(d) = Date::parse(&value) {
            prop_assert_eq!(Date::parse(&d.to_string()), Some(d));
        }
        Ok(())
    })
    .unwrap();
    eprintln!("answer checks, times and dates: {} arbitrary answers and values, no panic", tried.into_inner());
}
