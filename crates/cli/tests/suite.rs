//! `h2htalk suite check` and `h2htalk prompt show` as a user runs them.

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites")
}

fn h2htalk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h2htalk")).args(args).output().unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn suite_check_prints_counts_coverage_and_fingerprint() {
    let text = ok(h2htalk(&["suite", "check", suite_dir().to_str().unwrap()]));
    assert!(text.contains(": ok, 914 scenarios, 4 personas"), "{text}");
    let row = text.lines().find(|l| l.starts_with("safety set")).unwrap();
    assert_eq!(row.split_whitespace().nth(2), Some("66"), "{row}");
    assert_eq!(row.split_whitespace().nth(3), Some("66"), "{row}");
    assert!(text.contains("crisis_veiled 12"));
    assert!(text.lines().any(|l| l.starts_with("fingerprint sha256:")));
}

/// A suite whose no-information items are told apart by length alone fails `suite check`: the
/// suite's `recollection_synthesize` as it was before its hard negatives (its first 102 lines).
#[test]
fn suite_check_fails_when_length_gives_the_no_information_answer_away() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_tree(&suite_dir(), dir.path());
    let file = "scenarios/recollection_synthesize.jsonl";
    let text = std::fs::read_to_string(suite_dir().join(file)).unwrap();
    let first: String = text.lines().take(102).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join(file), first).unwrap();
    let out = h2htalk(&["suite", "check", dir.path().to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("+19.6 points (at most 10): TOO EASY BY LENGTH"), "{err}");
    let text = ok(h2htalk(&["suite", "check", suite_dir().to_str().unwrap()]));
    assert!(text.contains("(61 of 146 items)") && text.contains("+4.8 points (at most 10)\n"), "{text}");
}

#[test]
fn suite_check_fails_on_a_bad_directory() {
    let out = h2htalk(&["suite", "check", "/nonexistent-suite"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-suite: is not a directory"));
}

#[test]
fn prompt_show_prints_the_messages_with_and_without_sap() {
    let suite = suite_dir();
    let on = ok(h2htalk(&["prompt", "show", "sap-003", "--suite", suite.to_str().unwrap()]));
    assert!(on.contains("--- system ---") && on.contains("--- user ---"));
    assert!(on.contains("安全依恋原则") && on.contains("# templates sha256:"));
    let off = ok(h2htalk(&["prompt", "show", "sap-003", "--sap", "off", "--suite", suite.to_str().unwrap()]));
    assert!(!off.contains("安全依恋原则"));
    let json = ok(h2htalk(&["prompt", "show", "itinerary_middle-001", "--json", "--suite", suite.to_str().unwrap()]));
    let messages: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");

    let out = h2htalk(&["prompt", "show", "no-such-id", "--suite", suite.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no scenario `no-such-id`"));
}
