//! Loading official-layout directories: what is accepted, and the error for each kind of fault.

use std::fs;
use std::path::Path;

use h2htalk_data::{Task, load_predictions, load_references};
use tempfile::TempDir;

/// A reference directory with `n` lines per sub-task: `ref <stem> <i>`.
fn references(n: usize) -> TempDir {
    let dir = TempDir::new().unwrap();
    for t in Task::ALL {
        let body: String = (1..=n).map(|i| format!("{{\"response\": \"ref {} {i}\"}}\r\n", t.stem())).collect();
        fs::write(dir.path().join(format!("{}.jsonl", t.stem())), body).unwrap();
    }
    fs::write(dir.path().join("README.md"), "not data").unwrap();
    dir
}

/// A prediction directory where every sub-task file holds `lines`.
fn predictions(lines: &[&str]) -> TempDir {
    let dir = TempDir::new().unwrap();
    for t in Task::ALL {
        fs::write(dir.path().join(format!("{}.jsonl", t.stem())), lines.join("\n") + "\n").unwrap();
    }
    dir
}

fn write(dir: &Path, task: Task, body: &str) {
    fs::write(dir.join(format!("{}.jsonl", task.stem())), body).unwrap();
}

#[test]
fn references_load_with_crlf_and_fingerprint_ignores_line_endings() {
    let crlf = references(2);
    let set = load_references(crlf.path()).unwrap();
    assert_eq!(set.len(), 22);
    assert_eq!(set.texts(Task::ItineraryMiddle), ["ref itinerary_middle 1", "ref itinerary_middle 2"]);

    let lf = references(2);
    for t in Task::ALL {
        let p = lf.path().join(format!("{}.jsonl", t.stem()));
        let body = fs::read_to_string(&p).unwrap().replace("\r\n", "\n");
        fs::write(&p, format!("\u{feff}{}", body.trim_end())).unwrap();
    }
    let lf_set = load_references(lf.path()).unwrap();
    assert_eq!(lf_set.fingerprint(), set.fingerprint());
    assert_ne!(lf_set.files[&Task::DialogueBase].sha256, set.files[&Task::DialogueBase].sha256);
}

#[test]
fn reference_faults_name_file_line_and_field() {
    let cases = [
        ("{\"response\": \"a\"}\n{\"answer\": \"b\"}\n", "dialogue_emotion.jsonl:2: field `answer`: unknown field"),
        (
            "{\"response\": \"a\"}\n{\"response\": 3}\n",
            "dialogue_emotion.jsonl:2: field `response`: expected a string, found a number",
        ),
        ("{\"response\": \"a\"}\n{}\n", "dialogue_emotion.jsonl:2: field `response`: missing"),
    ];
    for (body, want) in cases {
        let dir = references(2);
        write(dir.path(), Task::DialogueEmotion, body);
        let err = load_references(dir.path()).unwrap_err().to_string();
        assert!(err.contains(want), "{err}\nshould contain {want}");
    }

    let empty = TempDir::new().unwrap();
    let err = load_references(empty.path()).unwrap_err().to_string();
    assert!(err.contains("holds no <stem>.jsonl file"), "{err}");

    let dir = references(1);
    fs::write(dir.path().join("dialogue_extra.jsonl"), "{\"response\": \"x\"}\n").unwrap();
    let err = load_references(dir.path()).unwrap_err().to_string();
    assert!(err.contains("dialogue_extra.jsonl: unexpected file"), "{err}");

    let dir = references(1);
    fs::remove_file(dir.path().join("dialogue_base.jsonl")).unwrap();
    fs::create_dir(dir.path().join("dialogue_base.jsonl")).unwrap();
    let err = load_references(dir.path()).unwrap_err().to_string();
    assert!(err.contains("dialogue_base.jsonl: is a directory"), "{err}");
}

