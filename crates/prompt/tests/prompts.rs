//! Every scenario's prompt renders with SAP on and off; renderings of sample scenarios are pinned;
//! template and SAP faults are errors naming the file.

use std::fs;
use std::path::{Path, PathBuf};

use h2htalk_data::load_suite;
use h2htalk_data::suite::{Inputs, Lang};
use h2htalk_prompt::{Prompts, Sap, SapMode};

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites")
}

#[test]
fn every_scenario_renders_with_sap_on_and_off() {
    let suite = load_suite(&suite_dir()).unwrap();
    let prompts = Prompts::load(&suite_dir()).unwrap();
    let sap = prompts.sap();
    let mut rendered = 0;
    for s in &suite.scenarios {
        let on = prompts.render(&suite, s, SapMode::On).unwrap_or_else(|e| panic!("{}: {e}", s.id));
        let off = prompts.render(&suite, s, SapMode::Off).unwrap_or_else(|e| panic!("{}: {e}", s.id));
        assert_eq!(on.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(), ["system", "user"]);
        assert_eq!(on[1], off[1], "{}: the task message does not depend on SAP", s.id);
        for p in &sap.principles {
            let title = if s.lang == Lang::Zh { &p.zh.title } else { &p.en.title };
            assert!(on[0].content.contains(title.as_str()), "{}: SAP on lacks {}", s.id, p.id);
            assert!(!off[0].content.contains(title.as_str()), "{}: SAP off still has {}", s.id, p.id);
        }
        let persona = suite.persona_of(s);
        assert!(on[0].content.contains(&persona.name) && off[0].content.contains(&persona.occupation));
        // The inputs reach the model: the last turn, the memory or the feedback, whichever the task has.
        let must_show: Vec<&str> = match &s.inputs {
            Inputs::History { history, .. } | Inputs::Schedule { history, .. } => vec![&history.last().unwrap().content],
            Inputs::RawMemory { memory } => vec![memory],
            Inputs::Recall { memory, session, .. } => vec![&memory.content, &session.history[0].content],
            Inputs::Day { hobbies, memories, .. } => {
                hobbies.iter().chain(memories.iter().map(|m| &m.content)).map(String::as_str).collect()
            }
            Inputs::Overview { overview, .. } => vec![overview],
            Inputs::Expand { itinerary, .. } => itinerary.iter().map(|s| s.activity.as_str()).collect(),
            Inputs::Feedback { feedback, .. } => vec![feedback],
            Inputs::Share { memories, .. } => memories.iter().map(|m| m.content.as_str()).collect(),
        };
        for text in must_show {
            assert!(on[1].content.contains(text), "{}: the prompt lacks `{text}`", s.id);
        }
        assert!(!on[1].content.contains("\n\n\n"));
        rendered += 2;
    }
    println!("prompts: {rendered} renderings ({} scenarios × SAP on/off)", suite.scenarios.len());
    assert!(rendered >= 2 * 870);
}

/// Renderings pinned in tests/golden/prompts/<id>.<sap>.txt; H2HTALK_BLESS=1 rewrites them.
#[test]
fn sample_renderings_are_pinned() {
    let suite = load_suite(&suite_dir()).unwrap();
    let prompts = Prompts::load(&suite_dir()).unwrap();
    let dir = suite_dir().join("../tests/golden/prompts");
    for (id, sap) in [
        ("dialogue_schedule-003", SapMode::On),
        ("dialogue_base-002", SapMode::On),
        ("recollection_synthesize-002", SapMode::Off),
        ("itinerary_feedback-010", SapMode::On),
        ("sap-001-en", SapMode::On),
    ] {
        let messages = prompts.render(&suite, suite.get(id).unwrap(), sap).unwrap();
        let text: String = messages.iter().map(|m| format!("--- {} ---\n{}\n", m.role, m.content)).collect();
        let path = dir.join(format!("{id}.{}.txt", if sap == SapMode::On { "sap-on" } else { "sap-off" }));
        if h2htalk_testkit::rewrite_goldens("H2HTALK_BLESS") {
            fs::create_dir_all(&dir).unwrap();
            fs::write(&path, &text).unwrap();
        }
        let want = fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with H2HTALK_BLESS=1 to write it)", path.display()));
        assert_eq!(text, want, "{id}: rendering changed; if intended, rerun with H2HTALK_BLESS=1 and review the diff");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            copy_dir(&p, &to.join(p.file_name().unwrap()));
        } else {
            fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn template_and_sap_faults_name_the_file() {
    let tmp = tempfile::TempDir::new().unwrap();
    copy_dir(&suite_dir(), tmp.path());
    let suite = load_suite(tmp.path()).unwrap();

    fs::write(tmp.path().join("templates/zh/recollection_refine.j2"), "{{ inputs.memroy }}").unwrap();
    let prompts = Prompts::load(tmp.path()).unwrap();
    let s = suite.scenarios.iter().find(|s| s.task.stem() == "recollection_refine").unwrap();
    let err = prompts.render(&suite, s, SapMode::Off).unwrap_err().to_string();
    assert!(err.contains("zh/recollection_refine.j2") && err.contains("undefined"), "{err}");

    fs::remove_file(tmp.path().join("templates/en/itinerary_middle.j2")).unwrap();
    let err = Prompts::load(tmp.path()).err().unwrap().to_string();
    assert!(err.contains("templates/en/itinerary_middle.j2") && err.contains("missing template"), "{err}");
}

#[test]
fn sap_is_versioned_and_hashed() {
    let path = suite_dir().join("sap/principles.json");
    let sap = Sap::load(&path).unwrap();
    assert!(!sap.version.is_empty());
    assert_eq!(sap.hash(), Sap::load(&path).unwrap().hash());
    let mut changed = sap.clone();
    changed.principles[0].zh.text.push('。');
    assert_ne!(changed.hash(), sap.hash());

    let tmp = tempfile::TempDir::new().unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    json["principles"].as_array_mut().unwrap().retain(|p| p["id"] != "crisis");
    let bad = tmp.path().join("principles.json");
    fs::write(&bad, json.to_string()).unwrap();
    assert!(Sap::load(&bad).unwrap_err().to_string().contains("missing principle `crisis`"));
}
