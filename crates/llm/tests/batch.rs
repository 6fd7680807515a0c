//! The Batch API client against the test server: answers as the synchronous endpoint gives them,
//! failed and expired lines as faults with their reason, and a journal that lets a later client
//! poll a batch an earlier one made instead of sending its requests again.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use h2htalk_llm::{
    BatchClient, BatchJournal, BatchSettings, ChatMessage, ChatModel, ChatRequest, FaultKind, GenerationSettings,
    JournalBatch, ModelConfig, OpenAiClient,
};
use h2htalk_testserver::{BatchBehaviour, ServerConfig, TestServer};

/// A journal in memory, shared by the clients of a test.
#[derive(Default)]
struct Memory(Mutex<Vec<JournalBatch>>);

impl BatchJournal for Memory {
    fn batches(&self) -> Result<Vec<JournalBatch>, String> {
        Ok(self.0.lock().unwrap().clone())
    }
    fn created(&self, batch_id: &str, requests: &[String]) -> Result<(), String> {
        self.0.lock().unwrap().push(JournalBatch {
            id: batch_id.into(),
            status: "created".into(),
            requests: requests.to_vec(),
            results: HashMap::new(),
        });
        Ok(())
    }
    fn finished(&self, batch_id: &str, status: &str, results: &[(String, String)]) -> Result<(), String> {
        let mut all = self.0.lock().unwrap();
        let b = all.iter_mut().find(|b| b.id == batch_id).ok_or("no such batch")?;
        b.status = status.into();
        b.results.extend(results.iter().cloned());
        Ok(())
    }
}

fn client(server: &TestServer) -> Arc<OpenAiClient> {
    let mut cfg = ModelConfig::named("batch-test");
    cfg.base_url = Some(server.base_url());
    Arc::new(OpenAiClient::new(&cfg).unwrap())
}

fn settings() -> BatchSettings {
    BatchSettings {
        price_factor: 0.5,
        poll: Duration::from_millis(20),
        completion_window: "24h".into(),
        max_requests: 1000,
    }
}

fn request(i: usize) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage {
            role: "user".into(), content: format!("第{i}个问题：今天过得怎么样？")
        }],
        settings: GenerationSettings::default(),
    }
}

async fn start(batch: BatchBehaviour) -> TestServer {
    TestServer::start(ServerConfig { batch, ..ServerConfig::default() }, 0).await.unwrap()
}

/// Asks requests `0..n` (request 0 twice) at once.
async fn ask_all(model: Arc<dyn ChatModel>, n: usize) -> Vec<Result<String, (FaultKind, String)>> {
    let tasks: Vec<_> = (0..n)
        .chain([0])
        .map(|i| {
            let model = model.clone();
            tokio::spawn(async move { model.chat(&request(i)).await.map(|r| r.text).map_err(|e| (e.kind, e.message)) })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test]
async fn calls_made_together_go_in_one_batch_and_get_the_answers_the_endpoint_gives() {
    let server = start(BatchBehaviour { complete_after_ms: 100, ..BatchBehaviour::default() }).await;
    let direct = client(&server);
    let journal = Arc::new(Memory::default());
    let batched: Arc<dyn ChatModel> = Arc::new(BatchClient::new(direct.clone(), settings(), journal.clone()));
    let answers = ask_all(batched, 20).await;
    let c = &server.counters;
    assert_eq!(c.batches_created.load(Ordering::SeqCst), 1, "one batch for calls made together");
    assert_eq!(c.batch_lines.load(Ordering::SeqCst), 20, "a request asked twice at once is sent once");
    assert!(c.batch_polls.load(Ordering::SeqCst) >= 2, "polled until done");
    assert_eq!(c.requests.load(Ordering::SeqCst), 0, "nothing through chat/completions");
    for (i, a) in answers.iter().enumerate() {
        let expected = direct.chat(&request(i % 20)).await.unwrap().text;
        assert_eq!(a.as_ref().unwrap(), &expected, "answer {i}");
    }
    let recorded = journal.batches().unwrap();
    assert_eq!((recorded.len(), recorded[0].status.as_str(), recorded[0].results.len()), (1, "completed", 20));
}

#[tokio::test]
async fn failed_and_expired_lines_and_a_failed_batch_are_faults_with_their_reason() {
    let server = start(BatchBehaviour { fail_lines: 0.3, ..BatchBehaviour::default() }).await;
    let answers =
        ask_all(Arc::new(BatchClient::new(client(&server), settings(), Arc::new(Memory::default()))), 40).await;
    let failed: Vec<_> = answers.iter().filter_map(|a| a.as_ref().err()).collect();
    assert!(!failed.is_empty() && failed.len() < 40, "{} of 41 failed", failed.len());
    for (kind, message) in failed {
        assert_eq!(*kind, FaultKind::ServerError);
        assert!(message.contains("HTTP 500") && message.contains("upstream trouble"), "{message}");
    }

    let server = start(BatchBehaviour { expire: true, ..BatchBehaviour::default() }).await;
    let answers =
        ask_all(Arc::new(BatchClient::new(client(&server), settings(), Arc::new(Memory::default()))), 10).await;
    let expired: Vec<_> = answers.iter().filter_map(|a| a.as_ref().err()).collect();
    assert_eq!(expired.len(), 5, "the second half of the batch expired");
    assert!(expired.iter().all(|(k, m)| *k == FaultKind::Timeout && m.contains("batch_expired")), "{expired:?}");

    let server = start(BatchBehaviour { fail_batch: true, ..BatchBehaviour::default() }).await;
    let answers =
        ask_all(Arc::new(BatchClient::new(client(&server), settings(), Arc::new(Memory::default()))), 3).await;
    for a in answers {
        let (kind, message) = a.unwrap_err();
        assert_eq!(kind, FaultKind::ServerError);
        assert!(message.contains("failed without results") && message.contains("failed as a whole"), "{message}");
    }
}

#[tokio::test]
async fn a_later_client_polls_the_batch_an_earlier_one_made_and_reuses_its_answers() {
    let server = start(BatchBehaviour { complete_after_ms: 400, ..BatchBehaviour::default() }).await;
    let journal = Arc::new(Memory::default());
    // The first client stops while its batch runs (as a killed process would).
    let first: Arc<dyn ChatModel> = Arc::new(BatchClient::new(client(&server), settings(), journal.clone()));
    let asked = tokio::spawn(ask_all(first, 5));
    while server.counters.batches_created.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    asked.abort();
    assert_eq!(journal.batches().unwrap()[0].status, "created");
    // The second asks the same requests: no new batch, the recorded one is polled.
    let second: Arc<dyn ChatModel> = Arc::new(BatchClient::new(client(&server), settings(), journal.clone()));
    let answers = ask_all(second, 5).await;
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    assert_eq!(server.counters.batches_created.load(Ordering::SeqCst), 1);
    assert_eq!(journal.batches().unwrap()[0].status, "completed");
    // A third finds the answers in the journal: no request at all.
    let polls = server.counters.batch_polls.load(Ordering::SeqCst);
    let third: Arc<dyn ChatModel> = Arc::new(BatchClient::new(client(&server), settings(), journal.clone()));
    assert_eq!(ask_all(third, 5).await, answers);
    assert_eq!(server.counters.batch_polls.load(Ordering::SeqCst), polls);
    // A request never asked before goes into a new batch.
    let fourth: Arc<dyn ChatModel> = Arc::new(BatchClient::new(client(&server), settings(), journal.clone()));
    assert!(fourth.chat(&request(99)).await.is_ok());
    assert_eq!(server.counters.batches_created.load(Ordering::SeqCst), 2);
}
