//! Harness overhead, measured against the in-suite server in the same run:
//!
//! 1. a server that answers at once: completed items/s end to end (scheduler, HTTP, store writes),
//!    against the 2,000 items/s target and against a bare HTTP loop (same client, no scheduler, no
//!    store) measured here as the baseline;
//! 2. a server with 200 ms latency at concurrency 64: items/s against the ideal 64 / 0.2 s = 320.
//!
//! `cargo bench -p h2htalk-runner --bench harness`

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use h2htalk_data::load_suite;
use h2htalk_llm::{
    ChatMessage, ChatModel, ChatRequest, GenerationSettings, OpenAiClient, RateLimits, RetryPolicy, Scheduler,
};
use h2htalk_prompt::{Prompts, SapMode};
use h2htalk_runner::generate::{self, Counters, GenerateOptions};
use h2htalk_runner::plan;
use h2htalk_store::{Item, Selection, Store};
use h2htalk_testserver::{ServerConfig, TestServer};

const CONCURRENCY: usize = 64;

/// `n` items made from the suite's prompts, with distinct ids.
fn items(n: usize) -> Vec<Item> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites");
    let suite = load_suite(&dir).unwrap();
    let prompts = Prompts::load(&dir).unwrap();
    let base = plan::plan_items(&suite, &prompts, &Selection { tasks: vec![], limit: None, safety: true }, SapMode::On)
        .unwrap();
    (0..n)
        .map(|i| {
            let mut it = base[i % base.len()].clone();
            it.scenario_id = format!("{}#{i}", it.scenario_id);
            it.ord = i;
            it
        })
        .collect()
}

fn client(url: &str) -> Arc<dyn ChatModel> {
    let mut cfg = h2htalk_llm::ModelConfig::named("bench");
    cfg.base_url = Some(url.to_string());
    cfg.max_concurrency = CONCURRENCY;
    Arc::new(OpenAiClient::new(&cfg).unwrap())
}

/// Items/s of the full harness: scheduler, HTTP and a store commit per item.
async fn harness(url: &str, n: usize) -> f64 {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("bench.db");
    let work = items(n);
    let mut store = Store::open(&db).unwrap();
    store.create_run("bench", &h2htalk_testkit::spec("openai", "bench", SapMode::On), &work).unwrap();
    drop(store);
    let scheduler = Arc::new(Scheduler::new(CONCURRENCY, RetryPolicy::default(), RateLimits::default()));
    let started = Instant::now();
    let report = generate::generate(
        db.clone(),
        "bench",
        client(url),
        scheduler,
        work,
        GenerationSettings::default(),
        GenerateOptions::default(),
        Arc::new(Counters::default()),
    )
    .await
    .unwrap();
    let rate = n as f64 / started.elapsed().as_secs_f64();
    assert_eq!(report.generated, n, "every item answered");
    assert_eq!(Store::open(&db).unwrap().generations("bench").unwrap().len(), n, "every item stored");
    rate
}

/// Items/s of a bare loop: the same client and concurrency, no scheduler, no store.
async fn bare(url: &str, n: usize) -> f64 {
    let model = client(url);
    let work: Arc<Vec<Item>> = Arc::new(items(n));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (model, work, next) = (model.clone(), work.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = work.get(i) else { break };
                    let messages: Vec<ChatMessage> = item.prompt.clone();
                    let req = ChatRequest { messages, settings: GenerationSettings::default() };
                    model.chat(&req).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    n as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let instant = TestServer::start(ServerConfig::default(), 0).await.unwrap();
        let url = instant.base_url();
        harness(&url, 500).await; // warm up connections and caches
        let n = 6000;
        let base = bare(&url, n).await;
        let full = harness(&url, n).await;
        println!(
            "instant server, {n} items, concurrency {CONCURRENCY}, {} cores:",
            std::thread::available_parallelism().map_or(1, |p| p.get())
        );
        println!("  bare HTTP loop (baseline):       {base:8.0} items/s");
        println!("  h2htalk harness with store:      {full:8.0} items/s");
        println!("  ratio to baseline: {:.2}   ratio to the 2,000 items/s target: {:.2}", full / base, full / 2000.0);

        let slow = TestServer::start(ServerConfig { latency_ms: 200, ..Default::default() }, 0).await.unwrap();
        let n = 1280;
        let rate = harness(&slow.base_url(), n).await;
        let ideal = CONCURRENCY as f64 / 0.2;
        println!("200 ms server, {n} items, concurrency {CONCURRENCY}:");
        println!("  h2htalk harness with store:      {rate:8.1} items/s   ideal {ideal:.0}");
        println!("  ratio to ideal: {:.3} (target 0.95)", rate / ideal);
    });
}
