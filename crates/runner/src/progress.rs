//! Progress of a generation phase: a bar on a terminal, plain log lines otherwise; and the view of
//! a sweep, one line per model (with the phase it is in) plus the total.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::generate::Counters;
use h2htalk_llm::Scheduler;
use indicatif::{ProgressBar, ProgressStyle};

/// Shows progress until the returned handle is finished.
pub struct Progress {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

fn status(counters: &Counters, schedulers: &[Arc<Scheduler>]) -> String {
    let retries: u64 = schedulers.iter().map(|s| s.stats.retries.load(Ordering::Relaxed)).sum();
    let backoff = schedulers.iter().map(|s| s.stats.last_backoff_ms.load(Ordering::Relaxed)).max().unwrap_or(0);
    let limits: Vec<String> = schedulers.iter().map(|s| s.limit().to_string()).collect();
    format!(
        "failed {} | retries {retries} | backoff {backoff} ms | concurrency {} | tokens {}/{} | ${:.4}",
        counters.failed.load(Ordering::Relaxed),
        limits.join("+"),
        counters.input_tokens.load(Ordering::Relaxed),
        counters.output_tokens.load(Ordering::Relaxed),
        counters.cost_usd(),
    )
}

impl Progress {
    pub fn start(label: String, counters: Arc<Counters>, schedulers: Vec<Arc<Scheduler>>, quiet: bool) -> Progress {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let terminal = std::io::stderr().is_terminal() && !quiet;
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let bar = terminal.then(|| {
                let bar = ProgressBar::new(counters.total.load(Ordering::Relaxed) as u64);
                bar.set_style(
                    ProgressStyle::with_template("{prefix} {bar:30} {pos}/{len} {per_sec} ETA {eta} | {msg}")
                        .expect("template")
                        .progress_chars("=> "),
                );
                bar.set_prefix(label.clone());
                bar
            });
            let period = if terminal { Duration::from_millis(200) } else { Duration::from_secs(10) };
            loop {
                let finished = tokio::time::timeout(period, stopped.changed()).await.is_ok();
                let done = counters.done();
                let total = counters.total.load(Ordering::Relaxed);
                match &bar {
                    Some(bar) => {
                        bar.set_length(total as u64);
                        bar.set_position(done as u64);
                        bar.set_message(status(&counters, &schedulers));
                    }
                    None if !quiet => {
                        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
                        eprintln!(
                            "{label}: {done}/{total} items, {rate:.1} items/s | {}",
                            status(&counters, &schedulers)
                        );
                    }
                    None => {}
                }
                if finished {
                    if let Some(bar) = bar {
                        bar.finish();
                    }
                    break;
                }
            }
        });
        Progress { stop, task }
    }

    pub async fn finish(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// What a run of a sweep is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Waiting,
    Plan,
    Generate,
    Score,
    Judge,
    Simulate,
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
            Phase::Report => "report",
            Phase::Done => "done",
            Phase::Reused => "reused",
            Phase::Failed => "failed",
        }
    }
}

/// One model's line in a sweep's progress view: its phase and, while it generates, its counters.
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

    /// Shows this generation phase's counters on the lane.
    pub fn attach(&self, counters: Arc<Counters>, schedulers: Vec<Arc<Scheduler>>) {
        *self.generation.lock().unwrap() = Some((counters, schedulers));
    }

    /// (items done, items to do) of the generation phase, when one ran.
    fn counts(&self) -> Option<(usize, usize)> {
        self.generation.lock().unwrap().as_ref().map(|(c, _)| (c.done(), c.total.load(Ordering::Relaxed)))
    }

    fn line(&self) -> String {
        let phase = self.phase();
        match self.generation.lock().unwrap().as_ref() {
            Some((c, s)) if phase == Phase::Generate => {
                format!("{:<9} {}/{} | {}", phase.as_str(), c.done(), c.total.load(Ordering::Relaxed), status(c, s))
            }
            _ => phase.as_str().to_string(),
        }
    }
}

/// The progress view of a sweep until [`Board::finish`]: one line per model and the total.
pub struct Board(Progress);

impl Board {
    pub fn start(lanes: Vec<Arc<Lane>>, quiet: bool) -> Board {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let terminal = std::io::stderr().is_terminal() && !quiet;
        let task = tokio::spawn(async move {
            let multi = indicatif::MultiProgress::new();
            let style = ProgressStyle::with_template("{prefix:<28} {msg}").expect("template");
            let bars: Vec<ProgressBar> = if terminal {
                lanes
                    .iter()
                    .map(|l| {
                        let b = multi.add(ProgressBar::new(0).with_style(style.clone()));
                        b.set_prefix(l.label.clone());
                        b
                    })
                    .chain(std::iter::once({
                        let b = multi.add(ProgressBar::new(0).with_style(style.clone()));
                        b.set_prefix("total");
                        b
                    }))
                    .collect()
            } else {
                Vec::new()
            };
            let period = if terminal { Duration::from_millis(200) } else { Duration::from_secs(10) };
            loop {
                let finished = tokio::time::timeout(period, stopped.changed()).await.is_ok();
                let (mut done, mut total) = (0, 0);
                for l in &lanes {
                    if let Some((d, t)) = l.counts() {
                        done += d;
                        total += t;
                    }
                }
                let finished_runs =
                    lanes.iter().filter(|l| matches!(l.phase(), Phase::Done | Phase::Reused | Phase::Failed)).count();
                let total_line =
                    format!("{finished_runs}/{} runs finished | {done}/{total} items generated", lanes.len());
                if terminal {
                    for (b, l) in bars.iter().zip(&lanes) {
                        b.set_message(l.line());
                    }
                    bars.last().expect("a total line").set_message(total_line);
                } else if !quiet {
                    for l in &lanes {
                        eprintln!("{}: {}", l.label, l.line());
                    }
                    eprintln!("total: {total_line}");
                }
                if finished {
                    for b in &bars {
                        b.finish();
                    }
                    break;
                }
            }
        });
        Board(Progress { stop, task })
    }

    pub async fn finish(self) {
        self.0.finish().await
    }
}
