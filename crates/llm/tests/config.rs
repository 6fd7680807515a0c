//! The hostile-input corpus for `h2htalk.toml` (crates/data/tests/common/corpus.rs): every bad file
//! is rejected with an error naming the file, the line and the field, with a short message.

#[path = "../../data/tests/common/corpus.rs"]
mod corpus;

use corpus::{Loader, cases, project_suite};
use h2htalk_llm::Config;
use tempfile::TempDir;

#[test]
fn hostile_config_files_are_rejected_naming_file_line_and_field() {
    let all = cases(Loader::Config, &project_suite());
    let (mut in_line, mut whole_file, mut accepted) = (0, 0, 0);
    let mut wrong = Vec::new();
    for case in &all {
        let tmp = TempDir::new().unwrap();
        let built = case.build(tmp.path(), &project_suite());
        match Config::load(&built.config) {
            Ok(c) if case.must_load() => {
                assert_eq!(c.model.len(), 1);
                accepted += 1;
            }
            Ok(_) => wrong.push(format!("{}: accepted, should fail with {}", case.name, case.want)),
            Err(e) => {
                let msg = e.to_string();
                if case.must_load() {
                    wrong.push(format!("{}: should load, failed with {msg}", case.name));
                } else if !msg.contains(&case.want) || msg.len() > 4_000 {
                    let shown: String = msg.chars().take(600).collect();
                    wrong.push(format!("{}:\n  got  {shown} ({} bytes)\n  want {}", case.name, msg.len(), case.want));
                } else if e.line.is_some() {
                    assert!(e.field.is_some(), "{msg}");
                    in_line += 1;
                } else {
                    whole_file += 1;
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{} of {} cases wrong:\n{}", wrong.len(), all.len(), wrong.join("\n"));
    eprintln!(
        "hostile corpus, config: {} cases: {in_line} rejected naming file:line:field, {whole_file} naming the file \
         (faults of the whole file), {accepted} valid forms accepted",
        all.len()
    );
}
