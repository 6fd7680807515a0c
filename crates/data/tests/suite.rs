//! The project's own suite passes validation with the coverage the issue asks for, and every kind of
//! fault in a suite file is reported with its file, line and field.

use std::fs;
use std::path::{Path, PathBuf};

use h2htalk_data::suite::stats::applies;
use h2htalk_data::suite::{Inputs, Lang, Risk};
use h2htalk_data::{Suite, Task, load_suite};
use serde_json::Value;
use tempfile::TempDir;

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../suites")
}

#[test]
fn our_suite_is_valid_and_covers_every_sub_task_and_risk() {
    let suite = load_suite(&suite_dir()).unwrap_or_else(|e| panic!("{e}"));
    for task in Task::ALL {
        let n = suite.scenarios.iter().filter(|s| s.task == task && !Suite::is_safety(s)).count();
        assert!(n >= 40, "{task}: {n} scenarios");
    }
    let plain: Vec<_> = suite.scenarios.iter().filter(|s| !Suite::is_safety(s)).collect();
    assert!(plain.len() >= 440);
    // Each flag, over the sub-tasks where it can be true (suites/FORMAT.md, `tags`).
    let share = |tag: &str, f: fn(&h2htalk_data::Scenario) -> bool| {
        let applicable: Vec<_> = plain.iter().filter(|s| applies(s.task, tag)).collect();
        applicable.iter().filter(|s| f(s)).count() as f64 / applicable.len() as f64
    };
    assert!(share("implicit_need", |s| s.tags.implicit_need) > 0.2, "implicit needs are well represented");
    assert!(share("changing_need", |s| s.tags.changing_need) > 0.2, "changing needs are well represented");
    assert!(share("multi_session", |s| s.tags.multi_session) > 0.2, "multi-session details are well represented");
    // Real sessions: every multi-session dialogue scenario carries earlier dated sessions.
    for s in plain.iter().filter(|s| s.inputs.history().is_some()) {
        let has_sessions = matches!(&s.inputs,
            Inputs::History { sessions, .. } | Inputs::Schedule { sessions, .. } if !sessions.is_empty());
        assert_eq!(has_sessions, s.tags.multi_session, "{}", s.id);
    }
    for lang in [Lang::Zh, Lang::En] {
        let safety: Vec<_> = suite.scenarios.iter().filter(|s| Suite::is_safety(s) && s.lang == lang).collect();
        assert!(safety.len() >= 60, "{lang}: {} safety scenarios", safety.len());
        for risk in Risk::ALL {
            assert!(safety.iter().any(|s| s.tags.risk == Some(risk)), "{lang}: no {risk:?}");
        }
    }
    assert!(suite.personas.contains_key("shen-yan") && suite.personas.contains_key("xia-xiaoman"));
    assert_eq!(suite.personas["shen-yan"].age, 27);
    assert!(suite.fingerprint().starts_with("sha256:"));
}

/// A copy of our suite in a temporary directory.
fn copy_suite() -> TempDir {
    let tmp = TempDir::new().unwrap();
    for sub in ["scenarios", "safety", "personas"] {
        fs::create_dir(tmp.path().join(sub)).unwrap();
        for entry in fs::read_dir(suite_dir().join(sub)).unwrap() {
            let p = entry.unwrap().path();
            fs::copy(&p, tmp.path().join(sub).join(p.file_name().unwrap())).unwrap();
        }
    }
    tmp
}

/// Rewrites line `n` (1-based) of `file` with `edit` applied to its JSON.
fn edit_line(dir: &Path, file: &str, n: usize, edit: impl FnOnce(&mut Value)) {
    let path = dir.join(file);
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut v: Value = serde_json::from_str(&lines[n - 1]).unwrap();
    edit(&mut v);
    lines[n - 1] = v.to_string();
    fs::write(&path, lines.join("\n") + "\n").unwrap();
}

/// A named fault: how to introduce it, and the error text it must produce.
type FaultCase = (&'static str, Box<dyn FnOnce(&Path)>, &'static str);

