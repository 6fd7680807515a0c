//! The user simulator with scripted simulator, companion and judge answers: four sessions, memories
//! written by the companion and carried over (or lost to a format error), facts recalled at three
//! distances, needs judged, role breaks of both sides counted, the stored typed rows summarised by
//! the report (recall per distance with intervals), reproducible results, and profile validation.

mod common;

use h2htalk_data::suite::profiles::{Direction, UserProfile, load_profile};
use h2htalk_judge::{JudgeHandle, JudgeSettings, SimulationSetup, load_profiles, simulate};
use h2htalk_llm::GenerationSettings;
use h2htalk_prompt::SapMode;
use h2htalk_report::Bootstrap;
use h2htalk_report::assessments::{SimulatorSection, simulator_section};
use h2htalk_stats::wilson;
use h2htalk_store::Store;

const MEMORY_GOOD: &str = "记忆内容：养了一只橘猫叫年糕\n记忆类别：爱好\n记忆重要性：2\n\n记忆内容：下周三上午有面试\n记忆类别：工作\n记忆重要性：1";
const MEMORY_BAD: &str = "记忆内容：养了一只橘猫叫年糕\n记忆类别：宠物\n记忆重要性：2";

fn simulator_script() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "hidden_need_met",
            "{\"hidden_need_met\": true, \"changed_need_met\": false, \"reason\": \"reassured, but never helped plan\"}",
        ),
        // The retry after a role break: the user's own words this time.
        ("speaks as the companion", "{\"state\": 7, \"message\": \"M31 今天有点累。\"}"),
        ("[s1t1]", "{\"state\": 3, \"message\": \"M11 我养了一只叫年糕的橘猫，刚点了一杯桂花乌龙。\"}"),
        ("[s1t2]", "```json\n{\"state\": 4, \"message\": \"M12 下周三上午我要去面试。\"}\n```"),
        ("[s1t3]", "{\"state\": 5, \"message\": \"M13 刚才我说我点了杯什么来着？\"}"),
        ("[s2t1]", "{\"state\": 5, \"message\": \"M21 我又来了。\"}"),
        ("[s2t2]", "{\"state\": 6, \"message\": \"M22 帮我准备面试吧。\"}"),
        ("[s2t3]", "{\"state\": 7, \"message\": \"M23 面试是哪天来着？\"}"),
        // A simulated turn that speaks as the companion: detected, retried, counted.
        ("[s3t1]", "{\"state\": 7, \"message\": \"沈砚：我在呢，别担心。\"}"),
        ("[s3t2]", "{\"state\": 7, \"message\": \"M32 你会烦我吗？\"}"),
        ("[s3t3]", "{\"state\": 7, \"message\": \"M33 那明天见？\"}"),
        ("[s4t1]", "{\"state\": 8, \"message\": \"M41 我家猫又胖了，它叫啥来着？\"}"),
        ("[s4t2]", "{\"state\": 8, \"message\": \"M42 面试过了！\"}"),
        ("[s4t3]", "{\"state\": 8, \"message\": \"M43 晚安。\"}"),
    ]
}

fn companion_script(memory: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("记忆类别只能从", memory),
        ("M43", "（笑）晚安。"),
        ("M42", "（笑）我就知道你行。"),
        // Two replies that break role: as the user, and as an assistant out of persona.
        ("M33", "（笑）好呀。\n对方：那说定了。"),
        ("M32", "作为一个AI语言模型，我没有情绪。"),
        ("M31", "（递过一杯水）累了就歇会儿。"),
        ("M23", "（想了想）你说过是下周三上午。"),
        ("M22", "（拿出纸笔）好，我们一条条准备。"),
        ("M21", "（笑）我在呢。"),
        // Only a companion shown the memory it wrote can answer this (asked in session 4).
        ("养了一只橘猫叫年糕（类别", "（笑）当然记得，年糕嘛。"),
        ("M13", "（笑）桂花乌龙嘛，我记着呢。"),
        ("M12", "（握住你的手）面试一定行。"),
        ("M11", "（笑）橘猫最可爱了。"),
    ]
}

/// The stored simulations of `run` as the report summarises them.
fn summary(store: &Store, run: &str) -> SimulatorSection {
    let sims = store.simulations(run).unwrap();
    simulator_section(run, &sims, &Bootstrap::default()).get().cloned().expect("simulations were stored")
}

