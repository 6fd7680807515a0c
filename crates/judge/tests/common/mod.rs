//! Helpers shared by the judge crate's tests: the repository's suite, runs written straight into a
//! store, and clients of the in-suite test server.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use h2htalk_data::{Suite, load_suite};
use h2htalk_llm::{FaultKind, FinishReason};
use h2htalk_llm::{OpenAiClient, RateLimits, RetryPolicy, Scheduler};
use h2htalk_prompt::{Prompts, SapMode};
use h2htalk_store::{Generation, GenerationStatus, Item, Store};
use h2htalk_testserver::{ServerConfig, TestServer};

pub fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites")
}

pub fn suite() -> Suite {
    load_suite(&suite_dir()).unwrap()
}

pub fn prompts() -> Prompts {
    Prompts::load(&suite_dir()).unwrap()
}

/// The judge's texts and the safety rules of the repository's suite.
pub fn texts() -> &'static h2htalk_judge::JudgeTexts {
    static TEXTS: std::sync::OnceLock<h2htalk_judge::JudgeTexts> = std::sync::OnceLock::new();
    TEXTS.get_or_init(|| h2htalk_judge::JudgeTexts::load(&suite_dir()).unwrap())
}

pub fn client(name: &str, url: &str) -> OpenAiClient {
    let mut cfg = h2htalk_llm::ModelConfig::named(name);
    cfg.base_url = Some(url.to_string());
    cfg.model = name.to_string();
    cfg.max_concurrency = 4;
    cfg.timeout_s = 10.0;
    OpenAiClient::new(&cfg).unwrap()
}

pub fn scheduler() -> Scheduler {
    Scheduler::new(
        4,
        RetryPolicy { max_attempts: 2, base_delay: Duration::from_millis(5), max_delay: Duration::from_millis(20) },
        RateLimits::default(),
    )
}

pub async fn server(script: &[(&str, &str)]) -> TestServer {
    let config = ServerConfig {
        script: script.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    TestServer::start(config, 0).await.unwrap()
}

/// Writes run `run_id` with the given scenarios and answers (`None`: the generation failed).
pub fn make_run(store: &mut Store, run_id: &str, suite: &Suite, prompts: &Prompts, answers: &[(&str, Option<&str>)]) {
    let mut items = Vec::new();
    let mut gens = Vec::new();
    for (ord, (id, answer)) in answers.iter().enumerate() {
        let s = suite.get(id).unwrap_or_else(|| panic!("no scenario {id}"));
        let messages = prompts.render(suite, s, SapMode::On).unwrap();
        items.push(Item {
            scenario_id: s.id.clone(),
            task: if Suite::is_safety(s) { "sap_safety".into() } else { s.task.stem().into() },
            lang: s.lang,
            ord,
            prompt: messages,
            reference: s.reference.clone(),
        });
        gens.push(Generation {
            scenario_id: s.id.clone(),
            status: if answer.is_some() { GenerationStatus::Generated } else { GenerationStatus::Failed },
            text: answer.map(str::to_string),
            finish_reason: answer.map(|_| FinishReason::Stop),
            input_tokens: Some(10),
            output_tokens: Some(5),
            latency_ms: 1.0,
            attempts: 1,
            error_kind: answer.is_none().then_some(FaultKind::ServerError),
            error_message: answer.is_none().then(|| "HTTP 500 after 5 attempts".into()),
            faults: vec![],
        });
    }
    let spec = h2htalk_testkit::spec("openai", "test", SapMode::On);
    store.create_run(run_id, &spec, &items).unwrap();
    store.put_generations(run_id, &gens, false).unwrap();
}
