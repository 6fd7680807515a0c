//! The memory suite against scripted companion and judge answers: the first probe of each type
//! (all of user mem-en-001) in both history modes; key facts, outdated values and abstentions read
//! by the rules; invented memories decided by the judge where it answered and by the rules on the
//! abstention probe where it did not; the own mode's notes written per session (one in the memory
//! format, the rest not); a resumed run asks nothing again; failed calls are stored as failures,
//! never scored, and asked again; the report's per-type table from the stored rows.

mod common;

use h2htalk_judge::memory::{MemoryRunCounts, PROBE_TEMPLATE, probe_messages, selected};
use h2htalk_judge::{JudgeHandle, JudgeSettings, MemorySetup, memory_run};
use h2htalk_llm::GenerationSettings;
use h2htalk_prompt::SapMode;
use h2htalk_report::Bootstrap;
use h2htalk_store::{InventedBy, MemoryMode, MemorySpec, Store};
use h2htalk_testserver::{Faults, ServerConfig, TestServer};

const NOTE: &str = "记忆内容：在波特兰做远程工作\n记忆类别：工作\n记忆重要性：1";

/// Judge answers first (keyed by the reply they read), then the companion's replies (keyed by the
/// probe's question), then the note of session 1 (keyed by its first message).
fn script() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "It was Dr. Okonkwo, her surgeon.",
            r#"{"score": 9, "invented": false, "invented_fact": "", "reason": "the right surgeon"}"#,
        ),
        (
            "She's a nurse at the children's hospital.",
            r#"{"score": 1, "invented": true, "invented_fact": "Tasha is a nurse", "reason": "never said"}"#,
        ),
        ("Neither of us can remember his name", "It was Dr. Okonkwo, her surgeon."),
        ("which of the two cats", "You took Pickle home."),
        ("How long have I had this little gremlin", "About five months now!"),
        ("in-person meetup in Portland", "You live near Division, so a walk there?"),
        ("Remind me what exactly she does again", "She's a nurse at the children's hospital."),
        ("47 unread slack messages", NOTE),
    ]
}

async fn server(faults: Faults) -> TestServer {
    let config = ServerConfig {
        script: script().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        faults,
        ..Default::default()
    };
    TestServer::start(config, 0).await.unwrap()
}

fn both(limit: usize) -> MemorySpec {
    MemorySpec { modes: vec![MemoryMode::Given, MemoryMode::Own], limit: Some(limit) }
}

async fn run_against(store: &mut Store, url: &str, spec: &MemorySpec) -> MemoryRunCounts {
    run_with(store, url, spec, false).await
}