/// A four-session profile written for these scripts (tests/data/simulator).
fn profile(suite: &h2htalk_data::Suite) -> UserProfile {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/simulator/zh-shen-yan-anxious-01.json");
    load_profile(&path, suite).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn four_sessions_carry_memories_and_score_recall_per_distance() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let sim_server = common::server(&simulator_script()).await;
    let good_server = common::server(&companion_script(MEMORY_GOOD)).await;
    let bad_server = common::server(&companion_script(MEMORY_BAD)).await;
    let simulator = common::client("simulator", &sim_server.base_url());
    let good = common::client("companion", &good_server.base_url());
    let bad = common::client("companion", &bad_server.base_url());
    let (s1, s2, s3) = (common::scheduler(), common::scheduler(), common::scheduler());
    let judge_settings = JudgeSettings::pinned(9);
    let setup = |companion: &'static h2htalk_llm::OpenAiClient| SimulationSetup {
        suite: &suite,
        prompts: &prompts,
        sap: SapMode::On,
        companion,
        companion_scheduler: &s1,
        companion_settings: GenerationSettings::default(),
        simulator: &simulator,
        simulator_scheduler: &s2,
        simulator_settings: GenerationSettings { temperature: 0.7, ..GenerationSettings::default() },
        simulator_prices: None,
        companion_prices: None,
        judge: Some(JudgeHandle {
            model: &simulator,
            scheduler: &s3,
            settings: &judge_settings,
            texts: common::texts(),
            prices: None,
        }),
        max_parse_attempts: 2,
        texts: common::texts(),
        redact: false,
    };
    let good: &'static _ = Box::leak(Box::new(good));
    let bad: &'static _ = Box::leak(Box::new(bad));
    let profiles = vec![profile(&suite)];

    let results = simulate(&mut store, "r1", &setup(good), &profiles, 1, 100).await.unwrap();
    let r = &results[0];
    // What is stored is what the simulation found, as typed rows.
    let stored = store.simulations("r1").unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!((stored[0].states(), stored[0].state_change()), (r.states.clone(), r.state_change));
    assert_eq!((&stored[0].facts, &stored[0].sessions), (&r.facts, &r.sessions));
    assert_eq!((stored[0].needs, stored[0].hidden_need_met), (r.needs_outcome, r.hidden_need_met));
    assert_eq!((stored[0].simulator_role_breaks, stored[0].companion_role_breaks), (Some(1), Some(2)));
    let settings = stored[0].settings.as_ref().unwrap();
    assert_eq!((settings.simulator.seed, settings.sap), (Some(100), SapMode::On));
    let report = summary(&store, "r1");
    assert_eq!(r.outcome, "completed", "{:?}", r.error);
    assert_eq!(r.states, [3, 4, 5, 5, 6, 7, 7, 7, 7, 8, 8, 8]);
    assert_eq!((r.first_state, r.last_state, r.state_change), (Some(3), Some(8), Some(5)));
    assert_eq!(r.sessions.len(), 4);
    assert!(r.sessions[0].memories_shown.is_empty());
    // The memories written after each session are carried into every later one.
    let shown: Vec<usize> = r.sessions.iter().map(|s| s.memories_shown.len()).collect();
    assert_eq!(shown, [0, 2, 4, 6]);
    assert_eq!(r.sessions[1].memories_shown[0].content, "养了一只橘猫叫年糕");
    assert_eq!(r.memory_format_failures, 0);
    let fact = |r: &h2htalk_judge::simulator::SimulationResult, id: &str| {
        let f = r.facts.iter().find(|f| f.id == id).unwrap();
        (f.asked, f.recalled, f.in_memory)
    };
    // Same session: recalled from the conversation; the memories do not apply.
    assert_eq!(fact(r, "tea"), (true, Some(true), None));
    assert_eq!(fact(r, "interview"), (true, Some(true), Some(true)));
    assert_eq!(fact(r, "cat"), (true, Some(true), Some(true)));
    assert_eq!((report.recall.k, report.recall.n, report.recall.rate), (3, 3, Some(1.0)));
    assert_eq!((r.needs_outcome.as_str(), r.hidden_need_met, r.changed_need_met), ("judged", Some(true), Some(false)));
    assert_eq!((report.hidden_need_met.rate, report.changed_need_met.rate), (Some(1.0), Some(0.0)));
    assert_eq!(report.state_change.as_ref().map(|s| s.mean), Some(5.0));
    assert_eq!(r.seed, 100);
    // The simulated turn that spoke as the companion was retried and counted, never passed on.
    assert_eq!(r.simulator_role_breaks, 1);
    assert_eq!(r.simulator_calls, 13);
    // The tokens of every call are in the store, by role: 13 simulated turns, 12 companion replies
    // and 3 memory answers, 1 needs judgment.
    let usage: Vec<(String, String, u64)> = store
        .usage("r1")
        .unwrap()
        .into_iter()
        .inspect(|u| assert!(u.usage.input_tokens > 0 && u.usage.unknown_usage == 0, "{u:?}"))
        .map(|u| (u.role.as_str().to_string(), u.purpose.to_text(), u.usage.calls))
        .collect();
    let want = [("companion", "conversation", 15), ("judge", "needs", 1), ("simulator", "user", 13)];
    assert_eq!(usage, want.map(|(a, b, c)| (a.to_string(), b.to_string(), c)));
    assert_eq!(r.sessions[2].turns[0].user, "M31 今天有点累。");
    // The companion answered once as the user and once as an assistant out of persona.
    assert_eq!(r.companion_role_breaks, 2);
    let breaks: Vec<&str> = r.sessions[2].turns.iter().filter_map(|t| t.companion_role_break.as_deref()).collect();
    assert!(breaks[0].contains("assistant") && breaks[1].contains("as the user"), "{breaks:?}");
    // Recall per distance, with 95% Wilson intervals (none over one fact).
    assert_eq!(r.direction, Direction::ComfortToPlan);
    assert_eq!(report.recall.ci95, wilson(3, 3));
    let distances: Vec<(&str, usize, usize)> =
        report.recall_by_distance.iter().map(|(d, p)| (d.as_str(), p.k, p.n)).collect();
    assert_eq!(distances, [("next_session", 1, 1), ("same_session", 1, 1), ("three_sessions", 1, 1)]);
    // One judged conversation: a rate, and no interval (never Wilson's over n = 1).
    assert_eq!((report.changed_need_met.rate, report.changed_need_met.ci95), (Some(0.0), None));
    assert!(report.recall_by_distance.values().all(|p| p.n == 1 && p.ci95.is_none()));

    // The same seed and scripts give the same simulation.
    let again = simulate(&mut store, "r1", &setup(good), &profiles, 1, 100).await.unwrap();
    assert_eq!((&again[0].states, &again[0].facts, &again[0].sessions), (&r.states, &r.facts, &r.sessions));

    // A memory answer that breaks the format carries nothing over: the cat is forgotten three
    // sessions later; the same-session fact is still recalled from the conversation.
    simulate(&mut store, "r2", &setup(bad), &profiles, 1, 100).await.unwrap();
    let lost = summary(&store, "r2");
    let r = &store.simulations("r2").unwrap()[0];
    assert_eq!(r.memory_format_failures, 3);
    assert!(r.sessions[0].memory_error.as_deref().unwrap().contains("24 categories"));
    assert!(r.sessions.iter().all(|s| s.memories_shown.is_empty()));
    let fact = |id: &str| r.facts.iter().find(|f| f.id == id).map(|f| (f.asked, f.recalled, f.in_memory)).unwrap();
    assert_eq!(fact("cat"), (true, Some(false), Some(false)));
    assert_eq!(fact("tea"), (true, Some(true), None));
    assert_eq!((lost.recall.n, lost.recall.k), (3, 2));
    assert_eq!((lost.recall_by_distance["three_sessions"].k, lost.recall_by_distance["same_session"].k), (0, 1));

    let rows: Vec<(String, String)> = ["r1", "r2"]
        .iter()
        .flat_map(|run| {
            store.simulations(run).unwrap().into_iter().map(|s| (run.to_string(), s.outcome.as_str().to_string()))
        })
        .collect();
    assert_eq!(rows, [("r1".to_string(), "completed".to_string()), ("r2".to_string(), "completed".to_string())]);
}

