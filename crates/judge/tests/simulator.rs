//! The user simulator with scripted simulator, companion and judge answers: two sessions, memories
//! written by the companion and carried over (or lost to a format error), facts recalled, needs
//! judged, reproducible results, and profile validation.

mod common;

use h2htalk_judge::simulator::{UserProfile, load_profile};
use h2htalk_judge::{JudgeHandle, JudgeSettings, SimulationSetup, load_profiles, simulate};
use h2htalk_llm::GenerationSettings;
use h2htalk_prompt::SapMode;
use h2htalk_store::Store;

const MEMORY_GOOD: &str = "记忆内容：养了一只橘猫叫年糕\n记忆类别：爱好\n记忆重要性：2\n\n记忆内容：下周三上午有面试\n记忆类别：工作\n记忆重要性：1";
const MEMORY_BAD: &str = "记忆内容：养了一只橘猫叫年糕\n记忆类别：宠物\n记忆重要性：2";

fn simulator_script() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "hidden_need_met",
            "{\"hidden_need_met\": true, \"changed_need_met\": false, \"reason\": \"reassured, but never helped plan\"}",
        ),
        ("[s1t1]", "{\"state\": 3, \"message\": \"M11 我养了一只叫年糕的橘猫。\"}"),
        ("[s1t2]", "```json\n{\"state\": 4, \"message\": \"M12 下周三上午我要去面试。\"}\n```"),
        ("[s1t3]", "{\"state\": 5, \"message\": \"M13 谢谢你听我说。\"}"),
        ("[s2t1]", "{\"state\": 5, \"message\": \"M21 你还记得我家猫叫什么吗？\"}"),
        ("[s2t2]", "{\"state\": 6, \"message\": \"M22 帮我准备面试吧。\"}"),
        ("[s2t3]", "{\"state\": 7, \"message\": \"M23 面试是哪天来着？\"}"),
    ]
}

fn companion_script(memory: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("记忆类别只能从", memory),
        ("M23", "（想了想）你说过是下周三上午。"),
        ("M22", "（拿出纸笔）好，我们一条条准备。"),
        // Only a companion shown the memory it wrote can answer this.
        ("养了一只橘猫叫年糕（类别", "（笑）当然记得，年糕嘛。"),
        ("M13", "（摸摸你的头）我一直在。"),
        ("M12", "（握住你的手）面试一定行。"),
        ("M11", "（笑）橘猫最可爱了。"),
    ]
}

fn profile(suite: &h2htalk_data::Suite) -> UserProfile {
    load_profile(&common::suite_dir().join("simulator/anxious-graduate.json"), suite).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_sessions_carry_memories_and_score_recall() {
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
        judge: Some(JudgeHandle { model: &simulator, scheduler: &s3, settings: &judge_settings, texts: common::texts() }),
        max_parse_attempts: 2,
        texts: common::texts(),
    };
    let good: &'static _ = Box::leak(Box::new(good));
    let bad: &'static _ = Box::leak(Box::new(bad));
    let profiles = vec![profile(&suite)];

    let report = simulate(&mut store, "r1", &setup(good), &profiles, 1, 100).await.unwrap();
    let r = &report.results[0];
    assert_eq!(r.outcome, "completed", "{:?}", r.error);
    assert_eq!(r.states, [3, 4, 5, 5, 6, 7]);
    assert_eq!((r.first_state, r.last_state, r.state_change), (Some(3), Some(7), Some(4)));
    assert_eq!(r.sessions.len(), 2);
    assert!(r.sessions[0].memories_shown.is_empty());
    assert_eq!(r.sessions[1].memories_shown.len(), 2);
    assert_eq!(r.sessions[1].memories_shown[0].content, "养了一只橘猫叫年糕");
    assert_eq!(r.memory_format_failures, 0);
    let cat = r.facts.iter().find(|f| f.id == "cat").unwrap();
    assert_eq!((cat.asked, cat.recalled, cat.in_memory), (true, Some(true), Some(true)));
    assert_eq!((report.facts_asked, report.facts_recalled, report.recall_rate), (2, 2, Some(1.0)));
    assert_eq!((r.needs_outcome.as_str(), r.hidden_need_met, r.changed_need_met), ("judged", Some(true), Some(false)));
    assert_eq!((report.hidden_need_rate, report.changed_need_rate), (Some(1.0), Some(0.0)));
    assert_eq!(report.mean_state_change, Some(4.0));
    assert_eq!(r.seed, 100);

    // The same seed and scripts give the same simulation.
    let again = simulate(&mut store, "r1", &setup(good), &profiles, 1, 100).await.unwrap();
    assert_eq!(serde_json::to_value(&again.results).unwrap(), serde_json::to_value(&report.results).unwrap());

    // A memory answer that breaks the format carries nothing over: the cat is forgotten.
    let lost = simulate(&mut store, "r2", &setup(bad), &profiles, 1, 100).await.unwrap();
    let r = &lost.results[0];
    assert_eq!(r.memory_format_failures, 1);
    assert!(r.sessions[0].memory_error.as_deref().unwrap().contains("24 categories"));
    assert!(r.sessions[1].memories_shown.is_empty());
    let cat = r.facts.iter().find(|f| f.id == "cat").unwrap();
    assert_eq!((cat.recalled, cat.in_memory), (Some(false), Some(false)));
    assert_eq!((lost.facts_asked, lost.facts_recalled), (2, 1));

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
        judge: None,
        max_parse_attempts: 2,
        texts: common::texts(),
    };
    let profiles = vec![profile(&suite)];
    let report = simulate(&mut store, "r1", &setup, &profiles, 2, 0).await.unwrap();
    assert_eq!(report.completed, 0);
    assert_eq!(report.failures["simulator_parse_failed"], 2);
    assert_eq!(report.needs_not_judged["not_reached"], 2);
    let r = &report.results[0];
    assert!(r.error.as_deref().unwrap().contains("outside 1–10"), "{:?}", r.error);
    assert_eq!(r.states, [3]);
    // Two answers for the broken turn (the retry), one for the first.
    assert_eq!(r.simulator_calls, 3);
    assert_eq!(report.results[1].seed, 1);
}

#[test]
fn profiles_load_and_bad_ones_name_file_line_and_field() {
    let suite = common::suite();
    let profiles = load_profiles(&common::suite_dir().join("simulator"), &suite).unwrap();
    assert!(profiles.len() >= 3);
    let styles: std::collections::BTreeSet<String> =
        profiles.iter().map(|p| serde_json::to_value(p.attachment).unwrap().as_str().unwrap().to_string()).collect();
    assert_eq!(styles.len(), 3);

    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(common::suite_dir().join("simulator/anxious-graduate.json")).unwrap();
    let path = dir.path().join("anxious-graduate.json");
    std::fs::write(
        &path,
        text.replace("\"asked\": {\"session\": 2, \"turn\": 1}", "\"asked\": {\"session\": 1, \"turn\": 3}"),
    )
    .unwrap();
    let err = load_profile(&path, &suite).unwrap_err().to_string();
    assert!(err.contains("anxious-graduate.json:") && err.contains("facts[0].asked.session"), "{err}");
    std::fs::write(&path, text.replace("\"anxious\"", "\"clingy\"")).unwrap();
    let err = load_profile(&path, &suite).unwrap_err().to_string();
    assert!(err.contains(":5: field `attachment`"), "{err}");
    std::fs::write(&path, text.replace("\"shen-yan\"", "\"shen-yan-en\"")).unwrap();
    let err = load_profile(&path, &suite).unwrap_err().to_string();
    assert!(err.contains("companion_persona"), "{err}");
}