async fn run_with(store: &mut Store, url: &str, spec: &MemorySpec, redact: bool) -> MemoryRunCounts {
    let suite = common::suite();
    let prompts = common::prompts();
    let memory = suite.memory().unwrap().expect("the suite has a memory suite");
    let companion = common::client("companion", url);
    let judge = common::client("judge", url);
    let (s1, s2) = (common::scheduler(), common::scheduler());
    let settings = JudgeSettings::pinned(3);
    let setup = MemorySetup {
        suite: &suite,
        prompts: &prompts,
        sap: SapMode::On,
        companion: &companion,
        companion_scheduler: &s1,
        companion_settings: GenerationSettings::default(),
        companion_prices: None,
        judge: Some(JudgeHandle {
            model: &judge,
            scheduler: &s2,
            settings: &settings,
            texts: common::texts(),
            prices: None,
        }),
        texts: common::texts(),
        redact,
    };
    memory_run(store, "r1", &setup, &memory, spec).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn probes_are_read_by_rules_and_judge_in_both_modes_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let suite = common::suite();
    common::make_run(&mut store, "r1", &suite, &common::prompts(), &[("dialogue_base-001", Some("（点头）嗯。"))]);
    let good = server(Faults::default()).await;

    let counts = run_against(&mut store, &good.base_url(), &both(1)).await;
    let user_sessions = suite.memory().unwrap().unwrap().users["mem-en-001"].sessions.len();
    assert_eq!(counts, MemoryRunCounts { asked: 10, judged_again: 0, notes: user_sessions });

    let answers = store.memory_answers("r1").unwrap();
    assert_eq!(answers.len(), 10);
    for mode in [MemoryMode::Given, MemoryMode::Own] {
        let of = |id: &str| answers.iter().find(|a| a.mode == mode && a.probe_id == id).unwrap();
        let single = of("mem-en-001-1");
        assert_eq!((single.facts_held, single.facts_total, single.correct()), (1, 1, Some(true)));
        assert_eq!(
            (single.judge_score, single.invented, single.invented_by),
            (Some(9.0), Some(false), Some(InventedBy::Judge))
        );
        let cross = of("mem-en-001-2");
        assert_eq!((cross.facts_held, cross.facts_total, cross.correct()), (1, 2, Some(false)));
        // The judge's answer to it was no JSON: a failure with its reason, never a score.
        assert!(cross.judge_failure.is_some() && cross.judge_score.is_none());
        assert_eq!(cross.invented, None, "not an abstention probe and no judge verdict: undecided");
        assert_eq!(of("mem-en-001-3").correct(), Some(true));
        let update = of("mem-en-001-4");
        assert_eq!((update.stale_held, update.stale(), update.correct()), (1, true, Some(false)));
        let abstention = of("mem-en-001-5");
        assert!(!abstention.abstained);
        assert_eq!((abstention.invented, abstention.invented_by), (Some(true), Some(InventedBy::Judge)));
        assert_eq!(abstention.judge_invented_fact.as_deref(), Some("Tasha is a nurse"));
    }
    let notes = store.memory_notes("r1").unwrap();
    assert_eq!(notes.len(), user_sessions);
    assert_eq!((notes[0].session, notes[0].memories, notes[0].format_error.as_ref()), (1, 1, None));
    assert!(notes[1..].iter().all(|n| n.memories == 0 && n.format_error.is_some() && n.answer.is_some()));

    // The report's table from the stored rows.
    let a = h2htalk_report::assess_run(&store, "r1", &Bootstrap::default()).unwrap();
    let m = a.memory.get().expect("the memory section ran");
    assert_eq!(m.modes.iter().map(|m| m.mode.as_str()).collect::<Vec<_>>(), ["given", "own"]);
    let all = m.modes[0].rows.last().unwrap();
    assert_eq!((all.kind.as_str(), all.probes, all.failed), ("all", 5, 0));
    assert_eq!((all.correct.k, all.correct.n), (2, 5));
    assert_eq!((all.invented.k, all.invented.n, all.invented_undecided), (1, 2, 3));
    assert_eq!(all.stale, 1);
    let judge = all.judge.as_ref().unwrap();
    assert_eq!((judge.n, judge.mean), (2, 5.0));
    assert_eq!(
        m.notes.as_ref().map(|n| (n.sessions, n.memories, n.format_errors)),
        Some((user_sessions, 1, user_sessions - 1))
    );

    // Resumed: nothing is asked of the companion again; only the judge's failures are read again.
    let again = run_against(&mut store, &good.base_url(), &both(1)).await;
    assert_eq!(again, MemoryRunCounts { asked: 0, judged_again: 6, notes: 0 });
    assert_eq!(store.memory_answers("r1").unwrap().len(), 10);
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_calls_are_stored_as_failures_and_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let suite = common::suite();
    common::make_run(&mut store, "r1", &suite, &common::prompts(), &[("dialogue_base-001", Some("（点头）嗯。"))]);
    let broken = server(Faults { server_error: 1.0, ..Faults::default() }).await;
    let spec = MemorySpec { modes: vec![MemoryMode::Given, MemoryMode::Own], limit: Some(1) };
    let counts = run_against(&mut store, &broken.base_url(), &spec).await;
    assert_eq!(counts.asked, 10);
    let answers = store.memory_answers("r1").unwrap();
    assert!(answers.iter().all(|a| a.reply.is_none() && a.error.is_some() && a.correct().is_none()));
    // The own mode's replies name the note that could not be written.
    assert!(
        answers.iter().filter(|a| a.mode == MemoryMode::Own).all(|a| a
            .error
            .as_deref()
            .unwrap()
            .contains("the memories after session 1 could not be written"))
    );
    let a = h2htalk_report::assess_run(&store, "r1", &Bootstrap::default()).unwrap();
    let all = a.memory.get().unwrap().modes[0].rows.last().unwrap().clone();
    assert_eq!((all.probes, all.failed, all.correct.n), (5, 5, 0), "failures are counted, never scored");
    assert!(all.fact_recall.is_none() && all.judge.is_none());

    let good = server(Faults::default()).await;
    let counts = run_against(&mut store, &good.base_url(), &spec).await;
    assert_eq!(counts.asked, 10, "every failed probe is asked again");
    assert!(store.memory_answers("r1").unwrap().iter().all(|a| a.reply.is_some()));
    assert!(store.memory_notes("r1").unwrap().iter().all(|n| n.answer.is_some()));
}

