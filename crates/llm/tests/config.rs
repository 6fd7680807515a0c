//! The hostile-input corpus for `h2htalk.toml` (crates/data/tests/common/corpus.rs): every bad file
//! is rejected with an error naming the file, the line and the field, with a short message.

use h2htalk_testkit::corpus;

use corpus::{Loader, check_loader};
use h2htalk_llm::Config;

#[test]
fn hostile_config_files_are_rejected_naming_file_line_and_field() {
    check_loader(Loader::Config, "config", |built| {
        let config = Config::load(&built.config).map_err(|e| {
            // An error that names a line names its field too.
            assert!(e.line.is_none() || e.field.is_some(), "{e}");
            e.to_string()
        })?;
        assert_eq!(config.model.len(), 1);
        Ok(())
    });
}
