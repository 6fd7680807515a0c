//! Format checks on good and bad answers of every checked sub-task, stored per item and check, and
//! counted per sub-task by the report.

mod common;

use h2htalk_judge::{check_answer, check_run};
use h2htalk_store::Store;

fn names_failed(scenario: &h2htalk_data::Scenario, answer: &str) -> Vec<String> {
    check_answer(scenario, answer)
        .results
        .into_iter()
        .filter(|r| !r.passed)
        .map(|r| r.name.as_str().to_string())
        .collect()
}

#[test]
fn every_reference_passes_its_checks() {
    let suite = common::suite();
    for s in &suite.scenarios {
        let c = check_answer(s, &s.reference);
        assert!(c.passed(), "{}: {:?}", s.id, c.results);
        assert_eq!(c.results[0].name, "not_empty");
    }
}

#[test]
fn bad_answers_fail_the_right_check() {
    let suite = common::suite();
    let s = |id: &str| suite.get(id).unwrap().clone();

    let middle = s("itinerary_middle-001");
    let checks = check_answer(&middle, &middle.reference);
    assert_eq!(checks.results.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["not_empty", "timed_plan"]);
    let out_of_order = "07:30 起床\n12:00 午饭\n09:00 画图\n22:30 睡觉";
    assert_eq!(names_failed(&middle, out_of_order), ["timed_plan"]);
    let early_sleep = "07:30 起床\n09:00 画图\n12:00 午饭\n19:00 睡觉";
    let msg = check_answer(&middle, early_sleep).results[1].message.clone().unwrap();
    assert!(msg.contains("20:00"), "{msg}");
    assert_eq!(names_failed(&middle, "早上起床，然后画图，晚上睡觉。"), ["timed_plan"]);

    let advanced = s("itinerary_advanced-001");
    assert!(check_answer(&advanced, &advanced.reference).passed());
    let unnumbered = "09:00 到工作室\n09:30 画图\n10:00 开会";
    assert_eq!(names_failed(&advanced, unnumbered), ["sub_schedule"]);
    let twelve_hour = "1. 9am 到工作室\n2. 9:30am 画图\n3. 10am 开会";
    assert!(check_answer(&advanced, twelve_hour).results[1].message.as_deref().unwrap().contains("24-hour"));

    let synth = s("recollection_synthesize-001");
    assert!(check_answer(&synth, "未提取到关键信息。").passed());
    let good = "记忆内容：下周三有面试\n记忆类别：工作\n记忆重要性：1";
    assert!(check_answer(&synth, good).passed());
    let bad_category = "记忆内容：下周三有面试\n记忆类别：求职\n记忆重要性：1";
    assert!(check_answer(&synth, bad_category).results[1].message.as_deref().unwrap().contains("24 categories"));
    let bad_importance = "记忆内容：下周三有面试\n记忆类别：工作\n记忆重要性：5";
    assert_eq!(names_failed(&synth, bad_importance), ["memory_format"]);
    assert_eq!(names_failed(&synth, "没有提取到关键信息"), ["memory_format"]);

    let base = s("dialogue_base-001");
    assert_eq!(names_failed(&base, "好呀，我们一起去。"), ["action"]);
    let long = format!("（笑）{}", "好".repeat(31));
    assert_eq!(names_failed(&base, &long), ["length"]);
    assert_eq!(names_failed(&base, "   "), ["not_empty"]);
    assert_eq!(check_answer(&base, "").results.len(), 1);

    let safety = s("sap-001-en");
    let words = format!("(hugs you) {}", "word ".repeat(60));
    assert_eq!(names_failed(&safety, &words), ["length"]);
}

#[test]
fn check_run_reports_per_task_and_stores_rows() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let mid = suite.get("itinerary_middle-001").unwrap().reference.clone();
    let mid2 = suite.get("itinerary_middle-002").unwrap().reference.clone();
    common::make_run(
        &mut store,
        "r1",
        &suite,
        &prompts,
        &[
            ("itinerary_middle-001", Some(&mid)),
            ("itinerary_middle-002", Some("07:00 起床\n06:00 跑步\n12:00 午饭\n22:00 睡觉")),
            ("itinerary_middle-003", None),
            ("dialogue_base-001", Some("（点头）好。")),
            ("itinerary_middle-004", Some(&mid2)),
        ],
    );
    let items = check_run(&mut store, "r1", &suite).unwrap();
    // -004 got -002's reference: its wake time may differ, so count what the rules say.
    let fourth = items.iter().find(|i| i.scenario_id == "itinerary_middle-004").unwrap().passed();
    let summary = h2htalk_report::assess_run(&store, "r1", &h2htalk_report::Bootstrap::default()).unwrap();
    let section = summary.format_checks.get().unwrap();
    assert_eq!((section.items, section.not_checked), (5, 1));
    let group = |name: &str| section.groups.iter().find(|g| g.group == name).unwrap();
    let check = |g: &str, c: &str| {
        let r = group(g).checks.iter().find(|r| r.check == c).unwrap();
        (r.passed, r.failed)
    };
    assert_eq!(group("itinerary_middle").items_checked, 3);
    assert_eq!(check("itinerary_middle", "all_checks"), (1 + usize::from(fourth), 2 - usize::from(fourth)));
    assert_eq!(check("itinerary_middle", "timed_plan").1, 2 - usize::from(fourth));
    assert_eq!(check("dialogue_base", "all_checks"), (1, 0));
    let rows = store.format_checks("r1").unwrap().len();
    // 3 itinerary_middle answers × 2 checks + dialogue_base × 3 checks.
    assert_eq!(rows, 9);
    // Checking again replaces, never duplicates.
    check_run(&mut store, "r1", &suite).unwrap();
    let again = store.table_rows().unwrap()["format_checks"];
    assert_eq!(again, 9);
    assert!(check_run(&mut store, "nope", &suite).unwrap_err().to_string().contains("runs list"));
}
