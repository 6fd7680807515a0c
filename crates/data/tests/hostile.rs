//! The hostile-input corpus (tests/common/corpus.rs) against the library loaders: every bad file
//! is rejected with an error naming its file, line and field (or the file, for faults of a whole
//! file), the message stays short whatever the input's size, and the odd-but-valid forms load.

use h2htalk_testkit::corpus;

use corpus::{Loader, check_loader};
use h2htalk_data::{load_predictions, load_references, load_suite};

#[test]
fn hostile_reference_files_are_rejected_naming_file_line_and_field() {
    check_loader(Loader::References, "references", |built| {
        load_references(&built.references).map(|_| ()).map_err(|e| e.to_string())
    });
}

#[test]
fn hostile_prediction_files_are_rejected_naming_file_line_and_field() {
    check_loader(Loader::Predictions, "predictions", |built| {
        let refs = load_references(&built.references).unwrap();
        load_predictions(&built.predictions, &refs).map(|_| ()).map_err(|e| e.to_string())
    });
}

#[test]
fn hostile_suite_files_are_rejected_naming_file_line_and_field() {
    check_loader(Loader::Suite, "suite", |built| load_suite(&built.suite).map(|_| ()).map_err(|e| e.to_string()));
}