#[test]
fn the_two_modes_show_the_history_or_the_notes_and_the_day() {
    let suite = common::suite();
    let prompts = common::prompts();
    let memory = suite.memory().unwrap().unwrap();
    let probes = selected(&memory, Some(1));
    assert_eq!(
        probes.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        ["mem-en-001-1", "mem-en-001-2", "mem-en-001-3", "mem-en-001-4", "mem-en-001-5"]
    );
    assert_eq!(selected(&memory, None).len(), memory.probes.len());
    let probe = probes[2];
    let user = memory.user_of(probe);
    let texts = common::texts();
    let unused = common::client("x", "http://127.0.0.1:9");
    let scheduler = common::scheduler();
    let setup = MemorySetup {
        suite: &suite,
        prompts: &prompts,
        sap: SapMode::On,
        companion: &unused,
        companion_scheduler: &scheduler,
        companion_settings: GenerationSettings::default(),
        companion_prices: None,
        judge: None,
        texts,
        redact: false,
    };
    let given = probe_messages(&setup, user, probe, MemoryMode::Given, None).unwrap();
    let first = &user.sessions[0];
    assert!(given[1].content.contains(&first.history[0].content), "given: the sessions are in the prompt");
    assert!(given[1].content.contains(&first.date.to_string()));
    assert!(given[1].content.contains(&format!("Today is {}", probe.date)));
    assert!(given[1].content.contains(&probe.question));
    let note = h2htalk_data::suite::Memory {
        content: "works remotely in Portland".into(),
        category: serde_json::from_value(serde_json::json!("工作")).unwrap(),
        importance: serde_json::from_value(serde_json::json!(1)).unwrap(),
    };
    let notes = vec![vec![note]];
    let own = probe_messages(&setup, user, probe, MemoryMode::Own, Some(&notes)).unwrap();
    assert!(!own[1].content.contains(&first.history[0].content), "own: no session text");
    assert!(own[1].content.contains("works remotely in Portland"));
    assert!(own[1].content.contains(&format!("[{}]", user.sessions.last().unwrap().date)), "every session's date");
    assert!(own[1].content.contains(&format!("Today is {}", probe.date)));
    assert!(own[0].content.contains("Secure") || own[0].role == "system");
    let _ = PROBE_TEMPLATE;
}

#[tokio::test(flavor = "multi_thread")]
async fn under_redact_replies_notes_and_the_judges_texts_are_masked_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let suite = common::suite();
    common::make_run(&mut store, "r1", &suite, &common::prompts(), &[("dialogue_base-001", Some("（点头）嗯。"))]);
    let reply = "It was Dr. Okonkwo; his office is 13812345678.";
    let script = [
        (
            "his office is",
            r#"{"score": 8, "invented": false, "invented_fact": "", "reason": "named him, and gave 13812345678"}"#,
        ),
        ("Neither of us can remember his name", reply),
        ("47 unread slack messages", "记忆内容：邮箱是 amy@example.com\n记忆类别：工作\n记忆重要性：1"),
    ];
    let config = ServerConfig {
        script: script.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    let server = TestServer::start(config, 0).await.unwrap();
    let spec = MemorySpec { modes: vec![MemoryMode::Given, MemoryMode::Own], limit: Some(1) };
    run_with(&mut store, &server.base_url(), &spec, true).await;
    let answers = store.memory_answers("r1").unwrap();
    let single = answers.iter().find(|a| a.mode == MemoryMode::Given && a.probe_id == "mem-en-001-1").unwrap();
    assert_eq!(single.reply.as_deref(), Some("It was Dr. Okonkwo; his office is [PHONE]."));
    // The rules read the masked reply: the surgeon's name is still there.
    assert_eq!((single.facts_held, single.correct()), (1, Some(true)));
    assert_eq!(single.judge_reason.as_deref(), Some("named him, and gave [PHONE]"));
    let stored = format!("{answers:?}{:?}", store.memory_notes("r1").unwrap());
    assert!(!stored.contains("13812345678") && !stored.contains("amy@example.com"), "{stored}");
    let notes = store.memory_notes("r1").unwrap();
    assert_eq!(notes[0].answer.as_deref(), Some("记忆内容：邮箱是 [EMAIL]\n记忆类别：工作\n记忆重要性：1"));
    assert_eq!(notes[0].memories, 1, "the masked note still parses");
}