fn error_of(edit: impl FnOnce(&Path)) -> String {
    let tmp = copy_suite();
    edit(tmp.path());
    load_suite(tmp.path()).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn faults_are_reported_with_file_line_and_field() {
    let cases: Vec<FaultCase> = vec![
        (
            "unknown input key",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_base.jsonl", 3, |v| {
                    v["inputs"]["mood"] = "sad".into();
                })
            }),
            "dialogue_base.jsonl:3: field `inputs.mood`: unknown field `mood`, expected one of `sessions`, `date`, `history`",
        ),
        (
            "multi_session without sessions",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_base.jsonl", 1, |v| {
                    v["tags"]["multi_session"] = true.into();
                })
            }),
            "dialogue_base.jsonl:1: field `tags.multi_session`: is true, but the inputs carry no earlier session",
        ),
        (
            "a session after the current date",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_base.jsonl", 2, |v| {
                    v["inputs"]["sessions"][0]["date"] = "2026-03-22".into();
                })
            }),
            "dialogue_base.jsonl:2: field `inputs.sessions[0].date`: must come before the current `date`",
        ),
        (
            "sessions without a date",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_base.jsonl", 2, |v| {
                    v["inputs"].as_object_mut().unwrap().remove("date");
                })
            }),
            "dialogue_base.jsonl:2: field `inputs.date`: is missing: with `sessions`, give the date",
        ),
        (
            "a flag where it cannot apply",
            Box::new(|d| {
                edit_line(d, "scenarios/itinerary_middle.jsonl", 4, |v| {
                    v["tags"]["changing_need"] = true.into();
                })
            }),
            "itinerary_middle.jsonl:4: field `tags.changing_need`: cannot be true in itinerary_middle",
        ),
        (
            "bad time",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_schedule.jsonl", 2, |v| {
                    v["inputs"]["schedule"][1]["time"] = "9:00".into();
                })
            }),
            "dialogue_schedule.jsonl:2: field `inputs.schedule[1].time`: `9:00` is not a time of day",
        ),
        (
            "bad category",
            Box::new(|d| {
                edit_line(d, "scenarios/itinerary_initialize.jsonl", 5, |v| {
                    v["inputs"]["memories"][0]["category"] = "咖啡".into();
                })
            }),
            "itinerary_initialize.jsonl:5: field `inputs.memories[0].category`: `咖啡` is not one of the 24",
        ),
        (
            "unknown emotion",
            Box::new(|d| {
                edit_line(d, "scenarios/itinerary_basic.jsonl", 4, |v| {
                    v["tags"]["emotions"] = serde_json::json!(["melancholy"]);
                })
            }),
            "itinerary_basic.jsonl:4: field `tags.emotions[0]`: unknown variant `melancholy`",
        ),
        (
            "reply to the companion",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_emotion.jsonl", 7, |v| {
                    v["inputs"]["history"]
                        .as_array_mut()
                        .unwrap()
                        .push(serde_json::json!({"role": "assistant", "content": "嗯"}));
                })
            }),
            "dialogue_emotion.jsonl:7: field `inputs.history`: must end with a user turn",
        ),
        (
            "too long a reply",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_base.jsonl", 9, |v| {
                    v["reference"] =
                        "（笑）这是一句明显超过三十个字的回复，用来检查长度限制到底有没有生效，谢谢。".into();
                })
            }),
            "dialogue_base.jsonl:9: field `reference`: 35 characters outside the action, more than the 30 allowed",
        ),
        (
            "plan out of order",
            Box::new(|d| {
                edit_line(d, "scenarios/itinerary_middle.jsonl", 1, |v| {
                    v["reference"] = "09:00 画图\n08:00 早餐\n12:00 午饭\n22:00 睡觉".into();
                })
            }),
            "itinerary_middle.jsonl:1: field `reference`: plan line 2: 08:00 does not come after",
        ),
        (
            "unknown persona",
            Box::new(|d| {
                edit_line(d, "scenarios/recollection_refine.jsonl", 11, |v| {
                    v["persona"] = "nobody".into();
                })
            }),
            "recollection_refine.jsonl:11: field `persona`: `nobody` has no card",
        ),
        (
            "duplicate id",
            Box::new(|d| {
                edit_line(d, "scenarios/itinerary_feedback.jsonl", 2, |v| {
                    v["id"] = "itinerary_feedback-001".into();
                })
            }),
            "itinerary_feedback.jsonl:2: field `id`: `itinerary_feedback-001` is already used at",
        ),
        (
            "session after today",
            Box::new(|d| {
                edit_line(d, "scenarios/recollection_initialize.jsonl", 3, |v| {
                    v["inputs"]["today"] = "2000-01-01".into();
                })
            }),
            "recollection_initialize.jsonl:3: field `inputs.today`: 2000-01-01 is not after the session date",
        ),
        (
            "safety without its twin",
            Box::new(|d| {
                edit_line(d, "safety/sap_safety.en.jsonl", 1, |v| {
                    v["id"] = "sap-999-en".into();
                })
            }),
            "sap_safety.zh.jsonl:1: field `id`: the safety set needs `sap-001-en`",
        ),
        (
            "safety without expected",
            Box::new(|d| {
                edit_line(d, "safety/sap_safety.zh.jsonl", 2, |v| {
                    v.as_object_mut().unwrap().remove("expected");
                })
            }),
            "sap_safety.zh.jsonl:2: field `expected`: missing",
        ),
        (
            "task in the wrong file",
            Box::new(|d| {
                edit_line(d, "scenarios/dialogue_base.jsonl", 1, |v| {
                    v["task"] = "dialogue_emotion".into();
                })
            }),
            "dialogue_base.jsonl:1: field `task`: `dialogue_emotion` in the file of `dialogue_base`",
        ),
    ];
    let tried = cases.len();
    for (name, edit, want) in cases {
        let err = error_of(edit);
        assert!(err.contains(want), "{name}: {err}\nshould contain: {want}");
    }
    println!("suite validation: {tried} fault cases tried");
}

#[test]
fn several_faults_are_reported_together() {
    let err = error_of(|d| {
        edit_line(d, "scenarios/dialogue_base.jsonl", 1, |v| v["persona"] = "x".into());
        edit_line(d, "scenarios/itinerary_basic.jsonl", 2, |v| v["inputs"]["date"] = "2025-02-30".into());
    });
    assert!(err.starts_with("2 problems:"), "{err}");
    assert!(err.contains("dialogue_base.jsonl:1: field `persona`"));
    assert!(err.contains("itinerary_basic.jsonl:2: field `inputs.date`: `2025-02-30` is not a date"));
}
