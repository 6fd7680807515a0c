//! What a run is doing, kept for whoever shows it: its phase and, while it generates, its
//! counters. The runner only keeps these numbers; the binary draws them (a bar or one line per
//! model on a terminal, log lines otherwise).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::generate::Counters;
use h2htalk_llm::Scheduler;

/// What a run of a sweep is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Waiting,
    Plan,
    Generate,
    Score,
    Judge,
    Simulate,
    /// The memory suite's probes.
    Memory,
    Report,
    Done,
    /// A stored complete run of the same model and protocol answers for it.
    Reused,
    Failed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Waiting => "waiting",
            Phase::Plan => "plan",
            Phase::Generate => "generate",
            Phase::Score => "score",
            Phase::Judge => "judge",
            Phase::Simulate => "simulate",
            Phase::Memory => "memory",
            Phase::Report => "report",
            Phase::Done => "done",
            Phase::Reused => "reused",
            Phase::Failed => "failed",
        }
    }
}

/// A generation phase's numbers at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GenerationStatus {
    /// Items answered or failed, of `total`.
    pub done: usize,
    pub total: usize,
    pub failed: usize,
    /// Retries over the model's endpoints, and the last backoff among them.
    pub retries: u64,
    pub backoff_ms: u64,
    /// Each endpoint's concurrency limit now.
    pub concurrency: Vec<usize>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// One run's progress: its label (the model), phase and, while it generates, its counters. A run
/// given a lane ([`crate::RunOptions::lane`]) keeps it up to date.
pub struct Lane {
    pub label: String,
    phase: Mutex<Phase>,
    generation: Mutex<Option<(Arc<Counters>, Vec<Arc<Scheduler>>)>>,
}

impl Lane {
    pub fn new(label: String) -> Arc<Lane> {
        Arc::new(Lane { label, phase: Mutex::new(Phase::Waiting), generation: Mutex::new(None) })
    }

    pub fn set(&self, phase: Phase) {
        *self.phase.lock().unwrap() = phase;
    }

    pub fn phase(&self) -> Phase {
        *self.phase.lock().unwrap()
    }

    /// Follows this generation phase's counters.
    pub fn attach(&self, counters: Arc<Counters>, schedulers: Vec<Arc<Scheduler>>) {
        *self.generation.lock().unwrap() = Some((counters, schedulers));
    }

    /// The generation phase's numbers now, when one ran.
    pub fn generation(&self) -> Option<GenerationStatus> {
        let g = self.generation.lock().unwrap();
        let (c, schedulers) = g.as_ref()?;
        Some(GenerationStatus {
            done: c.done(),
            total: c.total.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            retries: schedulers.iter().map(|s| s.stats.retries.load(Ordering::Relaxed)).sum(),
            backoff_ms: schedulers.iter().map(|s| s.stats.last_backoff_ms.load(Ordering::Relaxed)).max().unwrap_or(0),
            concurrency: schedulers.iter().map(|s| s.limit()).collect(),
            input_tokens: c.input_tokens.load(Ordering::Relaxed),
            output_tokens: c.output_tokens.load(Ordering::Relaxed),
            cost_usd: c.cost_usd(),
        })
    }

    /// Whether the run is over (done, reused or failed).
    pub fn finished(&self) -> bool {
        matches!(self.phase(), Phase::Done | Phase::Reused | Phase::Failed)
    }
}
