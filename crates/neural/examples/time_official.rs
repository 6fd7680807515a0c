//! Times the neural metrics on the official pairs (prediction i = reference i+1), phase by phase.
//!     cargo run --release -p h2htalk-neural --example time_official [-- MODEL_DIR [REFERENCES_DIR]]

use std::path::PathBuf;
use std::time::Instant;

use h2htalk_data::{Task, load_references};
use h2htalk_metrics::Profile;
use h2htalk_neural::NeuralSetup;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = args.next().map(PathBuf::from);
    let refs_dir = args.next().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("../shared/h2htalk-data"));
    let t0 = Instant::now();
    let refs = load_references(&refs_dir)?;
    let pairs: Vec<(&str, &str)> = Task::ALL
        .iter()
        .flat_map(|&t| {
            let texts = refs.texts(t);
            (0..texts.len()).map(move |i| (texts[(i + 1) % texts.len()].as_str(), texts[i].as_str()))
        })
        .collect();
    // STRIDE=k keeps every k-th pair (a smaller sample with the same mix of sub-tasks).
    let stride: usize = std::env::var("STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let pairs: Vec<(&str, &str)> = pairs.into_iter().step_by(stride.max(1)).collect();
    let setup = NeuralSetup::load(Profile::Paper, model.as_deref(), None, model.as_deref())?;
    let t1 = Instant::now();
    let run = setup.score_pairs(Profile::Paper, &pairs)?;
    let t2 = Instant::now();
    let n = run.scores.iter().flatten().count() as f64;
    let mean = |f: fn(&h2htalk_neural::NeuralScores) -> f64| run.scores.iter().flatten().map(f).sum::<f64>() / n;
    println!(
        "{} pairs: load {:.2}s, score {:.2}s; mean bertscore {:.6}, embedding {:.6}\n{}",
        pairs.len(),
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        mean(|s| s.bertscore),
        mean(|s| s.embedding),
        setup.signature(&run)
    );
    Ok(())
}