#[tokio::test(flavor = "multi_thread")]
async fn unusable_simulator_answers_stop_the_simulation_and_are_counted() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let mut script = simulator_script();
    script.retain(|(k, _)| *k != "[s1t2]");
    script.push(("[s1t2]", "{\"state\": 11, \"message\": \"too happy\"}"));
    // The retry is told what was wrong; the simulator repeats the mistake.
    script.insert(0, ("outside 1–10", "{\"state\": 11, \"message\": \"still too happy\"}"));
    let sim_server = common::server(&script).await;
    let companion_server = common::server(&companion_script(MEMORY_GOOD)).await;
    let simulator = common::client("simulator", &sim_server.base_url());
    let companion = common::client("companion", &companion_server.base_url());
    let (s1, s2) = (common::scheduler(), common::scheduler());
    let setup = SimulationSetup {
        suite: &suite,
        prompts: &prompts,
        sap: SapMode::Off,
        companion: &companion,
        companion_scheduler: &s1,
        companion_settings: GenerationSettings::default(),
        simulator: &simulator,
        simulator_scheduler: &s2,
        simulator_settings: GenerationSettings::default(),
        simulator_prices: None,
        companion_prices: None,
        judge: None,
        max_parse_attempts: 2,
        texts: common::texts(),
        redact: false,
    };
    let profiles = vec![profile(&suite)];
    let results = simulate(&mut store, "r1", &setup, &profiles, 2, 0).await.unwrap();
    let report = summary(&store, "r1");
    assert_eq!(report.completed, 0);
    assert_eq!(report.failures["simulator_parse_failed"], 2);
    assert_eq!(report.needs_not_judged["not_reached"], 2);
    let r = &results[0];
    assert!(r.error.as_deref().unwrap().contains("outside 1–10"), "{:?}", r.error);
    assert_eq!(r.states, [3]);
    // Two answers for the broken turn (the retry), one for the first.
    assert_eq!(r.simulator_calls, 3);
    assert_eq!(results[1].seed, 1);
}

