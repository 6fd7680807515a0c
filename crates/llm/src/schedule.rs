//! Calling a model the way a long benchmark run needs: adaptive concurrency per endpoint (halve on
//! 429/5xx, honour `Retry-After`, grow back while healthy), request-rate and token-rate limits,
//! and bounded retries with jittered exponential backoff. Infrastructure faults that persist come
//! back as failures with their reason; they are never turned into answers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::model::{ChatError, ChatModel, ChatRequest, ChatResponse, FaultKind};

/// How often and how patiently to retry.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_attempts: 5, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(30) }
    }
}

impl RetryPolicy {
    /// Delay before attempt `attempt + 1` (after `attempt` failures), with ±50% jitter.
    fn delay(&self, attempt: u32) -> Duration {
        let exp = self.base_delay.saturating_mul(1 << attempt.saturating_sub(1).min(16));
        exp.min(self.max_delay).mul_f64(0.5 + fastrand::f64())
    }
}

/// Limits on the pace of requests.
#[derive(Clone, Debug, Default)]
pub struct RateLimits {
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

/// The result of one item, after retries.
#[derive(Clone, Debug)]
pub struct CallOutcome {
    /// The answer, or the last fault.
    pub result: Result<ChatResponse, ChatError>,
    pub attempts: u32,
    /// Every fault met on the way, including those a retry overcame.
    pub faults: Vec<FaultKind>,
    /// Time of the successful (or last) attempt.
    pub latency: Duration,
}

struct GateState {
    limit: usize,
    max: usize,
    in_flight: usize,
    paused_until: Option<Instant>,
    healthy_streak: usize,
    last_decrease: Option<Instant>,
}

/// Counters for progress displays and summaries.
#[derive(Default)]
pub struct Stats {
    pub retries: AtomicU64,
    /// The last backoff slept, in milliseconds.
    pub last_backoff_ms: AtomicU64,
    faults: Mutex<BTreeMap<FaultKind, u64>>,
}

impl Stats {
    pub fn faults(&self) -> BTreeMap<FaultKind, u64> {
        self.faults.lock().unwrap().clone()
    }
}

/// Paces the calls to one model.
pub struct Scheduler {
    gate: Mutex<GateState>,
    wake: Notify,
    policy: RetryPolicy,
    limits: RateLimits,
    next_start: Mutex<Instant>,
    tokens: Mutex<VecDeque<(Instant, u64)>>,
    pub stats: Stats,
}

/// A slot of concurrency; gives itself back when dropped.
struct Permit<'a>(&'a Scheduler);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.gate.lock().unwrap().in_flight -= 1;
        self.0.wake.notify_waiters();
    }
}

impl Scheduler {
    /// A scheduler allowing up to `max_concurrency` requests at once, starting at that limit.
    pub fn new(max_concurrency: usize, policy: RetryPolicy, limits: RateLimits) -> Scheduler {
        let max = max_concurrency.max(1);
        Scheduler {
            gate: Mutex::new(GateState {
                limit: max,
                max,
                in_flight: 0,
                paused_until: None,
                healthy_streak: 0,
                last_decrease: None,
            }),
            wake: Notify::new(),
            policy,
            limits,
            next_start: Mutex::new(Instant::now()),
            tokens: Mutex::new(VecDeque::new()),
            stats: Stats::default(),
        }
    }

    /// The current concurrency limit (it adapts).
    pub fn limit(&self) -> usize {
        self.gate.lock().unwrap().limit
    }

