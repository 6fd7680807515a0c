//! The progress display of `run` and `sweep`, drawn from the lanes the runner keeps up to date
//! ([`h2htalk_runner::progress::Lane`]): on a terminal a bar for a run and one line per model for
//! a sweep; otherwise a log line every 10 seconds; nothing with `--quiet`.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use h2htalk_runner::progress::{GenerationStatus, Lane, Phase};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// A display drawing on its own thread until [`Display::finish`].
pub struct Display {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

/// What the status of a generation says after its counts.
fn status(g: &GenerationStatus) -> String {
    let limits: Vec<String> = g.concurrency.iter().map(usize::to_string).collect();
    format!(
        "failed {} | retries {} | backoff {} ms | concurrency {} | tokens {}/{} | ${:.4}",
        g.failed,
        g.retries,
        g.backoff_ms,
        limits.join("+"),
        g.input_tokens,
        g.output_tokens,
        g.cost_usd,
    )
}

/// A sweep member's line: its phase, and while it generates its counts and status.
fn lane_line(lane: &Lane) -> String {
    let phase = lane.phase();
    match lane.generation() {
        Some(g) if phase == Phase::Generate => format!("{:<9} {}/{} | {}", phase.as_str(), g.done, g.total, status(&g)),
        _ => phase.as_str().to_string(),
    }
}

/// Calls `tick(finished)` every `period` until a stop arrives, then once more with `true`.
fn every(period: Duration, stopped: Receiver<()>, mut tick: impl FnMut(bool)) {
    loop {
        let finished = !matches!(stopped.recv_timeout(period), Err(RecvTimeoutError::Timeout));
        tick(finished);
        if finished {
            return;
        }
    }
}

impl Display {
    fn spawn(work: impl FnOnce(Receiver<()>) + Send + 'static) -> Display {
        let (stop, stopped) = channel();
        Display { stop, thread: std::thread::spawn(move || work(stopped)) }
    }

    /// One run's generation: a bar (terminal) or a line every 10 s, while it generates.
    pub fn run(lane: Arc<Lane>, quiet: bool) -> Option<Display> {
        if quiet {
            return None;
        }
        let terminal = std::io::stderr().is_terminal();
        Some(Display::spawn(move |stopped| {
            let started = Instant::now();
            let mut bar: Option<ProgressBar> = None;
            let mut over = false;
            let period = if terminal { Duration::from_millis(200) } else { Duration::from_secs(10) };
            every(period, stopped, |finished| {
                // Drawn while the run generates, and once more when it has stopped generating.
                let Some(g) = lane.generation() else { return };
                if over {
                    return;
                }
                let finished = finished || lane.phase() != Phase::Generate;
                over = finished;
                if terminal {
                    let b = bar.get_or_insert_with(|| {
                        let b = ProgressBar::new(g.total as u64);
                        b.set_style(
                            ProgressStyle::with_template("{prefix} {bar:30} {pos}/{len} {per_sec} ETA {eta} | {msg}")
                                .expect("template")
                                .progress_chars("=> "),
                        );
                        b.set_prefix(lane.label.clone());
                        b
                    });
                    b.set_length(g.total as u64);
                    b.set_position(g.done as u64);
                    b.set_message(status(&g));
                    if finished {
                        b.finish();
                    }
                } else {
                    let rate = g.done as f64 / started.elapsed().as_secs_f64().max(1e-9);
                    eprintln!("{}: {}/{} items, {rate:.1} items/s | {}", lane.label, g.done, g.total, status(&g));
                }
            });
        }))
    }

    /// A sweep: one line per model and the total (terminal), or those lines every 10 s.
    pub fn sweep(lanes: Vec<Arc<Lane>>, quiet: bool) -> Option<Display> {
        if quiet {
            return None;
        }
        let terminal = std::io::stderr().is_terminal();
        Some(Display::spawn(move |stopped| {
            let multi = MultiProgress::new();
            let style = ProgressStyle::with_template("{prefix:<28} {msg}").expect("template");
            let line = |prefix: &str| {
                let b = multi.add(ProgressBar::new(0).with_style(style.clone()));
                b.set_prefix(prefix.to_string());
                b
            };
            let bars: Vec<ProgressBar> = if terminal {
                lanes.iter().map(|l| line(&l.label)).chain(std::iter::once(line("total"))).collect()
            } else {
                Vec::new()
            };
            let period = if terminal { Duration::from_millis(200) } else { Duration::from_secs(10) };
            every(period, stopped, |finished| {
                let (done, total) =
                    lanes.iter().filter_map(|l| l.generation()).fold((0, 0), |(d, t), g| (d + g.done, t + g.total));
                let over = lanes.iter().filter(|l| l.finished()).count();
                let total_line = format!("{over}/{} runs finished | {done}/{total} items generated", lanes.len());
                if terminal {
                    for (b, l) in bars.iter().zip(&lanes) {
                        b.set_message(lane_line(l));
                    }
                    bars.last().expect("a total line").set_message(total_line);
                    if finished {
                        bars.iter().for_each(ProgressBar::finish);
                    }
                } else {
                    for l in &lanes {
                        eprintln!("{}: {}", l.label, lane_line(l));
                    }
                    eprintln!("total: {total_line}");
                }
            });
        }))
    }

    /// Draws the last state and stops.
    pub fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