#[test]
fn predictions_accept_three_shapes_matched_by_line() {
    let refs = load_references(references(3).path()).unwrap();
    let preds = predictions(&[
        r#"{"response": "one"}"#,
        r#"{"answer": "two"}"#,
        r#"{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "three"}, {"role": "user", "content": "later"}]}"#,
    ]);
    let set = load_predictions(preds.path(), &refs).unwrap();
    assert_eq!(set.texts(Task::DialogueBase), ["one", "two", "three"]);

    let sharegpt = predictions(&[
        r#"{"messages": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}"#,
        r#"{"response": ""}"#,
        r#"{"response": "c"}"#,
    ]);
    let set = load_predictions(sharegpt.path(), &refs).unwrap();
    assert_eq!(set.texts(Task::ItineraryFeedback), ["a", "", "c"]);
}

#[test]
fn a_subset_of_references_needs_exactly_the_same_prediction_files() {
    let refs_dir = references(2);
    fs::remove_file(refs_dir.path().join("itinerary_basic.jsonl")).unwrap();
    let refs = load_references(refs_dir.path()).unwrap();
    assert_eq!(refs.files.len(), 10);
    assert!(refs.texts(Task::ItineraryBasic).is_empty());

    let preds = predictions(&[r#"{"response": "a"}"#, r#"{"response": "b"}"#]);
    let err = load_predictions(preds.path(), &refs).unwrap_err().to_string();
    assert!(
        err.contains("itinerary_basic.jsonl: unexpected file: the references have no itinerary_basic.jsonl"),
        "{err}"
    );

    fs::remove_file(preds.path().join("itinerary_basic.jsonl")).unwrap();
    fs::remove_file(preds.path().join("dialogue_schedule.jsonl")).unwrap();
    let err = load_predictions(preds.path(), &refs).unwrap_err().to_string();
    assert!(err.contains("missing file(s): dialogue_schedule.jsonl; the references have them"), "{err}");
}

#[test]
fn predictions_with_index_are_matched_explicitly() {
    let refs = load_references(references(3).path()).unwrap();
    let preds = predictions(&[
        r#"{"index": 3, "response": "c"}"#,
        r#"{"index": 1, "response": "a"}"#,
        r#"{"index": 2, "answer": "b"}"#,
    ]);
    let set = load_predictions(preds.path(), &refs).unwrap();
    assert_eq!(set.texts(Task::RecollectionRefine), ["a", "b", "c"]);
}

#[test]
fn prediction_faults_name_file_line_and_field() {
    let refs = load_references(references(3).path()).unwrap();
    let cases: [(&[&str], &str); 9] = [
        (&[r#"{"response": "a"}"#, r#"{"response": "b"}"#], "2 prediction line(s) for 3 reference(s)"),
        (
            &[r#"{"index": 1, "response": "a"}"#, r#"{"response": "b"}"#, r#"{"index": 3, "response": "c"}"#],
            ":2: field `index`: missing, but other lines carry `index`",
        ),
        (
            &[
                r#"{"index": 1, "response": "a"}"#,
                r#"{"index": 1, "response": "b"}"#,
                r#"{"index": 3, "response": "c"}"#,
            ],
            ":2: field `index`: 1 already given on line 1",
        ),
        (&[r#"{"index": 4, "response": "a"}"#], ":1: field `index`: 4 is past the last reference (3)"),
        (&[r#"{"index": 1, "response": "a"}"#, r#"{"index": 3, "response": "c"}"#], "no prediction for index 2 of 3"),
        (&[r#"{"index": 0, "response": "a"}"#], ":1: field `index`: expected a 1-based integer"),
        (&[r#"{"response": "a", "answer": "b"}"#], ":1: field `response+answer`: more than one answer field"),
        (&[r#"{"messages": [{"role": "user", "content": "q"}]}"#], ":1: field `messages`: no assistant (or gpt) turn"),
        (&[r#"{"text": "a"}"#], ":1: field `text`: unknown field"),
    ];
    for (lines, want) in cases {
        let preds = predictions(lines);
        let err = load_predictions(preds.path(), &refs).unwrap_err().to_string();
        assert!(err.contains("dialogue_base.jsonl") && err.contains(want), "{err}\nshould contain {want}");
    }
}