    async fn acquire(&self) -> Permit<'_> {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wait_until = {
                let mut g = self.gate.lock().unwrap();
                match g.paused_until {
                    Some(t) if t > Instant::now() => Some(t),
                    _ if g.in_flight < g.limit => {
                        g.in_flight += 1;
                        return Permit(self);
                    }
                    _ => None,
                }
            };
            match wait_until {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => notified.await,
            }
        }
    }

    async fn pace(&self) {
        if let Some(rpm) = self.limits.requests_per_minute.filter(|r| *r > 0) {
            let start = {
                let mut next = self.next_start.lock().unwrap();
                let start = (*next).max(Instant::now());
                *next = start + Duration::from_secs_f64(60.0 / rpm as f64);
                start
            };
            tokio::time::sleep_until(start.into()).await;
        }
        if let Some(tpm) = self.limits.tokens_per_minute.filter(|t| *t > 0) {
            loop {
                let wait = {
                    let mut window = self.tokens.lock().unwrap();
                    let now = Instant::now();
                    while window.front().is_some_and(|(t, _)| now.duration_since(*t) >= Duration::from_secs(60)) {
                        window.pop_front();
                    }
                    let used: u64 = window.iter().map(|(_, n)| n).sum();
                    (used >= tpm).then(|| Duration::from_secs(60) - now.duration_since(window.front().unwrap().0))
                };
                match wait {
                    Some(d) => tokio::time::sleep(d).await,
                    None => break,
                }
            }
        }
    }

    fn on_success(&self, tokens: u64) {
        if self.limits.tokens_per_minute.is_some() {
            self.tokens.lock().unwrap().push_back((Instant::now(), tokens));
        }
        let mut g = self.gate.lock().unwrap();
        g.healthy_streak += 1;
        if g.healthy_streak >= g.limit && g.limit < g.max {
            g.limit += 1;
            g.healthy_streak = 0;
            drop(g);
            self.wake.notify_waiters();
        }
    }

    fn on_fault(&self, e: &ChatError) {
        *self.stats.faults.lock().unwrap().entry(e.kind).or_default() += 1;
        let mut g = self.gate.lock().unwrap();
        g.healthy_streak = 0;
        if matches!(e.kind, FaultKind::RateLimited | FaultKind::ServerError) {
            let now = Instant::now();
            // Halve at most once a second, so that a burst of failures of requests already in
            // flight counts as one signal.
            if g.last_decrease.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1)) {
                g.limit = (g.limit / 2).max(1);
                g.last_decrease = Some(now);
            }
            if let Some(after) = e.retry_after {
                let until = now + after;
                g.paused_until = Some(g.paused_until.map_or(until, |p| p.max(until)));
            }
        }
    }

    /// Calls `model` with retries. An empty answer is retried like a fault; if every attempt is
    /// empty, the empty answer is what the model gave and is returned as such.
    pub async fn call(&self, model: &dyn ChatModel, request: &ChatRequest) -> CallOutcome {
        let mut faults = Vec::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let permit = self.acquire().await;
            self.pace().await;
            let started = Instant::now();
            let result = model.chat(request).await;
            let latency = started.elapsed();
            drop(permit);
            let last = attempt >= self.policy.max_attempts;
            let retry_after = match &result {
                Ok(r) if r.text.trim().is_empty() && !last => {
                    let e = ChatError::new(FaultKind::EmptyContent, "the answer was empty");
                    self.on_fault(&e);
                    faults.push(e.kind);
                    None
                }
                Ok(r) => {
                    self.on_success(r.tokens_or_zero());
                    return CallOutcome { result, attempts: attempt, faults, latency };
                }
                Err(e) => {
                    self.on_fault(e);
                    faults.push(e.kind);
                    if last || !e.kind.is_transient() {
                        return CallOutcome { result, attempts: attempt, faults, latency };
                    }
                    e.retry_after
                }
            };
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            let delay = self.policy.delay(attempt).max(retry_after.unwrap_or_default());
            self.stats.last_backoff_ms.store(delay.as_millis() as u64, Ordering::Relaxed);
            tokio::time::sleep(delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::model::{BoxFuture, ChatResponse, FinishReason, GenerationSettings, ModelId};

    /// Fails with `kind` for the first `failures` calls, then answers; tracks peak concurrency.
    struct Flaky {
        failures: usize,
        kind: FaultKind,
        calls: AtomicUsize,
        in_flight: AtomicUsize,
        peak: AtomicUsize,
    }

    impl ChatModel for Flaky {
        fn id(&self) -> ModelId {
            ModelId { provider: "test".into(), name: "flaky".into(), endpoint: String::new() }
        }
        fn chat<'a>(&'a self, _: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ChatError>> {
            Box::pin(async move {
                let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                self.peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                self.in_flight.fetch_sub(1, Ordering::SeqCst);
                if self.calls.fetch_add(1, Ordering::SeqCst) < self.failures {
                    Err(ChatError::new(self.kind, "injected"))
                } else {
                    Ok(ChatResponse {
                        text: "ok".into(),
                        finish_reason: FinishReason::Stop,
                        input_tokens: Some(1),
                        output_tokens: Some(1),
                    })
                }
            })
        }
    }

    fn flaky(failures: usize, kind: FaultKind) -> Arc<Flaky> {
        Arc::new(Flaky { failures, kind, calls: 0.into(), in_flight: 0.into(), peak: 0.into() })
    }

    fn request() -> ChatRequest {
        ChatRequest { messages: vec![], settings: GenerationSettings::default() }
    }

    fn fast_policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy { max_attempts, base_delay: Duration::from_millis(1), max_delay: Duration::from_millis(5) }
    }

    #[tokio::test]
    async fn transient_faults_are_retried_and_recorded() {
        let m = flaky(2, FaultKind::ServerError);
        let s = Scheduler::new(4, fast_policy(5), RateLimits::default());
        let out = s.call(m.as_ref(), &request()).await;
        assert_eq!(out.result.unwrap().text, "ok");
        assert_eq!((out.attempts, out.faults.len()), (3, 2));
        assert_eq!(s.stats.faults()[&FaultKind::ServerError], 2);
        assert_eq!(s.limit(), 2, "a server error halves the limit");
    }

    #[tokio::test]
    async fn persistent_and_permanent_faults_fail_with_their_reason() {
        let s = Scheduler::new(1, fast_policy(3), RateLimits::default());
        let out = s.call(flaky(10, FaultKind::Timeout).as_ref(), &request()).await;
        assert_eq!((out.result.unwrap_err().kind, out.attempts), (FaultKind::Timeout, 3));
        let out = s.call(flaky(10, FaultKind::ClientError).as_ref(), &request()).await;
        assert_eq!((out.result.unwrap_err().kind, out.attempts), (FaultKind::ClientError, 1));
    }

    #[tokio::test]
    async fn concurrency_never_exceeds_the_limit() {
        let m = flaky(0, FaultKind::ServerError);
        let s = Arc::new(Scheduler::new(3, fast_policy(1), RateLimits::default()));
        let tasks: Vec<_> = (0..30)
            .map(|_| {
                let (m, s) = (m.clone(), s.clone());
                tokio::spawn(async move { s.call(m.as_ref(), &request()).await })
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap().result.is_ok());
        }
        assert_eq!(m.peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn retry_after_pauses_every_request() {
        let s = Scheduler::new(2, fast_policy(2), RateLimits::default());
        let mut e = ChatError::new(FaultKind::RateLimited, "slow down");
        e.retry_after = Some(Duration::from_millis(150));
        s.on_fault(&e);
        let started = Instant::now();
        let out = s.call(flaky(0, FaultKind::RateLimited).as_ref(), &request()).await;
        assert!(out.result.is_ok());
        assert!(started.elapsed() >= Duration::from_millis(140));
    }

    #[tokio::test]
    async fn request_rate_is_limited() {
        let s =
            Scheduler::new(8, fast_policy(1), RateLimits { requests_per_minute: Some(1200), tokens_per_minute: None });
        let m = flaky(0, FaultKind::ServerError);
        let started = Instant::now();
        for _ in 0..5 {
            s.call(m.as_ref(), &request()).await;
        }
        // 1200/min is one start every 50 ms: five starts take at least 200 ms.
        assert!(started.elapsed() >= Duration::from_millis(195), "{:?}", started.elapsed());
    }
}