#[test]
fn profiles_load_and_bad_ones_name_file_line_and_field() {
    let suite = common::suite();
    let profiles = load_profiles(&common::suite_dir().join("simulator"), &suite).unwrap();
    assert_eq!(profiles.len(), 96);
    // Every attachment style × language × persona has 6 profiles; every direction 12.
    let mut cells = std::collections::BTreeMap::new();
    let mut directions = std::collections::BTreeMap::new();
    for p in &profiles {
        *cells.entry((p.attachment.as_str(), p.lang, p.companion_persona.clone())).or_insert(0) += 1;
        *directions.entry(p.changed_need.direction.as_str()).or_insert(0) += 1;
        assert_eq!(p.facts.len(), 3, "{}", p.id);
    }
    assert_eq!(cells.len(), 16);
    assert!(cells.values().all(|n| *n == 6), "{cells:?}");
    assert_eq!(directions.len(), 8);
    assert!(directions.values().all(|n| *n == 12), "{directions:?}");

    let dir = tempfile::tempdir().unwrap();
    let name = "zh-shen-yan-anxious-01.json";
    let text = std::fs::read_to_string(common::suite_dir().join("simulator").join(name)).unwrap();
    let path = dir.path().join(name);
    let err_with = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        load_profile(&path, &suite).unwrap_err().to_string()
    };
    // The profile as it is loads, with its same-session fact.
    std::fs::write(&path, &text).unwrap();
    assert!(load_profile(&path, &suite).is_ok());
    // A direction that is not one of the eight.
    let err = err_with("\"distraction_to_depth\"", "\"sad_to_happy\"");
    assert!(err.contains(name) && err.contains("changed_need.direction"), "{err}");
    // A fact asked before it is told.
    let err = err_with("\"asked\": {\"session\": 3, \"turn\": 2}", "\"asked\": {\"session\": 1, \"turn\": 4}");
    assert!(err.contains(name) && err.contains("facts[1].asked") && err.contains("after `told`"), "{err}");
    // A same-session fact asked in another session.
    let err = err_with("\"asked\": {\"session\": 1, \"turn\": 4}", "\"asked\": {\"session\": 2, \"turn\": 4}");
    assert!(err.contains(name) && err.contains("facts[0].distance"), "{err}");
    // A distance that is not one of the three.
    let err = err_with("\"three_sessions\"", "\"two_sessions\"");
    assert!(err.contains(name) && err.contains("facts[2].distance"), "{err}");
    // A keyword that the biography already says shows no recall.
    let err = err_with("[\"晕车\"]", "[\"晕车\", \"宁波\"]");
    assert!(err.contains("facts[1].answer_keywords") && err.contains("`user`"), "{err}");
    let err = err_with("\"anxious\"", "\"clingy\"");
    assert!(err.contains(":5: field `attachment`"), "{err}");
    let err = err_with("\"companion_persona\": \"shen-yan\"", "\"companion_persona\": \"shen-yan-en\"");
    assert!(err.contains("companion_persona"), "{err}");
    let err = err_with("\"sessions\": 4", "\"sessions\": 2");
    assert!(err.contains("field `sessions`"), "{err}");
    // The id names the attachment the profile has.
    let err = err_with("\"attachment\": \"anxious\"", "\"attachment\": \"fearful\"");
    assert!(err.contains("field `id`"), "{err}");
}
