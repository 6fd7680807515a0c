//! Progress of a generation phase: a bar on a terminal, plain log lines otherwise.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use h2htalk_llm::Scheduler;
use crate::generate::Counters;
use indicatif::{ProgressBar, ProgressStyle};

/// Shows progress until the returned handle is finished.
pub struct Progress {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

fn status(counters: &Counters, scheduler: &Scheduler) -> String {
    format!(
        "failed {} | retries {} | backoff {} ms | concurrency {} | tokens {}/{} | ${:.4}",
        counters.failed.load(Ordering::Relaxed),
        scheduler.stats.retries.load(Ordering::Relaxed),
        scheduler.stats.last_backoff_ms.load(Ordering::Relaxed),
        scheduler.limit(),
        counters.input_tokens.load(Ordering::Relaxed),
        counters.output_tokens.load(Ordering::Relaxed),
        counters.cost_usd(),
    )
}

impl Progress {
    pub fn start(label: String, counters: Arc<Counters>, scheduler: Arc<Scheduler>, quiet: bool) -> Progress {
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
                        bar.set_message(status(&counters, &scheduler));
                    }
                    None if !quiet => {
                        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
                        eprintln!(
                            "{label}: {done}/{total} items, {rate:.1} items/s | {}",
                            status(&counters, &scheduler)
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
