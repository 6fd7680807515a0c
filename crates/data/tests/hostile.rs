//! The hostile-input corpus (tests/common/corpus.rs) against the library loaders: every bad file
//! is rejected with an error naming its file, line and field (or the file, for faults of a whole
//! file), the message stays short whatever the input's size, and the odd-but-valid forms load.

#[path = "common/corpus.rs"]
mod corpus;

use corpus::{Loader, cases, project_suite};
use h2htalk_data::{load_predictions, load_references, load_suite};
use tempfile::TempDir;

/// Runs the corpus of `loader`; returns (rejected naming a line and field, rejected naming the
/// file as a whole, valid forms accepted).
fn check(loader: Loader) -> (usize, usize, usize) {
    let suite_src = project_suite();
    let all = cases(loader, &suite_src);
    let (mut in_line, mut whole_file, mut accepted) = (0, 0, 0);
    let mut wrong = Vec::new();
    for case in &all {
        let tmp = TempDir::new().unwrap();
        let built = case.build(tmp.path(), &suite_src);
        let result = match loader {
            Loader::References => load_references(&built.references).map(|_| ()),
            Loader::Predictions => {
                let refs = load_references(&built.references).unwrap();
                load_predictions(&built.predictions, &refs).map(|_| ())
            }
            Loader::Suite => load_suite(&built.suite).map(|_| ()),
            Loader::Config => unreachable!("the config corpus runs in crates/llm/tests/config.rs"),
        };
        match result {
            Ok(()) if case.must_load() => accepted += 1,
            Ok(()) => wrong.push(format!("{}: accepted, should fail with {}", case.name, case.want)),
            Err(e) => {
                let msg = e.to_string();
                if case.must_load() {
                    wrong.push(format!("{}: should load, failed with {msg}", case.name));
                } else if !msg.contains(&case.want) || msg.len() > 4_000 {
                    let shown: String = msg.chars().take(600).collect();
                    wrong.push(format!("{}:\n  got  {shown} ({} bytes)\n  want {}", case.name, msg.len(), case.want));
                } else if case.want.contains(": field `") {
                    in_line += 1;
                } else {
                    whole_file += 1;
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{loader:?}: {} of {} cases wrong:\n{}", wrong.len(), all.len(), wrong.join("\n"));
    (in_line, whole_file, accepted)
}

fn report(what: &str, (in_line, whole_file, accepted): (usize, usize, usize)) {
    eprintln!(
        "hostile corpus, {what}: {} cases: {in_line} rejected naming file:line:field, {whole_file} naming the file \
         (faults of the whole file), {accepted} valid forms accepted",
        in_line + whole_file + accepted
    );
}

#[test]
fn hostile_reference_files_are_rejected_naming_file_line_and_field() {
    report("references", check(Loader::References));
}

#[test]
fn hostile_prediction_files_are_rejected_naming_file_line_and_field() {
    report("predictions", check(Loader::Predictions));
}

#[test]
fn hostile_suite_files_are_rejected_naming_file_line_and_field() {
    report("suite", check(Loader::Suite));
}
